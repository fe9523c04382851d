// The whole-graph layout pass: layouts through views and across segment cuts
// (src/orchestrate/whole_graph_layouts.cc, layout_problem.cc). On a chain of activations whose
// kernels a hand-written cost model gives either a native implementation (0.4 ms on blocked
// sides, 1.0 ms with both reordered), generated code on layout views or code that runs on any
// layout (1.0 ms), orchestrate():
// - stores blocked a tensor that only kernels on views (or agnostic ones) read and
//   write, in the layout of a native neighbour, so that a run of such kernels between two
//   native ones keeps its tensors blocked (the costs worked out by hand), one segment
//   or several;
// - with the chain cut into segments of at most three primitives, stores the tensors
//   crossing the cuts as the one-segment solve does: the same layouts, native kernels and
//   cost, the crossing tensors counted;
// - given a plan whose pool kernel writes [N, C, H, W, 1, 1] for the next kernel to
//   reshape (no views: that rank cannot be stored blocked), moves the reshape into the
//   pool, so that the pool takes views and both convolutions around it run native.
#include "orchestrate/whole_graph_layouts.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/fission.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"

namespace kora_test {
namespace {

using namespace kora;

// x [1, 4, 8, 8] through one activation per role ('N' native, 'V' views, 'A' agnostic:
// computes on any layout as it is); node i writes
// "t<i>#0" (fission's name), the last one the output.
PrimGraph chain(const std::string& roles) {
  ModelBuilder m;
  m.input("x", {1, 4, 8, 8});
  const char* ops[] = {"Relu", "Sigmoid", "Tanh", "Abs"};
  std::string in = "x";
  for (size_t i = 0; i < roles.size(); ++i) {
    const std::string out = "t" + std::to_string(i);
    m.node(ops[i % 4], {in}, {out}, {}, out);
    in = out;
  }
  m.output(in);
  return fission(import_model(m));
}

class NativeOrViews : public CostModel {
 public:
  explicit NativeOrViews(std::string roles) : roles_(std::move(roles)) {}
  double cost_ms(const PrimGraph&, const KernelDag&, const Candidate& c) override {
    return c.members.size() == 1 ? 1.0 : 100.0;  // no fusion pays
  }
  LayoutCost layout_cost(const PrimGraph& graph, const KernelDag& dag,
                         const Candidate& c) override {
    LayoutCost l;
    if (c.members.size() != 1) return l;
    std::vector<std::string> sides = kernel_reads(graph, dag, c);
    for (const std::string& t : kernel_writes(graph, dag, c)) sides.push_back(t);
    if (roles_.at(static_cast<size_t>(dag.prim[c.members[0]])) == 'N') {
      l.blocked_ms = 1.0;
      l.native_ms = 0.4;
      for (const std::string& t : sides) l.sides[t] = "acdb";
    } else if (roles_.at(static_cast<size_t>(dag.prim[c.members[0]])) == 'A') {
      l.agnostic = true;
    } else {
      l.views = sides;
    }
    return l;
  }
  std::string describe() const override { return "native or views"; }

 private:
  std::string roles_;
};

// The cost with every tensor but the output blocked: a native kernel saves 0.3 ms per
// blocked side (of 0.6 ms of reorders over two sides), a view kernel costs 1.0 ms.
double all_blocked_ms(const std::string& roles) {
  double ms = 0;
  for (size_t i = 0; i < roles.size(); ++i) {
    const int blocked_sides = (i > 0) + (i + 1 < roles.size());
    ms += roles[i] == 'N' ? 1.0 - 0.3 * blocked_sides : 1.0;  // 'V', 'A': 1.0
  }
  return ms;
}

TEST(LayoutsAcrossViews, TensorsOnlyViewOrAgnosticKernelsTouchTakeANativeNeighboursLayout) {
  const std::string roles = "NVVN";  // t1 is written and read by views only
  NativeOrViews costs(roles);
  const OrchestrationResult r = orchestrate(chain(roles), costs, OrchestrationOptions{});
  EXPECT_NEAR(r.total_cost_ms, all_blocked_ms(roles), 1e-9);  // 0.7 + 1 + 1 + 0.7
  const std::map<std::string, std::string> want{
      {"t0#0", "acdb"}, {"t1#0", "acdb"}, {"t2#0", "acdb"}};
  EXPECT_EQ(r.layouts, want);
  NativeOrViews agnostic("NAAN");  // the same through two agnostic kernels
  const OrchestrationResult a = orchestrate(chain("NAAN"), agnostic, OrchestrationOptions{});
  EXPECT_NEAR(a.total_cost_ms, all_blocked_ms("NAAN"), 1e-9);
  EXPECT_EQ(a.layouts, want);
  // A view kernel reading the graph's input keeps its views plain: so does what it writes.
  NativeOrViews first_viewed("VVN");
  const OrchestrationResult plain = orchestrate(chain("VVN"), first_viewed, {});
  EXPECT_NEAR(plain.total_cost_ms, 3.0, 1e-9);
  EXPECT_TRUE(plain.layouts.empty());
}

TEST(LayoutsAcrossCuts, CrossingTensorsAreStoredAsTheWholeGraphSolvedAtOnceStoresThem) {
  const std::string roles = "NNVNNVVNNNVN";
  const PrimGraph g = chain(roles);
  NativeOrViews costs(roles);
  const OrchestrationResult whole = orchestrate(g, costs, OrchestrationOptions{});
  ASSERT_EQ(whole.segments, 1);
  EXPECT_NEAR(whole.total_cost_ms, all_blocked_ms(roles), 1e-9);
  OrchestrationOptions cut;
  cut.partition.min_size = 2;
  cut.partition.max_size = 3;
  const OrchestrationResult pieces = orchestrate(g, costs, cut);
  ASSERT_GE(pieces.segments, 4);
  EXPECT_TRUE(pieces.proven_optimal);
  EXPECT_NEAR(pieces.total_cost_ms, whole.total_cost_ms, 1e-9);
  EXPECT_EQ(pieces.layouts, whole.layouts);
  EXPECT_EQ(pieces.layouts.size(), roles.size() - 1);
  ASSERT_EQ(pieces.kernels.size(), whole.kernels.size());
  for (size_t k = 0; k < whole.kernels.size(); ++k) {
    EXPECT_EQ(pieces.kernels[k].prims, whole.kernels[k].prims);
    EXPECT_EQ(pieces.kernels[k].native, whole.kernels[k].native) << "kernel " << k;
  }
  // One crossing tensor per cut, each blocked; the segments alone paid 0.3 ms or more
  // for each (a native side reordered, or a run of views kept plain).
  EXPECT_EQ(pieces.cut_tensors_blocked, pieces.segments - 1);
  EXPECT_GE(pieces.whole_graph_layouts_saved_ms,
            0.3 * static_cast<double>(pieces.segments - 1) - 1e-9);
}

// r0 = relu(x) [1, 4, 8, 8]; a 3x3 max pool of it as a window W, a max M [.., 1, 1] and a
// reshape R; r1 = relu(R), the output. Prims 0..4 in that order.
PrimGraph relu_pool_relu() {
  PrimGraph g;
  g.name = "pool";
  const Shape s = {1, 4, 8, 8};
  g.values["x"] = {DType::kFloat32, s};
  g.inputs = {"x"};
  auto add = [&](const std::string& name, PrimAttrs attrs, const std::string& in,
                 const Shape& shape) {
    Primitive p;
    p.name = p.origin = name;
    p.attrs = std::move(attrs);
    p.inputs = {in};
    p.outputs = {name};
    g.values[name] = {DType::kFloat32, shape};
    g.prims.push_back(p);
  };
  const ElementwiseAttrs relu{ScalarOp::kRelu, {Operand{0, 0}}};
  layout::Window w;
  w.strides = {1, 1};
  w.dilations = {1, 1};
  w.pads_begin = {1, 1};
  w.fill = -1e30;
  add("r0", relu, "x", s);
  add("W", LayoutAttrs{w}, "r0", {1, 4, 8, 8, 3, 3});
  add("M", ReduceAttrs{ReduceOp::kMax, {4, 5}}, "W", {1, 4, 8, 8, 1, 1});
  add("R", LayoutAttrs{layout::Reshape{}}, "M", s);
  add("r1", relu, "R", s);
  g.outputs = {"r1"};
  return g;
}

// The relus are native (0.4 ms on blocked sides, 1.0 reordered); the pool costs 1.0 ms as
// {W, M} or {W, M, R} (a hair more: the segments chose the former), and takes views only
// where every side is [1, 4, 8, 8]; R costs 1.0 ms alone or with r1 (no native option:
// its input's rank cannot be blocked). Anything else: 100 ms.
class PoolBetweenNatives : public CostModel {
 public:
  double cost_ms(const PrimGraph&, const KernelDag&, const Candidate& c) override {
    const std::vector<int>& m = c.members;
    if (m == std::vector<int>{1, 2, 3}) return 1.0 + 1e-6;
    if (m.size() == 1 && (m[0] == 0 || m[0] == 3 || m[0] == 4)) return 1.0;
    if (m == std::vector<int>{1, 2} || m == std::vector<int>{3, 4}) return 1.0;
    return 100.0;
  }
  LayoutCost layout_cost(const PrimGraph& graph, const KernelDag& dag,
                         const Candidate& c) override {
    LayoutCost l;
    std::vector<std::string> sides = kernel_reads(graph, dag, c);
    for (const std::string& t : kernel_writes(graph, dag, c)) sides.push_back(t);
    if (c.members.size() == 1 && (c.members[0] == 0 || c.members[0] == 4)) {
      l.blocked_ms = 1.0;
      l.native_ms = 0.4;
      for (const std::string& t : sides) l.sides[t] = "acdb";
    } else if (c.members.front() == 1) {
      for (const std::string& t : sides)
        if (graph.value(t).shape.size() != 4) return l;
      l.views = sides;
      l.views_channels_last = true;
    }
    return l;
  }
  std::string describe() const override { return "pool between natives"; }
};

TEST(LayoutsAcrossCuts, AReshapeOfUnitDimsMovesIntoThePoolSoThatItsSidesAreBlocked) {
  const PrimGraph g = relu_pool_relu();
  const KernelDag dag = kernel_dag_of(g);
  PoolBetweenNatives costs;
  // The segments' plan: r0 | {W, M} | {R, r1}, everything plain (3 ms).
  OrchestrationResult r;
  r.strategy = "optimal";
  r.layouts_decided = true;
  for (const std::vector<int>& members : {std::vector<int>{0}, {1, 2}, {3, 4}}) {
    const Candidate c = make_candidate(dag, members);
    ChosenKernel k;
    k.prims = members;
    k.outputs = c.outputs;
    k.cost_ms = costs.cost_ms(g, dag, c);
    k.segment = static_cast<int>(r.kernels.size());
    r.kernels.push_back(k);
    r.total_cost_ms += k.cost_ms;
  }
  const WholeGraphLayouts pass = whole_graph_layouts(g, dag, costs, SolveOptions{}, r);
  ASSERT_TRUE(pass.applied);
  EXPECT_EQ(pass.reshapes_moved, 2);
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.kernels[1].prims, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(r.kernels[2].prims, (std::vector<int>{4}));
  EXPECT_TRUE(r.kernels[0].native);
  EXPECT_TRUE(r.kernels[2].native);
  // 0.7 + (1.0 + 1e-6) + 0.7: r0's output and the pool's blocked, channels last.
  EXPECT_NEAR(r.total_cost_ms, 2.4 + 1e-6, 1e-9);
  const std::map<std::string, std::string> want{{"r0", "acdb"}, {"R", "acdb"}};
  EXPECT_EQ(r.layouts, want);
}

}  // namespace
}  // namespace kora_test
