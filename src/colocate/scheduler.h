// The co-location scheduler (include/kora/colocate.h): the latency-critical (LC) request's
// progress and the best-effort (BE) kernels' predicted costs in; whether a BE kernel may
// start now out, blocking the BE run that asks until it may.
//
// The rule (admits): with no LC request in flight, a BE kernel starts; with one, it starts
// when
//     elapsed since the request arrived + headroom x (the LC kernels left)
//       + slowdown x its cost <= the target,
// costs being the kernels' times inside their plans running alone, and slowdown how much
// slower the LC runs beside best-effort work than alone (measured: colocate.cc), the time
// a BE kernel beside the request is taken to cost it.
//
// Where the slowdown is 1.5 or more, the scheduler time-slices instead: side by side
// gives the LC less than two thirds of its speed (at 2, each side gets half the machine,
// and taking turns is as good; the measurement of the slowdown is noisy, and the LC is the
// side protected, so the bar is below 2). No BE kernel starts
// during a request, and a request that arrives while a BE kernel runs waits for it to end
// (it would take longer beside it: slowdown x what is left of it, of which the request
// loses all but what it computes meanwhile). A BE run held by the
// rule is woken at each LC kernel boundary (the rule is checked again) and when the request
// ends. One BE kernel runs at a time, whichever BE artifact it belongs to.
//
// On a GPU (Sharing::kStreams) the LC runs on a stream of higher priority than the BE
// work's, so the two run side by side, and the GPU gives waiting blocks of the LC's kernels
// the SMs first: a request never waits for BE work to end, and a BE launch (a whole
// inference: CUDA plans are replayed as graphs) beside a request slows the request down
// `slowdown` times while they overlap. With W = headroom x (the LC kernels left), it
// starts when
//     elapsed + overlap + (W - overlap / slowdown) <= the target,
// overlap = min(ms, W x slowdown): the request's finish if the BE work ran beside it from
// now for `ms`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace kora {

class ColocationScheduler {
 public:
  using Clock = std::chrono::steady_clock;

  // How the LC and the BE work share the machine: a CPU's cores, or a GPU's streams.
  enum class Sharing { kCores, kStreams };

  // lc_kernel_ms: the LC plan's kernels' costs, in plan order.
  ColocationScheduler(double target_ms, double headroom, std::vector<double> lc_kernel_ms,
                      double slowdown = 1.0, Sharing sharing = Sharing::kCores);

  // The LC request that arrived at `arrival` starts (time-slicing: once no BE kernel runs);
  // it is about to run kernel `next`; it is done.
  void lc_start(Clock::time_point arrival);
  void lc_progress(size_t next);
  void lc_finish();

  // Blocks until a BE kernel of cost `ms` may start, and takes the BE token; false (token
  // not taken) once stop() was called. be_done() gives the token back.
  bool be_wait(double ms);
  void be_done();
  // Wakes and refuses every BE wait from now on.
  void stop();

  // The rule alone, at `now` (the caller holds no lock: for tests and be_wait).
  bool admits(double ms, Clock::time_point now) const;

  // BE kernels started while an LC request was in flight.
  int64_t admitted_in_flight() const;
  // Time-slicing: the time requests waited in lc_start for a BE kernel to end, in all.
  double lc_waited_ms() const;
  // Whether requests and BE kernels take turns (cores, and slowdown >= 1.5).
  bool time_slicing() const;

 private:
  double target_ms_, headroom_, slowdown_;
  Sharing sharing_;
  std::vector<double> left_ms_;  // left_ms_[k]: the cost of LC kernels k, k+1, ...
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool lc_in_flight_ = false, be_running_ = false, stopped_ = false;
  Clock::time_point arrival_;
  size_t next_ = 0;
  int64_t admitted_in_flight_ = 0;
  double waited_ms_ = 0;
};

}  // namespace kora
