// FLOPs estimate per operator node. In: a node with inferred shapes. Out: floating-point
// operations, multiply-add counted as two; data movement counts zero.
#include <set>

#include "kora/inspect.h"

namespace kora {
namespace {

int64_t product(const Shape& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

const std::set<std::string>& data_movement() {
  static const std::set<std::string> ops = {
      "Reshape", "Flatten",      "Transpose",    "Squeeze",        "Unsqueeze", "Concat",
      "Split",   "Slice",        "Gather",       "GatherElements", "Expand",    "Tile",
      "Pad",     "Identity",     "Dropout",      "Shape",          "Size",      "ConstantOfShape",
      "Range",   "DepthToSpace", "SpaceToDepth", "Cast",           "CastLike"};
  return ops;
}

}  // namespace

int64_t estimate_flops(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  if (data_movement().count(op)) return 0;
  auto in = [&](size_t i) -> const Shape& { return g.value(n.inputs[i]).shape; };
  if (op == "RNN" || op == "GRU" || op == "LSTM") {
    // Each step and direction: [batch, input + hidden] x [input + hidden, gates * hidden].
    const Shape &x = in(0), &w = in(1), &r = in(2);
    return 2 * x[0] * x[1] * w[0] * w[1] * (w[2] + r[2]);
  }
  const Shape& out = g.value(n.outputs[0]).shape;
  const int64_t out_n = numel(out);
  if (op == "Conv") {
    const Shape& w = in(1);
    return 2 * out_n * product(w, 1) + (n.has_input(2) ? out_n : 0);
  }
  if (op == "DeformConv") {
    // The convolution, and per sampled value (N * C * kH * kW * oH * oW) 4 bilinear taps
    // and the mask: 9 more.
    const Shape &x = in(0), &w = in(1);
    const int64_t samples = x[0] * x[1] * w[2] * w[3] * out[2] * out[3];
    return 2 * out_n * product(w, 1) + 9 * samples + (n.has_input(3) ? out_n : 0);
  }
  if (op == "ConvTranspose") return 2 * numel(in(0)) * product(in(1), 1);
  if (op == "MatMul") {
    const Shape& a = in(0);
    return 2 * out_n * a.back();
  }
  if (op == "Gemm") {
    const Shape& a = in(0);
    const int64_t k = n.attr_int("transA", 0) ? a[0] : a[1];
    return 2 * out_n * k + (n.has_input(2) ? out_n : 0);
  }
  if (op == "Einsum") {
    // A naive contraction loops over every label once.
    int64_t total = 1;
    for (const std::string& i : n.inputs) total = std::max(total, numel(g.value(i).shape));
    return 2 * std::max(total, out_n);
  }
  if (op == "AveragePool" || op == "MaxPool")
    return out_n * product(n.attr_ints("kernel_shape"), 0);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op.rfind("Reduce", 0) == 0 ||
      op == "ArgMax" || op == "ArgMin" || op == "TopK")
    return numel(in(0));
  if (op == "Softmax" || op == "LogSoftmax") return 5 * out_n;
  if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "GroupNormalization")
    return 8 * out_n;
  if (op == "BatchNormalization") return 2 * out_n;
  if (op == "Resize" || op == "Upsample")
    return n.attr_string("mode", "nearest") == "nearest" ? 0 : 4 * out_n;
  if (op == "NonMaxSuppression") return numel(in(0)) * in(0)[1];
  return out_n;  // elementwise
}

}  // namespace kora
