// The plan's steps as a DAG of memory dependences (src/runtime/step_dependencies.h): on a
// hand-made plan (a true dependence, independent branches, an arena range reused) and on
// random plans against brute force: every pair that conflicts is ordered through the
// listed steps, every listed step conflicts, none is implied by another, and the longest
// chain is the longest path.
#include "runtime/step_dependencies.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace {

using namespace kora;

ByteRange range(uint64_t begin, uint64_t end) { return ByteRange{begin, end}; }

TEST(StepDependencies, BranchesAreIndependentAndReusedMemoryWaits) {
  // 0 writes A; 1 and 2 read A and write B and C (branches); 3 reads B and C and writes D
  // over A's bytes (the arena reused once A is dead); 4 reads a weight only.
  const ByteRange a = range(0, 100), b = range(100, 200), c = range(200, 300);
  const ByteRange d = range(0, 50), weight = range(1000, 2000), out = range(300, 310);
  const std::vector<StepAccess> steps = {
      {{weight}, {a}}, {{a}, {b}}, {{a, weight}, {c}}, {{b, c}, {d}}, {{weight}, {out}}};
  const std::vector<std::vector<size_t>> after = step_dependencies(steps);
  const std::vector<std::vector<size_t>> want = {{}, {0}, {0}, {1, 2}, {}};
  EXPECT_EQ(after, want);  // 3 after 0 is implied by 1 and 2; reading a weight orders nothing
  EXPECT_EQ(longest_chain(after), 3u);
}

TEST(StepDependencies, EmptyRangesAndNoStepsOrderNothing) {
  EXPECT_TRUE(step_dependencies({}).empty());
  EXPECT_EQ(longest_chain({}), 0u);
  const std::vector<StepAccess> steps = {{{}, {range(5, 5)}}, {{range(0, 10)}, {range(5, 5)}}};
  EXPECT_EQ(step_dependencies(steps), (std::vector<std::vector<size_t>>{{}, {}}));
}

bool overlaps(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (std::max(x.begin, y.begin) < std::min(x.end, y.end)) return true;
  return false;
}

TEST(StepDependencies, MatchesBruteForceOnRandomPlans) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<StepAccess> steps(n);
    auto random_ranges = [&](int most) {
      std::vector<ByteRange> r(rng() % (most + 1));
      for (ByteRange& x : r) {
        x.begin = rng() % 400;
        x.end = x.begin + rng() % 40;
      }
      return r;
    };
    for (StepAccess& s : steps) {
      s.reads = random_ranges(3);
      s.writes = random_ranges(2);
    }
    const std::vector<std::vector<size_t>> after = step_dependencies(steps);
    ASSERT_EQ(after.size(), n);
    // Reachability through the listed steps, by search.
    std::function<bool(size_t, size_t)> reaches = [&](size_t j, size_t i) {
      for (size_t p : after[j])
        if (p == i || (p > i && reaches(p, i))) return true;
      return false;
    };
    std::vector<size_t> depth(n, 1);
    size_t longest = 0;
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < j; ++i) {
        const bool conflict = overlaps(steps[j].writes, steps[i].reads) ||
                              overlaps(steps[j].writes, steps[i].writes) ||
                              overlaps(steps[j].reads, steps[i].writes);
        if (!conflict) continue;
        EXPECT_TRUE(reaches(j, i)) << trial << ": " << j << " after " << i;
        depth[j] = std::max(depth[j], depth[i] + 1);  // over every conflicting pair
      }
      for (size_t k = 0; k < after[j].size(); ++k) {
        const size_t i = after[j][k];
        ASSERT_LT(i, j);
        if (k) {
          EXPECT_LT(after[j][k - 1], i);
        }
        EXPECT_TRUE(overlaps(steps[j].writes, steps[i].reads) ||
                    overlaps(steps[j].writes, steps[i].writes) ||
                    overlaps(steps[j].reads, steps[i].writes));
        for (size_t p : after[j]) {
          if (p != i) {
            EXPECT_FALSE(p > i && reaches(p, i)) << trial << ": " << j << ", " << i;
          }
        }
      }
      longest = std::max(longest, depth[j]);
    }
    EXPECT_EQ(longest_chain(after), longest);
  }
}

}  // namespace
