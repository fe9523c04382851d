// Internal to src/orchestrate: candidates no optimal plan needs. In: the DAG, the
// candidates and their costs. Out: a mask of the candidates to keep.
//
// Candidate j dominates candidate k when j writes every value k writes, reads nothing k
// does not read, and costs no more. Any plan using k stays valid with j in its place (j
// can run where k ran, since its inputs are ready there, and everything that read k's
// outputs finds them), at no higher cost; so some optimal plan avoids every dominated
// candidate. Among candidates dominating each other (same reads, writes and cost) the
// first is kept.
#pragma once

#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"

namespace kora {

// Candidates with `fixed[k]` set (when given) are kept and dominate nothing: the blocked
// layout choices make their cost depend on more than their reads and writes.
std::vector<char> undominated(const KernelDag& dag, const std::vector<Candidate>& candidates,
                              const std::vector<double>& cost,
                              const std::vector<char>* fixed = nullptr);

}  // namespace kora
