// The whole-graph layout pass (whole_graph_layouts.h): the chosen kernels of every segment
// as the candidates of one program over the whole graph, their layout terms built as a
// segment's are, layouts passed along views and agnostic kernels (layout_problem.h),
// solved; applied when it costs less than the segments' plans. Besides the chosen kernels,
// each pair of kernels with a reshape of unit dims between them (a pool's [N, C, H, W, 1,
// 1] before the convolution reading it) is offered with the reshape moved to the other
// side: the same work, but a kernel whose sides can all be stored blocked.
#include "orchestrate/whole_graph_layouts.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "orchestrate/layout_problem.h"

namespace kora {
namespace {

// For kernels a and b of `kernels` where a writes the value that only a unit-dims reshape r
// reads and r is a member of b (or r is a member of a whose value only b reads): the
// member sets with r moved to the other kernel, a's first. None where a side would be left
// empty.
std::vector<std::pair<std::vector<int>, std::vector<int>>> reshapes_moved(
    const PrimGraph& graph, const KernelDag& dag, const std::vector<ChosenKernel>& kernels) {
  std::vector<int> kernel_of(dag.size(), -1);
  for (size_t k = 0; k < kernels.size(); ++k)
    for (int v : kernels[k].prims) kernel_of[v] = static_cast<int>(k);
  const std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  // Kernel k's members without v, and kernel l's with it (sorted).
  auto move = [&](int k, int l, int v) {
    std::vector<int> from = kernels[k].prims, to = kernels[l].prims;
    from.erase(std::find(from.begin(), from.end(), v));
    to.insert(std::upper_bound(to.begin(), to.end(), v), v);
    return std::pair{std::move(from), std::move(to)};
  };
  std::vector<std::pair<std::vector<int>, std::vector<int>>> moved;
  for (int r = 0; r < dag.size(); ++r) {
    const Primitive& p = graph.prims[dag.prim[r]];
    if (kernel_of[r] < 0 || !unit_dims_reshape(graph, p)) continue;
    // Into the producer: x leaves its kernel a only for r, in kernel b.
    const int x = dag.pred[r].size() == 1 ? dag.pred[r][0] : -1;
    const int a = x >= 0 ? kernel_of[x] : -1, b = kernel_of[r];
    if (a >= 0 && a != b && dag.succ[x].size() == 1 &&
        !outputs.count(graph.prims[dag.prim[x]].output()) && kernels[b].prims.size() > 1) {
      auto [to, from] = move(b, a, r);
      moved.push_back({std::move(from), std::move(to)});
    }
    // Into the reader: r ends kernel b, and one other kernel c reads it.
    if (dag.succ[r].empty() || outputs.count(p.output()) || kernels[b].prims.size() < 2) continue;
    const int c = kernel_of[dag.succ[r][0]];
    bool one_reader = c != b;
    for (int s : dag.succ[r]) one_reader = one_reader && kernel_of[s] == c;
    if (one_reader) moved.push_back(move(b, c, r));
  }
  return moved;
}

}  // namespace

WholeGraphLayouts whole_graph_layouts(const PrimGraph& graph, const KernelDag& dag,
                                      CostModel& costs, const SolveOptions& solve,
                                      OrchestrationResult& result) {
  WholeGraphLayouts out;
  if (!result.layouts_decided || result.kernels.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  SegmentCandidates whole;
  whole.sub = dag;
  std::vector<double> cost;
  std::vector<ChosenKernel> offered;  // the chosen kernels, then the reshapes moved
  for (const ChosenKernel& k : result.kernels) {
    Candidate c = make_candidate(dag, k.prims);
    if (c.outputs != k.outputs) return out;  // a kernel the whole graph sees otherwise
    c.signature = k.signature;
    whole.candidates.push_back(std::move(c));
    cost.push_back(k.cost_ms);
    offered.push_back(k);
  }
  std::vector<int> kernel_of(dag.size(), -1);
  for (size_t k = 0; k < result.kernels.size(); ++k)
    for (int v : result.kernels[k].prims) kernel_of[v] = static_cast<int>(k);
  for (const auto& pair : reshapes_moved(graph, dag, result.kernels))
    for (const std::vector<int>* members : {&pair.first, &pair.second}) {
      Candidate c = make_candidate(dag, *members);
      c.signature = canonical_signature(graph, dag, c);
      ChosenKernel k;
      k.prims = *members;
      k.outputs = c.outputs;
      k.signature = c.signature;
      k.cost_ms = costs.cost_ms(graph, dag, c);
      k.segment = result.kernels[static_cast<size_t>(kernel_of[members->front()])].segment;
      whole.candidates.push_back(std::move(c));
      cost.push_back(k.cost_ms);
      offered.push_back(std::move(k));
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
  // As many kernels (none is another's duplicate), proven, and cheaper than before.
  if (plan.kernels.size() != result.kernels.size() || plan.gap > 0 ||
      !(plan.cost < result.total_cost_ms - 1e-9))
    return out;
  std::map<std::string, std::string> blocked;
  for (const auto& [node, layout] : plan.blocked)
    blocked[graph.prims[node].outputs.at(0)] = names.at(layout);
  std::vector<ChosenKernel> kernels;
  for (int k : plan.kernels) {
    kernels.push_back(offered[static_cast<size_t>(k)]);
    kernels.back().native = std::count(plan.native.begin(), plan.native.end(), k) > 0;
    out.reshapes_moved += k >= static_cast<int>(result.kernels.size());
  }
  // The tensors written in one segment and read in another.
  std::vector<int> segment_of(dag.size(), -1);
  for (const ChosenKernel& k : kernels)
    for (int v : k.outputs) segment_of[v] = k.segment;
  std::vector<char> crosses(dag.size(), 0);
  for (int k : plan.kernels)
    for (int u : whole.candidates[static_cast<size_t>(k)].inputs)
      crosses[u] = crosses[u] || offered[static_cast<size_t>(k)].segment != segment_of[u];
  for (const auto& [node, layout] : plan.blocked) out.cut_tensors_blocked += crosses[node];
  out.applied = true;
  out.saved_ms = result.total_cost_ms - plan.cost;
  result.total_cost_ms = plan.cost;
  result.layouts = std::move(blocked);
  result.kernels = std::move(kernels);
  return out;
}

}  // namespace kora
