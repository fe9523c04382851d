// The candidate budget of a segment (CandidateOptions::max_per_segment, applied by
// segment_candidates): a wide fan-out and fan-in (four branches of x concatenated, as in an
// Inception module) enumerated within the budget by a smaller kernel size bound, which the
// stats report; without a budget, every candidate; the orchestration still covers the
// graph and says how many segments were over budget.
#include <gtest/gtest.h>

#include "kora/cost.h"
#include "kora/fission.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"
#include "orchestrate/branches.h"

namespace kora_test {
namespace {

using namespace kora;

TEST(CandidateBudget, AWideSegmentIsEnumeratedWithSmallerKernelsWithinTheBudget) {
  const PrimGraph g = four_branches(3);
  const KernelDag dag = kernel_dag_of(g);
  const Segment all{0, dag.size(), 0};
  CandidateOptions unlimited;
  unlimited.max_per_segment = 0;
  const SegmentCandidates full = segment_candidates(g, dag, all, unlimited);
  EXPECT_FALSE(full.stats.over_budget);
  EXPECT_EQ(full.stats.max_size, unlimited.max_size);
  const int64_t n = static_cast<int64_t>(full.candidates.size());
  ASSERT_GT(n, 200);

  CandidateOptions budget;
  budget.max_per_segment = n / 4;
  const SegmentCandidates within = segment_candidates(g, dag, all, budget);
  EXPECT_TRUE(within.stats.over_budget);
  EXPECT_LT(within.stats.max_size, budget.max_size);
  EXPECT_LE(static_cast<int64_t>(within.candidates.size()), budget.max_per_segment);
  for (const Candidate& c : within.candidates)
    EXPECT_LE(static_cast<int>(c.members.size()), within.stats.max_size);

  // A segment within the budget is enumerated as before.
  budget.max_per_segment = n;
  EXPECT_EQ(segment_candidates(g, dag, all, budget).candidates.size(), full.candidates.size());

  // The orchestration says so, and its plan still computes every primitive.
  RooflineCost costs(device_params("cpu"));
  OrchestrationOptions o;
  o.candidates.max_per_segment = n / 4;
  o.partition.max_size = dag.size();
  const OrchestrationResult plan = orchestrate(g, costs, o);
  EXPECT_EQ(plan.segments_over_budget, 1);
  EXPECT_EQ(plan.budget_max_size, within.stats.max_size);
  std::vector<bool> computed(g.prims.size(), false);
  for (const ChosenKernel& k : plan.kernels)
    for (int p : k.prims) computed[static_cast<size_t>(p)] = true;
  EXPECT_EQ(std::count(computed.begin(), computed.end(), false), 0);
}

}  // namespace
}  // namespace kora_test
