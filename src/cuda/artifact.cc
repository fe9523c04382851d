// The CUDA artifact emitter (src/cuda/artifact.h): chosen kernels in; per kernel
// its implementation (the database's fastest working schedule on the GPU), the generated
// ones compiled by NVRTC into a few cubins in parallel, and the manifest's CUDA kernels
// (launches or library calls) out, through the emitter every target shares
// (src/emit/artifact_backend.h).
#include "cuda/artifact.h"

#include <filesystem>
#include <map>
#include <optional>

#include "cuda/codegen.h"
#include "cuda/compile_kernels.h"
#include "cuda/library_plan.h"
#include "cuda/program_build.h"
#include "emit/artifact_backend.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

CudaJobBuffer buffer_of(const PrimGraph& graph, const std::string& name) {
  const ValueInfo& v = graph.value(name);
  CudaJobBuffer b;
  b.dtype = dtype_name(v.dtype);
  b.count = numel(v.shape);
  return b;
}

class CudaBackend : public ArtifactBackend {
 public:
  CudaBackend(const ProfileDb* db, const CudaArtifactOptions& options)
      : db_(db), options_(options) {}

  void describe(Manifest& m) const override {
    m.target = "cuda";
    m.arch = options_.arch;
    m.device = options_.device;
    m.threads = 1;
  }

  // The first working schedule of the database (fastest first) this kora can build, then
  // the library call or the generated default schedule.
  void implement(const PrimGraph& graph, const KernelDag& dag, int index,
                 const ChosenKernel& chosen, Emitted& e) override {
    const Candidate& c = e.candidate;
    CudaJobKernel& k = e.kernel.cuda;
    k.signature = chosen.signature;
    k.program = -1;  // generated: set when compiled
    k.name = kernel_name(graph, dag, c);
    for (const std::string& t : e.kernel.reads) k.reads.push_back(buffer_of(graph, t));
    for (const std::string& t : e.kernel.writes) k.writes.push_back(buffer_of(graph, t));
    e.kernel.impl = "cuda";
    std::vector<std::string> schedules;
    if (db_)
      for (const ProfileRecord& r : db_->records(options_.device, chosen.signature))
        if (!r.failed) schedules.push_back(r.schedule);
    const std::optional<CudaGemm> gemm = cuda_gemm_plan(graph, dag, c);
    const std::optional<CudaConv> conv = cuda_conv_plan(graph, dag, c);  // both: a 1x1 conv
    // A GEMM beside another kernel in one launch: kora's tensor-core GEMM (TF32)
    const bool mma_pair = options_.tf32 && !gemm && !conv && cuda_mma_pair_supports(graph, dag, c);
    bool measured = false;  // only failed implementations: none to fall back to
    if (db_) measured = db_->known(options_.device, chosen.signature);
    if (!measured || !schedules.empty())  // cuDNN's implicit precomputed GEMM fuses any epilogue
      schedules.push_back(gemm       ? cuda_gemm_schedules(*gemm).front()
                          : conv     ? (conv->fused() ? "cudnn:1" : "cudnn:0")
                          : mma_pair ? cuda_mma_tiles().front().key()
                                     : "default");
    for (const std::string& s : schedules) {
      if (const std::optional<CudaGemm> g =
              gemm ? cuda_gemm_with_schedule(*gemm, s) : std::nullopt) {
        k.library = "cublas_gemm";
        k.gemm = *g;
        k.gemm.tf32 = options_.tf32;
      } else if (const std::optional<CudaMmaTile> tile =
                     (gemm || mma_pair) && options_.tf32 ? cuda_mma_tile(s) : std::nullopt) {
        // kora's tensor-core GEMM (TF32, as the measurement that chose it), or a pair of it
        // and another kernel in one launch
        const CudaKernel kernel = generate_mma_kernel(
            graph, dag, c, cuda_mma_symbol(instance_signature(graph, dag, c), *tile), *tile);
        e.source = kernel.source;
        for (const CudaLaunch& l : kernel.launches)
          if (l.grid() > 0) k.launches.push_back({l.function, l.grid(), l.block});
      } else if (s.rfind("cudnn:", 0) == 0 && conv) {
        k.library = "cudnn_conv";
        k.conv = *conv;
        k.conv.algo = std::stoi(s.substr(6));
        k.conv.tf32 = options_.tf32;
      } else if (!gemm && !conv && cuda_codegen_supports(graph, dag, c)) {
        CudaSchedule schedule;
        try {
          schedule = CudaSchedule::from_key(s);
        } catch (const Error&) {
          continue;  // a schedule this generator no longer takes
        }
        const CudaKernel kernel = generate_cuda_kernel(
            graph, dag, c, cuda_kernel_symbol(graph, dag, c, schedule.key()), schedule);
        e.source = kernel.source;
        for (const CudaLaunch& l : kernel.launches)
          if (l.grid() > 0) k.launches.push_back({l.function, l.grid(), l.block});
      } else {
        continue;
      }
      k.schedule = e.kernel.schedule = s;
      return;
    }
    if (cuda_runs_on_host(graph, dag, c)) {  // the reference interpreter, on the host
      e.kernel.impl = "interpreter";
      e.kernel.schedule = "host";
      return;
    }
    if (measured)
      throw Error("kernel " + std::to_string(index) + " (" + kernel_name(graph, dag, c) +
                  "): every implementation failed on " + options_.device +
                  " (kora profile stored why)");
    throw Error("kernel " + std::to_string(index) + " (" + kernel_name(graph, dag, c) +
                ") has no CUDA implementation: the cuda target generates elementwise, layout "
                "and reduce primitives and calls cuBLAS / cuDNN for matrix products and "
                "convolutions");
  }

  void compile(const PrimGraph&, const KernelDag&, std::vector<Emitted>& emitted,
               const fs::path& tmp, Manifest& m) override {
    // Kernels of one symbol (repeated layers) have one source: compiled once, shared.
    std::vector<Emitted*> generated;
    std::vector<std::string> sources;
    std::map<std::string, size_t> by_source;
    std::vector<std::pair<Emitted*, size_t>> same;  // (kernel, the generated one it shares)
    for (Emitted& e : emitted)
      if (e.kernel.impl == "cuda" && e.kernel.cuda.library.empty()) {
        if (auto [it, fresh] = by_source.emplace(e.source, generated.size()); !fresh) {
          same.emplace_back(&e, it->second);
          continue;
        }
        generated.push_back(&e);
        sources.push_back(std::move(e.source));
      }
    if (generated.empty()) return;
    if (options_.progress)
      *options_.progress << "kora compile: nvrtc: " << generated.size() << " kernels for "
                         << options_.arch << std::endl;
    NvrtcOptions nvrtc;
    nvrtc.arch = options_.arch;
    nvrtc.cache_dir = options_.cache_dir;
    const ProgramBuild build = build_programs(
        sources, nvrtc, static_cast<size_t>(std::max(1, options_.kernels_per_program)), 0);
    for (size_t i = 0; i < generated.size(); ++i)
      if (build.program[i] < 0)
        throw Error("kernel (" + generated[i]->kernel.cuda.name +
                    ") did not compile: " + build.errors[i]);
    const std::string cache = cubin_cache_dir(nvrtc);
    for (size_t p = 0; p < build.keys.size(); ++p) {
      const std::string name = "kernels_" + std::to_string(p) + ".cubin";
      fs::copy_file(fs::path(cache) / (build.keys[p] + ".cubin"), tmp / name);
      m.libraries.push_back(name);
    }
    for (size_t i = 0; i < generated.size(); ++i)
      generated[i]->kernel.cuda.program = build.program[i];
    for (auto [e, i] : same) e->kernel.cuda.program = build.program[i];
  }

  int64_t assign_layouts(const PrimGraph&, const KernelDag&, const std::vector<Emitted>&,
                         Manifest&) override {
    return 0;  // plain row-major tensors throughout
  }

  bool kernels_overlap() const override { return true; }  // the runtime's graph of dependencies
  void finish(const PrimGraph& graph, Emitted& e, int index, ArtifactSummary& summary) override {
    if (e.kernel.impl == "interpreter") {
      e.kernel.graph = kernel_graph(graph, e.candidate, e.kernel, index);
      ++summary.interpreter;
      return;
    }
    const std::string& library = e.kernel.cuda.library;
    ++(library.empty()            ? summary.generated
       : library == "cublas_gemm" ? summary.cublas
                                  : summary.cudnn);
  }

 private:
  const ProfileDb* db_;
  const CudaArtifactOptions& options_;
};

}  // namespace

ArtifactSummary write_cuda_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                    const ProfileDb* db, const std::string& dir,
                                    const CudaArtifactOptions& options) {
  CudaBackend backend(db, options);
  ArtifactSummary summary = write_artifact_with(graph, plan, dir, backend);
  summary.arch = options.arch;
  return summary;
}

}  // namespace kora
