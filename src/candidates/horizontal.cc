// Horizontal fusion candidates (DESIGN.md, "Concurrency"; Tacker's horizontal fusion): a
// KernelDag and its enumerated (connected) candidates in; pairs of two independent
// candidates out, each pair one more candidate: two kernels computed by one launch, each
// on its own range of blocks (src/cuda/codegen_horizontal.cc), which saves a launch and
// lets two small kernels fill the device together. The union of two independent convex
// sets is convex, so the solver takes a pair like any candidate (its lazy cycle cuts keep
// the plan orderable). Which pairs: parts of elementwise, broadcast, layout and reduce
// primitives (with horizontal_linear, also a linear one: a GEMM and its epilogue) of at
// most CandidateOptions::horizontal_part_size members, disjoint, with no
// path between them, next to a common node (both read it: siblings such as the branches
// of an Inception module; or it reads both: the operands of a concat or of attention's
// Q.K^T); the pairs with the fewest members first, up to horizontal_pairs of them (and as
// many again with a linear part), each
// accepted by the backend's `capable`. Other pairs (two unrelated corners of the graph)
// are not offered: the solver would rarely gain from them and each is a kernel to measure.
#include <algorithm>
#include <set>
#include <tuple>

#include "candidates/reach.h"
#include "kora/candidates.h"

namespace kora {
namespace {

bool part_kind(PrimKind k, bool linear) {
  return k == PrimKind::kElementwise || k == PrimKind::kBroadcast || k == PrimKind::kLayout ||
         k == PrimKind::kReduce || (linear && k == PrimKind::kLinear);
}

// Pairs examined at most, so that a node with very many small candidates around it cannot
// make the enumeration quadratic in the graph.
constexpr int64_t kMaxExamined = 1'000'000;

}  // namespace

std::vector<Candidate> horizontal_candidates(const KernelDag& dag,
                                             const std::vector<Candidate>& connected,
                                             const CandidateOptions& options) {
  if (options.horizontal_pairs <= 0) return {};
  std::vector<int> parts;  // indices into `connected`
  for (size_t i = 0; i < connected.size(); ++i) {
    const Candidate& c = connected[i];
    if (static_cast<int>(c.members.size()) > options.horizontal_part_size) continue;
    if (std::all_of(c.members.begin(), c.members.end(),
                    [&](int v) { return part_kind(dag.kind[v], options.horizontal_linear); }))
      parts.push_back(static_cast<int>(i));
  }
  // Each node's neighbouring parts: those reading it, those it reads.
  std::vector<std::vector<int>> near(dag.size());
  for (int p : parts) {
    const Candidate& c = connected[p];
    std::vector<int> nodes = c.inputs;
    for (int v : c.members)
      for (int s : dag.succ[v])
        if (!std::binary_search(c.members.begin(), c.members.end(), s)) nodes.push_back(s);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (int t : nodes) near[t].push_back(p);
  }
  const candidates_internal::Reach reach = candidates_internal::reachability(dag);
  // Two classes, each with its own budget of horizontal_pairs, so that neither crowds the
  // other out: pairs with a linear part (where asked for: the tensor-core kernel beside a
  // CUDA-core one) and pairs without. In each, (members of the pair, first part, second
  // part), fewest members first, kept to a few times the pairs wanted since `capable` may
  // turn some down.
  auto linear = [&](const Candidate& c) {
    return std::any_of(c.members.begin(), c.members.end(),
                       [&](int v) { return dag.kind[v] == PrimKind::kLinear; });
  };
  std::set<std::tuple<size_t, int, int>> pairs[2];
  const size_t keep = static_cast<size_t>(options.horizontal_pairs) * 4;
  int64_t examined = 0;
  for (const std::vector<int>& list : near)
    for (size_t i = 0; i < list.size() && examined < kMaxExamined; ++i)
      for (size_t j = i + 1; j < list.size() && examined < kMaxExamined; ++j, ++examined) {
        const Candidate& a = connected[list[i]];
        const Candidate& b = connected[list[j]];
        auto& kept = pairs[linear(a) || linear(b)];
        const auto key = std::make_tuple(a.members.size() + b.members.size(),
                                         std::min(list[i], list[j]), std::max(list[i], list[j]));
        if (kept.size() >= keep && key >= *kept.rbegin()) continue;
        bool disjoint = true;
        for (int v : a.members)
          disjoint &= !std::binary_search(b.members.begin(), b.members.end(), v);
        if (!disjoint || !candidates_internal::independent(reach, a.members, b.members)) continue;
        kept.insert(key);
        if (kept.size() > keep) kept.erase(std::prev(kept.end()));
      }
  std::vector<Candidate> out;
  for (const auto& kept : pairs) {
    int taken = 0;
    for (const auto& [size, i, j] : kept) {
      if (taken >= options.horizontal_pairs) break;
      std::vector<int> members = connected[i].members;
      members.insert(members.end(), connected[j].members.begin(), connected[j].members.end());
      std::sort(members.begin(), members.end());
      if (options.capable && !options.capable(dag, members)) continue;
      out.push_back(make_candidate(dag, std::move(members)));
      ++taken;
    }
  }
  return out;
}

}  // namespace kora
