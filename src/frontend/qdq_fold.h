// Folding of QDQ groups into the integer operators, as onnxruntime does before it runs a
// QDQ-quantized model. In: a graph whose shapes are inferred. Out: the same graph where
//
//   QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(W), DequantizeLinear(B)))
//     becomes QLinearConv(x, W, B), and
//   QuantizeLinear(MatMul(DequantizeLinear(a), DequantizeLinear(B)))
//     becomes QLinearMatMul(a, B),
//
// so the sum is exact in int32 and only the requantization rounds, and
//
//   QuantizeLinear(Add(DequantizeLinear(a), DequantizeLinear(b)))
//     becomes the float32 arithmetic of onnxruntime's QLinearAdd (qdq_fold.cc).
// Computed in float as
// the graph literally says, a sum that lands within float rounding of a .5 step quantizes
// one step apart under another summation order, and such steps grow layer by layer
// (1e-2 relative L2 on a quantized ResNet-18); onnxruntime's default optimisation level
// runs the integer form, and with the fold kora gives its integers.
//
// A group folds only when the integer form computes the same function: the weights and
// bias are constants; x, a and the output are quantized per tensor; W per tensor or per
// output channel (Conv: axis 0; MatMul: per column of a 2-D B); the bias is int32 with a
// zero point of 0 and a scale of x_scale * W_scale (within float rounding); the float
// result feeds only the QuantizeLinear and is not a graph output. Other groups keep
// their float form. The DequantizeLinear nodes left without a consumer are pruned by
// shape inference after the fold.
#pragma once

#include <map>
#include <string>

#include "kora/graph.h"

namespace kora {

// Rewrites the groups in place; returns how many were folded.
int fold_qdq(Graph& graph);

// The quantized groups still computed in float32 after the fold, by operator: a
// QuantizeLinear of an arithmetic operator (not a layout or selection one, which moves
// values exactly) that reads a DequantizeLinear. onnxruntime runs such groups as its own
// integer kernels (QLinearMul, QLinearSigmoid's lookup table, QLinearGlobalAveragePool,
// ...), whose roundings kora does not reproduce: a few elements quantize one step apart.
std::map<std::string, int> float_qdq_groups(const Graph& graph);

}  // namespace kora
