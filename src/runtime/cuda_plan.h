// The GPU side of a runtime session for a CUDA artifact (target cuda): the manifest, the
// artifact directory and the checked weights in; the plan resident on a GPU out. Loading
// opens the device ($KORA_CUDA_DEVICE, else 0; its architecture must be the cubins'),
// loads the cubins, copies the weights once, allocates the arena and one buffer per graph
// input and output, resolves every kernel's functions and arguments, and prepares its
// cuBLAS / cuDNN calls (one shared workspace); kernels the GPU cannot compute run on the
// host (the reference interpreter, their tensors copied out and back in). The first run
// enqueues the kernels one by one on a non-blocking stream of the session's own (of the
// session's priority; runs may come from any thread) and checks them (a
// failing kernel is named); it then captures each run of GPU kernels between host kernels
// as a CUDA Graph, which every later run replays (launches one by one where the driver or
// a library cannot be captured: device() says which and why).
// It is part of libkora_runtime with the driver, cuBLAS and cuDNN wrappers and the
// kernels' launch description (src/cuda/driver.cc, blas.cc, dnn.cc, kernel_spec.cc,
// kernel_call.cc): all three libraries are opened with dlopen, so the runtime links no
// CUDA library and CUDA artifacts run with it alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kora/tensor.h"
#include "runtime/manifest.h"
#include "runtime/plan.h"

namespace kora {

class CudaPlan : public TargetPlan {
 public:
  // Throws kora::Error naming what is missing (no GPU, another architecture, a cubin, cuBLAS
  // or cuDNN a kernel needs) or the kernel that cannot be prepared.
  CudaPlan(const Manifest& manifest, const std::string& dir, const void* weights,
           std::vector<Tensor>& outputs);
  ~CudaPlan() override;
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  // Copies `inputs` to the GPU, runs the plan, copies the outputs stored as "output" back
  // into the session's outputs. With `kernel_ms`, each kernel's GPU time (CUDA events)
  // enqueued alone after the run.
  void run(const std::vector<Tensor>& inputs, std::vector<double>* kernel_ms) override;
  // GPU time of one run of the whole plan on the inputs last copied (CUDA events around
  // the replay; no copies): the latency a caller keeping data on the GPU would see.
  double plan_ms() override;
  // The GPU's name, how the plan is replayed ("CUDA graph", "CUDA graphs (N) around M host
  // kernels" or "launches (why)") and on which stream.
  std::string device() const override;
  // Later runs on a stream of `priority` (the captured graphs are replayed there).
  void set_stream_priority(StreamPriority priority) override;

 private:
  std::vector<double> kernel_ms();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kora
