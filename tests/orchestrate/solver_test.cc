// The orchestration solver (include/kora/orchestrate.h) against an independent exact
// search: on 340 random DAGs (220 plain ones of up to 14 nodes; 120 of up to 12 nodes
// with a multi-output cycle trap of 2 or 3 kernels, see random_dag.h; larger traps with
// many kernels downstream of the cycle need many lazy cuts and would make the run long)
// with random integer costs, solve_optimal's cost equals the exhaustive optimum with
// gap 0, and it adds schedulability cuts whenever the optimum that ignores
// schedulability is cheaper; its plan and the unfused and greedy plans are valid
// (schedule() accepts them and each kernel runs after the producers of its inputs, every
// required node produced), and optimal <= greedy, optimal <= unfused; the runner-up
// (SolveOptions::runner_up) is valid, lacks a kernel of the optimum and costs what the
// exact search finds with one of the optimum's kernels (and the dominated ones) forbidden.
// schedule() rejects a cycle of kernels, a missing required node and an input nobody produces. Out
// of time, solve_optimal returns the greedy plan with the bound CBC proved. The exact search is
// tests/orchestrate/brute_force.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/orchestrate.h"
#include "orchestrate/brute_force.h"
#include "orchestrate/dominance.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;
using kora_test::ExactSearch;
using kora_test::runs_in_order;

constexpr double kTolerance = ExactSearch::kTolerance;

std::string describe(const KernelDag& dag) {
  std::string s = std::to_string(dag.size()) + " nodes:";
  for (int v = 0; v < dag.size(); ++v) {
    s += " " + std::to_string(v) + "(" + kora::prim_kind_name(dag.kind[v]) +
         (dag.required[v] ? ",req" : "") + ")->";
    for (int w : dag.succ[v]) s += std::to_string(w) + ",";
  }
  return s;
}

// The kernels of `chosen` in the order they can run (repeatedly the first one whose
// inputs are available); the stuck ones are left out.
std::vector<int> simulated_order(const KernelDag& dag, const std::vector<Candidate>& c,
                                 std::vector<int> chosen) {
  std::vector<char> available(dag.size(), 0);
  std::vector<int> order;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < chosen.size(); ++i) {
      const std::vector<int>& in = c[chosen[i]].inputs;
      if (!std::all_of(in.begin(), in.end(), [&](int u) { return available[u] != 0; })) continue;
      for (int v : c[chosen[i]].outputs) available[v] = 1;
      order.push_back(chosen[i]);
      chosen.erase(chosen.begin() + static_cast<long>(i));
      progress = true;
      break;
    }
  }
  return order;
}

// A plan is valid: distinct candidate indices, in an order that runs and produces every
// required node, at the cost it claims, and schedule() accepts it with a valid order.
void expect_valid_plan(const KernelDag& dag, const std::vector<Candidate>& c,
                       const std::vector<double>& cost, const kora::Plan& plan,
                       const std::string& where) {
  double sum = 0;
  std::set<int> distinct;
  for (int k : plan.kernels) {
    ASSERT_GE(k, 0) << where;
    ASSERT_LT(k, static_cast<int>(c.size())) << where;
    EXPECT_TRUE(distinct.insert(k).second) << where << " kernel " << k << " twice";
    sum += cost[k];
  }
  EXPECT_NEAR(plan.cost, sum, kTolerance) << where;
  EXPECT_TRUE(runs_in_order(dag, c, plan.kernels)) << where;
  std::vector<int> order;
  EXPECT_NO_THROW(order = kora::schedule(dag, c, plan.kernels)) << where;
  std::vector<int> a = order, b = plan.kernels;
  std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b) << where << ": schedule() returns a permutation";
  EXPECT_TRUE(runs_in_order(dag, c, order)) << where;
}

// SolveOptions::runner_up against the exact search: the cheapest plan, among the
// candidates the program keeps (undominated), that lacks at least one kernel of the
// optimum the solver returned, i.e. for some kernel k of it the optimum with k forbidden
// (and every dominated candidate); none when every such search has to take a forbidden one.
// Returns whether there was one.
bool expect_runner_up(const KernelDag& dag, const std::vector<Candidate>& candidates,
                      const std::vector<double>& cost, double optimum, const std::string& where) {
  kora::SolveOptions options;
  options.runner_up = true;
  const kora::Plan plan = kora::solve_optimal(dag, candidates, cost, options);
  EXPECT_NEAR(plan.cost, optimum, kTolerance) << where;
  double forbidden_ms = 1;
  for (double c : cost) forbidden_ms += c;
  const std::vector<char> keep = kora::undominated(dag, candidates, cost, nullptr);
  double second = std::numeric_limits<double>::infinity();
  for (int k : plan.kernels) {
    std::vector<double> without = cost;
    without[k] = forbidden_ms;
    for (size_t j = 0; j < candidates.size(); ++j)
      if (!keep[j]) without[j] = forbidden_ms;
    const double best = ExactSearch(dag, candidates, without, true).solve();
    if (best < forbidden_ms) second = std::min(second, best);
  }
  if (!std::isfinite(second)) {
    EXPECT_TRUE(plan.runner_up.empty()) << where << ": no other plan exists";
    return false;
  }
  if (plan.runner_up.size() != 1u) {
    ADD_FAILURE() << where << ": no runner-up, the exact search's costs " << second;
    return true;
  }
  const kora::Plan& next = plan.runner_up[0];
  expect_valid_plan(dag, candidates, cost, next, where + " runner-up");
  EXPECT_NEAR(next.cost, second, kTolerance) << where;
  EXPECT_EQ(next.gap, 0) << where;
  const std::set<int> first(plan.kernels.begin(), plan.kernels.end());
  EXPECT_FALSE(std::all_of(
      first.begin(), first.end(),
      [&](int k) { return std::count(next.kernels.begin(), next.kernels.end(), k) > 0; }))
      << where << ": the runner-up holds every kernel of the optimum";
  return true;
}

struct Tally {
  int problems = 0, traps = 0, trap_bites = 0, bites = 0, runners_up = 0;
};

// One problem: candidates (sometimes thinned), costs, exact search, the three plans;
// `horizontal` pairs of independent kernels among the candidates (horizontal fusion).
void check_problem(std::mt19937& rng, const kora_test::TestDag& t, const std::string& name,
                   Tally& tally, int horizontal = 0) {
  const KernelDag& dag = t.dag;
  kora::CandidateOptions options;
  options.horizontal_pairs = horizontal;
  const int sizes[] = {16, 6, 3};
  options.max_size = sizes[kora_test::uniform_int(rng, 0, 2)];
  std::vector<Candidate> candidates = kora::enumerate_candidates(dag, options);
  if (t.attractive.empty() && kora_test::uniform01(rng) < 0.3) {
    // Any candidate list with every singleton is a valid problem: drop some kernels.
    std::vector<Candidate> kept;
    for (Candidate& c : candidates)
      if (c.members.size() == 1 || kora_test::uniform01(rng) < 0.6) kept.push_back(std::move(c));
    candidates = std::move(kept);
  }
  const std::vector<double> cost = kora_test::random_costs(rng, t, candidates);
  const std::string where = name + " (" + std::to_string(candidates.size()) +
                            " candidates, max_size " + std::to_string(options.max_size) + ") " +
                            describe(dag);

  ExactSearch exact(dag, candidates, cost, true);
  const double optimum = exact.solve();
  double found = 0;
  for (int k : exact.best_set()) found += cost[k];
  ASSERT_NEAR(found, optimum, kTolerance) << where;
  const std::vector<int> exact_order = simulated_order(dag, candidates, exact.best_set());
  ASSERT_EQ(exact_order.size(), exact.best_set().size()) << where;
  ASSERT_TRUE(runs_in_order(dag, candidates, exact_order)) << where;
  const double relaxed = ExactSearch(dag, candidates, cost, false).solve();
  ASSERT_LE(relaxed, optimum + kTolerance) << where;
  const bool bites = relaxed < optimum - kTolerance;

  const kora::Plan opt = kora::solve_optimal(dag, candidates, cost);
  const kora::Plan greedy = kora::plan_greedy(dag, candidates, cost);
  const kora::Plan unfused = kora::plan_unfused(dag, candidates, cost);
  expect_valid_plan(dag, candidates, cost, opt, where + " optimal");
  expect_valid_plan(dag, candidates, cost, greedy, where + " greedy");
  expect_valid_plan(dag, candidates, cost, unfused, where + " unfused");
  EXPECT_NEAR(opt.cost, optimum, kTolerance) << where;
  EXPECT_NEAR(opt.gap, 0.0, kTolerance) << where;
  EXPECT_GE(opt.solves, 1) << where;
  EXPECT_EQ(greedy.gap, -1) << where << ": baselines prove no bound";
  EXPECT_EQ(unfused.gap, -1) << where;
  if (bites) {
    // The relaxation's optimum cannot be scheduled: the solver must have cut it off.
    EXPECT_GE(opt.cycle_cuts, 1) << where << " relaxed " << relaxed << " optimum " << optimum;
    EXPECT_GE(opt.solves, 2) << where;
  }
  EXPECT_LE(opt.cost, greedy.cost + kTolerance) << where;
  EXPECT_LE(opt.cost, unfused.cost + kTolerance) << where;
  tally.runners_up += expect_runner_up(dag, candidates, cost, optimum, where);

  ++tally.problems;
  tally.bites += bites;
  if (!t.attractive.empty()) ++tally.traps, tally.trap_bites += bites;
}

TEST(OrchestrationSolver, OptimalEqualsExactSearchOnRandomDags) {
  std::mt19937 rng(424242);
  Tally tally;
  for (int i = 0; i < 220; ++i) {
    const int n = 1 + i % 14;
    check_problem(rng, kora_test::random_dag(rng, n), "random dag " + std::to_string(i), tally);
    if (HasFailure()) return;
  }
  for (int i = 0; i < 120; ++i) {
    const int k = 2 + i % 2;
    const int before = kora_test::uniform_int(rng, 0, 3);
    const int after = kora_test::uniform_int(rng, 0, 3);
    check_problem(rng, kora_test::trap_dag(rng, before, k, after), "trap dag " + std::to_string(i),
                  tally);
    if (HasFailure()) return;
  }
  EXPECT_EQ(tally.problems, 340);
  // Most problems have a second plan (a single-node DAG with one candidate has none).
  EXPECT_GE(tally.runners_up, 300) << tally.runners_up << " of 340 problems have a runner-up";
  // The traps work: most of them make the relaxation's optimum unschedulable.
  EXPECT_GE(tally.trap_bites, tally.traps * 3 / 4)
      << tally.trap_bites << " of " << tally.traps << " traps bite";
  std::printf("[ info     ] %d problems, %d traps, %d where ignoring schedulability is cheaper\n",
              tally.problems, tally.traps, tally.bites);
}

// Kernels of a few nanoseconds (a recurrent network's time steps): the same problems with
// costs of 1e-7 to 1e-5 ms have the same optimum. CLP's dual tolerance is absolute, so in
// milliseconds such costs sit near it; the solver's objective is in microseconds.
TEST(OrchestrationSolver, OptimalEqualsExactSearchAtNanosecondCosts) {
  std::mt19937 rng(1129);
  int problems = 0;
  for (int i = 0; i < 160; ++i) {
    const kora_test::TestDag t = i % 4 == 3 ? kora_test::trap_dag(rng, 1, 2 + i % 2, 1)
                                            : kora_test::random_dag(rng, 4 + i % 11);
    kora::CandidateOptions options;
    options.max_size = 6;
    const std::vector<Candidate> candidates = kora::enumerate_candidates(t.dag, options);
    const std::vector<double> units = kora_test::random_costs(rng, t, candidates);  // 1..100s
    std::vector<double> cost = units;
    for (double& c : cost) c *= 1e-7;
    const double optimum = ExactSearch(t.dag, candidates, units, true).solve();
    const kora::Plan plan = kora::solve_optimal(t.dag, candidates, cost);
    const std::string where = "problem " + std::to_string(i) + " " + describe(t.dag);
    expect_valid_plan(t.dag, candidates, cost, plan, where);
    double in_units = 0;
    for (int k : plan.kernels) in_units += units[k];
    EXPECT_NEAR(in_units, optimum, kTolerance) << where;
    EXPECT_NEAR(plan.cost, optimum * 1e-7, 1e-12) << where;
    EXPECT_EQ(plan.gap, 0) << where;
    if (HasFailure()) return;
    ++problems;
  }
  EXPECT_EQ(problems, 160);
}

// Horizontal pairs (two independent kernels as one candidate, not connected) are
// candidates like any: the solver's plan is still the exact optimum and runs in order.
TEST(OrchestrationSolver, OptimalEqualsExactSearchWithHorizontalPairs) {
  std::mt19937 rng(20261129);
  Tally tally;
  int64_t pairs = 0;
  for (int i = 0; i < 160; ++i) {
    const kora_test::TestDag t = kora_test::random_dag(rng, 3 + i % 11);
    kora::CandidateOptions options;
    options.horizontal_pairs = 6;
    kora::CandidateStats stats;
    kora::enumerate_candidates(t.dag, options, &stats);
    pairs += stats.horizontal;
    check_problem(rng, t, "random dag " + std::to_string(i) + " with horizontal pairs", tally, 6);
    if (HasFailure()) return;
  }
  EXPECT_GE(pairs, 100) << "the random DAGs offer horizontal pairs";
}

// The k = 2 trap spelled out: a = 0, c = 1, b = 2, d = 3; a -> b, c -> d, a -> d, c -> b;
// b and d required. {a, d} and {b, c} cost 1, every other candidate 10 except the whole
// triples (20) and the whole graph (50). Ignoring schedulability: 2. The optimum
// recomputes a (or c): {a}, {b, c}, {a, d} at 12.
TEST(OrchestrationSolver, TrapPairIsCutAndRecomputationWins) {
  KernelDag dag;
  for (int v = 0; v < 4; ++v) dag.add_node(PrimKind::kElementwise, v >= 2);
  dag.add_edge(0, 2), dag.add_edge(1, 3), dag.add_edge(0, 3), dag.add_edge(1, 2);
  const std::vector<Candidate> c = kora::enumerate_candidates(dag);
  std::vector<double> cost(c.size(), 10);
  int ad = -1, bc = -1;
  for (size_t k = 0; k < c.size(); ++k) {
    if (c[k].members == std::vector<int>{0, 3}) ad = static_cast<int>(k), cost[k] = 1;
    if (c[k].members == std::vector<int>{1, 2}) bc = static_cast<int>(k), cost[k] = 1;
    if (c[k].members.size() == 3) cost[k] = 20;
    if (c[k].members.size() == 4) cost[k] = 50;
  }
  ASSERT_GE(ad, 0);
  ASSERT_GE(bc, 0);
  EXPECT_DOUBLE_EQ(ExactSearch(dag, c, cost, false).solve(), 2);
  EXPECT_DOUBLE_EQ(ExactSearch(dag, c, cost, true).solve(), 12);
  const kora::Plan opt = kora::solve_optimal(dag, c, cost);
  EXPECT_DOUBLE_EQ(opt.cost, 12);
  EXPECT_EQ(opt.gap, 0);
  EXPECT_GE(opt.cycle_cuts, 1);
  expect_valid_plan(dag, c, cost, opt, "trap");
  ASSERT_EQ(opt.kernels.size(), 3u);
  EXPECT_TRUE(std::count(opt.kernels.begin(), opt.kernels.end(), ad) == 1 &&
              std::count(opt.kernels.begin(), opt.kernels.end(), bc) == 1);
  EXPECT_THROW(kora::schedule(dag, c, {ad, bc}), kora::Error);
}

// The same trap with no time: CBC's first solution (the pair, 2) cannot run and the time
// limit is spent, so solve_optimal falls back to the greedy plan, after one solve and no
// cut, with the gap to the bound CBC proved (the pair's 2).
TEST(OrchestrationSolver, OutOfTimeFallsBackToGreedyWithTheProvenBound) {
  KernelDag dag;
  for (int v = 0; v < 4; ++v) dag.add_node(PrimKind::kElementwise, v >= 2);
  dag.add_edge(0, 2), dag.add_edge(1, 3), dag.add_edge(0, 3), dag.add_edge(1, 2);
  const std::vector<Candidate> c = kora::enumerate_candidates(dag);
  std::vector<double> cost(c.size(), 10);
  for (size_t k = 0; k < c.size(); ++k)
    if (c[k].members == std::vector<int>{0, 3} || c[k].members == std::vector<int>{1, 2})
      cost[k] = 1;
  ASSERT_DOUBLE_EQ(ExactSearch(dag, c, cost, false).solve(), 2);
  kora::SolveOptions no_time;
  no_time.time_limit_seconds = 0;
  const kora::Plan opt = kora::solve_optimal(dag, c, cost, no_time);
  const kora::Plan greedy = kora::plan_greedy(dag, c, cost);
  EXPECT_EQ(opt.kernels, greedy.kernels);
  EXPECT_DOUBLE_EQ(opt.cost, greedy.cost);
  EXPECT_DOUBLE_EQ(opt.gap, greedy.cost - 2);
  EXPECT_EQ(opt.solves, 1);
  EXPECT_EQ(opt.cycle_cuts, 0);
  EXPECT_TRUE(opt.native.empty());
  EXPECT_TRUE(opt.blocked.empty());
  expect_valid_plan(dag, c, cost, opt, "out of time");
}

TEST(OrchestrationSolver, ScheduleRejectsCyclesMissingOutputsAndMissingInputs) {
  std::mt19937 rng(8);
  for (int i = 0; i < 40; ++i) {
    const kora_test::TestDag t = kora_test::trap_dag(rng, i % 3, 2 + i % 3, i % 4);
    const std::vector<Candidate> c = kora::enumerate_candidates(t.dag);
    std::map<std::vector<int>, int> index;
    for (size_t k = 0; k < c.size(); ++k) index[c[k].members] = static_cast<int>(k);
    std::vector<int> singles;
    for (int v = 0; v < t.dag.size(); ++v) singles.push_back(index.at({v}));
    // All singletons, in any order: valid, and schedule() puts them in a valid order.
    std::vector<int> shuffled = singles;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<int> order;
    ASSERT_NO_THROW(order = kora::schedule(t.dag, c, shuffled));
    EXPECT_TRUE(runs_in_order(t.dag, c, order));
    EXPECT_EQ(order.size(), shuffled.size());

    // The trap pairs plus singletons for the rest: every node produced, but the pairs
    // wait on each other in a cycle.
    std::vector<int> cyclic;
    std::set<int> in_pairs;
    for (const std::vector<int>& pair : t.attractive) {
      cyclic.push_back(index.at(pair));
      in_pairs.insert(pair.begin(), pair.end());
    }
    for (int v = 0; v < t.dag.size(); ++v)
      if (!in_pairs.count(v)) cyclic.push_back(index.at({v}));
    std::shuffle(cyclic.begin(), cyclic.end(), rng);
    EXPECT_THROW(kora::schedule(t.dag, c, cyclic), kora::Error) << describe(t.dag);

    // Drop the only kernel producing a required node (a required sink's singleton).
    int sink = -1;
    for (int v = 0; v < t.dag.size(); ++v)
      if (t.dag.required[v] && t.dag.succ[v].empty()) sink = v;
    ASSERT_GE(sink, 0);
    std::vector<int> missing;
    for (int k : singles)
      if (c[k].members[0] != sink) missing.push_back(k);
    EXPECT_THROW(kora::schedule(t.dag, c, missing), kora::Error) << describe(t.dag);

    // Drop the producer of an input (a non-required node with a successor).
    int inner = -1;
    for (int v = 0; v < t.dag.size(); ++v)
      if (!t.dag.required[v] && !t.dag.succ[v].empty()) inner = v;
    if (inner >= 0) {
      std::vector<int> no_input;
      for (int k : singles)
        if (c[k].members[0] != inner) no_input.push_back(k);
      EXPECT_THROW(kora::schedule(t.dag, c, no_input), kora::Error) << describe(t.dag);
    }
    // An index that is not a candidate.
    std::vector<int> bad = singles;
    bad.push_back(static_cast<int>(c.size()));
    EXPECT_THROW(kora::schedule(t.dag, c, bad), kora::Error);
  }
}

// Every node required, a chain: the only plans are chains of kernels; the solver must
// still produce each node (fused kernels output all their members here).
TEST(OrchestrationSolver, BaselinesAndOptimalOnAChainWithEveryNodeRequired) {
  KernelDag dag;
  for (int v = 0; v < 8; ++v)
    dag.add_node(v == 3 ? PrimKind::kLinear : PrimKind::kElementwise, true);
  for (int v = 1; v < 8; ++v) dag.add_edge(v - 1, v);
  const std::vector<Candidate> c = kora::enumerate_candidates(dag);
  std::vector<double> cost(c.size());
  for (size_t k = 0; k < c.size(); ++k) cost[k] = 3 + static_cast<double>(c[k].members.size());
  const kora::Plan opt = kora::solve_optimal(dag, c, cost);
  const kora::Plan greedy = kora::plan_greedy(dag, c, cost);
  const kora::Plan unfused = kora::plan_unfused(dag, c, cost);
  EXPECT_DOUBLE_EQ(opt.cost, ExactSearch(dag, c, cost, true).solve());
  EXPECT_DOUBLE_EQ(opt.cost, 3 + 8);  // the whole chain, one kernel
  EXPECT_DOUBLE_EQ(unfused.cost, 8 * 4);
  EXPECT_EQ(unfused.kernels.size(), 8u);
  expect_valid_plan(dag, c, cost, opt, "optimal");
  expect_valid_plan(dag, c, cost, greedy, "greedy");
  expect_valid_plan(dag, c, cost, unfused, "unfused");
}

}  // namespace

// Dominance pruning (orchestrate/dominance.h) against its definition: with roofline-
// shaped costs, every dropped candidate has a kept one writing all it writes, reading
// nothing more and costing no more; no kept candidate dominates another kept one; and the
// exact optimum over the kept candidates equals the optimum over all of them (and
// solve_optimal's).
TEST(OrchestrationSolver, DominatedCandidatesLeaveTheOptimumUnchanged) {
  std::mt19937 rng(777);
  auto subset = [](const std::vector<int>& a, const std::vector<int>& b) {
    return std::includes(b.begin(), b.end(), a.begin(), a.end());  // a within b (sorted)
  };
  int dropped = 0, total = 0;
  for (int i = 0; i < 150; ++i) {
    const kora_test::TestDag t = kora_test::random_dag(rng, 2 + i % 13);
    kora::CandidateOptions options;
    options.max_size = 2 + i % 6;
    const std::vector<Candidate> c = kora::enumerate_candidates(t.dag, options);
    const std::vector<double> cost = kora_test::io_costs(rng, t.dag, c);
    const std::vector<char> keep = kora::undominated(t.dag, c, cost);
    const std::string where = "dag " + std::to_string(i) + " " + describe(t.dag);
    auto dominates = [&](size_t j, size_t k) {
      return cost[j] <= cost[k] && subset(c[k].outputs, c[j].outputs) &&
             subset(c[j].inputs, c[k].inputs);
    };
    std::vector<Candidate> kept;
    std::vector<double> kept_cost;
    for (size_t k = 0; k < c.size(); ++k) {
      ++total;
      if (keep[k]) {
        kept.push_back(c[k]);
        kept_cost.push_back(cost[k]);
        for (size_t j = 0; j < c.size(); ++j)
          EXPECT_FALSE(j != k && keep[j] && !c[k].outputs.empty() && dominates(j, k))
              << where << ": kept " << j << " dominates kept " << k;
        continue;
      }
      ++dropped;
      bool witness = false;
      for (size_t j = 0; j < c.size() && !witness; ++j)
        witness = j != k && keep[j] && dominates(j, k);
      EXPECT_TRUE(witness) << where << ": candidate " << k << " dropped without a kept dominator";
    }
    const double all = ExactSearch(t.dag, c, cost, true).solve();
    EXPECT_NEAR(ExactSearch(t.dag, kept, kept_cost, true).solve(), all, kTolerance) << where;
    EXPECT_NEAR(kora::solve_optimal(t.dag, c, cost).cost, all, kTolerance) << where;
    if (HasFailure()) return;
  }
  EXPECT_GT(dropped, total / 10) << "dominance hardly ever applied: " << dropped << " of " << total;
  std::printf("[ info     ] %d of %d candidates dominated\n", dropped, total);
}
