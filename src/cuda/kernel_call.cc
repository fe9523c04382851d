// A CUDA kernel made ready to enqueue (src/cuda/kernel_call.h): a job's or artifact's
// kernel in; its launches, its cuBLAS GEMM, its cuBLASLt matmul or its cuDNN convolution
// enqueued out.
#include "cuda/kernel_call.h"

#include "kora/error.h"

namespace kora {

CudaCall::CudaCall(const CudaJobKernel& k, CudaDevice& device, CudaDevice::Module* module,
                   CudaBlas* blas, CudaDnn* dnn)
    : kernel_(k), device_(device), blas_(blas) {
  const size_t reads = k.reads.size();
  if (!k.library.empty() && (reads < 2 || reads > 4 || k.writes.size() != 1))
    throw Error("a library kernel reads 2 to 4 tensors and writes 1");
  if (!k.library.empty()) {
    const std::string problem = cuda_library_operands_problem(
        k.library == "cudnn_conv" ? cuda_conv_operands(k.conv) : cuda_gemm_operands(k.gemm), reads);
    if (!problem.empty()) throw Error(problem);
  }
  if (k.library == "cudnn_conv" && k.conv.read_z >= 0 && !k.conv.fused())
    throw Error("a convolution's residual needs its bias");
  if (k.library == "cublas_gemm" && k.gemm.fused() && k.gemm.algo < 0)
    throw Error("a GEMM's epilogue needs cuBLASLt");
  if (k.library == "cublas_gemm") {
    if (!blas) throw Error("kernel " + k.name + " needs cuBLAS");
    gemm_ = cublas_gemm_call(k.gemm);
    if (k.gemm.algo >= 0) lt_ = blas->prepare(k.gemm);
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
  const CudaGemm& g = k.gemm;
  auto read = [&](int i) { return i >= 0 ? args.at(static_cast<size_t>(i)) : 0; };
  if (lt_)  // cuBLAS's A is the kernel's B (see CublasGemmCall)
    lt_->run(read(g.read_b), read(g.read_a), read(g.read_c), read(g.read_bias),
             args.at(k.reads.size()), workspace);
  else if (k.library == "cublas_gemm")
    blas_->gemm(gemm_, read(g.read_b), read(g.read_a), args.at(k.reads.size()));
  if (conv_) {
    const CudaConv& c = k.conv;
    conv_->run(read(c.read_x), read(c.read_w), args.at(k.reads.size()), workspace,
               read(c.read_bias), read(c.read_z));
  }
  for (size_t i = 0; i < k.launches.size(); ++i)
    device_.launch(functions_[i], k.launches[i].grid, k.launches[i].block, args);
}

}  // namespace kora
