// Fission of Resize and Upsample into index maps: per resized axis, nearest becomes one
// gather with a constant index table; linear and cubic become 2 or 4 gathers whose
// results are weighted by constant coefficient vectors and summed (separable, axis by
// axis). Coordinate transformation modes, nearest rounding modes, cubic_coeff_a,
// exclude_outside and tf_crop_and_resize extrapolation follow the ONNX specification.
// antialias (opset 18) widens a downsampled axis's linear or cubic filter by 1/scale:
// more taps, each with its constant weight, as ONNX's reference implementation computes
// them (edge-clamped taps, weights normalized to sum 1).
#include <cmath>

#include "fission/builder.h"

namespace kora {
namespace {

using S = ScalarOp;

// The widest antialiasing filter fission expands (one gather per tap): linear down to
// scale 1/512, cubic to 1/256.
constexpr int64_t kMaxAntialiasTaps = 1024;

struct AxisPlan {
  std::vector<std::vector<int64_t>> index;  // [tap][output position]
  std::vector<std::vector<double>> weight;  // empty for nearest
  bool fill = false;                        // some positions read the extrapolation value
};

struct ResizeParams {
  std::string mode = "nearest", transform = "half_pixel", nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
  bool antialias = false;
};

double original_coordinate(const ResizeParams& p, double x, int64_t in, int64_t out, double scale,
                           double roi_start, double roi_end) {
  const std::string& t = p.transform;
  // The resized length is in * scale before rounding down, as the ONNX reference uses it.
  const double resized = static_cast<double>(in) * scale;
  if (t == "asymmetric") return x / scale;
  if (t == "align_corners") return resized <= 1 ? 0.0 : x * (in - 1) / (resized - 1);
  if (t == "pytorch_half_pixel") return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "half_pixel_symmetric") {
    const double adjustment = out / (scale * in);
    const double offset = in / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (t == "tf_crop_and_resize") {
    return out > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * (in - 1);
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  const double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

std::vector<double> cubic_coefficients(double s, double a) {
  return {((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
          ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a};
}

// The antialiasing filter of a downsampled axis (scale < 1), as ONNX's reference
// computes it: x = base + ratio with ratio in (0, 1]; taps base + i for i in [start,
// 1 - start), the linear (triangle) or cubic kernel stretched by 1/scale, normalized.
int64_t antialias_start(const ResizeParams& p, double scale) {
  const double support = p.mode == "linear" ? 1.0 : 2.0;
  return static_cast<int64_t>(std::floor(-support / scale)) + 1;
}

struct AntialiasTaps {
  int64_t base = 0, start = 0;
  std::vector<double> weight;
};

AntialiasTaps antialias_taps(const ResizeParams& p, double x, double scale) {
  AntialiasTaps taps;
  const double f = std::floor(x);
  const double ratio = x == f ? 1.0 : x - f;
  taps.base = static_cast<int64_t>(f) - (x == f ? 1 : 0);
  taps.start = antialias_start(p, scale);
  const double a = p.cubic_a;
  auto kernel = [&](double v) {
    v = std::abs(v);
    if (p.mode == "linear") return std::clamp(1 - v, 0.0, 1.0);
    if (v <= 1) return ((a + 2) * v - (a + 3)) * v * v + 1;
    if (v < 2) return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
    return 0.0;
  };
  double total = 0;
  for (int64_t i = taps.start; i < 2 - taps.start; ++i) {
    taps.weight.push_back(kernel(scale * (static_cast<double>(i) - ratio)));
    total += taps.weight.back();
  }
  for (double& w : taps.weight) w /= total;
  return taps;
}

AxisPlan plan_axis(const ResizeParams& p, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  const bool antialias = p.antialias && p.mode != "nearest" && scale < 1.0;
  int64_t taps = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
  if (antialias) taps = 2 - 2 * antialias_start(p, scale);
  AxisPlan plan;
  plan.index.assign(taps, std::vector<int64_t>(out, 0));
  if (p.mode != "nearest") plan.weight.assign(taps, std::vector<double>(out, 0.0));
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    double x = original_coordinate(p, static_cast<double>(o), in, out, scale, roi_start, roi_end);
    if (p.transform == "tf_crop_and_resize" && (x < 0 || x > in - 1)) {
      plan.fill = true;
      plan.index[0][o] = -1;  // the extrapolation value
      if (!plan.weight.empty()) plan.weight[0][o] = 1.0;
      continue;
    }
    if (antialias) {
      const AntialiasTaps a = antialias_taps(p, x, scale);
      double total = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t at = a.base + a.start + t;
        const bool inside = at >= 0 && at < in;
        plan.index[t][o] = clamp(at);
        plan.weight[t][o] = p.exclude_outside && !inside ? 0.0 : a.weight[t];
        total += plan.weight[t][o];
      }
      if (p.exclude_outside && total != 0)
        for (int64_t t = 0; t < taps; ++t) plan.weight[t][o] /= total;
    } else if (p.mode == "nearest") {
      plan.index[0][o] = clamp(nearest_index(p.nearest_mode, x));
    } else if (p.mode == "linear") {
      x = std::clamp<double>(x, 0, static_cast<double>(in - 1));
      const int64_t x0 = static_cast<int64_t>(std::floor(x));
      plan.index[0][o] = x0;
      plan.index[1][o] = clamp(x0 + 1);
      plan.weight[0][o] = 1 - (x - x0);
      plan.weight[1][o] = x - x0;
    } else {
      const int64_t x0 = static_cast<int64_t>(std::floor(x));
      const std::vector<double> c = cubic_coefficients(x - x0, p.cubic_a);
      double total = 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t at = x0 - 1 + t;
        const bool inside = at >= 0 && at < in;
        plan.index[t][o] = clamp(at);
        plan.weight[t][o] = p.exclude_outside && !inside ? 0.0 : c[t];
        total += plan.weight[t][o];
      }
      if (p.exclude_outside && total != 0)
        for (int t = 0; t < 4; ++t) plan.weight[t][o] /= total;
    }
  }
  return plan;
}

// Applies one axis's plan to x (gathers, weights, sum).
std::string apply_axis(FissionBuilder& b, std::string x, int64_t axis, AxisPlan plan,
                       double fill_value) {
  const Shape& s = b.shape(x);
  const int64_t out = static_cast<int64_t>(plan.index[0].size());
  if (plan.fill) {
    // Put the extrapolation value at index 0 of the axis; shift real indices by one.
    Shape begin(s.size(), 0), stride(s.size(), 1), padded = s;
    begin[axis] = 1;
    padded[axis] += 1;
    x = b.layout(layout::Pad{begin, stride, layout::PadMode::kConstant, fill_value}, {x}, padded);
    for (auto& tap : plan.index)
      for (int64_t& i : tap) i += 1;
  }
  std::string sum;
  for (size_t t = 0; t < plan.index.size(); ++t) {
    bool identity = out == b.shape(x)[axis];
    for (int64_t o = 0; o < out && identity; ++o) identity = plan.index[t][o] == o;
    bool zero = !plan.weight.empty();
    for (int64_t o = 0; o < out && zero; ++o) zero = plan.weight[t][o] == 0.0;
    if (zero) continue;
    Shape gathered = b.shape(x);
    gathered[axis] = out;
    std::string term = identity ? x : b.layout(layout::Gather{axis, plan.index[t]}, {x}, gathered);
    if (!plan.weight.empty()) {
      bool ones = true;
      for (double w : plan.weight[t]) ones = ones && w == 1.0;
      if (!ones) {
        Shape ws(gathered.size(), 1);
        ws[axis] = out;
        term = b.ew(S::kMul,
                    {term, b.add_constant(Tensor::from_double(b.dtype(x), ws, plan.weight[t]))});
      }
    }
    sum = sum.empty() ? term : b.ew(S::kAdd, {sum, term});
  }
  return sum;
}

void resize_with(FissionBuilder& b, const ResizeParams& p, const std::vector<double>& scales,
                 const std::vector<double>& roi) {
  std::string x = b.in(0);
  const Shape in = b.shape(x);
  const Shape& out = b.out_info(0).shape;
  for (size_t a = 0; a < in.size(); ++a) {
    if (in[a] == out[a] && scales[a] == 1.0 && p.transform != "tf_crop_and_resize") continue;
    const double start = roi.empty() ? 0.0 : roi[a], end = roi.empty() ? 1.0 : roi[a + in.size()];
    if (p.antialias && scales[a] > 0 && scales[a] < 1 &&
        2 - 2 * antialias_start(p, scales[a]) > kMaxAntialiasTaps)
      b.fail("antialias with scale " + std::to_string(scales[a]) + " needs more than " +
             std::to_string(kMaxAntialiasTaps) + " taps per output element");
    AxisPlan plan = plan_axis(p, in[a], out[a], scales[a], start, end);
    x = apply_axis(b, x, static_cast<int64_t>(a), plan, p.extrapolation);
  }
  b.bind(0, x);
}

void resize(FissionBuilder& b) {
  const Node& n = b.node();
  ResizeParams p;
  p.mode = n.attr_string("mode", "nearest");
  p.antialias = n.attr_int("antialias", 0) != 0;
  p.transform = n.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = n.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  p.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = n.attr_float("extrapolation_value", 0.0);
  const Shape& in = b.shape(b.in(0));
  const Shape& out = b.out_info(0).shape;
  const size_t r = in.size();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(r) : a;
  // Scales per dim: given, or (sizes) out/in, or the one aspect-preserving scale.
  std::vector<double> scales(r, 1.0);
  const Tensor* scales_t = b.has_in(2) ? b.constant(b.in(2)) : nullptr;
  if (scales_t && scales_t->numel() > 0) {
    const std::vector<double> v = scales_t->to_double();
    for (size_t i = 0; i < axes.size(); ++i) scales[axes[i]] = v[i];
  } else {
    const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    const std::vector<int64_t> sizes = b.require_constant(3, "sizes").to_int64();
    double common = policy == "not_larger" ? 1e300 : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const double s = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
      scales[axes[i]] = s;
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    if (policy != "stretch")
      for (int64_t a : axes) scales[a] = common;
  }
  for (size_t a = 0; a < r; ++a)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) == axes.end() &&
        in[a] != out[a])
      b.fail("internal error: unresized axis changes size");
  std::vector<double> roi;
  if (p.transform == "tf_crop_and_resize") {
    const std::vector<double> v = b.require_constant(1, "roi").to_double();
    roi.assign(2 * r, 0.0);
    for (size_t a = 0; a < r; ++a) roi[a + r] = 1.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      roi[axes[i]] = v[i];
      roi[axes[i] + r] = v[i + axes.size()];
    }
  }
  resize_with(b, p, scales, roi);
}

// Upsample (deprecated): asymmetric coordinates; nearest takes the floor.
void upsample(FissionBuilder& b) {
  ResizeParams p;
  const std::string mode = b.node().attr_string("mode", "nearest");
  p.mode = mode == "nearest" ? "nearest" : "linear";
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    b.fail("mode '" + mode + "' is not supported");
  p.transform = "asymmetric";
  p.nearest_mode = "floor";
  std::vector<double> scales =
      b.has_in(1) ? b.require_constant(1, "scales").to_double() : b.node().attr_floats("scales");
  resize_with(b, p, scales, {});
}

}  // namespace

void add_resize_fission(FissionTable& t) {
  t["Resize"] = resize;
  t["Upsample"] = upsample;
}

}  // namespace kora
