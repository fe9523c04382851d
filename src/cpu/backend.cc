// The CPU backend's fingerprint (include/kora/cpu_backend.h): the machine, the thread
// count, `g++ --version` and the linked oneDNN's version.
#include <oneapi/dnnl/dnnl.h>

#include "kora/cpu_backend.h"
#include "kora/cpu_compile.h"
#include "kora/profile_db.h"

namespace kora {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

std::string cpu_backend_fingerprint(int threads) {
  return cpu_fingerprint(threads, compiler_version(CompileOptions{}.compiler), onednn_version());
}

}  // namespace kora
