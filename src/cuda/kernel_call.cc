// A CUDA kernel made ready to enqueue (src/cuda/kernel_call.h): a job's or artifact's
// kernel in; its launches, its cuBLAS GEMM or its cuDNN convolution enqueued out.
#include "cuda/kernel_call.h"

#include <algorithm>

#include "kora/error.h"

namespace kora {

CudaCall::CudaCall(const CudaJobKernel& k, CudaDevice& device, CudaDevice::Module* module,
                   CudaBlas* blas, CudaDnn* dnn)
    : kernel_(k), device_(device), blas_(blas) {
  const size_t reads = k.reads.size();
  if (!k.library.empty() && (reads < 2 || reads > 4 || k.writes.size() != 1))
    throw Error("a library kernel reads 2 to 4 tensors and writes 1");
  if (k.library == "cublas_gemm" && reads != 2) throw Error("a GEMM reads 2 tensors");
  const CudaConv& c = k.conv;
  if (k.library == "cudnn_conv") {
    std::vector<int> operands = {c.read_x, c.read_w};
    if (c.read_bias >= 0) operands.push_back(c.read_bias);
    if (c.read_z >= 0) operands.push_back(c.read_z);
    for (int i : operands)
      if (i < 0 || i >= static_cast<int>(reads) ||
          std::count(operands.begin(), operands.end(), i) != 1)
        throw Error("a convolution's operands are not its distinct reads");
    if (operands.size() != reads) throw Error("a convolution reads what it does not use");
    if (c.read_z >= 0 && !c.fused()) throw Error("a convolution's residual needs its bias");
  }
  if (k.library == "cublas_gemm") {
    if (!blas) throw Error("kernel " + k.name + " needs cuBLAS");
    gemm_ = cublas_gemm_call(k.gemm);
  } else if (k.library == "cudnn_conv") {
    if (!dnn) throw Error("kernel " + k.name + " needs cuDNN");
    conv_ = dnn->prepare(k.conv);
  } else {
    if (!module) throw Error("kernel " + k.name + ": its program is not loaded");
    for (const CudaJobLaunch& l : k.launches)
      functions_.push_back(device.function(*module, l.function));
  }
}

void CudaCall::enqueue(const std::vector<CudaDevice::Ptr>& args, CudaDevice::Ptr workspace) const {
  const CudaJobKernel& k = kernel_;
  if (k.library == "cublas_gemm")  // cuBLAS's A is the kernel's B (see CublasGemmCall)
    blas_->gemm(gemm_, args.at(1 - k.gemm.read_a), args.at(k.gemm.read_a), args.at(2));
  if (conv_) {
    const CudaConv& c = k.conv;
    conv_->run(args.at(c.read_x), args.at(c.read_w), args.at(k.reads.size()), workspace,
               c.read_bias >= 0 ? args.at(c.read_bias) : 0, c.read_z >= 0 ? args.at(c.read_z) : 0);
  }
  for (size_t i = 0; i < k.launches.size(); ++i)
    device_.launch(functions_[i], k.launches[i].grid, k.launches[i].block, args);
}

}  // namespace kora
