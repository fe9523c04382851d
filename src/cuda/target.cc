// The CUDA target (src/cuda/target.h): the CUDA backend's answers to the pipeline.
#include "cuda/target.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "cuda/artifact.h"
#include "cuda/compile_kernels.h"
#include "cuda/driver.h"
#include "cuda/library_plan.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/profile_cuda.h"
#include "kora/compile.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {

CudaTarget::CudaTarget(const TargetOptions& options) : options_(options) {
  if (!cuda_built()) throw Error("--target cuda: kora was built without CUDA");
}

std::string CudaTarget::device(const ProfileDb& db) {
  if (options_.new_gpu && !options_.gpu.empty() && !options_.arch.empty() &&
      !cuda_gpu_measured(db, options_.gpu, options_.tf32)) {
    arch_ = options_.arch;
    return cuda_unmeasured_device(options_.gpu, options_.arch, options_.tf32);
  }
  return cuda_target_device(db, options_.gpu, &arch_, options_.tf32);
}

std::string CudaTarget::job_dir(const ProfileDb& db, const std::string& model_path,
                                const std::string& arch) const {
  return !options_.job_dir.empty() ? options_.job_dir
                                   : default_cuda_job_dir(db.path(), model_path, arch);
}

int64_t CudaTarget::merge_results(const PrimGraph& graph, ProfileDb& db,
                                  const TargetProfileOptions& options) {
  if (options_.gpu.empty()) return 0;
  device(db);  // the architecture of the job
  CudaKernelsOptions kernels;
  kernels.arch = options_.arch.empty() ? arch_ : options_.arch;
  kernels.candidates = options.candidates;
  kernels.partition = options.partition;
  kernels.tf32 = options_.tf32;
  const std::string dir = job_dir(db, options.model_path, kernels.arch);
  const std::optional<CudaMergeSummary> m = merge_pending_cuda_results(graph, dir, db, kernels);
  if (!m) return 0;
  if (options.progress) {
    *options.progress << "kora profile: results of " << dir << " from " << m->device << ": "
                      << m->stored << " stored, " << m->failures.size() << " failed"
                      << (m->missing > 0 ? ", " + std::to_string(m->missing) + " missing" : "")
                      << std::endl;
    if (m->device.find(options_.gpu) == std::string::npos)
      *options.progress << "kora profile: warning: --gpu '" << options_.gpu
                        << "' does not name that GPU: name it with part of its fingerprint "
                        << "the next round" << std::endl;
  }
  return m->stored;
}

std::string CudaTarget::describe() const { return "cuda" + (arch_.empty() ? "" : ", " + arch_); }

CandidateOptions CudaTarget::candidates(const PrimGraph& graph, CandidateOptions options) const {
  options.horizontal_pairs = options_.horizontal;
  return cuda_candidate_options(graph, options, options_.tf32);
}

std::unique_ptr<CostModel> CudaTarget::fallback_cost() const {
  return std::make_unique<RooflineCost>(device_params("h100"));
}

MachinePeaks cuda_bound_peaks(bool tf32) {
  MachinePeaks p;
  p.gflops = 2 * (tf32 ? 495e3 : 67e3);
  p.dram_gbps = 4800;
  p.cache_gbps = 20e3;
  p.cache_bytes = 50.0 * (1 << 20);
  p.floor_ms = 1e-3;
  return p;
}

std::unique_ptr<CostModel> CudaTarget::lower_bound(ProfileDb&, const std::string&) {
  return std::make_unique<LowerBoundCost>(cuda_bound_peaks(options_.tf32), false, false);
}

std::unique_ptr<CostModel> CudaTarget::typical_cost(ProfileDb&, const std::string&) {
  return std::make_unique<LowerBoundCost>(cuda_bound_peaks(options_.tf32), true);
}

std::string CudaTarget::implemented_by(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) const {
  return cuda_gemm_plan(graph, dag, c) || cuda_conv_plan(graph, dag, c) ? "library" : "generated";
}

double CudaTarget::failure_penalty_ms() const { return kCudaFailedKernelMs; }

bool CudaTarget::measures_here() const {
  return options_.gpu.empty() && cuda_device_unavailable().empty();
}

ProfileReport CudaTarget::profile(const PrimGraph& graph, ProfileDb& db,
                                  const TargetProfileOptions& options) {
  CudaProfileOptions p;
  p.kernels.arch = options_.arch;
  if (!options_.gpu.empty()) {  // a GPU elsewhere, measured before: what it lacks
    p.remote_device = device(db);
    if (p.kernels.arch.empty()) p.kernels.arch = arch_;
    if (options.progress) *options.progress << "kora profile: for " << p.remote_device << std::endl;
    if (is_cuda_unmeasured_device(p.remote_device)) p.remote_device.clear();
  } else if (p.kernels.arch.empty()) {
    std::string why;
    const auto gpu = CudaDevice::open(0, &why);
    p.kernels.arch = gpu ? gpu->arch() : "sm_80";
  }
  p.only = options.only;
  p.kernels.candidates = options.candidates;
  p.kernels.partition = options.partition;
  p.kernels.progress = options.progress;
  p.kernels.job_dir = job_dir(db, options.model_path, p.kernels.arch);
  p.elsewhere = !options_.gpu.empty();
  p.run_worker = options_.run_worker && !p.elsewhere;
  p.kernels.max_schedules = options_.schedules;
  p.tune_ms = options_.tune_ms;
  p.kernels.tf32 = options_.tf32;
  const CudaProfileSummary s = profile_model_cuda(graph, db, p);
  // A round of measure on demand for a GPU elsewhere: what to do with its job.
  if (options.only && !s.merged && !s.next.empty() && options.progress)
    *options.progress << "kora profile: " << s.kernels.job_kernels
                      << " implementations in the job: " << s.next << std::endl;
  ProfileReport r;
  r.device = s.merged ? s.merge.device : p.remote_device;
  r.kernels = s.kernels.kernels;
  r.measured = s.merge.stored + s.tune.stored;
  if (options.only && s.merged) {  // measure on demand counts kernels, not implementations
    r.measured = 0;
    for (uint64_t signature : *options.only) r.measured += db.known(s.merge.device, signature);
  }
  r.from_db = s.kernels.known;
  r.failed = static_cast<int64_t>(s.merge.failures.size() + s.tune.failures.size());
  r.seconds = s.kernels.generate_seconds + s.kernels.compile_seconds;
  r.text = format_cuda_profile_summary(s);
  nlohmann::json j = {{"device", r.device},
                      {"arch", s.kernels.arch},
                      {"kernels", r.kernels},
                      {"supported", s.kernels.supported},
                      {"library", s.kernels.library},
                      {"implementations", s.kernels.implementations},
                      {"from_db", r.from_db},
                      {"job", p.kernels.job_dir},
                      {"job_kernels", s.kernels.job_kernels},
                      {"ran_worker", s.ran_worker},
                      {"merged", s.merged},
                      {"results", s.merge.results},
                      {"stored", s.merge.stored},
                      {"failed", r.failed},
                      {"tuned", s.tuned},
                      {"tune_stored", s.tune.stored},
                      {"next", s.next}};
  r.json = j.dump(2);
  return r;
}

std::string CudaTarget::kernel_note(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c) const {
  return cuda_runs_on_host(graph, dag, c)
             ? "no CUDA implementation, run on the host by the interpreter (copies in and out)"
             : "";
}

std::string CudaTarget::measure_hint() const {
  return "measure them: kora profile MODEL --target cuda, on that GPU or with --gpu here";
}

ArtifactSummary CudaTarget::write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                           const ProfileDb* db, const std::string& device,
                                           const std::string& dir,
                                           const TargetEmitOptions& options) {
  if (arch_.empty() && db) this->device(*db);  // the architecture of that GPU
  CudaArtifactOptions a;
  a.device = device;
  a.arch = arch_;
  a.tf32 = options_.tf32;
  a.progress = options.progress;
  return write_cuda_artifact(graph, plan, db, dir, a);
}

}  // namespace kora
