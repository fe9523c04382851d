// SpeedProbe (src/cpu/speed_probe.h): a reading's ratio to the fastest seen, which it
// updates, and the threshold that calls it slowed; the real reference loop runs and takes
// well under a millisecond's order of magnitude per call on any machine kora runs on.
#include "cpu/speed_probe.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace kora;

TEST(SpeedProbe, RatioToTheFastestSeenSoFar) {
  std::vector<double> readings = {1.0, 1.1, 2.0, 0.8, 1.0, 0.0, 0.9};
  size_t next = 0;
  SpeedProbe probe([&] { return readings.at(next++); });
  EXPECT_DOUBLE_EQ(probe.sample(), 1.0);  // the first reading is the fastest
  EXPECT_DOUBLE_EQ(probe.sample(), 1.1);
  EXPECT_FALSE(probe.slowed(1.1));  // within the probe's own spread
  EXPECT_DOUBLE_EQ(probe.sample(), 2.0);
  EXPECT_TRUE(probe.slowed(2.0));
  EXPECT_DOUBLE_EQ(probe.sample(), 1.0);  // a faster reading: the new fastest
  EXPECT_DOUBLE_EQ(probe.fastest_ms(), 0.8);
  EXPECT_DOUBLE_EQ(probe.sample(), 1.25);  // the old fastest is slowed now
  EXPECT_TRUE(probe.slowed(1.25));
  EXPECT_DOUBLE_EQ(probe.sample(), 1.0);  // an unusable reading says nothing
  EXPECT_DOUBLE_EQ(probe.fastest_ms(), 0.8);
  EXPECT_NEAR(probe.sample(), 0.9 / 0.8, 1e-12);
}

TEST(SpeedProbe, TheReferenceLoopRuns) {
  SpeedProbe probe;  // the real loop
  for (int i = 0; i < 5; ++i) EXPECT_GE(probe.sample(), 1.0);
  EXPECT_GT(probe.fastest_ms(), 0.0);
  EXPECT_LT(probe.fastest_ms(), 50.0);  // 4 MFLOP: a hang or a fault, not noise, above this
}

}  // namespace
