// Orchestration checked against brute force (tests/orchestrate/brute_force.h) on random
// DAGs (up to 14 primitives, dense_random_dag in random_dag.h; random integer costs, some
// with multi-output cycle traps): the candidates equal every connected convex subset
// within the rules; solve_optimal's cost equals an exhaustive search over candidate
// subsets, with gap 0; every plan (optimal, greedy, unfused) is valid in its order;
// optimal <= greedy and optimal <= unfused; schedule() rejects unschedulable and
// incomplete plans; a cost model that gives a kernel a cost that is not a finite
// non-negative number is an error naming the kernel; the solution pool's next-best plans
// differ from the optimum in one segment each, cheapest first.
#include "kora/orchestrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/orchestration.h"
#include "orchestrate/branches.h"
#include "orchestrate/brute_force.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;

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

TEST(Candidates, EqualBruteForceSubsets) {
  std::mt19937 rng(7);
  for (int t = 0; t < 60; ++t) {
    const KernelDag dag = kora_test::dense_random_dag(rng, 4 + t % 9);
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
      if (kora_test::connected(dag, s) && kora_test::convex_brute(dag, s)) want.insert(s);
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
    const KernelDag dag = trap ? trap_dag(rng) : kora_test::dense_random_dag(rng, 3 + t % 12);
    kora::CandidateOptions options;
    options.max_size = 2 + t % 5;
    const auto c = kora::enumerate_candidates(dag, options);
    const auto cost = random_costs(rng, dag, c, trap);
    const kora::Plan opt = kora::solve_optimal(dag, c, cost);
    const double brute = kora_test::ExactSearch(dag, c, cost, true).solve();
    ASSERT_NEAR(opt.cost, brute, 1e-6) << "DAG " << t;
    EXPECT_EQ(opt.gap, 0.0);
    EXPECT_TRUE(kora_test::runs_in_order(dag, c, opt.kernels)) << "DAG " << t;
    EXPECT_EQ(kora::schedule(dag, c, opt.kernels).size(), opt.kernels.size());
    const kora::Plan greedy = kora::plan_greedy(dag, c, cost);
    const kora::Plan unfused = kora::plan_unfused(dag, c, cost);
    EXPECT_TRUE(kora_test::runs_in_order(dag, c, greedy.kernels)) << "DAG " << t;
    EXPECT_TRUE(kora_test::runs_in_order(dag, c, unfused.kernels)) << "DAG " << t;
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

// A cost model that gives some kernel a cost no plan can be measured by (NaN, infinite,
// negative: a bug in a target's model) is one error naming the kernel, not a solver
// failure far from its cause.
TEST(Orchestration, ACostThatIsNotAFiniteNonNegativeNumberIsAnErrorNamingTheKernel) {
  const kora::PrimGraph g = kora_test::four_branches(2);
  class Broken : public kora::CostModel {
   public:
    explicit Broken(double bad) : bad_(bad) {}
    double cost_ms(const kora::PrimGraph& graph, const kora::KernelDag& dag,
                   const kora::Candidate& c) override {
      return c.members.size() == 2 ? bad_ : roofline_.cost_ms(graph, dag, c);
    }
    std::string describe() const override { return "broken"; }

   private:
    double bad_;
    kora::RooflineCost roofline_{kora::device_params("cpu")};
  };
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0}) {
    Broken costs(bad);
    try {
      kora::orchestrate(g, costs, kora::OrchestrationOptions());
      ADD_FAILURE() << "no error for " << bad;
    } catch (const kora::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("the cost model (broken) gave kernel "), std::string::npos) << what;
      EXPECT_NE(what.find("not a finite non-negative number"), std::string::npos) << what;
    }
  }
}

// A kernel costs a launch (1 ms) and 0.6 ms per primitive: fusing saves launches, and no
// kernel is dominated by a larger one (which costs more), so segments have runner-ups.
class LaunchAndWork : public kora::CostModel {
 public:
  double cost_ms(const kora::PrimGraph&, const kora::KernelDag&, const Candidate& c) override {
    return 1 + 0.6 * static_cast<double>(c.members.size());
  }
  std::string describe() const override { return "launch and work"; }
};

// The solution pool (OrchestrationOptions::pool): on four branches cut into segments of a
// few primitives, the next-best plans are the optimum with exactly one segment's plan
// replaced, cheapest first, no cheaper than the optimum, each computing every primitive at
// the cost it claims (the sum of its kernels': the model knows no layouts).
TEST(Orchestration, ThePoolHoldsTheNextBestPlansEachDifferingInOneSegment) {
  const kora::PrimGraph g = kora_test::four_branches(3);
  LaunchAndWork costs;
  kora::OrchestrationOptions options;
  options.partition.min_size = 2;
  options.partition.max_size = 4;
  const kora::OrchestrationResult alone = kora::orchestrate(g, costs, options);
  EXPECT_TRUE(alone.next_best.empty());
  options.pool = 3;
  const kora::OrchestrationResult best = kora::orchestrate(g, costs, options);
  ASSERT_GT(best.segments, 2);
  EXPECT_NEAR(best.total_cost_ms, alone.total_cost_ms, 1e-12);
  ASSERT_EQ(best.next_best.size(), 2u);
  auto by_segment = [](const kora::OrchestrationResult& r) {
    std::map<int, std::set<std::vector<int>>> kernels;
    for (const kora::ChosenKernel& k : r.kernels) kernels[k.segment].insert(k.prims);
    return kernels;
  };
  double last = best.total_cost_ms;
  std::set<std::map<int, std::set<std::vector<int>>>> distinct{by_segment(best)};
  for (const kora::OrchestrationResult& next : best.next_best) {
    EXPECT_GE(next.total_cost_ms, last - 1e-12);
    last = next.total_cost_ms;
    EXPECT_FALSE(next.proven_optimal);
    double sum = 0;
    std::set<int> computed;
    for (const kora::ChosenKernel& k : next.kernels) {
      sum += k.cost_ms;
      computed.insert(k.prims.begin(), k.prims.end());
    }
    EXPECT_NEAR(next.total_cost_ms, sum, 1e-9);
    EXPECT_EQ(computed.size(), g.prims.size()) << "every primitive computed";
    const auto a = by_segment(best), b = by_segment(next);
    int differ = 0;
    for (const auto& [segment, kernels] : a) differ += b.count(segment) && b.at(segment) != kernels;
    EXPECT_EQ(differ, 1);
    EXPECT_TRUE(distinct.insert(b).second) << "a plan twice in the pool";
  }
}

}  // namespace
