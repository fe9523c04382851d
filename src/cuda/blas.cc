// cuBLAS through dlopen (include/kora/cuda_blas.h): the library's path in; a handle and
// float32 strided-batched GEMMs out, or why cuBLAS is not usable.
#include <dlfcn.h>

#include "cuda/library_loader.h"
#include "kora/cuda_blas.h"
#include "kora/error.h"

#ifdef KORA_HAVE_CUDA
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
  static const Blas b = [] {
    Blas out;
    void* lib =
        open_first_library("KORA_CUBLAS", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                           "cuBLAS", &out.unavailable);
    if (!lib) return out;
#define KORA_LOAD(f)                                           \
  out.f = reinterpret_cast<decltype(out.f)>(::dlsym(lib, #f)); \
  if (!out.f && out.unavailable.empty()) out.unavailable = "cuBLAS lacks " #f;
    KORA_BLAS_FUNCTIONS(KORA_LOAD)
#undef KORA_LOAD
    out.set_stream = reinterpret_cast<decltype(out.set_stream)>(::dlsym(lib, "cublasSetStream_v2"));
    out.set_workspace =
        reinterpret_cast<decltype(out.set_workspace)>(::dlsym(lib, "cublasSetWorkspace_v2"));
    return out;
  }();
  return b;
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(call) + " failed (cuBLAS status " +
                std::to_string(static_cast<int>(s)) + ")");
}

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
  if (handle_) blas().cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
}

void CudaBlas::set_stream(void* stream, CudaDevice::Ptr workspace, size_t workspace_bytes) {
  const Blas& b = blas();
  if (!b.set_stream || !b.set_workspace)
    throw Error("this cuBLAS cannot run on a stream of kora's own (no cublasSetStream)");
  check(b.set_stream(static_cast<cublasHandle_t>(handle_), static_cast<cudaStream_t>(stream)),
        "cublasSetStream");
  check(b.set_workspace(static_cast<cublasHandle_t>(handle_), reinterpret_cast<void*>(workspace),
                        workspace_bytes),
        "cublasSetWorkspace");
}

void CudaBlas::gemm(const CublasGemmCall& c, CudaDevice::Ptr a, CudaDevice::Ptr b,
                    CudaDevice::Ptr out) {
  const float one = 1, zero = 0;
  if (c.tf32 != tf32_) {
    check(blas().cublasSetMathMode(static_cast<cublasHandle_t>(handle_),
                                   c.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH),
          "cublasSetMathMode");
    tf32_ = c.tf32;
  }
  check(blas().cublasSgemmStridedBatched(
            static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, c.m, c.n, c.k, &one,
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

#endif

}  // namespace kora
