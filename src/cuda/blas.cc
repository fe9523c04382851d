// cuBLAS through dlopen (include/kora/cuda_blas.h): the library's path in; a handle and
// float32 strided-batched GEMMs out, or why cuBLAS is not usable.
#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "kora/cuda_blas.h"
#include "kora/error.h"

#ifdef KORA_HAVE_CUDA
#include <cublas_v2.h>
#endif

namespace kora {

#ifdef KORA_HAVE_CUDA
namespace {

struct Blas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasGetVersion_v2) get_version = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm = nullptr;
  std::string unavailable;
};

// The library, loaded once: $KORA_CUBLAS, else the first of the usual names that loads.
const Blas& blas() {
  static const Blas b = [] {
    Blas out;
    void* lib = nullptr;
    std::string tried;
    const char* env = std::getenv("KORA_CUBLAS");
    for (const char* name :
         {env && *env ? env : "libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if ((lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
      tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
    }
    if (!lib) {
      out.unavailable = "no cuBLAS (" + tried + ")";
      return out;
    }
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, symbol));
      if (!fn && out.unavailable.empty()) out.unavailable = std::string("cuBLAS lacks ") + symbol;
    };
    get(out.create, "cublasCreate_v2");
    get(out.destroy, "cublasDestroy_v2");
    get(out.get_version, "cublasGetVersion_v2");
    get(out.set_math_mode, "cublasSetMathMode");
    get(out.sgemm, "cublasSgemmStridedBatched");
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
  if (const cublasStatus_t s = b.create(&handle); s != CUBLAS_STATUS_SUCCESS) {
    if (why) *why = "cublasCreate failed (status " + std::to_string(static_cast<int>(s)) + ")";
    return nullptr;
  }
  std::unique_ptr<CudaBlas> out(new CudaBlas);
  out->handle_ = handle;
  check(b.get_version(handle, &out->version_), "cublasGetVersion");
  check(b.set_math_mode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");  // no TF32
  return out;
}

CudaBlas::~CudaBlas() {
  if (handle_) blas().destroy(static_cast<cublasHandle_t>(handle_));
}

void CudaBlas::gemm(const CublasGemmCall& c, CudaDevice::Ptr a, CudaDevice::Ptr b,
                    CudaDevice::Ptr out) {
  const float one = 1, zero = 0;
  check(blas().sgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, c.m, c.n, c.k,
                     &one, reinterpret_cast<const float*>(a), c.lda, c.stride_a,
                     reinterpret_cast<const float*>(b), c.ldb, c.stride_b, &zero,
                     reinterpret_cast<float*>(out), c.ldc, c.stride_c, c.batch),
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

#endif

}  // namespace kora
