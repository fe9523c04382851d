// The GPU side of a runtime session for a CUDA artifact (target cuda): the manifest, the
// artifact directory and the checked weights in; the plan resident on a GPU out. Loading
// opens the device ($KORA_CUDA_DEVICE, else 0; its architecture must be the cubins'),
// loads the cubins, copies the weights once, allocates the arena and one buffer per graph
// input and output, resolves every kernel's functions and arguments, and prepares its
// cuBLAS / cuDNN calls (one shared workspace); kernels the GPU cannot compute run on the
// host (the reference interpreter, their tensors copied out and back in). The first run
// enqueues the kernels one by one on a stream of the session's own and checks them; it
// then captures each run of GPU kernels between host kernels as a CUDA Graph, which every
// later run replays (launches one by one where the driver or a library cannot be
// captured: mode() says which and why).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kora/tensor.h"
#include "runtime/manifest.h"

namespace kora {

class CudaPlan {
 public:
  // Throws kora::Error naming what is missing (no GPU, another architecture, a cubin, cuBLAS
  // or cuDNN a kernel needs) or the kernel that cannot be prepared.
  CudaPlan(const Manifest& manifest, const std::string& dir, const void* weights);
  ~CudaPlan();
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  // Copies `inputs` (one per graph input, in manifest order) to the GPU, runs the plan,
  // copies the outputs stored as "output" back into `outputs` (one per graph output).
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  // GPU time of one run of the whole plan on the inputs last copied (CUDA events around
  // the replay; no copies): the latency a caller keeping data on the GPU would see.
  double plan_ms();
  // Per kernel, its GPU time (CUDA events) when enqueued alone, in plan order.
  std::vector<double> kernel_ms();
  std::string device_name() const;
  std::string mode()
      const;  // "CUDA graph", "CUDA graphs (N) around M host kernels" or "launches (why)"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kora
