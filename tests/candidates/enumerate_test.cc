// Candidate enumeration (include/kora/candidates.h) against brute force: on random DAGs
// of up to 12 nodes (cycle-trap DAGs included), enumerate_candidates returns exactly the
// subsets of all 2^n that are connected, convex, hold at most one linear node, hold an
// opaque node only alone, fit max_size and pass the capability hook (singletons always),
// each once, with the outputs and inputs make_candidate defines; is_convex and
// make_candidate agree with their definitions on arbitrary subsets; the capability hook
// sees only sets within the rules; and on a wide graph (one node fanning out to 60 that
// join again) a small max_sets_per_seed keeps enumeration bounded with every singleton.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;
using Set = std::vector<int>;

// reach[u][v]: a path of at least one edge from u to v.
std::vector<std::vector<char>> reachability(const KernelDag& dag) {
  const int n = dag.size();
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (int u = n - 1; u >= 0; --u)
    for (int s : dag.succ[u]) {
      reach[u][s] = 1;
      for (int v = 0; v < n; ++v) reach[u][v] |= reach[s][v];
    }
  return reach;
}

bool connected(const KernelDag& dag, const Set& s) {
  if (s.empty()) return false;
  std::set<int> in(s.begin(), s.end()), seen{s[0]};
  std::vector<int> stack{s[0]};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (const std::vector<int>* list : {&dag.succ[v], &dag.pred[v]})
      for (int w : *list)
        if (in.count(w) && seen.insert(w).second) stack.push_back(w);
  }
  return seen.size() == s.size();
}

// No node outside s is reachable from s and reaches s.
bool convex(const std::vector<std::vector<char>>& reach, const Set& s) {
  const int n = static_cast<int>(reach.size());
  std::vector<char> in(n, 0);
  for (int v : s) in[v] = 1;
  for (int x = 0; x < n; ++x) {
    if (in[x]) continue;
    bool from = false, to = false;
    for (int v : s) from |= reach[v][x] != 0, to |= reach[x][v] != 0;
    if (from && to) return false;
  }
  return true;
}

// The kind rules: at most one linear node, an opaque node only alone.
bool within_kind_rules(const KernelDag& dag, const Set& s) {
  int linear = 0, opaque = 0;
  for (int v : s) {
    linear += dag.kind[v] == PrimKind::kLinear;
    opaque += dag.kind[v] == PrimKind::kOpaque;
  }
  return linear <= 1 && (opaque == 0 || s.size() == 1);
}

using Capable = std::function<bool(const KernelDag&, const Set&)>;

// Every subset of the nodes that one kernel could compute, by brute force over 2^n.
std::set<Set> brute_force_candidates(const KernelDag& dag, int max_size,
                                     const Capable& capable = {}) {
  const int n = dag.size();
  const auto reach = reachability(dag);
  std::set<Set> out;
  for (uint32_t mask = 1; mask < (uint32_t{1} << n); ++mask) {
    Set s;
    for (int v = 0; v < n; ++v)
      if (mask >> v & 1) s.push_back(v);
    if (s.size() == 1) {
      out.insert(s);
      continue;
    }
    if (static_cast<int>(s.size()) > max_size || !within_kind_rules(dag, s)) continue;
    if (!connected(dag, s) || !convex(reach, s)) continue;
    if (capable && !capable(dag, s)) continue;
    out.insert(s);
  }
  return out;
}

// Outputs (members read outside or required) and inputs (non-member predecessors), by
// definition.
void expect_io(const KernelDag& dag, const Candidate& c, const std::string& where) {
  std::set<int> in(c.members.begin(), c.members.end());
  Set outputs;
  std::set<int> inputs;
  for (int v : c.members) {
    bool leaves = dag.required[v];
    for (int s : dag.succ[v]) leaves |= !in.count(s);
    if (leaves) outputs.push_back(v);
    for (int p : dag.pred[v])
      if (!in.count(p)) inputs.insert(p);
  }
  EXPECT_EQ(c.outputs, outputs) << where;
  EXPECT_EQ(c.inputs, Set(inputs.begin(), inputs.end())) << where;
}

std::string describe(const KernelDag& dag) {
  std::string s = std::to_string(dag.size()) + " nodes:";
  for (int v = 0; v < dag.size(); ++v) {
    s += " " + std::to_string(v) + "(" + kora::prim_kind_name(dag.kind[v]) +
         (dag.required[v] ? ",req" : "") + ")->";
    for (int w : dag.succ[v]) s += std::to_string(w) + ",";
  }
  return s;
}

std::string show(const Set& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "}";
}

// Compares enumerate_candidates with brute force; returns the number of candidates.
size_t expect_matches_brute_force(const KernelDag& dag, int max_size, const Capable& capable,
                                  const std::string& where) {
  kora::CandidateOptions options;
  options.max_size = max_size;
  options.max_sets_per_seed = int64_t{1} << 40;
  options.capable = capable;
  kora::CandidateStats stats;
  const std::vector<Candidate> got = kora::enumerate_candidates(dag, options, &stats);
  const std::set<Set> want = brute_force_candidates(dag, max_size, capable);

  std::set<Set> got_sets;
  for (const Candidate& c : got) {
    EXPECT_TRUE(std::is_sorted(c.members.begin(), c.members.end())) << where;
    EXPECT_TRUE(got_sets.insert(c.members).second) << where << " duplicate " << show(c.members);
    expect_io(dag, c, where + " candidate " + show(c.members));
  }
  for (const Set& s : want) EXPECT_TRUE(got_sets.count(s)) << where << " missing " << show(s);
  for (const Set& s : got_sets)
    EXPECT_TRUE(want.count(s)) << where << " not a candidate: " << show(s);
  EXPECT_EQ(stats.convex, static_cast<int64_t>(got.size())) << where;
  EXPECT_GE(stats.connected_sets, stats.convex) << where;
  EXPECT_EQ(stats.seeds_capped, 0) << where;
  return got.size();
}

TEST(CandidateEnumeration, EqualsBruteForceOnRandomDags) {
  std::mt19937 rng(20261122);
  const int sizes[] = {16, 12, 5, 3, 2, 1};
  size_t total = 0;
  for (int t = 0; t < 240; ++t) {
    const int n = 1 + t % 12;
    const kora_test::TestDag d = kora_test::random_dag(rng, n);
    const int max_size = sizes[t % 6];
    total += expect_matches_brute_force(d.dag, max_size, {},
                                        "dag " + std::to_string(t) + " max_size " +
                                            std::to_string(max_size) + " " + describe(d.dag));
    if (HasFailure()) return;
  }
  EXPECT_GT(total, 240u * 4);  // the DAGs are not trivial
}

TEST(CandidateEnumeration, EqualsBruteForceOnTrapDags) {
  std::mt19937 rng(99);
  for (int t = 0; t < 60; ++t) {
    const int k = 2 + t % 3;  // 4, 6 or 8 trap nodes
    const int before = kora_test::uniform_int(rng, 0, 2);
    const int after = kora_test::uniform_int(rng, 0, 12 - 2 * k - before);
    const kora_test::TestDag d = kora_test::trap_dag(rng, before, k, after);
    ASSERT_LE(d.dag.size(), 12);
    kora::CandidateOptions options;
    options.max_sets_per_seed = int64_t{1} << 40;
    const std::vector<Candidate> got = kora::enumerate_candidates(d.dag, options);
    // The trap kernels are candidates: each pair {x_i, y_i} is connected and convex.
    for (const Set& pair : d.attractive)
      EXPECT_TRUE(std::any_of(got.begin(), got.end(),
                              [&](const Candidate& c) { return c.members == pair; }))
          << show(pair) << " in " << describe(d.dag);
    expect_matches_brute_force(d.dag, 16, {}, "trap dag " + std::to_string(t) + describe(d.dag));
    if (HasFailure()) return;
  }
}

// The k = 2 trap spelled out: a -> b, c -> d, a -> d, c -> b with a = 0, c = 1, b = 2,
// d = 3. {a, d} reads c and writes a; {b, c} reads a and writes c.
TEST(CandidateEnumeration, TrapPairsAreConvexCandidatesThatNeedEachOther) {
  KernelDag dag;
  for (int v = 0; v < 4; ++v) dag.add_node(PrimKind::kElementwise, v >= 2);
  dag.add_edge(0, 2), dag.add_edge(1, 3), dag.add_edge(0, 3), dag.add_edge(1, 2);
  const std::vector<Candidate> got = kora::enumerate_candidates(dag);
  std::map<Set, Candidate> by_members;
  for (const Candidate& c : got) by_members[c.members] = c;
  ASSERT_TRUE(by_members.count({0, 3}));
  ASSERT_TRUE(by_members.count({1, 2}));
  EXPECT_EQ(by_members[Set({0, 3})].inputs, Set{1});
  EXPECT_EQ(by_members[Set({0, 3})].outputs, Set({0, 3}));
  EXPECT_EQ(by_members[Set({1, 2})].inputs, Set{0});
  EXPECT_EQ(by_members[Set({1, 2})].outputs, Set({1, 2}));
  EXPECT_TRUE(kora::is_convex(dag, {0, 3}));
  EXPECT_TRUE(kora::is_convex(dag, {1, 2}));
  // {0, 1} is convex but not connected; everything connected here is convex.
  EXPECT_FALSE(by_members.count({0, 1}));
  EXPECT_EQ(got.size(), brute_force_candidates(dag, 16).size());
}

TEST(CandidateEnumeration, IsConvexAndMakeCandidateMatchDefinitionsOnAnySubset) {
  std::mt19937 rng(5);
  for (int t = 0; t < 150; ++t) {
    const kora_test::TestDag d = kora_test::random_dag(rng, 2 + t % 13);
    const KernelDag& dag = d.dag;
    const auto reach = reachability(dag);
    for (int trial = 0; trial < 40; ++trial) {
      Set s;
      for (int v = 0; v < dag.size(); ++v)
        if (kora_test::uniform01(rng) < 0.4) s.push_back(v);
      if (s.empty()) s.push_back(kora_test::uniform_int(rng, 0, dag.size() - 1));
      EXPECT_EQ(kora::is_convex(dag, s), convex(reach, s)) << show(s) << " " << describe(dag);
      const Candidate c = kora::make_candidate(dag, s);
      EXPECT_EQ(c.members, s);
      expect_io(dag, c, show(s) + " " + describe(dag));
    }
    if (HasFailure()) return;
  }
}

TEST(CandidateEnumeration, CapabilityHookRejectsSetsAndSeesOnlySetsWithinTheRules) {
  std::mt19937 rng(11);
  for (int t = 0; t < 80; ++t) {
    const kora_test::TestDag d = kora_test::random_dag(rng, 3 + t % 10);
    const KernelDag& dag = d.dag;
    const auto reach = reachability(dag);
    const int max_size = t % 2 ? 16 : 4;
    int calls = 0;
    // A backend that fuses no reduction with a linear node, and no set of exactly 3.
    Capable capable = [&](const KernelDag& g, const Set& s) {
      ++calls;
      EXPECT_EQ(&g, &dag);
      EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
      EXPECT_GE(s.size(), 2u) << "singletons are always candidates";
      EXPECT_LE(static_cast<int>(s.size()), max_size);
      EXPECT_TRUE(within_kind_rules(g, s)) << show(s);
      EXPECT_TRUE(connected(g, s)) << show(s);
      EXPECT_TRUE(convex(reach, s)) << show(s);
      bool reduce = false, linear = false;
      for (int v : s) {
        reduce |= g.kind[v] == PrimKind::kReduce;
        linear |= g.kind[v] == PrimKind::kLinear;
      }
      return !(reduce && linear) && s.size() != 3;
    };
    expect_matches_brute_force(dag, max_size, capable, "dag " + std::to_string(t) + describe(dag));
    if (HasFailure()) return;
  }
}

TEST(CandidateEnumeration, RejectingCapabilityLeavesExactlyTheSingletons) {
  std::mt19937 rng(3);
  for (int t = 0; t < 30; ++t) {
    const kora_test::TestDag d = kora_test::random_dag(rng, 1 + t % 14);
    kora::CandidateOptions options;
    options.capable = [](const KernelDag&, const Set&) { return false; };
    const std::vector<Candidate> got = kora::enumerate_candidates(d.dag, options);
    std::set<Set> sets;
    for (const Candidate& c : got) sets.insert(c.members);
    ASSERT_EQ(got.size(), static_cast<size_t>(d.dag.size()));
    for (int v = 0; v < d.dag.size(); ++v) EXPECT_TRUE(sets.count({v})) << v;
  }
}

// 0 -> 1..60 (elementwise) -> 61: 2^60 connected convex sets through node 0 alone.
KernelDag wide_dag(PrimKind hub_kind) {
  KernelDag dag;
  dag.add_node(hub_kind);
  for (int v = 1; v <= 60; ++v) dag.add_node(PrimKind::kElementwise);
  dag.add_node(PrimKind::kReduce, true);
  for (int v = 1; v <= 60; ++v) dag.add_edge(0, v), dag.add_edge(v, 61);
  return dag;
}

void expect_bounded(const KernelDag& dag, const kora::CandidateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  kora::CandidateStats stats;
  const std::vector<Candidate> got = kora::enumerate_candidates(dag, options, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t bound = int64_t{dag.size()} * options.max_sets_per_seed;
  EXPECT_LE(stats.connected_sets, bound);
  EXPECT_LE(static_cast<int64_t>(got.size()), bound);
  EXPECT_GE(stats.seeds_capped, 1);
  EXPECT_EQ(stats.convex, static_cast<int64_t>(got.size()));
  EXPECT_LT(seconds, 5.0);
  const auto reach = reachability(dag);
  std::set<Set> sets;
  for (const Candidate& c : got) {
    EXPECT_TRUE(sets.insert(c.members).second) << "duplicate " << show(c.members);
    EXPECT_LE(static_cast<int>(c.members.size()), options.max_size);
    EXPECT_TRUE(std::is_sorted(c.members.begin(), c.members.end()));
    EXPECT_TRUE(within_kind_rules(dag, c.members)) << show(c.members);
    EXPECT_TRUE(connected(dag, c.members)) << show(c.members);
    EXPECT_TRUE(convex(reach, c.members)) << show(c.members);
  }
  for (int v = 0; v < dag.size(); ++v) EXPECT_TRUE(sets.count({v})) << "singleton " << v;
  // Some fusion survives the cap: the hub with a consumer.
  EXPECT_TRUE(std::any_of(sets.begin(), sets.end(),
                          [](const Set& s) { return s.size() >= 2 && s[0] == 0; }));
  expect_io(
      dag,
      *std::find_if(got.begin(), got.end(), [](const Candidate& c) { return c.members == Set{0}; }),
      "hub");
}

TEST(CandidateEnumeration, BoundedOnAWideGraphWithEverySingleton) {
  for (PrimKind hub : {PrimKind::kElementwise, PrimKind::kLinear}) {
    const KernelDag dag = wide_dag(hub);
    kora::CandidateOptions small;
    small.max_sets_per_seed = 50;
    expect_bounded(dag, small);
    kora::CandidateOptions small_size;
    small_size.max_sets_per_seed = 200;
    small_size.max_size = 4;
    expect_bounded(dag, small_size);
    expect_bounded(dag, kora::CandidateOptions{});  // the default bound
  }
}

}  // namespace
