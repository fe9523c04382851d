// Model summary for `kora inspect`: In: an operator graph. Out: opset, inputs and outputs
// with shapes and dtypes, an operator histogram, the parameter count and a FLOPs estimate.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kora/graph.h"

namespace kora {

struct TensorSummary {
  std::string name;
  DType dtype;
  Shape shape;
};

struct InspectReport {
  std::string graph_name, producer;
  int64_t opset = 0;
  std::vector<TensorSummary> inputs, outputs;
  std::map<std::string, int64_t> op_histogram;  // operator -> node count
  int64_t node_count = 0;
  int64_t parameter_count = 0;
  int64_t flops = 0;  // one multiply-add counts 2
};

// FLOPs of one node, estimated from its inferred shapes (0 for data movement).
int64_t estimate_flops(const Graph& graph, const Node& node);

InspectReport inspect_graph(const Graph& graph);
std::string format_report(const InspectReport& report);
std::string report_json(const InspectReport& report);

}  // namespace kora
