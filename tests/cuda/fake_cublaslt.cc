// A fake cuBLASLt for tests without a GPU, part of the fake driver's library
// (tests/cuda/fake_driver.cc; device memory is host memory there): descriptors, preferences,
// heuristics and cublasLtMatmul as cublasLt.h documents them, for float (CUDA_R_32F) matrices
// in column order, computed by definition (tests/cuda/textbook_gemm.h): per batch element p, D =
// act(alpha op(A) op(B) + beta C + bias), epilogues DEFAULT, RELU, BIAS and RELU_BIAS; C is not
// read when beta is 0 and D may be C. The heuristic offers algorithms 0, 1, 2 (index in
// algo.data[0]), algorithm i needing 256 i bytes of workspace, those the preference's workspace
// holds. $FAKE_CUBLASLT_ALGOS =N: N algorithms instead of 3. $FAKE_CUBLASLT_REFUSE=I:
// cublasLtMatmul with algorithm I is CUBLAS_STATUS_NOT_SUPPORTED (as cuBLASLt refuses some for some
// shapes).
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda/fake_stream.h"
#include "cuda/textbook_gemm.h"

struct cublasLtContext {};

namespace {

struct Desc {
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float* bias = nullptr;
  int64_t bias_stride = 0;
};
struct Layout {
  int64_t rows, cols, ld;
  int32_t batch = 1;
  int64_t stride = 0;  // elements
};
struct Pref {
  uint64_t max_workspace = 0;
};

Desc* of(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc*>(d); }
Layout* of(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }
Pref* of(cublasLtMatmulPreference_t p) { return reinterpret_cast<Pref*>(p); }

// An attribute's value, when buf holds exactly its type.
template <class T>
bool get(T& out, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return false;
  std::memcpy(&out, buf, sizeof(T));
  return true;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// op(A) is m x k, op(B) k x n, C and D m x n, every batch count D's.
struct Problem {
  const Desc* op;
  const Layout *a, *b, *c, *d;
  int64_t m, n, k;
};

cublasStatus_t check(cublasLtMatmulDesc_t od, cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,
                     cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd, Problem& p) {
  if (!od || !ad || !bd || !cd || !dd) return CUBLAS_STATUS_INVALID_VALUE;
  p = {of(od), of(ad), of(bd), of(cd), of(dd), of(dd)->rows, of(dd)->cols, 0};
  const uint32_t e = p.op->epilogue;
  if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU &&
      e != CUBLASLT_EPILOGUE_BIAS && e != CUBLASLT_EPILOGUE_RELU_BIAS)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool ta = p.op->transa == CUBLAS_OP_T, tb = p.op->transb == CUBLAS_OP_T;
  const int64_t am = ta ? p.a->cols : p.a->rows, ak = ta ? p.a->rows : p.a->cols;
  const int64_t bk = tb ? p.b->cols : p.b->rows, bn = tb ? p.b->rows : p.b->cols;
  p.k = ak;
  if (am != p.m || bk != p.k || bn != p.n || p.c->rows != p.m || p.c->cols != p.n)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (const Layout* l : {p.a, p.b, p.c})
    if (l->batch != p.d->batch) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static cublasLtContext context;
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = &context;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }
size_t cublasLtGetVersion(void) { return 130100; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  if ((compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32) ||
      scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new Desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete of(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  Desc& d = *of(desc);
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op = 0;
      ok = get(op, buf, size);
      if (ok && op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_NOT_SUPPORTED;
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d.transa : d.transb) = op;
      break;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      ok = get(d.epilogue, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      ok = get(d.bias, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      ok = get(d.bias_stride, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
      int32_t type = 0;
      ok = get(type, buf, size);
      if (ok && type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
      break;
    }
    default:
      break;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  if (type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (ld < 1 || static_cast<uint64_t>(ld) < rows) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(
      new Layout{static_cast<int64_t>(rows), static_cast<int64_t>(cols), ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete of(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  Layout& l = *of(layout);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return get(l.batch, buf, size) && l.batch >= 1 ? CUBLAS_STATUS_SUCCESS
                                                     : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return get(l.stride, buf, size) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: {
      int32_t order = 0;
      if (!get(order, buf, size)) return CUBLAS_STATUS_INVALID_VALUE;
      return order == CUBLASLT_ORDER_COL ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Pref);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete of(pref);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  uint32_t alignment = 0;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return get(of(pref)->max_workspace, buf, size) ? CUBLAS_STATUS_SUCCESS
                                                     : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:  // accepted, not needed on the host
      return get(alignment, buf, size) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,
                                              cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* found) {
  if (requested <= 0 || !pref || !results || !found) return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  if (cublasStatus_t s = check(desc, ad, bd, cd, dd, p); s != CUBLAS_STATUS_SUCCESS) return s;
  const int algos = std::min(requested, env_int("FAKE_CUBLASLT_ALGOS", 3));
  *found = 0;
  for (int i = 0; i < algos && 256ull * i <= of(pref)->max_workspace; ++i) {
    cublasLtMatmulHeuristicResult_t& r = results[(*found)++];
    r = {};
    r.algo.data[0] = static_cast<uint64_t>(i);
    r.workspaceSize = 256 * static_cast<size_t>(i);
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1;
  }
  return *found ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t ad, const void* b,
                              cublasLtMatrixLayout_t bd, const void* beta, const void* c,
                              cublasLtMatrixLayout_t cd, void* d, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  if (!algo || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t index = algo->data[0];
  if (env_int("FAKE_CUBLASLT_REFUSE", -1) == static_cast<int64_t>(index))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (index > UINT32_MAX || workspace_bytes < 256 * index || (index && !workspace))
    return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  if (cublasStatus_t s = check(desc, ad, bd, cd, dd, p); s != CUBLAS_STATUS_SUCCESS) return s;
  const bool relu = p.op->epilogue & CUBLASLT_EPILOGUE_RELU;
  const bool has_bias = p.op->epilogue & CUBLASLT_EPILOGUE_BIAS;
  const double al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  if ((has_bias && !p.op->bias) || !a || !b || !d || (be != 0 && !c))
    return CUBLAS_STATUS_INVALID_VALUE;
  kora_cuda_test::Gemm g;
  g.m = p.m, g.n = p.n, g.k = p.k, g.batch = p.d->batch;
  g.trans_a = p.op->transa == CUBLAS_OP_T, g.trans_b = p.op->transb == CUBLAS_OP_T;
  g.lda = p.a->ld, g.ldb = p.b->ld, g.ldc = p.c->ld, g.ldd = p.d->ld;
  g.stride_a = p.a->stride, g.stride_b = p.b->stride, g.stride_c = p.c->stride;
  g.stride_d = p.d->stride, g.stride_bias = p.op->bias_stride;
  g.alpha = al, g.beta = be, g.relu = relu;
  const float* bias = has_bias ? p.op->bias : nullptr;
  return kora_fake::enqueue(stream,
                            [=] {
                              kora_cuda_test::textbook_gemm(
                                  g, static_cast<const float*>(a), static_cast<const float*>(b),
                                  static_cast<const float*>(c), bias, static_cast<float*>(d));
                            }) == kora_fake::Enqueued::kRefused
             ? CUBLAS_STATUS_EXECUTION_FAILED
             : CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
