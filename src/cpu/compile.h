// Compiling generated kernels on the CPU: C++ source in, a loaded shared library out.
// Libraries are cached by content hash (compiler version + flags + source) in a directory
// under the user's cache, so nothing compiles twice, across runs too. A library is built
// under a temporary name and renamed into place, so concurrent kora processes and a
// killed compile never leave a broken library in the cache. A source the compiler
// rejected is remembered too (KEY.failed holds its output) and fails again at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/shared_library.h"

namespace kora {

struct CxxCompileOptions {
  std::string compiler = "g++";
  std::vector<std::string> flags;  // empty: default_compile_flags(compiler)
  std::string cache_dir;           // empty: default_kernel_cache_dir()
};

// The flags kernels are compiled with by default. Both: -march=native -fPIC -shared
// -std=c++17 -fopenmp, and no FP traps and no errno from math functions (the same values,
// but loops with conditional expressions and math calls vectorize: softmax's exp 4x
// faster). GCC: -O2 with -O3's vectorizer cost model and loop peeling, which kept the
// generated kernels as fast as at -O3 (BERT) or faster (MobileNetV2) in 0.8x the compile
// time (docs/benchmarks.md); clang (its name or version line says so): -O3.
std::vector<std::string> default_compile_flags(const std::string& compiler);

struct CompileResult {
  std::shared_ptr<SharedLibrary> library;
  bool cached = false;  // found in the cache: no compiler ran
  double seconds = 0;   // compile time (0 when cached)
  std::string key;      // the content hash, 16 hex digits
};

// Compiles `source` (or takes it from the cache) and loads it. A compile error throws
// kora::Error with the compiler's first diagnostic lines and the path of the kept source.
CompileResult compile_shared(const std::string& source, const CxxCompileOptions& options = {});

// "g++ 12.2.0": the compiler's name and version (from --version), for fingerprints and
// cache keys; throws kora::Error when the compiler cannot be run.
std::string compiler_version(const std::string& compiler);

// $KORA_KERNEL_CACHE, else the profile database's cache directory + "/kernels".
std::string default_kernel_cache_dir();

}  // namespace kora
