// Reduction graphs for the CUDA tests, sized so that every reduce strategy meets long,
// short, contiguous and strided rows: softmax over rows of 2500 (block per row by
// default), layer normalization over 768 (warp per row), a reduce over the outer axis of
// [300, 40] (strided rows: thread per row), over the middle axis of [4, 300, 10], a global
// mean of 3 x 50 x 50 elements, and int64 and bool reductions; ArgMax and ArgMin (opaque,
// generated alone) on floats with NaNs and ties and on small integers.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "cpu/codegen_harness.h"

namespace kora_cuda_test {

using kora_codegen_test::GraphBuilder;

// Softmax (max, sub, exp, sum, div) of `x` ([rows, n]) over its last axis, appended to
// `b`; returns the output.
inline std::string softmax_rows(GraphBuilder& b, const std::string& x) {
  using namespace kora;
  const DType F = DType::kFloat32;
  const Shape s = b.info(x).shape, r = {s[0], 1};
  const std::string mx = b.prim(ReduceAttrs{ReduceOp::kMax, {1}}, {x}, F, r);
  const std::string mb = b.prim(BroadcastAttrs{}, {mx}, F, s);
  const std::string d =
      b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}}, {x, mb}, F, s);
  const std::string e = b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {d}, F, s);
  const std::string sum = b.prim(ReduceAttrs{ReduceOp::kSum, {1}}, {e}, F, r);
  const std::string sb = b.prim(BroadcastAttrs{}, {sum}, F, s);
  return b.prim(ElementwiseAttrs{ScalarOp::kDiv, {Operand{0, 0}, Operand{1, 0}}}, {e, sb}, F, s);
}

// Softmax over the last axis of [rows, n].
inline kora::PrimGraph softmax_graph(std::mt19937& rng, int64_t rows, int64_t n) {
  GraphBuilder b(rng);
  b.g.outputs = {softmax_rows(b, b.input(kora::DType::kFloat32, {rows, n}))};
  return b.g;
}

// softmax(x * float(w)) over the rows of [6, 40], x an input, w an int64 constant in
// [0, 5) (which a CUDA job carries as data); appended to `b`. Returns {w, the output}.
inline std::pair<std::string, std::string> weighted_softmax(GraphBuilder& b) {
  using namespace kora;
  const DType F = DType::kFloat32;
  const Shape s = {6, 40};
  const std::string x = b.input(F, s);
  const std::string w = b.input(DType::kInt64, s, true, 0, 5);
  const std::string wf = b.prim(ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}}, {w}, F, s);
  const std::string y =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {x, wf}, F, s);
  return {w, softmax_rows(b, y)};
}

// Layer normalization over the last axis of [rows, n]: mean, sub, square, mean, add eps,
// rsqrt, mul, then scale and shift by constants.
inline kora::PrimGraph layer_norm_graph(std::mt19937& rng, int64_t rows, int64_t n) {
  using namespace kora;
  GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {rows, n}, r = {rows, 1}, w = {1, n};
  auto binary = [&](ScalarOp op, const std::string& a, const std::string& c, const Shape& sh) {
    return b.prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {a, c}, F, sh);
  };
  const std::string x = b.input(F, s);
  const std::string mean = b.prim(ReduceAttrs{ReduceOp::kMean, {1}}, {x}, F, r);
  const std::string d = binary(ScalarOp::kSub, x, b.prim(BroadcastAttrs{}, {mean}, F, s), s);
  const std::string sq = binary(ScalarOp::kMul, d, d, s);
  const std::string var = b.prim(ReduceAttrs{ReduceOp::kMean, {1}}, {sq}, F, r);
  const std::string eps =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{-1, 1e-5}}}, {var}, F, r);
  const std::string inv = b.prim(ElementwiseAttrs{ScalarOp::kRsqrt, {Operand{0, 0}}}, {eps}, F, r);
  const std::string norm = binary(ScalarOp::kMul, d, b.prim(BroadcastAttrs{}, {inv}, F, s), s);
  const std::string scale = b.prim(BroadcastAttrs{}, {b.input(F, w, true)}, F, s);
  const std::string shift = b.prim(BroadcastAttrs{}, {b.input(F, w, true)}, F, s);
  binary(ScalarOp::kAdd, binary(ScalarOp::kMul, norm, scale, s), shift, s);
  b.g.outputs = {b.g.prims.back().output(), mean};
  return b.g;
}

// Independent reductions of every op over strided, middle and whole-tensor axes, of
// float32 (through an elementwise member), int64 and bool tensors.
inline kora::PrimGraph strided_reductions_graph(std::mt19937& rng) {
  using namespace kora;
  GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  std::vector<std::string> outs;
  auto reduce = [&](ReduceOp op, const std::string& x, std::vector<int64_t> axes) {
    Shape o = b.info(x).shape;
    for (int64_t a : axes) o[a] = 1;
    outs.push_back(b.prim(ReduceAttrs{op, axes}, {x}, b.info(x).dtype, o));
  };
  const std::string a = b.input(F, {300, 40});
  const std::string ta =
      b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {a}, F, {300, 40});
  reduce(ReduceOp::kSum, ta, {0});
  reduce(ReduceOp::kMax, ta, {0});
  const std::string m = b.input(F, {4, 300, 10});
  reduce(ReduceOp::kMean, m, {1});
  reduce(ReduceOp::kMin, m, {0, 2});
  const std::string img = b.input(F, {2, 3, 50, 50});
  reduce(ReduceOp::kMean, img, {1, 2, 3});
  reduce(ReduceOp::kSum, img, {0, 1, 2, 3});
  const std::string p = b.input(F, {6, 40}, false, 0.9, 1.1);
  reduce(ReduceOp::kProd, p, {1});
  const std::string i = b.input(DType::kInt64, {5, 70});
  reduce(ReduceOp::kSum, i, {1});
  reduce(ReduceOp::kMax, i, {0});
  const std::string q = b.input(DType::kBool, {3, 90});
  reduce(ReduceOp::kMax, q, {1});
  reduce(ReduceOp::kMin, q, {0});
  b.g.outputs = outs;
  return b.g;
}

// Independent branches for horizontal pairs (two kernels in one launch): x [3, 9000] read
// by a softmax over its rows (few long rows: several blocks per row), by a sum over its
// strided outer axis (a thread per row) and by a max of exp over its rows; y [4, 1000]
// read by a softmax (a warp per row, row-fused) and by a pointwise scaling.
inline kora::PrimGraph two_branch_reduce_graph(std::mt19937& rng) {
  using namespace kora;
  GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  auto scaled = [&](const std::string& t, double k) {
    return b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, k}}}, {t}, F,
                  b.info(t).shape);
  };
  // (computed, so that the branches share a node: graph inputs are not nodes)
  const std::string x = scaled(b.input(F, {3, 9000}), 0.5);
  const std::string y = scaled(b.input(F, {4, 1000}), 0.5);
  std::vector<std::string> outs = {softmax_rows(b, x)};
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kSum, {0}}, {scaled(x, 2)}, F, {1, 9000}));
  const std::string e =
      b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {x}, F, {3, 9000});
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kMax, {1}}, {e}, F, {3, 1}));
  outs.push_back(softmax_rows(b, y));
  outs.push_back(scaled(y, 3));
  b.g.outputs = outs;
  return b.g;
}

// ArgMax and ArgMin of a float constant [3, 5, 4] with ties (values of -2..2) and NaNs, and
// of an int32 input (small random integers: ties everywhere), over every axis, with and
// without keepdims and select_last_index: 24 primitives, each its own kernel.
inline kora::PrimGraph arg_extreme_graph(std::mt19937& rng) {
  using namespace kora;
  GraphBuilder b(rng);
  const Shape s = {3, 5, 4};
  const std::string xf = b.input(DType::kFloat32, s, true);
  Tensor& t = b.g.constants.at(xf);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, static_cast<double>((i * 7) % 5 - 2));
  for (int64_t i : {6, 13, 21, 41, 42, 59}) set_element(t, i, NAN);
  const std::string xi = b.input(DType::kInt32, s);
  std::vector<std::string> outs;
  for (const std::string& x : {xf, xi})
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t axis : {0, 1, -1})
        for (int64_t last : {0, 1}) {
          Node n;
          n.op_type = op;
          n.name = op + std::to_string(outs.size());
          n.inputs = {x};
          const bool keep = axis != 1;
          for (const auto& [key, v] : {std::pair<const char*, int64_t>{"axis", axis},
                                       {"keepdims", keep ? 1 : 0},
                                       {"select_last_index", last}}) {
            Attribute a;
            a.kind = Attribute::Kind::kInt;
            a.i = v;
            n.attributes[key] = a;
          }
          Shape o;
          for (int64_t d = 0; d < 3; ++d)
            if (d != (axis + 3) % 3)
              o.push_back(s[static_cast<size_t>(d)]);
            else if (keep)
              o.push_back(1);
          outs.push_back(b.prim(OpaqueAttrs{n}, {x}, DType::kInt64, o));
          std::get<OpaqueAttrs>(b.g.prims.back().attrs).node.outputs = {outs.back()};
        }
  b.g.outputs = outs;
  return b.g;
}

}  // namespace kora_cuda_test
