// PredictedCost (include/kora/cost.h, src/cost/predicted_cost.cc): measured kernels of a
// hand-built graph in; the predicted cost of kernels not measured checked against the
// ratio measured / bound worked out by hand, and the features it compares kernels by.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "candidates/hand_built_graphs.h"
#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/kernel_dag.h"

namespace kora {
namespace {

using kora_test::make_prim;
using kora_test::matmul_relu_graph;
using kora_test::relu_matmul_graph;
using kora_test::unary;

MachinePeaks peaks() {
  MachinePeaks p;
  p.gflops = 100, p.dram_gbps = 20, p.cache_gbps = 100, p.cache_bytes = 1 << 20;
  p.floor_ms = 0.001;
  return p;
}

PredictedCost predictor(double caution = 0) {
  return PredictedCost(std::make_unique<LowerBoundCost>(peaks()),
                       std::make_unique<LowerBoundCost>(peaks(), true), caution);
}

TEST(PredictedCost, WithNothingMeasuredAKernelCostsItsKindsTypicalCost) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  LowerBoundCost typical(peaks(), true);
  PredictedCost p = predictor(1);
  for (const Candidate& c : {make_candidate(dag, {0}), make_candidate(dag, {0, 1})})
    EXPECT_DOUBLE_EQ(p.cost_ms(g, dag, c), typical.cost_ms(g, dag, c));
  EXPECT_EQ(p.samples(), 0u);
}

TEST(PredictedCost, AMeasuredKernelsRatioCarriesToKernelsOfItsKind) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  LowerBoundCost bound(peaks());
  const Candidate mm = make_candidate(dag, {0}), fused = make_candidate(dag, {0, 1}),
                  relu = make_candidate(dag, {1});
  PredictedCost p = predictor();
  // The matmul alone measured at 3x its bound.
  p.learn(g, dag, mm, 3 * bound.cost_ms(g, dag, mm));
  EXPECT_EQ(p.samples(), 1u);
  // Itself: what it measured, but for the pull of the typical cost (within 2%).
  EXPECT_NEAR(p.cost_ms(g, dag, mm), 3 * bound.cost_ms(g, dag, mm),
              0.02 * 3 * bound.cost_ms(g, dag, mm));
  // Matmul with its relu (other ops, the same kind): the kind's ratio times its own bound,
  // drawn toward the kind's typical cost (a sample kPriorDistance away), the sample nearer.
  const double typical =
      LowerBoundCost(peaks(), true).cost_ms(g, dag, fused) / bound.cost_ms(g, dag, fused);
  ASSERT_GT(typical, 3.5);
  const double drawn = p.cost_ms(g, dag, fused) / bound.cost_ms(g, dag, fused);
  EXPECT_GT(drawn, 3);
  EXPECT_LT(std::log(drawn / 3), std::log(typical / drawn));
  // The relu alone (no elementwise kernel measured): its typical cost.
  EXPECT_DOUBLE_EQ(p.cost_ms(g, dag, relu), LowerBoundCost(peaks(), true).cost_ms(g, dag, relu));
  // A second sample of the fused kernel's own ops at 5x: the estimate leans toward it, and
  // stays between the two ratios.
  p.learn(g, dag, fused, 5 * bound.cost_ms(g, dag, fused));
  const double ratio = p.cost_ms(g, dag, fused) / bound.cost_ms(g, dag, fused);
  EXPECT_GT(ratio, 4);
  EXPECT_LT(ratio, 5);
  // A failed or empty measurement teaches nothing.
  p.learn(g, dag, relu, 0);
  EXPECT_EQ(p.samples(), 2u);
}

TEST(PredictedCost, PrologueAndEpilogueOpsAreToldApart) {
  const PrimGraph epilogue = matmul_relu_graph(), prologue = relu_matmul_graph();
  const KernelDag e = kernel_dag_of(epilogue), p = kernel_dag_of(prologue);
  PredictedCost predicted = predictor();
  const PredictedCost::Features after = predicted.features(epilogue, e, make_candidate(e, {0, 1}));
  const PredictedCost::Features before = predicted.features(prologue, p, make_candidate(p, {0, 1}));
  EXPECT_EQ(after.kind, "linear");
  EXPECT_EQ(before.kind, "linear");
  EXPECT_EQ(after.ops, "elementwise relu+linear matmul");
  EXPECT_EQ(before.ops, "elementwise relu > linear matmul");
  // A kernel with a prologue learns from kernels with the same prologue first.
  LowerBoundCost bound(peaks());
  predicted.learn(epilogue, e, make_candidate(e, {0, 1}),
                  2 * bound.cost_ms(epilogue, e, make_candidate(e, {0, 1})));
  predicted.learn(prologue, p, make_candidate(p, {0, 1}),
                  8 * bound.cost_ms(prologue, p, make_candidate(p, {0, 1})));
  EXPECT_GT(predicted.cost_ms(prologue, p, make_candidate(p, {0, 1})),
            predicted.cost_ms(epilogue, e, make_candidate(e, {0, 1})) * 1.5);
}

// A kernel learns from kernels the target implements alike (a library's call, generated
// code) before the nearest of another implementation; with none implemented alike
// measured, it costs its bound.
TEST(PredictedCost, KernelsImplementedAlikeComeFirst) {
  const PrimGraph epilogue = matmul_relu_graph(), prologue = relu_matmul_graph();
  const KernelDag e = kernel_dag_of(epilogue), p = kernel_dag_of(prologue);
  const Candidate mm = make_candidate(e, {0}), fused = make_candidate(e, {0, 1}),
                  relu_first = make_candidate(p, {0, 1});
  std::string fused_by;  // what implements the fused matmul + relu
  PredictedCost predicted(std::make_unique<LowerBoundCost>(peaks()),
                          std::make_unique<LowerBoundCost>(peaks(), true), 0,
                          [&](const PrimGraph& g, const KernelDag&, const Candidate& c) {
                            if (&g == &prologue) return std::string("generated");
                            return c.members.size() == 1 ? std::string("library") : fused_by;
                          });
  LowerBoundCost bound(peaks());
  predicted.learn(epilogue, e, mm, 2 * bound.cost_ms(epilogue, e, mm));
  predicted.learn(prologue, p, relu_first, 8 * bound.cost_ms(prologue, p, relu_first));
  auto ratio = [&] {
    return predicted.cost_ms(epilogue, e, fused) / bound.cost_ms(epilogue, e, fused);
  };
  // By size and ops alone the relu-first kernel is the nearest (same bytes and members).
  fused_by = "";
  EXPECT_GT(ratio(), 5);
  // A library's matmul + relu: as the library's matmul, not as the generated kernel.
  fused_by = "library";
  EXPECT_EQ(predicted.features(epilogue, e, fused).implemented_by, "library");
  EXPECT_LT(ratio(), 3);
  fused_by = "generated";
  EXPECT_GT(ratio(), 5);
  // An implementation none of whose kernels is measured yet: its bound, not another's ratio.
  fused_by = "another library";
  EXPECT_DOUBLE_EQ(ratio(), 1);
}

// Samples far from a kernel (a matmul of 4 x 4 for one of 256 x 256) count less than the
// kind's typical cost: the estimate stays near the typical ratio, not the far sample's.
TEST(PredictedCost, FarSamplesCountLessThanTheTypicalCost) {
  const PrimGraph tiny = matmul_relu_graph(4), large = matmul_relu_graph(256);
  const KernelDag t = kernel_dag_of(tiny), l = kernel_dag_of(large);
  const Candidate tiny_mm = make_candidate(t, {0}), large_mm = make_candidate(l, {0});
  LowerBoundCost bound(peaks()), typical(peaks(), true);
  PredictedCost p = predictor();
  p.learn(tiny, t, tiny_mm, 50 * bound.cost_ms(tiny, t, tiny_mm));
  const double typical_ratio =
      typical.cost_ms(large, l, large_mm) / bound.cost_ms(large, l, large_mm);
  const double ratio = p.cost_ms(large, l, large_mm) / bound.cost_ms(large, l, large_mm);
  EXPECT_GT(ratio, typical_ratio);
  EXPECT_LT(ratio, 1.5 * typical_ratio);  // the sample's: 50
}

}  // namespace
}  // namespace kora
