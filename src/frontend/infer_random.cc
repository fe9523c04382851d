// Shape rules of the random generators: RandomUniform and RandomNormal (shape and dtype
// from attributes), RandomUniformLike, RandomNormalLike and Bernoulli (the input's shape;
// dtype from the attribute or the input). In: the node's attributes and input types.
// Out: the output's type. The values come from src/interpreter/random.cc.
#include "frontend/op_rules.h"

namespace kora {
namespace {

// The `dtype` attribute, or `fallback`; floating types only unless `any`.
DType dtype_attribute(const InferContext& c, DType fallback, bool any) {
  const DType d = kora::dtype_attribute(c, fallback);
  if ((!any && !is_floating(d)) || d == DType::kBFloat16)
    c.fail(std::string("dtype ") + dtype_name(d) + " is not supported here");
  return d;
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
