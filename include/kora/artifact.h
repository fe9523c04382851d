// Emitting an artifact (`kora compile`): a primitive graph, the orchestration's chosen
// kernels and the profile database in; a directory out that the runtime
// (include/kora/runtime.h) runs without the compiler, the solver or the database:
//   manifest.json   kernels in execution order with the tensors they read and write,
//                   every tensor's dtype, shape and storage (input, weights offset,
//                   arena offset, output), inputs and outputs, strategy, predicted cost;
//   kernels_N.so    the generated kernels (a few libraries, compiled in parallel);
//   weights.bin     every constant a kernel reads, 64-byte aligned.
// Each kernel's implementation is its fastest working schedule in the database
// ("gen:..." generated code, "onednn" or "onednn:native", "interpreter"); a kernel the
// database lacks takes oneDNN where it fits, else generated code's default schedule, else
// the interpreter. Intermediate tensors share one arena, placed by lifetime
// (src/emit/memory_plan.h); a tensor between two oneDNN convolutions is stored in their
// native blocked layout (manifest "layout") instead of being reordered twice. The directory is
// written under a temporary name and renamed into place: a failed compile leaves no half
// artifact, and an existing artifact at the path is replaced only on success.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cpu/compile.h"
#include "kora/orchestration.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

struct ArtifactOptions {
  std::string device;  // the fingerprint whose measurements choose implementations
  int threads = 0;     // recorded for the runtime; 0: all cores
  CompileOptions compile;
  int kernels_per_unit = 24;         // generated kernels per library (fewer to use all cores)
  std::ostream* progress = nullptr;  // progress lines when set
  bool terminal = false;
};

struct ArtifactSummary {
  int64_t kernels = 0, generated = 0, onednn = 0, interpreter = 0;
  int64_t cublas = 0, cudnn = 0;  // target cuda: library calls (generated: CUDA kernels)
  int64_t libraries = 0;
  double predicted_ms = 0;
  int64_t arena_bytes = 0, intermediate_bytes = 0, weights_bytes = 0;
  int64_t blocked_tensors = 0;  // kept in a blocked layout between oneDNN convolutions
  double generate_seconds = 0, compile_seconds = 0, write_seconds = 0;
};

// Throws kora::Error (nothing left at `dir`) when a kernel cannot be built or the
// directory cannot be written; `dir` may exist only as an earlier artifact or empty.
ArtifactSummary write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                               const ProfileDb* db, const std::string& dir,
                               const ArtifactOptions& options);

}  // namespace kora
