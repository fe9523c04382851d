// Fission of data-movement operators into layout and broadcast primitives: reshapes
// (Reshape, Flatten, Squeeze, Unsqueeze), Transpose, Concat, Split and Slice (slices),
// Gather with constant indices, Expand (broadcast), Tile, Pad (wrap mode: a gather per
// padded dim), DepthToSpace and SpaceToDepth (reshape + transpose + reshape), and the
// shape producers that survive folding (Shape, Size, ConstantOfShape, Range: constants).
#include <algorithm>
#include <cstring>

#include "fission/builder.h"
#include "frontend/layout_params.h"

namespace kora {
namespace {

void reshape_like(FissionBuilder& b) { b.bind(0, b.reshape(b.in(0), b.out_info(0).shape)); }

void transpose(FissionBuilder& b) {
  const int64_t r = static_cast<int64_t>(b.shape(b.in(0)).size());
  std::vector<int64_t> perm = b.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  for (int64_t& p : perm) p = p < 0 ? p + r : p;
  b.bind(0, b.transpose(b.in(0), perm));
}

void concat(FissionBuilder& b) {
  const Shape& out = b.out_info(0).shape;
  int64_t axis = b.node().attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  layout::Concat attrs{axis, {}};
  std::vector<std::string> inputs;
  int64_t offset = 0;
  for (size_t i = 0; i < b.node().inputs.size(); ++i) {
    if (!b.has_in(i)) continue;
    const std::string x = b.in(i);
    const int64_t size = b.shape(x)[axis];
    if (size == 0) continue;
    inputs.push_back(x);
    attrs.offsets.push_back(offset);
    offset += size;
  }
  if (inputs.size() == 1) return b.bind(0, inputs[0]);
  if (inputs.empty()) return b.bind(0, b.add_constant(Tensor(b.out_info(0).dtype, out)));
  b.bind(0, b.layout(attrs, inputs, out));
}

std::string slice_of(FissionBuilder& b, const std::string& x, const Shape& starts,
                     const Shape& steps, const Shape& out) {
  bool whole = b.shape(x) == out;
  for (size_t d = 0; d < starts.size(); ++d) whole = whole && starts[d] == 0 && steps[d] == 1;
  if (whole) return x;
  if (numel(out) == 0) return b.add_constant(Tensor(b.dtype(x), out));
  return b.layout(layout::Slice{starts, steps}, {x}, out);
}

void split(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  int64_t axis = b.node().attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t offset = 0;
  for (size_t i = 0; i < b.node().outputs.size(); ++i) {
    const Shape& out = b.out_info(i).shape;
    Shape starts(s.size(), 0), steps(s.size(), 1);
    starts[axis] = offset;
    offset += out[axis];
    if (b.wants_out(i)) b.bind(i, slice_of(b, x, starts, steps, out));
  }
}

void slice(FissionBuilder& b) {
  InferContext ctx(b.source(), b.node());
  Shape starts, steps;
  for (const SliceAxis& a : resolve_slice(ctx)) {
    starts.push_back(a.start);
    steps.push_back(a.step);
  }
  b.bind(0, slice_of(b, b.in(0), starts, steps, b.out_info(0).shape));
}

void gather(FissionBuilder& b) {
  const Tensor* indices = b.constant(b.in(1));
  if (!indices) return b.opaque();  // computed indices: kept whole
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  int64_t axis = b.node().attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  std::vector<int64_t> idx = indices->to_int64();
  for (int64_t& i : idx) {
    if (i < -s[axis] || i >= s[axis])
      b.fail("index " + std::to_string(i) + " out of range for dim " + std::to_string(s[axis]));
    if (i < 0) i += s[axis];
  }
  Shape flat = s;
  flat[axis] = static_cast<int64_t>(idx.size());
  const std::string g = b.layout(layout::Gather{axis, idx}, {x}, flat);
  b.bind(0, b.reshape(g, b.out_info(0).shape));
}

void expand(FissionBuilder& b) { b.bind(0, b.broadcast(b.in(0), b.out_info(0).shape)); }

void tile(FissionBuilder& b) {
  const Shape& out = b.out_info(0).shape;
  if (b.shape(b.in(0)) == out) return b.bind(0, b.in(0));
  b.bind(0, b.layout(layout::Tile{}, {b.in(0)}, out));
}

// Wrap padding, as if each dim's ends were joined: a gather per padded dim. Negative pads
// crop first (as onnxruntime does), the rest wraps around what is left: output position o
// reads crop_begin + (o - pad_begin) mod (n - crop_begin - crop_end).
std::string wrap_pad(FissionBuilder& b, std::string x, const PadAmounts& amounts) {
  for (size_t d = 0; d < amounts.begin.size(); ++d) {
    const int64_t begin = amounts.begin[d], end = amounts.end[d];
    if (begin == 0 && end == 0) continue;
    Shape out = b.shape(x);
    const int64_t crop = std::max<int64_t>(-begin, 0);
    const int64_t n = out[d] - crop - std::max<int64_t>(-end, 0);
    const int64_t pad = std::max<int64_t>(begin, 0);
    out[d] += begin + end;
    std::vector<int64_t> indices;
    for (int64_t o = 0; o < out[d]; ++o) indices.push_back(crop + ((o - pad) % n + n) % n);
    x = b.layout(layout::Gather{static_cast<int64_t>(d), indices}, {x}, out);
  }
  return x;
}

void pad(FissionBuilder& b) {
  InferContext ctx(b.source(), b.node());
  const PadAmounts amounts = resolve_pads(ctx);
  const std::string mode = b.node().attr_string("mode", "constant");
  if (mode == "wrap") return b.bind(0, wrap_pad(b, b.in(0), amounts));
  layout::Pad attrs{amounts.begin, Shape(amounts.begin.size(), 1),
                    mode == "reflect" ? layout::PadMode::kReflect
                    : mode == "edge"  ? layout::PadMode::kEdge
                                      : layout::PadMode::kConstant,
                    0.0};
  if (b.has_in(2)) {
    const Tensor& value = b.require_constant(2, "constant_value");
    if (value.numel() > 0) attrs.value = value.double_at(0);
  }
  const std::string x = b.in(0);
  bool none = true;
  for (size_t d = 0; d < amounts.begin.size(); ++d)
    none = none && amounts.begin[d] == 0 && amounts.end[d] == 0;
  b.bind(0, none ? x : b.layout(attrs, {x}, b.out_info(0).shape));
}

void depth_to_space(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t k = b.node().attr_int("blocksize", 1), n = s[0], c = s[1] / (k * k), h = s[2],
                w = s[3];
  std::string y;
  if (b.node().attr_string("mode", "DCR") == "DCR")
    y = b.transpose(b.reshape(x, {n, k, k, c, h, w}), {0, 3, 4, 1, 5, 2});
  else
    y = b.transpose(b.reshape(x, {n, c, k, k, h, w}), {0, 1, 4, 2, 5, 3});
  b.bind(0, b.reshape(y, b.out_info(0).shape));
}

void space_to_depth(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t k = b.node().attr_int("blocksize", 1);
  const std::string y =
      b.transpose(b.reshape(x, {s[0], s[1], s[2] / k, k, s[3] / k, k}), {0, 3, 5, 1, 2, 4});
  b.bind(0, b.reshape(y, b.out_info(0).shape));
}

// Shape producers: their values depend only on static shapes or constants.
void shape_of(FissionBuilder& b) {
  const Shape& s = b.shape(b.in(0));
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = b.node().attr_int("start", 0);
  if (start < 0) start += r;
  start = std::clamp<int64_t>(start, 0, r);
  const int64_t len = b.out_info(0).shape[0];
  b.bind(0, b.add_constant(Tensor::from_int64(DType::kInt64, {len},
                                              Shape(s.begin() + start, s.begin() + start + len))));
}

void size_of(FissionBuilder& b) {
  b.bind(0, b.add_constant(Tensor::from_int64(DType::kInt64, {}, {numel(b.shape(b.in(0)))})));
}

void constant_of_shape(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  Tensor one(out.dtype, {});
  if (const Tensor* v = b.node().attr_tensor("value"))
    std::memcpy(one.mutable_bytes(), v->bytes(), dtype_size(out.dtype));
  b.bind(0, b.broadcast(b.add_constant(one), out.shape));
}

void range(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  const Tensor& start = b.require_constant(0, "start");
  const Tensor& delta = b.require_constant(2, "delta");
  Tensor t(out.dtype, out.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (is_floating(out.dtype))
      set_element(t, i, start.double_at(0) + static_cast<double>(i) * delta.double_at(0));
    else
      set_element_int(t, i, start.int64_at(0) + i * delta.int64_at(0));
  }
  b.bind(0, b.add_constant(t));
}

}  // namespace

void add_layout_fission(FissionTable& t) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) t[op] = reshape_like;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Gather"] = gather;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Pad"] = pad;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["Shape"] = shape_of;
  t["Size"] = size_of;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
}

}  // namespace kora
