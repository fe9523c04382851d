// The target plans this runtime has (src/runtime/plan.h): the manifest's target in, its
// plan out.
#include <omp.h>

#include "kora/error.h"
#include "runtime/cpu_plan.h"
#include "runtime/cuda_plan.h"

namespace kora {

std::unique_ptr<TargetPlan> make_target_plan(const Manifest& manifest, const std::string& dir,
                                             std::byte* weights, int threads,
                                             std::vector<Tensor>& outputs) {
  if (manifest.target == "cpu")
    return std::make_unique<CpuPlan>(manifest, dir, weights, threads, outputs);
  if (manifest.target == "cuda") {
    if (threads > 0) omp_set_num_threads(threads);  // host kernels
    return std::make_unique<CudaPlan>(manifest, dir, weights, outputs);
  }
  throw Error("artifact manifest: target '" + manifest.target + "' is not one this runtime runs");
}

}  // namespace kora
