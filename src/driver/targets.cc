// The targets kora has (include/kora/target.h's make_target): a name in, its backend out.
#include "cpu/target.h"
#include "cuda/target.h"
#include "kora/error.h"
#include "kora/target.h"

namespace kora {

std::vector<std::string> target_names() { return {"cpu", "cuda"}; }

std::unique_ptr<Target> make_target(const std::string& name, const TargetOptions& options) {
  // Reduced precision is asked for explicitly: an option the target would ignore is refused.
  if (name == "cpu" && options.tf32)
    throw Error("--tf32 is CUDA library math; on the cpu target use --bf16");
  if (name == "cuda" && options.bf16)
    throw Error("--bf16 is for the cpu target; on cuda use --tf32");
  if (name == "cpu" && options.horizontal)
    throw Error(
        "--horizontal fuses CUDA launches; the cpu target runs branches side by side "
        "with --schedule parallel");
  if (name == "cpu") return std::make_unique<CpuTarget>(options);
  if (name == "cuda") return std::make_unique<CudaTarget>(options);
  throw Error("unknown target '" + name + "' (known: cpu, cuda)");
}

}  // namespace kora
