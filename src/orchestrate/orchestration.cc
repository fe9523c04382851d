// The orchestration driver (include/kora/orchestration.h): a primitive graph and a cost
// model in, the chosen kernels of the whole graph out. Per segment of the partition:
// candidates are enumerated on the segment's sub-DAG, each distinct canonical signature
// is costed once, and the strategy chooses (optimal: blocked layouts too, when the cost
// model knows them); kernels are mapped back to primitive indices. A segment whose
// problem (sub-DAG, costs and layout terms) equals an earlier one's, such as a repeated
// transformer layer, reuses its plan. A segment not proven optimal within the first
// seconds (PartitionOptions::split_after_seconds) is cut in halves, each solved in turn.
// Also the distinct candidates of a whole graph,
// which the profilers measure (unique_candidates).
#include "kora/orchestration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/interrupt.h"
#include "kora/error.h"
#include "orchestrate/layout_problem.h"
#include "orchestrate/whole_graph_layouts.h"

namespace kora {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Everything a segment's problem depends on: the sub-DAG (kinds, edges, required nodes;
// candidates follow from it deterministically) and the candidates' costs. Equal keys,
// e.g. the same transformer layer cut the same way twelve times, are one problem.
std::string problem_key(const KernelDag& sub, const std::vector<double>& cost) {
  std::string key;
  auto put = [&key](const void* data, size_t bytes) {
    key.append(static_cast<const char*>(data), bytes);
  };
  for (int v = 0; v < sub.size(); ++v) {
    const int head[3] = {static_cast<int>(sub.kind[v]), sub.required[v] ? 1 : 0,
                         static_cast<int>(sub.succ[v].size())};
    put(head, sizeof head);
    put(sub.succ[v].data(), sub.succ[v].size() * sizeof(int));
  }
  put(cost.data(), cost.size() * sizeof(double));
  return key;
}

// One segment's runner-up plan (SolveOptions::runner_up) as the result would hold it: its
// kernels and blocked tensors, what it costs more than the segment's optimum, and the
// optimum's blocked tensors it replaces.
struct SegmentRunnerUp {
  int segment = 0;
  double delta_ms = 0;
  std::vector<ChosenKernel> kernels;
  std::map<std::string, std::string> layouts, best_layouts;
};

// The `count` cheapest plans that differ from `best` in one segment, that segment's plan
// replaced by its runner-up (OrchestrationResult::next_best).
std::vector<OrchestrationResult> next_best_plans(const OrchestrationResult& best,
                                                 std::vector<SegmentRunnerUp> runners_up,
                                                 int count) {
  std::stable_sort(
      runners_up.begin(), runners_up.end(),
      [](const SegmentRunnerUp& a, const SegmentRunnerUp& b) { return a.delta_ms < b.delta_ms; });
  std::vector<OrchestrationResult> plans;
  for (const SegmentRunnerUp& r : runners_up) {
    if (static_cast<int>(plans.size()) >= count) break;
    OrchestrationResult p;
    p.strategy = best.strategy;
    p.cost_model = best.cost_model;
    p.total_cost_ms = best.total_cost_ms + r.delta_ms;
    p.proven_optimal = false;  // second best, not the optimum
    p.layouts_decided = best.layouts_decided;
    p.primitives = best.primitives;
    p.segments = best.segments;
    // The kernels in the same order: the segment's runner-up where its optimum's were.
    bool placed = false;
    for (const ChosenKernel& k : best.kernels) {
      if (k.segment != r.segment) {
        p.kernels.push_back(k);
      } else if (!placed) {
        p.kernels.insert(p.kernels.end(), r.kernels.begin(), r.kernels.end());
        placed = true;
      }
    }
    if (!placed) p.kernels.insert(p.kernels.end(), r.kernels.begin(), r.kernels.end());
    p.layouts = best.layouts;
    for (const auto& [tensor, layout] : r.best_layouts) p.layouts.erase(tensor);
    p.layouts.insert(r.layouts.begin(), r.layouts.end());
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace

SegmentCandidates segment_candidates(const PrimGraph& graph, const KernelDag& dag,
                                     const Segment& segment, const CandidateOptions& options) {
  SegmentCandidates result;
  result.sub = sub_dag(dag, segment.begin, segment.end);
  CandidateOptions o = options;
  result.candidates = enumerate_candidates(result.sub, o, &result.stats);
  while (o.max_per_segment > 0 &&
         static_cast<int64_t>(result.candidates.size()) > o.max_per_segment && o.max_size > 2) {
    o.max_size = std::max(2, o.max_size * 3 / 4);
    result.stats = {};
    result.candidates = enumerate_candidates(result.sub, o, &result.stats);
    result.stats.over_budget = true;
  }
  result.stats.max_size = o.max_size;
  for (Candidate& c : result.candidates) c.signature = canonical_signature(graph, result.sub, c);
  return result;
}

ModelCandidates unique_candidates(const PrimGraph& graph, const PartitionOptions& partition,
                                  const CandidateOptions& candidates) {
  const KernelDag dag = kernel_dag_of(graph);
  ModelCandidates result;
  for (const Segment& s : partition_dag(dag, partition))
    result.segments.push_back(segment_candidates(graph, dag, s, candidates));
  std::unordered_set<uint64_t> seen;
  for (size_t s = 0; s < result.segments.size(); ++s)
    for (const Candidate& c : result.segments[s].candidates)
      if (seen.insert(c.signature).second)
        result.unique.push_back({static_cast<int>(s), &result.segments[s].sub, &c});
  return result;
}

OrchestrationResult orchestrate(const PrimGraph& graph, CostModel& costs,
                                const OrchestrationOptions& options) {
  if (options.strategy != "optimal" && options.strategy != "greedy" &&
      options.strategy != "unfused")
    throw Error("unknown strategy '" + options.strategy + "' (optimal, greedy, unfused)");
  OrchestrationResult result;
  result.strategy = options.strategy;
  const KernelDag dag = kernel_dag_of(graph);
  result.primitives = dag.size();
  std::vector<Segment> segments = partition_dag(dag, options.partition);
  result.proven_optimal = options.strategy == "optimal";
  // The enumerated segments by their node range (the same partition: the same order).
  std::map<std::pair<int, int>, const SegmentCandidates*> enumerated;
  if (options.enumerated && options.enumerated->segments.size() == segments.size())
    for (size_t s = 0; s < segments.size(); ++s)
      enumerated[{segments[s].begin, segments[s].end}] = &options.enumerated->segments[s];

  std::unordered_map<uint64_t, double> cost_of_signature;
  std::vector<std::string> layout_names;         // ids of the LayoutProblems
  std::vector<SegmentRunnerUp> runners_up;       // options.pool > 1
  std::unordered_map<std::string, Plan> solved;  // by problem_key
  std::unordered_set<std::string> split;         // problems cut in halves
  const PartitionOptions& part = options.partition;
  for (size_t s = 0; s < segments.size(); ++s) {
    throw_if_interrupted("orchestrating");
    if (options.progress_line)
      std::cerr << "\rkora orchestrate: segment " << s + 1 << "/" << segments.size() << " ("
                << options.strategy << ")" << std::flush;

    auto start = std::chrono::steady_clock::now();
    SegmentCandidates own;
    const auto known_segment = enumerated.find({segments[s].begin, segments[s].end});
    if (known_segment == enumerated.end())
      own = segment_candidates(graph, dag, segments[s], options.candidates);
    const SegmentCandidates& segment =
        known_segment == enumerated.end() ? own : *known_segment->second;
    const KernelDag& sub = segment.sub;
    const std::vector<Candidate>& candidates = segment.candidates;
    result.enumerate_seconds += seconds_since(start);
    result.candidates += static_cast<int64_t>(candidates.size());
    result.seeds_capped += segment.stats.seeds_capped;
    result.horizontal_pairs += segment.stats.horizontal;
    if (segment.stats.over_budget) {
      ++result.segments_over_budget;
      result.budget_max_size = result.budget_max_size
                                   ? std::min(result.budget_max_size, segment.stats.max_size)
                                   : segment.stats.max_size;
    }

    start = std::chrono::steady_clock::now();
    std::vector<double> cost(candidates.size());
    for (size_t k = 0; k < candidates.size(); ++k) {
      auto it = cost_of_signature.find(candidates[k].signature);
      if (it == cost_of_signature.end())
        it = cost_of_signature
                 .emplace(candidates[k].signature, costs.cost_ms(graph, sub, candidates[k]))
                 .first;
      cost[k] = it->second;
      if (!std::isfinite(cost[k]) || cost[k] < 0)
        throw Error("orchestration: the cost model (" + costs.describe() + ") gave kernel " +
                    signature_hex(candidates[k].signature) + " (" +
                    kernel_name(graph, sub, candidates[k]) + ") the cost " +
                    std::to_string(cost[k]) + " ms: not a finite non-negative number");
    }
    const LayoutProblem layouts = options.strategy == "optimal"
                                      ? layout_problem(graph, segment, costs, layout_names, false)
                                      : LayoutProblem{};
    result.cost_seconds += seconds_since(start);

    start = std::chrono::steady_clock::now();
    std::string key = problem_key(sub, cost);
    for (const NativeOption& o : layouts.native) {  // the layout terms, when any
      key.append(reinterpret_cast<const char*>(&o.blocked_ms), sizeof(double));
      key.append(reinterpret_cast<const char*>(o.nodes.data()), o.nodes.size() * sizeof(int));
      key.append(reinterpret_cast<const char*>(o.layouts.data()), o.layouts.size() * sizeof(int));
      key.append(reinterpret_cast<const char*>(o.saved_ms.data()),
                 o.saved_ms.size() * sizeof(double));
    }
    key.append(layouts.agnostic.begin(), layouts.agnostic.end());
    key.append(reinterpret_cast<const char*>(layouts.layout_of.data()),
               layouts.layout_of.size() * sizeof(int));
    for (const auto* views : {&layouts.views, &layouts.bfloat16_views}) {
      const int lists = static_cast<int>(views->size());
      key.append(reinterpret_cast<const char*>(&lists), sizeof lists);
      for (const std::vector<int>& nodes : *views) {
        const int n = static_cast<int>(nodes.size());
        key.append(reinterpret_cast<const char*>(&n), sizeof n);
        key.append(reinterpret_cast<const char*>(nodes.data()), nodes.size() * sizeof(int));
      }
    }
    auto known = solved.find(key);
    const bool reused = known != solved.end();
    // A segment of at least 2 min_size nodes gets split_after_seconds to be proven (none
    // when negative); if it is not, it is cut in halves, which are solved next with the
    // full limit, and this plan is dropped. Halves of at most ceil(size / 2) >= min_size
    // nodes always make two or more pieces.
    const int size = segments[s].end - segments[s].begin;
    const bool may_split = options.strategy == "optimal" && part.split_after_seconds != 0 &&
                           part.split_after_seconds < options.solve.time_limit_seconds &&
                           size >= 2 * part.min_size;
    const bool cut_now = may_split && (split.count(key) || part.split_after_seconds < 0);
    Plan plan;
    if (reused) {
      plan = known->second;
      ++result.segments_reused;
    } else if (!cut_now) {
      SolveOptions solve = options.solve;
      if (may_split) solve.time_limit_seconds = part.split_after_seconds;
      solve.runner_up = options.pool > 1;
      plan = options.strategy == "optimal"  ? solve_optimal(sub, candidates, cost, solve, &layouts)
             : options.strategy == "greedy" ? plan_greedy(sub, candidates, cost)
                                            : plan_unfused(sub, candidates, cost);
      result.cycle_cuts += plan.cycle_cuts;
    }
    if (!reused && (cut_now || (may_split && plan.gap > 0))) {
      const std::vector<Segment> pieces = split_in_halves(dag, segments[s], part);
      result.hard_segments.emplace_back(segments[s].begin, segments[s].end);
      result.solve_seconds += seconds_since(start);
      result.candidates -= static_cast<int64_t>(candidates.size());
      ++result.segments_split;
      split.insert(key);
      if (options.progress)
        std::cerr << "segment " << s + 1 << "/" << segments.size() << ": " << size
                  << " primitives, "
                  << (part.split_after_seconds < 0
                          ? std::string("cut (split_after_seconds < 0)")
                          : "not proven within " + std::to_string(part.split_after_seconds) +
                                " s: cut")
                  << " into " << pieces.size() << std::endl;
      segments.erase(segments.begin() + static_cast<std::ptrdiff_t>(s));
      segments.insert(segments.begin() + static_cast<std::ptrdiff_t>(s), pieces.begin(),
                      pieces.end());
      --s;
      continue;
    }
    if (!reused) solved.emplace(key, plan);
    const double solve_seconds = seconds_since(start);
    result.solve_seconds += solve_seconds;
    result.total_cost_ms += plan.cost;
    if (options.strategy == "optimal") {
      result.gap_ms += plan.gap;
      if (plan.gap > 0) result.proven_optimal = false;
    }
    // A segment plan's kernels and blocked tensors, as the result holds them.
    auto chosen = [&](const Plan& p, std::vector<ChosenKernel>& kernels,
                      std::map<std::string, std::string>& blocked) {
      for (int k : p.kernels) {
        ChosenKernel kernel;
        for (int v : candidates[k].members) kernel.prims.push_back(sub.prim[v]);
        for (int v : candidates[k].outputs) kernel.outputs.push_back(sub.prim[v]);
        kernel.cost_ms = cost[k];
        kernel.signature = candidates[k].signature;
        kernel.segment = static_cast<int>(s);
        kernel.native = std::count(p.native.begin(), p.native.end(), k) > 0;
        kernels.push_back(std::move(kernel));
      }
      for (const auto& [node, layout] : p.blocked)
        blocked[graph.prims[sub.prim[node]].outputs.at(0)] = layout_names.at(layout);
    };
    std::map<std::string, std::string> blocked;
    chosen(plan, result.kernels, blocked);
    if (segment.stats.horizontal > 0)
      for (int k : plan.kernels)
        result.horizontal_chosen += candidate_parts(sub, candidates[k]).size() > 1;
    if (!layouts.native.empty()) result.layouts_decided = true;
    result.layouts.insert(blocked.begin(), blocked.end());
    if (!plan.runner_up.empty()) {
      SegmentRunnerUp r;
      r.segment = static_cast<int>(s);
      r.delta_ms = plan.runner_up[0].cost - plan.cost;
      r.best_layouts = std::move(blocked);
      chosen(plan.runner_up[0], r.kernels, r.layouts);
      runners_up.push_back(std::move(r));
    }
    if (options.progress)
      std::cerr << "segment " << s + 1 << "/" << segments.size() << ": " << sub.size()
                << " primitives, " << candidates.size() << " candidates, " << plan.kernels.size()
                << " kernels, " << plan.cost << " ms";
    if (options.progress && options.strategy == "optimal")
      std::cerr << (plan.gap > 0 ? ", gap " + std::to_string(plan.gap) + " ms" : ", proven")
                << (reused ? ", same problem as an earlier segment"
                           : ", solved in " + std::to_string(solve_seconds) + " s");
    if (options.progress) std::cerr << std::endl;
  }
  result.segments = static_cast<int64_t>(segments.size());
  if (options.progress_line) std::cerr << "\r\033[K" << std::flush;  // clear the line
  result.unique_signatures = static_cast<int64_t>(cost_of_signature.size());
  result.cost_model = costs.describe();
  bool kernels_moved = false;  // across segments: their runners-up no longer fit
  if (options.strategy == "optimal") {
    const auto start = std::chrono::steady_clock::now();
    const WholeGraphLayouts pass = whole_graph_layouts(graph, dag, costs, options.solve, result);
    kernels_moved = pass.reshapes_moved > 0;
    result.solve_seconds += seconds_since(start);
    result.whole_graph_layouts_saved_ms = pass.saved_ms;
    result.cut_tensors_blocked = pass.cut_tensors_blocked;
    if (options.progress && pass.applied)
      std::cerr << "layouts over the whole graph: " << pass.saved_ms << " ms less, "
                << pass.cut_tensors_blocked << " tensors crossing segment cuts blocked, "
                << pass.reshapes_moved
                << " kernels with a unit-dims reshape moved in or out (solved in "
                << pass.solve_seconds << " s)" << std::endl;
  }
  if (!kernels_moved) result.next_best = next_best_plans(result, runners_up, options.pool - 1);
  return result;
}

}  // namespace kora
