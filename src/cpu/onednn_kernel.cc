// oneDNN library kernels (include/kora/cpu_library.h): not implemented yet; nothing is
// accepted, so callers fall back to generated or interpreter kernels.
#include "kora/cpu_library.h"
#include "kora/error.h"

namespace kora {

bool onednn_supports(const PrimGraph&, const KernelDag&, const Candidate&) { return false; }

std::unique_ptr<CpuLibraryKernel> make_onednn_kernel(const PrimGraph&, const KernelDag&,
                                                     const Candidate&) {
  throw Error("oneDNN kernels are not implemented yet");
}

}  // namespace kora
