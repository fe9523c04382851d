// Blocked layouts in the orchestration program (include/kora/orchestrate.h,
// LayoutProblem): on hand-built chains of kernels, each with a native implementation
// that saves the reorder of every side it reads or writes blocked, solve_optimal keeps a
// tensor blocked exactly where every kernel touching it can take it (natively, or as an
// elementwise kernel whose tensors all share the layout), and its cost is the sum worked
// out by hand for that choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/orchestrate.h"

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

}  // namespace
