// The co-location scheduler (src/colocate/scheduler.h): its admission rule at given
// times, and its waiting: a best-effort kernel held while a request leaves no slack, let go
// at the request's kernel boundaries and end, one best-effort kernel at a time, turns taken
// where the LC's slowdown beside BE work is 1.5 or more, and every wait released by stop().
#include "colocate/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using kora::ColocationScheduler;
using Clock = ColocationScheduler::Clock;
using std::chrono::milliseconds;

TEST(ColocationScheduler, AdmitsByTheRequestsPredictedFinish) {
  ColocationScheduler s(10.0, 1.0, {2.0, 2.0, 2.0});  // target 10 ms, the plan 6 ms
  const Clock::time_point now = Clock::now();
  EXPECT_TRUE(s.admits(100.0, now));  // no request in flight: anything
  s.lc_start(now);
  EXPECT_TRUE(s.admits(3.9, now));   // 0 + 6 + 3.9 <= 10
  EXPECT_FALSE(s.admits(4.1, now));  // 0 + 6 + 4.1 > 10
  s.lc_progress(2);                  // one kernel (2 ms) left
  EXPECT_TRUE(s.admits(7.9, now));
  EXPECT_FALSE(s.admits(8.1, now));
  EXPECT_FALSE(s.admits(0.0, now + milliseconds(9)));  // 9 ms gone + 2 left > 10
  s.lc_progress(3);                                    // every kernel done
  EXPECT_TRUE(s.admits(1.0, now + milliseconds(9)));
  s.lc_finish();
  EXPECT_TRUE(s.admits(100.0, now + milliseconds(50)));

  ColocationScheduler h(10.0, 1.5, {2.0, 2.0});  // headroom: 1.5 x 4 ms left = 6
  h.lc_start(now);
  EXPECT_TRUE(h.admits(3.9, now));
  EXPECT_FALSE(h.admits(4.1, now));
}

TEST(ColocationScheduler, HoldsBestEffortUntilTheRequestLeavesRoom) {
  ColocationScheduler s(10.0, 1.0, {4.0, 4.0});
  s.lc_start(Clock::now());
  std::atomic<int> admitted{0};
  std::thread be([&] {
    if (s.be_wait(5.0)) ++admitted;  // 8 ms left: no room for 5 until a kernel is done
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(admitted, 0);
  s.lc_finish();  // the request is done: the kernel starts
  be.join();
  EXPECT_EQ(admitted, 1);
  EXPECT_EQ(s.admitted_in_flight(), 0);

  // One best-effort kernel at a time: a second waits for be_done().
  std::thread second([&] {
    if (s.be_wait(1.0)) ++admitted;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(admitted, 1);
  s.be_done();
  second.join();
  EXPECT_EQ(admitted, 2);
  s.be_done();

  // Admitted during a request when it fits; counted.
  s.lc_start(Clock::now());
  s.lc_progress(1);  // 4 ms left
  EXPECT_TRUE(s.be_wait(2.0));
  EXPECT_EQ(s.admitted_in_flight(), 1);
  s.be_done();
  s.lc_finish();
}

TEST(ColocationScheduler, TimeSlicesWhereSideBySideLoses) {
  ColocationScheduler s(100.0, 1.0, {1.0}, 2.5);  // the LC 2.5x slower beside BE work
  EXPECT_TRUE(s.time_slicing());
  ASSERT_TRUE(s.be_wait(1.0));  // a BE kernel runs
  std::atomic<bool> started{false};
  std::thread lc([&] {
    s.lc_start(Clock::now());  // waits for the BE kernel's end
    started = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(started);
  s.be_done();
  lc.join();
  EXPECT_TRUE(started);
  EXPECT_FALSE(s.admits(0.0, Clock::now()));  // nothing beside the request, however small
  s.lc_finish();
  EXPECT_TRUE(s.admits(50.0, Clock::now()));
  EXPECT_FALSE(ColocationScheduler(100.0, 1.0, {1.0}, 1.4).time_slicing());
  EXPECT_GT(s.lc_waited_ms(), 20.0);  // the request waited ~50 ms for the BE kernel
}

TEST(ColocationScheduler, StopReleasesEveryWait) {
  ColocationScheduler s(1.0, 1.0, {5.0});
  s.lc_start(Clock::now());
  std::atomic<int> refused{0};
  std::thread a([&] { refused += !s.be_wait(0.5); });
  std::thread b([&] { refused += !s.be_wait(0.5); });
  std::this_thread::sleep_for(milliseconds(20));
  s.stop();
  a.join();
  b.join();
  EXPECT_EQ(refused, 2);
  EXPECT_FALSE(s.be_wait(0.0));  // and every later one
}

}  // namespace
