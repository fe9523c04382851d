// Fission of reductions and pooling: Reduce* into reduce + elementwise (L1, L2, sum of
// squares, log-sum, stable log-sum-exp) and a reshape when keepdims=0; global pooling
// into a spatial reduce; windowed pooling into a window-unfold layout + reduce (max with
// -inf fill; average as a zero-fill sum divided by the per-window element count; Lp as
// the p-th root of a sum of powers); CumSum as a window sum along its axis.
#include <cmath>
#include <limits>
#include <set>

#include "fission/builder.h"
#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

using S = ScalarOp;

std::vector<int64_t> reduce_axes(FissionBuilder& b, bool& noop) {
  const Node& n = b.node();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (b.has_in(1)) axes = b.require_constant(1, "axes").to_int64();
  noop = false;
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) noop = true;
    for (size_t i = 0; i < b.shape(b.in(0)).size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

template <int kind>
void reduce(FissionBuilder& b) {
  // kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 L1, 6 L2, 7 sum square, 8 log sum,
  // 9 log sum exp
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(b, noop);
  const std::string x = b.in(0);
  if (noop) {
    b.bind(0, x);
    return;
  }
  std::string y;
  switch (kind) {
    case 0:
      y = b.reduce(ReduceOp::kSum, x, axes);
      break;
    case 1:
      y = b.reduce(ReduceOp::kMean, x, axes);
      break;
    case 2:
      y = b.reduce(ReduceOp::kMax, x, axes);
      break;
    case 3:
      y = b.reduce(ReduceOp::kMin, x, axes);
      break;
    case 4:
      y = b.reduce(ReduceOp::kProd, x, axes);
      break;
    case 5:
      y = b.reduce(ReduceOp::kSum, b.ew(S::kAbs, {x}), axes);
      break;
    case 6:
      y = b.ew(S::kSqrt, {b.reduce(ReduceOp::kSum, b.ew(S::kMul, {x, x}), axes)});
      break;
    case 7:
      y = b.reduce(ReduceOp::kSum, b.ew(S::kMul, {x, x}), axes);
      break;
    case 8:
      y = b.ew(S::kLog, {b.reduce(ReduceOp::kSum, x, axes)});
      break;
    default: {
      const std::string m = b.reduce(ReduceOp::kMax, x, axes);
      const std::string e = b.ew(S::kExp, {b.ew(S::kSub, {x, m})});
      y = b.ew(S::kAdd, {b.ew(S::kLog, {b.reduce(ReduceOp::kSum, e, axes)}), m});
    }
  }
  b.bind(0, b.reshape(y, b.out_info(0).shape));
}

std::vector<int64_t> spatial_axes(size_t rank) {
  std::vector<int64_t> axes;
  for (size_t i = 2; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

void global_average_pool(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.reduce(ReduceOp::kMean, x, spatial_axes(b.shape(x).size())));
}

void global_max_pool(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.reduce(ReduceOp::kMax, x, spatial_axes(b.shape(x).size())));
}

struct Unfolded {
  std::string windows;  // [N, C, O..., K...]
  Window geometry;
  std::vector<int64_t> window_axes;
};

Unfolded unfold(FissionBuilder& b, double fill) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const size_t r = s.size() - 2;
  InferContext ctx(b.source(), b.node());
  Unfolded u;
  u.geometry = resolve_window(ctx, Shape(s.begin() + 2, s.end()), {}, true);
  Shape out{s[0], s[1]};
  out.insert(out.end(), u.geometry.output.begin(), u.geometry.output.end());
  out.insert(out.end(), u.geometry.kernel.begin(), u.geometry.kernel.end());
  layout::Window w{u.geometry.strides, u.geometry.dilations,
                   Shape(u.geometry.pads.begin(), u.geometry.pads.begin() + r), fill};
  u.windows = b.layout(w, {x}, out);
  for (size_t i = 0; i < r; ++i) u.window_axes.push_back(static_cast<int64_t>(2 + r + i));
  return u;
}

void max_pool(FissionBuilder& b) {
  if (b.wants_out(1)) return b.opaque();  // the Indices output: kept whole
  const Unfolded u = unfold(b, -std::numeric_limits<double>::infinity());
  b.bind(0, b.reshape(b.reduce(ReduceOp::kMax, u.windows, u.window_axes), b.out_info(0).shape));
}

// Number of elements each output window averages: positions inside the input, or with
// count_include_pad the whole window (padding and any ceil_mode overhang included, as the
// ONNX reference counts it).
Tensor window_counts(const Shape& spatial, const Window& w, bool include_pad) {
  const size_t r = spatial.size();
  Shape shape(2, 1);
  shape.insert(shape.end(), w.output.begin(), w.output.end());
  Tensor counts(DType::kFloat32, shape);
  std::vector<int64_t> o(r, 0);
  for (int64_t i = 0; i < numel(w.output); ++i) {
    double count = 1;
    for (size_t d = 0; d < r; ++d) {
      int64_t n = include_pad ? w.kernel[d] : 0;
      for (int64_t k = 0; k < w.kernel[d] && !include_pad; ++k) {
        const int64_t at = o[d] * w.strides[d] + k * w.dilations[d] - w.pads[d];
        n += at >= 0 && at < spatial[d];
      }
      count *= static_cast<double>(n);
    }
    set_element(counts, i, count);
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++o[d] < w.output[d]) break;
      o[d] = 0;
    }
  }
  return counts;
}

void average_pool(FissionBuilder& b) {
  const Unfolded u = unfold(b, 0.0);
  const Shape& s = b.shape(b.in(0));
  const Shape& out = b.out_info(0).shape;
  const std::string sum = b.reshape(b.reduce(ReduceOp::kSum, u.windows, u.window_axes), out);
  const bool include_pad = b.node().attr_int("count_include_pad", 0) != 0;
  const Tensor counts = window_counts(Shape(s.begin() + 2, s.end()), u.geometry, include_pad);
  const std::vector<double> values = counts.to_double();
  if (std::set<double>(values.begin(), values.end()).size() == 1) {
    b.bind(0, b.ew(S::kDiv, {sum, values[0]}));
    return;
  }
  b.bind(0, b.ew(S::kDiv, {sum, b.add_constant(counts)}));
}

// (sum of |x|^p over each window)^(1/p)
std::string lp_norm(FissionBuilder& b, const std::string& x, const std::vector<int64_t>& axes) {
  const double p = static_cast<double>(b.node().attr_int("p", 2));
  if (p == 2) return b.ew(S::kSqrt, {b.reduce(ReduceOp::kSum, b.ew(S::kMul, {x, x}), axes)});
  const std::string a = b.ew(S::kAbs, {x});
  if (p == 1) return b.reduce(ReduceOp::kSum, a, axes);
  const std::string sum = b.reduce(ReduceOp::kSum, b.ew(S::kPow, {a, p}), axes);
  return b.ew(S::kPow, {sum, 1.0 / p});
}

void lp_pool(FissionBuilder& b) {
  const Unfolded u = unfold(b, 0.0);
  b.bind(0, b.reshape(lp_norm(b, u.windows, u.window_axes), b.out_info(0).shape));
}

void global_lp_pool(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, lp_norm(b, x, spatial_axes(b.shape(x).size())));
}

// CumSum along an axis as a window sum: x viewed as [outer, 1, L, inner]; output position
// i sums a window of L positions along the axis that ends at i (starts at i when reversed),
// one further away when exclusive, zero outside. O(L^2) work per line, but one fused kernel.
void cum_sum(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = b.require_constant(1, "axis").int64_at(0);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= d == axis ? 1 : s[d];
  const int64_t len = s[axis];
  const bool exclusive = b.node().attr_int("exclusive", 0) != 0;
  const bool reverse = b.node().attr_int("reverse", 0) != 0;
  const int64_t shift = reverse ? (exclusive ? -1 : 0) : (exclusive ? len : len - 1);
  const std::string lines = b.reshape(x, {outer, 1, len, inner});
  const layout::Window window{{1, 1}, {1, 1}, {shift, 0}, 0.0};
  const std::string windows = b.layout(window, {lines}, {outer, 1, len, inner, len, 1});
  b.bind(0, b.reshape(b.reduce(ReduceOp::kSum, windows, {4, 5}), s));
}

}  // namespace

void add_reduce_fission(FissionTable& t) {
  t["ReduceSum"] = reduce<0>;
  t["ReduceMean"] = reduce<1>;
  t["ReduceMax"] = reduce<2>;
  t["ReduceMin"] = reduce<3>;
  t["ReduceProd"] = reduce<4>;
  t["ReduceL1"] = reduce<5>;
  t["ReduceL2"] = reduce<6>;
  t["ReduceSumSquare"] = reduce<7>;
  t["ReduceLogSum"] = reduce<8>;
  t["ReduceLogSumExp"] = reduce<9>;
  t["GlobalAveragePool"] = global_average_pool;
  t["GlobalMaxPool"] = global_max_pool;
  t["MaxPool"] = max_pool;
  t["AveragePool"] = average_pool;
  t["LpPool"] = lp_pool;
  t["GlobalLpPool"] = global_lp_pool;
  t["CumSum"] = cum_sum;
}

}  // namespace kora
