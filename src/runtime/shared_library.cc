// dlopen/dlsym behind src/runtime/shared_library.h; errors name the library and dlerror().
#include "runtime/shared_library.h"

#include <dlfcn.h>

#include "kora/error.h"

namespace kora {

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error("cannot load kernel library '" + path + "': " + ::dlerror());
}

SharedLibrary::~SharedLibrary() {
  if (handle_) ::dlclose(handle_);
}

void* SharedLibrary::symbol(const std::string& name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name.c_str());
  if (!p) throw Error("kernel library '" + path_ + "' has no symbol '" + name + "'");
  return p;
}

}  // namespace kora
