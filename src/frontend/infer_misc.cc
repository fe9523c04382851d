// Shape rules of the shape-producing and opaque operators: Shape, Size, ConstantOfShape,
// Range, TopK, NonMaxSuppression and TfIdfVectorizer (integer X [C] or [B, C] -> float32
// [max(ngram_indexes) + 1] or [B, max(ngram_indexes) + 1]; string n-grams refused).
#include <algorithm>
#include <cmath>

#include "frontend/op_rules.h"

namespace kora {
namespace {

std::vector<ValueInfo> shape_op(const InferContext& c) {
  const int64_t r = c.rank(0);
  int64_t start = c.node().attr_int("start", 0), end = c.node().attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return {ValueInfo{DType::kInt64, {std::max<int64_t>(0, end - start)}}};
}

std::vector<ValueInfo> size_op(const InferContext&) { return {ValueInfo{DType::kInt64, {}}}; }

std::vector<ValueInfo> constant_of_shape(const InferContext& c) {
  const std::vector<int64_t> shape = c.ints(0, "shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("shape " + shape_str(shape) + " has a negative dimension");
  const Tensor* value = c.node().attr_tensor("value");
  return {ValueInfo{value ? value->dtype() : DType::kFloat32, shape}};
}

std::vector<ValueInfo> range(const InferContext& c) {
  const double start = c.scalar(0, "start"), limit = c.scalar(1, "limit"),
               delta = c.scalar(2, "delta");
  if (delta == 0) c.fail("delta must not be 0");
  const double n = std::ceil((limit - start) / delta);
  return {ValueInfo{c.dtype(0), {std::max<int64_t>(0, static_cast<int64_t>(n))}}};
}

std::vector<ValueInfo> topk(const InferContext& c) {
  Shape out = c.shape(0);
  if (out.empty()) c.fail("input must have rank >= 1");
  const int64_t axis = c.axis(c.node().attr_int("axis", -1), c.rank(0));
  const int64_t k = c.has(1) ? static_cast<int64_t>(c.scalar(1, "K")) : c.node().attr_int("k", -1);
  if (k < 0 || k > out[axis])
    c.fail("K = " + std::to_string(k) + " is not in [0, " + std::to_string(out[axis]) + "]");
  out[axis] = k;
  return {ValueInfo{c.dtype(0), out}, ValueInfo{DType::kInt64, out}};
}

// The number of selected boxes depends on the data; kora sizes the output for the
// largest possible selection (every class keeps max_output_boxes_per_class boxes):
// batches x classes x min(max_output_boxes_per_class, boxes) rows.
std::vector<ValueInfo> non_max_suppression(const InferContext& c) {
  const Shape& boxes = c.shape(0);
  const Shape& scores = c.shape(1);
  if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] ||
      scores[2] != boxes[1])
    c.fail("boxes " + shape_str(boxes) + " and scores " + shape_str(scores) + " do not match");
  const int64_t per_class =
      c.has(2) ? static_cast<int64_t>(c.scalar(2, "max_output_boxes_per_class")) : 0;
  const int64_t rows = boxes[0] * scores[1] * std::min(std::max<int64_t>(per_class, 0), boxes[1]);
  return {ValueInfo{DType::kInt64, {rows, 3}}};
}

std::vector<ValueInfo> tfidf_vectorizer(const InferContext& c) {
  const Node& n = c.node();
  if (n.has_attr("pool_strings") || !n.has_attr("pool_int64s"))
    c.fail("string n-grams (pool_strings) are not supported: kora has no string dtype");
  if (c.dtype(0) != DType::kInt32 && c.dtype(0) != DType::kInt64)
    c.fail("X must be int32 or int64, not " + std::string(dtype_name(c.dtype(0))));
  const std::string mode = n.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    c.fail("mode '" + mode + "' is not one of TF, IDF, TFIDF");
  const std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
  if (indexes.empty()) c.fail("ngram_indexes must not be empty");
  const int64_t size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (*std::min_element(indexes.begin(), indexes.end()) < 0)
    c.fail("ngram_indexes must not be negative");
  const Shape& x = c.shape(0);
  if (x.size() == 1) return {ValueInfo{DType::kFloat32, {size}}};
  if (x.size() == 2 && x[0] > 0) return {ValueInfo{DType::kFloat32, {x[0], size}}};
  c.fail("X must be [C] or [B, C] with B > 0, got " + shape_str(x));
}

}  // namespace

void add_misc_rules(RuleTable& t) {
  t["Shape"] = {shape_op, 1, 1};
  t["Size"] = {size_op, 1, 1};
  t["ConstantOfShape"] = {constant_of_shape, 1, 1};
  t["Range"] = {range, 3, 3};
  t["TopK"] = {topk, 1, 2};
  t["NonMaxSuppression"] = {non_max_suppression, 2, 5};
  t["TfIdfVectorizer"] = {tfidf_vectorizer, 1, 1};
}

}  // namespace kora
