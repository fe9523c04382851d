// The cuda target's library kernels (include/kora/cuda_library.h): a candidate in, the
// cuBLAS GEMM that computes it out when it is a lone float32 MatMul whose batch dims each
// operand has in full or not at all, or the cuDNN convolution of a lone float32 Conv with
// symmetric padding.
#include "kora/cuda_library.h"

namespace kora {

std::optional<CudaGemm> cuda_gemm_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  if (c.members.size() != 1) return std::nullopt;
  const Primitive& p = graph.prims[dag.prim[c.members[0]]];
  const auto* linear = std::get_if<LinearAttrs>(&p.attrs);
  if (!linear || !std::holds_alternative<MatMulAttrs>(*linear) || p.inputs.size() != 2 ||
      p.inputs[0] == p.inputs[1])
    return std::nullopt;
  const ValueInfo &a = graph.value(p.inputs[0]), &b = graph.value(p.inputs[1]),
                  &out = graph.value(p.output());
  for (const ValueInfo* v : {&a, &b, &out})
    if (v->dtype != DType::kFloat32) return std::nullopt;
  const size_t rank = out.shape.size();
  if (rank < 2 || a.shape.size() != rank || b.shape.size() != rank) return std::nullopt;
  CudaGemm g;
  g.m = a.shape[rank - 2];
  g.k = a.shape[rank - 1];
  g.n = b.shape[rank - 1];
  if (b.shape[rank - 2] != g.k || out.shape[rank - 2] != g.m || out.shape[rank - 1] != g.n)
    return std::nullopt;
  for (size_t d = 0; d + 2 < rank; ++d) g.batch *= out.shape[d];
  // An operand's batch stride: its matrix size when it has every batch dim, 0 when none.
  auto stride = [&](const Shape& s, int64_t matrix) -> std::optional<int64_t> {
    bool full = true, none = true;
    for (size_t d = 0; d + 2 < rank; ++d) {
      full &= s[d] == out.shape[d];
      none &= s[d] == 1;
    }
    if (none) return 0;
    if (full) return matrix;
    return std::nullopt;
  };
  const auto sa = stride(a.shape, g.m * g.k), sb = stride(b.shape, g.k * g.n);
  if (!sa || !sb || g.m == 0 || g.n == 0 || g.k == 0) return std::nullopt;
  g.stride_a = *sa;
  g.stride_b = *sb;
  g.stride_c = g.m * g.n;
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  if (reads.size() != 2) return std::nullopt;
  g.read_a = reads[0] == p.inputs[0] ? 0 : 1;
  return g;
}

std::optional<CudaConv> cuda_conv_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  if (c.members.size() != 1) return std::nullopt;
  const Primitive& p = graph.prims[dag.prim[c.members[0]]];
  const auto* linear = std::get_if<LinearAttrs>(&p.attrs);
  const ConvAttrs* attrs = linear ? std::get_if<ConvAttrs>(linear) : nullptr;
  if (!attrs || p.inputs.size() != 2 || p.inputs[0] == p.inputs[1]) return std::nullopt;
  const ValueInfo &x = graph.value(p.inputs[0]), &w = graph.value(p.inputs[1]),
                  &y = graph.value(p.output());
  for (const ValueInfo* v : {&x, &w, &y})
    if (v->dtype != DType::kFloat32) return std::nullopt;
  const size_t rank = x.shape.size(), spatial = rank - 2;
  if (rank < 3 || rank > 5 || w.shape.size() != rank || y.shape.size() != rank ||
      attrs->pads_begin != attrs->pads_end || attrs->pads_begin.size() != spatial ||
      attrs->strides.size() != spatial || attrs->dilations.size() != spatial)
    return std::nullopt;
  CudaConv conv;
  conv.x = x.shape;
  conv.w = w.shape;
  conv.y = y.shape;
  conv.pads = attrs->pads_begin;
  conv.strides = attrs->strides;
  conv.dilations = attrs->dilations;
  conv.group = attrs->group;
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  if (reads.size() != 2) return std::nullopt;
  conv.read_x = reads[0] == p.inputs[0] ? 0 : 1;
  return conv;
}

const std::vector<int>& cudnn_conv_algorithms() {
  static const std::vector<int> algorithms = {0, 1, 2, 4, 5, 6, 7};
  return algorithms;
}

}  // namespace kora
