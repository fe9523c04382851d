// Interpreter tests of reduce and broadcast primitives: every reduce op over several axis
// sets against a brute-force loop over all elements (float32, float64, int32), NaN
// propagation, empty reductions, and broadcasts of size-1 dims.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "interpreter/interp_helpers.h"
#include "kora/error.h"

namespace kora_interp_test {
namespace {

using kora::ReduceAttrs;
using kora::ReduceOp;

// Coordinates of flat index i in `shape`.
std::vector<int64_t> coords(int64_t i, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) c[d] = i % shape[d], i /= shape[d];
  return c;
}

// Brute force: for each output element, visit every input element and keep those whose
// coordinates agree off the reduced axes.
std::vector<double> brute_reduce(ReduceOp op, const std::vector<double>& x, const Shape& shape,
                                 const std::vector<int64_t>& axes) {
  Shape out_shape = shape;
  for (int64_t a : axes) out_shape[a] = 1;
  std::vector<double> out;
  for (int64_t o = 0; o < kora::numel(out_shape); ++o) {
    const std::vector<int64_t> oc = coords(o, out_shape);
    std::vector<double> vals;
    for (int64_t i = 0; i < kora::numel(shape); ++i) {
      std::vector<int64_t> ic = coords(i, shape);
      for (int64_t a : axes) ic[a] = 0;
      if (ic == oc) vals.push_back(x[i]);
    }
    double r = 0;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        for (double v : vals) r += v;
        if (op == ReduceOp::kMean) r /= static_cast<double>(vals.size());
        break;
      case ReduceOp::kProd:
        r = 1;
        for (double v : vals) r *= v;
        break;
      case ReduceOp::kMax:
        r = -INFINITY;
        for (double v : vals) r = std::max(r, v);
        break;
      case ReduceOp::kMin:
        r = INFINITY;
        for (double v : vals) r = std::min(r, v);
        break;
    }
    out.push_back(r);
  }
  return out;
}

const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd,
                         ReduceOp::kMean};

TEST(InterpReduce, EveryOpOverSeveralAxisSetsFloat32) {
  const Shape shape = {2, 3, 4, 5};
  const Tensor x = random_tensor(DType::kFloat32, shape, 0.5, 1.5, 11);
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {3}, {1, 3}, {0, 2}, {0, 1, 2, 3}};
  for (ReduceOp op : kOps)
    for (const auto& axes : axis_sets) {
      SCOPED_TRACE(std::string(kora::reduce_op_name(op)) + " over " + kora::shape_str(axes));
      Shape out_shape = shape;
      for (int64_t a : axes) out_shape[a] = 1;
      const Tensor y = run1(ReduceAttrs{op, axes}, {x}, DType::kFloat32, out_shape);
      ASSERT_EQ(y.shape(), out_shape);
      expect_near(y, brute_reduce(op, x.to_double(), shape, axes), 1e-6, 1e-6);
    }
}

TEST(InterpReduce, Float64AndInt32) {
  const Shape shape = {3, 1, 4};
  const Tensor x = random_tensor(DType::kFloat64, shape, -2, 2, 5);
  for (ReduceOp op : kOps) {
    const Tensor y = run1(ReduceAttrs{op, {0, 2}}, {x}, DType::kFloat64, {1, 1, 1});
    expect_near(y, brute_reduce(op, x.to_double(), shape, {0, 2}), 1e-12, 1e-12);
  }
  const Tensor xi = Tensor::from_int64(DType::kInt32, {2, 3}, {1, -2, 3, 4, 5, -6});
  auto run = [&](ReduceOp op, std::vector<int64_t> axes, Shape out) {
    const Tensor y = run1(ReduceAttrs{op, axes}, {xi}, DType::kInt32, out);
    EXPECT_EQ(y.dtype(), DType::kInt32);
    return y.to_int64();
  };
  EXPECT_EQ(run(ReduceOp::kSum, {1}, {2, 1}), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(run(ReduceOp::kProd, {0}, {1, 3}), (std::vector<int64_t>{4, -10, -18}));
  EXPECT_EQ(run(ReduceOp::kMax, {0, 1}, {1, 1}), (std::vector<int64_t>{5}));
  EXPECT_EQ(run(ReduceOp::kMin, {1}, {2, 1}), (std::vector<int64_t>{-2, -6}));
  EXPECT_EQ(run(ReduceOp::kMean, {1}, {2, 1}), (std::vector<int64_t>{0, 1}));  // 2/3, 3/3
}

TEST(InterpReduce, MaxAndMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = f32({2, 3}, {1, nan, 3, 4, 5, 6});
  expect_near(run1(ReduceAttrs{ReduceOp::kMax, {1}}, {x}, DType::kFloat32, {2, 1}), {nan, 6});
  expect_near(run1(ReduceAttrs{ReduceOp::kMin, {1}}, {x}, DType::kFloat32, {2, 1}), {nan, 4});
  expect_near(run1(ReduceAttrs{ReduceOp::kMax, {0}}, {x}, DType::kFloat32, {1, 3}), {4, nan, 6});
}

TEST(InterpReduce, EmptyReductions) {
  const Tensor x(DType::kFloat32, {2, 0, 3});
  auto run = [&](ReduceOp op) {
    return run1(ReduceAttrs{op, {1}}, {x}, DType::kFloat32, {2, 1, 3});
  };
  expect_near(run(ReduceOp::kSum), std::vector<double>(6, 0));
  expect_near(run(ReduceOp::kProd), std::vector<double>(6, 1));
  expect_near(run(ReduceOp::kMax), std::vector<double>(6, -INFINITY));
  expect_near(run(ReduceOp::kMin), std::vector<double>(6, INFINITY));
  const Tensor xi(DType::kInt32, {0, 2});
  const Tensor mx = run1(ReduceAttrs{ReduceOp::kMax, {0}}, {xi}, DType::kInt32, {1, 2});
  EXPECT_EQ(mx.to_int64(), (std::vector<int64_t>{INT32_MIN, INT32_MIN}));
  const Tensor mn = run1(ReduceAttrs{ReduceOp::kMin, {0}}, {xi}, DType::kInt32, {1, 2});
  EXPECT_EQ(mn.to_int64(), (std::vector<int64_t>{INT32_MAX, INT32_MAX}));
  const Tensor xu(DType::kUInt8, {0});
  EXPECT_EQ(run1(ReduceAttrs{ReduceOp::kMin, {0}}, {xu}, DType::kUInt8, {1}).int64_at(0), 255);
}

TEST(InterpReduce, SumOfManyFloat32AccumulatesInDouble) {
  // 2^24 + 1 ones: a float accumulator would stop at 2^24.
  const int64_t n = (1 << 24) + 8;
  Tensor x(DType::kFloat32, {n});
  float* p = reinterpret_cast<float*>(x.mutable_bytes());
  for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
  const Tensor y = run1(ReduceAttrs{ReduceOp::kSum, {0}}, {x}, DType::kFloat32, {1});
  EXPECT_EQ(y.double_at(0), static_cast<double>(static_cast<float>(n)));
  const Tensor m = run1(ReduceAttrs{ReduceOp::kMean, {0}}, {x}, DType::kFloat32, {1});
  EXPECT_EQ(m.double_at(0), 1.0);
}

TEST(InterpReduce, BadAxesAreErrors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run1(ReduceAttrs{ReduceOp::kSum, {2}}, {x}, DType::kFloat32, {2, 3}), kora::Error);
  EXPECT_THROW(run1(ReduceAttrs{ReduceOp::kSum, {1, 0}}, {x}, DType::kFloat32, {1, 1}),
               kora::Error);
  EXPECT_THROW(run1(ReduceAttrs{ReduceOp::kSum, {1}}, {x}, DType::kFloat32, {2}), kora::Error);
}

TEST(InterpBroadcast, SizeOneDimsExpand) {
  const Shape in_shape = {3, 1, 4, 1}, out_shape = {3, 5, 4, 2};
  for (DType dt : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
    SCOPED_TRACE(kora::dtype_name(dt));
    const Tensor x = random_tensor(dt, in_shape, 0, 8, 3);
    const Tensor y = run1(kora::BroadcastAttrs{}, {x}, dt, out_shape);
    ASSERT_EQ(y.dtype(), dt);
    std::vector<double> want;
    for (int64_t i = 0; i < kora::numel(out_shape); ++i) {
      std::vector<int64_t> c = coords(i, out_shape);
      int64_t src = 0;
      for (size_t d = 0; d < c.size(); ++d) src = src * in_shape[d] + (in_shape[d] == 1 ? 0 : c[d]);
      want.push_back(x.double_at(src));
    }
    expect_near(y, want, 0, 0);
  }
  // A scalar-like [1, 1] to [2, 3], and a no-op broadcast.
  const Tensor s = f32({1, 1}, {2.5});
  expect_near(run1(kora::BroadcastAttrs{}, {s}, DType::kFloat32, {2, 3}),
              std::vector<double>(6, 2.5));
  const Tensor x = f32({2}, {1, 2});
  expect_near(run1(kora::BroadcastAttrs{}, {x}, DType::kFloat32, {2}), {1, 2});
  EXPECT_THROW(run1(kora::BroadcastAttrs{}, {x}, DType::kFloat32, {3}), kora::Error);
}

}  // namespace
}  // namespace kora_interp_test
