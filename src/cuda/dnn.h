// cuDNN, opened at run time like cuBLAS (src/cuda/blas.h): libcudnn is loaded with
// dlopen ($KORA_CUDNN, else libcudnn.so.9, .so.8, .so). A CudaDnn prepares float32
// convolutions (CudaConv: NCHW, symmetric padding, groups, one forward algorithm; FMA
// math, TF32 only where the call asks; with a bias, the fused bias / residual / ReLU
// epilogue of cudnnConvolutionBiasActivationForward) on the current device's default
// stream (or the one set_stream names). An algorithm cuDNN does not support for a shape
// throws CudaUnsupported (the kernel fails, the context is fine); so does a bias without
// ReLU with any algorithm but 1 (IMPLICIT_PRECOMP_GEMM), the only one with which cuDNN
// fuses an identity activation.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "cuda/driver.h"
#include "cuda/kernel_spec.h"
#include "kora/error.h"

namespace kora {

class CudaDnn {
 public:
  // A handle on the device whose context is current, or nullptr with *why.
  static std::unique_ptr<CudaDnn> open(std::string* why);
  ~CudaDnn();
  CudaDnn(const CudaDnn&) = delete;
  CudaDnn& operator=(const CudaDnn&) = delete;
  int version() const { return version_; }  // cudnnGetVersion: 90800

  // A convolution's descriptors, made once; run() may be called many times.
  class Conv {
   public:
    virtual ~Conv() = default;
    virtual size_t workspace_bytes() const = 0;
    // `bias` and `z` (0: none) for a fused convolution (CudaConv::fused()).
    virtual void run(CudaDevice::Ptr x, CudaDevice::Ptr w, CudaDevice::Ptr y,
                     CudaDevice::Ptr workspace, CudaDevice::Ptr bias, CudaDevice::Ptr z) = 0;
  };
  std::unique_ptr<Conv> prepare(const CudaConv& conv);
  // Runs later convolutions on `stream` (CudaDevice::stream()).
  void set_stream(void* stream);

 private:
  CudaDnn() = default;
  void* handle_ = nullptr;
  int version_ = 0;
};

}  // namespace kora
