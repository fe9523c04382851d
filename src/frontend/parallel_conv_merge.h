// Convolutions of one input that are summed, merged into one convolution (structural
// reparameterization, as RepVGG and MobileOne do by hand before deploying). In: a graph
// whose shapes are inferred. Out: the same graph where a tree of Add nodes whose leaves are
//
//   Conv(x, W_t, B_t)                                  (constant weights and bias)
//   BatchNormalization(x, scale, bias, mean, var)       (inference; x itself scaled)
//   x
//   a constant per channel or a scalar
//
// becomes Conv(x, W, B), named as the tree's first convolution: each W_t zero-padded about its
// centre to the largest kernel and summed, x's own terms added at the centre tap of each channel's
// own input channel, the biases, batch-norm shifts and constants summed into B. Models exported in
// their training form (timm's RepVGG, MobileOne, and any over-parameterized block) run one
// convolution per block instead of two to four and the adds between them.
//
// A tree merges only when the result is the same function up to float rounding: every
// convolution reads the same x with the same group, strides and dilations, odd kernels
// and the same offset of its padding from its kernel's centre on every side; x's own
// terms need stride 1, that offset 0 and as many output channels as x has; every
// intermediate (a leaf or a partial sum) feeds only the tree and is not a graph output;
// float32 throughout; at least two convolution or batch-norm terms, one a convolution.
// The nodes left without a consumer are pruned by shape inference after the merge.
#pragma once

#include "kora/graph.h"

namespace kora {

// Rewrites the trees in place; returns how many were merged.
int merge_parallel_convs(Graph& graph);

}  // namespace kora
