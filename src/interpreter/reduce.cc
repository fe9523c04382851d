// Reduce primitives: sum, max, min, prod or mean of the input over `axes`, the output
// keeping the input's rank with those dims 1. Floating types accumulate in double,
// integers in int64 (wrapping); max and min propagate NaN; an empty reduction gives sum 0,
// prod 1, max -inf (integers: the dtype's minimum), min +inf (the maximum), mean NaN (0).
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// The reduction as loops: the input's dims with size-1 dims dropped and neighbours of the
// same kind merged; out_strides[d] is 0 on reduced dims.
struct Plan {
  std::vector<int64_t> sizes, out_strides;
};

Plan make_plan(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<int64_t> sizes;
  std::vector<bool> kinds;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!kinds.empty() && kinds.back() == reduced[d]) {
      sizes.back() *= shape[d];
    } else {
      sizes.push_back(shape[d]);
      kinds.push_back(reduced[d]);
    }
  }
  Plan plan;
  plan.sizes = sizes;
  plan.out_strides.assign(sizes.size(), 0);
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (kinds[d]) continue;
    plan.out_strides[d] = stride;
    stride *= sizes[d];
  }
  return plan;
}

// acc[out(i)] = f(acc[out(i)], x[i]) over every input element i, in row-major order.
template <typename In, typename Acc, typename F>
void accumulate(const Plan& plan, const In* x, Acc* acc, F f) {
  if (plan.sizes.empty()) {
    acc[0] = f(acc[0], static_cast<Acc>(x[0]));
    return;
  }
  const size_t m = plan.sizes.size();
  const int64_t inner = plan.sizes[m - 1], inner_stride = plan.out_strides[m - 1];
  int64_t total = 1;
  for (int64_t s : plan.sizes) total *= s;
  if (total == 0) return;
  std::vector<int64_t> idx(m, 0);
  int64_t base = 0;
  for (int64_t o = 0; o < total / inner; ++o) {
    const In* row = x + o * inner;
    Acc* a = acc + base;
    if (inner_stride == 0) {
      Acc v = a[0];
      for (int64_t j = 0; j < inner; ++j) v = f(v, static_cast<Acc>(row[j]));
      a[0] = v;
    } else {
      for (int64_t j = 0; j < inner; ++j) a[j] = f(a[j], static_cast<Acc>(row[j]));
    }
    for (size_t d = m - 1; d-- > 0;) {
      base += plan.out_strides[d];
      if (++idx[d] < plan.sizes[d]) break;
      base -= plan.out_strides[d] * plan.sizes[d];
      idx[d] = 0;
    }
  }
}

template <typename In, typename Acc>
void reduce_into(ReduceOp op, const Plan& plan, const In* x, std::vector<Acc>& acc) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      if constexpr (std::is_integral_v<Acc>)
        return accumulate(plan, x, acc.data(), [](Acc a, Acc v) {
          return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
        });
      else
        return accumulate(plan, x, acc.data(), [](Acc a, Acc v) { return a + v; });
    case ReduceOp::kProd:
      if constexpr (std::is_integral_v<Acc>)
        return accumulate(plan, x, acc.data(), [](Acc a, Acc v) {
          return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(v));
        });
      else
        return accumulate(plan, x, acc.data(), [](Acc a, Acc v) { return a * v; });
    case ReduceOp::kMax:
      return accumulate(plan, x, acc.data(),
                        [](Acc a, Acc v) { return (v > a || is_nan(v)) ? v : a; });
    case ReduceOp::kMin:
      return accumulate(plan, x, acc.data(),
                        [](Acc a, Acc v) { return (v < a || is_nan(v)) ? v : a; });
  }
}

// The smallest and largest value of an integer or bool dtype, as int64 (uint64's largest
// wraps to -1, which stores back as its maximum).
std::pair<int64_t, int64_t> int_limits(DType t) {
  switch (t) {
    case DType::kInt8:
      return {INT8_MIN, INT8_MAX};
    case DType::kInt16:
      return {INT16_MIN, INT16_MAX};
    case DType::kInt32:
      return {INT32_MIN, INT32_MAX};
    case DType::kUInt8:
      return {0, UINT8_MAX};
    case DType::kUInt16:
      return {0, UINT16_MAX};
    case DType::kUInt32:
      return {0, UINT32_MAX};
    case DType::kUInt64:
      return {0, -1};
    case DType::kBool:
      return {0, 1};
    default:
      return {INT64_MIN, INT64_MAX};
  }
}

template <typename Acc>
Acc initial(ReduceOp op, DType t) {
  switch (op) {
    case ReduceOp::kProd:
      return Acc(1);
    case ReduceOp::kMax:
      if constexpr (std::is_integral_v<Acc>)
        return int_limits(t).first;
      else
        return -std::numeric_limits<Acc>::infinity();
    case ReduceOp::kMin:
      if constexpr (std::is_integral_v<Acc>)
        return int_limits(t).second;
      else
        return std::numeric_limits<Acc>::infinity();
    default:
      return Acc(0);
  }
}

}  // namespace

Tensor run_reduce(const Primitive& prim, const ReduceAttrs& attrs, const Inputs& in,
                  const ValueInfo& out) {
  if (in.size() != 1) fail(prim, "takes one input, given " + std::to_string(in.size()));
  const Tensor& x = *in[0];
  const Shape& shape = x.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  int64_t prev = -1;
  for (int64_t a : attrs.axes) {
    if (a <= prev || a >= rank)
      fail(prim, "axes must be sorted, distinct and below the rank " + std::to_string(rank));
    reduced[static_cast<size_t>(a)] = true;
    prev = a;
  }
  Shape expected = shape;
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) count *= shape[d], expected[d] = 1;
  if (expected != out.shape || x.dtype() != out.dtype)
    fail(prim, "reducing " + type_str(x.dtype(), shape) + " gives " +
                   type_str(x.dtype(), expected) + ", not " + type_str(out.dtype, out.shape));

  const Plan plan = make_plan(shape, reduced);
  const int64_t n_out = numel(out.shape);
  Tensor y(out.dtype, out.shape);
  if (is_floating(x.dtype())) {
    std::vector<double> acc(static_cast<size_t>(n_out), initial<double>(attrs.op, x.dtype()));
    if (x.dtype() == DType::kFloat32) {
      reduce_into(attrs.op, plan, reinterpret_cast<const float*>(x.bytes()), acc);
    } else if (x.dtype() == DType::kFloat64) {
      reduce_into(attrs.op, plan, reinterpret_cast<const double*>(x.bytes()), acc);
    } else {
      const std::vector<double> xs = x.to_double();
      reduce_into(attrs.op, plan, xs.data(), acc);
    }
    if (attrs.op == ReduceOp::kMean)
      for (double& v : acc) v /= static_cast<double>(count);
    if (out.dtype == DType::kFloat32) {
      float* p = reinterpret_cast<float*>(y.mutable_bytes());
      for (int64_t i = 0; i < n_out; ++i) p[i] = static_cast<float>(acc[i]);
    } else {
      for (int64_t i = 0; i < n_out; ++i) set_element(y, i, acc[i]);
    }
  } else {
    std::vector<int64_t> acc(static_cast<size_t>(n_out), initial<int64_t>(attrs.op, x.dtype()));
    const std::vector<int64_t> xs = x.to_int64();
    reduce_into(attrs.op, plan, xs.data(), acc);
    if (attrs.op == ReduceOp::kMean && count > 0)
      for (int64_t& v : acc) v /= count;
    for (int64_t i = 0; i < n_out; ++i) set_element_int(y, i, acc[i]);
  }
  return y;
}

}  // namespace kora::interp
