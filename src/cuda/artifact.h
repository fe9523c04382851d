// Emitting a CUDA artifact (`kora compile --target cuda`): a primitive graph, an
// orchestration chosen with the GPU's measured costs and the profile database in; an
// artifact directory out (src/emit/emit_artifact.cc's layout, target "cuda"):
//   manifest.json   kernels in execution order, each a generated kernel's launches (grid,
//                   block, function in a cubin) or a cuBLAS GEMM / cuDNN convolution call,
//                   with the tensors it reads and writes and their storage;
//   kernels_N.cubin the generated kernels, compiled by NVRTC for `arch`;
//   weights.bin     every constant a kernel reads.
// Each kernel takes its fastest working schedule for the GPU fingerprint `device` in the
// database ("cublas", "cublaslt:I", "cudnn:ALGO", a CudaSchedule key); one the database lacks
// takes cuBLAS (cuBLASLt's first choice for a fused GEMM), cuDNN algorithm 0 (1 for a fused
// convolution: the one algorithm that fuses any epilogue), else the generated default
// schedule. The manifest's kernels of impl "cuda" hold the CudaJobKernel
// (src/cuda/kernel_spec.h: launches, or the GEMM / convolution call). A lone primitive the
// GPU cannot compute (cuda_runs_on_host: TopK, GatherElements, a convolution with
// asymmetric padding, ...) is a kernel of impl "interpreter", schedule "host", carrying its
// graph as the CPU's library kernels do, so every model kora interprets compiles for cuda.
// Any other kernel the target cannot compute, or whose every implementation failed, throws
// kora::Error naming it. Manifest version 3: target "cuda" and `arch`. No GPU is needed
// to write one; the runtime (include/kora/runtime.h) runs it on a GPU of `arch`.
#pragma once

#include <ostream>
#include <string>

#include "kora/compile.h"
#include "kora/orchestration.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

struct CudaArtifactOptions {
  std::string device;  // the GPU fingerprint whose measurements choose implementations
  std::string arch = "sm_90";
  std::string cache_dir;  // NVRTC's cache; empty: default_cuda_kernel_cache_dir()
  int kernels_per_program = 32;
  bool tf32 = false;  // cuBLAS / cuDNN calls with TF32 math (`device` must be measured so)
  std::ostream* progress = nullptr;
};

ArtifactSummary write_cuda_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                    const ProfileDb* db, const std::string& dir,
                                    const CudaArtifactOptions& options);

}  // namespace kora
