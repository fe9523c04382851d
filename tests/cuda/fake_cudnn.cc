// A fake cuDNN for tests without a GPU, part of the fake driver's library
// (tests/cuda/fake_driver.cc; device memory is host memory there): the descriptors and
// calls kora's cuDNN wrapper (src/cuda/dnn.cc) makes, with the convolution computed by its
// definition in float64 as cuDNN documents it: cudnnConvolutionForward y = alpha conv(x, w)
// + beta y, cudnnConvolutionBiasActivationForward y = act(alpha1 conv(x, w) + alpha2 z +
// bias), NCHW, groups, symmetric padding, strides and dilations, 2-D (a 1-D convolution
// comes as 2-D with a unit dim). Workspaces are 256 bytes. $FAKE_CUDNN_REFUSE=ALGO: that
// algorithm is CUDNN_STATUS_NOT_SUPPORTED (as cuDNN refuses some for some shapes).
#include <cudnn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/fake_stream.h"
#include "cuda/textbook_conv.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  std::vector<int> dims, strides;
};
struct cudnnFilterStruct {
  std::vector<int> dims;
};
struct cudnnConvolutionStruct {
  std::vector<int> pads, strides, dilations;
  int groups = 1;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_IDENTITY;
};

namespace {

bool refused(cudnnConvolutionFwdAlgo_t algo) {
  const char* v = std::getenv("FAKE_CUDNN_REFUSE");
  return v && *v && std::atoi(v) == static_cast<int>(algo);
}

// The descriptors' convolution by its definition (tests/cuda/textbook_conv.h), on the
// handle's stream: checked now, computed now or when the captured graph runs.
cudnnStatus_t convolve(cudnnHandle_t handle, const cudnnTensorStruct& xd, const float* x,
                       const cudnnFilterStruct& wd, const float* w, const cudnnConvolutionStruct& c,
                       double alpha, double beta, const float* z, const float* bias,
                       cudnnActivationMode_t act, const cudnnTensorStruct& yd, float* y) {
  if (xd.dims.size() != 4 || wd.dims.size() != 4 || yd.dims.size() != 4 || c.pads.size() != 2)
    return CUDNN_STATUS_NOT_SUPPORTED;
  kora_cuda_test::Conv2d d;
  d.n = xd.dims[0], d.c = xd.dims[1], d.h = xd.dims[2], d.w = xd.dims[3];
  d.m = wd.dims[0], d.kh = wd.dims[2], d.kw = wd.dims[3], d.oh = yd.dims[2], d.ow = yd.dims[3];
  d.groups = c.groups;
  for (int i = 0; i < 2; ++i)
    d.stride[i] = c.strides[i], d.pad[i] = c.pads[i], d.dilation[i] = c.dilations[i];
  if (wd.dims[1] != d.c / d.groups || yd.dims[1] != d.m || yd.dims[0] != d.n)
    return CUDNN_STATUS_BAD_PARAM;
  const bool relu = act == CUDNN_ACTIVATION_RELU;
  return kora_fake::enqueue(
             handle->stream,
             [=] { kora_cuda_test::textbook_conv2d(d, x, w, y, alpha, beta, z, bias, relu); }) ==
                 kora_fake::Enqueued::kRefused
             ? CUDNN_STATUS_EXECUTION_FAILED
             : CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}
size_t cudnnGetVersion(void) { return 91400; }
const char* cudnnGetErrorString(cudnnStatus_t status) {
  return status == CUDNN_STATUS_NOT_SUPPORTED ? "CUDNN_STATUS_NOT_SUPPORTED (fake)" : "fake error";
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int rank,
                                         const int dims[], const int strides[]) {
  if (type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  d->dims.assign(dims, dims + rank);
  d->strides.assign(strides, strides + rank);
  for (int i = rank - 1, packed = 1; i >= 0; packed *= dims[i--])
    if (strides[i] != packed) return CUDNN_STATUS_NOT_SUPPORTED;  // packed NCHW only
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int rank, const int dims[]) {
  if (type != CUDNN_DATA_FLOAT || format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
  d->dims.assign(dims, dims + rank);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n,
                                              const int pads[], const int strides[],
                                              const int dilations[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t) {
  if (mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED;
  d->pads.assign(pads, pads + n);
  d->strides.assign(strides, strides + n);
  d->dilations.assign(dilations, dilations + n);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t, cudnnMathType_t) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                      const cudnnFilterDescriptor_t,
                                                      const cudnnConvolutionDescriptor_t,
                                                      const cudnnTensorDescriptor_t,
                                                      cudnnConvolutionFwdAlgo_t algo,
                                                      size_t* bytes) {
  if (refused(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = 256;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t bytes,
                                      const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  if (refused(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!workspace || bytes < 256) return CUDNN_STATUS_BAD_PARAM;
  return convolve(handle, *xd, static_cast<const float*>(x), *wd, static_cast<const float*>(w), *cd,
                  *static_cast<const float*>(alpha), *static_cast<const float*>(beta), nullptr,
                  nullptr, CUDNN_ACTIVATION_IDENTITY, *yd, static_cast<float*>(y));
}
cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  *d = new cudnnActivationStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t,
                                           double) {
  d->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t bytes, const void* alpha2,
    const cudnnTensorDescriptor_t zd, const void* z, const cudnnTensorDescriptor_t bd,
    const void* bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
    void* y) {
  if (refused(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!workspace || bytes < 256) return CUDNN_STATUS_BAD_PARAM;
  // As documented: identity only with IMPLICIT_PRECOMP_GEMM; z and bias shaped so.
  if (ad->mode == CUDNN_ACTIVATION_IDENTITY &&
      algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (zd->dims != yd->dims || bd->dims.size() != 4 || bd->dims[1] != yd->dims[1] ||
      bd->dims[0] * bd->dims[2] * bd->dims[3] != 1)
    return CUDNN_STATUS_BAD_PARAM;
  return convolve(handle, *xd, static_cast<const float*>(x), *wd, static_cast<const float*>(w), *cd,
                  *static_cast<const float*>(alpha1), *static_cast<const float*>(alpha2),
                  static_cast<const float*>(z), static_cast<const float*>(bias), ad->mode, *yd,
                  static_cast<float*>(y));
}

}  // extern "C"
