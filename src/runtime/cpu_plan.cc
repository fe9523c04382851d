// The CPU target's plan (src/runtime/cpu_plan.h): manifest, kernel libraries and weights in;
// each kernel bound to the memory of its tensors out, called in the plan's order per run;
// the kernels of a parallel schedule's step at the same time, each on its own threads.
// Each library's size and SHA-256 are checked before it is loaded; each generated kernel's
// arguments (its SYMBOL_io text) and each library kernel's graph must be the dtypes and
// shapes the manifest gives its tensors, so a kernel never writes past a buffer.
#include "runtime/cpu_plan.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <set>

#include "cpu/library.h"
#include "kora/error.h"
#include "runtime/library_kernel.h"
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

// One step of the plan: a generated function or a library kernel, with its pointers.
struct Step {
  KernelFn fn = nullptr;
  std::unique_ptr<CpuLibraryKernel> object;
  std::shared_ptr<PrimGraph> graph;  // library kernels reference it
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<std::pair<size_t, int>> input_slots;  // (position in `in`, graph input index)
  int threads = 0;                                  // in a parallel step: its threads (0: 1)

  void call() {
    if (fn)
      fn(in.data(), out.data());
    else
      object->run(in.data(), out.data());
  }
};

// The kernel's tensors stored blocked (oneDNN kernels are told). A generated
// (elementwise) kernel computes the same on any float32 layout as long as all its tensors
// share it, and one generated on layout views (`views`: its SYMBOL_io names layouts,
// bfloat16 ones too) takes exactly the layouts it names, which check_generated_io
// compares; the interpreter takes plain tensors only.
TensorLayouts kernel_layouts(const Manifest& m, const ManifestKernel& k, size_t index, bool views) {
  TensorLayouts layouts;
  std::set<std::string> seen;
  bool bf16 = false;
  for (const auto* list : {&k.reads, &k.writes})
    for (const std::string& t : *list) {
      const ManifestTensor& info = m.tensors.at(t);
      if (!info.layout.empty()) layouts[t] = info.layout;
      if (info.storage != Storage::kConstant) seen.insert(info.layout);
      bf16 = bf16 || has_bf16_suffix(info.layout);
    }
  if (!layouts.empty() &&
      (k.impl == "interpreter" || (k.impl == "generated" && !views && (seen.size() > 1 || bf16))))
    throw Error("artifact manifest: kernel " + std::to_string(index) + " (" + k.impl + ") uses '" +
                layouts.begin()->first + "', stored in layout " + layouts.begin()->second +
                (k.impl == "interpreter" ? "; the interpreter takes plain tensors only"
                 : bf16 ? "; generated code reads bfloat16 only on the layout views it was "
                          "generated for"
                        : ", with tensors in other layouts"));
  return layouts;
}

// A library kernel's step: `step`'s pointers (in the manifest's read and write order)
// reordered to the order the rebuilt kernel takes them.
void bind_library_kernel(const ManifestKernel& k, const std::string& where,
                         const std::function<Tensor(const std::string&)>& constant,
                         const TensorLayouts& layouts, Step& step) {
  RebuiltKernel r = rebuild_library_kernel(k, where, constant, layouts);
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

// A generated kernel's arguments, as compiled into its library, against the manifest's.
// Whether a generated kernel's SYMBOL_io names layouts (kernel_io_text).
bool generated_on_views(const char* io) { return std::strstr(io, " @") != nullptr; }

void check_generated_io(const Manifest& m, const ManifestKernel& k, const std::string& where,
                        const char* compiled) {
  std::vector<ValueInfo> reads, writes;
  std::vector<std::string> layouts;
  for (const std::string& t : k.reads) reads.push_back(m.tensors.at(t).info);
  for (const std::string& t : k.writes) writes.push_back(m.tensors.at(t).info);
  if (generated_on_views(compiled))
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) layouts.push_back(m.tensors.at(t).layout);
  const std::string listed = kernel_io_text(reads, writes, layouts);
  if (listed != compiled)
    throw Error(where + " (" + k.symbol + "): its arguments are " + compiled +
                ", not what the manifest stores: " + listed);
}

}  // namespace

struct CpuPlan::Impl {
  int threads = 0;
  std::vector<std::shared_ptr<SharedLibrary>> libraries;
  AlignedBytes arena;
  std::vector<Step> steps;
  // The manifest's steps as ranges of `steps`: one kernel on every thread, or several at
  // the same time, each on its own threads (a parallel schedule).
  std::vector<std::pair<size_t, size_t>> groups;
  // Consecutive steps of several kernels each, as many in each (ranges of `groups`): run
  // in one OpenMP region with a barrier between steps, not a region per step. A region's
  // fork and join cost about a microsecond; a parallel schedule of kernels of a few
  // microseconds (an RNN's two directions, one time step each) would spend its gain on them.
  std::vector<std::pair<size_t, size_t>> spans;
  const std::vector<Tensor>* inputs = nullptr;  // the session's, bound at the last run

  // Runs the groups [first, last) of `groups`; with `ms`, each kernel's time (ms[i] for
  // steps[i]). A group of one kernel runs on the calling thread (the kernel's own regions
  // on every thread); groups of several kernels run in one region of as many threads, each
  // kernel on its thread (its nested regions on its own threads), a barrier after each
  // group. A kernel that throws stops the later groups (every thread still meets every
  // barrier), and its exception is rethrown.
  void run_span(size_t first, size_t last, std::vector<double>* ms) {
    using clock = std::chrono::steady_clock;
    if (groups[first].second - groups[first].first == 1) {
      for (size_t g = first; g < last; ++g) {
        const size_t i = groups[g].first;
        const auto start = ms ? clock::now() : clock::time_point{};
        steps[i].call();
        if (ms) (*ms)[i] = std::chrono::duration<double, std::milli>(clock::now() - start).count();
      }
      return;
    }
    const int n = static_cast<int>(groups[first].second - groups[first].first);
    std::exception_ptr failed;
    bool stop = false;
#pragma omp parallel num_threads(n)
    for (size_t g = first; g < last; ++g) {
      bool stopped;
#pragma omp atomic read
      stopped = stop;
      const size_t begin = groups[g].first;
      const int count = static_cast<int>(groups[g].second - begin);
      for (int j = omp_get_thread_num(); !stopped && j < count; j += omp_get_num_threads()) {
        Step& step = steps[begin + static_cast<size_t>(j)];
        omp_set_num_threads(std::max(1, step.threads));  // this thread's nested regions
        const auto start = ms ? clock::now() : clock::time_point{};
        try {
          step.call();
        } catch (...) {
#pragma omp critical
          failed = std::current_exception();
#pragma omp atomic write
          stop = true;
        }
        if (ms)
          (*ms)[begin + static_cast<size_t>(j)] =
              std::chrono::duration<double, std::milli>(clock::now() - start).count();
      }
#pragma omp barrier
    }
    if (failed) std::rethrow_exception(failed);
  }
};

CpuPlan::CpuPlan(const Manifest& m, const std::string& dir, std::byte* weights, int threads,
                 std::vector<Tensor>& outputs)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.threads = threads;
  if (threads > 0) omp_set_num_threads(threads);
  s.arena = aligned_bytes(m.arena_bytes);
  for (const std::string& lib : m.libraries) {
    verify_artifact_file(m, dir, lib);
    s.libraries.push_back(
        std::make_shared<SharedLibrary>(fs::absolute(fs::path(dir) / lib).string()));
  }
  std::map<std::string, int> input_index, output_index;
  for (const std::string& name : m.inputs) input_index.emplace(name, input_index.size());
  for (const std::string& name : m.outputs) output_index.emplace(name, output_index.size());

  // Where each tensor lives (inputs: patched per run).
  auto address = [&](const std::string& name) -> std::byte* {
    const ManifestTensor& t = m.tensors.at(name);
    switch (t.storage) {
      case Storage::kConstant:
        return weights + t.offset;
      case Storage::kArena:
        return s.arena.get() + t.offset;
      case Storage::kOutput: {
        auto it = output_index.find(name);
        if (it == output_index.end())
          throw Error("artifact manifest: tensor '" + name +
                      "' has storage \"output\" but is not a graph output");
        return outputs.at(it->second).mutable_bytes();
      }
      case Storage::kInput:
        return nullptr;
    }
    return nullptr;
  };
  auto constant = [&](const std::string& name) {
    auto it = m.tensors.find(name);
    if (it == m.tensors.end() || it->second.storage != Storage::kConstant)
      throw Error("constant '" + name + "' is not in the weights");
    const ManifestTensor& t = it->second;
    return Tensor(t.info.dtype, t.info.shape, weights + t.offset, static_cast<size_t>(t.bytes()));
  };

  for (const ManifestKernel& k : m.kernels) {
    const size_t index = s.steps.size();
    Step step;
    for (const std::string& t : k.reads) {
      if (m.tensors.at(t).storage == Storage::kInput) {
        auto it = input_index.find(t);
        if (it == input_index.end())
          throw Error("artifact manifest: kernel reads '" + t +
                      "', stored as an input but not a graph input");
        step.input_slots.emplace_back(step.in.size(), it->second);
      }
      step.in.push_back(address(t));
    }
    for (const std::string& t : k.writes) step.out.push_back(address(t));
    const std::string where = "artifact manifest '" + (fs::path(dir) / "manifest.json").string() +
                              "', kernel " + std::to_string(index);
    if (k.impl == "generated") {
      const SharedLibrary& lib = *s.libraries.at(k.library);
      const char* io = static_cast<const char*>(lib.symbol(k.symbol + "_io"));
      kernel_layouts(m, k, index, generated_on_views(io));
      step.fn = reinterpret_cast<KernelFn>(lib.symbol(k.symbol));
      check_generated_io(m, k, where, io);
    } else {
      const TensorLayouts layouts = kernel_layouts(m, k, index, false);
      bind_library_kernel(k, where, constant, layouts, step);
      for (const auto* list : {&k.reads, &k.writes})
        for (const std::string& t : *list)
          if (step.graph->value(t).dtype != m.tensors.at(t).info.dtype ||
              step.graph->value(t).shape != m.tensors.at(t).info.shape)
            throw Error(where + ": its graph takes '" + t + "' as " +
                        dtype_name(step.graph->value(t).dtype) + " " +
                        shape_str(step.graph->value(t).shape) + ", not what the manifest stores: " +
                        dtype_name(m.tensors.at(t).info.dtype) + " " +
                        shape_str(m.tensors.at(t).info.shape));
    }
    step.threads = k.threads;
    if (s.groups.empty() || k.step != m.kernels[s.groups.back().first].step)
      s.groups.push_back({index, index + 1});
    else
      s.groups.back().second = index + 1;
    s.steps.push_back(std::move(step));
  }
  // Kernels of a parallel step given more than one thread each run nested regions.
  for (const auto& [begin, end] : s.groups)
    for (size_t i = begin; end - begin > 1 && i < end; ++i)
      if (s.steps[i].threads > 1) omp_set_max_active_levels(2);
  auto width = [&](size_t g) { return s.groups[g].second - s.groups[g].first; };
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (s.spans.empty() || width(g) == 1 || width(g) != width(s.spans.back().first))
      s.spans.push_back({g, g + 1});
    else
      s.spans.back().second = g + 1;
}

CpuPlan::~CpuPlan() = default;

void CpuPlan::run(const std::vector<Tensor>& inputs, std::vector<double>* kernel_ms) {
  Impl& s = *impl_;
  if (s.threads > 0 && omp_get_max_threads() != s.threads) omp_set_num_threads(s.threads);
  if (kernel_ms) kernel_ms->resize(s.steps.size());
  s.inputs = &inputs;
  for (Step& step : s.steps)
    for (const auto& [at, index] : step.input_slots) step.in[at] = inputs[index].bytes();
  if (gate) {  // called before each step: steps are not run in spans
    for (size_t g = 0; g < s.groups.size(); ++g) {
      gate(s.groups[g].first, s.groups[g].second - s.groups[g].first);
      s.run_span(g, g + 1, kernel_ms);
    }
    return;
  }
  for (const auto& [first, last] : s.spans) s.run_span(first, last, kernel_ms);
}

std::string CpuPlan::device() const {
  return "cpu, " + std::to_string(impl_->threads) + " threads";
}

double CpuPlan::plan_ms() {
  Impl& s = *impl_;
  if (!s.inputs) throw Error("run the plan once before timing it");
  if (s.threads > 0 && omp_get_max_threads() != s.threads) omp_set_num_threads(s.threads);
  for (Step& step : s.steps)  // inputs bound since are patched in before the clock starts
    for (const auto& [at, index] : step.input_slots) step.in[at] = (*s.inputs)[index].bytes();
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [first, last] : s.spans) s.run_span(first, last, nullptr);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace kora
