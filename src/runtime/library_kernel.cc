// A library kernel rebuilt from an artifact's manifest (src/runtime/library_kernel.h): the
// entry's graph JSON and the weights in; the oneDNN or interpreter kernel and its argument
// order out.
#include "runtime/library_kernel.h"

#include <algorithm>

#include "kora/error.h"
#include "kora/kernel_dag.h"

namespace kora {

RebuiltKernel rebuild_library_kernel(const ManifestKernel& k, const std::string& where,
                                     const std::function<Tensor(const std::string&)>& constant,
                                     const TensorLayouts& layouts) {
  RebuiltKernel r;
  r.graph = std::make_shared<PrimGraph>(kernel_graph_from_json(k.graph_json, where, constant));
  const PrimGraph& g = *r.graph;
  const KernelDag dag = kernel_dag_of(g);
  std::vector<int> members(dag.size());
  for (int i = 0; i < dag.size(); ++i) members[i] = i;
  const Candidate c = make_candidate(dag, members);
  r.object = k.impl == "onednn" ? make_onednn_kernel(g, dag, c, layouts, k.schedule)
                                : make_interpreter_kernel(g, dag, c);
  // Its arguments in its own order (derived from its graph), found in the entry's lists.
  const std::vector<std::string> reads = kernel_reads(g, dag, c), writes = kernel_writes(g, dag, c);
  if (reads.size() != k.reads.size() || writes.size() != k.writes.size())
    throw Error("artifact manifest: the graph of library kernel '" + k.primitives.at(0) +
                "' reads or writes other tensors than the kernel lists");
  for (const auto& [own, listed, out, verb] : {std::tuple{&reads, &k.reads, &r.reads, "reads"},
                                               std::tuple{&writes, &k.writes, &r.writes, "writes"}})
    for (const std::string& t : *own) {
      const size_t pos =
          static_cast<size_t>(std::find(listed->begin(), listed->end(), t) - listed->begin());
      if (pos == listed->size())
        throw Error("artifact manifest: library kernel '" + k.primitives.at(0) + "' " + verb +
                    " '" + t + "', which the kernel does not list");
      out->push_back(pos);
    }
  return r;
}

}  // namespace kora
