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

// A reshape that only drops or adds dims of size 1: the same bytes in any layout.
bool unit_dims_reshape(const PrimGraph& graph, const Primitive& p) {
  const auto* layout = std::get_if<LayoutAttrs>(&p.attrs);
  if (!layout || !std::holds_alternative<layout::Reshape>(*layout)) return false;
  auto squeezed = [](const Shape& s) {
    Shape r;
    for (int64_t d : s)
      if (d != 1) r.push_back(d);
    return r;
  };
  return squeezed(graph.value(p.inputs.at(0)).shape) == squeezed(graph.value(p.output()).shape);
}

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
  std::vector<std::pair<std::vector<int>, std::vector<int>>> moved;
  for (int r = 0; r < dag.size(); ++r) {
    const Primitive& p = graph.prims[dag.prim[r]];
    if (dag.pred[r].size() != 1 || !unit_dims_reshape(graph, p)) continue;
    const int x = dag.pred[r][0];
    if (kernel_of[x] < 0 || kernel_of[r] < 0 || kernel_of[x] == kernel_of[r]) continue;
    const int a = kernel_of[x], b = kernel_of[r];
    auto without = [&](int k, int v) {
      std::vector<int> m = kernels[k].prims;
      m.erase(std::find(m.begin(), m.end(), v));
      return m;
    };
    auto with = [&](int k, int v) {
      std::vector<int> m = kernels[k].prims;
      m.insert(std::upper_bound(m.begin(), m.end(), v), v);
      return m;
    };
    // Into the producer: x leaves a only for r.
    if (dag.succ[x].size() == 1 && !outputs.count(graph.prims[dag.prim[x]].output()) &&
        kernels[b].prims.size() > 1)
      moved.push_back({with(a, r), without(b, r)});
  }
  // Reshapes at the end of a kernel, moved into the one kernel reading them.
  for (int r = 0; r < dag.size(); ++r) {
    const Primitive& p = graph.prims[dag.prim[r]];
    if (kernel_of[r] < 0 || dag.succ[r].empty() || outputs.count(p.output()) ||
        !unit_dims_reshape(graph, p))
      continue;
    const int a = kernel_of[r], b = kernel_of[dag.succ[r][0]];
    bool one_reader = a != b && kernels[a].prims.size() > 1;
    for (int s : dag.succ[r]) one_reader = one_reader && kernel_of[s] == b;
    if (!one_reader) continue;
    std::vector<int> from = kernels[a].prims, to = kernels[b].prims;
    from.erase(std::find(from.begin(), from.end(), r));
    to.insert(std::upper_bound(to.begin(), to.end(), r), r);
    moved.push_back({from, to});
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
