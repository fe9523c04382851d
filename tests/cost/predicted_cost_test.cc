// PredictedCost (include/kora/cost.h, src/cost/predicted_cost.cc): measured kernels of a
// hand-built graph in; the predicted cost of kernels not measured checked against the
// ratio measured / bound worked out by hand, and the features it compares kernels by.
#include <gtest/gtest.h>

#include <memory>

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
  // Itself: what it measured.
  EXPECT_NEAR(p.cost_ms(g, dag, mm), 3 * bound.cost_ms(g, dag, mm), 1e-12);
  // Matmul with its relu (other ops, the same kind): the kind's ratio times its own bound.
  EXPECT_NEAR(p.cost_ms(g, dag, fused), 3 * bound.cost_ms(g, dag, fused), 1e-12);
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

}  // namespace
}  // namespace kora
