// Resolved parameters of the data-movement operators whose geometry the shape rules and
// the constant folder both need.
#pragma once

#include <vector>

#include "frontend/op_rules.h"

namespace kora {

// Slice, per input dimension: the first index read, the step, and the output size.
struct SliceAxis {
  int64_t start = 0, step = 1, size = 0;
};
std::vector<SliceAxis> resolve_slice(const InferContext& c);

// Pad: begin and end padding per input dimension (negative values crop).
struct PadAmounts {
  std::vector<int64_t> begin, end;
};
PadAmounts resolve_pads(const InferContext& c);

}  // namespace kora
