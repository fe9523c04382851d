// Fission of the operators whose result is a pattern of positions: Trilu (the input where
// a constant triangle mask holds, else 0), OneHot (indices compared with an iota along the
// new axis, then on/off values), EyeLike (a constant); all three elementwise, so they fuse
// with their neighbours. Compress (a gather of the kept positions), CenterCropPad (one pad
// map), ReverseSequence (GatherElements with constant indices), NonZero and Unique of a
// constant.
#include "fission/builder.h"
#include "frontend/unique.h"

namespace kora {
namespace {

using S = ScalarOp;

void trilu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t k = b.has_in(1) ? b.require_constant(1, "k").int64_at(0) : 0;
  const bool upper = b.node().attr_int("upper", 1) != 0;
  Tensor mask(DType::kBool, {rows, cols});
  bool everywhere = true;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const bool keep = upper ? j - i >= k : j - i <= k;
      set_element_int(mask, i * cols + j, keep);
      everywhere = everywhere && keep;
    }
  if (everywhere) return b.bind(0, x);
  b.bind(0, b.ew(S::kWhere, {b.add_constant(std::move(mask)), x, 0.0}, b.dtype(x)));
}

// Element i of a two-element tensor: an immediate when constant, else a slice.
Arg element(FissionBuilder& b, const std::string& t, int64_t i) {
  if (const Tensor* c = b.constant(t)) return Arg(c->double_at(i));
  return b.layout(layout::Slice{{i}, {1}}, {b.reshape(t, {2})}, {1});
}

void one_hot(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  int64_t axis = b.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const int64_t depth = out.shape[axis];
  std::string index = b.in(0);
  if (b.dtype(index) != DType::kInt64) index = b.ew(S::kCast, {index}, DType::kInt64);
  index = b.ew(S::kWhere, {b.ew(S::kLess, {index, 0.0}),
                           b.ew(S::kAdd, {index, static_cast<double>(depth)}), index});
  Shape s = b.shape(index);
  s.insert(s.begin() + axis, 1);
  const std::string hot =
      b.ew(S::kEqual, {b.reshape(index, s), b.iota(depth, axis, out.shape.size())});
  const std::string values = b.in(2);
  b.bind(0, b.ew(S::kWhere, {hot, element(b, values, 1), element(b, values, 0)}, out.dtype));
}

void eye_like(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  const int64_t rows = out.shape[0], cols = out.shape[1], k = b.node().attr_int("k", 0);
  Tensor eye(out.dtype, out.shape);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) set_element(eye, i * cols + i + k, 1.0);
  b.bind(0, b.add_constant(std::move(eye)));
}

// The kept positions of a constant condition as a gather with constant indices.
void compress(FissionBuilder& b) {
  std::string x = b.in(0);
  const std::vector<int64_t> cond = b.require_constant(1, "condition").to_int64();
  std::vector<int64_t> kept;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) kept.push_back(static_cast<int64_t>(i));
  int64_t axis = 0;
  if (b.node().has_attr("axis")) {
    axis = b.node().attr_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(b.shape(x).size());
  } else {
    x = b.reshape(x, {numel(b.shape(x))});
  }
  b.bind(0, b.layout(layout::Gather{axis, kept}, {x}, b.out_info(0).shape));
}

// Only for a constant input (the shape rule insists): the coordinates as a constant.
void non_zero(FissionBuilder& b) {
  const Tensor& x = b.require_constant(0, "input");
  const ValueInfo& out = b.out_info(0);
  const int64_t rank = out.shape[0], count = out.shape[1];
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  Tensor coords(DType::kInt64, out.shape);
  int64_t found = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.double_at(i) == 0) continue;
    for (int64_t d = 0; d < rank; ++d)
      set_element_int(coords, d * count + found, (i / strides[d]) % x.shape()[d]);
    ++found;
  }
  b.bind(0, b.add_constant(std::move(coords)));
}

// Each batch entry's first sequence_lens[b] time steps reversed: GatherElements along the
// time axis with constant indices (kept whole; the indices differ per batch entry).
void reverse_sequence(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t batch_axis = b.node().attr_int("batch_axis", 1);
  const int64_t time_axis = b.node().attr_int("time_axis", 0);
  const std::vector<int64_t> lens = b.require_constant(1, "sequence_lens").to_int64();
  Tensor index(DType::kInt64, s);
  const int64_t inner = numel(s) / (s[0] * s[1]);
  for (int64_t i = 0; i < index.numel(); ++i) {
    const int64_t a0 = i / (s[1] * inner), a1 = (i / inner) % s[1];
    const int64_t n = batch_axis == 0 ? a0 : a1, t = time_axis == 0 ? a0 : a1;
    set_element_int(index, i, t < lens[n] ? lens[n] - 1 - t : t);
  }
  Node gather;
  gather.op_type = "GatherElements";
  gather.inputs = {x, b.add_constant(std::move(index))};
  gather.attributes["axis"].i = time_axis;
  b.bind(0, b.opaque_node(gather, {b.info(x)})[0]);
}

// Centred crop or zero pad per axis: one pad index map (a negative begin crops).
void center_crop_pad(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& in = b.shape(x);
  const Shape& out = b.out_info(0).shape;
  layout::Pad pad{Shape(in.size(), 0), Shape(in.size(), 1), layout::PadMode::kConstant, 0.0};
  for (size_t d = 0; d < in.size(); ++d)
    pad.begin[d] = out[d] >= in[d] ? (out[d] - in[d]) / 2 : -((in[d] - out[d]) / 2);
  b.bind(0, out == in ? x : b.layout(pad, {x}, out));
}

// Only for a constant input (the shape rule insists): the four outputs as constants.
void unique(FissionBuilder& b) {
  const Tensor& x = b.require_constant(0, "input");
  std::optional<int64_t> axis;
  if (b.node().has_attr("axis")) {
    axis = b.node().attr_int("axis", 0);
    if (*axis < 0) *axis += static_cast<int64_t>(x.shape().size());
  }
  UniqueResult r = unique_of(x, axis, b.node().attr_int("sorted", 1) != 0);
  Tensor* outputs[] = {&r.y, &r.indices, &r.inverse, &r.counts};
  for (size_t i = 0; i < 4; ++i)
    if (b.wants_out(i)) b.bind(i, b.add_constant(std::move(*outputs[i])));
}

}  // namespace

void add_indexing_fission(FissionTable& t) {
  t["Unique"] = unique;
  t["Compress"] = compress;
  t["NonZero"] = non_zero;
  t["ReverseSequence"] = reverse_sequence;
  t["CenterCropPad"] = center_crop_pad;
  t["Trilu"] = trilu;
  t["OneHot"] = one_hot;
  t["EyeLike"] = eye_like;
}

}  // namespace kora
