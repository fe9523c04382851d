// A tensor's size in bytes as the primitive graph declares it (dtype and shape): what the
// cost models count a kernel's traffic and weights in (lower_bound.cc, context_cost.cc).
#pragma once

#include <cstdint>
#include <string>

#include "kora/primitive.h"

namespace kora {

inline double tensor_bytes(const PrimGraph& graph, const std::string& tensor) {
  const ValueInfo& v = graph.value(tensor);
  double n = 1;
  for (int64_t d : v.shape) n *= static_cast<double>(d);
  return n * static_cast<double>(dtype_size(v.dtype));
}

}  // namespace kora
