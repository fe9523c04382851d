// Generating and compiling a model's CUDA candidate kernels (include/kora/cuda_kernels.h):
// a primitive graph in; every distinct supported candidate x schedule generated, grouped
// into NVRTC programs of kernels_per_program kernels (the prelude once), compiled on
// `threads` threads into the CUDA kernel cache; a summary out. A program NVRTC rejects is
// compiled again kernel by kernel so that the failures name their kernels.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "kora/cuda_codegen.h"
#include "kora/cuda_compile.h"
#include "kora/cuda_kernels.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"

namespace kora {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Implementation {
  uint64_t signature = 0;
  std::string schedule;
  std::string source;
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

CudaKernelsSummary compile_cuda_kernels(const PrimGraph& graph, const CudaKernelsOptions& options) {
  if (!cuda_built())
    throw Error(
        "kora was built without CUDA: cannot compile CUDA kernels (rebuild with the "
        "CUDA toolkit)");
  CudaKernelsSummary summary;
  summary.arch = options.arch;
  auto start = std::chrono::steady_clock::now();
  const KernelDag dag = kernel_dag_of(graph);
  std::vector<Implementation> impls;
  std::unordered_set<uint64_t> seen;
  for (const Segment& s : partition_dag(dag, options.partition)) {
    const SegmentCandidates sc = segment_candidates(graph, dag, s, options.candidates);
    for (const Candidate& c : sc.candidates) {
      if (!seen.insert(c.signature).second) continue;
      if (!cuda_codegen_supports(graph, sc.sub, c)) continue;
      ++summary.supported;
      const std::vector<CudaSchedule> space = cuda_schedule_space(graph, sc.sub, c);
      for (size_t k = 0; k < space.size(); ++k) {
        CudaKernel kernel = generate_cuda_kernel(
            graph, sc.sub, c, "kora_" + signature_hex(c.signature) + "_" + std::to_string(k),
            space[k]);
        summary.launches += static_cast<int64_t>(kernel.launches.size());
        impls.push_back({c.signature, space[k].key(), std::move(kernel.source)});
      }
    }
  }
  summary.kernels = static_cast<int64_t>(seen.size());
  summary.implementations = static_cast<int64_t>(impls.size());
  summary.generate_seconds = seconds_since(start);
  if (options.progress)
    *options.progress << "cuda: " << summary.supported << " of " << summary.kernels
                      << " kernels generated, " << summary.implementations
                      << " implementations (kernel x schedule)\n";

  start = std::chrono::steady_clock::now();
  const size_t per = static_cast<size_t>(std::max(1, options.kernels_per_program));
  const size_t programs = (impls.size() + per - 1) / per;
  summary.programs = static_cast<int64_t>(programs);
  NvrtcOptions nvrtc;
  nvrtc.arch = options.arch;
  nvrtc.cache_dir = options.cache_dir;
  const std::string prelude = cuda_codegen_prelude();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  auto work = [&] {
    for (size_t p; (p = next++) < programs;) {
      const size_t begin = p * per, end = std::min(impls.size(), begin + per);
      std::string source = prelude;
      for (size_t i = begin; i < end; ++i) source += impls[i].source;
      try {
        const bool cached = compile_cubin(source, nvrtc).cached;
        std::lock_guard<std::mutex> lock(mutex);
        summary.cached += cached;
        continue;
      } catch (const Error&) {
      }
      for (size_t i = begin; i < end; ++i) {  // find the kernels that fail
        try {
          compile_cubin(prelude + impls[i].source, nvrtc);
        } catch (const Error& e) {
          std::lock_guard<std::mutex> lock(mutex);
          summary.failures.push_back(signature_hex(impls[i].signature) + " " + impls[i].schedule +
                                     ": " + first_line(e.what()));
        }
      }
    }
  };
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(programs)); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::sort(summary.failures.begin(), summary.failures.end());
  summary.compile_seconds = seconds_since(start);
  return summary;
}

std::string format_cuda_kernels_summary(const CudaKernelsSummary& s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "target cuda (" << s.arch << ")\n"
     << "kernels " << s.kernels << " distinct, " << s.supported << " generated for CUDA, "
     << s.kernels - s.supported << " left to libraries (cuBLAS/cuDNN, to come) or opaque\n"
     << "implementations " << s.implementations << " (kernel x schedule), " << s.launches
     << " launches\n"
     << "nvrtc " << s.programs << " programs (" << s.cached << " cached) in " << s.compile_seconds
     << " s; generation " << s.generate_seconds << " s\n";
  for (const std::string& f : s.failures) os << "failed: " << f << "\n";
  return os.str();
}

}  // namespace kora
