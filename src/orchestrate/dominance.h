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
// a native implementation, or is layout-agnostic or on views, and touches a node that may
// be blocked). `blockable[u]`: node u may be blocked. A plain-only candidate k (not
// flexible) needs every blockable node it touches plain, so j may replace it when,
// besides the above, every blockable node j touches k touches too: in any plan with k
// those nodes are plain, and j runs on them plain, at its plain cost.
//
// A flexible candidate with a native implementation is always kept. One without
// (`together[k]`: the nodes it takes blocked all at once or none, in one layout; all it
// touches when agnostic, its views otherwise; its other blockable nodes stay plain)
// allows two layout states of its nodes: all plain, or `together[k]` blocked and the rest
// plain. j may replace it when, besides the above, j has no native implementation and
// allows both states too: j's own all-at-once nodes are a part of k's or none of them,
// and every node of k's that j touches is one of j's. Nodes k takes each on its own
// (`bfloat16[k]`: LayoutProblem::bfloat16_views) may be blocked or not whatever the
// others are: j must take those it touches on their own too.
struct LayoutFlexibility {
  std::vector<char> flexible;              // per candidate
  std::vector<char> blockable;             // per node
  std::vector<char> native;                // per candidate: it has a native implementation
  std::vector<std::vector<int>> together;  // per candidate (empty: plain only or native)
  std::vector<std::vector<int>> bfloat16;  // per candidate (or empty: none), each on its own
};
std::vector<char> undominated(const KernelDag& dag, const std::vector<Candidate>& candidates,
                              const std::vector<double>& cost,
                              const LayoutFlexibility* layouts = nullptr);

}  // namespace kora
