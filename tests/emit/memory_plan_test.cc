// plan_memory (src/emit/memory_plan.h): random instances checked by brute force (buffers
// live at the same time never share bytes, offsets aligned, arena = highest end, arena >=
// peak live bytes), chains, zero-byte buffers, bad input, and the time for 5000 buffers.
#include "emit/memory_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "kora/error.h"

namespace kora {
namespace {

int64_t aligned(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Every property a plan must have, checked pair by pair.
void expect_valid(const std::vector<BufferLifetime>& bufs, const MemoryPlan& plan,
                  int64_t alignment) {
  ASSERT_EQ(plan.offsets.size(), bufs.size());
  int64_t end = 0, total = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_GE(plan.offsets[i], 0) << "buffer " << i;
    EXPECT_EQ(plan.offsets[i] % alignment, 0) << "buffer " << i;
    if (bufs[i].bytes == 0) {
      EXPECT_EQ(plan.offsets[i], 0) << "zero-byte buffer " << i;
    }
    end = std::max(end, plan.offsets[i] + aligned(bufs[i].bytes, alignment));
    total += aligned(bufs[i].bytes, alignment);
  }
  EXPECT_EQ(plan.arena_bytes, end);
  EXPECT_EQ(plan.total_bytes, total);
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      const bool live_together = bufs[i].first <= bufs[j].last && bufs[j].first <= bufs[i].last;
      const bool share_bytes = plan.offsets[i] < plan.offsets[j] + bufs[j].bytes &&
                               plan.offsets[j] < plan.offsets[i] + bufs[i].bytes;
      if (bufs[i].bytes > 0 && bufs[j].bytes > 0 && live_together) {
        EXPECT_FALSE(share_bytes) << "buffers " << i << " [" << bufs[i].first << ", "
                                  << bufs[i].last << "] and " << j << " [" << bufs[j].first << ", "
                                  << bufs[j].last << "] overlap";
      }
    }
  // Peak live bytes by brute force over every step.
  int64_t peak = 0;
  for (const BufferLifetime& b : bufs)
    for (int s = b.first; s <= b.last; ++s) {
      int64_t live = 0;
      for (const BufferLifetime& o : bufs)
        if (o.first <= s && s <= o.last) live += aligned(o.bytes, alignment);
      peak = std::max(peak, live);
    }
  EXPECT_EQ(plan.peak_live_bytes, peak);
  EXPECT_GE(plan.arena_bytes, plan.peak_live_bytes);
  EXPECT_LE(plan.arena_bytes, plan.total_bytes);
}

std::vector<BufferLifetime> random_buffers(size_t n, int steps, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<BufferLifetime> bufs(n);
  for (BufferLifetime& b : bufs) {
    // Mostly small, sometimes large, sometimes empty or odd-sized.
    const int pick = static_cast<int>(rng() % 10);
    b.bytes = pick == 0  ? 0
              : pick < 7 ? static_cast<int64_t>(rng() % 4096)
                         : static_cast<int64_t>(rng() % (1 << 20));
    b.first = static_cast<int>(rng() % static_cast<uint32_t>(steps));
    b.last = b.first + static_cast<int>(rng() % (rng() % 4 == 0 ? steps : 6));
  }
  return bufs;
}

TEST(MemoryPlan, RandomInstancesAreValid) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const size_t n = 20 + seed * 25;
    const auto bufs = random_buffers(n, static_cast<int>(n / 2), seed);
    for (int64_t alignment : {int64_t{1}, int64_t{64}, int64_t{256}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", alignment " + std::to_string(alignment));
      const MemoryPlan plan = plan_memory(bufs, alignment);
      expect_valid(bufs, plan, alignment);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(MemoryPlan, ReusesMemory) {
  // Short lifetimes over many steps: the plan must be far below no reuse at all.
  const auto bufs = random_buffers(300, 300, 7);
  const MemoryPlan plan = plan_memory(bufs);
  expect_valid(bufs, plan, 64);
  EXPECT_LT(plan.arena_bytes, plan.total_bytes / 3);
  EXPECT_LE(plan.arena_bytes, 2 * plan.peak_live_bytes);
}

TEST(MemoryPlan, ChainUsesTwoBuffers) {
  // Step i reads buffer i and writes buffer i + 1: each dies as the next is born.
  std::vector<BufferLifetime> bufs;
  for (int i = 0; i < 50; ++i) bufs.push_back({1000, i, i + 1});
  const MemoryPlan plan = plan_memory(bufs);
  expect_valid(bufs, plan, 64);
  EXPECT_EQ(plan.arena_bytes, 2 * 1024);
  EXPECT_EQ(plan.peak_live_bytes, 2 * 1024);
  EXPECT_EQ(plan.total_bytes, 50 * 1024);
}

TEST(MemoryPlan, ChainOfMixedSizes) {
  std::vector<BufferLifetime> bufs;
  int64_t largest_pair = 0;
  for (int i = 0; i < 40; ++i) bufs.push_back({64 * (1 + (i * 7) % 5), i, i + 1});
  for (int i = 0; i + 1 < 40; ++i)
    largest_pair = std::max(largest_pair, bufs[i].bytes + bufs[i + 1].bytes);
  const MemoryPlan plan = plan_memory(bufs);
  expect_valid(bufs, plan, 64);
  EXPECT_EQ(plan.peak_live_bytes, largest_pair);
  EXPECT_LE(plan.arena_bytes, 2 * 5 * 64);  // at most two of the largest
}

TEST(MemoryPlan, DisjointLifetimesShareOffsetZero) {
  const std::vector<BufferLifetime> bufs = {{100, 0, 0}, {200, 1, 1}, {300, 2, 3}};
  const MemoryPlan plan = plan_memory(bufs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.arena_bytes, 320);
}

TEST(MemoryPlan, BuffersLiveInSomeOrderNeverShare) {
  // Disjoint steps, but buffers 0 and 2 may be live at once where kernels overlap; 1 is
  // ordered after both.
  const std::vector<BufferLifetime> bufs = {{100, 0, 0}, {200, 1, 1}, {300, 2, 3}};
  auto also_live = [](size_t a, size_t b) { return std::min(a, b) == 0 && std::max(a, b) == 2; };
  const MemoryPlan plan = plan_memory(bufs, 64, also_live);
  EXPECT_EQ(plan.offsets[1], 0);
  EXPECT_TRUE(plan.offsets[0] >= 320 || plan.offsets[2] >= 128)
      << plan.offsets[0] << " " << plan.offsets[2];
  EXPECT_EQ(plan.arena_bytes, 320 + 128);
}

TEST(MemoryPlan, ZeroByteBuffersTakeNoSpace) {
  const std::vector<BufferLifetime> bufs = {{0, 0, 9}, {64, 0, 9}, {0, 3, 4}, {64, 2, 5}};
  const MemoryPlan plan = plan_memory(bufs);
  expect_valid(bufs, plan, 64);
  EXPECT_EQ(plan.offsets[0], 0);
  EXPECT_EQ(plan.offsets[2], 0);
  EXPECT_EQ(plan.arena_bytes, 128);
  EXPECT_EQ(plan_memory({}).arena_bytes, 0);
}

TEST(MemoryPlan, FillsGaps) {
  // A long-lived buffer at the top, two short ones below it, then one that fits in the
  // gap the first short one leaves once dead.
  const std::vector<BufferLifetime> bufs = {
      {1024, 0, 10}, {512, 0, 2}, {512, 0, 10}, {256, 4, 6}, {256, 5, 8}};
  const MemoryPlan plan = plan_memory(bufs);
  expect_valid(bufs, plan, 64);
  EXPECT_EQ(plan.arena_bytes, 2048);
}

TEST(MemoryPlan, RejectsBadInput) {
  EXPECT_THROW(plan_memory({{-1, 0, 0}}), Error);
  EXPECT_THROW(plan_memory({{8, 3, 2}}), Error);
  EXPECT_THROW(plan_memory({{8, 0, 0}}, 0), Error);
}

TEST(MemoryPlan, FiveThousandBuffersInWellUnderASecond) {
  std::vector<BufferLifetime> bufs = random_buffers(5000, 2500, 3);
  // Plus a worst case for the scan: 1000 buffers all live at once.
  for (int i = 0; i < 1000; ++i) bufs.push_back({4096, 0, 2500});
  const auto start = std::chrono::steady_clock::now();
  const MemoryPlan plan = plan_memory(bufs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5);
  EXPECT_GE(plan.arena_bytes, plan.peak_live_bytes);
  // Spot check against everything live at the end.
  for (size_t i = 5000; i < bufs.size(); ++i)
    for (size_t j = 0; j < bufs.size(); ++j)
      if (j != i && bufs[j].bytes > 0) {
        ASSERT_TRUE(plan.offsets[i] + 4096 <= plan.offsets[j] ||
                    plan.offsets[j] + bufs[j].bytes <= plan.offsets[i])
            << i << " " << j;
      }
}

}  // namespace
}  // namespace kora
