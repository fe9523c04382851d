// The first stages of profiling a model for a CUDA GPU, which need no GPU: every distinct
// candidate kernel (as kora profile enumerates them: same partition, same candidate
// options, one per canonical signature) that the CUDA generator supports is generated with
// each schedule of cuda_schedule_space and compiled by NVRTC into cubins for one
// architecture, many kernels per program (a program NVRTC rejects is compiled again kernel
// by kernel, so one bad kernel fails alone). The cubins land in the CUDA kernel cache,
// where measuring on a GPU (to come: a worker linked only against CUDA) finds them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/partition.h"
#include "kora/primitive.h"

namespace kora {

struct CudaKernelsOptions {
  std::string arch = "sm_80";
  CandidateOptions candidates;
  PartitionOptions partition;
  int kernels_per_program = 64;
  int threads = 0;                   // NVRTC compilations at once; 0: the machine's cores
  std::string cache_dir;             // empty: default_cuda_kernel_cache_dir()
  std::ostream* progress = nullptr;  // a line per stage
};

struct CudaKernelsSummary {
  std::string arch;
  int64_t kernels = 0;          // distinct candidate kernels (signatures)
  int64_t supported = 0;        // of them, generated for CUDA
  int64_t implementations = 0;  // supported kernels x schedules
  int64_t launches = 0;         // __global__ functions of the implementations
  int64_t programs = 0;         // NVRTC programs
  int64_t cached = 0;           // of them, found in the cache
  double generate_seconds = 0, compile_seconds = 0;
  std::vector<std::string> failures;  // "SIGNATURE schedule: NVRTC's message"
};

CudaKernelsSummary compile_cuda_kernels(const PrimGraph& graph,
                                        const CudaKernelsOptions& options = {});

std::string format_cuda_kernels_summary(const CudaKernelsSummary& summary);

}  // namespace kora
