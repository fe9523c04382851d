// The targets kora has (include/kora/target.h's make_target): a name in, its backend out.
#include "cpu/target.h"
#include "cuda/target.h"
#include "kora/error.h"
#include "kora/target.h"

namespace kora {

std::vector<std::string> target_names() { return {"cpu", "cuda"}; }

std::unique_ptr<Target> make_target(const std::string& name, const TargetOptions& options) {
  if (name == "cpu") return std::make_unique<CpuTarget>(options);
  if (name == "cuda") return std::make_unique<CudaTarget>(options);
  throw Error("unknown target '" + name + "' (known: cpu, cuda)");
}

}  // namespace kora
