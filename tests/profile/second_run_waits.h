// Two `kora profile` runs on one database (the CPU's in tests/profile/profile_test.cc, the
// CUDA target's in tests/cuda/artifact_test.cc): the test holds DB.lock as a first run
// would while `second` runs on a thread; after half a second the second must still be
// waiting; the test then stores what the first run would (`store`), releases the lock and
// joins; the second's progress must say it waited.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "base/file_lock.h"

namespace kora_test {

template <class Second, class Store>
void expect_second_run_waits(const std::string& db_path, const std::ostringstream& progress,
                             Second second, Store store) {
  auto first = std::make_unique<kora::FileLock>(db_path + ".lock");  // "the first run"
  std::atomic<bool> done{false};
  std::thread run([&] {
    second();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(done);  // waiting
  store();
  first.reset();
  run.join();
  EXPECT_NE(progress.str().find("another kora profile is measuring into " + db_path),
            std::string::npos)
      << progress.str();
}

}  // namespace kora_test
