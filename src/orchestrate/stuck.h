// Internal to src/orchestrate: runs chosen kernels in dependence order as far as they go.
#pragma once

#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"

namespace kora {

// Repeatedly runs any kernel of `chosen` whose inputs have all been produced by kernels
// already run; returns the kernels run, in order, and the rest (which wait on each
// other, or on inputs nobody produces) in *stuck.
std::vector<int> run_until_stuck(const KernelDag& dag, const std::vector<Candidate>& candidates,
                                 const std::vector<int>& chosen, std::vector<int>* stuck);

}  // namespace kora
