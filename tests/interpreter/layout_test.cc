// Interpreter tests of layout primitives: each of the eight index maps (transpose,
// reshape, slice with negative steps, pad with cropping, interior stride and the reflect
// and edge modes, multi-input concat, gather with constant indices, tile, window with fill)
// against the map's formula evaluated element by element in the test.
#include <gtest/gtest.h>

#include <functional>

#include "interpreter/interp_helpers.h"
#include "kora/error.h"

namespace kora_interp_test {
namespace {

namespace layout = kora::layout;
using kora::LayoutAttrs;

// Expected output: for each output coordinate, the input coordinate `map` gives (or an
// empty vector: `fill`).
std::vector<double> expected(const Tensor& x, const Shape& out_shape,
                             const std::function<std::vector<int64_t>(std::vector<int64_t>)>& map,
                             double fill = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < kora::numel(out_shape); ++i) {
    const std::vector<int64_t> c = map(coords(i, out_shape));
    v.push_back(c.empty() ? fill : x.double_at(flat(c, x.shape())));
  }
  return v;
}

TEST(InterpLayout, Transpose) {
  const Tensor x = random_tensor(DType::kFloat32, {2, 3, 4}, -1, 1, 1);
  const std::vector<int64_t> perm = {2, 0, 1};
  const Shape out = {4, 2, 3};
  const Tensor y = run1(LayoutAttrs{layout::Transpose{perm}}, {x}, DType::kFloat32, out);
  expect_near(y,
              expected(x, out,
                       [&](std::vector<int64_t> o) {
                         std::vector<int64_t> in(3);
                         for (size_t d = 0; d < 3; ++d) in[perm[d]] = o[d];
                         return in;
                       }),
              0, 0);
  // int16 and a transpose keeping the last dim
  const Tensor xi = random_tensor(DType::kInt16, {3, 2, 5}, -100, 100, 2);
  const Tensor yi = run1(LayoutAttrs{layout::Transpose{{1, 0, 2}}}, {xi}, DType::kInt16, {2, 3, 5});
  expect_near(yi,
              expected(xi, {2, 3, 5},
                       [](std::vector<int64_t> o) {
                         return std::vector<int64_t>{o[1], o[0], o[2]};
                       }),
              0, 0);
  EXPECT_THROW(run1(LayoutAttrs{layout::Transpose{{0, 0, 1}}}, {x}, DType::kFloat32, {2, 2, 3}),
               kora::Error);
}

TEST(InterpLayout, Reshape) {
  const Tensor x = random_tensor(DType::kFloat64, {2, 6}, -1, 1, 3);
  const Tensor y = run1(LayoutAttrs{layout::Reshape{}}, {x}, DType::kFloat64, {3, 1, 4});
  EXPECT_EQ(y.shape(), (Shape{3, 1, 4}));
  expect_near(y, x.to_double(), 0, 0);
  EXPECT_THROW(run1(LayoutAttrs{layout::Reshape{}}, {x}, DType::kFloat64, {5}), kora::Error);
}

TEST(InterpLayout, SliceWithNegativeSteps) {
  const Tensor x = random_tensor(DType::kFloat32, {5, 6, 3}, -1, 1, 4);
  const layout::Slice s{{4, 1, 2}, {-2, 2, -1}};
  const Shape out = {3, 3, 3};
  const Tensor y = run1(LayoutAttrs{s}, {x}, DType::kFloat32, out);
  expect_near(y,
              expected(x, out,
                       [&](std::vector<int64_t> o) {
                         for (size_t d = 0; d < 3; ++d) o[d] = s.starts[d] + o[d] * s.steps[d];
                         return o;
                       }),
              0, 0);
  // Reading past the input is an error, not a wild read.
  EXPECT_THROW(
      run1(LayoutAttrs{layout::Slice{{0, 0, 0}, {2, 1, 1}}}, {x}, DType::kFloat32, {4, 6, 3}),
      kora::Error);
}

// Pad reference: per dim, q = o - begin; inside when q % stride == 0 and q / stride in
// range; else constant -> fill, edge -> clamp, reflect -> mirror (numpy 'reflect').
int64_t pad_ref(int64_t o, int64_t begin, int64_t stride, int64_t n, layout::PadMode mode) {
  int64_t q = o - begin;
  if (q >= 0 && q % stride == 0 && q / stride < n) return q / stride;
  if (mode == layout::PadMode::kConstant) return -1;
  if (mode == layout::PadMode::kEdge) return std::clamp<int64_t>(q, 0, n - 1);
  while (q < 0 || q >= n) q = q < 0 ? -q : 2 * (n - 1) - q;  // reflect repeatedly
  return q;
}

void check_pad(const Tensor& x, const layout::Pad& p, const Shape& out) {
  const Tensor y = run1(LayoutAttrs{p}, {x}, x.dtype(), out);
  const std::vector<int64_t> stride =
      p.stride.empty() ? std::vector<int64_t>(out.size(), 1) : p.stride;
  expect_near(y,
              expected(
                  x, out,
                  [&](std::vector<int64_t> o) {
                    for (size_t d = 0; d < o.size(); ++d) {
                      o[d] = pad_ref(o[d], p.begin[d], stride[d], x.shape()[d], p.mode);
                      if (o[d] < 0) return std::vector<int64_t>{};
                    }
                    return o;
                  },
                  p.value),
              0, 0);
}

TEST(InterpLayout, PadConstantWithCropAndStride) {
  const Tensor x = random_tensor(DType::kFloat32, {3, 4, 2}, 1, 2, 5);
  // dim 0: 1 before, stride 2 (3 -> 1 + 5 + 2 = 8); dim 1: crop 1 before, pad 2 after;
  // dim 2: crop 1 at the end.
  check_pad(x, layout::Pad{{1, -1, 0}, {2, 1, 1}, layout::PadMode::kConstant, -7.5}, {8, 5, 1});
  // int64 with stride 3 and a value
  const Tensor xi = random_tensor(DType::kInt64, {2, 3}, -50, 50, 6);
  check_pad(xi, layout::Pad{{2, 0}, {1, 3}, layout::PadMode::kConstant, 9}, {5, 8});
}

TEST(InterpLayout, PadReflectAndEdge) {
  const Tensor v = f32({4}, {0, 1, 2, 3});
  const Tensor r = run1(LayoutAttrs{layout::Pad{{3}, {1}, layout::PadMode::kReflect, 0}}, {v},
                        DType::kFloat32, {11});
  expect_near(r, {3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1}, 0, 0);  // numpy.pad(..., (3, 4), 'reflect')
  const Tensor e = run1(LayoutAttrs{layout::Pad{{3}, {1}, layout::PadMode::kEdge, 0}}, {v},
                        DType::kFloat32, {11});
  expect_near(e, {0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3}, 0, 0);
  const Tensor x = random_tensor(DType::kFloat32, {3, 4}, -1, 1, 7);
  check_pad(x, layout::Pad{{2, 1}, {}, layout::PadMode::kReflect, 0}, {7, 8});
  check_pad(x, layout::Pad{{2, -1}, {1, 1}, layout::PadMode::kEdge, 0}, {6, 5});
  check_pad(x, layout::Pad{{0, 3}, {1, 1}, layout::PadMode::kReflect, 0}, {3, 12});
}

TEST(InterpLayout, ConcatOfThreeInputs) {
  const Tensor a = random_tensor(DType::kFloat32, {2, 1, 3}, -1, 1, 8);
  const Tensor b = random_tensor(DType::kFloat32, {2, 4, 3}, -1, 1, 9);
  const Tensor c = random_tensor(DType::kFloat32, {2, 2, 3}, -1, 1, 10);
  const Tensor y =
      run1(LayoutAttrs{layout::Concat{1, {0, 1, 5}}}, {a, b, c}, DType::kFloat32, {2, 7, 3});
  std::vector<double> want;
  for (int64_t i = 0; i < 2 * 7 * 3; ++i) {
    const std::vector<int64_t> o = coords(i, {2, 7, 3});
    const Tensor& src = o[1] < 1 ? a : o[1] < 5 ? b : c;
    const int64_t off = o[1] < 1 ? 0 : o[1] < 5 ? 1 : 5;
    want.push_back(src.double_at(flat({o[0], o[1] - off, o[2]}, src.shape())));
  }
  expect_near(y, want, 0, 0);
  // axis 0, uint8
  const Tensor u1 = Tensor::from_int64(DType::kUInt8, {1, 2}, {1, 2});
  const Tensor u2 = Tensor::from_int64(DType::kUInt8, {2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(
      run1(LayoutAttrs{layout::Concat{0, {0, 1}}}, {u1, u2}, DType::kUInt8, {3, 2}).to_int64(),
      (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(InterpLayout, GatherWithConstantIndices) {
  const Tensor x = random_tensor(DType::kFloat32, {3, 5, 2}, -1, 1, 11);
  const std::vector<int64_t> idx = {4, 0, 0, 2};
  const Tensor y = run1(LayoutAttrs{layout::Gather{1, idx}}, {x}, DType::kFloat32, {3, 4, 2});
  expect_near(y,
              expected(x, {3, 4, 2},
                       [&](std::vector<int64_t> o) {
                         o[1] = idx[o[1]];
                         return o;
                       }),
              0, 0);
  EXPECT_THROW(run1(LayoutAttrs{layout::Gather{1, {5}}}, {x}, DType::kFloat32, {3, 1, 2}),
               kora::Error);
}

TEST(InterpLayout, Tile) {
  const Tensor x = random_tensor(DType::kFloat32, {2, 3}, -1, 1, 12);
  const Tensor y = run1(LayoutAttrs{layout::Tile{}}, {x}, DType::kFloat32, {6, 6});
  expect_near(y,
              expected(x, {6, 6},
                       [](std::vector<int64_t> o) {
                         return std::vector<int64_t>{o[0] % 2, o[1] % 3};
                       }),
              0, 0);
}

TEST(InterpLayout, WindowWithFill) {
  const Tensor x = random_tensor(DType::kFloat32, {1, 2, 5, 6}, -1, 1, 13);
  const layout::Window w{{2, 3}, {1, 2}, {1, 2}, -100};
  // O1 = 3 (rows -1, 1, 3 + k), O2 = 2; K = (3, 2).
  const Shape out = {1, 2, 3, 2, 3, 2};
  const Tensor y = run1(LayoutAttrs{w}, {x}, DType::kFloat32, out);
  expect_near(y,
              expected(
                  x, out,
                  [&](std::vector<int64_t> o) {
                    std::vector<int64_t> in = {o[0], o[1], 0, 0};
                    for (size_t i = 0; i < 2; ++i) {
                      in[2 + i] =
                          o[2 + i] * w.strides[i] + o[4 + i] * w.dilations[i] - w.pads_begin[i];
                      if (in[2 + i] < 0 || in[2 + i] >= x.shape()[2 + i])
                        return std::vector<int64_t>{};
                    }
                    return in;
                  },
                  -100),
              0, 0);
  // Channels last: input [N, H, W, C], output [N, O1, O2, K1, K2, C], the same windows.
  layout::Window wl = w;
  wl.channels_last = true;
  const Tensor xl = random_tensor(DType::kFloat32, {1, 5, 6, 2}, -1, 1, 14);
  const Shape out_l = {1, 3, 2, 3, 2, 2};
  expect_near(run1(LayoutAttrs{wl}, {xl}, DType::kFloat32, out_l),
              expected(
                  xl, out_l,
                  [&](std::vector<int64_t> o) {
                    std::vector<int64_t> in = {o[0], 0, 0, o[5]};
                    for (size_t i = 0; i < 2; ++i) {
                      in[1 + i] =
                          o[1 + i] * w.strides[i] + o[3 + i] * w.dilations[i] - w.pads_begin[i];
                      if (in[1 + i] < 0 || in[1 + i] >= xl.shape()[1 + i])
                        return std::vector<int64_t>{};
                    }
                    return in;
                  },
                  -100),
              0, 0);
  // 1-D window, int32, fill 0
  const Tensor xi = Tensor::from_int64(DType::kInt32, {1, 1, 4}, {1, 2, 3, 4});
  const Tensor yi =
      run1(LayoutAttrs{layout::Window{{2}, {1}, {1}, 0}}, {xi}, DType::kInt32, {1, 1, 3, 2});
  EXPECT_EQ(yi.to_int64(), (std::vector<int64_t>{0, 1, 2, 3, 4, 0}));
}

}  // namespace
}  // namespace kora_interp_test
