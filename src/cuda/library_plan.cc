// The cuda target's library kernels (include/kora/cuda_library.h): a candidate in, the
// cuBLAS GEMM that computes it out when it is a lone float32 MatMul whose batch dims each
// operand has in full or not at all, or the cuDNN convolution of a float32 Conv with
// symmetric padding, alone or with a bias, a residual and a ReLU after it.
#include "cpu/onednn_plan.h"
#include "kora/cuda_library.h"

namespace kora {

namespace {

// A float32 convolution with 1x1 kernels, stride 1, no padding and one group is, per batch
// element, the matrix product Y[M, S] = W[M, C] X[C, S] (S: the spatial size), W shared.
std::optional<CudaGemm> pointwise_conv_gemm(const PrimGraph& graph, const KernelDag& dag,
                                            const Candidate& c, const Primitive& p,
                                            const ConvAttrs& conv) {
  if (p.inputs.size() != 2 || p.inputs[0] == p.inputs[1] || conv.group != 1) return std::nullopt;
  const ValueInfo &x = graph.value(p.inputs[0]), &w = graph.value(p.inputs[1]),
                  &y = graph.value(p.output());
  for (const ValueInfo* v : {&x, &w, &y})
    if (v->dtype != DType::kFloat32) return std::nullopt;
  const size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || y.shape.size() != rank || y.shape != [&] {
        Shape s = x.shape;
        s[1] = w.shape[0];
        return s;
      }())
    return std::nullopt;
  for (size_t d = 2; d < rank; ++d)
    if (w.shape[d] != 1) return std::nullopt;
  for (int64_t v : conv.strides)
    if (v != 1) return std::nullopt;
  for (const auto* pads : {&conv.pads_begin, &conv.pads_end})
    for (int64_t v : *pads)
      if (v != 0) return std::nullopt;
  CudaGemm g;
  g.batch = x.shape[0];
  g.m = w.shape[0];
  g.k = x.shape[1];
  g.n = numel(x.shape) / (g.batch * g.k);
  if (g.batch == 0 || g.m == 0 || g.n == 0 || g.k == 0 || w.shape[1] != g.k) return std::nullopt;
  g.stride_a = 0;  // the weights, for every batch element
  g.stride_b = g.k * g.n;
  g.stride_c = g.m * g.n;
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  if (reads.size() != 2) return std::nullopt;
  g.read_a = reads[0] == p.inputs[1] ? 0 : 1;  // A is the weights
  return g;
}

}  // namespace

std::optional<CudaGemm> cuda_gemm_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  if (c.members.size() != 1) return std::nullopt;
  const Primitive& p = graph.prims[dag.prim[c.members[0]]];
  const auto* linear = std::get_if<LinearAttrs>(&p.attrs);
  if (linear)
    if (const auto* conv = std::get_if<ConvAttrs>(linear))
      return pointwise_conv_gemm(graph, dag, c, p, *conv);
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

namespace {

// The convolution primitive `p` as cuDNN takes it (float32, 1-3 spatial dims, symmetric
// padding), operands not yet placed.
std::optional<CudaConv> conv_of(const PrimGraph& graph, const Primitive& p) {
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
  return conv;
}

// A convolution with a bias, then optionally a residual of its shape, then optionally a
// ReLU: the epilogue cudnnConvolutionBiasActivationForward fuses (read off the candidate as
// the CPU's oneDNN plan reads it).
std::optional<CudaConv> fused_conv(const PrimGraph& graph, const KernelDag& dag,
                                   const Candidate& c) {
  std::string why;
  const std::optional<onednn::Plan> plan = onednn::plan_kernel(graph, dag, c, &why);
  if (!plan || !plan->conv || plan->bias < 0) return std::nullopt;
  const Primitive* linear = nullptr;
  for (int v : c.members)
    if (graph.prims[dag.prim[v]].kind() == PrimKind::kLinear) linear = &graph.prims[dag.prim[v]];
  std::optional<CudaConv> conv = linear ? conv_of(graph, *linear) : std::nullopt;
  if (!conv || plan->src_dims != conv->x || plan->weights_dims != conv->w ||
      plan->dst_dims != conv->y || conv->x.size() != 4)
    return std::nullopt;
  if (numel(plan->bias_dims) != conv->y[1]) return std::nullopt;  // one per output channel
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  size_t next = 0;
  const std::vector<onednn::PostOp>& ops = plan->post_ops;
  if (next < ops.size() && ops[next].binary && ops[next].op == onednn::Binary::kAdd &&
      ops[next].operand >= 0 && ops[next].operand_dims == conv->y &&
      numel(graph.value(reads[static_cast<size_t>(ops[next].operand)]).shape) == numel(conv->y))
    conv->read_z = ops[next++].operand;
  if (next < ops.size() && !ops[next].binary && ops[next].eltwise == onednn::Eltwise::kRelu &&
      ops[next].alpha == 0) {
    conv->relu = true;
    ++next;
  }
  if (next != ops.size()) return std::nullopt;
  conv->read_x = plan->src;
  conv->read_w = plan->weights;
  conv->read_bias = plan->bias;
  const size_t used = 3 + (conv->read_z >= 0);
  if (reads.size() != used) return std::nullopt;  // reads nothing else
  return conv;
}

}  // namespace

std::optional<CudaConv> cuda_conv_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  if (c.members.size() > 1) return fused_conv(graph, dag, c);
  if (c.members.size() != 1) return std::nullopt;
  const Primitive& p = graph.prims[dag.prim[c.members[0]]];
  std::optional<CudaConv> conv = conv_of(graph, p);
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  if (!conv || reads.size() != 2) return std::nullopt;
  conv->read_x = reads[0] == p.inputs[0] ? 0 : 1;
  conv->read_w = 1 - conv->read_x;
  return conv;
}

const std::vector<int>& cudnn_conv_algorithms() {
  static const std::vector<int> algorithms = {0, 1, 2, 4, 5, 6, 7};
  return algorithms;
}

}  // namespace kora
