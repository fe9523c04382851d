// CPU code generation of layout and reduce primitives against the interpreter: random
// float32 graphs chaining every layout map (transpose, reshape, slice with negative
// steps, pad in each mode with strides and negative begins, concat, gather, tile,
// window), every reduce op over random axes, and elementwise/broadcast members between
// them; every candidate x schedule checked (tests/cpu/codegen_harness.h).
#include <algorithm>
#include <numeric>

#include "cpu/codegen_harness.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

// One random layout primitive reading `x`; returns its output.
std::string random_layout(GraphBuilder& b, const std::string& x, std::mt19937& rng, int kind,
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

PrimGraph random_graph(std::mt19937& rng, int round) {
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

// Every map kind and pad mode at least once, each read by an elementwise member: a graph
// of independent chains x -> layout -> exp.
TEST(CpuCodegenLayout, EachMapAndPadMode) {
  std::mt19937 rng(9);
  GraphBuilder b(rng);
  const std::string x = b.input(DType::kFloat32, {2, 3, 4, 5});
  std::vector<std::string> outs;
  auto chain = [&](const std::string& y) {
    outs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {y}, DType::kFloat32,
                          b.info(y).shape));
  };
  for (int kind = 0; kind < 8; ++kind) chain(random_layout(b, x, rng, kind, x));
  for (auto mode :
       {layout::PadMode::kConstant, layout::PadMode::kReflect, layout::PadMode::kEdge}) {
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{2, 3}, {-1, 2}, {3, -1}}) {
      layout::Pad p;
      p.mode = mode;
      p.value = -0.5;
      p.begin = {0, begin, 1, begin};
      p.stride = {1, 1, 1, 1};
      Shape o = {2, 3 + begin + end, 4 + 1 + 1, 5 + begin + end};
      if (mode == layout::PadMode::kConstant && begin == 3) p.stride[3] = 2, o[3] += 4;
      chain(b.prim(LayoutAttrs{p}, {x}, DType::kFloat32, o));
    }
  }
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 2, rng, stats);
  EXPECT_GE(stats.kernels, 2 * 17);
}

TEST(CpuCodegenLayout, EveryCandidateMatchesTheInterpreter) {
  std::mt19937 rng(7);
  kora_codegen_test::CheckStats stats;
  for (int round = 0; round < 7; ++round) {
    const PrimGraph g = random_graph(rng, round);
    kora_codegen_test::check_graph(g, 4, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.kernels, 70);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

}  // namespace

namespace {

// Max and min with NaN in some rows (sqrt of slightly negative values), over the last
// axis (one accumulator, vectorized) and over a middle one (a row of accumulators).
TEST(CpuCodegenLayout, MaxAndMinPropagateNaN) {
  std::mt19937 rng(4);
  GraphBuilder b(rng);
  const Shape s = {3, 4, 37};
  const std::string x = b.input(DType::kFloat32, s);
  const std::string shifted = b.prim(
      ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{-1, 1.9}}}, {x}, DType::kFloat32, s);
  const std::string r =
      b.prim(ElementwiseAttrs{ScalarOp::kSqrt, {Operand{0, 0}}}, {shifted}, DType::kFloat32, s);
  std::vector<std::string> outs;
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin})
    for (int64_t axis : {1, 2}) {
      Shape o = s;
      o[axis] = 1;
      outs.push_back(b.prim(ReduceAttrs{op, {axis}}, {r}, DType::kFloat32, o));
    }
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 3, rng, stats);
  EXPECT_GE(stats.kernels, 8);
}

}  // namespace
