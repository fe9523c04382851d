// The runtime session (include/kora/runtime.h): an artifact directory in; its kernels
// bound to their tensors' memory and run in order out. Loading: manifest, weights
// (size and checksum checked), kernel libraries (dlopen), library kernels (rebuilt from
// their primitive graphs, constants from the weights; oneDNN ones told which of their
// tensors are stored blocked), the arena. Each kernel gets a
// fixed array of pointers into weights, arena and output buffers; only graph inputs
// are patched in on each run.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cpu/library.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/runtime.h"
#include "runtime/cuda_plan.h"
#include "runtime/library_kernel.h"
#include "runtime/manifest.h"
#include "runtime/shared_library.h"

namespace kora {
namespace {

namespace fs = std::filesystem;
using KernelFn = void (*)(const void* const*, void* const*);

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, AlignedFree>;

AlignedBytes aligned_bytes(int64_t bytes) {
  const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, size));
  if (!p) throw Error("cannot allocate " + std::to_string(bytes) + " bytes");
  return AlignedBytes(p);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path.string() + "' (is this a kora artifact directory?)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One step of the plan: a generated function or a library kernel, with its pointers.
struct Step {
  KernelFn fn = nullptr;
  std::unique_ptr<CpuLibraryKernel> object;
  std::shared_ptr<PrimGraph> graph;  // library kernels reference it
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<std::pair<size_t, int>> input_slots;  // (position in `in`, graph input index)
};

}  // namespace

struct Session::Impl {
  Manifest manifest;
  int threads = 0;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<std::shared_ptr<SharedLibrary>> libraries;
  AlignedBytes weights, arena;
  std::vector<Tensor> bound;          // per graph input; empty Tensor: not bound
  std::vector<Tensor> output_values;  // per graph output
  std::vector<Step> steps;
  std::vector<KernelInfo> infos;
  // Outputs that no kernel writes (a graph input or a constant passed through).
  std::vector<std::pair<int, std::string>> copied_outputs;
  std::unique_ptr<CudaPlan> cuda;  // target cuda: the plan on the GPU
};

Session::Session(const std::string& artifact_dir, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  const fs::path dir(artifact_dir);
  if (!fs::is_directory(dir))
    throw Error("artifact '" + artifact_dir + "' is not a directory (write one with kora compile)");
  const fs::path manifest_path = dir / "manifest.json";
  s.manifest = manifest_from_json(read_text(manifest_path), manifest_path.string());
  const Manifest& m = s.manifest;
  s.threads = options.threads > 0 ? options.threads : m.threads;
  if (s.threads > 0) omp_set_num_threads(s.threads);

  // Weights: the whole file, checked.
  const fs::path weights_path = dir / m.weights_file;
  std::error_code ec;
  const auto weights_size = fs::file_size(weights_path, ec);
  if (ec) throw Error("cannot read the weights file '" + weights_path.string() + "'");
  if (static_cast<int64_t>(weights_size) != m.weights_bytes)
    throw Error("weights file '" + weights_path.string() + "' has " + std::to_string(weights_size) +
                " bytes, the manifest says " + std::to_string(m.weights_bytes) +
                " (truncated or from another compile)");
  s.weights = aligned_bytes(m.weights_bytes);
  {
    std::ifstream in(weights_path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(s.weights.get()), m.weights_bytes))
      throw Error("cannot read the weights file '" + weights_path.string() + "'");
  }
  if (weights_checksum(s.weights.get(), static_cast<size_t>(m.weights_bytes)) != m.weights_checksum)
    throw Error("weights file '" + weights_path.string() +
                "' is corrupt: its checksum differs from the manifest's");
  const bool cpu = m.target == "cpu";  // else cuda: the plan runs on the GPU (CudaPlan)
  if (cpu) {
    s.arena = aligned_bytes(m.arena_bytes);
    for (const std::string& lib : m.libraries)
      s.libraries.push_back(std::make_shared<SharedLibrary>(fs::absolute(dir / lib).string()));
  }

  std::map<std::string, int> input_index, output_index;
  for (const std::string& name : m.inputs) {
    input_index[name] = static_cast<int>(s.inputs.size());
    const ValueInfo& v = m.tensors.at(name).info;
    s.inputs.push_back({name, v.dtype, v.shape});
  }
  s.bound.resize(s.inputs.size());
  for (const std::string& name : m.outputs) {
    const ValueInfo& v = m.tensors.at(name).info;
    output_index.emplace(name, static_cast<int>(s.outputs.size()));
    s.outputs.push_back({name, v.dtype, v.shape});
    s.output_values.emplace_back(v.dtype, v.shape);
    if (m.tensors.at(name).storage != Storage::kOutput)
      s.copied_outputs.emplace_back(static_cast<int>(s.outputs.size()) - 1, name);
  }

  // Where each tensor lives (inputs: patched per run).
  auto address = [&](const std::string& name) -> std::byte* {
    const ManifestTensor& t = m.tensors.at(name);
    switch (t.storage) {
      case Storage::kConstant:
        return s.weights.get() + t.offset;
      case Storage::kArena:
        return s.arena.get() + t.offset;
      case Storage::kOutput: {
        auto it = output_index.find(name);
        if (it == output_index.end())
          throw Error("artifact manifest: tensor '" + name +
                      "' has storage \"output\" but is not a graph output");
        return s.output_values[it->second].mutable_bytes();
      }
      case Storage::kInput:
        return nullptr;
    }
    return nullptr;
  };
  auto constant = [&](const std::string& name) {
    const ManifestTensor& t = m.tensors.at(name);
    return Tensor(t.info.dtype, t.info.shape, s.weights.get() + t.offset,
                  static_cast<size_t>(t.bytes()));
  };

  if (!cpu) s.cuda = std::make_unique<CudaPlan>(m, dir.string(), s.weights.get());
  for (const ManifestKernel& k : m.kernels) {
    std::string names;
    for (const std::string& p : k.primitives) names += (names.empty() ? "" : ", ") + p;
    s.infos.push_back({cpu                       ? k.impl
                       : k.impl == "interpreter" ? "interpreter (host)"
                       : k.cuda.library.empty()  ? "generated"
                                                 : k.cuda.library,
                       k.schedule, names, k.predicted_ms});
    if (!cpu) continue;
    Step step;
    for (const std::string& t : k.reads) {
      const ManifestTensor& info = m.tensors.at(t);
      if (info.storage == Storage::kInput) {
        auto it = input_index.find(t);
        if (it == input_index.end())
          throw Error("artifact manifest: kernel reads '" + t +
                      "', stored as an input but not a graph input");
        step.input_slots.emplace_back(step.in.size(), it->second);
      }
      step.in.push_back(address(t));
    }
    for (const std::string& t : k.writes) step.out.push_back(address(t));
    // Its tensors stored blocked: oneDNN kernels are told; a generated (elementwise)
    // kernel computes the same on any layout, as long as all its tensors share it.
    TensorLayouts layouts;
    std::set<std::string> seen;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) {
        const ManifestTensor& info = m.tensors.at(t);
        if (!info.layout.empty()) layouts[t] = info.layout;
        if (info.storage != Storage::kConstant) seen.insert(info.layout);
      }
    if (!layouts.empty() && (k.impl == "interpreter" || (k.impl == "generated" && seen.size() > 1)))
      throw Error("artifact manifest: kernel " + std::to_string(s.steps.size()) + " (" + k.impl +
                  ") uses '" + layouts.begin()->first + "', stored in layout " +
                  layouts.begin()->second +
                  (k.impl == "generated" ? ", with tensors in other layouts"
                                         : "; the interpreter takes plain tensors only"));
    if (k.impl == "generated") {
      step.fn = reinterpret_cast<KernelFn>(s.libraries.at(k.library)->symbol(k.symbol));
    } else {
      // A graph of the kernel's primitives, constants from the weights; its reads and
      // writes in the order the library kernel takes them.
      RebuiltKernel r = rebuild_library_kernel(
          k,
          "artifact manifest '" + manifest_path.string() + "', kernel " +
              std::to_string(s.steps.size()),
          [&](const std::string& name) {
            auto it = m.tensors.find(name);
            if (it == m.tensors.end() || it->second.storage != Storage::kConstant)
              throw Error("constant '" + name + "' is not in the weights");
            return constant(name);
          },
          layouts);
      step.graph = r.graph;
      step.object = std::move(r.object);
      std::vector<const void*> in;
      std::vector<std::pair<size_t, int>> slots;
      for (size_t pos : r.reads) {
        for (const auto& [at, index] : step.input_slots)
          if (at == pos) slots.emplace_back(in.size(), index);
        in.push_back(step.in[pos]);
      }
      std::vector<void*> out;
      for (size_t pos : r.writes) out.push_back(step.out[pos]);
      step.in = std::move(in);
      step.out = std::move(out);
      step.input_slots = std::move(slots);
    }
    s.steps.push_back(std::move(step));
  }
  for (const auto& [index, name] : s.copied_outputs)
    if (m.tensors.at(name).storage == Storage::kConstant)
      std::memcpy(s.output_values[index].mutable_bytes(), address(name),
                  static_cast<size_t>(m.tensors.at(name).bytes()));
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

void Session::run_steps(std::vector<double>* kernel_ms) {
  Impl& s = *impl_;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    if (s.bound[i].nbytes() == 0 && numel(s.inputs[i].shape) > 0)
      throw Error("input '" + s.inputs[i].name + "' is not bound (" +
                  dtype_name(s.inputs[i].dtype) + " " + shape_str(s.inputs[i].shape) + ")");
  if (s.cuda) {
    s.cuda->run(s.bound, s.output_values);
    if (kernel_ms) *kernel_ms = s.cuda->kernel_ms();
  }
  if (s.threads > 0 && omp_get_max_threads() != s.threads) omp_set_num_threads(s.threads);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    Step& step = s.steps[i];
    for (const auto& [at, index] : step.input_slots) step.in[at] = s.bound[index].bytes();
    const auto start =
        kernel_ms ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (step.fn)
      step.fn(step.in.data(), step.out.data());
    else
      step.object->run(step.in.data(), step.out.data());
    if (kernel_ms)
      (*kernel_ms)[i] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
  }
  for (const auto& [index, name] : s.copied_outputs) {
    if (s.manifest.tensors.at(name).storage != Storage::kInput) continue;
    for (size_t i = 0; i < s.inputs.size(); ++i)
      if (s.inputs[i].name == name)
        std::memcpy(s.output_values[index].mutable_bytes(), s.bound[i].bytes(),
                    s.bound[i].nbytes());
  }
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

std::string Session::device() const {
  if (!impl_->cuda) return "cpu, " + std::to_string(impl_->threads) + " threads";
  return impl_->cuda->device_name() + ", " + impl_->cuda->mode();
}

double Session::plan_ms() {
  if (!impl_->cuda) throw Error("plan_ms: a CPU session has no device time of its own");
  return impl_->cuda->plan_ms();
}

}  // namespace kora
