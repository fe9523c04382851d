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

struct cudnnContext {};
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

// out[n, m, oh, ow] = alpha conv + beta_or_z, then bias and activation.
cudnnStatus_t convolve(const cudnnTensorStruct& xd, const float* x, const cudnnFilterStruct& wd,
                       const float* w, const cudnnConvolutionStruct& c, double alpha, double beta,
                       const float* z, const float* bias, cudnnActivationMode_t act,
                       const cudnnTensorStruct& yd, float* y) {
  if (xd.dims.size() != 4 || wd.dims.size() != 4 || yd.dims.size() != 4 || c.pads.size() != 2)
    return CUDNN_STATUS_NOT_SUPPORTED;
  const long N = xd.dims[0], C = xd.dims[1], H = xd.dims[2], W = xd.dims[3], M = wd.dims[0],
             KH = wd.dims[2], KW = wd.dims[3], OH = yd.dims[2], OW = yd.dims[3];
  const long cg = C / c.groups, mg = M / c.groups;
  if (wd.dims[1] != cg || yd.dims[1] != M || yd.dims[0] != N) return CUDNN_STATUS_BAD_PARAM;
  for (long n = 0; n < N; ++n)
    for (long m = 0; m < M; ++m)
      for (long oh = 0; oh < OH; ++oh)
        for (long ow = 0; ow < OW; ++ow) {
          double sum = 0;
          for (long ci = 0; ci < cg; ++ci)
            for (long kh = 0; kh < KH; ++kh)
              for (long kw = 0; kw < KW; ++kw) {
                const long ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                const long iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += double(x[((n * C + (m / mg) * cg + ci) * H + ih) * W + iw]) *
                       w[((m * cg + ci) * KH + kh) * KW + kw];
              }
          const long at = ((n * M + m) * OH + oh) * OW + ow;
          double v = alpha * sum + (beta != 0 ? beta * (z ? z[at] : y[at]) : 0);
          if (bias) v += bias[m];
          if (act == CUDNN_ACTIVATION_RELU && v < 0) v = 0;
          y[at] = static_cast<float>(v);
        }
  return CUDNN_STATUS_SUCCESS;
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
cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) { return CUDNN_STATUS_SUCCESS; }

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
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t bytes,
                                      const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  if (refused(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!workspace || bytes < 256) return CUDNN_STATUS_BAD_PARAM;
  return convolve(*xd, static_cast<const float*>(x), *wd, static_cast<const float*>(w), *cd,
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
    cudnnHandle_t, const void* alpha1, const cudnnTensorDescriptor_t xd, const void* x,
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
  return convolve(*xd, static_cast<const float*>(x), *wd, static_cast<const float*>(w), *cd,
                  *static_cast<const float*>(alpha1), *static_cast<const float*>(alpha2),
                  static_cast<const float*>(z), static_cast<const float*>(bias), ad->mode, *yd,
                  static_cast<float*>(y));
}

}  // extern "C"
