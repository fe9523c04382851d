// Interpreter tests of linear primitives: matmul (batch broadcast, a product large enough
// for the blocked and two-threaded GEMM, float64 and int32) and convolution (2-D grouped,
// depthwise, strided, dilated, asymmetrically padded, pointwise; 1-D; 3-D; float64; one
// whose im2col is chunked) against naive formulas in double.
#include <gtest/gtest.h>

#include "interpreter/interp_helpers.h"
#include "kora/error.h"

namespace kora_interp_test {
namespace {

using kora::ConvAttrs;
using kora::LinearAttrs;
using kora::MatMulAttrs;

std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, const Shape& out) {
  const std::vector<double> av = a.to_double(), bv = b.to_double();
  const size_t r = out.size();
  const int64_t k = a.shape()[r - 1];
  std::vector<double> y;
  for (int64_t i = 0; i < kora::numel(out); ++i) {
    const std::vector<int64_t> c = coords(i, out);
    std::vector<int64_t> ca = c, cb = c;
    for (size_t d = 0; d + 2 < r; ++d) {
      if (a.shape()[d] == 1) ca[d] = 0;
      if (b.shape()[d] == 1) cb[d] = 0;
    }
    double s = 0;
    for (int64_t p = 0; p < k; ++p) {
      ca[r - 1] = p;
      cb[r - 2] = p;
      s += av[flat(ca, a.shape())] * bv[flat(cb, b.shape())];
    }
    y.push_back(s);
  }
  return y;
}

TEST(InterpMatMul, BatchBroadcast) {
  const Tensor a = random_tensor(DType::kFloat32, {2, 1, 3, 4}, -1, 1, 1);
  const Tensor b = random_tensor(DType::kFloat32, {1, 3, 4, 5}, -1, 1, 2);
  const Shape out = {2, 3, 3, 5};
  expect_near(run1(LinearAttrs{MatMulAttrs{}}, {a, b}, DType::kFloat32, out),
              naive_matmul(a, b, out), 1e-5, 1e-5);
  // B shared by every batch (rows stacked into one GEMM), and A shared.
  const Tensor a2 = random_tensor(DType::kFloat32, {3, 2, 5, 4}, -1, 1, 3);
  const Tensor b2 = random_tensor(DType::kFloat32, {1, 1, 4, 6}, -1, 1, 4);
  expect_near(run1(LinearAttrs{MatMulAttrs{}}, {a2, b2}, DType::kFloat32, {3, 2, 5, 6}),
              naive_matmul(a2, b2, {3, 2, 5, 6}), 1e-5, 1e-5);
  const Tensor c2 = random_tensor(DType::kFloat32, {3, 2, 6, 5}, -1, 1, 9);
  expect_near(run1(LinearAttrs{MatMulAttrs{}}, {b2, c2}, DType::kFloat32, {3, 2, 4, 5}),
              naive_matmul(b2, c2, {3, 2, 4, 5}), 1e-5, 1e-5);
  EXPECT_THROW(run1(LinearAttrs{MatMulAttrs{}}, {a, a}, DType::kFloat32, {2, 1, 3, 4}),
               kora::Error);
}

TEST(InterpMatMul, LargeBlockedProduct) {
  // Crosses every GEMM block boundary (depth 256, rows 64, columns 512) with ragged edges,
  // and is big enough to split over two threads.
  const Tensor a = random_tensor(DType::kFloat32, {1, 70, 301}, -1, 1, 5);
  const Tensor b = random_tensor(DType::kFloat32, {1, 301, 530}, -1, 1, 6);
  expect_near(run1(LinearAttrs{MatMulAttrs{}}, {a, b}, DType::kFloat32, {1, 70, 530}),
              naive_matmul(a, b, {1, 70, 530}), 1e-4, 1e-4);
}

TEST(InterpMatMul, Float64AndInt32) {
  const Tensor a = random_tensor(DType::kFloat64, {2, 3, 4}, -1, 1, 7);
  const Tensor b = random_tensor(DType::kFloat64, {1, 4, 2}, -1, 1, 8);
  expect_near(run1(LinearAttrs{MatMulAttrs{}}, {a, b}, DType::kFloat64, {2, 3, 2}),
              naive_matmul(a, b, {2, 3, 2}), 1e-12, 1e-12);
  const Tensor ai = Tensor::from_int64(DType::kInt32, {2, 2}, {1, 2, 3, 4});
  const Tensor bi = Tensor::from_int64(DType::kInt32, {2, 2}, {5, 6, 7, 8});
  const Tensor y = run1(LinearAttrs{MatMulAttrs{}}, {ai, bi}, DType::kInt32, {2, 2});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.to_int64(), (std::vector<int64_t>{19, 22, 43, 50}));
}

// Naive N-d convolution straight from the definition.
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const ConvAttrs& a,
                               const Shape& out) {
  const std::vector<double> xv = x.to_double(), wv = w.to_double();
  const Shape &xs = x.shape(), &ws = w.shape();
  const size_t n = xs.size() - 2;
  const int64_t cg = ws[1], mg = ws[0] / a.group;
  const Shape kernel(ws.begin() + 2, ws.end());
  std::vector<double> y;
  for (int64_t i = 0; i < kora::numel(out); ++i) {
    const std::vector<int64_t> o = coords(i, out);
    const int64_t g = o[1] / mg;
    double s = 0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t k = 0; k < kora::numel(kernel); ++k) {
        const std::vector<int64_t> kc = coords(k, kernel);
        std::vector<int64_t> xc = {o[0], g * cg + c};
        bool inside = true;
        for (size_t d = 0; d < n; ++d) {
          const int64_t p = o[2 + d] * a.strides[d] + kc[d] * a.dilations[d] - a.pads_begin[d];
          inside = inside && p >= 0 && p < xs[2 + d];
          xc.push_back(p);
        }
        if (!inside) continue;
        std::vector<int64_t> wc = {o[1], c};
        wc.insert(wc.end(), kc.begin(), kc.end());
        s += xv[flat(xc, xs)] * wv[flat(wc, ws)];
      }
    y.push_back(s);
  }
  return y;
}

Shape conv_out(const Shape& xs, const Shape& ws, const ConvAttrs& a) {
  Shape out = {xs[0], ws[0]};
  for (size_t i = 0; i + 2 < xs.size(); ++i)
    out.push_back(
        (xs[2 + i] + a.pads_begin[i] + a.pads_end[i] - a.dilations[i] * (ws[2 + i] - 1) - 1) /
            a.strides[i] +
        1);
  return out;
}

void check_conv(const Shape& xs, const Shape& ws, const ConvAttrs& a, DType dt = DType::kFloat32,
                uint32_t seed = 1) {
  const Tensor x = random_tensor(dt, xs, -1, 1, seed);
  const Tensor w = random_tensor(dt, ws, -1, 1, seed + 100);
  const Shape out = conv_out(xs, ws, a);
  const Tensor y = run1(LinearAttrs{a}, {x, w}, dt, out);
  ASSERT_EQ(y.shape(), out);
  const double tol = dt == DType::kFloat32 ? 1e-4 : 1e-12;
  expect_near(y, naive_conv(x, w, a, out), tol, tol);
}

TEST(InterpConv, TwoDimensional) {
  {
    SCOPED_TRACE("plain 3x3 pad 1");
    check_conv({2, 3, 7, 6}, {4, 3, 3, 3}, ConvAttrs{1, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
  }
  {
    SCOPED_TRACE("grouped");
    check_conv({1, 4, 6, 6}, {6, 2, 3, 2}, ConvAttrs{2, {1, 1}, {1, 1}, {0, 1}, {1, 0}});
  }
  {
    SCOPED_TRACE("depthwise strided");
    check_conv({1, 5, 9, 8}, {5, 1, 3, 3}, ConvAttrs{5, {2, 2}, {1, 1}, {1, 1}, {1, 1}});
  }
  {
    SCOPED_TRACE("depthwise multiplier 2");
    check_conv({1, 3, 6, 6}, {6, 1, 3, 3}, ConvAttrs{3, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
  }
  {
    SCOPED_TRACE("strided dilated asymmetric pads");
    check_conv({1, 2, 11, 10}, {3, 2, 3, 2}, ConvAttrs{1, {2, 3}, {2, 3}, {2, 0}, {1, 3}});
  }
  {
    SCOPED_TRACE("pointwise");
    check_conv({2, 8, 5, 4}, {3, 8, 1, 1}, ConvAttrs{1, {1, 1}, {1, 1}, {0, 0}, {0, 0}});
  }
  {
    SCOPED_TRACE("pointwise strided, padded at the end");
    check_conv({1, 4, 5, 5}, {3, 4, 1, 1}, ConvAttrs{1, {2, 1}, {1, 1}, {0, 0}, {1, 2}});
  }
  {
    SCOPED_TRACE("kernel larger than the input, padded");
    check_conv({1, 1, 2, 2}, {1, 1, 5, 5}, ConvAttrs{1, {1, 1}, {1, 1}, {2, 2}, {2, 2}});
  }
}

TEST(InterpConv, OneAndThreeDimensional) {
  {
    SCOPED_TRACE("1-D");
    check_conv({2, 3, 17}, {4, 3, 3}, ConvAttrs{1, {2}, {2}, {1}, {2}});
  }
  {
    SCOPED_TRACE("1-D grouped");
    check_conv({1, 4, 9}, {4, 2, 2}, ConvAttrs{2, {1}, {1}, {0}, {0}});
  }
  {
    SCOPED_TRACE("3-D");
    check_conv({1, 2, 4, 5, 6}, {3, 2, 2, 3, 2},
               ConvAttrs{1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}});
  }
}

TEST(InterpConv, Float64) {
  check_conv({1, 4, 6, 5}, {4, 2, 3, 3}, ConvAttrs{2, {2, 1}, {1, 2}, {1, 1}, {0, 2}},
             DType::kFloat64);
}

TEST(InterpConv, ChunkedIm2col) {
  // depth 4608 x 1000 columns per output row: the column buffer is built a row at a time.
  check_conv({1, 512, 3, 1000}, {1, 512, 3, 3}, ConvAttrs{1, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
}

TEST(InterpConv, ShapeMismatchIsAnError) {
  const Tensor x = random_tensor(DType::kFloat32, {1, 3, 5, 5});
  const Tensor w = random_tensor(DType::kFloat32, {2, 3, 3, 3});
  const ConvAttrs a{1, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  EXPECT_THROW(run1(LinearAttrs{a}, {x, w}, DType::kFloat32, {1, 2, 4, 4}), kora::Error);
  const ConvAttrs g{2, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  EXPECT_THROW(run1(LinearAttrs{g}, {x, w}, DType::kFloat32, {1, 2, 3, 3}), kora::Error);
}

}  // namespace
}  // namespace kora_interp_test
