// Whether other work shares the machine while kora measures. With as many OpenMP threads
// as cores, one more runnable process stalls every barrier, and measured kernel times are
// then inflated many times over. Two views:
//   runnable_tasks()  the tasks runnable right now (/proc/stat procs_running), a glance;
//   LoadWatch         over a window: the CPU time the whole machine spent busy (/proc/stat)
//                     minus this process's own (/proc/self/stat), so work that came and
//                     went during a measurement is seen, not only what runs at a glance.
// kora profile watches every implementation it measures (a LoadWatch, and a glance before
// and after): one measured while others used
// the CPU is measured again once the machine is quiet, and stored as suspect when it never
// is (src/cpu/profile.cc); it also warns when more than a fifth of its glances saw other
// work (warn_if_busy).
#pragma once

#include <chrono>
#include <cstdint>

namespace kora {

// Tasks runnable right now, the caller's included; -1 where /proc/stat is unreadable.
int runnable_tasks();

class LoadWatch {
 public:
  LoadWatch() { restart(); }
  void restart();
  // Other processes' CPU time since restart(), in clock ticks (1/100 s on Linux); 0 where
  // /proc is unreadable.
  int64_t others_ticks() const;
  // Whether other processes used at least `share` of one core over the window, and at
  // least two ticks (the counters' resolution).
  bool busy(double share = 0.1) const;

 private:
  int64_t machine_ = 0, self_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Waits until a window of `window_ms` passes with no other work, at most `max_seconds`;
// whether the machine got quiet.
bool wait_until_quiet(double max_seconds, int window_ms = 100);

}  // namespace kora
