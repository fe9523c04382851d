// The kora runtime: an artifact directory written by `kora compile` (manifest.json, the
// kernel libraries, weights.bin) in; a session that runs the compiled model out. Bind
// the inputs, run, read the outputs. It needs only this library (libkora_runtime) and
// the artifact: no compiler, solver or profile database.
//
// A session loads the kernel libraries, reads and verifies the weights (size and
// checksum), builds the library kernels (oneDNN weights are reordered once here) and
// allocates one arena for all intermediate tensors, placed by lifetime when compiled.
// run() calls the kernels in the plan's order on the bound inputs. A CUDA artifact (target
// cuda) runs on the GPU (src/runtime/cuda_plan.h): run() copies the inputs in, replays the
// plan as a CUDA Graph and copies the outputs out, all on a non-blocking stream of the
// session's own, so sessions on one GPU run side by side, in any thread. Not thread-safe:
// one run at a time per session, and generated CPU kernels keep function-static scratch,
// so two sessions of the same CPU artifact must not run at the same time either.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kora/tensor.h"

namespace kora {

// The priority of a CUDA session's stream: the GPU starts the blocks of a higher-priority
// stream's kernels first whenever both have blocks waiting (co-location gives a
// latency-critical model kHigh, best-effort work kLow). kNormal: priority 0.
enum class StreamPriority { kNormal, kHigh, kLow };

struct SessionOptions {
  // 0: the thread count the artifact was compiled (and measured) for. Either is clamped
  // to the machine's hardware threads (threads() says how many are used).
  int threads = 0;
  // CUDA: the stream's priority (set_stream_priority() changes it). CPU: no effect.
  StreamPriority priority = StreamPriority::kNormal;
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
};

// One kernel of the plan, for reports.
struct KernelInfo {
  std::string impl;         // "generated", "onednn" or "interpreter"
  std::string schedule;     // as in the profile database
  std::string primitives;   // its primitives' names, comma-separated
  double predicted_ms = 0;  // its measured cost when compiled
  std::string signature;    // its canonical signature (16 hex digits), the database's key
  bool blocked = false;     // reads or writes a tensor stored in a blocked layout
  bool native = false;      // a library kernel run in its native layouts (blocked, or plain
                            // where the primitive's are)
};

class Session {
 public:
  // Throws kora::Error naming the file and the problem (missing, corrupt, wrong version).
  explicit Session(const std::string& artifact_dir, const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;

  // Binds an input (kept by reference to its shared bytes, no copy). Throws kora::Error
  // for an unknown name or a dtype or shape other than the model's.
  void set_input(const std::string& name, const Tensor& value);
  // Runs the model; throws kora::Error naming any input not bound.
  void run();
  // An output of the last run; valid until the next run.
  const Tensor& output(const std::string& name) const;

  // Called before each step of a run with its kernels' range in plan order (cpu: each
  // kernel, or the kernels of a parallel step; cuda: once, every kernel); a gate that
  // blocks holds the run there, between kernels (co-location, include/kora/colocate.h).
  // Empty: none.
  void set_step_gate(std::function<void(size_t first, size_t count)> gate);

  // CUDA: runs from now on go to a stream of this priority (device() names it). CPU: no
  // effect.
  void set_stream_priority(StreamPriority priority);

  // Binds, runs and returns copies of every output, by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Per kernel, the median over `iters` runs of its time inside the running plan (inputs
  // must be bound), next to kernel_infos(): where end-to-end time goes, vs. predicted.
  std::vector<double> profile_kernels(int iters);
  const std::vector<KernelInfo>& kernel_infos() const;

  // The plan: strategy, predicted cost (sum of measured kernel costs), kernel count,
  // peak activation memory (arena) and the sum of all intermediates.
  std::string strategy() const;
  double predicted_ms() const;
  int kernels() const;
  int64_t arena_bytes() const;
  int64_t intermediate_bytes() const;
  int threads() const;
  std::string target() const;  // "cpu" or "cuda"
  // The device fingerprint whose measurements chose its kernels.
  std::string compiled_for() const;
  // Where it runs: "cpu, N threads", or the GPU's name and how the plan is replayed.
  std::string device() const;
  // The device time of one run of the plan on the inputs of the last run (run() once
  // first): on a GPU by CUDA events around it (inputs already there, no copies); on the
  // CPU the wall-clock time of the kernels' calls.
  double plan_ms();

 private:
  void run_steps(std::vector<double>* kernel_ms);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kora
