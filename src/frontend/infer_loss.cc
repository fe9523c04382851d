// Shape rules of the loss operators NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss:
// input/scores [N, C, d1..dk], target/labels [N, d1..dk] (integers), optional weight [C];
// the loss is [N, d1..dk] with reduction "none", else a scalar. SoftmaxCrossEntropyLoss's
// optional second output is the log-probabilities, shaped like the scores.
#include "frontend/op_rules.h"

namespace kora {
namespace {

Shape loss_shape(const InferContext& c) {
  const Shape &x = c.shape(0), &t = c.shape(1);
  if (x.size() < 2) c.fail("input must have rank >= 2 ([N, C, ...])");
  if (!is_integer(c.dtype(1))) c.fail("target must be integers");
  Shape want{x[0]};
  want.insert(want.end(), x.begin() + 2, x.end());
  if (t != want) c.fail("target is " + shape_str(t) + ", input makes " + shape_str(want));
  if (c.has(2) && c.shape(2) != Shape{x[1]})
    c.fail("weight is " + shape_str(c.shape(2)) + ", not [C] = [" + std::to_string(x[1]) + "]");
  const std::string r = c.node().attr_string("reduction", "mean");
  if (r == "none") return want;
  if (r != "mean" && r != "sum") c.fail("reduction '" + r + "' is not one of none, mean, sum");
  return {};
}

std::vector<ValueInfo> nll_loss(const InferContext& c) {
  return {ValueInfo{c.dtype(0), loss_shape(c)}};
}

std::vector<ValueInfo> softmax_cross_entropy(const InferContext& c) {
  return {ValueInfo{c.dtype(0), loss_shape(c)}, c.in(0)};
}

}  // namespace

void add_loss_rules(RuleTable& t) {
  t["NegativeLogLikelihoodLoss"] = {nll_loss, 2, 3};
  t["SoftmaxCrossEntropyLoss"] = {softmax_cross_entropy, 2, 3};
}

}  // namespace kora
