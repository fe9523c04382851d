// The dependence graph the orchestration stages work on: one node per primitive, an edge
// u -> v when v reads a tensor u writes. Built from a PrimGraph (kernel_dag_of) or
// directly (tests build random ones). Constants and graph inputs are not nodes: every
// kernel may read them.
#pragma once

#include <cstdint>
#include <vector>

#include "kora/primitive.h"

namespace kora {

struct KernelDag {
  // Per node: successors and predecessors (sorted, distinct), its primitive kind, and
  // whether its value must be produced (a model output, or read by a later segment).
  std::vector<std::vector<int>> succ, pred;
  std::vector<PrimKind> kind;
  std::vector<bool> required;
  // Node i's primitive in the PrimGraph it came from (identity for a whole graph).
  std::vector<int> prim;

  int size() const { return static_cast<int>(kind.size()); }
  void add_node(PrimKind k, bool is_required = false);
  void add_edge(int from, int to);  // from < to (nodes are numbered topologically)
};

// One node per primitive of `graph` (same order); required = writes a graph output.
KernelDag kernel_dag_of(const PrimGraph& graph);

// The sub-DAG of the nodes [begin, end) of `dag`: edges inside are kept, a node with a
// successor at or after `end` becomes required, edges from before `begin` are dropped
// (those values are inputs of the segment).
KernelDag sub_dag(const KernelDag& dag, int begin, int end);

}  // namespace kora
