// The co-location scheduler's admission rule and its waiting (src/colocate/scheduler.h).
#include "colocate/scheduler.h"

#include <algorithm>

namespace kora {

ColocationScheduler::ColocationScheduler(double target_ms, double headroom,
                                         std::vector<double> lc_kernel_ms, double slowdown,
                                         Sharing sharing)
    : target_ms_(target_ms),
      headroom_(headroom),
      slowdown_(slowdown),
      sharing_(sharing),
      left_ms_(lc_kernel_ms.size() + 1, 0.0) {
  for (size_t k = lc_kernel_ms.size(); k-- > 0;) left_ms_[k] = left_ms_[k + 1] + lc_kernel_ms[k];
}

bool ColocationScheduler::time_slicing() const {
  return sharing_ == Sharing::kCores && slowdown_ >= 1.5;
}

void ColocationScheduler::lc_start(Clock::time_point arrival) {
  std::unique_lock<std::mutex> lock(mutex_);
  lc_in_flight_ = true;  // no BE kernel starts from now on but by the rule
  arrival_ = arrival;
  next_ = 0;
  if (time_slicing() && be_running_) {
    const Clock::time_point start = Clock::now();
    changed_.wait(lock, [&] { return !be_running_ || stopped_; });
    waited_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
}

void ColocationScheduler::lc_progress(size_t next) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = next;
  }
  changed_.notify_all();  // the kernels left shrank: a held BE kernel may fit now
}

void ColocationScheduler::lc_finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lc_in_flight_ = false;
  }
  changed_.notify_all();
}

bool ColocationScheduler::admits(double ms, Clock::time_point now) const {
  if (!lc_in_flight_) return true;
  if (time_slicing()) return false;
  const double elapsed = std::chrono::duration<double, std::milli>(now - arrival_).count();
  const double left = headroom_ * left_ms_[std::min(next_, left_ms_.size() - 1)];
  if (sharing_ == Sharing::kCores) return elapsed + left + slowdown_ * ms <= target_ms_;
  const double overlap = std::min(ms, left * slowdown_);
  return elapsed + overlap + (left - overlap / slowdown_) <= target_ms_;
}

bool ColocationScheduler::be_wait(double ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return stopped_ || (!be_running_ && admits(ms, Clock::now())); });
  if (stopped_) return false;
  be_running_ = true;
  admitted_in_flight_ += lc_in_flight_;
  return true;
}

void ColocationScheduler::be_done() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    be_running_ = false;
  }
  changed_.notify_all();
}

void ColocationScheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

double ColocationScheduler::lc_waited_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waited_ms_;
}

int64_t ColocationScheduler::admitted_in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return admitted_in_flight_;
}

}  // namespace kora
