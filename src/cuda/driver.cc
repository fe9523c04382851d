// The CUDA driver API through dlopen (src/cuda/driver.h): the library path in;
// a table of the driver functions kora calls out, or why it could not be had; and a
// device wrapper over them (primary context, memory, modules, launches). Every driver
// error throws kora::Error naming the call and the driver's message.
#include "cuda/driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kora/error.h"

#ifdef KORA_HAVE_CUDA
#include <cuda.h>
#endif

namespace kora {

#ifdef KORA_HAVE_CUDA
namespace {

// cuda.h maps most names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2): the members
// are call_<name>, typed from the declaration, and KORA_SYMBOL gives the versioned string
// dlsym needs.
#define KORA_STRING(x) #x
#define KORA_SYMBOL(x) KORA_STRING(x)
// clang-format off
#define KORA_DRIVER_FUNCTIONS(X)                                                         \
  X(cuInit) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)    \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)     \
  X(cuMemcpyDtoH) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)          \
  X(cuLaunchKernel) X(cuDriverGetVersion) X(cuMemsetD8) X(cuEventCreate) X(cuEventRecord) \
  X(cuEventSynchronize) X(cuEventDestroy)
// clang-format on

struct Driver {
#define KORA_MEMBER(f) decltype(&f) call_##f = nullptr;
  KORA_DRIVER_FUNCTIONS(KORA_MEMBER)
#undef KORA_MEMBER
  // cuEventElapsedTime_v2 (CUDA 12.8+) when the driver has it, else the first version
  // (same parameters).
  CUresult (*call_elapsed)(float*, CUevent, CUevent) = nullptr;
  // Streams (with priorities, their copies and waits) and graph capture, optional: without
  // them plans run launch by launch on the default stream.
// clang-format off
#define KORA_OPTIONAL_FUNCTIONS(X)                                                        \
  X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuStreamSynchronize)   \
  X(cuStreamDestroy) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuMemcpyHtoDAsync)    \
  X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)                                                  \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy)    \
  X(cuGraphCreate) X(cuGraphAddChildGraphNode)
  // clang-format on
#define KORA_MEMBER(f) decltype(&f) call_##f = nullptr;
  KORA_OPTIONAL_FUNCTIONS(KORA_MEMBER)
#undef KORA_MEMBER
  bool graphs = false;      // every optional function is there
  std::string unavailable;  // why the table is not usable ("" when it is)
};

// The driver library at `path`, its functions and cuInit's verdict.
Driver load_driver(const std::string& path) {
  Driver d;
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    d.unavailable = "no CUDA driver (" + path + ": " + ::dlerror() + ")";
    return d;
  }
#define KORA_LOAD(f)                                                                               \
  if (d.unavailable.empty()) {                                                                     \
    d.call_##f = reinterpret_cast<decltype(d.call_##f)>(::dlsym(lib, KORA_SYMBOL(f)));             \
    if (!d.call_##f) d.unavailable = path + " lacks " + std::string(KORA_SYMBOL(f)) + ": too old"; \
  }
  KORA_DRIVER_FUNCTIONS(KORA_LOAD)
#undef KORA_LOAD
  if (!d.unavailable.empty()) return d;
  for (const char* name : {"cuEventElapsedTime_v2", "cuEventElapsedTime"})
    if (!d.call_elapsed)
      d.call_elapsed = reinterpret_cast<decltype(d.call_elapsed)>(::dlsym(lib, name));
  if (!d.call_elapsed) {
    d.unavailable = path + " lacks cuEventElapsedTime: too old";
    return d;
  }
  d.graphs = true;
#define KORA_LOAD_OPTIONAL(f)                                                        \
  d.call_##f = reinterpret_cast<decltype(d.call_##f)>(::dlsym(lib, KORA_SYMBOL(f))); \
  d.graphs = d.graphs && d.call_##f;
  KORA_OPTIONAL_FUNCTIONS(KORA_LOAD_OPTIONAL)
#undef KORA_LOAD_OPTIONAL
  if (const CUresult r = d.call_cuInit(0); r != CUDA_SUCCESS) {
    const char* msg = nullptr;
    if (d.call_cuGetErrorString(r, &msg) != CUDA_SUCCESS || !msg) msg = "unknown error";
    d.unavailable = "cuInit failed (" + path + "): " + msg + " (error " +
                    std::to_string(static_cast<int>(r)) + ")";
  }
  return d;  // the library stays loaded: its functions are in the table
}

// The driver of this process ($KORA_CUDA_DRIVER or libcuda.so.1), loaded once.
const Driver& driver() {
  static const Driver d = [] {
    const char* env = std::getenv("KORA_CUDA_DRIVER");
    return load_driver(env && *env ? env : "libcuda.so.1");
  }();
  return d;
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  if (driver().call_cuGetErrorString(r, &msg) != CUDA_SUCCESS || !msg) msg = "unknown error";
  throw Error(std::string(call) + " failed: " + msg + " (CUDA error " +
              std::to_string(static_cast<int>(r)) + ")");
}

}  // namespace

class CudaDevice::Module {
 public:
  explicit Module(CUmodule m) : module(m) {}
  ~Module() { driver().call_cuModuleUnload(module); }
  CUmodule module;
};

std::unique_ptr<CudaDevice> CudaDevice::open(int ordinal, std::string* why) {
  const Driver& d = driver();
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return std::unique_ptr<CudaDevice>();
  };
  if (!d.unavailable.empty()) return fail(d.unavailable);
  int count = 0;
  if (d.call_cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return fail("the CUDA driver reports no device");
  if (ordinal < 0 || ordinal >= count)
    return fail("no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) +
                " present)");
  std::unique_ptr<CudaDevice> dev(new CudaDevice);
  dev->ordinal_ = ordinal;
  CUdevice device;
  check(d.call_cuDeviceGet(&device, ordinal), "cuDeviceGet");
  dev->device_ = device;
  char name[256] = {};
  check(d.call_cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  dev->name_ = name;
  check(d.call_cuDeviceGetAttribute(&dev->major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    device),
        "cuDeviceGetAttribute");
  check(d.call_cuDeviceGetAttribute(&dev->minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    device),
        "cuDeviceGetAttribute");
  check(d.call_cuDeviceGetAttribute(&dev->sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
        "cuDeviceGetAttribute");
  int l2 = 0;
  check(d.call_cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
        "cuDeviceGetAttribute");
  dev->l2_bytes_ = l2;
  check(d.call_cuDriverGetVersion(&dev->driver_version_), "cuDriverGetVersion");
  CUcontext context;
  check(d.call_cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  dev->context_ = context;
  check(d.call_cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return dev;
}

CudaDevice::~CudaDevice() {
  for (void* s : streams_)
    if (s) driver().call_cuStreamDestroy(static_cast<CUstream>(s));
  for (void* e : {start_, stop_})
    if (e) driver().call_cuEventDestroy(static_cast<CUevent>(e));
  if (context_) driver().call_cuDevicePrimaryCtxRelease(device_);
}

CudaDevice::Ptr CudaDevice::alloc(size_t bytes) {
  CUdeviceptr p = 0;
  check(driver().call_cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  return p;
}

void CudaDevice::free(Ptr p) {
  if (p) driver().call_cuMemFree(p);
}

// On a stream of the device's own the copies are ordered on it (a pageable source is
// staged before the call returns; a copy to the host is waited for); else synchronous.
void CudaDevice::to_device(Ptr dst, const void* src, size_t bytes) {
  if (!bytes) return;
  if (stream_)
    check(driver().call_cuMemcpyHtoDAsync(dst, src, bytes, static_cast<CUstream>(stream_)),
          "cuMemcpyHtoDAsync");
  else
    check(driver().call_cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

void CudaDevice::to_host(void* dst, Ptr src, size_t bytes) {
  if (!bytes) return;
  if (!stream_) {
    check(driver().call_cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
    return;
  }
  check(driver().call_cuMemcpyDtoHAsync(dst, src, bytes, static_cast<CUstream>(stream_)),
        "cuMemcpyDtoHAsync");
  synchronize();
}

void CudaDevice::make_current() {
  check(driver().call_cuCtxSetCurrent(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

std::shared_ptr<CudaDevice::Module> CudaDevice::load(const std::string& cubin) {
  check(driver().call_cuCtxSetCurrent(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
  CUmodule m;
  check(driver().call_cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  return std::make_shared<Module>(m);
}

void* CudaDevice::function(Module& module, const std::string& name) {
  CUfunction f;
  const CUresult r = driver().call_cuModuleGetFunction(&f, module.module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) throw Error("no function '" + name + "' in the module");
  check(r, "cuModuleGetFunction");
  return f;
}

void CudaDevice::launch(void* fn, int64_t grid, int block, const std::vector<Ptr>& args) {
  if (grid <= 0) return;
  if (grid > 0x7fffffff) throw Error("a grid of " + std::to_string(grid) + " blocks is too large");
  std::vector<CUdeviceptr> values(args.begin(), args.end());
  std::vector<void*> params;
  for (CUdeviceptr& v : values) params.push_back(&v);
  check(driver().call_cuLaunchKernel(static_cast<CUfunction>(fn), static_cast<unsigned>(grid), 1, 1,
                                     static_cast<unsigned>(block), 1, 1, 0,
                                     static_cast<CUstream>(stream_), params.data(), nullptr),
        "cuLaunchKernel");
}

void CudaDevice::synchronize() {
  if (stream_)
    check(driver().call_cuStreamSynchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize");
  else
    check(driver().call_cuCtxSynchronize(), "cuCtxSynchronize");
}

bool CudaDevice::graphs_available() const { return driver().graphs; }

int CudaDevice::stream_priority_value(StreamPriority priority) const {
  const auto [least, greatest] = priority_range_;
  return priority == StreamPriority::kHigh  ? greatest
         : priority == StreamPriority::kLow ? least
                                            : std::clamp(0, greatest, least);
}

// Non-blocking streams: no implicit wait on the legacy default stream, so the work of
// another session in this process never holds this one's.
void CudaDevice::use_stream(StreamPriority priority) {
  if (!driver().graphs) return;
  const size_t slot = static_cast<size_t>(priority);
  if (!streams_[slot]) {
    int least = 0, greatest = 0;
    check(driver().call_cuCtxGetStreamPriorityRange(&least, &greatest),
          "cuCtxGetStreamPriorityRange");
    priority_range_ = {least, greatest};
    CUstream s;
    check(driver().call_cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING,
                                                   stream_priority_value(priority)),
          "cuStreamCreateWithPriority");
    streams_[slot] = s;
  }
  stream_ = streams_[slot];
  priority_ = priority;
}

std::string CudaDevice::stream_description() const {
  if (!stream_) return "the default stream";
  const int value = stream_priority_value(priority_);
  const char* rank = priority_ == StreamPriority::kHigh  ? "high-priority"
                     : priority_ == StreamPriority::kLow ? "low-priority"
                                                         : "normal-priority";
  return std::string("a ") + rank + " stream (" + std::to_string(value) + "; the device's range " +
         std::to_string(priority_range_.second) + " (highest) to " +
         std::to_string(priority_range_.first) + ")";
}

class CudaDevice::Graph {
 public:
  Graph(CUgraph g, CUgraphExec e) : graph(g), exec(e) {}
  ~Graph() {
    driver().call_cuGraphExecDestroy(exec);
    driver().call_cuGraphDestroy(graph);
  }
  CUgraph graph;
  CUgraphExec exec;
};

std::shared_ptr<CudaDevice::Graph> CudaDevice::capture_dag(
    const std::vector<std::vector<size_t>>& after, const std::function<void(size_t)>& prepare,
    const std::function<void(size_t)>& work) {
  if (!stream_) throw Error("graph capture needs a stream (use_stream)");
  const Driver& d = driver();
  const CUstream stream = static_cast<CUstream>(stream_);
  CUgraph parent = nullptr;
  check(d.call_cuGraphCreate(&parent, 0), "cuGraphCreate");
  // The parent graph is destroyed on every way out; a child is copied into it when added.
  struct Owned {
    const Driver& d;
    CUgraph graph;
    ~Owned() {
      if (graph) d.call_cuGraphDestroy(graph);
    }
  } owned{d, parent};
  std::vector<CUgraphNode> nodes;
  for (size_t i = 0; i < after.size(); ++i) {
    prepare(i);
    check(d.call_cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
          "cuStreamBeginCapture");
    CUgraph child = nullptr;
    try {
      work(i);
    } catch (...) {
      d.call_cuStreamEndCapture(stream, &child);
      if (child) d.call_cuGraphDestroy(child);
      throw;
    }
    check(d.call_cuStreamEndCapture(stream, &child), "cuStreamEndCapture");
    const Owned child_owned{d, child};
    std::vector<CUgraphNode> deps;
    for (size_t p : after[i]) {
      if (p >= i) throw Error("graph node " + std::to_string(i) + " waits for a later node");
      deps.push_back(nodes[p]);
    }
    CUgraphNode node = nullptr;
    check(d.call_cuGraphAddChildGraphNode(&node, parent, deps.data(), deps.size(), child),
          "cuGraphAddChildGraphNode");
    nodes.push_back(node);
  }
  CUgraphExec exec = nullptr;
  check(d.call_cuGraphInstantiateWithFlags(&exec, parent, 0), "cuGraphInstantiateWithFlags");
  owned.graph = nullptr;
  return std::make_shared<Graph>(parent, exec);
}

void CudaDevice::replay(Graph& graph) {
  check(driver().call_cuGraphLaunch(graph.exec, static_cast<CUstream>(stream_)), "cuGraphLaunch");
}

void CudaDevice::memset(Ptr p, unsigned char value, size_t bytes) {
  if (!bytes) return;
  if (stream_)
    check(driver().call_cuMemsetD8Async(p, value, bytes, static_cast<CUstream>(stream_)),
          "cuMemsetD8Async");
  else
    check(driver().call_cuMemsetD8(p, value, bytes), "cuMemsetD8");
}

double CudaDevice::elapsed_ms(const std::function<void()>& work) {
  const Driver& d = driver();
  for (void** e : {&start_, &stop_})
    if (!*e) {
      CUevent event;
      check(d.call_cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
      *e = event;
    }
  check(d.call_cuEventRecord(static_cast<CUevent>(start_), static_cast<CUstream>(stream_)),
        "cuEventRecord");
  work();
  check(d.call_cuEventRecord(static_cast<CUevent>(stop_), static_cast<CUstream>(stream_)),
        "cuEventRecord");
  check(d.call_cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize");
  float ms = 0;
  check(d.call_elapsed(&ms, static_cast<CUevent>(start_), static_cast<CUevent>(stop_)),
        "cuEventElapsedTime");
  return ms;
}

std::string cuda_device_unavailable() {
  std::string why;
  return CudaDevice::open(0, &why) ? "" : why;
}

std::string cuda_driver_unavailable(const std::string& library) {
  return load_driver(library).unavailable;
}

#else  // built without the CUDA toolkit

class CudaDevice::Module {};

std::unique_ptr<CudaDevice> CudaDevice::open(int, std::string* why) {
  if (why) *why = "kora was built without CUDA";
  return nullptr;
}
CudaDevice::~CudaDevice() = default;
CudaDevice::Ptr CudaDevice::alloc(size_t) { throw Error("kora was built without CUDA"); }
void CudaDevice::free(Ptr) {}
void CudaDevice::to_device(Ptr, const void*, size_t) { throw Error("kora was built without CUDA"); }
void CudaDevice::to_host(void*, Ptr, size_t) { throw Error("kora was built without CUDA"); }
std::shared_ptr<CudaDevice::Module> CudaDevice::load(const std::string&) {
  throw Error("kora was built without CUDA");
}
void* CudaDevice::function(Module&, const std::string&) {
  throw Error("kora was built without CUDA");
}
void CudaDevice::launch(void*, int64_t, int, const std::vector<Ptr>&) {
  throw Error("kora was built without CUDA");
}
void CudaDevice::synchronize() {}
void CudaDevice::make_current() {}
bool CudaDevice::graphs_available() const { return false; }
void CudaDevice::use_stream(StreamPriority) {}
std::string CudaDevice::stream_description() const { return "the default stream"; }
class CudaDevice::Graph {};
std::shared_ptr<CudaDevice::Graph> CudaDevice::capture_dag(const std::vector<std::vector<size_t>>&,
                                                           const std::function<void(size_t)>&,
                                                           const std::function<void(size_t)>&) {
  throw Error("kora was built without CUDA");
}
void CudaDevice::replay(Graph&) { throw Error("kora was built without CUDA"); }
void CudaDevice::memset(Ptr, unsigned char, size_t) { throw Error("kora was built without CUDA"); }
double CudaDevice::elapsed_ms(const std::function<void()>&) {
  throw Error("kora was built without CUDA");
}
std::string cuda_device_unavailable() { return "kora was built without CUDA"; }
std::string cuda_driver_unavailable(const std::string&) { return "kora was built without CUDA"; }

#endif

}  // namespace kora
