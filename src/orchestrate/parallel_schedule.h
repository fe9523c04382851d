// Internal: the plan as a parallel schedule (issue 27's first step: CPU, kernels in pairs).
// In: the plan's kernels in an order they can run in, and for each its time inside the
// running plan on all T threads and on T/2 threads, and the generated function it calls.
// Out: the steps: one kernel on all threads, or two independent kernels at the same time on
// T/2 threads each (neither reads what the other writes, they write different tensors and
// call different functions: a generated kernel's scratch is static), chosen greedily: in
// the plan's order, the next kernel is paired with the ready kernel that saves the most,
// its time as a pair the slower of the two at T/2 threads times `slowdown` (what running
// side by side costs each: shared caches and memory bandwidth), when that is less than
// both one after the other. The makespan predicted is the sum over steps. Not the joint
// optimum of kernels and schedule: the kernels are the serial plan's, and the pairing is
// greedy (list scheduling), not the program over all pairings.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kora/orchestration.h"
#include "kora/primitive.h"

namespace kora {

struct PairCosts {
  std::vector<double> all_ms, half_ms;  // per kernel of the plan
  std::vector<std::string> function;    // generated function called ("" for none)
  int threads = 2;                      // T (even; below 2 nothing is paired)
  double slowdown = 1.1;
  std::set<std::pair<size_t, size_t>> forbidden;  // pairs (a < b) never to run together
};

struct ParallelSchedule {
  OrchestrationResult plan;  // kernels reordered by step, each with its step and threads
  double predicted_ms = 0;   // the makespan at these costs
  double serial_ms = 0;      // the kernels one after another on all threads
  int pairs = 0;
  std::vector<size_t> from;  // per kernel of `plan`: its index in the serial plan
};

ParallelSchedule schedule_pairs(const PrimGraph& graph, const OrchestrationResult& plan,
                                const PairCosts& costs);

}  // namespace kora
