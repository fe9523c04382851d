// Internal: compiling many generated CUDA kernels with NVRTC (src/cuda/compile_kernels.cc
// for measuring jobs, src/cuda/artifact.cc for artifacts). Kernel sources in, `per` of them
// to a program (the prelude once in front), programs compiled in parallel; a program NVRTC
// rejects is compiled again kernel by kernel, so one bad kernel fails alone. Out: per
// kernel the program that holds it (its cubin is DIR/KEY.cubin in the cache) or its error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/nvrtc_compile.h"

namespace kora {

struct ProgramBuild {
  std::vector<std::string> keys;    // per program: its cache key (cubin: CACHE/KEY.cubin)
  std::vector<int> program;         // per kernel: index into keys, -1 when it failed
  std::vector<std::string> errors;  // per kernel: NVRTC's first line when it failed
  int64_t attempted = 0;            // programs compiled as a whole (before any split)
  int64_t cached = 0;               // of them, found in the cache
};

ProgramBuild build_programs(const std::vector<std::string>& sources, const NvrtcOptions& nvrtc,
                            size_t per, int threads);

// NVRTC's cache directory of `nvrtc` (its cache_dir, else the default).
std::string cubin_cache_dir(const NvrtcOptions& nvrtc);

}  // namespace kora
