// SHA-256 through OpenSSL's EVP digest API (src/runtime/sha256.h).
#include "runtime/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "kora/error.h"

namespace kora {
namespace {

struct ContextFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Context = std::unique_ptr<EVP_MD_CTX, ContextFree>;

Context start() {
  Context c(EVP_MD_CTX_new());
  if (!c || EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr) != 1)
    throw Error("SHA-256: libcrypto could not start a digest");
  return c;
}

std::string finish(EVP_MD_CTX* c) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(c, digest, &n) != 1) throw Error("SHA-256: libcrypto failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string sha256_hex(const void* data, size_t bytes) {
  Context c = start();
  if (EVP_DigestUpdate(c.get(), data, bytes) != 1) throw Error("SHA-256: libcrypto failed");
  return finish(c.get());
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  Context c = start();
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0 && EVP_DigestUpdate(c.get(), buffer.data(), in.gcount()) != 1)
      throw Error("SHA-256: libcrypto failed");
  }
  if (in.bad()) throw Error("cannot read '" + path + "'");
  return finish(c.get());
}

}  // namespace kora
