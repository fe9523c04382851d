// runnable_tasks() (src/cpu/machine_load.h) against threads this test keeps busy: the
// caller counts, and so does each spinning thread.
#include "cpu/machine_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

TEST(MachineLoad, CountsTheCallerAndBusyThreads) {
  const int alone = kora::runnable_tasks();
  ASSERT_GE(alone, 1) << "/proc/stat procs_running unreadable";
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 3; ++i)
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  // Three spinners and the caller want CPUs; procs_running counts runnable tasks, queued
  // ones included, so at least four whatever the core count (other work only adds).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let them start
  int most = 0;
  for (int look = 0; look < 50; ++look) most = std::max(most, kora::runnable_tasks());
  stop = true;
  for (std::thread& t : spinners) t.join();
  EXPECT_GE(most, 4);
}
