// Which candidate kernels NVIDIA's libraries compute on the cuda target: a candidate in;
// the library call that computes it out, or nothing. Today: a float32 MatMul alone, as
// one cuBLAS strided-batched GEMM, when each operand's batch dimensions are all the
// output's or all 1 (broadcast by a zero stride). Epilogues stay generated kernels of
// their own; cuDNN convolutions are to come.
#pragma once
#include <optional>

#include "kora/candidates.h"
#include "kora/cuda_job.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

std::optional<CudaGemm> cuda_gemm_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c);

}  // namespace kora
