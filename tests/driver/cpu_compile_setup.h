// What the driver tests that compile with the real cpu target share: a temporary
// directory, the kernel cache inside it (KORA_KERNEL_CACHE, set while the setup lives),
// the cpu target at one thread, and compile options writing to a database there.
#pragma once

#include <cstdlib>
#include <memory>

#include "emit/small_artifacts.h"
#include "kora/compile.h"

namespace kora_test {

struct CpuCompileSetup {
  TempDir dir;
  std::unique_ptr<kora::Target> target;
  kora::CompileOptions options;

  CpuCompileSetup() {
    ::setenv("KORA_KERNEL_CACHE", dir.file("kernels").c_str(), 1);
    kora::TargetOptions t;
    t.threads = 1;
    target = kora::make_target("cpu", t);
    options.db = dir.file("profiles.db");
  }
  ~CpuCompileSetup() { ::unsetenv("KORA_KERNEL_CACHE"); }
  CpuCompileSetup(const CpuCompileSetup&) = delete;
  CpuCompileSetup& operator=(const CpuCompileSetup&) = delete;
};

}  // namespace kora_test
