// Shape rules of the index-driven operators: Trilu (triangle mask), CumSum, OneHot,
// EyeLike, GatherND, ScatterND, ScatterElements, Compress, NonZero, Unique, ReverseSequence
// and CenterCropPad. Values that decide a shape (OneHot's depth, Compress's condition,
// NonZero's and Unique's input) or an index map (Trilu's k, CumSum's axis, the sequence lengths)
// must be constants.
#include <algorithm>
#include <optional>

#include "frontend/op_rules.h"
#include "frontend/unique.h"

namespace kora {
namespace {

std::vector<ValueInfo> trilu(const InferContext& c) {
  if (c.rank(0) < 2) c.fail("input must have rank >= 2");
  if (c.has(1)) c.scalar(1, "k");
  return {c.in(0)};
}

std::vector<ValueInfo> cum_sum(const InferContext& c) {
  if (c.rank(0) < 1) c.fail("input must have rank >= 1");
  c.axis(static_cast<int64_t>(c.scalar(1, "axis")), c.rank(0));
  return {c.in(0)};
}

std::vector<ValueInfo> one_hot(const InferContext& c) {
  const double depth = c.scalar(1, "depth");
  if (!(depth >= 1)) c.fail("depth must be at least 1");
  if (numel(c.shape(2)) != 2) c.fail("values must hold two elements (off, on)");
  const int64_t r = c.rank(0);
  int64_t axis = c.node().attr_int("axis", -1);
  if (axis < -r - 1 || axis > r)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r + 1));
  if (axis < 0) axis += r + 1;
  Shape out = c.shape(0);
  out.insert(out.begin() + axis, static_cast<int64_t>(depth));
  return {ValueInfo{c.dtype(2), out}};
}

std::vector<ValueInfo> eye_like(const InferContext& c) {
  if (c.rank(0) != 2) c.fail("input must have rank 2");
  return {ValueInfo{dtype_attribute(c, c.dtype(0)), c.shape(0)}};
}

void require_integer_indices(const InferContext& c, size_t i) {
  if (!is_integer(c.dtype(i)))
    c.fail(std::string("indices must be integers, not ") + dtype_name(c.dtype(i)));
}

// data [r], indices [q] whose last dim k indexes data's dims batch_dims..batch_dims+k.
std::vector<ValueInfo> gather_nd(const InferContext& c) {
  require_integer_indices(c, 1);
  const Shape &data = c.shape(0), &idx = c.shape(1);
  const int64_t b = c.node().attr_int("batch_dims", 0);
  if (idx.empty()) c.fail("indices must have rank >= 1");
  const int64_t k = idx.back(), r = c.rank(0), q = c.rank(1);
  if (b < 0 || b >= std::min(r, q) || k < 1 || b + k > r)
    c.fail("indices " + shape_str(idx) + " with batch_dims " + std::to_string(b) +
           " do not index data " + shape_str(data));
  for (int64_t d = 0; d < b; ++d)
    if (idx[d] != data[d]) c.fail("batch dims of indices and data differ");
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return {ValueInfo{c.dtype(0), out}};
}

void check_reduction(const InferContext& c) {
  const std::string r = c.node().attr_string("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    c.fail("reduction '" + r + "' is not one of none, add, mul, max, min");
}

// updates [indices.shape[:-1] + data.shape[k:]]
std::vector<ValueInfo> scatter_nd(const InferContext& c) {
  require_integer_indices(c, 1);
  check_reduction(c);
  const Shape &data = c.shape(0), &idx = c.shape(1), &upd = c.shape(2);
  if (idx.empty() || idx.back() < 1 || idx.back() > c.rank(0))
    c.fail("indices " + shape_str(idx) + " do not index data " + shape_str(data));
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + idx.back(), data.end());
  if (upd != want)
    c.fail("updates are " + shape_str(upd) + ", indices and data make " + shape_str(want));
  if (c.dtype(2) != c.dtype(0)) c.fail("updates and data differ in dtype");
  return {c.in(0)};
}

std::vector<ValueInfo> scatter_elements(const InferContext& c) {
  require_integer_indices(c, 1);
  check_reduction(c);
  if (c.shape(1) != c.shape(2)) c.fail("indices and updates differ in shape");
  if (c.rank(1) != c.rank(0)) c.fail("indices and data differ in rank");
  c.axis(c.node().attr_int("axis", 0), c.rank(0));
  if (c.dtype(2) != c.dtype(0)) c.fail("updates and data differ in dtype");
  return {c.in(0)};
}

// The count of true conditions decides the shape: the condition must be a constant.
std::vector<ValueInfo> compress(const InferContext& c) {
  const std::vector<int64_t> cond = c.ints(1, "condition");
  if (c.rank(1) != 1) c.fail("condition must have rank 1");
  int64_t kept = 0;
  for (int64_t v : cond) kept += v != 0;
  if (!c.node().has_attr("axis")) return {ValueInfo{c.dtype(0), {kept}}};
  Shape out = c.shape(0);
  const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
  if (static_cast<int64_t>(cond.size()) > out[axis])
    c.fail("condition is longer than axis " + std::to_string(axis));
  out[axis] = kept;
  return {ValueInfo{c.dtype(0), out}};
}

// The count of nonzero elements decides the shape: the input must be a constant.
std::vector<ValueInfo> non_zero(const InferContext& c) {
  const std::vector<double> x = c.doubles(0, "input of NonZero, whose output size is data");
  int64_t nonzero = 0;
  for (double v : x) nonzero += v != 0;
  return {ValueInfo{DType::kInt64, {c.rank(0), nonzero}}};
}

std::vector<ValueInfo> reverse_sequence(const InferContext& c) {
  const int64_t batch = c.node().attr_int("batch_axis", 1),
                time = c.node().attr_int("time_axis", 0);
  if (c.rank(0) < 2 || (batch != 0 && batch != 1) || (time != 0 && time != 1) || batch == time)
    c.fail("batch_axis and time_axis must be 0 and 1 (either way round) of a rank >= 2 input");
  const std::vector<int64_t> lens = c.ints(1, "sequence_lens");
  if (static_cast<int64_t>(lens.size()) != c.shape(0)[batch])
    c.fail("sequence_lens has " + std::to_string(lens.size()) + " entries for a batch of " +
           std::to_string(c.shape(0)[batch]));
  for (int64_t l : lens)
    if (l < 0 || l > c.shape(0)[time])
      c.fail("sequence length " + std::to_string(l) + " is out of range");
  return {c.in(0)};
}

std::vector<ValueInfo> center_crop_pad(const InferContext& c) {
  const std::vector<int64_t> shape = c.ints(1, "shape");
  const int64_t r = c.rank(0);
  std::vector<int64_t> axes = c.node().attr_ints("axes");
  if (axes.empty())
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  if (axes.size() != shape.size()) c.fail("shape and axes differ in length");
  Shape out = c.shape(0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) c.fail("shape " + shape_str(shape) + " has a negative dimension");
    out[c.axis(axes[i], r)] = shape[i];
  }
  return {ValueInfo{c.dtype(0), out}};
}

// The number of distinct values decides the shapes: the input must be a constant.
std::optional<int64_t> unique_axis(const InferContext& c) {
  if (!c.node().has_attr("axis")) return std::nullopt;
  return c.axis(c.node().attr_int("axis", 0), c.rank(0));
}

std::vector<ValueInfo> unique(const InferContext& c) {
  const Tensor* x = c.constant(0);
  if (!x) c.doubles(0, "input of Unique, whose output size is data");  // fails
  const UniqueResult r = unique_of(*x, unique_axis(c), c.node().attr_int("sorted", 1) != 0);
  return {ValueInfo{x->dtype(), r.y.shape()}, ValueInfo{DType::kInt64, r.indices.shape()},
          ValueInfo{DType::kInt64, r.inverse.shape()}, ValueInfo{DType::kInt64, r.counts.shape()}};
}

}  // namespace

void add_indexing_rules(RuleTable& t) {
  t["Unique"] = {unique, 1, 1};
  t["Compress"] = {compress, 2, 2};
  t["NonZero"] = {non_zero, 1, 1};
  t["ReverseSequence"] = {reverse_sequence, 2, 2};
  t["CenterCropPad"] = {center_crop_pad, 2, 2};
  t["Trilu"] = {trilu, 1, 2};
  t["CumSum"] = {cum_sum, 2, 2};
  t["OneHot"] = {one_hot, 3, 3};
  t["EyeLike"] = {eye_like, 1, 1};
  t["GatherND"] = {gather_nd, 2, 2};
  t["ScatterND"] = {scatter_nd, 3, 3};
  t["ScatterElements"] = {scatter_elements, 3, 3};
  t["Scatter"] = {scatter_elements, 3, 3};  // opsets 9 and 10 (older_opset.cc)
}

}  // namespace kora
