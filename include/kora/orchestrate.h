// The orchestration problem (DESIGN.md): a KernelDag, its candidate kernels and a cost
// per candidate in; the chosen kernels, in an order they can run in, out.
//   solve_optimal  the binary linear program, solved with CBC; schedulability enforced by
//                  lazily cutting the dependence cycles of the solutions found;
//   plan_unfused   one kernel per primitive (operator by operator);
//   plan_greedy    rule-based fusion as conventional compilers do it.
// All three choose among the same candidates, so their costs compare directly.
#pragma once

#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"

namespace kora {

struct Plan {
  std::vector<int> kernels;  // candidate indices, in an order they can run in
  double cost = 0;           // sum of the chosen candidates' costs
  // Proven bound: the optimum is at least cost - gap. 0 when proven optimal; for the
  // baselines, not computed (-1).
  double gap = -1;
  double solve_seconds = 0;
  int cycle_cuts = 0;  // schedulability cuts added (optimal only)
  int solves = 0;      // CBC runs (optimal only)
};

struct SolveOptions {
  double time_limit_seconds = 60;  // over all CBC runs of one problem
};

Plan solve_optimal(const KernelDag& dag, const std::vector<Candidate>& candidates,
                   const std::vector<double>& cost, const SolveOptions& options = {});
Plan plan_unfused(const KernelDag& dag, const std::vector<Candidate>& candidates,
                  const std::vector<double>& cost);
Plan plan_greedy(const KernelDag& dag, const std::vector<Candidate>& candidates,
                 const std::vector<double>& cost);

// Checks that `chosen` (candidate indices, any order) produces every required node and
// every input of every chosen kernel, and can run in some order. Returns that order (a
// permutation of `chosen`); throws kora::Error saying what is wrong otherwise.
std::vector<int> schedule(const KernelDag& dag, const std::vector<Candidate>& candidates,
                          const std::vector<int>& chosen);

}  // namespace kora
