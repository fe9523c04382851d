// The machine's speed now against its fastest (src/cpu/speed_probe.h).
#include "cpu/speed_probe.h"

#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "kora/error.h"

namespace kora {

SpeedProbe::SpeedProbe(std::function<double()> timer, double threshold)
    : timer_(timer ? std::move(timer) : std::function<double()>(reference_loop_ms)),
      threshold_(threshold) {}

double SpeedProbe::sample() {
  const double ms = timer_();
  if (!(ms > 0)) return 1.0;  // an unusable reading says nothing
  if (fastest_ms_ <= 0 || ms < fastest_ms_) fastest_ms_ = ms;
  return ms / fastest_ms_;
}

double reference_loop_ms() {
  constexpr int64_t n = 128;  // 192 KB of operands: in the cache, compute bound
  static thread_local std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  double best = 1e30;
  for (int call = 0; call < 3; ++call) {
    const auto start = std::chrono::steady_clock::now();
    if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) !=
        dnnl_success)
      throw Error("speed probe: oneDNN's sgemm failed");
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

}  // namespace kora
