// The cuda target's library kernels (include/kora/cuda_library.h): a candidate in, the
// cuBLAS GEMM that computes it out when it is a lone float32 MatMul whose batch dims each
// operand has in full or not at all.
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
  g.read_b = 1 - g.read_a;
  return g;
}

}  // namespace kora
