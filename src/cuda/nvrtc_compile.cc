// In-process NVRTC compilation of generated CUDA kernels (src/cuda/nvrtc_compile.h):
// source and architecture in, a cubin out, cached by FNV-1a (base/fnv_hash.h) over the
// NVRTC version, the options and the source. Cache layout: DIR/KEY.cu, DIR/KEY.cubin,
// DIR/KEY.failed (NVRTC's log of a rejected source). Without the CUDA toolkit at build
// time (KORA_HAVE_CUDA undefined) every entry point throws "kora was built without CUDA".
#include "cuda/nvrtc_compile.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/fnv_hash.h"
#include "base/read_file.h"
#include "cpu/compile.h"
#include "kora/error.h"

#ifdef KORA_HAVE_CUDA
#include <nvrtc.h>
#endif

namespace kora {
namespace {

namespace fs = std::filesystem;

#ifndef KORA_HAVE_CUDA
[[noreturn]] void built_without_cuda(const char* what) {
  throw Error(std::string("kora was built without CUDA (no CUDA toolkit at configure time, or "
                          "-DKORA_CUDA=OFF): cannot ") +
              what);
}
#endif

#ifdef KORA_HAVE_CUDA

// Writes `data` to `path` through a temporary file renamed into place.
void write_file_atomic(const fs::path& path, const std::string& data) {
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out.flush()) throw Error("cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, path);
}

std::string first_lines(const std::string& text, int lines) {
  std::istringstream in(text);
  std::string out, line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += (i ? "\n" : "") + line;
  return out;
}

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string(what) + ": " + nvrtcGetErrorString(r));
}
#endif

}  // namespace

bool cuda_built() {
#ifdef KORA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string nvrtc_version() {
#ifdef KORA_HAVE_CUDA
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
#else
  built_without_cuda("run NVRTC");
#endif
}

std::vector<std::string> nvrtc_architectures() {
#ifdef KORA_HAVE_CUDA
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(n);
  check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  std::vector<std::string> names;
  for (int a : archs) names.push_back("sm_" + std::to_string(a));
  return names;
#else
  built_without_cuda("run NVRTC");
#endif
}

std::string default_cuda_kernel_cache_dir() {
  return (fs::path(default_kernel_cache_dir()) / "cuda").string();
}

CubinResult compile_cubin(const std::string& source, const NvrtcOptions& options) {
#ifndef KORA_HAVE_CUDA
  (void)source, (void)options;
  built_without_cuda("compile CUDA kernels");
#else
  // 177: a generated value left unused by one schedule (the compiler drops it).
  std::vector<std::string> opts = {"-arch=" + options.arch, "-std=c++17", "-default-device",
                                   "-diag-suppress=177"};
  if (source.find("#include <mma.h>") != std::string::npos) {  // the toolkit's headers
    std::stringstream dirs(KORA_CUDA_INCLUDE_DIRS);
    for (std::string dir; std::getline(dirs, dir, ';');)
      if (!dir.empty()) opts.push_back("--include-path=" + dir);
  }
  opts.insert(opts.end(), options.flags.begin(), options.flags.end());
  FnvHash hash;
  hash.str(nvrtc_version());
  for (const std::string& o : opts) hash.str(o);
  hash.str(source);
  CubinResult result;
  result.key = hex64(hash.h);
  const fs::path dir =
      options.cache_dir.empty() ? default_cuda_kernel_cache_dir() : options.cache_dir;
  const fs::path cubin = dir / (result.key + ".cubin"), failed = dir / (result.key + ".failed"),
                 kept = dir / (result.key + ".cu");
  if (fs::exists(cubin)) {
    result.cached = true;
    result.cubin = read_file(cubin.string());
    return result;
  }
  if (fs::exists(failed))
    throw Error("NVRTC failed (" + options.arch + ", source kept at " + kept.string() +
                ", failed before):\n" + first_lines(read_file(failed.string()), 12));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the kernel cache '" + dir.string() + "': " + ec.message());
  write_file_atomic(kept, source);

  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program;
  check(nvrtcCreateProgram(&program, source.c_str(), (result.key + ".cu").c_str(), 0, nullptr,
                           nullptr),
        "nvrtcCreateProgram");
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const nvrtcResult status =
      nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (status != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    if (status == NVRTC_ERROR_COMPILATION) write_file_atomic(failed, log);
    throw Error("NVRTC failed (" + options.arch + ", " + nvrtcGetErrorString(status) +
                ", source kept at " + kept.string() + "):\n" + first_lines(log, 12));
  }
  size_t size = 0;
  const nvrtcResult got = nvrtcGetCUBINSize(program, &size);
  if (got == NVRTC_SUCCESS) {
    result.cubin.resize(size);
    nvrtcGetCUBIN(program, result.cubin.data());
  }
  nvrtcDestroyProgram(&program);
  check(got, "nvrtcGetCUBINSize (is the architecture a real one, sm_XX?)");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.log = log;
  write_file_atomic(cubin, result.cubin);
  return result;
#endif
}

}  // namespace kora
