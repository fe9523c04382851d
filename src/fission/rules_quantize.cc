// Fission of the quantization operators into elementwise, reduce, layout and linear
// primitives, with onnxruntime's CPU arithmetic (the reference kora is checked against):
//
//   DequantizeLinear  y = float(int32(x) - int32(zp)) * scale   (float32; cast to the
//                     scale's dtype after)
//   QuantizeLinear    y = saturate(round_half_even(x / scale) + zp)   (x / scale in float32)
//   DynamicQuantizeLinear  min and max (widened to include 0), scale = (max - min) / 255
//                     (1 when the range is 0), zp = round(saturate(0 - min / scale)), then
//                     QuantizeLinear to uint8
//   MatMulInteger, ConvInteger  the products of (x - x_zp) and (w - w_zp), summed in int32
//   QLinearMatMul, QLinearConv  that sum (+ int32 bias), then requantized:
//                     y = saturate(round_half_even(float(acc) * (a_scale * b_scale /
//                     y_scale)) + y_zp), the multiplier computed in float32
//
// Integer sums: the zero points are subtracted in int32 and a linear primitive on int32
// operands computes the sum. The interpreter sums integers exactly (in int64, stored as
// int32, which is int32 accumulation with wrap-around), and the CPU backend runs a
// non-float32 linear primitive by the interpreter kernel; float32 accumulation would not
// be exact (int8 x int8 sums pass 2^24 for K beyond ~1000). Rounding is ScalarOp kRound
// (half to even); saturation clamps in float32 before the cast, so the cast only converts
// integral values in range. Scales and zero points are one value, a vector along `axis`
// (reshaped to broadcast) or blocked (`block_size`: repeated along `axis` by a gather).
// float8 and 4-bit types have no kora dtype; the front end refuses them.
#include <limits>

#include "fission/builder.h"
#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

// Where a QuantizeLinear/DequantizeLinear parameter varies along x: nowhere (axis -1),
// along `axis`, or along `axis` in blocks of `block`.
struct Granularity {
  int64_t axis = -1;
  int64_t block = 0;
};

Granularity granularity(const FissionBuilder& b, const Shape& xs, const Shape& param) {
  Granularity g;
  g.block = b.node().attr_int("block_size", 0);
  if (g.block == 0 && numel(param) == 1 && param.size() <= 1) return g;
  const int64_t r = static_cast<int64_t>(xs.size());
  g.axis = b.node().attr_int("axis", 1);
  if (g.axis < 0) g.axis += r;
  return g;
}

// A constant parameter repeated over x's shape: p[idx[axis]] (per axis) or p at idx with
// idx[axis] / block (blocked).
Tensor materialize(const Tensor& p, const Shape& xs, const Granularity& g) {
  Tensor out(p.dtype(), xs);
  const std::vector<int64_t> xstr = row_major_strides(xs), pstr = row_major_strides(p.shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t src = i / xstr[g.axis] % xs[g.axis];
    if (g.block > 0) {
      src = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        const int64_t c = i / xstr[d] % xs[d];
        src += (static_cast<int64_t>(d) == g.axis ? c / g.block : c) * pstr[d];
      }
    }
    set_element(out, i, p.double_at(src));
  }
  return out;
}

// Parameter input i of a QuantizeLinear/DequantizeLinear of x (shape xs) as an operand
// that broadcasts against x: an immediate for one constant value; else a tensor of x's
// shape (a constant when x and it are constants, so the whole dequantization folds), of
// [1, .., C, .., 1] (per axis) or gathered along axis (blocked).
Arg param(FissionBuilder& b, size_t i, const std::string& x) {
  const std::string p = b.in(i);
  const Shape& xs = b.shape(x);
  const Shape& s = b.shape(p);
  const Granularity g = granularity(b, xs, s);
  const Tensor* c = b.constant(p);
  if (g.axis < 0) {
    if (c) return Arg(c->double_at(0));
    return b.reshape(p, {});
  }
  if (c && b.constant(x)) return b.add_constant(materialize(*c, xs, g));
  if (g.block == 0) {
    Shape along(xs.size(), 1);
    along[g.axis] = xs[g.axis];
    return b.reshape(p, along);
  }
  layout::Gather gather{g.axis, {}};
  for (int64_t k = 0; k < xs[g.axis]; ++k) gather.indices.push_back(k / g.block);
  return b.layout(gather, {p}, xs);
}

// float32 view of an operand (immediates are float32 values already).
Arg to_f32(FissionBuilder& b, const Arg& a) {
  if (a.immediate || b.dtype(a.tensor) == DType::kFloat32) return a;
  return b.ew(ScalarOp::kCast, {a}, DType::kFloat32);
}

// x * y or x / y in float32; two immediates are combined here, as float32.
Arg f32_op(FissionBuilder& b, ScalarOp op, const Arg& x, const Arg& y) {
  if (x.immediate && y.immediate) {
    const float fx = static_cast<float>(x.value), fy = static_cast<float>(y.value);
    return Arg(static_cast<double>(op == ScalarOp::kMul ? fx * fy : fx / fy));
  }
  return b.ew(op, {to_f32(b, x), to_f32(b, y)}, DType::kFloat32);
}

// saturate(round_half_even(v) + zp) as `out` (v float32; zp absent: no shift).
std::string quantize_tail(FissionBuilder& b, const std::string& v, const std::optional<Arg>& zp,
                          DType out) {
  std::string r = b.ew(ScalarOp::kRound, {v});
  if (zp) r = b.ew(ScalarOp::kAdd, {r, to_f32(b, *zp)});
  double lo = 0, hi = 0;
  switch (out) {
    case DType::kInt8:
      lo = std::numeric_limits<int8_t>::min(), hi = std::numeric_limits<int8_t>::max();
      break;
    case DType::kUInt8:
      hi = std::numeric_limits<uint8_t>::max();
      break;
    case DType::kInt16:
      lo = std::numeric_limits<int16_t>::min(), hi = std::numeric_limits<int16_t>::max();
      break;
    case DType::kUInt16:
      hi = std::numeric_limits<uint16_t>::max();
      break;
    default:
      b.fail(std::string("cannot quantize to ") + dtype_name(out));
  }
  r = b.ew(ScalarOp::kMin, {b.ew(ScalarOp::kMax, {r, lo}), hi});
  return b.ew(ScalarOp::kCast, {r}, out);
}

void dequantize_linear(FissionBuilder& b) {
  const std::string x = b.in(0);
  std::string d = x;
  if (b.has_in(2)) d = b.ew(ScalarOp::kSub, {x, param(b, 2, x)}, DType::kInt32);
  std::string y = b.ew(ScalarOp::kMul,
                       {b.ew(ScalarOp::kCast, {d}, DType::kFloat32), to_f32(b, param(b, 1, x))});
  const DType out = b.out_info(0).dtype;
  if (out != DType::kFloat32) y = b.ew(ScalarOp::kCast, {y}, out);
  b.bind(0, y);
}

void quantize_linear(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Arg xf = to_f32(b, x);
  const std::string v = b.ew(ScalarOp::kDiv, {xf, to_f32(b, param(b, 1, x))});
  std::optional<Arg> zp;
  if (b.has_in(2)) zp = param(b, 2, x);
  b.bind(0, quantize_tail(b, v, zp, b.out_info(0).dtype));
}

void dynamic_quantize_linear(FissionBuilder& b) {
  const std::string x = b.in(0);
  std::vector<int64_t> all;
  for (size_t d = 0; d < b.shape(x).size(); ++d) all.push_back(static_cast<int64_t>(d));
  const std::string hi =
      b.ew(ScalarOp::kMax, {b.reshape(b.reduce(ReduceOp::kMax, x, all), {}), 0.0});
  const std::string lo =
      b.ew(ScalarOp::kMin, {b.reshape(b.reduce(ReduceOp::kMin, x, all), {}), 0.0});
  const std::string range = b.ew(ScalarOp::kSub, {hi, lo});
  const std::string scale = b.ew(ScalarOp::kWhere, {b.ew(ScalarOp::kEqual, {range, 0.0}), 1.0,
                                                    b.ew(ScalarOp::kDiv, {range, 255.0})});
  const std::string zp_f = b.ew(
      ScalarOp::kRound,
      {b.ew(ScalarOp::kMin,
            {b.ew(ScalarOp::kMax, {b.ew(ScalarOp::kNeg, {b.ew(ScalarOp::kDiv, {lo, scale})}), 0.0}),
             255.0})});
  b.bind(0, quantize_tail(b, b.ew(ScalarOp::kDiv, {x, scale}), Arg(zp_f), DType::kUInt8));
  b.bind(1, scale);
  b.bind(2, b.ew(ScalarOp::kCast, {zp_f}, DType::kUInt8));
}

// A zero point or scale (input i) of a matmul operand of shape `s` (role 'a': one value,
// [M] or s's rank with a row per M; role 'b': one value, [N] or s's rank), shaped to
// broadcast against s and the product.
Arg matmul_param(FissionBuilder& b, size_t i, const Shape& s, bool rows) {
  const std::string p = b.in(i);
  const Shape& ps = b.shape(p);
  if (numel(ps) == 1) {
    if (const Tensor* c = b.constant(p)) return Arg(c->double_at(0));
    return b.reshape(p, {});
  }
  if (ps.size() == s.size()) return p;
  if (ps.size() == 1 && s.size() >= 2 && ps[0] == s[s.size() - (rows ? 2 : 1)])
    return rows ? b.reshape(p, {ps[0], 1}) : p;
  b.fail("input " + std::to_string(i) + " " + shape_str(ps) + " is neither one value nor per " +
         (rows ? "row" : "column") + " of " + shape_str(s));
}

// int32(x) - int32(zp) (zp absent: int32(x)).
std::string minus_zero_point(FissionBuilder& b, const std::string& x,
                             const std::optional<Arg>& zp) {
  if (!zp) return b.ew(ScalarOp::kCast, {x}, DType::kInt32);
  return b.ew(ScalarOp::kSub, {x, *zp}, DType::kInt32);
}

// The exact int32 product of (A - a_zp) and (B - b_zp); zero points at inputs za and zb.
std::string integer_matmul(FissionBuilder& b, size_t ia, size_t za, size_t ib, size_t zb) {
  const std::string a = b.in(ia), w = b.in(ib);
  std::optional<Arg> a_zp, b_zp;
  if (b.has_in(za)) a_zp = matmul_param(b, za, b.shape(a), true);
  if (b.has_in(zb)) b_zp = matmul_param(b, zb, b.shape(w), false);
  Shape result = b.out_info(0).shape;
  return matmul_nd(b, minus_zero_point(b, a, a_zp), minus_zero_point(b, w, b_zp), result);
}

// A per-tensor or per-output-channel convolution parameter (input i), shaped
// [1, M, 1, ..] (at_output) or [M, 1, ..] (for the weights) to broadcast.
Arg conv_param(FissionBuilder& b, size_t i, int64_t rank, bool at_output) {
  const std::string p = b.in(i);
  const Shape& ps = b.shape(p);
  if (numel(ps) == 1) {
    if (const Tensor* c = b.constant(p)) return Arg(c->double_at(0));
    return b.reshape(p, {});
  }
  if (ps.size() != 1)
    b.fail("input " + std::to_string(i) + " " + shape_str(ps) +
           " is neither one value nor one per output channel");
  Shape s(static_cast<size_t>(rank), 1);
  s[at_output ? 1 : 0] = ps[0];
  if (at_output) s[0] = 1;
  return b.reshape(p, s);
}

// The exact int32 convolution of (X - x_zp) and (W - w_zp): zero padding of X - x_zp is
// padding X with its zero point, as ConvInteger and QLinearConv pad.
std::string integer_conv(FissionBuilder& b, size_t ix, size_t zx, size_t iw, size_t zw) {
  const std::string x = b.in(ix), w = b.in(iw);
  const Shape& sx = b.shape(x);
  const Shape& sw = b.shape(w);
  const int64_t rank = static_cast<int64_t>(sx.size());
  std::optional<Arg> x_zp, w_zp;
  if (b.has_in(zx)) {
    if (numel(b.shape(b.in(zx))) != 1) b.fail("the input's zero point must be one value");
    x_zp = conv_param(b, zx, rank, true);
  }
  if (b.has_in(zw)) {
    w_zp = conv_param(b, zw, rank, false);
    if (!w_zp->immediate && b.shape(w_zp->tensor).size() == static_cast<size_t>(rank) &&
        b.shape(w_zp->tensor)[0] != sw[0])
      b.fail("weight zero point does not match " + std::to_string(sw[0]) + " output channels");
  }
  InferContext ctx(b.source(), b.node());
  const Window win =
      resolve_window(ctx, Shape(sx.begin() + 2, sx.end()), Shape(sw.begin() + 2, sw.end()), false);
  const size_t r = sx.size() - 2;
  ConvAttrs attrs{b.node().attr_int("group", 1), win.strides, win.dilations,
                  Shape(win.pads.begin(), win.pads.begin() + static_cast<int64_t>(r)),
                  Shape(win.pads.begin() + static_cast<int64_t>(r), win.pads.end())};
  return b.conv(minus_zero_point(b, x, x_zp), minus_zero_point(b, w, w_zp), attrs);
}

// y = saturate(round_half_even(float(acc) * multiplier) + y_zp), as onnxruntime
// requantizes an int32 accumulator.
void requantize(FissionBuilder& b, const std::string& acc, const Arg& multiplier, const Arg& y_zp) {
  const std::string v =
      b.ew(ScalarOp::kMul, {b.ew(ScalarOp::kCast, {acc}, DType::kFloat32), multiplier});
  b.bind(0, quantize_tail(b, v, y_zp, b.out_info(0).dtype));
}

void matmul_integer(FissionBuilder& b) { b.bind(0, integer_matmul(b, 0, 2, 1, 3)); }

void conv_integer(FissionBuilder& b) { b.bind(0, integer_conv(b, 0, 2, 1, 3)); }

void qlinear_matmul(FissionBuilder& b) {
  const std::string acc = integer_matmul(b, 0, 2, 3, 5);
  const Shape& as = b.shape(b.in(0));
  const Shape& ws = b.shape(b.in(3));
  const Shape& ys = b.out_info(0).shape;
  const Arg m =
      f32_op(b, ScalarOp::kDiv,
             f32_op(b, ScalarOp::kMul, matmul_param(b, 1, as, true), matmul_param(b, 4, ws, false)),
             matmul_param(b, 6, ys, false));
  requantize(b, acc, m, matmul_param(b, 7, ys, false));
}

void qlinear_conv(FissionBuilder& b) {
  std::string acc = integer_conv(b, 0, 2, 3, 5);
  const int64_t rank = static_cast<int64_t>(b.shape(acc).size());
  if (b.has_in(8)) acc = b.ew(ScalarOp::kAdd, {acc, conv_param(b, 8, rank, true)});
  const Arg m =
      f32_op(b, ScalarOp::kDiv,
             f32_op(b, ScalarOp::kMul, conv_param(b, 1, rank, true), conv_param(b, 4, rank, true)),
             conv_param(b, 6, rank, true));
  requantize(b, acc, m, conv_param(b, 7, rank, true));
}

}  // namespace

void add_quantize_fission(FissionTable& t) {
  t["DequantizeLinear"] = dequantize_linear;
  t["QuantizeLinear"] = quantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  t["MatMulInteger"] = matmul_integer;
  t["ConvInteger"] = conv_integer;
  t["QLinearMatMul"] = qlinear_matmul;
  t["QLinearConv"] = qlinear_conv;
}

}  // namespace kora
