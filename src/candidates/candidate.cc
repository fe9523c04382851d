// A candidate kernel from its members (include/kora/candidates.h): a KernelDag and an
// ascending member set in; the Candidate out, with its outputs (members read outside the
// set or required) and inputs (non-members the members read). Enumeration makes every
// candidate so, and the runtime and emitter rebuild chosen kernels so, which is why this
// lives apart from enumerate.cc (libkora_runtime compiles it, not the enumeration). Also a
// candidate's independent parts (a horizontal pair has two).
#include <algorithm>
#include <numeric>
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

std::vector<Candidate> candidate_parts(const KernelDag& dag, const Candidate& c) {
  // Union-find over the members, joined along the DAG's edges among them.
  std::vector<size_t> root(c.members.size());
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (size_t i = 0; i < c.members.size(); ++i)
    for (int s : dag.succ[c.members[i]]) {
      const auto it = std::lower_bound(c.members.begin(), c.members.end(), s);
      if (it != c.members.end() && *it == s) {
        const size_t a = find(i), b = find(static_cast<size_t>(it - c.members.begin()));
        root[std::max(a, b)] = std::min(a, b);
      }
    }
  std::vector<std::vector<int>> sets;
  std::vector<int> set_of(c.members.size(), -1);
  for (size_t i = 0; i < c.members.size(); ++i) {  // roots are each set's first member
    const size_t r = find(i);
    if (set_of[r] < 0) {
      set_of[r] = static_cast<int>(sets.size());
      sets.emplace_back();
    }
    sets[set_of[r]].push_back(c.members[i]);
  }
  if (sets.size() == 1) return {c};
  std::vector<Candidate> parts;
  for (std::vector<int>& s : sets) parts.push_back(make_candidate(dag, std::move(s)));
  return parts;
}

}  // namespace kora
