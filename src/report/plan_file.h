// Internal: plan.json, the side file kora::compile writes into every artifact for reports
// (`kora report`, include/kora/report.h). The runtime never reads it, so it is not among
// the manifest's checked files. In: the primitive graph, the compile summary and the
// baselines' predictions; out: the file, and read back, a PlanFile. The format:
//   {"format": "kora-plan", "version": 1,
//    "graph": the primitive graph as `kora fission --json` prints it (prim_graph_json:
//             inputs, outputs, constants, each primitive's name, kind, op, origin, input
//             names and outputs with dtype and shape),
//    "summary": kora compile --json's object (compile_summary_json: the plans checked on
//               the clock, notes, ...),
//    "baselines": [{"strategy": "greedy", "kernels": N, "predicted_ms": T}, ...]: the
//                 greedy and unfused plans at the solver's costs, when no check on the
//                 clock measured them}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kora/compile.h"
#include "kora/primitive.h"

namespace kora {

constexpr const char* kPlanFileName = "plan.json";

// A plan the artifact's was compared with, predicted at the same costs.
struct PlanBaseline {
  std::string strategy;
  int64_t kernels = 0;
  double predicted_ms = 0;
};

// Writes DIR/plan.json (through a temporary file renamed into place). Throws kora::Error
// naming the file when it cannot be written.
void write_plan_file(const std::string& dir, const PrimGraph& graph,
                     const std::string& summary_json, const std::vector<PlanBaseline>& baselines);

// One primitive as plan.json records it.
struct PlanPrimitive {
  std::string name, kind, op, origin;
  std::vector<std::string> inputs, outputs;
  std::string type;  // its (first) output's dtype and shape, "float32 [1, 3]"
};

// The compile summary's parts a report shows.
struct PlanSummary {
  std::vector<PlanCheck> checked;  // measured end to end by the check on the clock
  int emitted = -1;                // index into checked; -1: no check
  std::vector<std::string> notes;
  bool proven_optimal = false;
  double gap_ms = 0;
  int64_t measured_costs = 0, roofline_costs = 0, estimated_kernels = 0;
};

struct PlanFile {
  std::string graph_name;
  std::vector<std::string> inputs, outputs, constants;
  std::vector<PlanPrimitive> primitives;  // topological order
  PlanSummary summary;
  std::vector<PlanBaseline> baselines;
};

// DIR/plan.json; nullopt when the artifact has none (older artifacts). Throws kora::Error
// naming the file and the field when it is there but unreadable.
std::optional<PlanFile> read_plan_file(const std::string& dir);

}  // namespace kora
