// SHA-256 of bytes and of files, through OpenSSL's libcrypto (EVP API): the digests an
// artifact's manifest records for its weights and kernel libraries, checked by the
// runtime before it reads or maps them. In: bytes or a path. Out: 64 lowercase hex digits.
#pragma once

#include <cstddef>
#include <string>

namespace kora {

std::string sha256_hex(const void* data, size_t bytes);
// Throws kora::Error naming the path when the file cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace kora
