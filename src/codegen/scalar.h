// Internal: scalars in generated code, shared by the CPU (src/cpu/codegen*.cc) and CUDA
// (src/cuda/codegen*.cc) backends. A dtype in, its C type and literals out; an elementwise
// primitive with its operands' C expressions in, the C expression of its result out. The
// expressions call helpers named kora_* (kora_wadd, kora_idiv, kora_max, kora_exp, ...):
// scalar_helpers_text() defines the backend-neutral ones, each backend's prelude the math
// functions (kora_exp, kora_log, ... for float and double) and KORA_FN, KORA_INF, KORA_NAN,
// the fixed-width integer types and their limits.
#pragma once

#include <string>
#include <vector>

#include "kora/primitive.h"

namespace kora::codegen {

// float32, int64, int32, bool; with `narrow` (the CPU backend) also float64 and the 8- and
// 16-bit integers (quantized models).
bool dtype_supported(DType t, bool narrow = false);
const char* ctype(DType t);              // "float", "double", "int64_t", ..., "uint8_t"
std::string literal(double v, DType t);  // `v` converted to dtype t as set_element() does
// Elementwise primitive `p` as a C expression of its output dtype; args[i] is the C
// expression of input i (in that input's dtype). Throws kora::Error when not generated.
// `row_divisor`: p divides by a value that is the same along its last dim (a broadcast of a
// row's sum or norm: softmax, layer norm), which float32 then multiplies by its reciprocal,
// computed once per row where the loop runs along that dim (within 1.5 ulp of the
// quotient; a vector division has a tenth of a multiply's throughput: 17% of a softmax).
std::string elementwise_expr(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e,
                             const std::vector<std::string>& args, bool row_divisor = false);
bool elementwise_supported(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e,
                           bool narrow = false);
// The kora_* helpers that need no math library: integer arithmetic with the interpreter's
// wrapping and rounding, NaN-propagating max/min, sigmoid, softplus, sign, saturating
// conversion, index clamping and reflection. Each is declared KORA_FN (the backend's
// "static inline" or "__device__ __forceinline__").
std::string scalar_helpers_text();

}  // namespace kora::codegen
