// Reachability in a KernelDag (src/candidates/): the DAG in, each node's strict
// descendants and ancestors as bitsets out, and what they answer: whether a member set is
// convex (no path leaves it and comes back), whether two sets are independent (no path
// from one to the other). Used by the enumeration and by horizontal fusion.
#pragma once

#include <cstdint>
#include <vector>

#include "kora/kernel_dag.h"

namespace kora {
namespace candidates_internal {

using Bits = std::vector<uint64_t>;

struct Reach {
  std::vector<Bits> desc, anc;  // strict descendants / ancestors of each node
};

inline Reach reachability(const KernelDag& dag) {
  const int n = dag.size();
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  Reach r{std::vector<Bits>(n, Bits(words, 0)), std::vector<Bits>(n, Bits(words, 0))};
  for (int v = n - 1; v >= 0; --v)
    for (int s : dag.succ[v]) {
      r.desc[v][s / 64] |= uint64_t{1} << (s % 64);
      for (size_t w = 0; w < words; ++w) r.desc[v][w] |= r.desc[s][w];
    }
  for (int v = 0; v < n; ++v)
    for (int p : dag.pred[v]) {
      r.anc[v][p / 64] |= uint64_t{1} << (p % 64);
      for (size_t w = 0; w < words; ++w) r.anc[v][w] |= r.anc[p][w];
    }
  return r;
}

inline bool convex_with(const Reach& r, const std::vector<int>& members) {
  const size_t words = r.desc.empty() ? 0 : r.desc[0].size();
  Bits desc(words, 0), anc(words, 0), in(words, 0);
  for (int v : members) {
    in[v / 64] |= uint64_t{1} << (v % 64);
    for (size_t w = 0; w < words; ++w) desc[w] |= r.desc[v][w], anc[w] |= r.anc[v][w];
  }
  for (size_t w = 0; w < words; ++w)
    if (desc[w] & anc[w] & ~in[w]) return false;
  return true;
}

// Whether no member of `a` reaches a member of `b` and none of `b` one of `a`.
inline bool independent(const Reach& r, const std::vector<int>& a, const std::vector<int>& b) {
  for (int u : a)
    for (int v : b)
      if ((r.desc[u][v / 64] >> (v % 64) & 1) || (r.desc[v][u / 64] >> (u % 64) & 1)) return false;
  return true;
}

}  // namespace candidates_internal
}  // namespace kora
