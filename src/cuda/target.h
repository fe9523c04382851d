// The CUDA target (include/kora/target.h): kernels generated as CUDA C++ and compiled by
// NVRTC, or cuBLAS/cuBLASLt GEMMs and cuDNN convolutions; measured by the standalone
// worker, on the GPU here or through a job for a GPU elsewhere (src/cuda/profile_cuda.h),
// under the GPU's fingerprint; emitted as cubins and library calls (src/cuda/artifact.h)
// that the runtime's CUDA plan replays as CUDA Graphs (src/runtime/cuda_plan.h). Lone
// primitives the GPU cannot compute run on the host (kernel_note says so).
// Its device (cuda_target_device) is the GPU here, else the database's only CUDA
// fingerprint, or the one --gpu TEXT names. Kernels not measured there cost the h100
// roofline; kernels whose every implementation failed there cost 1 s
// (kCudaFailedKernelMs, ProfileDbCost::penalize_failed), as the cuda target has no
// implementation that always works (the interpreter runs on the host, for lone primitives
// only). With the GPU here kora measures on demand as on the CPU: each round's job holds
// the kernels its plan lacks (TargetProfileOptions::only); for a GPU elsewhere every
// candidate goes into one job.
#pragma once

#include "kora/cost.h"
#include "kora/target.h"

namespace kora {

// What no GPU kora targets (sm_80, sm_90: A100, H100, H200) exceeds, so that no kernel
// measured on one falls below a bound at these peaks: float32 arithmetic at twice the
// H100's (67 TFLOP/s without tensor cores; with `tf32`, twice its dense TF32 tensor-core
// 495), the H200's memory bandwidth (4.8 TB/s), a 50 MiB L2 at 20 TB/s, 1 us a kernel.
MachinePeaks cuda_bound_peaks(bool tf32);

class CudaTarget : public Target {
 public:
  // Throws kora::Error in a kora built without the CUDA toolkit.
  explicit CudaTarget(const TargetOptions& options);
  std::string name() const override { return "cuda"; }
  // The GPU here (options.gpu empty), else the database's GPU containing options.gpu;
  // with options.new_gpu and options.arch, a GPU it holds none of is
  // cuda_unmeasured_device (its first round of measuring).
  std::string device(const ProfileDb& db) override;
  std::string describe() const override;  // "cuda, sm_90" once device() chose the GPU
  CandidateOptions candidates(const PrimGraph& graph, CandidateOptions options) const override;
  std::unique_ptr<CostModel> fallback_cost() const override;
  // Measure on demand: LowerBoundCost at cuda_bound_peaks (above any GPU kora targets), no
  // factor per kind; typical costs from the same peaks and the kinds' typical factors.
  std::unique_ptr<CostModel> lower_bound(ProfileDb& db, const std::string& device) override;
  std::unique_ptr<CostModel> typical_cost(ProfileDb& db, const std::string& device) override;
  // "library" where cuBLAS(Lt) or cuDNN computes the kernel (src/cuda/library_plan.h),
  // else "generated".
  std::string implemented_by(const PrimGraph& graph, const KernelDag& dag,
                             const Candidate& c) const override;
  double failure_penalty_ms() const override;
  // A GPU is here and options.gpu does not name another.
  bool measures_here() const override;
  // options.gpu names a GPU elsewhere: each job holds one round of measure on demand.
  bool measures_elsewhere() const override { return !options_.gpu.empty(); }
  // The results of the job (next to the database, or options.job_dir) brought back from
  // the GPU elsewhere (merge_pending_cuda_results).
  int64_t merge_results(const PrimGraph& graph, ProfileDb& db,
                        const TargetProfileOptions& options) override;
  // Writes the measuring job; runs the worker where a GPU is here (and run_worker), then
  // checks and stores its results. options.gpu: the job is for that GPU, measured before.
  ProfileReport profile(const PrimGraph& graph, ProfileDb& db,
                        const TargetProfileOptions& options) override;
  std::string kernel_note(const PrimGraph& graph, const KernelDag& dag,
                          const Candidate& c) const override;
  std::string measure_hint() const override;
  ArtifactSummary write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                 const ProfileDb* db, const std::string& device,
                                 const std::string& dir, const TargetEmitOptions& options) override;

 private:
  // The measuring job's directory for the GPU of architecture `arch`.
  std::string job_dir(const ProfileDb& db, const std::string& model_path,
                      const std::string& arch) const;

  TargetOptions options_;
  std::string arch_;  // of the GPU device() chose
};

}  // namespace kora
