// Segments cut again when the solver does not prove them in time
// (PartitionOptions::split_after_seconds, src/orchestrate/orchestration.cc), and
// partition_range, which cuts them: a range is cut as partition_dag cuts the whole DAG,
// its pieces cover it in order within the bounds. A one-segment graph whose solve gets
// no time at all is cut down to segments below twice the minimum size, each then solved
// with the full limit (split_after_seconds < 0 forces what a slow solve does): the plan is proven
// optimal for that finer partition, computes every primitive, and costs at least the whole
// segment's optimum; without the split it is the whole segment's optimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"
#include "kora/partition.h"
#include "orchestrate/branches.h"
#include "orchestrate/random_dag.h"

namespace kora_test {
namespace {

using namespace kora;

TEST(SegmentSplit, ARangeIsCutAsTheWholeDagIsAndItsPiecesCoverIt) {
  std::mt19937 rng(23);
  for (int t = 0; t < 100; ++t) {
    const KernelDag dag = kora_test::dense_random_dag(rng, 10 + t % 50);
    PartitionOptions options;
    options.min_size = 2 + static_cast<int>(rng() % 4);
    options.max_size = options.min_size + static_cast<int>(rng() % 8);
    const std::vector<Segment> whole = partition_dag(dag, options);
    const std::vector<Segment> same = partition_range(dag, 0, dag.size(), options);
    ASSERT_EQ(whole.size(), same.size());
    for (size_t s = 0; s < whole.size(); ++s) {
      EXPECT_EQ(whole[s].begin, same[s].begin);
      EXPECT_EQ(whole[s].end, same[s].end);
      EXPECT_EQ(whole[s].live_in, same[s].live_in);
    }
    const int begin = static_cast<int>(rng() % static_cast<unsigned>(dag.size()));
    const int end = begin + 1 + static_cast<int>(rng() % static_cast<unsigned>(dag.size() - begin));
    const std::vector<Segment> pieces = partition_range(dag, begin, end, options);
    ASSERT_FALSE(pieces.empty());
    EXPECT_EQ(pieces.front().begin, begin);
    EXPECT_EQ(pieces.back().end, end);
    for (size_t s = 0; s < pieces.size(); ++s) {
      EXPECT_LE(pieces[s].end - pieces[s].begin, options.max_size);
      if (s > 0) {
        EXPECT_EQ(pieces[s].begin, pieces[s - 1].end);
      }
    }
  }
  KernelDag dag;
  dag.add_node(PrimKind::kElementwise, true);
  EXPECT_THROW(partition_range(dag, 0, 2, {}), kora::Error);
}

TEST(SegmentSplit, ASegmentNotProvenInTimeIsCutAndTheFinerPartitionIsProven) {
  const PrimGraph g = four_branches(8);
  const KernelDag dag = kernel_dag_of(g);
  ASSERT_GE(dag.size(), 32);
  RooflineCost costs(device_params("cpu"));
  OrchestrationOptions o;
  o.partition.min_size = 4;
  o.partition.max_size = dag.size();
  o.partition.split_after_seconds = 0;  // never split: one segment, its optimum
  const OrchestrationResult whole = orchestrate(g, costs, o);
  ASSERT_TRUE(whole.proven_optimal);
  EXPECT_EQ(whole.segments, 1);
  EXPECT_EQ(whole.segments_split, 0);

  // As if no segment of 8 or more were proven in time (CBC may prove a small problem at
  // its root node within any time limit, so a tiny one would not force it).
  o.partition.split_after_seconds = -1;
  const OrchestrationResult split = orchestrate(g, costs, o);
  EXPECT_GT(split.segments_split, 0);
  EXPECT_GT(split.segments, 1);
  EXPECT_TRUE(split.proven_optimal);
  EXPECT_GE(split.total_cost_ms, whole.total_cost_ms - 1e-9);
  std::vector<bool> computed(g.prims.size(), false);
  for (const ChosenKernel& k : split.kernels)
    for (int p : k.prims) computed[static_cast<size_t>(p)] = true;
  EXPECT_EQ(std::count(computed.begin(), computed.end(), false), 0);
  int largest = 0;
  for (const ChosenKernel& k : split.kernels)
    largest = std::max(largest, static_cast<int>(k.prims.size()));
  EXPECT_LT(largest, 2 * o.partition.min_size);
}

}  // namespace
}  // namespace kora_test
