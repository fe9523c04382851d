// Internal: a whole file's bytes. Header-only, so the CUDA measuring worker (which links
// nothing of kora_core) uses it too. Throws kora::Error naming the path when the file
// cannot be read.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "kora/error.h"

namespace kora {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read (no such file?)");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace kora
