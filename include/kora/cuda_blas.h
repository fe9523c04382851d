// cuBLAS, opened at run time like the driver (include/kora/cuda_driver.h): libcublas is
// loaded with dlopen ($KORA_CUBLAS, else libcublas.so.13, .so.12, .so), so the worker and
// kora start where it is missing and say so. A CudaBlas runs float32 GEMMs on the current
// device's default stream, in full float32 (TF32 where a call asks). In a kora built without the
// CUDA toolkit it never opens.
#pragma once
#include <memory>
#include <string>

#include "kora/cuda_driver.h"
#include "kora/cuda_job.h"

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
  // cublasSgemmStridedBatched(N, N, alpha 1, beta 0) with `call`'s sizes; a, b, c are
  // cuBLAS's A, B and C (see CublasGemmCall). Throws kora::Error on a cuBLAS error.
  // Runs later GEMMs on `stream` (CudaDevice::stream()) with `workspace` (so that a
  // captured graph allocates nothing). Throws kora::Error when this cuBLAS cannot.
  void set_stream(void* stream, CudaDevice::Ptr workspace, size_t workspace_bytes);
  void gemm(const CublasGemmCall& call, CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c);

 private:
  CudaBlas() = default;
  void* handle_ = nullptr;
  int version_ = 0;
  bool tf32_ = false;  // the handle's math mode
};

}  // namespace kora
