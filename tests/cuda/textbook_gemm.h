// A column-major batched matrix product by its definition in float64, with cuBLASLt's
// epilogue: per batch element p,
//   D = act(alpha op(A) op(B) + beta C + bias)   (op(A) m x k, op(B) k x n, C and D m x n),
// op T reading a matrix stored transposed, bias m values added to every column, act a ReLU
// or none. The reference the CUDA tests run library GEMMs by (job_test.cc's emulated
// worker) and the fake cuBLAS and cuBLASLt compute with (fake_driver.cc,
// fake_cublaslt.cc). Header-only, no kora types.
#pragma once
#include <algorithm>
#include <cstdint>

namespace kora_cuda_test {

struct Gemm {
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 1, ldb = 1, ldc = 1, ldd = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0, stride_bias = 0;  // elements
  double alpha = 1, beta = 0;
  bool relu = false;
};

// c (read only when beta is not 0) and bias may be null; d may be c.
inline void textbook_gemm(const Gemm& g, const float* a, const float* b, const float* c,
                          const float* bias, float* d) {
  for (int64_t p = 0; p < g.batch; ++p) {
    const float* A = a + p * g.stride_a;
    const float* B = b + p * g.stride_b;
    const float* C = g.beta != 0 ? c + p * g.stride_c : nullptr;
    const float* Bias = bias ? bias + p * g.stride_bias : nullptr;
    float* D = d + p * g.stride_d;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t l = 0; l < g.k; ++l)
          sum += double(A[g.trans_a ? l + i * g.lda : i + l * g.lda]) *
                 B[g.trans_b ? j + l * g.ldb : l + j * g.ldb];
        double v = g.alpha * sum;
        if (C) v += g.beta * C[i + j * g.ldc];  // read before D's element is stored
        if (Bias) v += Bias[i];
        if (g.relu) v = std::max(v, 0.0);
        D[i + j * g.ldd] = static_cast<float>(v);
      }
  }
}

}  // namespace kora_cuda_test
