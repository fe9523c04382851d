// Fission of the loss operators. NegativeLogLikelihoodLoss: loss[n, d] =
// -input[n, target[n, d], d] * weight[target[n, d]], 0 where target == ignore_index (the
// pick along C is GatherElements and the weight look-up Gather, both kept whole: their
// indices are data); "sum" adds the losses, "mean" divides that by the sum of the weights
// taken (the count of targets not ignored when there is no weight). SoftmaxCrossEntropyLoss
// is the same over the stable LogSoftmax of the scores along C, which is its second output.
#include "fission/builder.h"

namespace kora {
namespace {

using S = ScalarOp;

std::vector<int64_t> all_axes(size_t rank) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

std::string nll_loss_of(FissionBuilder& b, const std::string& input, const std::string& target,
                        const std::string& weight) {
  const Node& n = b.node();
  const DType dtype = b.dtype(input);
  std::string t = target;
  if (b.dtype(t) != DType::kInt64) t = b.ew(S::kCast, {t}, DType::kInt64);
  std::string taken;  // 1 where the target counts, when some may not
  if (n.has_attr("ignore_index")) {
    const double ignore = static_cast<double>(n.attr_int("ignore_index", 0));
    const std::string keep = b.ew(S::kNot, {b.ew(S::kEqual, {t, ignore})});
    t = b.ew(S::kWhere, {keep, t, 0.0});
    taken = b.ew(S::kCast, {keep}, dtype);
  }
  const Shape& ts = b.shape(t);
  Shape along_c = ts;
  along_c.insert(along_c.begin() + 1, 1);
  Node pick;
  pick.op_type = "GatherElements";
  pick.inputs = {input, b.reshape(t, along_c)};
  pick.attributes["axis"].i = 1;
  const std::string picked = b.opaque_node(pick, {ValueInfo{dtype, along_c}})[0];
  std::string loss = b.ew(S::kNeg, {b.reshape(picked, ts)});
  std::string w = taken;
  if (!weight.empty()) {
    Node look_up;
    look_up.op_type = "Gather";
    look_up.inputs = {weight, t};
    look_up.attributes["axis"].i = 0;
    const std::string wt = b.opaque_node(look_up, {ValueInfo{dtype, ts}})[0];
    w = w.empty() ? wt : b.ew(S::kMul, {wt, w});
  }
  if (!w.empty()) loss = b.ew(S::kMul, {loss, w});
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  const std::vector<int64_t> axes = all_axes(ts.size());
  if (reduction == "sum") return b.reshape(b.reduce(ReduceOp::kSum, loss, axes), {});
  if (w.empty()) return b.reshape(b.reduce(ReduceOp::kMean, loss, axes), {});
  const std::string total = b.reduce(ReduceOp::kSum, loss, axes);
  return b.reshape(b.ew(S::kDiv, {total, b.reduce(ReduceOp::kSum, w, axes)}), {});
}

void nll_loss(FissionBuilder& b) { b.bind(0, nll_loss_of(b, b.in(0), b.in(1), b.in(2))); }

void softmax_cross_entropy(FissionBuilder& b) {
  const std::string log_prob = stable_softmax(b, b.in(0), {1}, true);
  b.bind(0, nll_loss_of(b, log_prob, b.in(1), b.in(2)));
  b.bind(1, log_prob);
}

}  // namespace

void add_loss_fission(FissionTable& t) {
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace kora
