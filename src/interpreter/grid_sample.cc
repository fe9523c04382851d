// GridSample, as ONNX's reference implementation computes it. In: X [N, C, D1..Dr] and
// grid [N, O1..Or, r] of normalized coordinates in [-1, 1] (the last dim ordered x, y, z:
// innermost spatial dim first); attributes mode (linear/bilinear, nearest, cubic/bicubic),
// padding_mode (zeros, border, reflection) and align_corners. Out: Y [N, C, O1..Or], each
// element interpolated from X at its grid position (separably per spatial dim: 1, 2 or 4
// taps), taps outside X read 0, the border, or X reflected at the border.
#include <algorithm>
#include <cmath>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

// Reflects x by the near border until it lies in [lo, hi].
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double x, double c[4]) {
  const double a = -0.75;
  x = std::abs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

struct Sampler {
  Shape dims;
  std::vector<int64_t> strides;
  std::vector<double> lo, hi;  // the borders per dim
  Padding padding = Padding::kZeros;

  // Tap index i along dim d, or -1 where it reads zero padding.
  int64_t tap(int64_t i, size_t d) const {
    const int64_t size = dims[d];
    if (padding == Padding::kZeros) return i >= 0 && i < size ? i : -1;
    if (padding == Padding::kBorder) return std::clamp<int64_t>(i, 0, size - 1);
    return static_cast<int64_t>(reflect(static_cast<double>(i), lo[d], hi[d]));
  }
};

}  // namespace

std::vector<Tensor> run_grid_sample(const OpaqueCall& call) {
  const Tensor &x = call.required(0), &grid = call.required(1);
  const Node& node = call.node();
  const size_t r = x.shape().size() - 2;
  std::string mode = node.attr_string("mode", "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string pad = node.attr_string("padding_mode", "zeros");
  const bool align = node.attr_int("align_corners", 0) != 0;
  Sampler s;
  s.dims.assign(x.shape().begin() + 2, x.shape().end());
  s.strides = row_major_strides(s.dims);
  s.padding = pad == "border"       ? Padding::kBorder
              : pad == "reflection" ? Padding::kReflection
                                    : Padding::kZeros;
  for (size_t d = 0; d < r; ++d) {
    const double size = static_cast<double>(s.dims[d]);
    s.lo.push_back(align ? 0.0 : -0.5);
    s.hi.push_back(align ? size - 1 : size - 0.5);
  }
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    call.fail("mode '" + mode + "' is not supported");

  const ValueInfo& out = call.out(0);
  Tensor y(out.dtype, out.shape);
  const std::vector<double> xv = x.to_double(), gv = grid.to_double();
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const int64_t plane = numel(s.dims),
                points = numel(out.shape) / std::max<int64_t>(batch * channels, 1);
  // Per point: per dim its taps' indices (-1: zero) and weights.
  std::vector<int64_t> index(r * 4);
  std::vector<double> weight(r * 4);
  std::vector<int> digit(r);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* g = gv.data() + (n * points + p) * static_cast<int64_t>(r);
      for (size_t d = 0; d < r; ++d) {
        const double nx = g[r - 1 - d], size = static_cast<double>(s.dims[d]);
        double v =
            static_cast<float>(align ? (nx + 1) / 2.0 * (size - 1) : ((nx + 1) * size - 1) / 2.0);
        if (mode == "nearest") v = std::nearbyint(v);
        if (v < s.lo[d] || v > s.hi[d]) {
          if (s.padding == Padding::kBorder) v = std::clamp(v, 0.0, size - 1);
          if (s.padding == Padding::kReflection) v = reflect(v, s.lo[d], s.hi[d]);
        }
        if (mode == "nearest") {
          index[d * 4] = s.tap(static_cast<int64_t>(v), d);
          weight[d * 4] = 1;
          continue;
        }
        const double f = std::floor(v);
        const int64_t i0 = static_cast<int64_t>(f);
        if (mode == "linear") {
          weight[d * 4] = 1 - std::abs(v - f);
          weight[d * 4 + 1] = std::abs(v - f);
          index[d * 4] = s.tap(i0, d);
          index[d * 4 + 1] = s.tap(i0 + 1, d);
        } else {
          cubic_coeffs(v - f, &weight[d * 4]);
          for (int k = 0; k < 4; ++k) index[d * 4 + k] = s.tap(i0 - 1 + k, d);
        }
      }
      for (int64_t c = 0; c < channels; ++c) {
        const double* plane_x = xv.data() + (n * channels + c) * plane;
        double sum = 0;
        std::fill(digit.begin(), digit.end(), 0);
        for (;;) {
          double w = 1;
          int64_t off = 0;
          for (size_t d = 0; d < r && off >= 0; ++d) {
            const int64_t i = index[d * 4 + digit[d]];
            w *= weight[d * 4 + digit[d]];
            off = i < 0 ? -1 : off + i * s.strides[d];
          }
          if (off >= 0) sum += w * plane_x[off];
          size_t d = r;
          while (d-- > 0 && ++digit[d] == taps) digit[d] = 0;
          if (d == static_cast<size_t>(-1)) break;
        }
        set_element(y, (n * channels + c) * points + p, sum);
      }
    }
  return {y};
}

}  // namespace kora::interp
