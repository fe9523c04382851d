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
//   cost, the crossing tensors counted.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/fission.h"
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

}  // namespace
}  // namespace kora_test
