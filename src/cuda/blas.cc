// cuBLAS and cuBLASLt through dlopen (src/cuda/blas.h): the libraries' paths in;
// a handle, float32 strided-batched GEMMs and prepared cuBLASLt matmuls with their
// epilogues out, or why cuBLAS is not usable.
#include "cuda/blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/library_loader.h"
#include "kora/error.h"

#ifdef KORA_HAVE_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>
#endif

namespace kora {

#ifdef KORA_HAVE_CUDA
namespace {

#define KORA_BLAS_FUNCTIONS(X) \
  X(cublasCreate_v2)           \
  X(cublasDestroy_v2) X(cublasGetVersion_v2) X(cublasSetMathMode) X(cublasSgemmStridedBatched)

struct Blas {
#define KORA_MEMBER(f) decltype(&::f) f = nullptr;
  KORA_BLAS_FUNCTIONS(KORA_MEMBER)
#undef KORA_MEMBER
  // Optional: running on a stream of kora's own (graph capture).
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  std::string unavailable;
};

// The library, loaded once: $KORA_CUBLAS, else the first of the usual names that loads.
const Blas& blas() {
  static const Blas b = open_library<Blas>(
      "KORA_CUBLAS", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, "cuBLAS",
      [](void* lib, Blas& out) {
#define KORA_LOAD(f) load_function(lib, #f, out.f, "cuBLAS", &out.unavailable);
        KORA_BLAS_FUNCTIONS(KORA_LOAD)
#undef KORA_LOAD
        out.set_stream =
            reinterpret_cast<decltype(out.set_stream)>(::dlsym(lib, "cublasSetStream_v2"));
        out.set_workspace =
            reinterpret_cast<decltype(out.set_workspace)>(::dlsym(lib, "cublasSetWorkspace_v2"));
      });
  return b;
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(call) + " failed (cuBLAS status " +
                std::to_string(static_cast<int>(s)) + ")");
}

// clang-format off
#define KORA_LT_FUNCTIONS(X)                                                               \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate)                         \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                       \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                     \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
// clang-format on

struct Lt {
#define KORA_MEMBER(f) decltype(&::f) f = nullptr;
  KORA_LT_FUNCTIONS(KORA_MEMBER)
#undef KORA_MEMBER
  std::string unavailable;
};

// cuBLASLt, loaded on first use: $KORA_CUBLASLT, else the first of the usual names.
const Lt& lt() {
  static const Lt l = open_library<Lt>("KORA_CUBLASLT",
                                       {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
                                       "cuBLASLt", [](void* lib, Lt& out) {
#define KORA_LOAD(f) load_function(lib, #f, out.f, "cuBLASLt", &out.unavailable);
                                         KORA_LT_FUNCTIONS(KORA_LOAD)
#undef KORA_LOAD
                                       });
  return l;
}

// A cuBLASLt status: a refused configuration is CudaUnsupported (the kernel fails).
void check_lt(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const std::string msg =
      std::string(call) + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) + ")";
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE ||
      s == CUBLAS_STATUS_ARCH_MISMATCH)
    throw CudaUnsupported("unsupported by cuBLASLt: " + msg);
  throw Error(msg);
}

// The most workspace a cuBLASLt algorithm may ask for (cuBLAS's recommendation for Hopper).
constexpr uint64_t kLtWorkspace = 32u << 20;

// The alignment in bytes (at most 64: kora's arena and weights) of every matrix of an
// operand whose base is so aligned: rows `ld` and batches `stride` floats apart.
uint32_t alignment(int64_t ld, int64_t stride, int batch) {
  uint32_t a = 64;
  for (int64_t v : {ld, batch > 1 ? stride : int64_t{0}})
    while (v != 0 && (v * 4) % a != 0) a /= 2;
  return a;
}

class LtGemmImpl : public CudaBlas::LtGemm {
 public:
  LtGemmImpl(cublasLtHandle_t handle, void* const* stream, const CudaGemm& g)
      : handle_(handle), stream_(stream), bias_(g.read_bias >= 0), residual_(g.read_c >= 0) {
    const Lt& f = lt();
    const CublasGemmCall c = cublas_gemm_call(g);
    alpha_ = c.alpha;
    check_lt(f.cublasLtMatmulDescCreate(
                 &desc_, g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    const int32_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                  tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epilogue = bias_
                                  ? (g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                  : (g.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    // Column-major layouts as stored: cuBLAS's A is m x k (k x m with op T), B k x n (n x k).
    a_ = layout(c.trans_a ? c.k : c.m, c.trans_a ? c.m : c.k, c.lda, c.stride_a, c.batch);
    b_ = layout(c.trans_b ? c.n : c.k, c.trans_b ? c.k : c.n, c.ldb, c.stride_b, c.batch);
    d_ = layout(c.m, c.n, c.ldc, c.stride_c, c.batch);
    const uint32_t align_a = alignment(c.lda, c.stride_a, c.batch),
                   align_b = alignment(c.ldb, c.stride_b, c.batch),
                   align_d = alignment(c.ldc, c.stride_c, c.batch);
    if (bias_) {  // the heuristic reads the bias pointer's alignment only: a stand-in for now
      const void* aligned = reinterpret_cast<const void*>(uintptr_t{64});
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &aligned, sizeof aligned);
    }
    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(f.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(g.algo) + 1);
    int found = 0;
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}};
    status = f.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &kLtWorkspace, sizeof kLtWorkspace);
    for (const auto& [attribute, bytes] : aligns)
      if (status == CUBLAS_STATUS_SUCCESS)
        status = f.cublasLtMatmulPreferenceSetAttribute(pref, attribute, &bytes, sizeof bytes);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = f.cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, d_, d_, pref,
                                                static_cast<int>(results.size()), results.data(),
                                                &found);
    f.cublasLtMatmulPreferenceDestroy(pref);
    check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
    if (found <= g.algo || results[static_cast<size_t>(g.algo)].state != CUBLAS_STATUS_SUCCESS)
      throw CudaUnsupported("cuBLASLt offers " + std::to_string(std::min(found, g.algo)) +
                            " algorithms for this GEMM, not #" + std::to_string(g.algo));
    algo_ = results[static_cast<size_t>(g.algo)].algo;
    workspace_ = results[static_cast<size_t>(g.algo)].workspaceSize;
  }
  ~LtGemmImpl() override {
    const Lt& f = lt();
    for (cublasLtMatrixLayout_t l : {a_, b_, d_})
      if (l) f.cublasLtMatrixLayoutDestroy(l);
    if (desc_) f.cublasLtMatmulDescDestroy(desc_);
  }
  size_t workspace_bytes() const override { return workspace_; }
  void run(CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c, CudaDevice::Ptr bias,
           CudaDevice::Ptr d, CudaDevice::Ptr workspace) override {
    if (bias_) {
      const void* p = reinterpret_cast<const void*>(bias);
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p);
    }
    const float beta = residual_ ? 1.0f : 0.0f;
    auto ptr = [](CudaDevice::Ptr p) { return reinterpret_cast<void*>(p); };
    check_lt(lt().cublasLtMatmul(handle_, desc_, &alpha_, ptr(a), a_, ptr(b), b_, &beta,
                                 ptr(residual_ ? c : d), d_, ptr(d), d_, &algo_, ptr(workspace),
                                 workspace_, static_cast<cudaStream_t>(*stream_)),
             "cublasLtMatmul");
  }

 private:
  void set_desc(cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
    check_lt(lt().cublasLtMatmulDescSetAttribute(desc_, attribute, value, bytes),
             "cublasLtMatmulDescSetAttribute");
  }
  static cublasLtMatrixLayout_t layout(int rows, int cols, int ld, int64_t stride, int batch) {
    const Lt& f = lt();
    cublasLtMatrixLayout_t l = nullptr;
    check_lt(f.cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, static_cast<uint64_t>(rows),
                                          static_cast<uint64_t>(cols), ld),
             "cublasLtMatrixLayoutCreate");
    const int32_t count = batch;
    cublasStatus_t s = f.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                          &count, sizeof count);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = f.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof stride);
    if (s != CUBLAS_STATUS_SUCCESS) f.cublasLtMatrixLayoutDestroy(l);
    check_lt(s, "cublasLtMatrixLayoutSetAttribute");
    return l;
  }

  cublasLtHandle_t handle_;
  void* const* stream_;
  bool bias_, residual_;
  float alpha_ = 1;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace

std::unique_ptr<CudaBlas> CudaBlas::open(std::string* why) {
  const Blas& b = blas();
  if (!b.unavailable.empty()) {
    if (why) *why = b.unavailable;
    return nullptr;
  }
  cublasHandle_t handle = nullptr;
  if (const cublasStatus_t s = b.cublasCreate_v2(&handle); s != CUBLAS_STATUS_SUCCESS) {
    if (why) *why = "cublasCreate failed (status " + std::to_string(static_cast<int>(s)) + ")";
    return nullptr;
  }
  std::unique_ptr<CudaBlas> out(new CudaBlas);
  out->handle_ = handle;
  check(b.cublasGetVersion_v2(handle, &out->version_), "cublasGetVersion");
  check(b.cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");  // no TF32
  return out;
}

CudaBlas::~CudaBlas() {
  if (lt_) lt().cublasLtDestroy(static_cast<cublasLtHandle_t>(lt_));
  if (handle_) blas().cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
}

std::unique_ptr<CudaBlas::LtGemm> CudaBlas::prepare(const CudaGemm& gemm) {
  if (gemm.algo < 0) throw Error("a cuBLASLt GEMM needs an algorithm number");
  if (!lt().unavailable.empty()) throw CudaUnsupported(lt().unavailable);
  if (!lt_) {
    cublasLtHandle_t handle = nullptr;
    check_lt(lt().cublasLtCreate(&handle), "cublasLtCreate");
    lt_ = handle;
  }
  return std::make_unique<LtGemmImpl>(static_cast<cublasLtHandle_t>(lt_), &stream_, gemm);
}

void CudaBlas::set_stream(void* stream, CudaDevice::Ptr workspace, size_t workspace_bytes) {
  const Blas& b = blas();
  if (!b.set_stream || !b.set_workspace)
    throw Error("this cuBLAS cannot run on a stream of kora's own (no cublasSetStream)");
  check(b.set_stream(static_cast<cublasHandle_t>(handle_), static_cast<cudaStream_t>(stream)),
        "cublasSetStream");
  stream_ = stream;
  check(b.set_workspace(static_cast<cublasHandle_t>(handle_), reinterpret_cast<void*>(workspace),
                        workspace_bytes),
        "cublasSetWorkspace");
}

void CudaBlas::gemm(const CublasGemmCall& c, CudaDevice::Ptr a, CudaDevice::Ptr b,
                    CudaDevice::Ptr out) {
  const float zero = 0;
  if (c.tf32 != tf32_) {
    check(blas().cublasSetMathMode(static_cast<cublasHandle_t>(handle_),
                                   c.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH),
          "cublasSetMathMode");
    tf32_ = c.tf32;
  }
  check(blas().cublasSgemmStridedBatched(
            static_cast<cublasHandle_t>(handle_), c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
            c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, c.m, c.n, c.k, &c.alpha,
            reinterpret_cast<const float*>(a), c.lda, c.stride_a, reinterpret_cast<const float*>(b),
            c.ldb, c.stride_b, &zero, reinterpret_cast<float*>(out), c.ldc, c.stride_c, c.batch),
        "cublasSgemmStridedBatched");
}

#else  // built without the CUDA toolkit

std::unique_ptr<CudaBlas> CudaBlas::open(std::string* why) {
  if (why) *why = "kora was built without CUDA";
  return nullptr;
}
CudaBlas::~CudaBlas() = default;
void CudaBlas::gemm(const CublasGemmCall&, CudaDevice::Ptr, CudaDevice::Ptr, CudaDevice::Ptr) {
  throw Error("kora was built without CUDA");
}
void CudaBlas::set_stream(void*, CudaDevice::Ptr, size_t) {
  throw Error("kora was built without CUDA");
}
std::unique_ptr<CudaBlas::LtGemm> CudaBlas::prepare(const CudaGemm&) {
  throw Error("kora was built without CUDA");
}

#endif

}  // namespace kora
