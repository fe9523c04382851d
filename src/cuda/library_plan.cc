// The cuda target's library kernels (src/cuda/library_plan.h): a candidate in, the
// cuBLAS GEMM that computes it out when it is a float32 MatMul whose operands are strided
// views of its reads (each batch dim in full or not at all), alone or with a scale, a bias,
// a residual and a ReLU after it, or the cuDNN convolution of a float32 Conv with
// symmetric padding, alone or with a bias, a residual and a ReLU after it.
#include "cuda/library_plan.h"

#include <cmath>

#include "codegen/linear_epilogue.h"

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
  g.read_b = 1 - g.read_a;
  return g;
}

// An operand of dims `dims` (rank of the output `out`) at element `strides` in its read,
// as a GEMM reads it: one batch stride over the output's batch dims (0: broadcast), and a
// rows x cols matrix stored row-major with rows `ld` apart, or transposed. False when the
// view has no such form.
bool gemm_view(const Shape& dims, const Shape& strides, const Shape& out, int64_t* batch_stride,
               int64_t* ld, bool* transposed) {
  const size_t r = out.size();
  const int64_t rows = dims[r - 2], cols = dims[r - 1];
  if (cols == 1 || strides[r - 1] == 1) {
    *transposed = false;
    *ld = rows > 1 ? strides[r - 2] : cols;
    if (*ld < cols) return false;
  } else if (rows == 1 || strides[r - 2] == 1) {
    *transposed = true;
    *ld = cols > 1 ? strides[r - 1] : rows;
    if (*ld < rows) return false;
  } else {
    return false;
  }
  bool full = false, broadcast = false;
  *batch_stride = 0;
  int64_t next = 0;  // the stride the next outer full dim needs
  for (size_t i = r - 2; i-- > 0;) {
    if (out[i] == 1) continue;
    if (dims[i] == 1) {
      broadcast = true;
      continue;
    }
    if (dims[i] != out[i]) return false;
    if (!full)
      *batch_stride = strides[i];
    else if (strides[i] != next)
      return false;
    full = true;
    next = strides[i] * dims[i];
  }
  return !(full && broadcast);
}

// A float32 MatMul whose operands are views of the kernel's reads through reshapes and
// transposes, then a chain of: a scale by an immediate, a bias of N values, a residual of
// its output's shape, a ReLU (read off the candidate by the linear-epilogue matcher,
// src/codegen/linear_epilogue.h).
std::optional<CudaGemm> viewed_gemm(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c) {
  std::string why;
  const std::optional<LinearPlan> plan =
      match_linear_epilogue(graph, dag, c, &why, {/*reshaped_rows=*/true});  // D is contiguous
  if (!plan || plan->conv) return std::nullopt;
  const Shape &a = plan->src_dims, &b = plan->weights_dims, &d = plan->dst_dims;
  const size_t r = d.size();
  if (r < 2 || a.size() != r || b.size() != r) return std::nullopt;
  CudaGemm g;
  g.m = a[r - 2];
  g.k = a[r - 1];
  g.n = b[r - 1];
  if (b[r - 2] != g.k || d[r - 2] != g.m || d[r - 1] != g.n || g.m == 0 || g.n == 0 || g.k == 0)
    return std::nullopt;
  for (size_t i = 0; i + 2 < r; ++i) g.batch *= d[i];
  if (!gemm_view(a, plan->src_strides, d, &g.stride_a, &g.ld_a, &g.trans_a) ||
      !gemm_view(b, plan->weights_strides, d, &g.stride_b, &g.ld_b, &g.trans_b))
    return std::nullopt;
  g.stride_c = g.m * g.n;
  g.read_a = plan->src;
  g.read_b = plan->weights;
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  const int64_t size = numel(d);
  auto is_bias = [&](const Shape& dims) { return numel(dims) == g.n && dims.back() == g.n; };
  if (plan->bias >= 0) {
    if (!is_bias(plan->bias_dims)) return std::nullopt;
    g.read_bias = plan->bias;
  }
  for (const EpilogueOp& op : plan->epilogue) {
    const bool relu =
        (!op.binary && op.eltwise == EpilogueEltwise::kRelu && op.alpha == 0) ||
        (op.binary && op.operand < 0 && op.op == EpilogueBinary::kMax && op.scalar == 0);
    const bool added = g.read_bias >= 0 || g.read_c >= 0;
    if (g.relu) return std::nullopt;  // nothing after the ReLU
    if (relu) {
      g.relu = true;
    } else if (op.binary && op.operand < 0 && !added &&
               (op.op == EpilogueBinary::kMul || op.op == EpilogueBinary::kDiv)) {
      g.alpha = op.op == EpilogueBinary::kMul ? g.alpha * op.scalar : g.alpha / op.scalar;
    } else if (op.binary && op.operand >= 0 && op.op == EpilogueBinary::kAdd && g.read_bias < 0 &&
               is_bias(op.operand_dims)) {
      g.read_bias = op.operand;
    } else if (op.binary && op.operand >= 0 && op.op == EpilogueBinary::kAdd && g.read_c < 0 &&
               op.operand_dims == d &&
               numel(graph.value(reads[static_cast<size_t>(op.operand)]).shape) == size) {
      g.read_c = op.operand;
    } else {
      return std::nullopt;
    }
  }
  if (!std::isfinite(g.alpha)) return std::nullopt;
  if (!cuda_library_operands_problem(cuda_gemm_operands(g), reads.size()).empty())
    return std::nullopt;
  if (g.fused()) g.algo = 0;  // cuBLASLt's first choice; the others are measured
  return g;
}

}  // namespace

std::optional<CudaGemm> cuda_gemm_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c) {
  if (c.members.size() > 1) return viewed_gemm(graph, dag, c);
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
  g.read_b = 1 - g.read_a;
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
// ReLU: the epilogue cudnnConvolutionBiasActivationForward fuses (read off the candidate by
// the linear-epilogue matcher, src/codegen/linear_epilogue.h).
std::optional<CudaConv> fused_conv(const PrimGraph& graph, const KernelDag& dag,
                                   const Candidate& c) {
  std::string why;
  const std::optional<LinearPlan> plan = match_linear_epilogue(graph, dag, c, &why);
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
  const std::vector<EpilogueOp>& ops = plan->epilogue;
  if (next < ops.size() && ops[next].binary && ops[next].op == EpilogueBinary::kAdd &&
      ops[next].operand >= 0 && ops[next].operand_dims == conv->y &&
      numel(graph.value(reads[static_cast<size_t>(ops[next].operand)]).shape) == numel(conv->y))
    conv->read_z = ops[next++].operand;
  if (next < ops.size() && !ops[next].binary && ops[next].eltwise == EpilogueEltwise::kRelu &&
      ops[next].alpha == 0) {
    conv->relu = true;
    ++next;
  }
  if (next != ops.size()) return std::nullopt;
  conv->read_x = plan->src;
  conv->read_w = plan->weights;
  conv->read_bias = plan->bias;
  if (!cuda_library_operands_problem(cuda_conv_operands(*conv), reads.size()).empty())
    return std::nullopt;  // reads something else
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

std::vector<std::string> cuda_gemm_schedules(const CudaGemm& gemm) {
  std::vector<std::string> out;
  if (!gemm.fused()) out.push_back("cublas");
  for (int i = 0; i < kCublasLtAlgos; ++i) out.push_back("cublaslt:" + std::to_string(i));
  return out;
}

std::optional<CudaGemm> cuda_gemm_with_schedule(const CudaGemm& gemm, const std::string& s) {
  CudaGemm g = gemm;
  if (s == "cublas" && !gemm.fused()) {
    g.algo = -1;
    return g;
  }
  const std::string prefix = "cublaslt:";
  if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() ||
      s.find_first_not_of("0123456789", prefix.size()) != std::string::npos ||
      s.size() > prefix.size() + 3)
    return std::nullopt;
  g.algo = std::stoi(s.substr(prefix.size()));
  return g;
}

const std::vector<int>& cudnn_conv_algorithms() {
  static const std::vector<int> algorithms = {0, 1, 2, 4, 5, 6, 7};
  return algorithms;
}

std::vector<int> cudnn_conv_algorithms(const CudaConv& conv) {
  if (conv.fused() && !conv.relu) return {1};  // IMPLICIT_PRECOMP_GEMM (src/cuda/dnn.cc)
  return cudnn_conv_algorithms();
}

}  // namespace kora
