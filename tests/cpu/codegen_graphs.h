// Random primitive graphs for the code generation tests, shared by the CPU
// (tests/cpu/codegen_*_test.cc) and CUDA (tests/cuda/) suites:
//   random_elementwise_graph  float32 elementwise and broadcast primitives on [2, 3, 5] and
//                             shapes like [1, 3, 1] (immediates, shared values, NaN/inf);
//   random_layout_graph       every layout map (transpose, reshape, slice, pad, concat,
//                             gather, tile, window), every reduce op, elementwise between;
//   bert_mask_graph           a BERT-style attention mask (int64 -> float, Equal/Where);
//   random_mask_graph         mixed float32/int64/int32/bool chains: casts, predicates,
//                             logic, integer arithmetic and reductions, layout of any dtype.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen_harness.h"

namespace kora_codegen_test {

inline PrimGraph random_elementwise_graph(std::mt19937& rng) {
  const Shape kFull = {2, 3, 5};
  kora_codegen_test::GraphBuilder b(rng);
  PrimGraph& g = b.g;
  std::map<Shape, std::vector<std::string>> pool;  // tensors by shape
  auto add_input = [&](const Shape& shape, bool constant) {
    pool[shape].push_back(b.input(DType::kFloat32, shape, constant));
  };
  auto add_prim = [&](PrimAttrs attrs, std::vector<std::string> inputs, const Shape& shape) {
    pool[shape].push_back(b.prim(std::move(attrs), std::move(inputs), DType::kFloat32, shape));
  };
  auto any_of_shape = [&](const Shape& shape) {
    const std::vector<std::string>& v = pool[shape];
    return v[rng() % v.size()];
  };
  add_input(kFull, false);
  // Every float scalar function the generator writes (NaN and inf results included:
  // both sides must agree on them too).
  const ScalarOp unary[] = {
      ScalarOp::kNeg,     ScalarOp::kAbs,   ScalarOp::kTanh,       ScalarOp::kErf,
      ScalarOp::kSigmoid, ScalarOp::kRelu,  ScalarOp::kExp,        ScalarOp::kSoftplus,
      ScalarOp::kFloor,   ScalarOp::kSign,  ScalarOp::kIdentity,   ScalarOp::kLog,
      ScalarOp::kSqrt,    ScalarOp::kRsqrt, ScalarOp::kReciprocal, ScalarOp::kCeil,
      ScalarOp::kRound,   ScalarOp::kSin,   ScalarOp::kCos,        ScalarOp::kCast,
      ScalarOp::kTan,     ScalarOp::kAsin,  ScalarOp::kAcos,       ScalarOp::kAtan,
      ScalarOp::kSinh,    ScalarOp::kCosh,  ScalarOp::kAsinh,      ScalarOp::kAcosh,
      ScalarOp::kAtanh};
  const ScalarOp binary[] = {ScalarOp::kAdd, ScalarOp::kSub,  ScalarOp::kMul,
                             ScalarOp::kDiv, ScalarOp::kMax,  ScalarOp::kMin,
                             ScalarOp::kMod, ScalarOp::kFmod, ScalarOp::kPow};
  const int prims = 4 + rng() % 9;
  while (static_cast<int>(g.prims.size()) < prims) {
    const int r = rng() % 10;
    // Elementwise work happens on the full shape mostly, sometimes on a small shape
    // (then broadcast up, so members of a kernel have different shapes).
    std::vector<Shape> small;
    for (const auto& [shape, names] : pool)
      if (shape != kFull) small.push_back(shape);
    if (r < 2 || (r < 3 && small.empty())) {
      Shape shape = kFull;
      for (int64_t& d : shape)
        if (rng() % 2) d = 1;
      add_input(shape, rng() % 2);
      continue;
    }
    if (r < 4 && !small.empty()) {
      add_prim(BroadcastAttrs{}, {any_of_shape(small[rng() % small.size()])}, kFull);
      continue;
    }
    const Shape shape = !small.empty() && rng() % 4 == 0 ? small[rng() % small.size()] : kFull;
    if (r < 6) {
      add_prim(ElementwiseAttrs{unary[rng() % std::size(unary)], {Operand{0, 0}}},
               {any_of_shape(shape)}, shape);
    } else {
      ElementwiseAttrs e{binary[rng() % std::size(binary)], {Operand{0, 0}, Operand{1, 0}}};
      if (rng() % 4 == 0) {
        e.operands[1] = Operand{-1, 0.75};  // immediate
        add_prim(e, {any_of_shape(shape)}, shape);
      } else {
        add_prim(e, {any_of_shape(shape), any_of_shape(shape)}, shape);
      }
    }
  }
  g.outputs = {g.prims.back().output()};
  if (g.prims.size() > 3) g.outputs.push_back(g.prims[g.prims.size() / 2].output());
  return g;
}

// One random layout primitive reading `x`; returns its output.
inline std::string random_layout(GraphBuilder& b, const std::string& x, std::mt19937& rng, int kind,
                                 const std::string& other) {
  const Shape s = b.info(x).shape;
  const size_t r = s.size();
  const DType t = b.info(x).dtype;
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % n); };
  switch (kind) {
    case 0: {  // transpose
      layout::Transpose tr;
      tr.perm.resize(r);
      std::iota(tr.perm.begin(), tr.perm.end(), 0);
      std::shuffle(tr.perm.begin(), tr.perm.end(), rng);
      Shape o(r);
      for (size_t d = 0; d < r; ++d) o[d] = s[tr.perm[d]];
      return b.prim(LayoutAttrs{tr}, {x}, t, o);
    }
    case 1: {  // reshape: merge two neighbours, split one, or flatten to 2D
      Shape o;
      const int how = pick(3);
      if (how == 0 && r >= 2) {
        const size_t d = pick(r - 1);
        for (size_t i = 0; i < r; ++i) {
          if (i == d + 1) continue;
          o.push_back(i == d ? s[d] * s[d + 1] : s[i]);
        }
      } else if (how == 1) {
        const size_t d = pick(r);
        for (size_t i = 0; i < r; ++i) {
          if (i == d && s[d] % 2 == 0 && s[d] > 2) {
            o.push_back(2);
            o.push_back(s[d] / 2);
          } else {
            o.push_back(s[i]);
          }
        }
      } else {
        const int64_t n = numel(s);
        const int64_t last = s.back() * (r > 1 ? s[r - 2] : 1);
        o = {n / last, 1, last};
      }
      return b.prim(LayoutAttrs{layout::Reshape{}}, {x}, t, o);
    }
    case 2: {  // slice, steps +-1, +-2
      layout::Slice sl;
      Shape o(r);
      for (size_t d = 0; d < r; ++d) {
        const int64_t steps[] = {1, 2, -1, -2};
        const int64_t step = steps[pick(4)];
        const int64_t start =
            step > 0 ? pick(std::max<int64_t>(1, s[d] / 2)) : s[d] - 1 - pick(2 > s[d] ? 1 : 2);
        const int64_t room = step > 0 ? (s[d] - start + step - 1) / step : start / (-step) + 1;
        o[d] = 1 + pick(room);
        sl.starts.push_back(start);
        sl.steps.push_back(step);
      }
      return b.prim(LayoutAttrs{sl}, {x}, t, o);
    }
    case 3: {  // pad
      layout::Pad p;
      p.mode = static_cast<layout::PadMode>(pick(3));
      p.value = 0.5;
      Shape o(r);
      for (size_t d = 0; d < r; ++d) {
        const int64_t stride = p.mode == layout::PadMode::kConstant && pick(3) == 0 ? 2 : 1;
        int64_t begin = pick(4) - 1, end = pick(4) - 1;
        if ((s[d] - 1) * stride + 1 + begin + end < 1) begin = end = 0;
        p.begin.push_back(begin);
        p.stride.push_back(stride);
        o[d] = (s[d] - 1) * stride + 1 + begin + end;
      }
      return b.prim(LayoutAttrs{p}, {x}, t, o);
    }
    case 4: {  // concat with `other` (same shape) and x again
      layout::Concat c;
      c.axis = pick(r);
      Shape o = s;
      o[c.axis] = 3 * s[c.axis];
      c.offsets = {0, s[c.axis], 2 * s[c.axis]};
      return b.prim(LayoutAttrs{c}, {x, other, x}, t, o);
    }
    case 5: {  // gather
      layout::Gather gt;
      gt.axis = pick(r);
      const int64_t n = 1 + pick(5);
      for (int64_t i = 0; i < n; ++i) gt.indices.push_back(pick(s[gt.axis]));
      Shape o = s;
      o[gt.axis] = n;
      return b.prim(LayoutAttrs{gt}, {x}, t, o);
    }
    case 6: {  // tile
      Shape o = s;
      for (int64_t& d : o) d *= 1 + pick(2);
      return b.prim(LayoutAttrs{layout::Tile{}}, {x}, t, o);
    }
    default: {  // window over the last two dims, as [N, C, H, W]
      if (r != 4) return random_layout(b, x, rng, 0, other);
      layout::Window w;
      w.fill = pick(2) ? 0.0 : -1.5;
      Shape o = {s[0], s[1], 0, 0, 0, 0};
      for (int i = 0; i < 2; ++i) {
        const int64_t k = 1 + pick(3), st = 1 + pick(2), dl = 1 + pick(2), pad = pick(2);
        w.strides.push_back(st);
        w.dilations.push_back(dl);
        w.pads_begin.push_back(pad);
        const int64_t span = dl * (k - 1) + 1;
        o[2 + i] = std::max<int64_t>(1, (s[2 + i] + 2 * pad - span) / st + 1);
        o[4 + i] = k;
      }
      return b.prim(LayoutAttrs{w}, {x}, t, o);
    }
  }
}

inline PrimGraph random_layout_graph(std::mt19937& rng, int round) {
  GraphBuilder b(rng);
  std::vector<std::string> pool = {b.input(DType::kFloat32, {2, 3, 4, 5})};
  const int prims = 5 + rng() % 5;
  int step = 0;
  while (static_cast<int>(b.g.prims.size()) < prims) {
    const std::string x = pool[rng() % pool.size()];
    const Shape s = b.info(x).shape;
    if (numel(s) > 4000) continue;
    const int r = rng() % 10;
    if (r < 5) {
      // layout kinds in turn, so each graph sees several
      const std::string other =
          b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {x}, DType::kFloat32, s);
      if (rng() % 2) pool.push_back(other);
      pool.push_back(random_layout(b, x, rng, (round + step++) % 8, other));
    } else if (r < 7) {
      ReduceAttrs red;
      red.op = static_cast<ReduceOp>(rng() % 5);
      Shape o = s;
      for (size_t d = 0; d < s.size(); ++d)
        if (rng() % 2 || (d + 1 == s.size() && red.axes.empty())) red.axes.push_back(d), o[d] = 1;
      const std::string y = b.prim(red, {x}, DType::kFloat32, o);
      pool.push_back(y);
      if (rng() % 2) {  // and broadcast back, combined with x (softmax-like)
        const std::string bc = b.prim(BroadcastAttrs{}, {y}, DType::kFloat32, s);
        pool.push_back(b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}},
                              {x, bc}, DType::kFloat32, s));
      }
    } else {
      const ScalarOp ops[] = {ScalarOp::kExp, ScalarOp::kNeg, ScalarOp::kSigmoid, ScalarOp::kAbs};
      pool.push_back(
          b.prim(ElementwiseAttrs{ops[rng() % 4], {Operand{0, 0}}}, {x}, DType::kFloat32, s));
    }
  }
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

inline const DType kTypes[] = {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kBool};

inline PrimGraph bert_mask_graph(std::mt19937& rng) {
  GraphBuilder b(rng);
  const std::string mask = b.input(DType::kInt64, {2, 8});
  const std::string scores = b.input(DType::kFloat32, {2, 4, 8, 8});
  const std::string m4 =
      b.prim(LayoutAttrs{layout::Reshape{}}, {mask}, DType::kInt64, {2, 1, 1, 8});
  const std::string f = b.prim(ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}}, {m4},
                               DType::kFloat32, {2, 1, 1, 8});
  const std::string inv =
      b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{-1, 1.0}, Operand{0, 0}}}, {f},
             DType::kFloat32, {2, 1, 1, 8});
  const std::string big =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, -1e4}}}, {inv},
             DType::kFloat32, {2, 1, 1, 8});
  const std::string bc = b.prim(BroadcastAttrs{}, {big}, DType::kFloat32, {2, 4, 8, 8});
  const std::string sum = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {scores, bc}, DType::kFloat32, {2, 4, 8, 8});
  const std::string eq = b.prim(ElementwiseAttrs{ScalarOp::kEqual, {Operand{0, 0}, Operand{-1, 0}}},
                                {m4}, DType::kBool, {2, 1, 1, 8});
  const std::string eqb = b.prim(BroadcastAttrs{}, {eq}, DType::kBool, {2, 4, 8, 8});
  b.prim(ElementwiseAttrs{ScalarOp::kWhere, {Operand{0, 0}, Operand{-1, -INFINITY}, Operand{1, 0}}},
         {eqb, sum}, DType::kFloat32, {2, 4, 8, 8});
  b.g.outputs = {b.g.prims.back().output(), sum};
  return b.g;
}

inline PrimGraph random_mask_graph(std::mt19937& rng) {
  GraphBuilder b(rng);
  const Shape full = {2, 3, 4};
  std::map<DType, std::vector<std::string>> pool;
  for (DType t : kTypes) pool[t].push_back(b.input(t, full));
  // Nonzero integer divisors: constants in [1, 4) and [-4, -1).
  pool[DType::kInt64].push_back(b.input(DType::kInt64, full, true, 1, 4));
  const std::string div64 = pool[DType::kInt64].back();
  const std::string div32 = b.input(DType::kInt32, full, true, -4, -1);
  auto any = [&](DType t) { return pool[t][rng() % pool[t].size()]; };
  auto add = [&](PrimAttrs a, std::vector<std::string> in, DType t, const Shape& s = {2, 3, 4}) {
    const std::string y = b.prim(std::move(a), std::move(in), t, s);
    if (s == full) pool[t].push_back(y);
    return y;
  };
  const int prims = 6 + rng() % 6;
  while (static_cast<int>(b.g.prims.size()) < prims) {
    const int r = rng() % 9;
    const DType t = kTypes[rng() % 4];
    if (r == 0) {  // cast
      add(ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}}, {any(t)}, kTypes[rng() % 4]);
    } else if (r == 1) {  // predicate of two tensors of one dtype
      const ScalarOp ops[] = {ScalarOp::kEqual, ScalarOp::kLess, ScalarOp::kLessEqual,
                              ScalarOp::kGreater, ScalarOp::kGreaterEqual};
      add(ElementwiseAttrs{ops[rng() % 5], {Operand{0, 0}, Operand{1, 0}}}, {any(t), any(t)},
          DType::kBool);
    } else if (r == 2) {  // logic
      const ScalarOp ops[] = {ScalarOp::kAnd, ScalarOp::kOr, ScalarOp::kXor};
      if (rng() % 3 == 0)
        add(ElementwiseAttrs{ScalarOp::kNot, {Operand{0, 0}}}, {any(DType::kBool)}, DType::kBool);
      else
        add(ElementwiseAttrs{ops[rng() % 3], {Operand{0, 0}, Operand{1, 0}}},
            {any(DType::kBool), any(DType::kBool)}, DType::kBool);
    } else if (r == 3) {  // where
      const DType v = kTypes[rng() % 4];
      if (rng() % 2)
        add(ElementwiseAttrs{ScalarOp::kWhere, {Operand{0, 0}, Operand{1, 0}, Operand{2, 0}}},
            {any(DType::kBool), any(v), any(v)}, v);
      else
        add(ElementwiseAttrs{ScalarOp::kWhere,
                             {Operand{0, 0}, Operand{-1, -INFINITY}, Operand{1, 0}}},
            {any(DType::kBool), any(DType::kFloat32)}, DType::kFloat32);
    } else if (r == 4) {  // integer arithmetic
      const bool wide = rng() % 2;
      const DType it = wide ? DType::kInt64 : DType::kInt32;
      if (pool[it].empty()) continue;
      const ScalarOp ops[] = {ScalarOp::kAdd,       ScalarOp::kSub,       ScalarOp::kMul,
                              ScalarOp::kDiv,       ScalarOp::kMod,       ScalarOp::kFmod,
                              ScalarOp::kMax,       ScalarOp::kMin,       ScalarOp::kPow,
                              ScalarOp::kBitAnd,    ScalarOp::kBitOr,     ScalarOp::kBitXor,
                              ScalarOp::kShiftLeft, ScalarOp::kShiftRight};
      const ScalarOp op = ops[rng() % std::size(ops)];
      const bool divides = op == ScalarOp::kDiv || op == ScalarOp::kMod || op == ScalarOp::kFmod;
      const std::string y = divides ? (wide ? div64 : div32) : any(it);
      if (rng() % 3 == 0)
        add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{-1, divides ? -3.0 : 2.0}}}, {any(it)},
            it);
      else
        add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {any(it), y}, it);
      if (rng() % 2)
        add(ElementwiseAttrs{rng() % 2 ? ScalarOp::kNeg : ScalarOp::kAbs, {Operand{0, 0}}},
            {pool[it].back()}, it);
    } else if (r == 5) {  // layout of any dtype: transpose to [4, 3, 2]... and back
      layout::Transpose tr{{2, 1, 0}};
      const std::string x = b.prim(LayoutAttrs{tr}, {any(t)}, t, {4, 3, 2});
      layout::Gather g{1, {2, 0, 0}};
      const std::string y = b.prim(LayoutAttrs{g}, {x}, t, {4, 3, 2});
      add(LayoutAttrs{tr}, {y}, t);
    } else if (r == 6) {  // a slice broadcast back, or a concat of halves
      if (rng() % 2) {
        const std::string x =
            b.prim(LayoutAttrs{layout::Slice{{0, 2, 0}, {1, 1, 1}}}, {any(t)}, t, {2, 1, 4});
        add(BroadcastAttrs{}, {x}, t);
      } else {
        const std::string x = any(t);
        const std::string lo =
            b.prim(LayoutAttrs{layout::Slice{{0, 0, 0}, {1, 1, 1}}}, {x}, t, {2, 3, 2});
        const std::string hi =
            b.prim(LayoutAttrs{layout::Slice{{0, 0, 3}, {1, 1, -1}}}, {x}, t, {2, 3, 2});
        // offsets in either order
        add(LayoutAttrs{layout::Concat{
                2, rng() % 2 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{2, 0}}},
            {hi, lo}, t);
      }
    } else if (r == 7 && t != DType::kFloat32) {  // integer and bool reductions
      ReduceAttrs red{static_cast<ReduceOp>(rng() % 5), {rng() % 2 ? 2 : 1}};
      Shape s = full;
      s[red.axes[0]] = 1;
      const std::string y = add(red, {any(t)}, t, s);
      add(BroadcastAttrs{}, {y}, t);
    } else {  // float arithmetic from a cast
      add(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 2.5}}},
          {any(DType::kFloat32)}, DType::kFloat32);
    }
  }
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

}  // namespace kora_codegen_test
