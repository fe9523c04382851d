// Unique of a constant tensor (its output sizes depend on the values, so kora computes it
// at compile time). In: the tensor, the axis (or none: the flattened elements) and
// whether to sort. Out: the four ONNX outputs.
#pragma once

#include <optional>

#include "kora/tensor.h"

namespace kora {

struct UniqueResult {
  Tensor y;        // the distinct elements, or slices along the axis
  Tensor indices;  // int64 [G]: where each first occurs in x
  Tensor inverse;  // int64 [items]: which of y each element or slice of x is
  Tensor counts;   // int64 [G]: how often each occurs
};

// Sorted: ascending (slices lexicographically, NaN last); else in order of first occurrence.
UniqueResult unique_of(const Tensor& x, std::optional<int64_t> axis, bool sorted);

}  // namespace kora
