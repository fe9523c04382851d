// Blocked layouts in the orchestration program (include/kora/orchestrate.h,
// LayoutProblem): on hand-built chains of kernels, each with a native implementation
// that saves the reorder of every side it reads or writes blocked, solve_optimal keeps a
// tensor blocked exactly where every kernel touching it can take it (natively, or as an
// elementwise kernel whose tensors all share the layout), and its cost is the sum worked
// out by hand for that choice; on small random DAGs with random layout options, its cost
// equals a brute force over every kernel set and every choice of blocked nodes
// (layout_brute_force, tests/orchestrate/brute_force.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/orchestrate.h"
#include "orchestrate/brute_force.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::LayoutProblem;
using kora::NativeOption;
using kora::PrimKind;

// A chain-like DAG from edges; node `n - 1` and those in `required` are required. One
// singleton candidate per node, plain cost 1 (or `cost` where given).
struct Problem {
  KernelDag dag;
  std::vector<Candidate> candidates;
  std::vector<double> cost;
  LayoutProblem layouts;

  Problem(int n, const std::vector<std::pair<int, int>>& edges, const std::vector<int>& required) {
    for (int v = 0; v < n; ++v)
      dag.add_node(PrimKind::kLinear, std::count(required.begin(), required.end(), v) > 0);
    for (auto [a, b] : edges) dag.add_edge(a, b);
    for (int v = 0; v < n; ++v) candidates.push_back(kora::make_candidate(dag, {v}));
    cost.assign(n, 1.0);
    layouts.native.resize(n);
    layouts.agnostic.assign(n, 0);
  }
  // Candidate v runs native at 1.0 with every side reordered; each side saves 0.3.
  void native(int v, const std::vector<std::pair<int, int>>& sides) {
    NativeOption& o = layouts.native[v];
    o.blocked_ms = 1.0;
    for (auto [node, layout] : sides) {
      o.nodes.push_back(node);
      o.layouts.push_back(layout);
      o.saved_ms.push_back(0.3);
    }
  }
  kora::Plan solve() { return kora::solve_optimal(dag, candidates, cost, {}, &layouts); }
};

std::vector<std::pair<int, int>> sorted(std::vector<std::pair<int, int>> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(LayoutProblem, AChainOfNativeKernelsKeepsEveryInnerTensorBlocked) {
  Problem p(3, {{0, 1}, {1, 2}}, {2});
  p.native(0, {{0, 0}});
  p.native(1, {{0, 0}, {1, 0}});
  p.native(2, {{1, 0}, {2, 0}});  // node 2 is a graph output: stays plain
  const kora::Plan plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.4 + 0.7, 1e-9);
  EXPECT_EQ(plan.gap, 0);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}}));
  std::vector<int> native = plan.native;
  std::sort(native.begin(), native.end());
  EXPECT_EQ(native, (std::vector<int>{0, 1, 2}));
}

TEST(LayoutProblem, AReaderThatNeedsPlainKeepsItsTensorPlain) {
  // Node 3 also reads node 1 and takes only plain tensors (cost 0.1).
  Problem p(4, {{0, 1}, {1, 2}, {1, 3}}, {2, 3});
  p.cost[3] = 0.1;
  p.native(0, {{0, 0}});
  p.native(1, {{0, 0}, {1, 0}});
  p.native(2, {{1, 0}});
  const kora::Plan plan = p.solve();
  // 0 native (0.7), 1 native reading 0 blocked, writing 1 plain (0.7), 2 plain (1), 3 (0.1).
  EXPECT_NEAR(plan.cost, 2.5, 1e-9);
  EXPECT_EQ(plan.blocked, (std::vector<std::pair<int, int>>{{0, 0}}));
}

TEST(LayoutProblem, ElementwiseKernelsPassTheLayoutThrough) {
  // 0 -> 1 -> 2 (elementwise, cost 0.1) -> 3 -> 4 (required).
  Problem p(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}, {4});
  p.cost[2] = 0.1;
  p.native(0, {{0, 0}});
  p.native(1, {{0, 0}, {1, 0}});
  p.native(3, {{2, 0}, {3, 0}});
  p.native(4, {{3, 0}});
  p.layouts.agnostic[2] = 1;
  kora::Plan plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.4 + 0.1 + 0.4 + 0.7, 1e-9);
  EXPECT_EQ(sorted(plan.blocked),
            (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 0}, {3, 0}}));
  // Not agnostic: nodes 1 and 2 stay plain, 1 and 3 pay a reorder each.
  p.layouts.agnostic[2] = 0;
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.7 + 0.1 + 0.7 + 0.7, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {3, 0}}));
}

TEST(LayoutProblem, KernelsWantingAnotherLayoutDoNotShareATensor) {
  Problem p(3, {{0, 1}, {1, 2}}, {2});
  p.native(0, {{0, 0}});
  p.native(1, {{0, 0}, {1, 0}});
  p.native(2, {{1, 1}});  // wants node 1 in layout 1
  const kora::Plan plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.7 + 1.0, 1e-9);
  EXPECT_EQ(plan.blocked, (std::vector<std::pair<int, int>>{{0, 0}}));
}

TEST(LayoutProblem, NativeWithEveryReorderIsChosenOnlyWhenCheaper) {
  // A lone kernel: its native implementation with reorders costs 0.8 < 1.
  Problem p(1, {}, {0});
  p.native(0, {{0, 0}});
  p.layouts.native[0].blocked_ms = 0.8;
  kora::Plan plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.8, 1e-9);
  EXPECT_EQ(plan.native, std::vector<int>{0});
  EXPECT_TRUE(plan.blocked.empty());
  p.layouts.native[0].blocked_ms = 1.2;
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 1.0, 1e-9);
  EXPECT_TRUE(plan.native.empty());
}

TEST(LayoutProblem, KernelsOnViewsTakeTheirViewedTensorsAllBlockedOrAllPlain) {
  // 0 -> 1 (generated on views, cost 0.1) -> 2 -> 3 (required).
  Problem p(4, {{0, 1}, {1, 2}, {2, 3}}, {3});
  p.cost[1] = 0.1;
  p.native(0, {{0, 0}});
  p.native(2, {{1, 0}, {2, 0}});
  p.native(3, {{2, 0}});
  p.layouts.views.resize(4);
  p.layouts.views[1] = {0, 1};
  kora::Plan plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.1 + 0.4 + 0.7, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 0}}));
  // Viewing only what it reads (what it writes is a [1, C, 1, 1] gate, say): node 0
  // blocked, node 1 plain, kernel 2 reorders it.
  p.layouts.views[1] = {0};
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.1 + 0.7 + 0.7, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {2, 0}}));
  // Nor between two layouts: node 1 given layout 1, which kernel 2 also takes.
  p.layouts.views[1] = {0, 1};
  p.layouts.native[2].layouts = {1, 0};
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 1.0 + 0.1 + 0.7 + 0.7, 1e-9);
}

TEST(LayoutProblem, Bfloat16ViewsAreTakenEachOnItsOwn) {
  // 0 (native, layout 0) -> 1 (generated, cost 0.1: views node 0, writes node 1 as
  // bfloat16 in its own order) -> 2 (a native bf16 matmul taking node 1 in layout 1)
  // -> 3 (required, plain only).
  Problem p(4, {{0, 1}, {1, 2}, {2, 3}}, {3});
  p.cost[1] = 0.1;
  p.native(0, {{0, 0}});
  p.native(2, {{1, 1}});
  p.layouts.views.resize(4);
  p.layouts.views[1] = {0};
  p.layouts.bfloat16_views.resize(4);
  p.layouts.bfloat16_views[1] = {1};
  kora::Plan plan = p.solve();
  // Node 1 in layout 1 though the kernel's other node is in layout 0.
  EXPECT_NEAR(plan.cost, 0.7 + 0.1 + 0.7 + 1.0, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}}));
  // Without the bfloat16 view node 1 stays plain.
  p.layouts.bfloat16_views[1].clear();
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.1 + 1.0 + 1.0, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}}));
  // Nor when another reader of node 1 takes it plain only.
  p.layouts.bfloat16_views[1] = {1};
  Problem q(4, {{0, 1}, {1, 2}, {2, 3}, {1, 3}}, {3});
  q.cost[1] = 0.1;
  q.native(0, {{0, 0}});
  q.native(2, {{1, 1}});
  q.layouts.views = p.layouts.views;
  q.layouts.bfloat16_views = p.layouts.bfloat16_views;
  plan = q.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.1 + 1.0 + 1.0, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}}));
}

TEST(LayoutProblem, NodeLayoutsGivenOverrideTheFirstNamed) {
  // Kernel 1 names node 0 in layout 1 first; kernel 0 writes it in layout 0.
  Problem p(3, {{0, 1}, {1, 2}}, {2});
  p.native(1, {{0, 1}, {1, 1}});
  p.native(0, {{0, 0}});
  p.native(2, {{1, 1}});
  kora::Plan plan = p.solve();  // node 0 in layout 1: only kernel 1 takes it
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{1, 1}}));
  p.layouts.layout_of = {0, 1, -1};
  plan = p.solve();
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{1, 1}}));
  p.layouts.native[1].layouts = {0, 1};  // kernel 1 can take node 0 in layout 0 as well
  plan = p.solve();
  EXPECT_NEAR(plan.cost, 0.7 + 0.4 + 0.7, 1e-9);
  EXPECT_EQ(sorted(plan.blocked), (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}}));
}

// The candidates of at most `max_size` primitives of a DAG, or none when there are more
// than 10 (the brute force's reach).
std::vector<Candidate> brute_force_sized(const KernelDag& dag, int max_size) {
  kora::CandidateOptions options;
  options.max_size = max_size;
  std::vector<Candidate> c = kora::enumerate_candidates(dag, options);
  if (c.size() > 10) c.clear();
  return c;
}

// solve_optimal's plan against the brute force's cost on random problem `i`.
kora::Plan expect_brute_force_cost(const KernelDag& dag, const std::vector<Candidate>& c,
                                   const std::vector<double>& cost, const LayoutProblem& layouts,
                                   int i) {
  const double expected = kora_test::layout_brute_force(dag, c, cost, layouts);
  EXPECT_TRUE(std::isfinite(expected));
  const kora::Plan plan = kora::solve_optimal(dag, c, cost, {}, &layouts);
  EXPECT_NEAR(plan.cost, expected, 1e-6) << "problem " << i << ", " << c.size() << " candidates";
  EXPECT_EQ(plan.gap, 0);
  return plan;
}

TEST(LayoutProblem, RandomProblemsMatchABruteForce) {
  std::mt19937 rng(2026);
  int checked = 0, with_blocked = 0;
  for (int i = 0; checked < 250 && i < 20000; ++i) {
    const kora_test::TestDag t = kora_test::random_dag(rng, 3 + i % 4);
    const std::vector<Candidate> c = brute_force_sized(t.dag, 2);
    if (c.empty()) continue;
    // io-shaped costs (much is dominated) or random ones (fused kernels may be cheaper)
    const std::vector<double> cost =
        i % 2 ? kora_test::io_costs(rng, t.dag, c) : kora_test::random_costs(rng, t, c);
    LayoutProblem layouts;
    layouts.native.resize(c.size());
    layouts.agnostic.assign(c.size(), 0);
    for (size_t k = 0; k < c.size(); ++k) {
      const double r = kora_test::uniform01(rng);
      if (r < 0.55) {
        NativeOption& o = layouts.native[k];
        o.blocked_ms = cost[k] + kora_test::uniform_int(rng, -3, 4);
        for (int u : c[k].inputs) {
          o.nodes.push_back(u);
          o.layouts.push_back(kora_test::uniform01(rng) < 0.9 ? 0 : 1);
          o.saved_ms.push_back(kora_test::uniform_int(rng, 4, 12));
        }
        for (int v : c[k].outputs) {
          o.nodes.push_back(v);
          o.layouts.push_back(kora_test::uniform01(rng) < 0.9 ? 0 : 1);
          o.saved_ms.push_back(0);
        }
      } else if (r < 0.7) {
        layouts.agnostic[k] = 1;
      } else if (r < 0.85) {  // on views: some of its nodes, all blocked or all plain
        layouts.views.resize(c.size());
        for (const auto* nodes : {&c[k].inputs, &c[k].outputs})
          for (int u : *nodes)
            if (kora_test::uniform01(rng) < 0.8) layouts.views[k].push_back(u);
      }
    }
    if (!layouts.views.empty()) layouts.views.resize(c.size());
    if (i % 3 == 0) {  // node layouts given: one of those its sides name
      layouts.layout_of.assign(t.dag.size(), -1);
      for (const NativeOption& o : layouts.native)
        for (size_t s = 0; s < o.nodes.size(); ++s)
          if (layouts.layout_of[o.nodes[s]] < 0 || kora_test::uniform01(rng) < 0.5)
            layouts.layout_of[o.nodes[s]] = o.layouts[s];
    }
    const kora::Plan plan = expect_brute_force_cost(t.dag, c, cost, layouts, i);
    if (HasFailure()) return;
    ++checked;
    with_blocked += !plan.blocked.empty();
  }
  EXPECT_EQ(checked, 250);
  EXPECT_GT(with_blocked, 10) << "blocked layouts hardly ever chosen";
  std::printf("[ info     ] %d problems, %d with blocked nodes\n", checked, with_blocked);
}

// Many kernels that take their nodes blocked all at once (agnostic, or on views; some nodes
// also each on its own, as bfloat16 views) beside native ones, io-shaped costs: a flexible
// kernel is dropped only for one at most as costly that allows all of its layout states
// (dominance.h), so the optimum stays the brute force's.
TEST(LayoutProblem, DominanceAmongAgnosticAndViewKernelsKeepsTheOptimum) {
  std::mt19937 rng(44);
  int checked = 0, with_blocked = 0;
  for (int i = 0; checked < 600 && i < 80000; ++i) {
    const kora_test::TestDag t = kora_test::random_dag(rng, 3 + i % 3);
    const std::vector<Candidate> c = brute_force_sized(t.dag, 3);
    if (c.empty()) continue;
    const std::vector<double> cost = kora_test::io_costs(rng, t.dag, c);
    LayoutProblem layouts;
    layouts.native.resize(c.size());
    layouts.agnostic.assign(c.size(), 0);
    layouts.views.resize(c.size());
    for (size_t k = 0; k < c.size(); ++k) {
      const double r = kora_test::uniform01(rng);
      if (r < 0.35) {
        NativeOption& o = layouts.native[k];
        o.blocked_ms = cost[k] + kora_test::uniform_int(rng, -2, 3);
        for (const auto* nodes : {&c[k].inputs, &c[k].outputs})
          for (int u : *nodes) {
            o.nodes.push_back(u);
            o.layouts.push_back(0);
            o.saved_ms.push_back(kora_test::uniform_int(rng, 2, 10));
          }
      } else if (r < 0.65) {
        layouts.agnostic[k] = 1;
      } else if (r < 0.9) {
        for (const auto* nodes : {&c[k].inputs, &c[k].outputs})
          for (int u : *nodes)
            if (kora_test::uniform01(rng) < 0.5) layouts.views[k].push_back(u);
      }
      // Nodes taken each on its own (bfloat16_views), never among the views.
      if (r >= 0.65)
        for (const auto* nodes : {&c[k].inputs, &c[k].outputs})
          for (int u : *nodes)
            if (kora_test::uniform01(rng) < 0.3 &&
                std::find(layouts.views[k].begin(), layouts.views[k].end(), u) ==
                    layouts.views[k].end()) {
              layouts.bfloat16_views.resize(c.size());
              layouts.bfloat16_views[k].push_back(u);
            }
    }
    const kora::Plan plan = expect_brute_force_cost(t.dag, c, cost, layouts, i);
    if (HasFailure()) return;
    ++checked;
    with_blocked += !plan.blocked.empty();
  }
  EXPECT_EQ(checked, 600);
  EXPECT_GT(with_blocked, 30);
}

}  // namespace
