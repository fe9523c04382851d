// Shape rules of the quantization operators: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv. In: the
// node's input types (and its attributes); out: the output types, after checking that
// scales and zero points fit the tensors they quantize (per tensor, per axis, blocked). The
// 8- and 16-bit integer types are supported; float8 and 4-bit types are not kora dtypes.
#include <algorithm>

#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

bool is_quantized(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kUInt16;
}

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

bool is_scale(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

void require(const InferContext& c, bool ok, size_t i, const char* what) {
  if (!ok)
    c.fail("input " + std::to_string(i) + " is " + dtype_name(c.dtype(i)) + ", expected " + what);
}

// The scale (input i) and zero point (input i + 1, optional) of QuantizeLinear and
// DequantizeLinear against x of shape `x`: one value, a vector along `axis`, or (block_size
// > 0) x's shape with dim `axis` divided into blocks.
void check_granularity(const InferContext& c, const Shape& x, size_t i) {
  const Shape& s = c.shape(i);
  if (c.has(i + 1) && c.shape(i + 1) != s)
    c.fail("zero point " + shape_str(c.shape(i + 1)) + " and scale " + shape_str(s) +
           " differ in shape");
  const int64_t block = c.node().attr_int("block_size", 0);
  if (block < 0) c.fail("block_size must not be negative");
  if (block == 0 && numel(s) == 1 && s.size() <= 1) return;
  if (x.empty()) c.fail("scale " + shape_str(s) + " for a scalar input");
  const int64_t axis = c.axis(c.node().attr_int("axis", 1), static_cast<int64_t>(x.size()));
  if (block == 0) {
    if (s.size() != 1 || s[0] != x[axis])
      c.fail("scale " + shape_str(s) + " is neither one value nor a vector of " +
             std::to_string(x[axis]) + " along axis " + std::to_string(axis) + " of " +
             shape_str(x));
    return;
  }
  Shape want = x;
  want[axis] = (x[axis] + block - 1) / block;
  if (s != want)
    c.fail("blocked scale " + shape_str(s) + " does not fit " + shape_str(x) + " in blocks of " +
           std::to_string(block) + " along axis " + std::to_string(axis) + " (expected " +
           shape_str(want) + ")");
}

std::vector<ValueInfo> quantize_linear(const InferContext& c) {
  require(c, is_scale(c.dtype(0)), 0, "float32, float16 or bfloat16");
  if (c.dtype(1) != c.dtype(0)) c.fail("scale and input differ in dtype");
  DType out = DType::kUInt8;
  const int64_t output_dtype = c.node().attr_int("output_dtype", 0);
  if (output_dtype != 0) {
    const std::optional<DType> t = dtype_from_onnx(static_cast<int>(output_dtype));
    if (!t || !is_quantized(*t))
      c.fail("output_dtype " + onnx_dtype_name(static_cast<int>(output_dtype)) +
             " is not supported (kora quantizes to int8, uint8, int16 and uint16)");
    out = *t;
  }
  if (c.has(2)) {
    require(c, is_quantized(c.dtype(2)), 2, "int8, uint8, int16 or uint16");
    if (output_dtype != 0 && c.dtype(2) != out) c.fail("output_dtype and zero point differ");
    out = c.dtype(2);
  }
  check_granularity(c, c.shape(0), 1);
  return {ValueInfo{out, c.shape(0)}};
}

std::vector<ValueInfo> dequantize_linear(const InferContext& c) {
  require(c, is_quantized(c.dtype(0)) || c.dtype(0) == DType::kInt32, 0,
          "int8, uint8, int16, uint16 or int32");
  require(c, is_scale(c.dtype(1)), 1, "float32, float16 or bfloat16");
  if (c.has(2) && c.dtype(2) != c.dtype(0)) c.fail("zero point and input differ in dtype");
  check_granularity(c, c.shape(0), 1);
  return {ValueInfo{c.dtype(1), c.shape(0)}};
}

std::vector<ValueInfo> dynamic_quantize_linear(const InferContext& c) {
  require(c, c.dtype(0) == DType::kFloat32, 0, "float32");
  if (numel(c.shape(0)) == 0) c.fail("input is empty: no range to quantize");
  return {ValueInfo{DType::kUInt8, c.shape(0)}, ValueInfo{DType::kFloat32, {}},
          ValueInfo{DType::kUInt8, {}}};
}

// numpy matmul of shapes a and b.
Shape matmul_shape(const InferContext& c, Shape a, Shape b) {
  if (a.empty() || b.empty()) c.fail("operands must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    c.fail("inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  Shape out = broadcast_shapes(c, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return out;
}

// The convolution of x (input ix) with w (input iw), as Conv's shape rule.
Shape conv_shape(const InferContext& c, size_t ix, size_t iw) {
  const Shape& x = c.shape(ix);
  const Shape& w = c.shape(iw);
  if (x.size() < 3 || w.size() != x.size())
    c.fail("needs X of rank >= 3 and W of the same rank, got " + shape_str(x) + " and " +
           shape_str(w));
  const int64_t group = c.node().attr_int("group", 1);
  if (group <= 0 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1])
    c.fail("input has " + std::to_string(x[1]) + " channels, W " + shape_str(w) + " and group " +
           std::to_string(group) + " disagree");
  const Window win =
      resolve_window(c, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), false);
  Shape out{x[0], w[0]};
  out.insert(out.end(), win.output.begin(), win.output.end());
  return out;
}

std::vector<ValueInfo> matmul_integer(const InferContext& c) {
  for (size_t i = 0; i < 4; ++i)
    if (c.has(i)) require(c, is_8bit(c.dtype(i)), i, "int8 or uint8");
  return {ValueInfo{DType::kInt32, matmul_shape(c, c.shape(0), c.shape(1))}};
}

std::vector<ValueInfo> conv_integer(const InferContext& c) {
  for (size_t i = 0; i < 4; ++i)
    if (c.has(i)) require(c, is_8bit(c.dtype(i)), i, "int8 or uint8");
  return {ValueInfo{DType::kInt32, conv_shape(c, 0, 1)}};
}

// QLinearMatMul and QLinearConv: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point.
void check_qlinear(const InferContext& c) {
  for (size_t i : {0, 2, 3, 5, 7}) require(c, is_8bit(c.dtype(i)), i, "int8 or uint8");
  for (size_t i : {1, 4, 6}) require(c, is_scale(c.dtype(i)), i, "float32, float16 or bfloat16");
  if (c.dtype(2) != c.dtype(0) || c.dtype(5) != c.dtype(3))
    c.fail("a zero point and its tensor differ in dtype");
}

std::vector<ValueInfo> qlinear_matmul(const InferContext& c) {
  check_qlinear(c);
  return {ValueInfo{c.dtype(7), matmul_shape(c, c.shape(0), c.shape(3))}};
}

std::vector<ValueInfo> qlinear_conv(const InferContext& c) {
  check_qlinear(c);
  const Shape out = conv_shape(c, 0, 3);
  if (c.has(8)) {
    require(c, c.dtype(8) == DType::kInt32, 8, "int32");
    if (c.shape(8) != Shape{out[1]})
      c.fail("bias " + shape_str(c.shape(8)) + " does not match " + std::to_string(out[1]) +
             " output channels");
  }
  return {ValueInfo{c.dtype(7), out}};
}

}  // namespace

void add_quantize_rules(RuleTable& t) {
  t["QuantizeLinear"] = {quantize_linear, 2, 3};
  t["DequantizeLinear"] = {dequantize_linear, 2, 3};
  t["DynamicQuantizeLinear"] = {dynamic_quantize_linear, 1, 1};
  t["MatMulInteger"] = {matmul_integer, 2, 4};
  t["ConvInteger"] = {conv_integer, 2, 4};
  t["QLinearMatMul"] = {qlinear_matmul, 8, 8};
  t["QLinearConv"] = {qlinear_conv, 8, 9};
}

}  // namespace kora
