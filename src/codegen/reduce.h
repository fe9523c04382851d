// Internal: the arithmetic of a reduce member in generated code, shared by the CPU and
// CUDA backends. A reduce primitive in; its accumulator type, initial value (the identity
// of the combination), the statement that folds a value into an accumulator and the
// expression of the result out. As in the interpreter: float32 accumulates in double,
// integers and bools in int64 with wrapping sums and products; max and min propagate NaN;
// mean divides by the reduced count (truncating for integers).
#pragma once

#include <cstdint>
#include <string>

#include "kora/primitive.h"

namespace kora::codegen {

struct ReduceCode {
  ReduceOp op = ReduceOp::kSum;
  bool floating = false;  // a float32 input
  DType out = DType::kFloat32;
  int64_t count = 1;     // reduced elements per output element
  std::string acc_type;  // "double" or "int64_t"
  std::string init;      // the identity: 0, 1, -inf or the dtype's lowest, ...
  // `a = a (op) v;` as a statement; v is converted to the accumulator type.
  std::string update(const std::string& a, const std::string& v) const;
  // The output element of the accumulator `a` (mean divided, converted to the dtype).
  std::string result(const std::string& a) const;
};

ReduceCode reduce_code(const PrimGraph& graph, const Primitive& p, const ReduceAttrs& r);

}  // namespace kora::codegen
