// float32 GEMM for the interpreter's matmul and convolution: C = A x B, row-major with
// leading dimensions. Blocked in the usual way (panels of B and A packed so the inner
// kernel streams contiguous memory, a 4 x 8 register tile accumulated over a depth block),
// plain C++ the compiler vectorizes; large products split their columns over two threads.
// Enough that real models run in seconds: it is the reference, not the fast path.
#include <algorithm>
#include <cstring>
#include <thread>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

constexpr int64_t kMr = 4;    // rows of the register tile
constexpr int64_t kNr = 8;    // columns of the register tile
constexpr int64_t kKc = 256;  // depth of a packed block
constexpr int64_t kMc = 64;   // rows of a packed A block
constexpr int64_t kNc = 512;  // columns of a packed B panel

// Packs B[0:kc, 0:nc] into column strips of kNr: strip j holds kc rows of kNr floats
// (zero-padded past nc).
void pack_b(int64_t kc, int64_t nc, const float* b, int64_t ldb, float* out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
    const int64_t w = std::min(kNr, nc - j0);
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = b + k * ldb + j0;
      for (int64_t j = 0; j < w; ++j) out[j] = src[j];
      for (int64_t j = w; j < kNr; ++j) out[j] = 0;
      out += kNr;
    }
  }
}

// Packs A[0:mc, 0:kc] into row strips of kMr: strip i holds kc columns of kMr floats.
void pack_a(int64_t mc, int64_t kc, const float* a, int64_t lda, float* out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
    const int64_t h = std::min(kMr, mc - i0);
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t i = 0; i < h; ++i) out[i] = a[(i0 + i) * lda + k];
      for (int64_t i = h; i < kMr; ++i) out[i] = 0;
      out += kMr;
    }
  }
}

// C[0:h, 0:w] (+)= packed A strip x packed B strip over depth kc.
void micro_kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t h,
                  int64_t w, bool accumulate) {
  float acc[kMr][kNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    const float* ak = a + k * kMr;
    const float* bk = b + k * kNr;
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t j = 0; j < kNr; ++j) acc[i][j] += ak[i] * bk[j];
  }
  for (int64_t i = 0; i < h; ++i) {
    float* row = c + i * ldc;
    if (accumulate)
      for (int64_t j = 0; j < w; ++j) row[j] += acc[i][j];
    else
      for (int64_t j = 0; j < w; ++j) row[j] = acc[i][j];
  }
}

// Columns [j_begin, j_end) of C.
void gemm_columns(int64_t m, int64_t j_begin, int64_t j_end, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float* c, int64_t ldc) {
  std::vector<float> bp(static_cast<size_t>(kKc * kNc)), ap(static_cast<size_t>(kMc * kKc));
  for (int64_t jc = j_begin; jc < j_end; jc += kNc) {
    const int64_t nc = std::min(kNc, j_end - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      pack_b(kc, nc, b + pc * ldb + jc, ldb, bp.data());
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        pack_a(mc, kc, a + ic * lda + pc, lda, ap.data());
        for (int64_t jr = 0; jr < nc; jr += kNr)
          for (int64_t ir = 0; ir < mc; ir += kMr)
            micro_kernel(kc, ap.data() + ir * kc, bp.data() + jr * kc,
                         c + (ic + ir) * ldc + jc + jr, ldc, std::min(kMr, mc - ir),
                         std::min(kNr, nc - jr), pc > 0);
      }
    }
  }
}

}  // namespace

void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  // Two threads when there is enough work for each (columns split on a kNr boundary).
  const bool split =
      m * n * k >= (int64_t{1} << 22) && n >= 2 * kNr && std::thread::hardware_concurrency() >= 2;
  if (!split) return gemm_columns(m, 0, n, k, a, lda, b, ldb, c, ldc);
  const int64_t half = (n / 2 + kNr - 1) / kNr * kNr;
  std::thread other(gemm_columns, m, half, n, k, a, lda, b, ldb, c, ldc);
  gemm_columns(m, 0, half, k, a, lda, b, ldb, c, ldc);
  other.join();
}

}  // namespace kora::interp
