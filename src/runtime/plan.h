// A target's plan inside a runtime session, the runtime half of a backend (the compile
// half is include/kora/target.h): the manifest, the artifact directory, the session's
// checked weights and its output tensors in; the kernels bound to their memory out,
// run in the plan's order on each call. The manifest's target chooses the plan:
//   "cpu"   CpuPlan (src/runtime/cpu_plan.h): generated functions and library kernels
//           called in order on the host, intermediates in one arena;
//   "cuda"  CudaPlan (src/runtime/cuda_plan.h): cubins and library calls on a GPU,
//           replayed as CUDA Graphs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kora/runtime.h"
#include "kora/tensor.h"
#include "runtime/manifest.h"

namespace kora {

class TargetPlan {
 public:
  virtual ~TargetPlan() = default;
  // Runs the plan on `inputs` (one per graph input, in manifest order) and leaves the
  // outputs stored as "output" in the session's output tensors (given when made). With
  // `kernel_ms`, each kernel's time (ms, in plan order) of this run.
  virtual void run(const std::vector<Tensor>& inputs, std::vector<double>* kernel_ms) = 0;
  // Where it runs: "cpu, N threads", or the GPU's name and how the plan is replayed.
  virtual std::string device() const = 0;
  // The device time of one run of the plan alone (no copies) on the inputs of the last
  // run; throws kora::Error before any run.
  virtual double plan_ms() = 0;
  // Runs from now on go to a stream of this priority (cuda); cpu: nothing.
  virtual void set_stream_priority(StreamPriority) {}

  // Called by run() before each step with its kernels' range in plan order (cpu: each
  // kernel, or the kernels of a parallel step; cuda: once, every kernel, before the graph
  // is replayed). A gate that blocks holds the run there (co-location preempts between
  // kernels). Empty: none.
  std::function<void(size_t first, size_t count)> gate;
};

// Throws kora::Error for a target this runtime does not run, or what the plan's loading
// throws (a library, a GPU or a kernel missing). `outputs` must outlive the plan.
std::unique_ptr<TargetPlan> make_target_plan(const Manifest& manifest, const std::string& dir,
                                             std::byte* weights, int threads,
                                             std::vector<Tensor>& outputs);

}  // namespace kora
