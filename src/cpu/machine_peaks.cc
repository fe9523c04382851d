// Measuring the CPU's peaks (src/cpu/machine_peaks.h): GEMM rate, copy bandwidth of
// main memory and of the cache, with kora's threads.
#include "cpu/machine_peaks.h"

#include <dnnl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cpu/backend.h"
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

// dst = src * k, a streaming loop in the widest vector ISA the CPU has (one clone per ISA,
// picked when the program loads).
__attribute__((target_clones("avx512f", "avx2", "default"))) void scale_copy(
    float* __restrict dst, const float* __restrict src, size_t n, float k) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] * k;
}

volatile float one = 1.0f;  // read at run time: the loop cannot become a memcpy

// Bytes moved per second (read and written) copying `bytes` between two buffers, each
// thread its own slice, `repeat` times per timed run: the faster of the C library's memcpy
// and a vector loop. Either alone can be far off: glibc's memcpy moves a cache-sized block
// with `rep movsb`, which on an AMD EPYC (Zen 3) guest ran 6-10 GB/s or 195 GB/s in the
// L2 cache depending on how the two buffers were aligned, where the loop ran 73-182.
double copy_gbps(size_t bytes, int repeat, int runs) {
  const size_t n = bytes / sizeof(float);
  std::vector<float> src(n, 1.0f), dst(n, 0.0f);
  auto copy = [&](bool loop) {
    const float k = one;
#pragma omp parallel
    {
      const size_t threads = static_cast<size_t>(omp_get_num_threads());
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      const size_t part = n / threads, begin = t * part;
      for (int r = 0; r < repeat; ++r) {
        if (loop)
          scale_copy(dst.data() + begin, src.data() + begin, part, k);
        else
          std::memcpy(dst.data() + begin, src.data() + begin, part * sizeof(float));
      }
    }
  };
  copy(false);  // warm-up: pages touched, threads started
  copy(true);
  const double seconds =
      std::min(best_seconds(runs, [&] { copy(false); }), best_seconds(runs, [&] { copy(true); }));
  return 2.0 * static_cast<double>(n * sizeof(float)) * repeat / seconds * 1e-9;
}

// The last-level cache's size: Linux's cache topology (what lscpu shows: the cache as the
// CPU describes it), else sysconf. A KVM guest on an AMD EPYC (Zen 3) had sysconf report 256
// MiB, the host's L3 caches together, where the CPU's own has 32 MiB.
double last_level_cache_bytes() {
  double best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    double bytes = std::atof(size.c_str());
    if (size.back() == 'K') bytes *= 1 << 10;
    if (size.back() == 'M') bytes *= 1 << 20;
    if (level >= best_level && bytes > 0) best = bytes, best_level = level;
  }
  return best;
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
  p.cache_bytes = last_level_cache_bytes();
  if (p.cache_bytes <= 0)
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
  return onednn_isa_has(dnnl_cpu_isa_avx512_core_amx) ? kAmxBf16ComputeFactor : kBf16ComputeFactor;
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
