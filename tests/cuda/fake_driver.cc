// A fake CUDA driver and cuBLAS for tests without a GPU (tests/cuda/job_test.cc's worker,
// tests/cuda/artifact_test.cc's whole flow):
// one shared library exporting the driver functions kora-cuda-worker opens (the names and
// types of cuda.h) and cuBLAS's, over host memory. A "module image" is the path of a
// shared library built from generated kernels by tests/cuda/emulator.h; a function is its
// kora_emu_F entry and kora_emu_F_arity; a launch runs the emulation; events read the
// steady clock; GEMMs are cuBLAS's column-major definition (tests/cuda/textbook_gemm.h). Faults to
// inject, by function name: $FAKE_CUDA_CRASH_ON aborts the process in the launch,
// $FAKE_CUDA_FAIL_ON returns CUDA_ERROR_LAUNCH_FAILED. $FAKE_CUDA_MODULE, when set, is loaded for
// every module image (kora's own NVRTC cubins then stand for the emulated kernels of the same
// names). $FAKE_CUDA_ARCH=sm_XY: the compute capability (default sm_80). The context is
// current per thread, as CUDA's; streams carry priorities in [-5, 0]. Streams and graphs:
// work on a stream being captured is recorded (tests/cuda/fake_stream.h); a graph of child
// graph nodes launches its nodes in the order that keeps their dependencies and otherwise
// runs the latest-added ready node first, the reverse of the order they were added in
// wherever it may, so that a dependency the runtime forgot changes the result.
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/fake_stream.h"
#include "cuda/textbook_gemm.h"

namespace {

struct Function {
  void (*entry)(long long, int, void**);
  int arity;
  std::string name;
};

bool named(const char* env, const std::string& name) {
  const char* v = std::getenv(env);
  return v && name == v;
}

// A captured sequence of work (ops), or a graph of child graphs (nodes) with the nodes each
// waits for.
struct Graph {
  std::vector<std::function<void()>> ops;
  struct Node {
    std::shared_ptr<const Graph> child;
    std::vector<size_t> after;
  };
  std::vector<Node> nodes;

  void run() const {
    for (const auto& op : ops) op();
    // Ready nodes, the latest first.
    std::vector<size_t> waiting(nodes.size());
    std::vector<bool> done(nodes.size(), false);
    for (size_t i = 0; i < nodes.size(); ++i) waiting[i] = nodes[i].after.size();
    for (size_t finished = 0; finished < nodes.size(); ++finished) {
      size_t next = nodes.size();
      for (size_t i = nodes.size(); i-- > 0;)
        if (!done[i] && waiting[i] == 0) {
          next = i;
          break;
        }
      if (next == nodes.size()) std::abort();  // a cycle: cannot be built through the API
      nodes[next].child->run();
      done[next] = true;
      for (size_t i = 0; i < nodes.size(); ++i)
        for (size_t a : nodes[i].after) waiting[i] -= a == next;
    }
  }
};

std::map<CUstream, std::shared_ptr<Graph>>& captures() {
  static std::map<CUstream, std::shared_ptr<Graph>> open;
  return open;
}
std::mutex& captures_mutex() {
  static std::mutex m;
  return m;
}

// The context is current per thread, as CUDA's: a thread that never made it current
// gets CUDA_ERROR_INVALID_CONTEXT from work on the device.
thread_local bool context_current = false;

// The fake's range of stream priorities (a lower number is a higher priority).
constexpr int kLeastPriority = 0, kGreatestPriority = -5;

}  // namespace

namespace kora_fake {
Enqueued enqueue(void* stream, const std::function<void()>& op);
}  // namespace kora_fake

namespace {

CUresult on_stream(CUstream stream, const std::function<void()>& op) {
  return kora_fake::enqueue(stream, op) == kora_fake::Enqueued::kRefused
             ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
             : CUDA_SUCCESS;
}

}  // namespace

namespace kora_fake {

Enqueued enqueue(void* stream, const std::function<void()>& op) {
  {
    std::lock_guard<std::mutex> lock(captures_mutex());
    auto it = captures().find(static_cast<CUstream>(stream));
    if (it != captures().end()) {
      it->second->ops.push_back(op);
      return Enqueued::kRecorded;
    }
    if (!stream && !captures().empty()) return Enqueued::kRefused;
  }
  op();  // outside the lock: sessions in other threads run at the same time
  return Enqueued::kRan;
}

}  // namespace kora_fake

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_LAUNCH_FAILED     ? "unspecified launch failure (fake)"
          : error == CUDA_ERROR_INVALID_CONTEXT ? "invalid device context (fake)"
                                                : "fake error";
  return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake GPU", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:  // $FAKE_CUDA_ARCH (sm_XY), else 8.0
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: {
      const char* arch = std::getenv("FAKE_CUDA_ARCH");
      const int sm = arch && std::strlen(arch) == 5 ? std::atoi(arch + 3) : 80;
      *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? sm / 10 : sm % 10;
      break;
    }
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 4;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 1 << 20;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  static int dummy;
  *context = reinterpret_cast<CUcontext>(&dummy);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext context) {
  context_current = context != nullptr;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  *least = kLeastPriority, *greatest = kGreatestPriority;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  void* m = std::calloc(bytes ? bytes : 1, 1);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr p, unsigned char value, size_t bytes) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  std::memset(reinterpret_cast<void*>(p), value, bytes);
  return CUDA_SUCCESS;
}
// Stream-ordered copies and memsets (recorded when the stream is being captured).
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  return on_stream(stream, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, bytes); });
}
CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  return on_stream(stream, [=] { std::memcpy(dst, reinterpret_cast<const void*>(src), bytes); });
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t bytes, CUstream stream) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  return on_stream(stream, [=] { std::memset(reinterpret_cast<void*>(p), value, bytes); });
}
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  // $FAKE_CUDA_MODULE: every module is that library (real cubins cannot run here).
  const char* every = std::getenv("FAKE_CUDA_MODULE");
  void* lib =
      ::dlopen(every && *every ? every : static_cast<const char*>(image), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return CUDA_ERROR_INVALID_IMAGE;
  *module = reinterpret_cast<CUmodule>(lib);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  ::dlclose(module);
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  void* entry = ::dlsym(module, (std::string("kora_emu_") + name).c_str());
  void* arity = ::dlsym(module, (std::string("kora_emu_") + name + "_arity").c_str());
  if (!entry || !arity) return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(
      new Function{reinterpret_cast<void (*)(long long, int, void**)>(entry),
                   *static_cast<const int*>(arity), name});
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned int grid, unsigned int, unsigned int,
                        unsigned int block, unsigned int, unsigned int, unsigned int,
                        CUstream stream, void** params, void**) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  const Function& fn = *reinterpret_cast<const Function*>(f);
  if (named("FAKE_CUDA_CRASH_ON", fn.name)) std::abort();
  if (named("FAKE_CUDA_FAIL_ON", fn.name)) return CUDA_ERROR_LAUNCH_FAILED;
  std::vector<void*> args;
  for (int i = 0; i < fn.arity; ++i) args.push_back(*static_cast<void**>(params[i]));
  const auto entry = fn.entry;
  return kora_fake::enqueue(stream,
                            [=]() mutable { entry(grid, static_cast<int>(block), args.data()); }) ==
                 kora_fake::Enqueued::kRefused
             ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
             : CUDA_SUCCESS;
}
// A stream is its priority (in the fake's range).
CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int, int priority) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  *stream = reinterpret_cast<CUstream>(
      new int(std::min(kLeastPriority, std::max(kGreatestPriority, priority))));
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamDestroy(CUstream stream) {
  delete reinterpret_cast<int*>(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  std::lock_guard<std::mutex> lock(captures_mutex());
  if (!stream || captures().count(stream)) return CUDA_ERROR_ILLEGAL_STATE;
  captures()[stream] = std::make_shared<Graph>();
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  std::lock_guard<std::mutex> lock(captures_mutex());
  auto it = captures().find(stream);
  if (it == captures().end()) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = reinterpret_cast<CUgraph>(new Graph(std::move(*it->second)));
  captures().erase(it);
  return CUDA_SUCCESS;
}
CUresult cuGraphCreate(CUgraph* graph, unsigned int) {
  *graph = reinterpret_cast<CUgraph>(new Graph);
  return CUDA_SUCCESS;
}
// A node is its index in the graph, plus one.
CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* after,
                                  size_t count, CUgraph child) {
  Graph& g = *reinterpret_cast<Graph*>(graph);
  Graph::Node n;
  n.child = std::make_shared<const Graph>(*reinterpret_cast<const Graph*>(child));  // a copy
  for (size_t i = 0; i < count; ++i) {
    const size_t index = reinterpret_cast<size_t>(after[i]) - 1;
    if (index >= g.nodes.size()) return CUDA_ERROR_INVALID_VALUE;
    n.after.push_back(index);
  }
  g.nodes.push_back(std::move(n));
  *node = reinterpret_cast<CUgraphNode>(g.nodes.size());
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<const Graph*>(graph)));
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (!context_current) return CUDA_ERROR_INVALID_CONTEXT;
  const Graph* g = reinterpret_cast<const Graph*>(exec);
  return kora_fake::enqueue(stream, [g] { g->run(); }) == kora_fake::Enqueued::kRefused
             ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
             : CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  delete reinterpret_cast<Graph*>(graph);
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<Graph*>(exec);
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new double(0));
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream) {
  *reinterpret_cast<double*>(event) =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent stop) {
  *ms = static_cast<float>(*reinterpret_cast<double*>(stop) - *reinterpret_cast<double*>(start));
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent event) {
  delete reinterpret_cast<double*>(event);
  return CUDA_SUCCESS;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  static int dummy;
  *handle = reinterpret_cast<cublasHandle_t>(&dummy);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  *version = 130000;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cudaStream_t& blas_stream() {  // the one handle's
  static cudaStream_t stream = nullptr;
  return stream;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t stream) {
  blas_stream() = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void* workspace, size_t bytes) {
  return workspace || bytes == 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb,
                                         int m, int n, int k, const float* alpha, const float* a,
                                         int lda, long long sa, const float* b, int ldb,
                                         long long sb, const float* beta, float* c, int ldc,
                                         long long sc, int batch) {
  kora_cuda_test::Gemm g;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.trans_a = ta == CUBLAS_OP_T, g.trans_b = tb == CUBLAS_OP_T;
  g.lda = lda, g.ldb = ldb, g.ldc = g.ldd = ldc;
  g.stride_a = sa, g.stride_b = sb, g.stride_c = g.stride_d = sc;
  g.alpha = *alpha, g.beta = *beta;
  return kora_fake::enqueue(blas_stream(),
                            [=] { kora_cuda_test::textbook_gemm(g, a, b, c, nullptr, c); }) ==
                 kora_fake::Enqueued::kRefused
             ? CUBLAS_STATUS_EXECUTION_FAILED
             : CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
