// NumPy .npy files <-> kora::Tensor, the input and output format of the kora tools.
#pragma once

#include <string>

#include "kora/tensor.h"

namespace kora {

// Reads a C-ordered, little-endian .npy file (format versions 1 to 3).
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace kora
