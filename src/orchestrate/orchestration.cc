// The orchestration driver (include/kora/orchestration.h): a primitive graph and a cost
// model in, the chosen kernels of the whole graph out. Per segment of the partition:
// candidates are enumerated on the segment's sub-DAG, each distinct canonical signature
// is costed once, and the strategy chooses; kernels are mapped back to primitive indices.
#include "kora/orchestration.h"

#include <chrono>
#include <iostream>
#include <map>
#include <unordered_map>

#include "kora/error.h"

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

}  // namespace

SegmentCandidates segment_candidates(const PrimGraph& graph, const KernelDag& dag,
                                     const Segment& segment, const CandidateOptions& options) {
  SegmentCandidates result;
  result.sub = sub_dag(dag, segment.begin, segment.end);
  result.candidates = enumerate_candidates(result.sub, options, &result.stats);
  for (Candidate& c : result.candidates) c.signature = canonical_signature(graph, result.sub, c);
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
  const std::vector<Segment> segments = partition_dag(dag, options.partition);
  result.segments = static_cast<int64_t>(segments.size());
  result.proven_optimal = options.strategy == "optimal";

  std::unordered_map<uint64_t, double> cost_of_signature;
  std::unordered_map<std::string, Plan> solved;  // by problem_key
  for (size_t s = 0; s < segments.size(); ++s) {
    if (options.progress_line)
      std::cerr << "\rkora orchestrate: segment " << s + 1 << "/" << segments.size() << " ("
                << options.strategy << ")" << std::flush;

    auto start = std::chrono::steady_clock::now();
    const SegmentCandidates segment =
        segment_candidates(graph, dag, segments[s], options.candidates);
    const KernelDag& sub = segment.sub;
    const std::vector<Candidate>& candidates = segment.candidates;
    result.enumerate_seconds += seconds_since(start);
    result.candidates += static_cast<int64_t>(candidates.size());
    result.seeds_capped += segment.stats.seeds_capped;

    start = std::chrono::steady_clock::now();
    std::vector<double> cost(candidates.size());
    for (size_t k = 0; k < candidates.size(); ++k) {
      auto it = cost_of_signature.find(candidates[k].signature);
      if (it == cost_of_signature.end())
        it = cost_of_signature
                 .emplace(candidates[k].signature, costs.cost_ms(graph, sub, candidates[k]))
                 .first;
      cost[k] = it->second;
    }
    result.cost_seconds += seconds_since(start);

    start = std::chrono::steady_clock::now();
    const std::string key = problem_key(sub, cost);
    auto known = solved.find(key);
    const bool reused = known != solved.end();
    Plan plan;
    if (reused) {
      plan = known->second;
      ++result.segments_reused;
    } else {
      plan = options.strategy == "optimal"  ? solve_optimal(sub, candidates, cost, options.solve)
             : options.strategy == "greedy" ? plan_greedy(sub, candidates, cost)
                                            : plan_unfused(sub, candidates, cost);
      solved.emplace(key, plan);
      result.cycle_cuts += plan.cycle_cuts;
    }
    const double solve_seconds = seconds_since(start);
    result.solve_seconds += solve_seconds;
    result.total_cost_ms += plan.cost;
    if (options.strategy == "optimal") {
      result.gap_ms += plan.gap;
      if (plan.gap > 0) result.proven_optimal = false;
    }
    for (int k : plan.kernels) {
      ChosenKernel kernel;
      for (int v : candidates[k].members) kernel.prims.push_back(sub.prim[v]);
      for (int v : candidates[k].outputs) kernel.outputs.push_back(sub.prim[v]);
      kernel.cost_ms = cost[k];
      kernel.signature = candidates[k].signature;
      kernel.segment = static_cast<int>(s);
      result.kernels.push_back(std::move(kernel));
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
  if (options.progress_line) std::cerr << "\r\033[K" << std::flush;  // clear the line
  result.unique_signatures = static_cast<int64_t>(cost_of_signature.size());
  result.cost_model = costs.describe();
  return result;
}

}  // namespace kora
