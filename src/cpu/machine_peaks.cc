// Measuring the CPU's peaks (src/cpu/machine_peaks.h): GEMM rate, copy bandwidth of
// main memory and of the cache, with kora's threads.
#include "cpu/machine_peaks.h"

#include <dnnl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <vector>

#include "cpu/machine_load.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

template <typename F>
double best_seconds(int runs, F&& f) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

double gemm_gflops() {
  const int64_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  auto gemm = [&] {
    if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) !=
        dnnl_success)
      throw Error("machine peaks: oneDNN's sgemm failed");
  };
  gemm();  // warm-up: oneDNN picks and JIT-compiles its kernel
  return 2.0 * static_cast<double>(n * n * n) / best_seconds(5, gemm) * 1e-9;
}

// Bytes moved per second (read and written) copying `bytes` between two buffers, each
// thread its own slice, `repeat` times per timed run.
double copy_gbps(size_t bytes, int repeat, int runs) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  auto copy = [&] {
#pragma omp parallel
    {
      const size_t threads = static_cast<size_t>(omp_get_num_threads());
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      const size_t part = bytes / threads, begin = t * part;
      for (int r = 0; r < repeat; ++r) std::memcpy(dst.data() + begin, src.data() + begin, part);
    }
  };
  copy();  // warm-up: pages touched, threads started
  return 2.0 * static_cast<double>(bytes) * repeat / best_seconds(runs, copy) * 1e-9;
}

double sysconf_bytes(int name, double otherwise) {
  const long v = sysconf(name);
  return v > 0 ? static_cast<double>(v) : otherwise;
}

}  // namespace

MachinePeaks measure_cpu_peaks(int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  MachinePeaks p;
  p.cache_bytes = sysconf_bytes(_SC_LEVEL3_CACHE_SIZE, sysconf_bytes(_SC_LEVEL2_CACHE_SIZE, 0));
  const double l2 = sysconf_bytes(_SC_LEVEL2_CACHE_SIZE, 256 << 10);
  const size_t big =
      static_cast<size_t>(std::clamp(4 * p.cache_bytes, 64.0 * (1 << 20), 512.0 * (1 << 20)));
  // The cache's rate and the GEMM's are measured in bursts apart in time (a copy in the
  // cache takes a fraction of a millisecond, and a neighbour's burst on a shared host made
  // one database's peak 89 GB/s where others have 340): the fastest of them counts.
  const size_t small = static_cast<size_t>(l2 / 4) * static_cast<size_t>(threads);
  double cache = copy_gbps(small, 200, 20), gflops = gemm_gflops();
  cache = std::max(cache, copy_gbps(small, 200, 20));
  p.dram_gbps = copy_gbps(big, 1, 3) * kPeakMargin;
  gflops = std::max(gflops, gemm_gflops());
  p.cache_gbps = std::max(cache, copy_gbps(small, 200, 20)) * kPeakMargin;
  p.gflops = gflops * kPeakMargin;
  p.cache_bytes = std::max(p.cache_bytes, static_cast<double>(small));
  p.floor_ms = 0;
  omp_set_num_threads(before);
  return p;
}

double bf16_compute_factor() {
  const unsigned amx = dnnl_cpu_isa_avx512_core_amx;  // the ISAs are bit sets
  return (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & amx) == amx ? kAmxBf16ComputeFactor
                                                                            : kBf16ComputeFactor;
}

MachinePeaks cpu_peaks(ProfileDb& db, const std::string& device, int threads, bool bf16) {
  const double compute = bf16 ? bf16_compute_factor() : 1;
  if (const auto stored = db.device_fact(device, "peaks")) {
    try {
      MachinePeaks p = MachinePeaks::from_json(*stored);
      p.gflops *= compute;
      return p;
    } catch (const Error& e) {  // a corrupt fact: measured again below, and replaced
      std::cerr << "kora: note: profile database '" << db.path() << "': " << e.what()
                << "; measuring the machine's peaks again" << std::endl;
    }
  }
  // Peaks measured while other processes use the CPU are low, and bounds from them too
  // high for good: measured again once quiet (5 s of waiting at most), else used for now
  // and not kept.
  MachinePeaks p;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0 && !wait_until_quiet(5)) break;
    LoadWatch watch;
    p = measure_cpu_peaks(threads);
    if (!watch.busy()) {
      db.put_device_fact(device, "peaks", p.to_json());
      break;
    }
  }
  p.gflops *= compute;
  return p;
}

}  // namespace kora
