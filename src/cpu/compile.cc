// Kernel compilation with a content-hash cache (src/cpu/compile.h). The key is
// FNV-1a (base/fnv_hash.h) over the compiler's version line, the flags and the source. Cache
// layout: DIR/KEY.cc (the source, kept for diagnostics) and DIR/KEY.so. The compiler's diagnostics
// go to DIR/KEY.log.
#include "cpu/compile.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "base/fnv_hash.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its exit status and leaves stdout+stderr in `output`.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw Error("cannot run '" + command + "'");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string first_lines(const std::string& text, int lines) {
  std::istringstream in(text);
  std::string out, line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += (i ? "\n" : "") + line;
  return out;
}

}  // namespace

std::string compiler_version(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(compiler); it != known.end()) return it->second;
  std::string output;
  if (run_command(quote(compiler) + " -dumpfullversion -dumpversion", output) != 0)
    throw Error("cannot run the compiler '" + compiler + "': " + first_lines(output, 2));
  std::string version = first_lines(output, 1);
  const std::string name = fs::path(compiler).filename().string();
  return known[compiler] = name + " " + version;
}

std::vector<std::string> default_compile_flags(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, bool> clang;
  bool is_clang;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = clang.find(compiler);
    if (it == clang.end()) {
      std::string output;
      run_command(quote(compiler) + " --version", output);
      const std::string name = fs::path(compiler).filename().string();
      it = clang
               .emplace(compiler, name.find("clang") != std::string::npos ||
                                      first_lines(output, 1).find("clang") != std::string::npos)
               .first;
    }
    is_clang = it->second;
  }
  std::vector<std::string> flags =
      is_clang ? std::vector<std::string>{"-O3"}
               : std::vector<std::string>{"-O2", "-fvect-cost-model=dynamic", "-fpeel-loops"};
  for (const char* f : {"-march=native", "-fPIC", "-shared", "-std=c++17", "-fopenmp",
                        "-fno-trapping-math", "-fno-math-errno"})
    flags.push_back(f);
  return flags;
}

std::string default_kernel_cache_dir() {
  if (const char* p = std::getenv("KORA_KERNEL_CACHE"); p && *p) return p;
  return (fs::path(default_profile_db_path()).parent_path() / "kernels").string();
}

CompileResult compile_shared(const std::string& source, const CxxCompileOptions& options) {
  const fs::path dir = options.cache_dir.empty() ? default_kernel_cache_dir() : options.cache_dir;
  std::string flags;
  for (const std::string& f :
       options.flags.empty() ? default_compile_flags(options.compiler) : options.flags)
    flags += " " + quote(f);
  FnvHash hash;
  hash.str(compiler_version(options.compiler));
  hash.str(flags);
  hash.str(source);
  CompileResult result;
  result.key = hex64(hash.h);
  const fs::path library = dir / (result.key + ".so");
  if (fs::exists(library)) {
    result.cached = true;
    result.library = std::make_shared<SharedLibrary>(library.string());
    return result;
  }
  // A source that failed before fails again at once (the log is its compiler's output).
  const fs::path failed = dir / (result.key + ".failed");
  if (fs::exists(failed)) {
    std::ifstream in(failed);
    std::stringstream log;
    log << in.rdbuf();
    throw Error("compiling kernels failed (" + options.compiler + ", source kept at " +
                (dir / (result.key + ".cc")).string() + ", failed before):\n" +
                first_lines(log.str(), 12));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the kernel cache '" + dir.string() + "': " + ec.message());
  const fs::path src = dir / (result.key + ".cc");
  const std::string tmp_tag = ".tmp" + std::to_string(::getpid());
  {
    const fs::path tmp_src = dir / (result.key + ".cc" + tmp_tag);
    std::ofstream out(tmp_src);
    out << source;
    if (!out.flush()) throw Error("cannot write '" + tmp_src.string() + "'");
    out.close();
    fs::rename(tmp_src, src);
  }
  const fs::path tmp_lib = dir / (result.key + ".so" + tmp_tag);
  const auto start = std::chrono::steady_clock::now();
  std::string output;
  const int status = run_command(quote(options.compiler) + flags + " " + quote(src.string()) +
                                     " -o " + quote(tmp_lib.string()),
                                 output);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ofstream(dir / (result.key + ".log")) << output;
  if (status != 0) {
    fs::remove(tmp_lib, ec);
    if (status > 0 && status < 128) {  // the compiler rejected it (not killed by a signal)
      const fs::path tmp_failed = dir / (result.key + ".failed" + tmp_tag);
      std::ofstream(tmp_failed) << output;
      fs::rename(tmp_failed, failed, ec);
    }
    throw Error("compiling kernels failed (" + options.compiler + ", source kept at " +
                src.string() + "):\n" + first_lines(output, 12));
  }
  fs::rename(tmp_lib, library);
  result.library = std::make_shared<SharedLibrary>(library.string());
  return result;
}

}  // namespace kora
