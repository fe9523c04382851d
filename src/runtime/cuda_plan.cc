// A CUDA artifact's plan on the GPU (src/runtime/cuda_plan.h): manifest, cubins and
// weights in; device buffers, prepared kernels and, after a first checked run, a captured
// CUDA Graph out; run() copies inputs in, replays, copies outputs out. The graph holds the
// plan's real dependencies (src/runtime/step_dependencies.h), not a chain: each kernel is
// captured alone and waits only for the kernels whose memory it shares, so independent
// kernels overlap on the GPU. Library kernels take their workspace from a few lanes used in
// turn, so that two of them running side by side never share scratch memory.
// $KORA_CUDA_GRAPH=chain: every kernel waits for the one before (the serial plan, to
// compare against).
#include "runtime/cuda_plan.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/read_file.h"
#include "cuda/kernel_call.h"
#include "kora/error.h"
#include "runtime/library_kernel.h"
#include "runtime/step_dependencies.h"

namespace kora {

namespace {

// cuBLAS's workspace on a stream of the session's own (its recommended size for Hopper).
constexpr size_t kBlasWorkspace = 32u << 20;
// Library kernels that may run side by side: each lane is one workspace.
constexpr size_t kWorkspaceLanes = 4;

// Whether $KORA_CUDA_GRAPH asks for the serial chain instead of the real dependencies.
bool chain_requested() {
  const char* v = std::getenv("KORA_CUDA_GRAPH");
  if (!v || !*v || std::string(v) == "dag") return false;
  if (std::string(v) == "chain") return true;
  throw Error(std::string("KORA_CUDA_GRAPH is '") + v + "'; it takes 'dag' (default) or 'chain'");
}

}  // namespace

struct CudaPlan::Impl {
  std::vector<Tensor>* outputs = nullptr;  // the session's
  std::unique_ptr<CudaDevice> device;
  std::unique_ptr<CudaBlas> blas;
  std::unique_ptr<CudaDnn> dnn;
  std::vector<std::shared_ptr<CudaDevice::Module>> modules;
  std::vector<CudaDevice::Ptr> owned;  // freed last
  std::vector<CudaDevice::Ptr> input_buffers;
  std::vector<std::pair<CudaDevice::Ptr, int64_t>> output_buffers;  // 0: not stored as output
  // A kernel on the GPU (call), or on the host (the interpreter: its arguments copied out
  // of and back into device memory around it; constants it reads are its own).
  struct Step {
    std::unique_ptr<CudaCall> call;
    std::vector<CudaDevice::Ptr> args;
    RebuiltKernel host;
    std::vector<CudaDevice::Ptr> host_in, host_out;  // in the host kernel's order; 0: constant
    std::vector<std::vector<char>> in_bytes, out_bytes;
    std::vector<const void*> in;  // the host kernel's arguments: in_bytes (null: constant)
    std::vector<void*> out;       // and out_bytes
    int lane = -1;                // its workspace lane (-1: none)
    bool blas = false;            // a cuBLAS(Lt) GEMM: stream and workspace set on the handle
    StepAccess access;            // the device memory it reads and writes
  };
  std::vector<Step> steps;
  // The plan as runs of GPU steps (a CUDA graph each, once captured) between host steps.
  struct Run {
    size_t begin, end;
    std::shared_ptr<CudaDevice::Graph> graph;
    std::vector<std::vector<size_t>> after;  // per step of the run, the run's steps it waits for
  };
  bool on_host(const Run& r) const { return !steps[r.begin].call; }
  std::vector<Run> runs;
  std::vector<CudaDevice::Ptr> lanes;  // workspaces of lane_bytes each
  size_t lane_bytes = 0;
  int blas_lane = -1;    // the lane cuBLAS's handle has as its workspace (-1: its own)
  bool chain = false;    // $KORA_CUDA_GRAPH=chain: every step after the one before
  bool checked = false;  // the first run went launch by launch
  std::string mode = "launches";

  CudaDevice::Ptr alloc(int64_t bytes) {
    owned.push_back(device->alloc(static_cast<size_t>(std::max<int64_t>(bytes, 1))));
    return owned.back();
  }
  void run_host(Step& s) {
    device->synchronize();
    for (size_t i = 0; i < s.host_in.size(); ++i)
      if (s.host_in[i]) device->to_host(s.in_bytes[i].data(), s.host_in[i], s.in_bytes[i].size());
    s.host.object->run(s.in.data(), s.out.data());
    for (size_t i = 0; i < s.host_out.size(); ++i)
      device->to_device(s.host_out[i], s.out_bytes[i].data(), s.out_bytes[i].size());
  }
  // Gives cuBLAS's handle the step's lane (not while capturing: before).
  void prepare(const Step& s) {
    if (s.blas && device->stream() && blas_lane != s.lane) {
      blas->set_stream(device->stream(), lanes.at(static_cast<size_t>(s.lane)), lane_bytes);
      blas_lane = s.lane;
    }
  }
  void enqueue(Step& s) {
    if (s.call)
      s.call->enqueue(s.args, s.lane >= 0 ? lanes.at(static_cast<size_t>(s.lane)) : 0);
    else
      run_host(s);
  }
  void prepare_and_enqueue(Step& s) {
    prepare(s);
    enqueue(s);
  }
  void enqueue(const Run& r) {
    for (size_t i = r.begin; i < r.end; ++i) prepare_and_enqueue(steps[i]);
  }
  // The whole plan: graphs replayed where captured.
  void execute() {
    for (const Run& r : runs) {
      if (r.graph)
        device->replay(*r.graph);
      else
        enqueue(r);
    }
  }
  ~Impl() {
    runs.clear();
    steps.clear();
    if (device)
      for (CudaDevice::Ptr p : owned) device->free(p);
  }
};

CudaPlan::CudaPlan(const Manifest& m, const std::string& dir, const void* weights,
                   std::vector<Tensor>& outputs)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.outputs = &outputs;
  const char* env = std::getenv("KORA_CUDA_DEVICE");
  const int ordinal = env && *env ? std::atoi(env) : 0;
  std::string why;
  s.device = CudaDevice::open(ordinal, &why);
  if (!s.device)
    throw Error("the artifact '" + dir + "' is compiled for CUDA (" + m.arch +
                "), but no GPU can be used here: " + why);
  if (s.device->arch() != m.arch)
    throw Error("the artifact '" + dir + "' is compiled for " + m.arch + ", but " +
                s.device->name() + " is " + s.device->arch() + " (compile it again on this GPU)");
  for (const std::string& cubin : m.libraries) {
    const std::string path = (std::filesystem::path(dir) / cubin).string();
    const std::string image = read_file(path);
    verify_artifact_bytes(m, path, cubin, image.data(), image.size());
    s.modules.push_back(s.device->load(image));
  }

  bool needs_blas = false, needs_dnn = false;
  for (const ManifestKernel& k : m.kernels) {
    needs_blas = needs_blas || k.cuda.library == "cublas_gemm";
    needs_dnn = needs_dnn || k.cuda.library == "cudnn_conv";
  }
  if (needs_blas && !(s.blas = CudaBlas::open(&why)))
    throw Error("the artifact's matrix products need cuBLAS: " + why);
  if (needs_dnn && !(s.dnn = CudaDnn::open(&why)))
    throw Error("the artifact's convolutions need cuDNN: " + why);

  // A stream of the session's own, for graph capture (and side by side with other sessions).
  if (!s.device->graphs_available()) {
    s.mode = "launches (this CUDA driver has no graph capture)";
  } else {
    s.device->use_stream(StreamPriority::kNormal);
    try {
      if (s.dnn) s.dnn->set_stream(s.device->stream());
      s.mode = "CUDA graph";
    } catch (const Error& e) {
      s.mode = std::string("launches (") + e.what() + ")";
    }
  }

  // Buffers: weights (copied once), arena, inputs, outputs.
  const CudaDevice::Ptr weights_buffer = s.alloc(m.weights_bytes);
  s.device->to_device(weights_buffer, weights, static_cast<size_t>(m.weights_bytes));
  const CudaDevice::Ptr arena = s.alloc(m.arena_bytes);
  std::map<std::string, CudaDevice::Ptr> io;
  for (const std::string& name : m.inputs) {
    s.input_buffers.push_back(s.alloc(m.tensors.at(name).bytes()));
    io[name] = s.input_buffers.back();
  }
  for (const std::string& name : m.outputs) {
    const ManifestTensor& t = m.tensors.at(name);
    if (t.storage != Storage::kOutput) {
      s.output_buffers.emplace_back(0, 0);
      continue;
    }
    s.output_buffers.emplace_back(s.alloc(t.bytes()), t.bytes());
    io[name] = s.output_buffers.back().first;
  }
  auto address = [&](const std::string& name) {
    const ManifestTensor& t = m.tensors.at(name);
    if (t.storage == Storage::kConstant) return weights_buffer + t.offset;
    if (t.storage == Storage::kArena) return arena + t.offset;
    auto it = io.find(name);
    if (it == io.end())
      throw Error("artifact manifest: tensor '" + name + "' is stored as " +
                  storage_name(t.storage) + " but is not a graph " +
                  (t.storage == Storage::kInput ? "input" : "output"));
    return it->second;
  };

  auto range = [&](CudaDevice::Ptr p, int64_t bytes) {
    return ByteRange{p, p + static_cast<uint64_t>(std::max<int64_t>(bytes, 0))};
  };
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const ManifestKernel& k = m.kernels[i];
    Impl::Step step;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) step.args.push_back(address(t));
    if (k.impl == "interpreter") {  // on the host
      const std::string where = "artifact kernel " + std::to_string(i) + " (host)";
      step.host = rebuild_library_kernel(k, where, [&](const std::string& name) {
        const ManifestTensor& t = m.tensors.at(name);
        if (t.storage != Storage::kConstant)
          throw Error(where + ": constant '" + name + "' is not in the weights");
        return Tensor(t.info.dtype, t.info.shape, static_cast<const std::byte*>(weights) + t.offset,
                      static_cast<size_t>(t.bytes()));
      });
      for (size_t pos : step.host.reads) {
        const ManifestTensor& t = m.tensors.at(k.reads[pos]);
        const bool constant = t.storage == Storage::kConstant;
        step.host_in.push_back(constant ? 0 : step.args[pos]);
        step.in_bytes.emplace_back(constant ? 0 : static_cast<size_t>(t.bytes()));
      }
      for (size_t pos : step.host.writes) {
        step.host_out.push_back(step.args[k.reads.size() + pos]);
        step.out_bytes.emplace_back(static_cast<size_t>(m.tensors.at(k.writes[pos]).bytes()));
      }
      for (size_t j = 0; j < step.in_bytes.size(); ++j)
        step.in.push_back(step.host_in[j] ? step.in_bytes[j].data() : nullptr);
      for (std::vector<char>& b : step.out_bytes) step.out.push_back(b.data());
      s.steps.push_back(std::move(step));
      continue;
    }
    CudaDevice::Module* module =
        k.cuda.library.empty() ? s.modules.at(static_cast<size_t>(k.cuda.program)).get() : nullptr;
    try {
      step.call = std::make_unique<CudaCall>(k.cuda, *s.device, module, s.blas.get(), s.dnn.get());
    } catch (const Error& e) {
      throw Error("artifact kernel " + std::to_string(i) + " (" + k.cuda.name + ", " + k.schedule +
                  "): " + e.what());
    }
    for (size_t j = 0; j < k.reads.size(); ++j)
      step.access.reads.push_back(range(step.args[j], m.tensors.at(k.reads[j]).bytes()));
    for (size_t j = 0; j < k.writes.size(); ++j)
      step.access.writes.push_back(
          range(step.args[k.reads.size() + j], m.tensors.at(k.writes[j]).bytes()));
    // cuBLAS and cuBLASLt take the stream (and cuBLAS the workspace) from the handle.
    step.blas = k.cuda.library == "cublas_gemm";
    const bool handle_workspace = step.blas && s.device->stream();
    if (step.call->workspace_bytes() || handle_workspace) {
      s.lane_bytes = std::max({s.lane_bytes, step.call->workspace_bytes(),
                               handle_workspace ? kBlasWorkspace : size_t{0}});
      step.lane = 0;  // numbered below, once the lanes are counted
    }
    s.steps.push_back(std::move(step));
  }
  // Workspace lanes, used in turn; a lane's range is written by each step on it.
  size_t users = 0;
  for (const Impl::Step& step : s.steps) users += step.lane >= 0;
  for (size_t l = 0; l < std::min(users, kWorkspaceLanes); ++l)
    s.lanes.push_back(s.alloc(static_cast<int64_t>(s.lane_bytes)));
  size_t user = 0;
  for (Impl::Step& step : s.steps) {
    if (step.lane < 0) continue;
    step.lane = static_cast<int>(user++ % s.lanes.size());
    step.access.writes.push_back(
        range(s.lanes[static_cast<size_t>(step.lane)], static_cast<int64_t>(s.lane_bytes)));
  }
  // Runs: each host step alone, the GPU steps between them together, as a DAG.
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (!s.steps[i].call || s.runs.empty() || s.on_host(s.runs.back()))
      s.runs.push_back({i, i + 1, nullptr, {}});
    else
      s.runs.back().end = i + 1;
  }
  s.chain = chain_requested();
  for (Impl::Run& r : s.runs) {
    if (s.on_host(r)) continue;
    if (s.chain) {
      for (size_t i = r.begin; i < r.end; ++i)
        r.after.push_back(i == r.begin ? std::vector<size_t>{}
                                       : std::vector<size_t>{i - 1 - r.begin});
    } else {
      std::vector<StepAccess> access;
      for (size_t i = r.begin; i < r.end; ++i) access.push_back(s.steps[i].access);
      r.after = step_dependencies(access);
    }
  }
}

CudaPlan::~CudaPlan() = default;

void CudaPlan::set_stream_priority(StreamPriority priority) {
  Impl& s = *impl_;
  if (!s.device->stream()) return;  // launches on the default stream: no priorities
  s.device->make_current();
  s.device->synchronize();  // the old stream's work
  s.device->use_stream(priority);
  if (s.dnn) s.dnn->set_stream(s.device->stream());
  s.blas_lane = -1;  // cuBLAS's handle is given the new stream with its next lane
}

void CudaPlan::run(const std::vector<Tensor>& inputs, std::vector<double>* kernel_ms) {
  Impl& s = *impl_;
  if (gate) gate(0, s.steps.size());
  s.device->make_current();
  std::vector<Tensor>& outputs = *s.outputs;
  for (size_t i = 0; i < s.input_buffers.size(); ++i)
    s.device->to_device(s.input_buffers[i], inputs.at(i).bytes(), inputs[i].nbytes());
  if (!s.checked) {
    // The first run launch by launch, so that a failing kernel is named; then the graphs.
    for (size_t i = 0; i < s.steps.size(); ++i) {
      try {
        s.prepare_and_enqueue(s.steps[i]);
      } catch (const Error& e) {
        throw Error("artifact kernel " + std::to_string(i) + ": " + e.what());
      }
    }
    s.device->synchronize();
    s.checked = true;
    if (s.mode == "CUDA graph") {
      try {
        size_t host = 0, kernels = 0, chain = 0;
        for (Impl::Run& r : s.runs) {
          if (s.on_host(r)) {
            ++host;
            continue;
          }
          r.graph = s.device->capture_dag(
              r.after, [&](size_t i) { s.prepare(s.steps[r.begin + i]); },
              [&](size_t i) { s.enqueue(s.steps[r.begin + i]); });
          kernels += r.end - r.begin;
          chain += longest_chain(r.after);
        }
        const std::string n = std::to_string(kernels), longest = std::to_string(chain);
        s.mode = host ? std::to_string(s.runs.size() - host) + " CUDA graphs of " + n +
                            " kernels in all, " + longest + " on their longest chains, around " +
                            std::to_string(host) + " host kernel" + (host > 1 ? "s" : "")
                      : "CUDA graph of " + n + " kernels, " + longest + " on the longest chain";
        if (s.chain) s.mode += " (KORA_CUDA_GRAPH=chain)";
      } catch (const Error& e) {
        for (Impl::Run& r : s.runs) r.graph.reset();
        s.mode = std::string("launches (capture failed: ") + e.what() + ")";
      }
    }
  } else {
    s.execute();
  }
  s.device->synchronize();
  for (size_t i = 0; i < s.output_buffers.size(); ++i)
    if (s.output_buffers[i].first)
      s.device->to_host(outputs.at(i).mutable_bytes(), s.output_buffers[i].first,
                        static_cast<size_t>(s.output_buffers[i].second));
  if (kernel_ms) *kernel_ms = this->kernel_ms();
}

double CudaPlan::plan_ms() {
  Impl& s = *impl_;
  if (!s.checked) throw Error("run the plan once before timing it");
  s.device->make_current();
  return s.device->elapsed_ms([&] { s.execute(); });
}

std::vector<double> CudaPlan::kernel_ms() {
  Impl& s = *impl_;
  std::vector<double> ms;
  for (Impl::Step& step : s.steps)
    ms.push_back(s.device->elapsed_ms([&] { s.prepare_and_enqueue(step); }));
  return ms;
}

std::string CudaPlan::device() const {
  std::string d = impl_->device->name() + ", " + impl_->mode;
  if (impl_->device->stream()) d += ", on " + impl_->device->stream_description();
  return d;
}

}  // namespace kora
