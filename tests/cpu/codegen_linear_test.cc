// CPU code generation of linear primitives against the interpreter: matmuls (batched,
// broadcast batch dims, sizes leaving block remainders) with prologues (transpose,
// reshape, elementwise on A or B) and epilogues (bias via broadcast, activation, a
// consumer at other coordinates, a softmax after it), and convolutions (1D/2D/3D,
// grouped, depthwise, strided, dilated, padded; a fused pad or activation before, bias and
// relu after); the integer form of quantized models (uint8 and int8 operands less their
// zero points summed in int32, requantized through float64 and float32 to uint8); every
// candidate x schedule checked (tests/cpu/codegen_harness.h).
#include "cpu/codegen_harness.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

const DType F = DType::kFloat32;

std::string unary(GraphBuilder& b, ScalarOp op, const std::string& x) {
  return b.prim(ElementwiseAttrs{op, {Operand{0, 0}}}, {x}, F, b.info(x).shape);
}
std::string binary(GraphBuilder& b, ScalarOp op, const std::string& x, const std::string& y) {
  return b.prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {x, y}, F, b.info(x).shape);
}

// [batch..., m, k] x [batch'..., k, n] with prologue and epilogue members.
PrimGraph matmul_graph(std::mt19937& rng, Shape ab, Shape bb, int64_t m, int64_t k, int64_t n) {
  GraphBuilder b(rng);
  Shape as = ab, bs = bb, cs;
  for (size_t d = 0; d < ab.size(); ++d) cs.push_back(std::max(ab[d], bb[d]));
  // A arrives transposed ([..., k, m]) half of the time.
  std::string a;
  const bool transposed = rng() % 2;
  if (transposed) {
    Shape t = ab;
    t.push_back(k), t.push_back(m);
    const std::string x = b.input(F, t);
    layout::Transpose tr;
    for (size_t d = 0; d < ab.size(); ++d) tr.perm.push_back(d);
    tr.perm.push_back(ab.size() + 1), tr.perm.push_back(ab.size());
    as.push_back(m), as.push_back(k);
    a = b.prim(LayoutAttrs{tr}, {x}, F, as);
  } else {
    as.push_back(m), as.push_back(k);
    a = unary(b, ScalarOp::kTanh, b.input(F, as));
  }
  bs.push_back(k), bs.push_back(n);
  std::string w = b.input(F, bs, rng() % 2 == 0);
  if (rng() % 2) w = unary(b, ScalarOp::kNeg, w);
  cs.push_back(m), cs.push_back(n);
  const std::string c = b.prim(LinearAttrs{MatMulAttrs{}}, {a, w}, F, cs);
  Shape bias_shape(cs.size(), 1);
  bias_shape.back() = n;
  const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, bias_shape, true)}, F, cs);
  const std::string y = binary(b, ScalarOp::kAdd, c, bias);
  const std::string act = unary(b, rng() % 2 ? ScalarOp::kRelu : ScalarOp::kErf, y);
  switch (rng() % 3) {
    case 0: {  // softmax over the last dim
      Shape r = cs;
      r.back() = 1;
      const std::string mx =
          b.prim(ReduceAttrs{ReduceOp::kMax, {int64_t(cs.size() - 1)}}, {act}, F, r);
      const std::string e = unary(
          b, ScalarOp::kExp, binary(b, ScalarOp::kSub, act, b.prim(BroadcastAttrs{}, {mx}, F, cs)));
      const std::string s =
          b.prim(ReduceAttrs{ReduceOp::kSum, {int64_t(cs.size() - 1)}}, {e}, F, r);
      binary(b, ScalarOp::kDiv, e, b.prim(BroadcastAttrs{}, {s}, F, cs));
      break;
    }
    case 1: {  // a consumer at other coordinates: transposed last two dims
      layout::Transpose tr;
      for (size_t d = 0; d + 2 < cs.size(); ++d) tr.perm.push_back(d);
      tr.perm.push_back(cs.size() - 1), tr.perm.push_back(cs.size() - 2);
      Shape ts = cs;
      std::swap(ts[cs.size() - 1], ts[cs.size() - 2]);
      unary(b, ScalarOp::kSigmoid, b.prim(LayoutAttrs{tr}, {act}, F, ts));
      break;
    }
    default:  // the matmul result itself is written too
      b.g.outputs.push_back(c);
      break;
  }
  b.g.outputs.push_back(b.g.prims.back().output());
  return b.g;
}

// Conv [nb, ch, spatial...] with filters [m, ch/group, kernel...].
PrimGraph conv_graph(std::mt19937& rng, int64_t nb, int64_t ch, int64_t m, int64_t group,
                     Shape spatial, Shape kernel, int64_t stride, int64_t dilation, int64_t pad) {
  GraphBuilder b(rng);
  Shape xs = {nb, ch};
  xs.insert(xs.end(), spatial.begin(), spatial.end());
  std::string x = b.input(F, xs);
  if (rng() % 2) x = unary(b, ScalarOp::kRelu, x);
  ConvAttrs a;
  a.group = group;
  Shape ys = {nb, m};
  for (size_t i = 0; i < spatial.size(); ++i) {
    a.strides.push_back(stride);
    a.dilations.push_back(dilation);
    a.pads_begin.push_back(pad);
    a.pads_end.push_back(pad);
    ys.push_back((spatial[i] + 2 * pad - dilation * (kernel[i] - 1) - 1) / stride + 1);
  }
  Shape ws = {m, ch / group};
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  const std::string w = b.input(F, ws, true);
  const std::string c = b.prim(LinearAttrs{a}, {x, w}, F, ys);
  Shape bias_shape(ys.size(), 1);
  bias_shape[1] = m;
  const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, bias_shape, true)}, F, ys);
  const std::string y = unary(b, ScalarOp::kRelu, binary(b, ScalarOp::kAdd, c, bias));
  if (rng() % 2) {  // global average pool after it
    ReduceAttrs r{ReduceOp::kMean, {}};
    Shape rs = ys;
    for (size_t d = 2; d < ys.size(); ++d) r.axes.push_back(d), rs[d] = 1;
    b.prim(r, {y}, F, rs);
  }
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

TEST(CpuCodegenLinear, MatmulsMatchTheInterpreter) {
  std::mt19937 rng(11);
  kora_codegen_test::CheckStats stats;
  struct Case {
    Shape ab, bb;
    int64_t m, k, n;
  };
  const Case cases[] = {{{}, {}, 7, 5, 13},
                        {{}, {}, 1, 9, 300},
                        {{2}, {1}, 9, 16, 33},
                        {{1, 3}, {2, 3}, 5, 3, 8},
                        {{}, {}, 50, 37, 70}};
  for (const Case& c : cases) {
    kora_codegen_test::check_graph(matmul_graph(rng, c.ab, c.bb, c.m, c.k, c.n), 4, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.with_schedules, 5);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

// Hiera's mask-unit attention: q and k come out of one qkv tensor [1, T x U, 3 x H x D]
// through a reshape to [1, T, U, 3, H, D], a transpose putting T after U, a slice and a
// squeeze each; q x k^T. The matmul's rows (T) are blocks, so a row's coordinate is a sum
// ("(i * 4) + 1"), which the reshape's flat index multiplied by U without parentheses (a
// kernel of all ten members read row i * 4 + 1 * U instead of (i * 4 + 1) * U: relative
// error 1.2 in timm's hiera_tiny_224).
TEST(CpuCodegenLinear, MatmulRowsReadThroughAReshapeMatchTheInterpreter) {
  std::mt19937 rng(17);
  GraphBuilder b(rng);
  const int64_t T = 16, U = 5, H = 2, D = 6;
  const std::string qkv = b.input(F, {1, T * U, 3 * H * D});
  const std::string r = b.prim(LayoutAttrs{layout::Reshape{}}, {qkv}, F, {1, T, U, 3, H, D});
  const std::string t =
      b.prim(LayoutAttrs{layout::Transpose{{3, 0, 4, 2, 1, 5}}}, {r}, F, {3, 1, H, U, T, D});
  auto part = [&](int64_t i) {
    const std::string s = b.prim(LayoutAttrs{layout::Slice{{i, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1}}},
                                 {t}, F, {1, 1, H, U, T, D});
    return b.prim(LayoutAttrs{layout::Reshape{}}, {s}, F, {1, H, U, T, D});
  };
  const std::string q = part(0), k = part(1);
  const std::string kt =
      b.prim(LayoutAttrs{layout::Transpose{{0, 1, 2, 4, 3}}}, {k}, F, {1, H, U, D, T});
  b.g.outputs = {b.prim(LinearAttrs{MatMulAttrs{}}, {q, kt}, F, {1, H, U, T, T})};
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 8, rng, stats);
  EXPECT_GT(stats.kernels, 10);
}

TEST(CpuCodegenLinear, ConvolutionsMatchTheInterpreter) {
  std::mt19937 rng(12);
  kora_codegen_test::CheckStats stats;
  struct Case {
    int64_t nb, ch, m, group;
    Shape spatial, kernel;
    int64_t stride, dilation, pad;
  };
  const Case cases[] = {
      {1, 4, 8, 1, {9, 10}, {3, 3}, 1, 1, 1},       // plain 3x3
      {2, 6, 4, 2, {7, 8}, {3, 2}, 2, 1, 1},        // grouped, strided
      {1, 8, 8, 8, {11, 9}, {3, 3}, 1, 2, 2},       // depthwise, dilated
      {1, 8, 8, 8, {12, 12}, {3, 3}, 2, 1, 1},      // depthwise, strided
      {1, 16, 24, 1, {5, 6}, {1, 1}, 1, 1, 0},      // pointwise
      {1, 16, 20, 1, {13, 11}, {3, 3}, 1, 1, 1},    // large enough for the packed GEMM
      {2, 3, 5, 1, {17}, {4}, 2, 1, 2},             // 1D
      {1, 2, 4, 1, {4, 5, 6}, {2, 3, 2}, 1, 1, 1},  // 3D
  };
  for (const Case& c : cases) {
    kora_codegen_test::check_graph(
        conv_graph(rng, c.nb, c.ch, c.m, c.group, c.spatial, c.kernel, c.stride, c.dilation, c.pad),
        6, rng, stats);
    if (HasFatalFailure()) return;
  }
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

// A QLinearConv or QLinearMatMul as fission writes it: int32(x) - x_zp and int32(w) -
// w_zp summed in int32, plus an int32 bias, then float(acc) * multiplier rounded half to
// even, clamped and cast to uint8; the multiplier goes through float64 as qdq_fold.cc's
// additions do.
PrimGraph quantized_graph(std::mt19937& rng, bool conv) {
  GraphBuilder b(rng);
  const DType I = DType::kInt32;
  auto ew = [&](ScalarOp op, std::vector<std::string> in, std::vector<Operand> ops, DType t) {
    const Shape s = b.info(in[0]).shape;
    return b.prim(ElementwiseAttrs{op, std::move(ops)}, std::move(in), t, s);
  };
  const Shape xs = conv ? Shape{1, 6, 9, 10} : Shape{2, 7, 40};
  const Shape ws = conv ? Shape{8, 6, 3, 3} : Shape{1, 40, 19};
  const std::string xq = b.input(DType::kUInt8, xs, false, 0, 256);
  const std::string wq = b.input(DType::kInt8, ws, true, -127, 128);
  const std::string x = ew(ScalarOp::kSub, {xq}, {Operand{0, 0}, Operand{-1, 131}}, I);
  const std::string w = ew(ScalarOp::kSub, {wq}, {Operand{0, 0}, Operand{-1, -3}}, I);
  Shape ys;
  LinearAttrs la = MatMulAttrs{};
  if (conv) {
    ConvAttrs a;
    a.group = 1;
    a.strides = {1, 2};
    a.dilations = {1, 1};
    a.pads_begin = {1, 1};
    a.pads_end = {1, 1};
    la = a;
    ys = {1, 8, 9, 5};
  } else {
    ys = {2, 7, 19};
  }
  std::string acc = b.prim(la, {x, w}, I, ys);
  Shape bias_shape(ys.size(), 1);
  bias_shape[conv ? 1 : ys.size() - 1] = ys[conv ? 1 : ys.size() - 1];
  const std::string bias =
      b.prim(BroadcastAttrs{}, {b.input(I, bias_shape, true, -5000, 5000)}, I, ys);
  acc = ew(ScalarOp::kAdd, {acc, bias}, {Operand{0, 0}, Operand{1, 0}}, I);
  const std::string d = ew(ScalarOp::kCast, {acc}, {Operand{0, 0}}, DType::kFloat64);
  const std::string m =
      ew(ScalarOp::kMul, {d}, {Operand{0, 0}, Operand{-1, 0.0007}}, DType::kFloat64);
  const std::string f = ew(ScalarOp::kCast, {m}, {Operand{0, 0}}, F);
  const std::string r = ew(ScalarOp::kRound, {f}, {Operand{0, 0}}, F);
  const std::string z = ew(ScalarOp::kAdd, {r}, {Operand{0, 0}, Operand{-1, 128}}, F);
  const std::string c =
      ew(ScalarOp::kMin, {ew(ScalarOp::kMax, {z}, {Operand{0, 0}, Operand{-1, 0}}, F)},
         {Operand{0, 0}, Operand{-1, 255}}, F);
  ew(ScalarOp::kCast, {c}, {Operand{0, 0}}, DType::kUInt8);
  b.g.outputs = {acc, b.g.prims.back().output()};
  return b.g;
}

TEST(CpuCodegenLinear, QuantizedConvolutionsAndMatmulsMatchTheInterpreter) {
  std::mt19937 rng(13);
  kora_codegen_test::CheckStats stats;
  for (bool conv : {true, false}) {
    kora_codegen_test::check_graph(quantized_graph(rng, conv), 5, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(stats.refused, 0);
  EXPECT_GT(stats.kernels, 10);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

}  // namespace
