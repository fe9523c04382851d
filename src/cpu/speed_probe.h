// Whether the machine runs as fast as it can while kora measures. In: a reference loop (a
// float32 GEMM of 128 x 128 x 128 by oneDNN, in the cache, on kora's threads) timed now;
// out: its time over the fastest this probe has seen (1.0 at full speed).
//
// It sees what /proc cannot (src/cpu/machine_load.h counts this machine's other
// processes): another tenant on the same physical cores (a virtual machine on the SMT
// siblings), a power or thermal limit. On this project's 2-core Intel Xeon with AMX such
// spells come and go within seconds and slow vector FMA loops about 1.3x and AMX matmuls
// about 2.4x, with no other process in sight (docs/benchmarks.md, 2026-12-01). kora
// profile times the probe before and after each implementation it measures; slowed at
// both, the implementation is measured again once the probe is fast again, else stored as
// suspect (src/cpu/profile.cc).
#pragma once

#include <functional>

namespace kora {

class SpeedProbe {
 public:
  // `timer` times the reference loop once (ms); empty: reference_loop_ms.
  explicit SpeedProbe(std::function<double()> timer = {}, double threshold = kSlowed);

  // The loop's time now over the fastest seen (which it updates): >= 1.
  double sample();
  // Whether a sample's ratio says the machine ran slowed.
  bool slowed(double ratio) const { return ratio > threshold_; }
  double fastest_ms() const { return fastest_ms_; }

  // A ratio above this is a slowed machine: the probe's own spread at full speed is a few
  // percent; slowed spells make it 1.2-1.5x.
  static constexpr double kSlowed = 1.15;

 private:
  std::function<double()> timer_;
  double threshold_;
  double fastest_ms_ = 0;
};

// The reference loop on omp_get_max_threads() threads, timed once (ms): the best of
// three calls, so that one preempted call does not count.
double reference_loop_ms();

}  // namespace kora
