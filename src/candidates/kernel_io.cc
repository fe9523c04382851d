// A candidate kernel's tensors: the external tensors it reads (produced outside it:
// other kernels' outputs, graph inputs, constants), in first-use order, and the tensors
// it writes (every output tensor of its output members).
#include <algorithm>
#include <set>

#include "kora/candidates.h"

namespace kora {

std::vector<std::string> kernel_reads(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c) {
  std::set<std::string> written, seen;
  for (int v : c.members)
    for (const std::string& t : graph.prims[dag.prim[v]].outputs) written.insert(t);
  std::vector<std::string> reads;
  for (int v : c.members)
    for (const std::string& t : graph.prims[dag.prim[v]].inputs)
      if (!written.count(t) && seen.insert(t).second) reads.push_back(t);
  return reads;
}

std::vector<std::string> kernel_writes(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  std::vector<std::string> writes;
  for (int v : c.outputs)
    for (const std::string& t : graph.prims[dag.prim[v]].outputs) writes.push_back(t);
  return writes;
}

}  // namespace kora
