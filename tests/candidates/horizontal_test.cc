// Horizontal fusion candidates (src/candidates/horizontal.cc) and a candidate's parts
// (candidate_parts, src/candidates/candidate.cc) against their definitions on random
// DAGs: every pair of enumerated candidates of the allowed kinds (linear ones too, where
// asked) and size, disjoint, with
// no path between them and a common neighbouring node, by brute force over all pairs;
// the cap keeps the smallest; the capability hook turns pairs down; the parts of a node
// set are its connected components.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "kora/candidates.h"
#include "orchestrate/brute_force.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;
using Set = std::vector<int>;

bool reaches(const KernelDag& dag, int from, int to) {
  std::vector<int> stack{from};
  std::set<int> seen;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int s : dag.succ[v]) {
      if (s == to) return true;
      if (seen.insert(s).second) stack.push_back(s);
    }
  }
  return false;
}

// Nodes outside s that s reads or that read s.
std::set<int> neighbours(const KernelDag& dag, const Set& s) {
  std::set<int> out;
  for (int v : s) {
    for (const auto* list : {&dag.pred[v], &dag.succ[v]})
      for (int w : *list)
        if (!std::count(s.begin(), s.end(), w)) out.insert(w);
  }
  return out;
}

// Every pair the rules allow, as the union's members -> member count.
std::map<Set, size_t> brute_force_pairs(const KernelDag& dag, const std::vector<Candidate>& all,
                                        int part_size, bool linear) {
  std::vector<const Candidate*> parts;
  for (const Candidate& c : all) {
    if (static_cast<int>(c.members.size()) > part_size) continue;
    bool kinds = true;
    for (int v : c.members)
      kinds &= (linear || dag.kind[v] != PrimKind::kLinear) && dag.kind[v] != PrimKind::kOpaque;
    if (kinds) parts.push_back(&c);
  }
  std::map<Set, size_t> out;
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = i + 1; j < parts.size(); ++j) {
      const Set &a = parts[i]->members, &b = parts[j]->members;
      bool ok = true;
      for (int u : a)
        for (int v : b) ok &= u != v && !reaches(dag, u, v) && !reaches(dag, v, u);
      if (!ok) continue;
      const std::set<int> na = neighbours(dag, a), nb = neighbours(dag, b);
      if (std::none_of(na.begin(), na.end(), [&](int x) { return nb.count(x) > 0; })) continue;
      Set u = a;
      u.insert(u.end(), b.begin(), b.end());
      std::sort(u.begin(), u.end());
      out[u] = u.size();
    }
  return out;
}

TEST(HorizontalCandidates, EqualBruteForceOnRandomDags) {
  std::mt19937 rng(777);
  int64_t total = 0;
  for (int t = 0; t < 150; ++t) {
    const kora_test::TestDag d = kora_test::random_dag(rng, 2 + t % 12);
    kora::CandidateOptions options;
    options.max_size = 1 + t % 5;
    options.horizontal_part_size = 1 + t % 3;
    options.horizontal_linear = t % 2;
    const std::vector<Candidate> connected = kora::enumerate_candidates(d.dag, options);
    const std::map<Set, size_t> want =
        brute_force_pairs(d.dag, connected, options.horizontal_part_size, t % 2);
    options.horizontal_pairs = 1 << 20;  // all of them
    kora::CandidateStats stats;
    const std::vector<Candidate> with = kora::enumerate_candidates(d.dag, options, &stats);
    ASSERT_EQ(with.size(), connected.size() + want.size()) << "dag " << t;
    EXPECT_EQ(stats.horizontal, static_cast<int64_t>(want.size()));
    for (size_t i = connected.size(); i < with.size(); ++i) {
      const Candidate& c = with[i];
      EXPECT_TRUE(want.count(c.members)) << "dag " << t << ": not a pair the rules allow";
      EXPECT_TRUE(kora_test::convex_brute(d.dag, c.members));
      EXPECT_FALSE(kora_test::connected(d.dag, c.members));
      EXPECT_EQ(c.outputs, kora::make_candidate(d.dag, c.members).outputs);
      const std::vector<Candidate> parts = kora::candidate_parts(d.dag, c);
      ASSERT_EQ(parts.size(), 2u);
      Set joined = parts[0].members;
      joined.insert(joined.end(), parts[1].members.begin(), parts[1].members.end());
      std::sort(joined.begin(), joined.end());
      EXPECT_EQ(joined, c.members);
      EXPECT_LT(parts[0].members[0], parts[1].members[0]);
    }
    total += static_cast<int64_t>(want.size());

    // A cap keeps pairs of the fewest members, in each class (with a linear part or not);
    // a refusing hook leaves none.
    options.horizontal_pairs = 3;
    const std::vector<Candidate> capped = kora::enumerate_candidates(d.dag, options);
    auto linear = [&](const Set& s) {
      return std::any_of(s.begin(), s.end(),
                         [&](int v) { return d.dag.kind[v] == PrimKind::kLinear; });
    };
    size_t in_class[2] = {0, 0};
    for (const auto& [members, size] : want) ++in_class[linear(members)];
    ASSERT_EQ(capped.size(), connected.size() + std::min<size_t>(3, in_class[0]) +
                                 std::min<size_t>(3, in_class[1]));
    size_t largest_kept[2] = {0, 0};
    std::set<Set> kept;
    for (size_t i = connected.size(); i < capped.size(); ++i) {
      size_t& largest = largest_kept[linear(capped[i].members)];
      largest = std::max(largest, capped[i].members.size());
      kept.insert(capped[i].members);
    }
    for (const auto& [members, size] : want)
      if (!kept.count(members)) {
        EXPECT_GE(size, largest_kept[linear(members)]) << "dag " << t;
      }
    options.capable = [](const KernelDag& dag, const Set& s) {
      return kora_test::connected(dag, s);  // connected sets only: every pair refused
    };
    EXPECT_EQ(kora::enumerate_candidates(d.dag, options).size(),
              kora::enumerate_candidates(d.dag,
                                         [&] {
                                           kora::CandidateOptions o = options;
                                           o.horizontal_pairs = 0;
                                           return o;
                                         }())
                  .size());
  }
  EXPECT_GE(total, 150) << "the random DAGs have pairs";
}

TEST(HorizontalCandidates, PartsAreTheConnectedComponents) {
  std::mt19937 rng(31);
  for (int t = 0; t < 300; ++t) {
    const kora_test::TestDag d = kora_test::random_dag(rng, 1 + t % 14);
    Set members;
    for (int v = 0; v < d.dag.size(); ++v)
      if (kora_test::uniform01(rng) < 0.5) members.push_back(v);
    if (members.empty()) continue;
    const std::vector<Candidate> parts =
        kora::candidate_parts(d.dag, kora::make_candidate(d.dag, members));
    Set joined;
    for (size_t p = 0; p < parts.size(); ++p) {
      EXPECT_TRUE(kora_test::connected(d.dag, parts[p].members)) << "dag " << t;
      if (p) {
        EXPECT_LT(parts[p - 1].members[0], parts[p].members[0]);
      }
      for (size_t q = 0; q < p; ++q) {  // no edge between two parts
        Set both = parts[p].members;
        both.insert(both.end(), parts[q].members.begin(), parts[q].members.end());
        std::sort(both.begin(), both.end());
        EXPECT_FALSE(kora_test::connected(d.dag, both)) << "dag " << t;
      }
      joined.insert(joined.end(), parts[p].members.begin(), parts[p].members.end());
    }
    std::sort(joined.begin(), joined.end());
    EXPECT_EQ(joined, members) << "dag " << t;
  }
}

}  // namespace
