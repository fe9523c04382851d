// Shape rules of the random generators: RandomUniform and RandomNormal (shape and dtype
// from attributes), RandomUniformLike, RandomNormalLike and Bernoulli (the input's shape;
// dtype from the attribute or the input). In: the node's attributes and input types.
// Out: the output's type. The values come from src/interpreter/random.cc.
#include "frontend/op_rules.h"

namespace kora {
namespace {

// The `dtype` attribute, or `fallback`; floating types only unless `any`.
DType dtype_attribute(const InferContext& c, DType fallback, bool any) {
  if (!c.node().has_attr("dtype")) return fallback;
  const int to = static_cast<int>(c.node().attr_int("dtype", 0));
  const std::optional<DType> d = dtype_from_onnx(to);
  if (!d || (!any && !is_floating(*d)) || *d == DType::kBFloat16)
    c.fail("dtype " + onnx_dtype_name(to) + " is not supported");
  return *d;
}

std::vector<ValueInfo> random_from_attributes(const InferContext& c) {
  if (!c.node().has_attr("shape")) c.fail("needs the 'shape' attribute");
  const Shape shape = c.node().attr_ints("shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("shape " + shape_str(shape) + " has a negative dim");
  return {ValueInfo{dtype_attribute(c, DType::kFloat32, false), shape}};
}

std::vector<ValueInfo> random_like(const InferContext& c) {
  DType fallback = c.dtype(0);
  if (!is_floating(fallback)) fallback = DType::kFloat32;
  return {ValueInfo{dtype_attribute(c, fallback, false), c.shape(0)}};
}

std::vector<ValueInfo> bernoulli(const InferContext& c) {
  if (!is_floating(c.dtype(0))) c.fail("input must be probabilities (float)");
  return {ValueInfo{dtype_attribute(c, c.dtype(0), true), c.shape(0)}};
}

}  // namespace

void add_random_rules(RuleTable& t) {
  t["RandomUniform"] = {random_from_attributes, 0, 0};
  t["RandomNormal"] = {random_from_attributes, 0, 0};
  t["RandomUniformLike"] = {random_like, 1, 1};
  t["RandomNormalLike"] = {random_like, 1, 1};
  t["Bernoulli"] = {bernoulli, 1, 1};
}

}  // namespace kora
