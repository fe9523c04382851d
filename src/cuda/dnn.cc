// cuDNN through dlopen (src/cuda/dnn.h): the library's path in; convolutions
// prepared (tensor, filter and convolution descriptors, workspace size) and run out, or
// why cuDNN is not usable.
#include "cuda/dnn.h"

#include <dlfcn.h>

#include <vector>

#include "cuda/library_loader.h"

#ifdef KORA_HAVE_CUDA
#include <cudnn.h>
#endif

namespace kora {

#ifdef KORA_HAVE_CUDA
namespace {

// clang-format off
#define KORA_DNN_FUNCTIONS(X)                                                                \
  X(cudnnCreate) X(cudnnSetStream) X(cudnnDestroy) X(cudnnGetVersion) X(cudnnGetErrorString) \
  X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor)                             \
  X(cudnnSetTensorNdDescriptor) X(cudnnCreateFilterDescriptor)                               \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilterNdDescriptor)                              \
  X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)                   \
  X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount)                        \
  X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardWorkspaceSize)                  \
  X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward)                        \
  X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor)                         \
  X(cudnnDestroyActivationDescriptor)
// clang-format on

struct Dnn {
#define KORA_MEMBER(f) decltype(&::f) f = nullptr;
  KORA_DNN_FUNCTIONS(KORA_MEMBER)
#undef KORA_MEMBER
  std::string unavailable;
};

const Dnn& dnn() {
  static const Dnn d =
      open_library<Dnn>("KORA_CUDNN", {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cuDNN",
                        [](void* lib, Dnn& out) {
#define KORA_LOAD(f) load_function(lib, #f, out.f, "cuDNN", &out.unavailable);
                          KORA_DNN_FUNCTIONS(KORA_LOAD)
#undef KORA_LOAD
                        });
  return d;
}

void check(cudnnStatus_t s, const char* call) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  const std::string msg = std::string(call) + " failed: " + dnn().cudnnGetErrorString(s);
  if (s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM)
    throw CudaUnsupported("unsupported by cuDNN: " + msg);
  throw Error(msg);
}

std::vector<int> ints(const std::vector<int64_t>& v) {
  std::vector<int> out;
  for (int64_t x : v) {
    if (x < 0 || x > 0x7fffffff) throw CudaUnsupported("a convolution size does not fit an int");
    out.push_back(static_cast<int>(x));
  }
  return out;
}

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

class DnnConv : public CudaDnn::Conv {
 public:
  DnnConv(cudnnHandle_t handle, const CudaConv& c) : handle_(handle), algo_(c.algo) {
    const Dnn& d = dnn();
    check(d.cudnnCreateTensorDescriptor(&x_), "cudnnCreateTensorDescriptor");
    check(d.cudnnCreateTensorDescriptor(&y_), "cudnnCreateTensorDescriptor");
    check(d.cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor");
    check(d.cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
    std::vector<int> x = ints(c.x), y = ints(c.y), w = ints(c.w);
    // cuDNN wants at least 4-D tensors: a 1-D convolution gets a unit spatial dim.
    std::vector<int> pads = ints(c.pads), strides = ints(c.strides), dil = ints(c.dilations);
    if (x.size() == 3) {
      for (std::vector<int>* v : {&x, &y, &w}) v->push_back(1);
      pads.push_back(0);
      strides.push_back(1);
      dil.push_back(1);
    }
    const int rank = static_cast<int>(x.size());
    check(d.cudnnSetTensorNdDescriptor(x_, CUDNN_DATA_FLOAT, rank, x.data(),
                                       packed_strides(x).data()),
          "cudnnSetTensorNdDescriptor");
    check(d.cudnnSetTensorNdDescriptor(y_, CUDNN_DATA_FLOAT, rank, y.data(),
                                       packed_strides(y).data()),
          "cudnnSetTensorNdDescriptor");
    check(d.cudnnSetFilterNdDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, rank, w.data()),
          "cudnnSetFilterNdDescriptor");
    check(d.cudnnSetConvolutionNdDescriptor(conv_, rank - 2, pads.data(), strides.data(),
                                            dil.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolutionNdDescriptor");
    check(d.cudnnSetConvolutionGroupCount(conv_, static_cast<int>(c.group)),
          "cudnnSetConvolutionGroupCount");
    check(d.cudnnSetConvolutionMathType(
              conv_, c.tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
    check(d.cudnnGetConvolutionForwardWorkspaceSize(
              handle_, x_, w_, conv_, y_, static_cast<cudnnConvolutionFwdAlgo_t>(algo_), &bytes_),
          "cudnnGetConvolutionForwardWorkspaceSize");
    if (c.fused()) {
      // cuDNN fuses an identity activation only with IMPLICIT_PRECOMP_GEMM.
      if (!c.relu && algo_ != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        throw CudaUnsupported(
            "unsupported by cuDNN: a bias without ReLU is fused only with algorithm 1");
      std::vector<int> b(x.size(), 1);
      b[1] = y[1];
      check(d.cudnnCreateTensorDescriptor(&bias_), "cudnnCreateTensorDescriptor");
      check(d.cudnnSetTensorNdDescriptor(bias_, CUDNN_DATA_FLOAT, rank, b.data(),
                                         packed_strides(b).data()),
            "cudnnSetTensorNdDescriptor");
      check(d.cudnnCreateActivationDescriptor(&act_), "cudnnCreateActivationDescriptor");
      check(d.cudnnSetActivationDescriptor(
                act_, c.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                CUDNN_NOT_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor");
    }
  }
  ~DnnConv() override {
    const Dnn& d = dnn();
    if (x_) d.cudnnDestroyTensorDescriptor(x_);
    if (y_) d.cudnnDestroyTensorDescriptor(y_);
    if (w_) d.cudnnDestroyFilterDescriptor(w_);
    if (conv_) d.cudnnDestroyConvolutionDescriptor(conv_);
    if (bias_) d.cudnnDestroyTensorDescriptor(bias_);
    if (act_) d.cudnnDestroyActivationDescriptor(act_);
  }
  size_t workspace_bytes() const override { return bytes_; }
  void run(CudaDevice::Ptr x, CudaDevice::Ptr w, CudaDevice::Ptr y, CudaDevice::Ptr workspace,
           CudaDevice::Ptr bias, CudaDevice::Ptr z) override {
    const float one = 1, zero = 0;
    if (bias_) {  // y = act(conv(x, w) + alpha2 z + bias); without a residual z is y, times 0
      check(dnn().cudnnConvolutionBiasActivationForward(
                handle_, &one, x_, reinterpret_cast<const void*>(x), w_,
                reinterpret_cast<const void*>(w), conv_,
                static_cast<cudnnConvolutionFwdAlgo_t>(algo_), reinterpret_cast<void*>(workspace),
                bytes_, z ? &one : &zero, y_, reinterpret_cast<const void*>(z ? z : y), bias_,
                reinterpret_cast<const void*>(bias), act_, y_, reinterpret_cast<void*>(y)),
            "cudnnConvolutionBiasActivationForward");
      return;
    }
    check(dnn().cudnnConvolutionForward(handle_, &one, x_, reinterpret_cast<const void*>(x), w_,
                                        reinterpret_cast<const void*>(w), conv_,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algo_),
                                        reinterpret_cast<void*>(workspace), bytes_, &zero, y_,
                                        reinterpret_cast<void*>(y)),
          "cudnnConvolutionForward");
  }

 private:
  cudnnHandle_t handle_;
  int algo_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnTensorDescriptor_t bias_ = nullptr;  // fused: [1, M, 1, ...]
  cudnnActivationDescriptor_t act_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<CudaDnn> CudaDnn::open(std::string* why) {
  const Dnn& d = dnn();
  if (!d.unavailable.empty()) {
    if (why) *why = d.unavailable;
    return nullptr;
  }
  cudnnHandle_t handle = nullptr;
  if (const cudnnStatus_t s = d.cudnnCreate(&handle); s != CUDNN_STATUS_SUCCESS) {
    if (why) *why = std::string("cudnnCreate failed: ") + d.cudnnGetErrorString(s);
    return nullptr;
  }
  std::unique_ptr<CudaDnn> out(new CudaDnn);
  out->handle_ = handle;
  out->version_ = static_cast<int>(d.cudnnGetVersion());
  return out;
}

CudaDnn::~CudaDnn() {
  if (handle_) dnn().cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

void CudaDnn::set_stream(void* stream) {
  check(
      dnn().cudnnSetStream(static_cast<cudnnHandle_t>(handle_), static_cast<cudaStream_t>(stream)),
      "cudnnSetStream");
}

std::unique_ptr<CudaDnn::Conv> CudaDnn::prepare(const CudaConv& conv) {
  return std::make_unique<DnnConv>(static_cast<cudnnHandle_t>(handle_), conv);
}

#else  // built without the CUDA toolkit

std::unique_ptr<CudaDnn> CudaDnn::open(std::string* why) {
  if (why) *why = "kora was built without CUDA";
  return nullptr;
}
CudaDnn::~CudaDnn() = default;
std::unique_ptr<CudaDnn::Conv> CudaDnn::prepare(const CudaConv&) {
  throw Error("kora was built without CUDA");
}
void CudaDnn::set_stream(void*) { throw Error("kora was built without CUDA"); }

#endif

}  // namespace kora
