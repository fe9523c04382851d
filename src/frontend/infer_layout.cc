// Shape rules of the data-movement operators: Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze, Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Pad, Resize,
// Upsample, DepthToSpace, SpaceToDepth. Shape-defining inputs must be constants.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "frontend/layout_params.h"

namespace kora {
namespace {

// No valid dimension or element count exceeds this (shape_inference.cc checks every
// result against it); products and sums past it are refused before they can overflow.
constexpr int64_t kHuge = int64_t{1} << 40;

std::vector<ValueInfo> reshape(const InferContext& c) {
  const Shape& x = c.shape(0);
  std::vector<int64_t> spec = c.ints(1, "shape");
  const bool allowzero = c.node().attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= x.size()) c.fail("shape " + shape_str(spec) + " copies a dim the input lacks");
      d = x[i];
    }
    if (d == -1) {
      if (infer_at >= 0) c.fail("shape " + shape_str(spec) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) c.fail("shape " + shape_str(spec) + " has a negative dimension");
    if (d > 0 && known > kHuge / d) c.fail("shape " + shape_str(spec) + " is absurdly large");
    out[i] = d;
    known *= d;
  }
  const int64_t total = numel(x);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      c.fail("cannot reshape " + shape_str(x) + " to " + shape_str(spec));
    out[infer_at] = total / known;
  } else if (known != total) {
    c.fail("cannot reshape " + shape_str(x) + " (" + std::to_string(total) + " elements) to " +
           shape_str(out));
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> flatten(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  int64_t axis = c.node().attr_int("axis", 1);
  if (axis < -r || axis > r) c.fail("axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x[i];
  return {ValueInfo{c.dtype(0), {outer, inner}}};
}

std::vector<ValueInfo> transpose(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  std::vector<int64_t> perm = c.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) c.fail("perm does not match the input rank");
  std::set<int64_t> seen;
  Shape out;
  for (int64_t p : perm) {
    p = c.axis(p, r);
    if (!seen.insert(p).second) c.fail("perm repeats axis " + std::to_string(p));
    out.push_back(x[p]);
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<int64_t> axes_of(const InferContext& c) {
  if (c.has(1)) return c.ints(1, "axes");
  return c.node().attr_ints("axes");
}

std::vector<ValueInfo> squeeze(const InferContext& c) {
  const Shape& x = c.shape(0);
  std::set<int64_t> axes;
  for (int64_t a : axes_of(c)) {
    const int64_t ax = c.axis(a, c.rank(0));
    if (x[ax] != 1) c.fail("cannot squeeze axis " + std::to_string(a) + " of " + shape_str(x));
    axes.insert(ax);
  }
  const bool all = !c.has(1) && !c.node().has_attr("axes");
  Shape out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(all ? x[i] == 1 : axes.count(static_cast<int64_t>(i)) != 0)) out.push_back(x[i]);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> unsqueeze(const InferContext& c) {
  const Shape& x = c.shape(0);
  const std::vector<int64_t> axes = axes_of(c);
  const int64_t r = c.rank(0) + static_cast<int64_t>(axes.size());
  std::set<int64_t> at;
  for (int64_t a : axes)
    if (!at.insert(c.axis(a, r)).second) c.fail("axes repeat " + std::to_string(a));
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(at.count(i) ? 1 : x[next++]);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> concat(const InferContext& c) {
  Shape out = c.shape(0);
  if (out.empty()) c.fail("cannot concatenate scalars");
  const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
  out[axis] = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has(i)) continue;
    const Shape& s = c.shape(i);
    if (s.size() != out.size()) c.fail("inputs have different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != out[d])
        c.fail("input " + std::to_string(i) + " " + shape_str(s) + " does not match " +
               shape_str(c.shape(0)) + " off axis " + std::to_string(axis));
    out[axis] += s[axis];
    if (c.dtype(i) != c.dtype(0)) c.fail("inputs have different dtypes");
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> split(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
  const int64_t outputs = static_cast<int64_t>(c.node().outputs.size());
  std::vector<int64_t> sizes = c.has(1) ? c.ints(1, "split") : c.node().attr_ints("split");
  if (sizes.empty()) {
    const int64_t parts = c.node().attr_int("num_outputs", outputs);
    if (parts <= 0) c.fail("num_outputs must be positive");
    const int64_t chunk = (x[axis] + parts - 1) / parts;  // the last part may be smaller
    if (!c.node().has_attr("num_outputs") && x[axis] % parts != 0)
      c.fail("dim " + std::to_string(x[axis]) + " does not split evenly into " +
             std::to_string(parts));
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, x[axis] - i * chunk)));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs)
    c.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(outputs) +
           " outputs");
  int64_t sum = 0;
  std::vector<ValueInfo> out;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("negative split size");
    Shape o = x;
    o[axis] = s;
    sum += s;
    out.push_back(ValueInfo{c.dtype(0), o});
  }
  if (sum != x[axis])
    c.fail("split sizes add up to " + std::to_string(sum) + ", the axis has " +
           std::to_string(x[axis]));
  return out;
}

std::vector<ValueInfo> slice(const InferContext& c) {
  Shape out;
  for (const SliceAxis& a : resolve_slice(c)) out.push_back(a.size);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> gather(const InferContext& c) {
  const Shape& x = c.shape(0);
  if (x.empty()) c.fail("data must have rank >= 1");
  if (!is_integer(c.dtype(1))) c.fail("indices must be integers");
  const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), c.shape(1).begin(), c.shape(1).end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> gather_elements(const InferContext& c) {
  if (c.rank(0) != c.rank(1)) c.fail("data and indices must have the same rank");
  c.axis(c.node().attr_int("axis", 0), c.rank(0));
  return {ValueInfo{c.dtype(0), c.shape(1)}};
}

std::vector<ValueInfo> expand(const InferContext& c) {
  return {ValueInfo{c.dtype(0), broadcast_shapes(c, c.shape(0), c.ints(1, "shape"))}};
}

std::vector<ValueInfo> tile(const InferContext& c) {
  const std::vector<int64_t> repeats = c.ints(1, "repeats");
  Shape out = c.shape(0);
  if (repeats.size() != out.size()) c.fail("repeats must have one entry per input dim");
  for (size_t i = 0; i < out.size(); ++i) {
    if (repeats[i] < 0) c.fail("negative repeat");
    if (repeats[i] > 0 && out[i] > kHuge / repeats[i]) c.fail("repeats make an absurd shape");
    out[i] *= repeats[i];
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> pad(const InferContext& c) {
  const std::string mode = c.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    c.fail("pad mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  const PadAmounts p = resolve_pads(c);
  Shape out = c.shape(0);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] += p.begin[i] + p.end[i];
    if (out[i] < 0) c.fail("pads crop dim " + std::to_string(i) + " below zero");
    if (mode == "wrap" && out[i] > 0 &&
        c.shape(0)[i] + std::min<int64_t>(p.begin[i], 0) + std::min<int64_t>(p.end[i], 0) <= 0)
      c.fail("wrap pad of dim " + std::to_string(i) + ", cropped to nothing");
    if (mode == "reflect" && (p.begin[i] >= c.shape(0)[i] || p.end[i] >= c.shape(0)[i]) &&
        (p.begin[i] > 0 || p.end[i] > 0))
      c.fail("reflect pad of dim " + std::to_string(i) + " must be smaller than its size");
  }
  return {ValueInfo{c.dtype(0), out}};
}

// Output size of a resize by `scale`: floor(size * scale), as ONNX specifies.
// Beyond kHuge: kHuge + 1, which the shape check refuses (no double-to-int overflow).
int64_t scaled(double size, double scale) {
  const double v = std::floor(size * scale + 1e-9);
  return v < static_cast<double>(kHuge) ? static_cast<int64_t>(v) : kHuge + 1;
}

std::vector<ValueInfo> resize(const InferContext& c) {
  const Node& n = c.node();
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail("mode '" + mode + "' is not supported");
  if (mode == "nearest" && n.attr_int("antialias", 0) != 0)
    c.fail("antialias=1 needs mode linear or cubic, not nearest");
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = c.axis(a, r);
  // Inputs: X, roi, scales, sizes (roi and scales may be empty names or empty tensors).
  const Tensor* scales_t = c.constant(2);
  const bool has_sizes = c.has(3);
  const bool has_scales = c.has(2) && !(scales_t && scales_t->numel() == 0);
  if (has_sizes == has_scales) c.fail("exactly one of scales and sizes must be given");
  Shape out = x;
  if (has_scales) {
    const std::vector<double> scales = c.doubles(2, "scales");
    if (scales.size() != axes.size()) c.fail("scales must have one entry per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (scales[i] <= 0) c.fail("scales must be positive");
      out[axes[i]] = scaled(static_cast<double>(x[axes[i]]), scales[i]);
    }
  } else {
    const std::vector<int64_t> sizes = c.ints(3, "sizes");
    if (sizes.size() != axes.size()) c.fail("sizes must have one entry per resized axis");
    const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = sizes[i];
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double scale = policy == "not_larger" ? std::numeric_limits<double>::max() : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const double s = static_cast<double>(sizes[i]) / static_cast<double>(x[axes[i]]);
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      for (int64_t a : axes)
        out[a] = static_cast<int64_t>(std::round(scale * static_cast<double>(x[a])));
    } else {
      c.fail("keep_aspect_ratio_policy '" + policy + "' is not valid");
    }
  }
  for (int64_t d : out)
    if (d <= 0) c.fail("output shape " + shape_str(out) + " has an empty dimension");
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> upsample(const InferContext& c) {
  const Shape& x = c.shape(0);
  std::vector<double> scales = c.has(1) ? c.doubles(1, "scales") : c.node().attr_floats("scales");
  if (scales.size() != x.size()) c.fail("scales must have one entry per input dim");
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) out[i] = scaled(static_cast<double>(x[i]), scales[i]);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> depth_to_space(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t b = c.node().attr_int("blocksize", 0);
  if (x.size() != 4) c.fail("input must be 4-D");
  if (b <= 0 || x[1] % (b * b) != 0) c.fail("blocksize does not divide the channels");
  const std::string mode = c.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.fail("mode '" + mode + "' is not valid");
  return {ValueInfo{c.dtype(0), {x[0], x[1] / (b * b), x[2] * b, x[3] * b}}};
}

std::vector<ValueInfo> space_to_depth(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t b = c.node().attr_int("blocksize", 0);
  if (x.size() != 4) c.fail("input must be 4-D");
  if (b <= 0 || x[2] % b != 0 || x[3] % b != 0) c.fail("blocksize does not divide H and W");
  return {ValueInfo{c.dtype(0), {x[0], x[1] * b * b, x[2] / b, x[3] / b}}};
}

}  // namespace

std::vector<SliceAxis> resolve_slice(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  const std::vector<int64_t> starts = c.ints(1, "starts"), ends = c.ints(2, "ends");
  std::vector<int64_t> axes;
  if (c.has(3))
    axes = c.ints(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> steps =
      c.has(4) ? c.ints(4, "steps") : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  std::vector<SliceAxis> out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) out[i] = {0, 1, x[i]};
  std::set<int64_t> seen;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = c.axis(axes[i], r), d = x[a], step = steps[i];
    if (!seen.insert(a).second) c.fail("axes repeat " + std::to_string(axes[i]));
    if (step == 0) c.fail("step must not be 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t size;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      size = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      size = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    out[a] = {s, step, size};
  }
  return out;
}

PadAmounts resolve_pads(const InferContext& c) {
  const int64_t r = c.rank(0);
  const std::vector<int64_t> pads = c.has(1) ? c.ints(1, "pads") : c.node().attr_ints("pads");
  std::vector<int64_t> axes;
  if (c.has(3)) {
    for (int64_t a : c.ints(3, "axes")) axes.push_back(c.axis(a, r));
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  const size_t k = axes.size();
  if (pads.size() != 2 * k)
    c.fail("pads has " + std::to_string(pads.size()) + " entries, needs " + std::to_string(2 * k));
  PadAmounts p{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 0)};
  for (int64_t v : pads)
    if (v > kHuge || v < -kHuge) c.fail("pad " + std::to_string(v) + " is absurdly large");
  for (size_t i = 0; i < k; ++i) {
    p.begin[axes[i]] = pads[i];
    p.end[axes[i]] = pads[i + k];
  }
  return p;
}

void add_layout_rules(RuleTable& t) {
  t["Reshape"] = {reshape, 2, 2};
  t["Flatten"] = {flatten, 1, 1};
  t["Transpose"] = {transpose, 1, 1};
  t["Squeeze"] = {squeeze, 1, 2};
  t["Unsqueeze"] = {unsqueeze, 1, 2};
  t["Concat"] = {concat, 1, -1};
  t["Split"] = {split, 1, 2};
  t["Slice"] = {slice, 3, 5};
  t["Gather"] = {gather, 2, 2};
  t["GatherElements"] = {gather_elements, 2, 2};
  t["Expand"] = {expand, 2, 2};
  t["Tile"] = {tile, 2, 2};
  t["Pad"] = {pad, 1, 4};
  t["Resize"] = {resize, 1, 4};
  t["Upsample"] = {upsample, 1, 2};
  t["DepthToSpace"] = {depth_to_space, 1, 1};
  t["SpaceToDepth"] = {space_to_depth, 1, 1};
}

}  // namespace kora
