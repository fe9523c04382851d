// The plan as a parallel schedule of kernel pairs (src/orchestrate/parallel_schedule.h).
#include "orchestrate/parallel_schedule.h"

#include <algorithm>
#include <map>
#include <set>

#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"

namespace kora {

ParallelSchedule schedule_pairs(const PrimGraph& graph, const OrchestrationResult& plan,
                                const PairCosts& costs) {
  const size_t n = plan.kernels.size();
  if (costs.all_ms.size() != n || costs.half_ms.size() != n || costs.function.size() != n)
    throw Error("parallel schedule: " + std::to_string(n) + " kernels, costs of " +
                std::to_string(costs.all_ms.size()));
  const KernelDag dag = kernel_dag_of(graph);
  std::vector<std::set<std::string>> reads(n), writes(n);
  for (size_t i = 0; i < n; ++i) {
    const Candidate c = make_candidate(dag, plan.kernels[i].prims);
    for (const std::string& t : kernel_reads(graph, dag, c)) reads[i].insert(t);
    for (const std::string& t : kernel_writes(graph, dag, c)) writes[i].insert(t);
  }
  auto intersects = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    for (const std::string& t : a)
      if (b.count(t)) return true;
    return false;
  };
  // Kernel i waits for every earlier kernel writing what it reads (or writing what it
  // writes: a recomputed primitive, written by both).
  std::vector<std::vector<size_t>> waits(n);
  std::map<std::string, std::vector<size_t>> writers;  // tensor -> kernels so far
  for (size_t i = 0; i < n; ++i) {
    for (const auto* tensors : {&reads[i], &writes[i]})
      for (const std::string& t : *tensors)
        if (auto it = writers.find(t); it != writers.end())
          waits[i].insert(waits[i].end(), it->second.begin(), it->second.end());
    for (const std::string& t : writes[i]) writers[t].push_back(i);
  }
  auto may_pair = [&](size_t a, size_t b) {
    return !intersects(reads[a], writes[b]) && !intersects(reads[b], writes[a]) &&
           !intersects(writes[a], writes[b]) &&
           (costs.function[a].empty() || costs.function[a] != costs.function[b]);
  };

  ParallelSchedule out;
  out.plan = plan;
  out.plan.kernels.clear();
  const int half = costs.threads / 2;
  std::vector<bool> done(n, false);
  std::vector<bool> finished(n, false);  // in a step before the current one
  size_t next = 0;                       // the first kernel not yet scheduled, in plan order
  for (int step = 0; next < n; ++step) {
    while (next < n && done[next]) ++next;
    if (next == n) break;
    const size_t a = next;
    auto ready = [&](size_t k) {
      return std::all_of(waits[k].begin(), waits[k].end(), [&](size_t j) { return finished[j]; });
    };
    size_t partner = n;
    double best = 0;
    if (half >= 1)
      for (size_t b = a + 1; b < n; ++b) {
        if (done[b] || !ready(b) || !may_pair(a, b) || costs.forbidden.count({a, b})) continue;
        const double together = costs.slowdown * std::max(costs.half_ms[a], costs.half_ms[b]);
        const double saving = costs.all_ms[a] + costs.all_ms[b] - together;
        if (saving > best) best = saving, partner = b;
      }
    out.serial_ms += costs.all_ms[a];
    ChosenKernel ka = plan.kernels[a];
    ka.step = step;
    done[a] = true;
    if (partner == n) {
      ka.threads = 0;
      out.predicted_ms += costs.all_ms[a];
      out.plan.kernels.push_back(ka);
      out.from.push_back(a);
    } else {
      ChosenKernel kb = plan.kernels[partner];
      ka.threads = kb.threads = half;
      kb.step = step;
      done[partner] = true;
      out.serial_ms += costs.all_ms[partner];
      out.predicted_ms += costs.slowdown * std::max(costs.half_ms[a], costs.half_ms[partner]);
      out.plan.kernels.push_back(ka);
      out.plan.kernels.push_back(kb);
      out.from.push_back(a);
      out.from.push_back(partner);
      finished[partner] = true;
      ++out.pairs;
    }
    finished[a] = true;
  }
  out.plan.total_cost_ms = out.predicted_ms;
  return out;
}

}  // namespace kora
