// Orchestration checked against brute force on random DAGs (up to 14 primitives, random
// integer costs, some with multi-output cycle traps): the candidates equal every
// connected convex subset within the rules; solve_optimal's cost equals an exhaustive
// search over candidate subsets, with gap 0; every plan (optimal, greedy, unfused) is
// valid in its order; optimal <= greedy and optimal <= unfused; schedule() rejects
// unschedulable and incomplete plans.
#include "kora/orchestrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/partition.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;

KernelDag random_dag(std::mt19937& rng, int n) {
  KernelDag dag;
  std::uniform_int_distribution<int> kind(0, 19);
  for (int v = 0; v < n; ++v) {
    const int k = kind(rng);
    dag.add_node(k < 8    ? PrimKind::kElementwise
                 : k < 10 ? PrimKind::kBroadcast
                 : k < 13 ? PrimKind::kLayout
                 : k < 15 ? PrimKind::kReduce
                 : k < 19 ? PrimKind::kLinear
                          : PrimKind::kOpaque);
  }
  std::uniform_real_distribution<double> u(0, 1);
  for (int v = 1; v < n; ++v) {
    // One edge from a recent node keeps the DAG mostly connected; more at random.
    dag.add_edge(std::max(0, v - 1 - static_cast<int>(u(rng) * 3)), v);
    for (int p = 0; p < v; ++p)
      if (u(rng) < 0.12) dag.add_edge(p, v);
  }
  for (int v = 0; v < n; ++v)
    if (dag.succ[v].empty() || u(rng) < 0.1) dag.required[v] = true;
  return dag;
}

// a -> b, c -> d, a -> d, c -> b: {a, d} and {b, c} are convex and need each other.
KernelDag trap_dag(std::mt19937& rng) {
  KernelDag dag;
  for (int v = 0; v < 6; ++v) dag.add_node(PrimKind::kElementwise);
  // 0 = src, 1 = a, 2 = c, 3 = b, 4 = d, 5 = sink
  dag.add_edge(0, 1), dag.add_edge(0, 2);
  dag.add_edge(1, 3), dag.add_edge(2, 4), dag.add_edge(1, 4), dag.add_edge(2, 3);
  dag.add_edge(3, 5), dag.add_edge(4, 5);
  dag.required[5] = true;
  if (rng() % 2) dag.required[3] = true;
  return dag;
}

std::vector<double> random_costs(std::mt19937& rng, const KernelDag& dag,
                                 const std::vector<Candidate>& c, bool trap) {
  std::uniform_int_distribution<int> d(1, 100);
  std::vector<double> cost(c.size());
  for (size_t k = 0; k < c.size(); ++k) {
    cost[k] = d(rng) + 10.0 * static_cast<double>(c[k].inputs.size() + c[k].outputs.size());
    // Make the two trap kernels very attractive.
    if (trap && (c[k].members == std::vector<int>{1, 4} || c[k].members == std::vector<int>{2, 3}))
      cost[k] = 1;
  }
  (void)dag;
  return cost;
}

bool connected(const KernelDag& dag, const std::vector<int>& s) {
  std::set<int> in(s.begin(), s.end()), seen{s[0]};
  std::vector<int> stack{s[0]};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    for (const auto* list : {&dag.succ[v], &dag.pred[v]})
      for (int w : *list)
        if (in.count(w) && seen.insert(w).second) stack.push_back(w);
  }
  return seen.size() == s.size();
}

bool convex_brute(const KernelDag& dag, const std::vector<int>& s) {
  // A node outside s reachable from s that reaches s.
  const int n = dag.size();
  std::vector<std::set<int>> reach(n);
  for (int v = n - 1; v >= 0; --v)
    for (int w : dag.succ[v]) reach[v].insert(w), reach[v].insert(reach[w].begin(), reach[w].end());
  std::set<int> in(s.begin(), s.end());
  for (int x = 0; x < n; ++x) {
    if (in.count(x)) continue;
    bool from = false, to = false;
    for (int v : s) from |= reach[v].count(x) > 0, to |= reach[x].count(v) > 0;
    if (from && to) return false;
  }
  return true;
}

// Exhaustive search over candidate subsets, driven by unmet requirements (see header).
class BruteForce {
 public:
  BruteForce(const KernelDag& dag, const std::vector<Candidate>& c, const std::vector<double>& cost)
      : dag_(dag), c_(c), cost_(cost) {}

  double solve() {
    std::vector<int> chosen;
    search(chosen, 0);
    return best_;
  }

 private:
  void search(std::vector<int>& chosen, double cost) {
    if (cost >= best_ - 1e-9) return;
    std::vector<char> produced(dag_.size(), 0);
    for (int k : chosen)
      for (int v : c_[k].outputs) produced[v] = 1;
    int need = -1;
    for (int v = 0; v < dag_.size() && need < 0; ++v)
      if (dag_.required[v] && !produced[v]) need = v;
    for (size_t i = 0; i < chosen.size() && need < 0; ++i)
      for (int u : c_[chosen[i]].inputs)
        if (!produced[u]) {
          need = u;
          break;
        }
    std::vector<int> options;
    if (need >= 0) {
      for (size_t k = 0; k < c_.size(); ++k)
        if (std::count(c_[k].outputs.begin(), c_[k].outputs.end(), need)) options.push_back(k);
    } else {
      // Complete: schedulable?
      std::vector<char> avail(dag_.size(), 0);
      std::vector<int> waiting = chosen;
      bool progress = true;
      while (progress) {
        progress = false;
        for (size_t i = 0; i < waiting.size(); ++i) {
          const Candidate& k = c_[waiting[i]];
          if (std::all_of(k.inputs.begin(), k.inputs.end(), [&](int u) { return avail[u]; })) {
            for (int v : k.outputs) avail[v] = 1;
            waiting.erase(waiting.begin() + static_cast<long>(i));
            progress = true;
            break;
          }
        }
      }
      if (waiting.empty()) {
        best_ = cost;
        return;
      }
      std::set<int> blocked;
      for (int k : waiting)
        for (int u : c_[k].inputs)
          if (!avail[u]) blocked.insert(u);
      for (size_t k = 0; k < c_.size(); ++k)
        for (int v : c_[k].outputs)
          if (blocked.count(v)) {
            options.push_back(k);
            break;
          }
    }
    for (int k : options) {
      if (std::count(chosen.begin(), chosen.end(), k)) continue;
      chosen.push_back(k);
      search(chosen, cost + cost_[k]);
      chosen.pop_back();
    }
  }

  const KernelDag& dag_;
  const std::vector<Candidate>& c_;
  const std::vector<double>& cost_;
  double best_ = 1e18;
};

void expect_valid_order(const KernelDag& dag, const std::vector<Candidate>& c,
                        const std::vector<int>& order) {
  std::vector<char> avail(dag.size(), 0);
  for (int k : order) {
    for (int u : c[k].inputs) ASSERT_TRUE(avail[u]) << "kernel " << k << " runs before input " << u;
    for (int v : c[k].outputs) avail[v] = 1;
  }
  for (int v = 0; v < dag.size(); ++v)
    if (dag.required[v]) {
      EXPECT_TRUE(avail[v]) << "required node " << v << " not produced";
    }
}

TEST(Candidates, EqualBruteForceSubsets) {
  std::mt19937 rng(7);
  for (int t = 0; t < 60; ++t) {
    const KernelDag dag = random_dag(rng, 4 + t % 9);
    kora::CandidateOptions options;
    options.max_size = 1 + t % 7;
    options.max_sets_per_seed = 1 << 30;
    std::set<std::vector<int>> got;
    for (const Candidate& c : kora::enumerate_candidates(dag, options)) {
      EXPECT_TRUE(got.insert(c.members).second) << "duplicate candidate";
      const Candidate again = kora::make_candidate(dag, c.members);
      EXPECT_EQ(c.outputs, again.outputs);
      EXPECT_EQ(c.inputs, again.inputs);
    }
    std::set<std::vector<int>> want;
    const int n = dag.size();
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      std::vector<int> s;
      int linear = 0, opaque = 0;
      for (int v = 0; v < n; ++v)
        if (mask >> v & 1) {
          s.push_back(v);
          linear += dag.kind[v] == PrimKind::kLinear;
          opaque += dag.kind[v] == PrimKind::kOpaque;
        }
      if (static_cast<int>(s.size()) > options.max_size) continue;
      if (s.size() > 1 && (linear > 1 || opaque > 0)) continue;
      if (connected(dag, s) && convex_brute(dag, s)) want.insert(s);
    }
    EXPECT_EQ(got, want) << "DAG " << t;
  }
}

TEST(Candidates, BoundedOnWideGraphsAndSingletonsAlwaysPresent) {
  KernelDag dag;
  dag.add_node(PrimKind::kLinear);
  for (int i = 0; i < 60; ++i) dag.add_node(PrimKind::kElementwise), dag.add_edge(0, i + 1);
  dag.add_node(PrimKind::kElementwise, true);
  for (int i = 0; i < 60; ++i) dag.add_edge(i + 1, 61);
  kora::CandidateOptions options;
  options.max_sets_per_seed = 500;
  kora::CandidateStats stats;
  const auto c = kora::enumerate_candidates(dag, options, &stats);
  EXPECT_GT(stats.seeds_capped, 0);
  EXPECT_LE(stats.connected_sets, 500 * dag.size());
  std::set<std::vector<int>> sets;
  for (const Candidate& k : c) sets.insert(k.members);
  for (int v = 0; v < dag.size(); ++v) EXPECT_TRUE(sets.count({v})) << v;
  // Capability hook: reject every set with more than 2 members.
  options.capable = [](const KernelDag&, const std::vector<int>& s) { return s.size() <= 2; };
  for (const Candidate& k : kora::enumerate_candidates(dag, options))
    EXPECT_LE(k.members.size(), 2u);
}

TEST(Orchestrate, OptimalEqualsBruteForceOnRandomDags) {
  std::mt19937 rng(11);
  int traps = 0, cut_solutions = 0;
  for (int t = 0; t < 320; ++t) {
    const bool trap = t % 8 == 0;
    const KernelDag dag = trap ? trap_dag(rng) : random_dag(rng, 3 + t % 12);
    kora::CandidateOptions options;
    options.max_size = 2 + t % 5;
    const auto c = kora::enumerate_candidates(dag, options);
    const auto cost = random_costs(rng, dag, c, trap);
    const kora::Plan opt = kora::solve_optimal(dag, c, cost);
    const double brute = BruteForce(dag, c, cost).solve();
    ASSERT_NEAR(opt.cost, brute, 1e-6) << "DAG " << t;
    EXPECT_EQ(opt.gap, 0.0);
    expect_valid_order(dag, c, opt.kernels);
    EXPECT_EQ(kora::schedule(dag, c, opt.kernels).size(), opt.kernels.size());
    const kora::Plan greedy = kora::plan_greedy(dag, c, cost);
    const kora::Plan unfused = kora::plan_unfused(dag, c, cost);
    expect_valid_order(dag, c, greedy.kernels);
    expect_valid_order(dag, c, unfused.kernels);
    EXPECT_LE(opt.cost, greedy.cost + 1e-9);
    EXPECT_LE(opt.cost, unfused.cost + 1e-9);
    traps += trap;
    cut_solutions += opt.cycle_cuts > 0;
  }
  EXPECT_GE(traps, 40);
  EXPECT_GT(cut_solutions, 0) << "no solve needed a schedulability cut: traps not exercised";
}

TEST(Orchestrate, ScheduleRejectsCyclesAndMissingOutputs) {
  std::mt19937 rng(3);
  KernelDag dag = trap_dag(rng);
  dag.required[3] = false;
  std::vector<Candidate> c;
  for (std::vector<int> s : {std::vector<int>{0}, {1, 4}, {2, 3}, {5}})
    c.push_back(kora::make_candidate(dag, s));
  EXPECT_THROW(kora::schedule(dag, c, {0, 1, 2, 3}), kora::Error);  // {a,d} <-> {b,c}
  EXPECT_THROW(kora::schedule(dag, c, {0, 1, 2}), kora::Error);     // sink not produced
  EXPECT_THROW(kora::schedule(dag, c, {7}), kora::Error);
}

TEST(Partition, SegmentsCoverInOrderAndOpaqueCutsLoseNothing) {
  // Blocks of random DAGs joined through an opaque node each: cutting right after the
  // opaque node (a kernel of its own) cannot lose a fusion.
  std::mt19937 rng(5);
  for (int t = 0; t < 20; ++t) {
    KernelDag dag;
    int prev = -1;
    for (int b = 0; b < 3; ++b) {
      const KernelDag block = random_dag(rng, 6);
      const int base = dag.size();
      for (int v = 0; v < block.size(); ++v)
        dag.add_node(block.kind[v] == PrimKind::kOpaque ? PrimKind::kElementwise : block.kind[v]);
      for (int v = 0; v < block.size(); ++v)
        for (int s : block.succ[v]) dag.add_edge(base + v, base + s);
      if (prev >= 0) dag.add_edge(prev, base);
      dag.add_node(PrimKind::kOpaque);
      prev = dag.size() - 1;
      for (int v = base; v < prev; ++v)
        if (dag.succ[v].empty()) dag.add_edge(v, prev);
    }
    dag.required[prev] = true;
    kora::PartitionOptions po{7, 7};
    const auto segments = kora::partition_dag(dag, po);
    ASSERT_EQ(segments.front().begin, 0);
    for (size_t s = 1; s < segments.size(); ++s) EXPECT_EQ(segments[s].begin, segments[s - 1].end);
    ASSERT_EQ(segments.back().end, dag.size());
    for (const auto& s : segments) EXPECT_LE(s.live_in, 1) << "cut at " << s.begin;

    kora::CandidateOptions co;
    co.max_size = 4;
    // A kernel's cost depends on its members in the whole DAG (as tensor sizes would).
    auto cost_of = [&](std::vector<int> global) {
      const Candidate k = kora::make_candidate(dag, std::move(global));
      return 5.0 + k.inputs.size() + k.outputs.size() + 0.5 * k.members.size();
    };
    const auto whole_c = kora::enumerate_candidates(dag, co);
    std::vector<double> whole_cost;
    for (const auto& k : whole_c) whole_cost.push_back(cost_of(k.members));
    const double whole = kora::solve_optimal(dag, whole_c, whole_cost).cost;
    double parts = 0;
    for (const auto& s : segments) {
      const KernelDag sub = kora::sub_dag(dag, s.begin, s.end);
      const auto c = kora::enumerate_candidates(sub, co);
      std::vector<double> cost;
      for (const auto& k : c) {
        std::vector<int> global;
        for (int v : k.members) global.push_back(sub.prim[v]);
        cost.push_back(cost_of(global));
      }
      parts += kora::solve_optimal(sub, c, cost).cost;
    }
    EXPECT_NEAR(parts, whole, 1e-6) << "DAG " << t;
  }
}

}  // namespace
