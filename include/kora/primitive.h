// The primitive IR: the unit of kora's search. Fission (src/fission/) turns the operator
// graph into a PrimGraph; the reference interpreter (src/interpreter/) runs it; later
// stages group primitives into kernels.
//
// Six kinds, each with one output except opaque:
//   elementwise  a scalar function applied per element; every tensor operand has the
//                output's shape exactly (broadcasting is explicit), an operand may also be
//                an immediate scalar;
//   reduce       sum/max/min/prod/mean over a set of axes; the output keeps the input's
//                rank with the reduced axes of size 1;
//   broadcast    expand dims of size 1 to the output's sizes (same rank);
//   layout       data movement only, an index map from output coordinates to input
//                coordinates (transpose, reshape, slice, pad, concat, gather with constant
//                indices, tile, window unfold); maps compose, so a fused kernel can chain
//                them without moving data;
//   linear       batched matmul, or convolution (grouped, depthwise, strided, dilated,
//                zero-padded);
//   opaque       an ONNX operator kept whole (TopK, NonMaxSuppression, ArgMax/ArgMin,
//                GatherElements, Gather with computed indices, MaxPool with an Indices
//                output); it always forms a kernel of its own.
// A PrimGraph holds the primitives in topological order, the type of every tensor and the
// constants; graph outputs keep their ONNX names. prim_flops and prim_bytes_* give each
// primitive's work.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "kora/graph.h"

namespace kora {

enum class PrimKind { kElementwise, kReduce, kBroadcast, kLayout, kLinear, kOpaque };
const char* prim_kind_name(PrimKind kind);

// Scalar functions of elementwise primitives. Float semantics follow C/ONNX; integer Div
// truncates toward zero; kMod takes the divisor's sign (ONNX Mod fmod=0), kFmod the
// dividend's (fmod=1); comparisons and logic produce bool (0/1); kCast converts to the
// output dtype (float to integer truncates); kRound rounds half to even; the bitwise
// operators are defined for integers only.
enum class ScalarOp {
  // one operand
  kIdentity,
  kCast,
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kTanh,
  kErf,
  kSigmoid,
  kRelu,
  kSoftplus,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kSin,
  kCos,
  kNot,
  // two operands
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kMod,
  kFmod,
  kEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kAnd,
  kOr,
  kXor,
  // three operands: operand0 ? operand1 : operand2
  kWhere,
  // Appended here because canonical signatures hash the enum's value.
  // one operand, floating point
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  // integers only: bitwise complement; two operands: bitwise logic and shifts (a shift by
  // 64 or more gives 0; right shifts are logical, as ONNX BitShift is for unsigned types)
  kBitNot,
  kBitAnd,
  kBitOr,
  kBitXor,
  kShiftLeft,
  kShiftRight,
};
constexpr ScalarOp kLastScalarOp = ScalarOp::kShiftRight;
const char* scalar_op_name(ScalarOp op);
int scalar_op_arity(ScalarOp op);
// Comparisons and logic: their result is bool whatever the operands' dtype.
bool scalar_op_is_predicate(ScalarOp op);
// Functions defined for floating operands only (exp, log, sin, ...), and the bitwise
// operators, defined for integers only.
bool scalar_op_is_float_only(ScalarOp op);
bool scalar_op_is_integer_only(ScalarOp op);

// An elementwise operand: input number `input` of the primitive, or (input < 0) the
// immediate scalar `value`.
struct Operand {
  int input = -1;
  double value = 0;
};

struct ElementwiseAttrs {
  ScalarOp op = ScalarOp::kIdentity;
  std::vector<Operand> operands;  // scalar_op_arity(op) of them
};

enum class ReduceOp { kSum, kMax, kMin, kProd, kMean };
const char* reduce_op_name(ReduceOp op);

struct ReduceAttrs {
  ReduceOp op = ReduceOp::kSum;
  std::vector<int64_t> axes;  // sorted, distinct; those dims are 1 in the output
};

struct BroadcastAttrs {};

// Layout index maps. Each maps an output coordinate to the coordinate of one input, or
// to "no element" (then the value is the fill value). `out` and `in` below are
// coordinates of the primitive's output and input.
namespace layout {
// out[d] = in[perm[d]]
struct Transpose {
  std::vector<int64_t> perm;
};
// The same elements in row-major order under another shape.
struct Reshape {};
// in[d] = starts[d] + out[d] * steps[d]  (steps may be negative)
struct Slice {
  std::vector<int64_t> starts, steps;
};
// in[d] = (out[d] - begin[d]) / stride[d] when that is an exact division inside the input
// (begin may be negative: cropping); otherwise by mode: constant -> fill `value`,
// edge -> nearest border element, reflect -> mirrored without repeating the border.
// stride > 1 (constant mode only) inserts stride-1 fill elements between inputs.
enum class PadMode { kConstant, kReflect, kEdge };
struct Pad {
  std::vector<int64_t> begin, stride;
  PadMode mode = PadMode::kConstant;
  double value = 0;
};
// Input k covers out[axis] in [offsets[k], offsets[k] + its size); other dims equal.
struct Concat {
  int64_t axis = 0;
  std::vector<int64_t> offsets;
};
// in[axis] = indices[out[axis]] (indices already in range); other dims equal.
struct Gather {
  int64_t axis = 0;
  std::vector<int64_t> indices;
};
// in[d] = out[d] mod in_shape[d]
struct Tile {};
// Sliding windows for pooling. Input [N, C, S1..Sn]; output [N, C, O1..On, K1..Kn];
// in[2+i] = out[2+i] * strides[i] + out[2+n+i] * dilations[i] - pads_begin[i], and a
// coordinate outside the input reads `fill`. channels_last (a pool read through a layout
// view, src/cpu/layout_view.h): the channel dim last on both sides, input [N, S1..Sn, C],
// output [N, O1..On, K1..Kn, C].
struct Window {
  std::vector<int64_t> strides, dilations, pads_begin;
  double fill = 0;
  bool channels_last = false;
};
}  // namespace layout

using LayoutAttrs = std::variant<layout::Transpose, layout::Reshape, layout::Slice, layout::Pad,
                                 layout::Concat, layout::Gather, layout::Tile, layout::Window>;
const char* layout_name(const LayoutAttrs& attrs);

// Batched matmul: A [..., M, K] x B [..., K, N] -> [..., M, N]; A and B have the same
// rank >= 2 and each batch dim is equal or 1 in one of them (broadcast).
struct MatMulAttrs {};
// Convolution: X [N, C, S1..Sn], W [M, C/group, K1..Kn] -> [N, M, O1..On], zero padding,
// O_i = (S_i + pads_begin_i + pads_end_i - dilation_i*(K_i-1) - 1) / stride_i + 1.
struct ConvAttrs {
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
};
using LinearAttrs = std::variant<MatMulAttrs, ConvAttrs>;

// An ONNX operator kept whole: its node (op type, attributes) with inputs and outputs
// renamed to primitive-graph tensors.
struct OpaqueAttrs {
  Node node;
};

using PrimAttrs = std::variant<ElementwiseAttrs, ReduceAttrs, BroadcastAttrs, LayoutAttrs,
                               LinearAttrs, OpaqueAttrs>;

struct Primitive {
  std::string name;    // unique in the graph
  std::string origin;  // name of the ONNX node it came from
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;  // exactly one unless opaque
  PrimAttrs attrs;

  PrimKind kind() const { return static_cast<PrimKind>(attrs.index()); }
  const std::string& output() const { return outputs.at(0); }
  std::string describe() const;  // "primitive 'x' (reduce sum, from node 'y')"
  std::string op_label() const;  // "reduce sum", "linear grouped conv", "opaque Resize"
};

struct PrimGraph {
  std::string name;
  std::vector<std::string> inputs;          // runtime inputs
  std::vector<std::string> outputs;         // the ONNX graph's output names
  std::vector<Primitive> prims;             // topological order
  std::map<std::string, ValueInfo> values;  // every tensor
  std::map<std::string, Tensor> constants;

  const ValueInfo& value(const std::string& tensor) const;
  const Tensor* constant(const std::string& tensor) const;
};

// Work of one primitive: floating-point operations (multiply-add = 2) and bytes moved
// (each input read once, the output written once; layout reads only what it copies).
int64_t prim_flops(const PrimGraph& graph, const Primitive& prim);
int64_t prim_bytes_read(const PrimGraph& graph, const Primitive& prim);
int64_t prim_bytes_written(const PrimGraph& graph, const Primitive& prim);

// Whether `prim` is a layout reshape that only drops or adds dims of size 1: the same
// elements in the same order (a pool's [N, C, H, W, 1, 1] to [N, C, H, W]).
bool unit_dims_reshape(const PrimGraph& graph, const Primitive& prim);

}  // namespace kora
