// The whole-graph layout pass (whole_graph_layouts.h): the chosen kernels of every segment
// as the candidates of one program over the whole graph, their layout terms built as a
// segment's are, layouts passed along views and agnostic kernels (layout_problem.h),
// solved; applied when it keeps every kernel and costs less than the segments' plans.
#include "orchestrate/whole_graph_layouts.h"

#include <algorithm>
#include <chrono>

#include "orchestrate/layout_problem.h"

namespace kora {

WholeGraphLayouts whole_graph_layouts(const PrimGraph& graph, const KernelDag& dag,
                                      CostModel& costs, const SolveOptions& solve,
                                      OrchestrationResult& result) {
  WholeGraphLayouts out;
  if (!result.layouts_decided || result.kernels.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  SegmentCandidates whole;
  whole.sub = dag;
  std::vector<double> cost;
  for (const ChosenKernel& k : result.kernels) {
    Candidate c = make_candidate(dag, k.prims);
    if (c.outputs != k.outputs) return out;  // a kernel the whole graph sees otherwise
    c.signature = k.signature;
    whole.candidates.push_back(std::move(c));
    cost.push_back(k.cost_ms);
  }
  std::vector<std::string> names;
  const LayoutProblem layouts = layout_problem(graph, whole, costs, names, true);
  if (layouts.native.empty()) return out;
  // The kernels are fixed, so this program is small; a graph whose program CBC does not
  // prove within a few seconds keeps the segments' layouts.
  SolveOptions options = solve;
  options.runner_up = false;
  options.time_limit_seconds = std::min(solve.time_limit_seconds, 10.0);
  const Plan plan = solve_optimal(dag, whole.candidates, cost, options, &layouts);
  out.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every kernel kept (none is another's duplicate), proven, and cheaper than before.
  if (plan.kernels.size() != result.kernels.size() || plan.gap > 0 ||
      !(plan.cost < result.total_cost_ms - 1e-9))
    return out;
  std::map<std::string, std::string> blocked;
  for (const auto& [node, layout] : plan.blocked)
    blocked[graph.prims[node].outputs.at(0)] = names.at(layout);
  for (size_t k = 0; k < result.kernels.size(); ++k)
    result.kernels[k].native =
        std::count(plan.native.begin(), plan.native.end(), static_cast<int>(k)) > 0;
  // The tensors written in one segment and read in another.
  std::vector<int> segment_of(dag.size(), -1);
  for (const ChosenKernel& k : result.kernels)
    for (int v : k.outputs) segment_of[v] = k.segment;
  std::vector<char> crosses(dag.size(), 0);
  for (size_t k = 0; k < result.kernels.size(); ++k)
    for (int u : whole.candidates[k].inputs)
      crosses[u] = crosses[u] || result.kernels[k].segment != segment_of[u];
  for (const auto& [node, layout] : plan.blocked) out.cut_tensors_blocked += crosses[node];
  out.applied = true;
  out.saved_ms = result.total_cost_ms - plan.cost;
  result.total_cost_ms = plan.cost;
  result.layouts = std::move(blocked);
  return out;
}

}  // namespace kora
