// Which candidate kernels NVIDIA's libraries compute on the cuda target: a candidate in;
// the library call that computes it out, or nothing: a float32 MatMul as one cuBLAS
// strided-batched GEMM, when each operand's batch dimensions are all the output's or all 1
// (broadcast by a zero stride), alone or read through reshapes and transposes (strided
// views: one batch stride, a row stride, op T; attention's head split and K^T are read in
// place), with a scale, bias, residual and ReLU after it fused by cuBLASLt; a float32 Conv
// with symmetric padding, as a cuDNN convolution, with a bias, residual and ReLU after it
// fused where cuDNN can. Other epilogues stay generated kernels of their own; GELU among
// them, since cuBLASLt's GELU epilogue is an approximation and kora's is exact.
// A lone 1x1 convolution is both a GEMM and a cuDNN convolution: every schedule of both
// is measured under its signature, and the artifact takes the fastest. With TF32 (an
// explicit option, --tf32 of profile, orchestrate and compile) library calls use
// tensor-core math, are measured under a fingerprint ending in "kora-cuda-gen R tf32" and
// checked to kTf32Tolerance (2e-3, include/kora/check.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernel_spec.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// Also a lone float32 1x1 convolution (stride 1, no padding, one group), which the job
// measures as a GEMM too: per batch element Y[M, S] = W[M, C] X[C, S]. A plan with an
// epilogue has algo 0 (cuBLASLt); the job measures each of cuda_gemm_schedules().
std::optional<CudaGemm> cuda_gemm_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c);

// A float32 Conv with symmetric padding, as a cuDNN convolution (algo 0; the job measures
// each of cudnn_conv_algorithms() as schedule "cudnn:ALGO"): alone, or 2-D with a bias
// (M values), then optionally a residual of its output's shape added, then optionally a
// ReLU (CudaConv::fused(): cudnnConvolutionBiasActivationForward).
std::optional<CudaConv> cuda_conv_plan(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c);
// The schedules a GEMM is measured with: "cublas" (plain products only), then
// "cublaslt:I" for I < kCublasLtAlgos; and the GEMM a schedule names (nullopt: not one
// of them).
std::vector<std::string> cuda_gemm_schedules(const CudaGemm& gemm);
std::optional<CudaGemm> cuda_gemm_with_schedule(const CudaGemm& gemm, const std::string& schedule);
// cuDNN's forward algorithms worth measuring (cudnnConvolutionFwdAlgo_t; DIRECT is never
// implemented); for `conv`, those cuDNN can run it with: a fused bias without ReLU (an
// identity activation) only with IMPLICIT_PRECOMP_GEMM (1).
const std::vector<int>& cudnn_conv_algorithms();
std::vector<int> cudnn_conv_algorithms(const CudaConv& conv);

}  // namespace kora
