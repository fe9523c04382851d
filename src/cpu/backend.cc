// The CPU backend's fingerprint (src/cpu/backend.h): /proc/cpuinfo's model
// name, CPU family and model number and ISA extensions, the logical core count, the thread count,
// the compiler's and the linked oneDNN's versions, and the revision of kora's generated code.
// Measurements are only reused on a machine with the same fingerprint.
#include "cpu/backend.h"

#include <oneapi/dnnl/dnnl.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "cpu/codegen.h"
#include "cpu/compile.h"

namespace kora {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

bool onednn_isa_has(unsigned isa) {
  return (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & isa) == isa;
}

std::string onednn_bf16_missing() {
  if (onednn_isa_has(dnnl_cpu_isa_avx512_core)) return "";
  return onednn_version() + " has bfloat16 convolutions and matmuls on CPUs with AVX-512 only; " +
         "on this one (" + (onednn_isa_has(dnnl_cpu_isa_avx2) ? "AVX2" : "no AVX2") +
         ") it has only its reference implementation, many times slower than float32";
}

std::string cpu_identity(const std::string& cpuinfo) {
  // The ISA extensions that kora's generated code (-march=native) and oneDNN's kernels
  // choose between.
  static const char* const kIsa[] = {"avx",      "avx2",        "fma",         "f16c",
                                     "avx_vnni", "avx512f",     "avx512bw",    "avx512vl",
                                     "avx512dq", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                                     "amx_tile", "amx_bf16",    "amx_int8"};
  std::string model = "unknown cpu", family = "?", number = "?", flags;
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) break;  // the first processor's block
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    const std::string value = begin == std::string::npos ? "" : line.substr(begin);
    if (key == "model name") model = value;
    if (key == "cpu family") family = value;
    if (key == "model") number = value;
    if (key == "flags") flags = " " + value + " ";
  }
  std::string isa;
  for (const char* f : kIsa)
    if (flags.find(" " + std::string(f) + " ") != std::string::npos)
      isa += (isa.empty() ? "" : ",") + std::string(f);
  return model + "|family " + family + " model " + number + "|" + (isa.empty() ? "no avx" : isa);
}

std::string cpu_fingerprint(int threads, const std::string& compiler, const std::string& library) {
  std::ifstream file("/proc/cpuinfo");
  std::ostringstream cpuinfo;
  cpuinfo << file.rdbuf();
  return "cpu|" + cpu_identity(cpuinfo.str()) +
         "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|threads=" + std::to_string(threads) + "|" + compiler + "|" + library;
}

std::string cpu_backend_fingerprint(int threads, const std::string& compiler, bool bf16) {
  return cpu_fingerprint(
             threads, compiler_version(compiler.empty() ? CxxCompileOptions{}.compiler : compiler),
             onednn_version() + "|kora-measure " + std::to_string(kCpuMeasureRevision) +
                 "|kora-gen " + std::to_string(kCpuCodegenRevision) +
                 (bf16 ? "|kora-bf16 " + std::to_string(kCpuBf16Revision) : "")) +
         (bf16 ? " bf16" : "");
}

}  // namespace kora
