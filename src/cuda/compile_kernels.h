// The first stages of profiling a model for a CUDA GPU, which need no GPU: every distinct
// candidate kernel (as kora profile enumerates them: same partition, same candidate
// options, one per canonical signature) that the CUDA generator supports is generated with
// each schedule of cuda_schedule_space and compiled by NVRTC into cubins for one
// architecture, many kernels per program (a program NVRTC rejects is compiled again kernel
// by kernel, so one bad kernel fails alone). The cubins land in the CUDA kernel cache,
// and, when asked, into a job directory for the measuring worker (kora-cuda-worker) with
// each implementation's launches and buffers. Library kernels (src/cuda/library_plan.h)
// go into the job once per library schedule. Other candidates that fuse a linear
// primitive with its neighbours are not computed for CUDA: on MobileNetV2 (before the
// fused convolutions) 1,070 distinct kernels, 163 generated, 31 library calls, 876 left.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cuda/job.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/partition.h"
#include "kora/primitive.h"

namespace kora {

struct CudaKernelsOptions {
  std::string arch = "sm_80";
  CandidateOptions candidates;
  PartitionOptions partition;
  int kernels_per_program = 64;
  // Schedules per generated kernel: the first N of cuda_schedule_space (the default first);
  // 0: all. Large models have thousands of kernels with up to 23 schedules each. (For
  // profile_model_cuda, -1: the default schedules, then all of the kernels that matter.)
  int max_schedules = 0;
  int first_schedule = 0;  // schedules before this index are left out (already measured)
  bool library = true;     // false: cuBLAS / cuDNN kernels are left out
  // cuBLAS and cuDNN with TF32 tensor-core math (about 1e-3 relative error) instead of full
  // float32: an explicit option, measured and stored as another device fingerprint.
  bool tf32 = false;
  int threads = 0;                   // NVRTC compilations at once; 0: the machine's cores
  std::string cache_dir;             // empty: default_cuda_kernel_cache_dir()
  std::ostream* progress = nullptr;  // a line per stage
  // When set: the job directory (src/cuda/job.h) to write, for measuring every
  // compiled implementation on a GPU, with these measuring options.
  std::string job_dir;
  MeasureOptions measure = CudaJob().measure;
  // When set: generated kernels (signatures) to leave out, e.g. those the database
  // already holds; and library schedules (cuBLAS, cuBLASLt, cuDNN calls) to leave out,
  // schedule by schedule, so that schedules a library gains later (cuBLASLt's) are
  // measured for kernels measured before.
  std::function<bool(uint64_t signature)> known;
  std::function<bool(uint64_t signature, const std::string& schedule)> measured;
};

// An implementation NVRTC rejected.
struct CudaKernelFailure {
  uint64_t signature = 0;
  std::string schedule, error;
};

struct CudaKernelsSummary {
  std::string arch;
  int64_t kernels = 0;          // distinct candidate kernels (signatures)
  int64_t supported = 0;        // of them, generated for CUDA
  int64_t library = 0;          // of them, a cuBLAS or cuDNN call (src/cuda/library_plan.h)
  int64_t implementations = 0;  // supported kernels x schedules
  int64_t launches = 0;         // __global__ functions of the implementations
  int64_t programs = 0;         // NVRTC programs
  int64_t cached = 0;           // of them, found in the cache
  double generate_seconds = 0, compile_seconds = 0;
  std::vector<CudaKernelFailure> failures;
  int64_t job_kernels = 0;  // implementations in the job written (job_dir)
  int64_t known = 0;        // distinct kernels left out (`known`, or every schedule `measured`)
};

CudaKernelsSummary compile_cuda_kernels(const PrimGraph& graph,
                                        const CudaKernelsOptions& options = {});

std::string format_cuda_kernels_summary(const CudaKernelsSummary& summary);

// Whether the cuda target computes this candidate: generated (cuda_codegen_supports) or a
// library call (cuda_gemm_plan, cuda_conv_plan).
bool cuda_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// A lone primitive the GPU cannot compute (no generated kernel, no library call: TopK,
// GatherElements, a convolution with asymmetric padding, ...), which a CUDA artifact runs on the
// host with the reference interpreter (copies in and out around it): so that every model
// kora interprets compiles for cuda, the slow step named in the compile summary.
bool cuda_runs_on_host(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// `options` with the cuda target's capability filter (cuda_supports, cuda_runs_on_host),
// for orchestrating for CUDA: kernels of several primitives the target cannot compute are
// not candidates. With `tf32`, horizontal pairs may hold a GEMM too (kora's tensor-core GEMM
// beside another part: cuda_mma_pair_supports; CandidateOptions::horizontal_linear).
// `graph` must outlive the options.
CandidateOptions cuda_candidate_options(const PrimGraph& graph, CandidateOptions options,
                                        bool tf32 = false);
// The cost, in ms, of a kernel every implementation of which failed on the GPU
// (ProfileDbCost::penalize_failed): chosen only where nothing else computes its primitives.
constexpr double kCudaFailedKernelMs = 1000;

// Calls `fn` once per distinct candidate kernel (unique_candidates() of
// include/kora/orchestration.h: the first of each signature) that a
// library (cuda_gemm_plan, cuda_conv_plan) computes, or the CUDA generator supports and
// `known` does not name, in the order compile_cuda_kernels takes them; returns the number
// of distinct kernels.
int64_t for_each_cuda_candidate(
    const PrimGraph& graph, const CudaKernelsOptions& options,
    const std::function<void(const KernelDag& sub, const Candidate& c)>& fn);

}  // namespace kora
