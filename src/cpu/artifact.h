// The CPU target's artifact (kora compile --target cpu): a primitive graph, the
// orchestration's chosen kernels and the profile database in; an artifact directory out
// (src/emit/emit_artifact.cc's layout, target "cpu", kernels in kernels_N.so) that the
// runtime runs without the compiler, the solver or the database. Each kernel's
// implementation is its fastest working schedule in the database ("gen:..." generated code,
// "onednn" or "onednn:native", "interpreter"); a kernel the database lacks takes oneDNN
// where it fits, else generated code's default schedule, else the interpreter. A tensor
// between two oneDNN convolutions is stored in their native blocked layout (manifest
// "layout") instead of being reordered twice.
#pragma once

#include <ostream>
#include <string>

#include "cpu/compile.h"
#include "kora/compile.h"
#include "kora/orchestration.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

struct ArtifactOptions {
  std::string device;  // the fingerprint whose measurements choose implementations
  int threads = 0;     // recorded for the runtime; 0: all cores
  bool bf16 = false;   // oneDNN kernels compute in bf16 (their schedules end in kBf16)
  CxxCompileOptions compile;
  int kernels_per_unit = 24;         // generated kernels per library (fewer to use all cores)
  std::ostream* progress = nullptr;  // progress lines when set
  bool terminal = false;
  // Implementations that failed their check against the interpreter (CpuTarget::
  // check_kernels): not emitted. A failed "onednn" rejects every oneDNN schedule.
  const KernelCheck* rejected = nullptr;
};

// Throws kora::Error (nothing left at `dir`) when a kernel cannot be built or the
// directory cannot be written; `dir` may exist only as an earlier artifact or empty.
ArtifactSummary write_cpu_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                   const ProfileDb* db, const std::string& dir,
                                   const ArtifactOptions& options);

}  // namespace kora
