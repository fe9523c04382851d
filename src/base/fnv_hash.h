// Internal: a 64-bit FNV-1a hash built up from bytes, integers and strings. Signatures
// (src/candidates/signature.cc) and the kernel cache's content keys (src/cpu/compile.cc)
// use it; both need a hash that is stable across runs and machines, which std::hash is not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kora {

struct FnvHash {
  uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v) { bytes(&v, sizeof v); }
  // Length first, so ("ab", "c") and ("a", "bc") differ.
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  void ints(const std::vector<int64_t>& v) {
    u64(v.size());
    for (int64_t x : v) i64(x);
  }
};

// A hash (or signature) as 16 hex digits, as kora prints and stores them.
inline std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace kora
