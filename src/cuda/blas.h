// cuBLAS and cuBLASLt, opened at run time like the driver (src/cuda/driver.h):
// libcublas is loaded with dlopen ($KORA_CUBLAS, else libcublas.so.13, .so.12, .so), so
// the worker and kora start where it is missing and say so; libcublasLt ($KORA_CUBLASLT,
// else libcublasLt.so.13, .so.12, .so) only when a GEMM asks for it. A CudaBlas runs float32
// GEMMs (CublasGemmCall) on the current device, in full float32 (TF32 where a call asks):
// plain products as cublasSgemmStridedBatched, and cuBLASLt matmuls, prepared once with one
// of cuBLASLt's heuristic algorithms, which also fuse a residual, a bias and a ReLU. In a
// kora built without the CUDA toolkit it never opens.
#pragma once
#include <memory>
#include <string>

#include "cuda/driver.h"
#include "cuda/kernel_spec.h"

namespace kora {

class CudaBlas {
 public:
  // A handle on the device whose context is current (open a CudaDevice first), or nullptr
  // with *why saying what is missing.
  static std::unique_ptr<CudaBlas> open(std::string* why);
  ~CudaBlas();
  CudaBlas(const CudaBlas&) = delete;
  CudaBlas& operator=(const CudaBlas&) = delete;

  int version() const { return version_; }  // cublasGetVersion: 130000
  // Runs later GEMMs on `stream` (CudaDevice::stream()) with `workspace` (so that a
  // captured graph allocates nothing). Throws kora::Error when this cuBLAS cannot.
  void set_stream(void* stream, CudaDevice::Ptr workspace, size_t workspace_bytes);
  // cublasSgemmStridedBatched(beta 0) with `call`'s sizes; a, b, c are cuBLAS's A, B and C
  // (see CublasGemmCall). Throws kora::Error on a cuBLAS error.
  void gemm(const CublasGemmCall& call, CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c);

  // A cuBLASLt matmul's descriptors and algorithm, made once; run() may be called many times.
  class LtGemm {
   public:
    virtual ~LtGemm() = default;
    virtual size_t workspace_bytes() const = 0;
    // a, b: cuBLAS's A and B; c: the residual (0: none); bias (0: none); d: the output.
    virtual void run(CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c, CudaDevice::Ptr bias,
                     CudaDevice::Ptr d, CudaDevice::Ptr workspace) = 0;
  };
  // `gemm` with cuBLASLt's heuristic algorithm number gemm.algo (0: its first choice).
  // Throws CudaUnsupported when there is no cuBLASLt or it offers fewer algorithms.
  std::unique_ptr<LtGemm> prepare(const CudaGemm& gemm);

 private:
  CudaBlas() = default;
  void* handle_ = nullptr;
  void* lt_ = nullptr;      // the cuBLASLt handle, made on the first prepare()
  void* stream_ = nullptr;  // of cuBLASLt's matmuls (cuBLAS's is set on its handle)
  int version_ = 0;
  bool tf32_ = false;  // the handle's math mode
};

}  // namespace kora
