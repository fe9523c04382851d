// The CPU backend's fingerprint (src/cpu/backend.h): /proc/cpuinfo's model
// name, the logical core count, the thread count, the compiler's and the linked oneDNN's
// versions, and the revision of kora's generated code. Measurements are only reused on a
// machine with the same fingerprint.
#include "cpu/backend.h"

#include <oneapi/dnnl/dnnl.h>

#include <fstream>
#include <thread>

#include "cpu/codegen.h"
#include "cpu/compile.h"

namespace kora {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

std::string cpu_fingerprint(int threads, const std::string& compiler, const std::string& library) {
  std::string model = "unknown cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) model = line.substr(begin);
    break;
  }
  return "cpu|" + model + "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|threads=" + std::to_string(threads) + "|" + compiler + "|" + library;
}

std::string cpu_backend_fingerprint(int threads, const std::string& compiler) {
  return cpu_fingerprint(
      threads, compiler_version(compiler.empty() ? CxxCompileOptions{}.compiler : compiler),
      onednn_version() + "|kora-gen " + std::to_string(kCpuCodegenRevision));
}

}  // namespace kora
