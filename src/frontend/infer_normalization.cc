// Shape rules of normalization-like operators: BatchNormalization (inference),
// Instance-, Layer- and GroupNormalization, Softmax, LogSoftmax, Hardmax, LRN,
// MeanVarianceNormalization and Dropout (training mode too: a random mask).
#include "frontend/op_rules.h"

namespace kora {
namespace {

// Checks that input i is a vector of `channels` elements (scale, bias, mean, var).
void expect_channels(const InferContext& c, size_t i, int64_t channels, const char* role) {
  if (c.has(i) && numel(c.shape(i)) != channels)
    c.fail(std::string(role) + " " + shape_str(c.shape(i)) + " does not match " +
           std::to_string(channels) + " channels");
}

// Inference, or with training_mode=1 (opset 14 on) the batch's statistics and the
// updated running mean and variance as outputs 1 and 2.
std::vector<ValueInfo> batch_norm(const InferContext& c) {
  const bool training = c.node().attr_int("training_mode", 0) != 0;
  for (size_t o = training ? 3 : 1; o < c.node().outputs.size(); ++o)
    if (c.node().has_output(o))
      c.fail(training ? "saved mean/var outputs are not supported"
                      : "running mean/var outputs need training_mode=1");
  if (c.rank(0) < 2) c.fail("input must have rank >= 2");
  const int64_t ch = c.shape(0)[1];
  expect_channels(c, 1, ch, "scale");
  expect_channels(c, 2, ch, "bias");
  expect_channels(c, 3, ch, "mean");
  expect_channels(c, 4, ch, "var");
  if (!training) return {c.in(0)};
  return {c.in(0), c.in(3), c.in(4)};
}

std::vector<ValueInfo> instance_norm(const InferContext& c) {
  if (c.rank(0) < 3) c.fail("input must have rank >= 3");
  expect_channels(c, 1, c.shape(0)[1], "scale");
  expect_channels(c, 2, c.shape(0)[1], "bias");
  return {c.in(0)};
}

std::vector<ValueInfo> group_norm(const InferContext& c) {
  const int64_t groups = c.node().attr_int("num_groups", 0);
  if (c.rank(0) < 3) c.fail("input must have rank >= 3");
  if (groups <= 0 || c.shape(0)[1] % groups != 0)
    c.fail("num_groups " + std::to_string(groups) + " does not divide " +
           std::to_string(c.shape(0)[1]) + " channels");
  return {c.in(0)};
}

std::vector<ValueInfo> layer_norm(const InferContext& c) {
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(c.node().attr_int("axis", -1), c.rank(0));
  const Shape norm(x.begin() + axis, x.end());
  for (size_t i = 1; i < 3; ++i)
    if (c.has(i)) broadcast_shapes(c, norm, c.shape(i));
  Shape stats(x.begin(), x.begin() + axis);
  stats.resize(x.size(), 1);
  const auto stash = dtype_from_onnx(static_cast<int>(c.node().attr_int("stash_type", 1)));
  const DType stat_type = stash ? *stash : DType::kFloat32;
  return {c.in(0), ValueInfo{stat_type, stats}, ValueInfo{stat_type, stats}};
}

std::vector<ValueInfo> softmax(const InferContext& c) {
  const int64_t fallback = c.opset() < 13 ? 1 : -1;
  c.axis(c.node().attr_int("axis", fallback), c.rank(0));
  return {c.in(0)};
}

std::vector<ValueInfo> lrn(const InferContext& c) {
  if (c.rank(0) < 2) c.fail("input must have rank >= 2");
  if (c.node().attr_int("size", 0) < 1) c.fail("size must be at least 1");
  return {c.in(0)};
}

std::vector<ValueInfo> mean_variance_normalization(const InferContext& c) {
  for (int64_t a : c.node().attr_ints("axes", {0, 2, 3})) c.axis(a, c.rank(0));
  return {c.in(0)};
}

// Inference, or training with a constant ratio of 0: both keep every element. A random
// mask (training with a ratio above 0) has no reproducible result to compile.
std::vector<ValueInfo> dropout(const InferContext& c) {
  if (c.has(2) && c.scalar(2, "training_mode") != 0 && c.has(1)) {
    const double ratio = c.scalar(1, "ratio");
    if (!(ratio >= 0 && ratio < 1)) c.fail("ratio must be in [0, 1)");
  }
  return {c.in(0), ValueInfo{DType::kBool, c.shape(0)}};
}

}  // namespace

void add_normalization_rules(RuleTable& t) {
  t["BatchNormalization"] = {batch_norm, 5, 5};
  t["InstanceNormalization"] = {instance_norm, 3, 3};
  t["GroupNormalization"] = {group_norm, 3, 3};
  t["LayerNormalization"] = {layer_norm, 2, 3};
  t["Softmax"] = {softmax, 1, 1};
  t["LogSoftmax"] = {softmax, 1, 1};
  t["Hardmax"] = {softmax, 1, 1};
  t["LRN"] = {lrn, 1, 1};
  t["MeanVarianceNormalization"] = {mean_variance_normalization, 1, 1};
  t["Dropout"] = {dropout, 1, 3};
}

}  // namespace kora
