// The dependence DAG of a primitive graph (one node per primitive, an edge per
// producer -> consumer pair), and sub-DAGs of a node range for partitioned problems.
#include "kora/kernel_dag.h"

#include <algorithm>
#include <map>

#include "kora/error.h"

namespace kora {

void KernelDag::add_node(PrimKind k, bool is_required) {
  kind.push_back(k);
  required.push_back(is_required);
  succ.emplace_back();
  pred.emplace_back();
  prim.push_back(static_cast<int>(prim.size()));
}

void KernelDag::add_edge(int from, int to) {
  if (from < 0 || to >= size() || from >= to)
    throw Error("kernel DAG edge " + std::to_string(from) + " -> " + std::to_string(to) +
                " is not forward");
  auto insert = [](std::vector<int>& list, int v) {
    auto it = std::lower_bound(list.begin(), list.end(), v);
    if (it == list.end() || *it != v) list.insert(it, v);
  };
  insert(succ[from], to);
  insert(pred[to], from);
}

KernelDag kernel_dag_of(const PrimGraph& graph) {
  KernelDag dag;
  std::map<std::string, int> producer;
  for (size_t i = 0; i < graph.prims.size(); ++i) {
    const Primitive& p = graph.prims[i];
    dag.add_node(p.kind());
    for (const std::string& t : p.inputs) {
      auto it = producer.find(t);
      if (it != producer.end()) dag.add_edge(it->second, static_cast<int>(i));
    }
    for (const std::string& t : p.outputs) producer[t] = static_cast<int>(i);
  }
  for (const std::string& out : graph.outputs) {
    auto it = producer.find(out);
    if (it != producer.end()) dag.required[it->second] = true;
  }
  return dag;
}

KernelDag sub_dag(const KernelDag& dag, int begin, int end) {
  KernelDag sub;
  for (int v = begin; v < end; ++v) {
    bool leaves = dag.required[v];
    for (int s : dag.succ[v]) leaves |= s >= end;
    sub.add_node(dag.kind[v], leaves);
    sub.prim.back() = dag.prim[v];
    for (int p : dag.pred[v])
      if (p >= begin) sub.add_edge(p - begin, v - begin);
  }
  return sub;
}

}  // namespace kora
