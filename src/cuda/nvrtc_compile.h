// Compiling generated CUDA kernels: CUDA C++ source in, a cubin for one GPU architecture
// out, compiled in-process with NVRTC; no GPU is needed. Cubins are cached by content hash
// (NVRTC version + options + source) in a directory, like the CPU kernel cache
// (src/cpu/compile.h): DIR/KEY.cu (the source, kept for diagnostics), DIR/KEY.cubin
// and, for a source NVRTC rejected, DIR/KEY.failed (its log), so it fails again at once.
// Files are written under temporary names and renamed into place.
// In a kora built without the CUDA toolkit every function here throws kora::Error
// ("kora was built without CUDA").
// Cost: about 35 ms of NVRTC per reduce kernel, less for pointwise ones; a program of
// ~1,300 small kernels took about 25 s per architecture on the project's two-core build
// machine.
#pragma once

#include <string>
#include <vector>

namespace kora {

// Whether this kora was built with the CUDA toolkit (NVRTC, the driver API's types).
bool cuda_built();

struct NvrtcOptions {
  std::string arch = "sm_80";      // a real architecture: sm_80 (A100), sm_90 (H100), ...
  std::vector<std::string> flags;  // more NVRTC options, after the defaults
  std::string cache_dir;           // empty: default_cuda_kernel_cache_dir()
};

struct CubinResult {
  std::string cubin;    // the image, for cuModuleLoadData
  std::string key;      // the content hash, 16 hex digits
  bool cached = false;  // found in the cache: NVRTC did not run
  double seconds = 0;   // compile time (0 when cached)
  std::string log;      // NVRTC's log (warnings), empty when cached
};

// Compiles `source` (or takes it from the cache). Options: -arch=ARCH -std=c++17
// -default-device -diag-suppress=177 (unused values), the toolkit's include directories
// (as found when kora was built) where the source includes <mma.h>, then `flags`. An NVRTC error throws
// kora::Error with its log's first lines and the path of the kept source.
CubinResult compile_cubin(const std::string& source, const NvrtcOptions& options = {});

// "nvrtc 13.0": for cache keys and device fingerprints.
std::string nvrtc_version();

// The architectures this NVRTC can compile for ("sm_80", "sm_90", ...).
std::vector<std::string> nvrtc_architectures();

// $KORA_KERNEL_CACHE/cuda, else the profile database's cache directory + "/kernels/cuda".
std::string default_cuda_kernel_cache_dir();

}  // namespace kora
