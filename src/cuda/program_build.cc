// Generated CUDA kernels compiled into programs in parallel (src/cuda/program_build.h).
#include "cuda/program_build.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "cuda/codegen.h"
#include "kora/error.h"

namespace kora {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::string cubin_cache_dir(const NvrtcOptions& nvrtc) {
  return nvrtc.cache_dir.empty() ? default_cuda_kernel_cache_dir() : nvrtc.cache_dir;
}

ProgramBuild build_programs(const std::vector<std::string>& sources, const NvrtcOptions& nvrtc,
                            size_t per, int threads) {
  ProgramBuild out;
  out.program.assign(sources.size(), -1);
  out.errors.resize(sources.size());
  per = std::max<size_t>(1, per);
  const size_t programs = (sources.size() + per - 1) / per;
  out.attempted = static_cast<int64_t>(programs);
  const std::string prelude = cuda_codegen_prelude();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  auto holds = [&](size_t begin, size_t end, const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = begin; i < end; ++i) out.program[i] = static_cast<int>(out.keys.size());
    out.keys.push_back(key);
  };
  auto work = [&] {
    for (size_t p; (p = next++) < programs;) {
      const size_t begin = p * per, end = std::min(sources.size(), begin + per);
      std::string source = prelude;
      for (size_t i = begin; i < end; ++i) source += sources[i];
      try {
        const CubinResult r = compile_cubin(source, nvrtc);
        holds(begin, end, r.key);
        std::lock_guard<std::mutex> lock(mutex);
        out.cached += r.cached;
        continue;
      } catch (const Error&) {
      }
      for (size_t i = begin; i < end; ++i) {  // find the kernels that fail
        try {
          holds(i, i + 1, compile_cubin(prelude + sources[i], nvrtc).key);
        } catch (const Error& e) {
          std::lock_guard<std::mutex> lock(mutex);
          out.errors[i] = first_line(e.what());
        }
      }
    }
  };
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(programs)); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

}  // namespace kora
