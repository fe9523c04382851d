// Internal: one CUDA kernel of a measuring job or a CUDA artifact (a CudaJobKernel) made
// ready to enqueue, for the worker (src/cuda/worker.cc) and the runtime
// (src/runtime/cuda_plan.cc): its functions resolved in its loaded module, its cuBLAS
// call's sizes, its prepared cuBLASLt matmul or its cuDNN convolution's descriptors. enqueue()
// takes a device pointer per read, then per write, in the kernel's order, and runs on the device's
// current stream.
#pragma once
#include <memory>
#include <vector>

#include "cuda/blas.h"
#include "cuda/dnn.h"
#include "cuda/driver.h"
#include "cuda/kernel_spec.h"

namespace kora {

class CudaCall {
 public:
  // `module`: the kernel's program, loaded (generated kernels); `blas` / `dnn`: open where
  // the kernel calls them. Throws kora::Error (CudaUnsupported: a library refuses it).
  CudaCall(const CudaJobKernel& kernel, CudaDevice& device, CudaDevice::Module* module,
           CudaBlas* blas, CudaDnn* dnn);
  size_t workspace_bytes() const {
    return conv_ ? conv_->workspace_bytes() : lt_ ? lt_->workspace_bytes() : 0;
  }
  // `workspace`: at least workspace_bytes() bytes.
  void enqueue(const std::vector<CudaDevice::Ptr>& args, CudaDevice::Ptr workspace) const;

 private:
  const CudaJobKernel& kernel_;
  CudaDevice& device_;
  CudaBlas* blas_;
  std::vector<void*> functions_;
  CublasGemmCall gemm_;
  std::unique_ptr<CudaBlas::LtGemm> lt_;
  std::unique_ptr<CudaDnn::Conv> conv_;
};

}  // namespace kora
