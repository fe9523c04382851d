// PyTorch's export of GroupNorm folded back into one GroupNormalization. In: a graph whose
// shapes are inferred. Out: the same graph where
//
//   Reshape(InstanceNormalization(Reshape(x, [N, G, -1]), scale, bias), shape of x)
//
// (torch.onnx's form of nn.GroupNorm at every opset: the channels merged with the spatial
// dims, a per-group instance norm, the shape restored; the affine Mul and Add follow) is
// GroupNormalization(x, scale, bias, num_groups = G) with the instance norm's epsilon and
// per-group scale and bias (opset 18's meaning). Fission then normalizes x in its own shape
// (rules_normalization.cc), so that a normalization between channels-last convolutions
// reads and writes them through layout views instead of copying x into plain order.
//
// A group folds only when it computes the same function: x has rank 3 or more, the first
// Reshape keeps N and splits x's C into G groups of whole channels, the second restores
// x's shape, and neither intermediate has another consumer or is a graph output. The
// nodes left without a consumer are pruned by shape inference after the fold.
#pragma once

#include "kora/graph.h"

namespace kora {

// Rewrites the groups in place; returns how many were folded.
int fold_group_norm(Graph& graph);

}  // namespace kora
