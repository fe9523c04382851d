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

// On a GPU's streams: the request, slowed down while the BE work overlaps it, must still
// keep its target; no turns, however large the slowdown, and a request never waits.
TEST(ColocationScheduler, OnStreamsAdmitsByTheRequestsFinishBesideTheWork) {
  using Sharing = ColocationScheduler::Sharing;
  // target 10 ms, the plan 6 ms, the LC 1.5x slower beside BE work.
  ColocationScheduler s(10.0, 1.0, {3.0, 3.0}, 1.5, Sharing::kStreams);
  EXPECT_FALSE(s.time_slicing());
  const Clock::time_point now = Clock::now();
  s.lc_start(now);
  // Overlapping all of it: 6 x 1.5 = 9 <= 10, whatever the BE work's length.
  EXPECT_TRUE(s.admits(100.0, now));
  EXPECT_FALSE(s.admits(100.0, now + milliseconds(2)));  // 2 + 9 > 10
  // 2 ms of BE work: 2 ms overlapped (LC 1.33 ms of work done), then 4.67 alone: 2 + 6.67.
  EXPECT_TRUE(s.admits(2.0, now + milliseconds(2)));   // 2 + 6.67 = 8.67
  EXPECT_TRUE(s.admits(5.0, now + milliseconds(2)));   // 2 + 5 + (6 - 3.33) = 9.67
  EXPECT_FALSE(s.admits(8.0, now + milliseconds(2)));  // 2 + 8 + (6 - 5.33) = 10.67
  s.lc_finish();

  ColocationScheduler slow(10.0, 1.0, {3.0, 3.0}, 4.0, Sharing::kStreams);
  EXPECT_FALSE(slow.time_slicing());
  ASSERT_TRUE(slow.be_wait(5.0));  // BE work in flight
  std::atomic<bool> started{false};
  std::thread lc([&] {
    slow.lc_start(Clock::now());  // does not wait for it
    started = true;
  });
  lc.join();
  EXPECT_TRUE(started);
  EXPECT_FALSE(slow.admits(1.0, Clock::now() + milliseconds(5)));  // 5 + 1 + 6 - 0.25 > 10
  slow.be_done();
  slow.lc_finish();
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
