// Measuring a kernel's latency: a callable in, its median time per call (and the
// interquartile spread) out. Warm-up calls first, then samples until the median is stable
// (or a cap on samples or time). The callable gets the sample index, so a caller can
// rotate among several input buffers where one would sit in cache unrealistically.
// measure_timed takes a callable that times itself (GPU events) and returns its
// milliseconds. The definitions (src/cpu/measure.cc) need nothing but the standard library
// and kora::Error, so the CUDA measuring worker links them too.
#pragma once

#include <functional>

namespace kora {

struct MeasureOptions {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;     // stop sampling after this long (after min_samples)
  double stable_within = 0.01;  // stop when 5 more samples move the median less than this
  // A kernel whose first warm-up call takes at least this long (0: never) is slow enough
  // that timer and cache noise are small against it: no more warm-up, and min_samples
  // at most 3 (profiling time goes mostly to such kernels on large-activation models).
  double slow_ms = 0;
  // A first warm-up call that takes at least this long (0: never) ends the measurement
  // there: one sample, that call's time (a schedule search drops schedules far slower
  // than the kernel's best this way).
  double abandon_ms = 0;
};

struct Measurement {
  double median_ms = 0;
  double spread_ms = 0;  // interquartile range
  int samples = 0;
};

Measurement measure(const std::function<void(int)>& run, const MeasureOptions& options = {});
Measurement measure_timed(const std::function<double(int)>& sample,
                          const MeasureOptions& options = {});

}  // namespace kora
