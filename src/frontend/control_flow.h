// Control flow (If, Loop, Scan), expanded into the operator graph by shape inference when
// it reaches the node, so that what decides the control has folded by then. In: the graph
// and the index of an If, Loop or Scan node whose inputs have types. Out: the node
// replaced by the nodes it runs, their tensors renamed apart (names of the enclosing
// graph a subgraph reads stay), the node's outputs bound to the results by Identity.
//   If    the branch a constant condition takes;
//   Loop  unrolled one iteration at a time while the trip count (a constant) and the
//         condition (constant, or computed by the body and folding) let it continue;
//         scan outputs stacked along a new first axis;
//   Scan  unrolled along the scan inputs' axes (static), each direction, scan outputs
//         stacked along their axes; Scan-8 (marked kora_scan_batched by the importer: a
//         batch axis 0 before the sequence axis, sequence_lens first) once per batch
//         element, the results stacked along the batch axis.
// Anything else (a condition or trip count known only at runtime, a Loop that would run
// without end) is an error naming the node.
#pragma once

#include <string>

#include "kora/graph.h"

namespace kora {

// The importer's mark on a Scan of opset 8 (batched; directions, not axes).
inline constexpr const char* kScanBatchedAttr = "kora_scan_batched";

bool is_control_flow_operator(const std::string& op_type);

void expand_control_flow(Graph& g, size_t index);

}  // namespace kora
