// Generating and compiling a model's CUDA candidate kernels (src/cuda/compile_kernels.h):
// a primitive graph in; every distinct supported candidate x schedule generated, grouped
// into NVRTC programs of kernels_per_program kernels (the prelude once), compiled on
// `threads` threads into the CUDA kernel cache; a summary out. A program NVRTC rejects is
// compiled again kernel by kernel so that the failures name their kernels. Optionally the
// measuring job of every compiled implementation (src/cuda/job.h).
#include "cuda/compile_kernels.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include "base/fnv_hash.h"
#include "cuda/codegen.h"
#include "cuda/library_plan.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/program_build.h"
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
  CudaJobKernel job;  // reads, writes, launches (program set when compiled)
  int program = -1;   // the compiled program that holds it; -1: NVRTC rejected it
};

// The job's buffer for tensor `name`: integer and bool constants carried as data (appended
// to `data` once per tensor), float tensors random, non-constant integers zero.
CudaJobBuffer job_buffer(const PrimGraph& graph, const std::string& name, std::string& data,
                         std::map<std::string, int64_t>& offsets) {
  const ValueInfo& v = graph.value(name);
  CudaJobBuffer b;
  b.dtype = v.dtype == DType::kBool ? "bool" : dtype_name(v.dtype);
  b.count = numel(v.shape);
  const Tensor* constant = graph.constant(name);
  if (constant && !is_floating(v.dtype)) {
    b.fill = CudaFill::kData;
    auto [it, added] = offsets.emplace(name, static_cast<int64_t>(data.size()));
    if (added) data.append(reinterpret_cast<const char*>(constant->bytes()), constant->nbytes());
    b.data_offset = it->second;
  } else if (is_floating(v.dtype) || v.dtype == DType::kBool) {
    b.fill = CudaFill::kRandom;
    FnvHash h;
    h.str(name);
    b.seed = h.h;
  } else {
    b.fill = CudaFill::kZero;
  }
  return b;
}

// Writes the job: the programs' cubins copied from the cache, data.bin, job.json.
int64_t write_job(const std::string& dir, const std::vector<Implementation>& impls,
                  const std::vector<CudaJobKernel>& library,
                  const std::vector<std::string>& program_keys, const std::string& cache_dir,
                  const CudaKernelsOptions& options, const std::string& data) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const fs::directory_entry& e : fs::directory_iterator(dir))  // an older job's cubins
    if (e.path().extension() == ".cubin") fs::remove(e.path());
  CudaJob job;
  job.arch = options.arch;
  job.compiler = nvrtc_version();
  job.codegen = cuda_codegen_revision(options.tf32);
  job.measure = options.measure;
  for (size_t p = 0; p < program_keys.size(); ++p) {
    job.programs.push_back("program_" + std::to_string(p) + ".cubin");
    fs::copy_file(fs::path(cache_dir) / (program_keys[p] + ".cubin"),
                  fs::path(dir) / job.programs.back(), fs::copy_options::overwrite_existing);
  }
  for (const Implementation& impl : impls)
    if (impl.program >= 0) {
      job.kernels.push_back(impl.job);
      job.kernels.back().program = impl.program;
    }
  std::stable_sort(
      job.kernels.begin(), job.kernels.end(),
      [](const CudaJobKernel& a, const CudaJobKernel& b) { return a.program < b.program; });
  job.kernels.insert(job.kernels.end(), library.begin(), library.end());
  {
    std::ofstream out(cuda_data_file(dir), std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw Error(cuda_data_file(dir) + ": cannot write");
  }
  write_cuda_job(dir, job);
  return static_cast<int64_t>(job.kernels.size());
}

}  // namespace

bool cuda_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return cuda_codegen_supports(graph, dag, c) || cuda_gemm_plan(graph, dag, c) ||
         cuda_conv_plan(graph, dag, c);
}

bool cuda_runs_on_host(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return c.members.size() == 1 && !cuda_supports(graph, dag, c);
}

CandidateOptions cuda_candidate_options(const PrimGraph& graph, CandidateOptions options,
                                        bool tf32) {
  options.horizontal_linear = tf32 && options.horizontal_pairs > 0;
  options.capable = [&graph, tf32](const KernelDag& dag, const std::vector<int>& members) {
    // A lone primitive always: on the GPU, or else on the host (cuda_runs_on_host).
    if (members.size() == 1) return true;
    const Candidate c = make_candidate(dag, members);
    return cuda_supports(graph, dag, c) || (tf32 && cuda_mma_pair_supports(graph, dag, c));
  };
  return options;
}

int64_t for_each_cuda_candidate(
    const PrimGraph& graph, const CudaKernelsOptions& options,
    const std::function<void(const KernelDag& sub, const Candidate& c)>& fn) {
  const ModelCandidates candidates =
      unique_candidates(graph, options.partition, options.candidates);
  for (const UniqueCandidate& u : candidates.unique) {
    const KernelDag& sub = *u.sub;
    const Candidate& c = *u.candidate;
    const bool generated = cuda_codegen_supports(graph, sub, c) ||
                           (options.tf32 && cuda_mma_pair_supports(graph, sub, c));
    if (!generated && !cuda_gemm_plan(graph, sub, c) && !cuda_conv_plan(graph, sub, c)) continue;
    if (generated && options.known && options.known(c.signature)) continue;
    fn(sub, c);
  }
  return static_cast<int64_t>(candidates.unique.size());
}

CudaKernelsSummary compile_cuda_kernels(const PrimGraph& graph, const CudaKernelsOptions& options) {
  if (!cuda_built())
    throw Error(
        "kora was built without CUDA: cannot compile CUDA kernels (rebuild with the "
        "CUDA toolkit)");
  CudaKernelsSummary summary;
  summary.arch = options.arch;
  auto start = std::chrono::steady_clock::now();
  std::vector<Implementation> impls;
  std::vector<CudaJobKernel> library;  // cuBLAS calls
  std::string data;                    // the job's data.bin
  std::map<std::string, int64_t> data_offsets;
  CudaKernelsOptions counted = options;  // counts the kernels `known` leaves out
  if (options.known)
    counted.known = [&](uint64_t signature) {
      const bool known = options.known(signature);
      summary.known += known;
      return known;
    };
  // A generated implementation of candidate c: its source, to compile, and its job kernel.
  auto add_generated = [&](const KernelDag& sub, const Candidate& c, CudaKernel kernel,
                           const std::string& schedule) {
    summary.launches += static_cast<int64_t>(kernel.launches.size());
    Implementation impl{c.signature, schedule, std::move(kernel.source), {}, -1};
    impl.job.signature = c.signature;
    impl.job.schedule = impl.schedule;
    impl.job.name = kernel_name(graph, sub, c);
    for (const std::string& t : kernel.reads)
      impl.job.reads.push_back(job_buffer(graph, t, data, data_offsets));
    for (const std::string& t : kernel.writes)
      impl.job.writes.push_back(job_buffer(graph, t, data, data_offsets));
    for (const CudaLaunch& l : kernel.launches)
      if (l.grid() > 0) impl.job.launches.push_back({l.function, l.grid(), l.block});
    impls.push_back(std::move(impl));
  };
  summary.kernels =
      for_each_cuda_candidate(graph, counted, [&](const KernelDag& sub, const Candidate& c) {
        const std::optional<CudaGemm> gemm = cuda_gemm_plan(graph, sub, c);
        const std::optional<CudaConv> conv = cuda_conv_plan(graph, sub, c);  // both: 1x1
        // TF32 asked for: kora's tensor-core GEMM too, alone or beside another kernel
        if (options.tf32 && (gemm || cuda_mma_pair_supports(graph, sub, c))) {
          for (const CudaMmaTile& tile : cuda_mma_tiles())
            if (!options.measured || !options.measured(c.signature, tile.key()))
              add_generated(sub, c,
                            generate_mma_kernel(
                                graph, sub, c,
                                cuda_mma_symbol(instance_signature(graph, sub, c), tile), tile),
                            tile.key());
          if (!gemm && !conv) {  // a pair: nothing else computes it
            ++summary.supported;
            return;
          }
        }
        if (gemm || conv) {
          if (!options.library) return;
          CudaJobKernel k;
          k.signature = c.signature;
          k.program = -1;
          k.name = kernel_name(graph, sub, c);
          for (const std::string& t : kernel_reads(graph, sub, c))
            k.reads.push_back(job_buffer(graph, t, data, data_offsets));
          for (const std::string& t : kernel_writes(graph, sub, c))
            k.writes.push_back(job_buffer(graph, t, data, data_offsets));
          // Each schedule not measured before (a library may have gained schedules).
          const size_t before = library.size();
          auto add = [&](const std::string& schedule) {
            k.schedule = schedule;
            if (!options.measured || !options.measured(c.signature, schedule)) library.push_back(k);
          };
          if (gemm) {
            k.library = "cublas_gemm";
            for (const std::string& schedule : cuda_gemm_schedules(*gemm)) {
              k.gemm = *cuda_gemm_with_schedule(*gemm, schedule);
              k.gemm.tf32 = options.tf32;
              add(schedule);
            }
          }
          if (conv) {
            k.library = "cudnn_conv";
            for (int algo : cudnn_conv_algorithms(*conv)) {
              k.conv = *conv;
              k.conv.algo = algo;
              k.conv.tf32 = options.tf32;
              add("cudnn:" + std::to_string(algo));
            }
          }
          ++(library.size() == before ? summary.known : summary.library);
          return;
        }
        ++summary.supported;
        std::vector<CudaSchedule> space = cuda_schedule_space(graph, sub, c);
        if (options.max_schedules > 0 && space.size() > static_cast<size_t>(options.max_schedules))
          space.resize(static_cast<size_t>(options.max_schedules));
        const uint64_t instance = instance_signature(graph, sub, c);  // names the functions
        for (size_t k = static_cast<size_t>(std::max(0, options.first_schedule)); k < space.size();
             ++k) {
          add_generated(
              sub, c,
              generate_cuda_kernel(graph, sub, c, cuda_kernel_symbol(instance, k), space[k]),
              space[k].key());
        }
      });
  summary.implementations = static_cast<int64_t>(impls.size());
  summary.generate_seconds = seconds_since(start);
  if (options.progress)
    *options.progress << "cuda: " << summary.supported << " of " << summary.kernels
                      << " kernels generated, " << summary.implementations
                      << " implementations (kernel x schedule)\n";

  start = std::chrono::steady_clock::now();
  NvrtcOptions nvrtc;
  nvrtc.arch = options.arch;
  nvrtc.cache_dir = options.cache_dir;
  std::vector<std::string> sources;
  for (Implementation& impl : impls) sources.push_back(std::move(impl.source));
  const ProgramBuild build =
      build_programs(sources, nvrtc, static_cast<size_t>(std::max(1, options.kernels_per_program)),
                     options.threads);
  summary.programs = build.attempted;
  summary.cached = build.cached;
  const std::vector<std::string>& program_keys = build.keys;
  for (size_t i = 0; i < impls.size(); ++i) {
    impls[i].program = build.program[i];
    if (build.program[i] < 0)
      summary.failures.push_back({impls[i].signature, impls[i].schedule, build.errors[i]});
  }
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const CudaKernelFailure& a, const CudaKernelFailure& b) {
              return std::tie(a.signature, a.schedule) < std::tie(b.signature, b.schedule);
            });
  summary.compile_seconds = seconds_since(start);
  if (!options.job_dir.empty()) {
    summary.job_kernels = write_job(options.job_dir, impls, library, program_keys,
                                    cubin_cache_dir(nvrtc), options, data);
    if (options.progress)
      *options.progress << "cuda: job of " << summary.job_kernels << " implementations in "
                        << options.job_dir << "\n";
  }
  return summary;
}

std::string format_cuda_kernels_summary(const CudaKernelsSummary& s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "target cuda (" << s.arch << ")\n"
     << "kernels " << s.kernels << " distinct, "
     << (s.known ? std::to_string(s.known) + " measured before, " : "") << s.supported
     << " generated for CUDA, " << s.library << " on cuBLAS or cuDNN, "
     << s.kernels - s.known - s.supported - s.library
     << " left (linear with fused neighbours, opaque)\n"
     << "implementations " << s.implementations << " (kernel x schedule), " << s.launches
     << " launches\n"
     << "nvrtc " << s.programs << " programs (" << s.cached << " cached) in " << s.compile_seconds
     << " s; generation " << s.generate_seconds << " s\n";
  for (const CudaKernelFailure& f : s.failures)
    os << "failed: " << signature_hex(f.signature) << " " << f.schedule << ": " << f.error << "\n";
  return os.str();
}

}  // namespace kora
