// The runtime session (include/kora/runtime.h): an artifact directory in; its plan ready to
// run out. Loading, in named steps: the manifest (every field and the plan checked), the
// weights (size, SHA-256 and checksum checked before use), the thread count (clamped to
// the machine's hardware threads), the graph's inputs and outputs, the target's plan
// (src/runtime/plan.h: the CPU's or the GPU's) and the kernels' descriptions. A run binds
// the inputs and calls the plan; outputs that no kernel writes (an input or a constant
// passed through) are copied.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kora/error.h"
#include "kora/runtime.h"
#include "runtime/manifest.h"
#include "runtime/plan.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, AlignedFree>;

// The whole weights file, 64-byte aligned, its size and checksum the manifest's.
AlignedBytes read_weights(const fs::path& dir, const Manifest& m) {
  const fs::path path = dir / m.weights_file;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error("cannot read the weights file '" + path.string() + "'");
  if (static_cast<int64_t>(size) != m.weights_bytes)
    throw Error("weights file '" + path.string() + "' has " + std::to_string(size) +
                " bytes, the manifest says " + std::to_string(m.weights_bytes) +
                " (truncated or from another compile)");
  const size_t padded = static_cast<size_t>((std::max<int64_t>(m.weights_bytes, 1) + 63) / 64 * 64);
  AlignedBytes weights(static_cast<std::byte*>(std::aligned_alloc(64, padded)));
  if (!weights) throw Error("cannot allocate " + std::to_string(m.weights_bytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(weights.get()), m.weights_bytes))
    throw Error("cannot read the weights file '" + path.string() + "'");
  verify_artifact_bytes(m, path.string(), m.weights_file, weights.get(),
                        static_cast<size_t>(m.weights_bytes));
  if (weights_checksum(weights.get(), static_cast<size_t>(m.weights_bytes)) != m.weights_checksum)
    throw Error("weights file '" + path.string() +
                "' is corrupt: its checksum differs from the manifest's");
  return weights;
}

}  // namespace

struct Session::Impl {
  Manifest manifest;
  int threads = 0;
  std::vector<TensorInfo> inputs, outputs;
  AlignedBytes weights;
  std::vector<Tensor> bound;          // per graph input; empty Tensor: not bound
  std::vector<Tensor> output_values;  // per graph output
  std::unique_ptr<TargetPlan> plan;
  std::vector<KernelInfo> infos;
  // Outputs that no kernel writes (a graph input or a constant passed through):
  // (output index, input index or -1 for a constant).
  std::vector<std::pair<int, int>> copied_outputs;

  // The graph's inputs and outputs; the output tensors the plan writes into.
  void describe_io() {
    const Manifest& m = manifest;
    std::map<std::string, int> input_index;
    for (const std::string& name : m.inputs) {
      input_index[name] = static_cast<int>(inputs.size());
      const ValueInfo& v = m.tensors.at(name).info;
      inputs.push_back({name, v.dtype, v.shape});
    }
    bound.resize(inputs.size());
    for (const std::string& name : m.outputs) {
      const ManifestTensor& t = m.tensors.at(name);
      outputs.push_back({name, t.info.dtype, t.info.shape});
      output_values.emplace_back(t.info.dtype, t.info.shape);
      if (t.storage == Storage::kConstant) {
        std::memcpy(output_values.back().mutable_bytes(), weights.get() + t.offset,
                    static_cast<size_t>(t.bytes()));
      } else if (t.storage == Storage::kInput) {
        auto it = input_index.find(name);
        if (it == input_index.end())
          throw Error("artifact manifest: output '" + name +
                      "' is stored as an input but is not a graph input");
        copied_outputs.emplace_back(static_cast<int>(outputs.size()) - 1, it->second);
      }
    }
  }
};

Session::Session(const std::string& artifact_dir, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.manifest = read_artifact_manifest(artifact_dir);
  s.threads = options.threads > 0 ? options.threads : s.manifest.threads;
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (hardware > 0 && s.threads > hardware) s.threads = hardware;
  s.weights = read_weights(artifact_dir, s.manifest);
  s.describe_io();
  s.plan = make_target_plan(s.manifest, artifact_dir, s.weights.get(), s.threads, s.output_values);
  if (options.priority != StreamPriority::kNormal) s.plan->set_stream_priority(options.priority);
  s.infos = kernel_infos_of(s.manifest);
}

Session::~Session() = default;

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }

void Session::set_input(const std::string& name, const Tensor& value) {
  Impl& s = *impl_;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (s.inputs[i].name != name) continue;
    const TensorInfo& want = s.inputs[i];
    if (value.dtype() != want.dtype || value.shape() != want.shape)
      throw Error("input '" + name + "' must be " + dtype_name(want.dtype) + " " +
                  shape_str(want.shape) + ", got " + dtype_name(value.dtype()) + " " +
                  shape_str(value.shape()));
    s.bound[i] = value;
    return;
  }
  std::string known;
  for (const TensorInfo& t : s.inputs) known += (known.empty() ? "" : ", ") + t.name;
  throw Error("the model has no input '" + name + "' (its inputs: " + known + ")");
}

void Session::run() { run_steps(nullptr); }

void Session::set_step_gate(std::function<void(size_t first, size_t count)> gate) {
  impl_->plan->gate = std::move(gate);
}

void Session::set_stream_priority(StreamPriority priority) {
  impl_->plan->set_stream_priority(priority);
}

void Session::run_steps(std::vector<double>* kernel_ms) {
  Impl& s = *impl_;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    if (s.bound[i].nbytes() == 0 && numel(s.inputs[i].shape) > 0)
      throw Error("input '" + s.inputs[i].name + "' is not bound (" +
                  dtype_name(s.inputs[i].dtype) + " " + shape_str(s.inputs[i].shape) + ")");
  s.plan->run(s.bound, kernel_ms);
  for (const auto& [output, input] : s.copied_outputs)
    std::memcpy(s.output_values[output].mutable_bytes(), s.bound[input].bytes(),
                s.bound[input].nbytes());
}

std::vector<double> Session::profile_kernels(int iters) {
  const size_t n = impl_->infos.size();
  std::vector<std::vector<double>> samples(n);
  std::vector<double> one(n);
  run_steps(&one);  // warm-up
  for (int it = 0; it < std::max(1, iters); ++it) {
    run_steps(&one);
    for (size_t i = 0; i < n; ++i) samples[i].push_back(one[i]);
  }
  std::vector<double> median(n);
  for (size_t i = 0; i < n; ++i) {
    std::sort(samples[i].begin(), samples[i].end());
    median[i] = samples[i][samples[i].size() / 2];
  }
  return median;
}

const std::vector<KernelInfo>& Session::kernel_infos() const { return impl_->infos; }

const Tensor& Session::output(const std::string& name) const {
  for (size_t i = 0; i < impl_->outputs.size(); ++i)
    if (impl_->outputs[i].name == name) return impl_->output_values[i];
  throw Error("the model has no output '" + name + "'");
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  for (const auto& [name, value] : inputs) set_input(name, value);
  run();
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    const Tensor& t = impl_->output_values[i];
    out[impl_->outputs[i].name] = Tensor(t.dtype(), t.shape(), t.bytes(), t.nbytes());
  }
  return out;
}

std::string Session::strategy() const { return impl_->manifest.strategy; }
double Session::predicted_ms() const { return impl_->manifest.predicted_ms; }
int Session::kernels() const { return static_cast<int>(impl_->manifest.kernels.size()); }
int64_t Session::arena_bytes() const { return impl_->manifest.arena_bytes; }
int64_t Session::intermediate_bytes() const { return impl_->manifest.intermediate_bytes; }
int Session::threads() const { return impl_->threads; }
std::string Session::target() const { return impl_->manifest.target; }
std::string Session::compiled_for() const { return impl_->manifest.device; }
std::string Session::device() const { return impl_->plan->device(); }
double Session::plan_ms() { return impl_->plan->plan_ms(); }

}  // namespace kora
