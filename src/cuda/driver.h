// The CUDA driver, opened at run time: libcuda is loaded with dlopen (never linked), so kora
// and its tests start on machines without a GPU or driver and learn here why no device is
// usable. A CudaDevice holds a device's primary context and runs generated kernels: device
// memory, copies, cubin modules, launches, timing with events. Library path: $KORA_CUDA_DRIVER,
// else libcuda.so.1. In a kora built without the CUDA toolkit no device ever opens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kora/error.h"
#include "kora/runtime.h"

namespace kora {

// A library (cuBLAS, cuBLASLt, cuDNN) refusing a shape or a configuration: the kernel
// fails, the context is fine.
class CudaUnsupported : public Error {
 public:
  using Error::Error;
};

class CudaDevice {
 public:
  // Device `ordinal`, or nullptr with *why saying what is missing (the driver library,
  // cuInit, a device; or CUDA in this build).
  static std::unique_ptr<CudaDevice> open(int ordinal, std::string* why);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const std::string& name() const { return name_; }
  // "sm_90": the architecture to compile cubins for (compute capability).
  std::string arch() const { return "sm_" + std::to_string(major_ * 10 + minor_); }
  int sm_count() const { return sms_; }
  int64_t l2_bytes() const { return l2_bytes_; }
  int driver_version() const { return driver_version_; }  // cuDriverGetVersion: 12040

  using Ptr = uint64_t;  // a device address (CUdeviceptr)
  Ptr alloc(size_t bytes);
  void free(Ptr p);
  void to_device(Ptr dst, const void* src, size_t bytes);
  void to_host(void* dst, Ptr src, size_t bytes);

  // A loaded cubin; unloaded when the last reference goes.
  class Module;
  std::shared_ptr<Module> load(const std::string& cubin);
  // An extern "C" __global__ function of a module (valid while the module is loaded).
  void* function(Module& module, const std::string& name);
  // Launches `fn` on the current stream (use_stream; else the default one): 1-D grid and
  // block, pointer arguments in order.
  void launch(void* fn, int64_t grid, int block, const std::vector<Ptr>& args);
  // Waits for the work of the current stream (use_stream), or of the whole context when
  // there is none.
  void synchronize();
  // Makes the device's context current in the calling thread (a session may run in a thread
  // other than the one that opened it).
  void make_current();
  // Graph replay (CUDA Graphs): whether the driver has streams and graph capture.
  bool graphs_available() const;
  // From now on launches, copies, memsets, waits and event timing go to a non-blocking
  // stream of the device's own of `priority` (the device's greatest, least, or 0 in its
  // range; made once per priority) instead of the legacy default stream (capture needs
  // one), where graphs_available(); cuBLAS and cuDNN must be told
  // (CudaBlas/CudaDnn::set_stream(stream())). Work already on another stream is not waited
  // for (synchronize() first).
  void use_stream(StreamPriority priority = StreamPriority::kNormal);
  void* stream() const { return stream_; }  // CUstream; nullptr: the default stream
  // "a high-priority stream (-5; the device's range -5 (highest) to 0)", or "the default
  // stream".
  std::string stream_description() const;
  // An executable graph of nodes, each captured alone on the stream (not run): for node i,
  // prepare(i) runs before its capture begins (what must not happen during a capture, such
  // as setting a library's workspace) and work(i) enqueues it. Node i starts once the
  // nodes after[i] (earlier ones) are done; nodes with no path between them may overlap.
  class Graph;
  std::shared_ptr<Graph> capture_dag(const std::vector<std::vector<size_t>>& after,
                                     const std::function<void(size_t)>& prepare,
                                     const std::function<void(size_t)>& work);
  // Enqueues the graph on the stream.
  void replay(Graph& graph);
  // Sets `bytes` bytes at `p` to `value` (on the default stream).
  void memset(Ptr p, unsigned char value, size_t bytes);
  // The GPU time `work` takes (launches it makes on the default stream), by CUDA events
  // recorded before and after it; waits for it to finish.
  double elapsed_ms(const std::function<void()>& work);

 private:
  CudaDevice() = default;
  int ordinal_ = 0, major_ = 0, minor_ = 0;
  int device_ = 0, sms_ = 0, driver_version_ = 0;
  int64_t l2_bytes_ = 0;
  void* context_ = nullptr;
  void *start_ = nullptr, *stop_ = nullptr;  // events of elapsed_ms, made on first use
  void* stream_ = nullptr;                   // use_stream()'s current one
  void* streams_[3] = {};                    // by StreamPriority
  StreamPriority priority_ = StreamPriority::kNormal;
  std::pair<int, int> priority_range_;  // least, greatest (cuCtxGetStreamPriorityRange)
  // The driver's value for `priority` in priority_range_ (the greatest, the least, or 0).
  int stream_priority_value(StreamPriority priority) const;
  std::string name_;
};

// Why no CUDA device can be used here ("" when device 0 can).
std::string cuda_device_unavailable();

// Why the driver library at `library` cannot be used: "" when it loads, has every function
// kora calls and cuInit succeeds. (Loads it afresh; the process's driver is unaffected.)
std::string cuda_driver_unavailable(const std::string& library);

}  // namespace kora
