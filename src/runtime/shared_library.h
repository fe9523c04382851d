// A loaded shared library: a path in, a handle whose symbols can be looked up out. The
// CPU backend loads compiled kernels with it, the runtime an artifact's kernel library.
#pragma once

#include <string>

namespace kora {

// A dlopen()ed library (RTLD_NOW | RTLD_LOCAL), closed when destroyed.
class SharedLibrary {
 public:
  explicit SharedLibrary(const std::string& path);  // throws kora::Error naming the path
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // The symbol's address; throws kora::Error when the library does not define it.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* handle_ = nullptr;
};

}  // namespace kora
