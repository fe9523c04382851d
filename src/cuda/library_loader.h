// Internal: opening one of NVIDIA's libraries at run time (blas.cc, dnn.cc): an environment
// variable and the usual file names in; the handle of the first that loads out, or nullptr
// with why ("no cuBLAS (each dlerror)"); then its functions, or which one it lacks. The
// library stays loaded for the process.
#pragma once
#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace kora {

inline void* open_first_library(const char* env, std::initializer_list<const char*> names,
                                const std::string& what, std::string* why) {
  std::string tried;
  const char* configured = std::getenv(env);
  const std::vector<const char*> candidates =
      configured && *configured ? std::vector<const char*>{configured} : names;
  for (const char* name : candidates) {
    if (void* lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
  }
  *why = "no " + what + " (" + tried + ")";
  return nullptr;
}

// Sets `f` to `lib`'s function `name`; where it lacks it, *unavailable (if still empty)
// says so ("cuBLAS lacks NAME").
template <class F>
void load_function(void* lib, const char* name, F& f, const std::string& what,
                   std::string* unavailable) {
  f = reinterpret_cast<F>(::dlsym(lib, name));
  if (!f && unavailable->empty()) *unavailable = what + " lacks " + name;
}

// A table of a library's functions (a struct with `std::string unavailable`), filled by
// `load(lib, table)` once the library opens; else `unavailable` says why it did not.
template <class Table, class Load>
Table open_library(const char* env, std::initializer_list<const char*> names,
                   const std::string& what, Load load) {
  Table out;
  if (void* lib = open_first_library(env, names, what, &out.unavailable)) load(lib, out);
  return out;
}

}  // namespace kora
