// Sliding-window geometry shared by convolution and pooling: from input size, kernel,
// strides, dilations, explicit pads or auto_pad, and ceil_mode to output size and the
// pads actually applied.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/op_rules.h"

namespace kora {

struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;    // [begin_0..begin_n, end_0..end_n], resolved from auto_pad
  std::vector<int64_t> output;  // output spatial sizes
};

// Reads kernel_shape (or `kernel` when the attribute is absent), strides, dilations,
// pads, auto_pad and ceil_mode from the node and computes the output spatial sizes of
// `spatial` (the input's spatial sizes).
Window resolve_window(const InferContext& c, const std::vector<int64_t>& spatial,
                      const std::vector<int64_t>& kernel, bool allow_ceil_mode);

}  // namespace kora
