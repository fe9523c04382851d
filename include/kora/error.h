// kora::Error: the one exception type kora throws for bad input or unsupported models.
// Its message names the model node (or file, or tensor) and what is wrong, so a user can
// act on it; the command-line tool prints it as one line and exits nonzero.
#pragma once

#include <stdexcept>
#include <string>

namespace kora {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kora
