// A candidate kernel from its members (include/kora/candidates.h): a KernelDag and an
// ascending member set in; the Candidate out, with its outputs (members read outside the
// set or required) and inputs (non-members the members read). Enumeration makes every
// candidate so, and the runtime and emitter rebuild chosen kernels so, which is why this
// lives apart from enumerate.cc (libkora_runtime compiles it, not the enumeration).
#include <algorithm>
#include <utility>

#include "kora/candidates.h"

namespace kora {

Candidate make_candidate(const KernelDag& dag, std::vector<int> members) {
  Candidate c;
  c.members = std::move(members);
  auto member = [&](int v) { return std::binary_search(c.members.begin(), c.members.end(), v); };
  for (int v : c.members) {
    bool out = dag.required[v];
    for (int s : dag.succ[v]) out |= !member(s);
    if (out) c.outputs.push_back(v);
    for (int p : dag.pred[v])
      if (!member(p)) c.inputs.push_back(p);
  }
  std::sort(c.inputs.begin(), c.inputs.end());
  c.inputs.erase(std::unique(c.inputs.begin(), c.inputs.end()), c.inputs.end());
  return c;
}

}  // namespace kora
