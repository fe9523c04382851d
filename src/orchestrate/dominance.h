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

// With blocked layouts (orchestrate.h, LayoutProblem) a candidate's cost also depends on
// the layouts of the nodes it touches. `flexible[k]`: k can take some node blocked (it has
// a native implementation, or is layout-agnostic, and touches a node that may be
// blocked); such candidates are always kept. `blockable[u]`: node u may be blocked. A
// plain-only candidate k (not flexible) needs every blockable node it touches plain, so
// j may replace it when, besides the above, every blockable node j touches k touches
// too: in any plan with k those nodes are plain, and j runs on them plain, at its plain
// cost.
struct LayoutFlexibility {
  std::vector<char> flexible;   // per candidate
  std::vector<char> blockable;  // per node
};
std::vector<char> undominated(const KernelDag& dag, const std::vector<Candidate>& candidates,
                              const std::vector<double>& cost,
                              const LayoutFlexibility* layouts = nullptr);

}  // namespace kora
