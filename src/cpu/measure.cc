// Latency measurement (src/cpu/measure.h): each sample times one call with the
// steady clock (measure) or reports its own time (measure_timed); every 5 samples past the minimum,
// the median is compared with the one 5 samples earlier and sampling stops once it moved by less
// than `stable_within`. A first warm-up call of at least `slow_ms` cuts the warm-up to that call
// and the minimum to 3 samples; one of at least `abandon_ms` is the only sample.
#include "cpu/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "kora/error.h"

namespace kora {
namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Measurement measure(const std::function<void(int)>& run, const MeasureOptions& options) {
  return measure_timed(
      [&](int index) {
        const auto t0 = std::chrono::steady_clock::now();
        run(index);
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
      },
      options);
}

Measurement measure_timed(const std::function<double(int)>& sample, const MeasureOptions& options) {
  if (options.min_samples < 1 || options.max_samples < options.min_samples)
    throw Error("measure: need 1 <= min_samples <= max_samples");
  using clock = std::chrono::steady_clock;
  int index = 0;
  int warmup = options.warmup, min_samples = options.min_samples;
  for (int i = 0; i < warmup; ++i) {
    const double first = sample(index++);
    if (i > 0) continue;
    if (options.abandon_ms > 0 && first >= options.abandon_ms) return {first, 0, 1};
    if (options.slow_ms > 0 && first >= options.slow_ms) {
      warmup = 1;
      min_samples = std::min(min_samples, 3);
    }
  }
  std::vector<double> ms;
  const auto start = clock::now();
  double previous = -1;
  while (static_cast<int>(ms.size()) < options.max_samples) {
    ms.push_back(sample(index++));
    const int n = static_cast<int>(ms.size());
    if (n < min_samples || (n - min_samples) % 5 != 0) continue;
    const double median = quantile(ms, 0.5);
    if (previous >= 0 && std::abs(median - previous) <= options.stable_within * previous) break;
    if (std::chrono::duration<double>(clock::now() - start).count() > options.max_seconds) break;
    previous = median;
  }
  return {quantile(ms, 0.5), quantile(ms, 0.75) - quantile(ms, 0.25), static_cast<int>(ms.size())};
}

}  // namespace kora
