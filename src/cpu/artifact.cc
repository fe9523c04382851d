// The CPU target's artifact backend (src/cpu/artifact.h): per chosen kernel an
// implementation (the database's cheapest working schedule that can be built now, at its
// time in plan where it has one), the
// generated sources compiled into a few shared libraries in parallel (each kernel with
// the text of its arguments, SYMBOL_io, for the runtime's check), and the blocked
// layouts kept between oneDNN convolutions. The shared emitter (src/emit/) does the rest.
#include "cpu/artifact.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/layout_map.h"
#include "base/progress.h"
#include "cpu/codegen.h"
#include "cpu/layout_view.h"
#include "cpu/library.h"
#include "emit/artifact_backend.h"
#include "kora/error.h"
#include "kora/profile_db.h"
#include "runtime/manifest.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

// The kernel's source and, after it, SYMBOL_io: its arguments' dtypes and shapes
// (kernel_io_text), which the runtime checks against the manifest before calling it.
// A kernel on layout views (`views`) lists each argument's layout.
std::string with_io_text(const PrimGraph& graph, const GeneratedKernel& k,
                         const TensorLayouts& views = {}) {
  std::vector<ValueInfo> reads, writes;
  std::vector<std::string> layouts;
  for (const std::string& t : k.reads) reads.push_back(graph.value(t));
  for (const std::string& t : k.writes) writes.push_back(graph.value(t));
  if (!views.empty())
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) {
        const auto it = views.find(t);
        layouts.push_back(it == views.end() ? std::string() : it->second);
      }
  return k.source + "extern \"C\" const char " + k.symbol + "_io[] = \"" +
         kernel_io_text(reads, writes, layouts) + "\";\n";
}

// The sides of a generated kernel the solver stored in a oneDNN layout (`decided`:
// OrchestrationResult::layouts), which it then reads and writes through layout views;
// bf16: also the sides it stores as bfloat16 in their own order (bfloat16_sides).
TensorLayouts decided_views(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                            const std::map<std::string, std::string>* decided, bool bf16) {
  TensorLayouts views;
  if (!decided) return views;
  for (const std::string& t : layout_view_sides(graph, dag, c, bf16)) {
    const auto it = decided->find(t);
    if (it != decided->end() && layout_map(it->second, graph.value(t).shape)) views[t] = it->second;
  }
  if (bf16)
    for (const std::string& t : bfloat16_sides(graph, dag, c)) {
      const auto it = decided->find(t);
      if (it != decided->end() && is_plain_bfloat16(it->second, graph.value(t).shape.size()))
        views[t] = it->second;
    }
  return views;
}

// The implementation of kernel `k`: the first working record of the database that can
// be built now, else oneDNN, generated code's default schedule, the interpreter.
void choose_implementation(const PrimGraph& graph, const KernelDag& dag, const ProfileDb* db,
                           const ArtifactOptions& options, int index, const ChosenKernel& chosen,
                           const std::map<std::string, std::string>* decided, Emitted& e) {
  const bool layouts_decided = decided != nullptr;
  const uint64_t signature = chosen.signature;
  const Candidate& c = e.candidate;
  std::vector<std::string> schedules;
  double plain_ms = -1, native_ms = -1;
  bool onednn_failed = false;  // measured, and failed (bf16 without a bf16 implementation)
  if (db) {
    // Cheapest first, each schedule at its time inside running plans where it has one
    // (ProfileDb::in_plan), else alone: as the cost model priced the kernel.
    const ProfileDb::ScheduleTimes in_plan = db->in_plan(options.device, false, signature);
    std::vector<std::pair<double, std::string>> costs;
    for (const ProfileRecord& r : db->records(options.device, signature)) {
      if (r.failed) {
        onednn_failed = onednn_failed || r.schedule == "onednn";
        continue;
      }
      if (r.schedule == kOnednnNative) native_ms = r.median_ms;
      // Native records time the kernel in its native layouts, which only a kernel the
      // solver chose native has (added first below); on plain tensors the primitive
      // runs as onednn:blocked, a schedule of its own, as the cost model prices it (a
      // plain kernel emitted as onednn:native ran as plain oneDNN, 1.17 ms in its plan,
      // where the solver had priced its Winograd schedule at 0.86).
      if (layouts_decided && (r.schedule == kOnednnNative || r.schedule == kOnednnChannelsLast))
        continue;
      double ms = r.median_ms;
      if (!in_plan.empty())
        if (const auto it = in_plan.begin()->second.find(r.schedule);
            it != in_plan.begin()->second.end())
          ms = it->second;
      costs.emplace_back(ms, r.schedule);
      if (r.schedule == "onednn") plain_ms = r.median_ms;
    }
    std::stable_sort(costs.begin(), costs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ms, schedule] : costs) schedules.push_back(schedule);
  }
  // The solver decided which kernels run native; without it, those measured faster so.
  e.native_ok = layouts_decided ? chosen.native : !(plain_ms >= 0 && native_ms > plain_ms);
  if (chosen.native) schedules.insert(schedules.begin(), kOnednnNative);
  // Not measured: oneDNN where it fits (it won 94 of the 137 ResNet-50 kernels it
  // supports) and did not fail, else generated code's default schedule.
  if (!onednn_failed) schedules.push_back("onednn");
  schedules.push_back("default");
  const std::string symbol = "kora_k" + std::to_string(index);
  // What failed its check (unmeasured kernels: plain oneDNN, generated code's default).
  const auto rejected = [&](const std::string& s) {
    const KernelCheck* r = options.rejected;
    if (!r) return false;
    if (is_onednn_schedule(s)) return r->rejects(signature, "onednn");
    return r->rejects(signature, s == "default" ? "gen:" + CpuSchedule{}.key() : s);
  };
  for (const std::string& s : schedules) {
    if (rejected(s)) continue;
    try {
      if (s == "default" || s.rfind("gen:", 0) == 0) {
        if (!cpu_codegen_supports(graph, dag, c)) continue;
        const CpuSchedule schedule =
            s == "default" ? CpuSchedule{} : CpuSchedule::from_key(s.substr(4));
        e.views = decided_views(graph, dag, c, decided, options.bf16);
        if (e.views.empty()) {
          e.source = with_io_text(graph, generate_cpu_kernel(graph, dag, c, symbol, schedule));
        } else {
          const LayoutView view = layout_view(graph, dag, c, e.views);
          e.source = with_io_text(graph,
                                  generate_cpu_kernel(view.graph, view.dag, view.candidate, symbol,
                                                      schedule, view.bfloat16),
                                  e.views);
        }
        e.kernel.impl = "generated";
        e.kernel.symbol = symbol;
        e.kernel.schedule = "gen:" + schedule.key();
        return;
      }
      if (is_onednn_schedule(s) && onednn_supports(graph, dag, c)) {
        e.kernel.impl = "onednn";
        e.kernel.schedule = s + (options.bf16 ? kBf16 : "");
        return;
      }
      if (s == "interpreter") break;
    } catch (const Error&) {
      // A schedule the generator no longer takes: try the next one.
    }
  }
  e.kernel.impl = e.kernel.schedule = "interpreter";
}

// Compiles the generated kernels, `per_unit` to a library, all cores busy. A library
// that fails to compile is compiled again kernel by kernel; a kernel that still fails
// falls back to oneDNN or the interpreter (reported on the progress stream).
void compile_kernels(const PrimGraph& graph, const KernelDag& dag, std::vector<Emitted>& emitted,
                     const ArtifactOptions& options, const fs::path& tmp, Manifest& manifest) {
  std::vector<Emitted*> pending;
  for (Emitted& e : emitted)
    if (e.kernel.impl == "generated") pending.push_back(&e);
  if (pending.empty()) return;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t per_unit = std::max<size_t>(
      1, std::min<size_t>(std::max(1, options.kernels_per_unit),
                          (pending.size() + cores - 1) / static_cast<size_t>(cores)));
  std::vector<std::vector<Emitted*>> units;
  for (size_t i = 0; i < pending.size(); i += per_unit)
    units.emplace_back(pending.begin() + i,
                       pending.begin() + std::min(pending.size(), i + per_unit));
  const std::string prelude = cpu_codegen_prelude();
  std::vector<std::string> library_paths(units.size());
  std::vector<std::string> errors(units.size());
  Progress progress(options.progress, "kora compile: kernels", static_cast<int64_t>(units.size()),
                    "libraries", options.terminal);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mutex;
  auto compile = [&](const std::vector<Emitted*>& unit) {
    std::string source = prelude;
    for (const Emitted* e : unit) source += "\n" + e->source;
    return compile_shared(source, options.compile).library->path();
  };
  auto worker = [&]() {
    for (size_t u; (u = next++) < units.size();) {
      try {
        library_paths[u] = compile(units[u]);
      } catch (const Error& unit_error) {
        // Find the kernels that fail; the rest are compiled without them.
        std::vector<Emitted*> good;
        for (Emitted* e : units[u]) {
          try {
            compile({e});
            good.push_back(e);
          } catch (const Error& err) {
            std::lock_guard<std::mutex> lock(mutex);
            errors[u] +=
                "kernel " + e->kernel.symbol + " (" + kernel_name(graph, dag, e->candidate) +
                ") did not compile; using " +
                (onednn_supports(graph, dag, e->candidate) ? "oneDNN" : "the interpreter") + ": " +
                std::string(err.what()).substr(0, 300) + "\n";
            e->kernel.impl = e->kernel.schedule =
                onednn_supports(graph, dag, e->candidate) ? "onednn" : "interpreter";
            if (options.bf16 && e->kernel.impl == "onednn") e->kernel.schedule += kBf16;
          }
        }
        units[u] = good;
        if (!good.empty()) library_paths[u] = compile(good);
      }
      std::lock_guard<std::mutex> lock(mutex);
      progress.update(++done);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::min<int>(cores, static_cast<int>(units.size())); ++i)
    threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  progress.finish();
  for (size_t u = 0; u < units.size(); ++u) {
    if (!errors[u].empty() && options.progress) *options.progress << errors[u];
    if (units[u].empty()) continue;
    const std::string name = "kernels_" + std::to_string(manifest.libraries.size()) + ".so";
    fs::copy_file(library_paths[u], tmp / name);
    for (Emitted* e : units[u]) e->kernel.library = static_cast<int>(manifest.libraries.size());
    manifest.libraries.push_back(name);
  }
}

// Layout assignment. oneDNN convolutions usually run fastest on their native blocked
// layouts (onednn_native_layouts; the profile measures them so, kOnednnNative), and elementwise
// kernels run on any layout (layout_agnostic). Tensors joined by elementwise kernels form
// a group; a group of arena tensors whose every other writer and reader is a oneDNN
// convolution wanting the same layout for it is stored in that layout, so the reorders
// to and from plain between those kernels disappear. When the solver chose the blocked
// tensors and native kernels (`decided`, OrchestrationResult::layouts), only those are
// blocked (and only where every user can take them, after fallbacks); otherwise (greedy,
// unfused, unmeasured) every group that can be, except at kernels measured slower native
// than plain; a convolution the solver gave channels-last sides where oneDNN picks
// others runs its channels-last alternative (onednn_channels_last_layouts), and generated
// kernels on layout views take the sides they were generated for (Emitted::views). bf16:
// the native layouts are bfloat16 ones, which generated code reads and writes through its
// views only (no elementwise kernel joins a group). Returns how many tensors are blocked.
int64_t assign_layouts(const PrimGraph& graph, const KernelDag& dag,
                       const std::vector<Emitted>& emitted,
                       const std::map<std::string, std::string>* decided, bool bf16, Manifest& m) {
  std::vector<TensorLayouts> native(emitted.size());
  std::vector<bool> agnostic(emitted.size());
  std::map<std::string, std::vector<size_t>> users;  // writers and readers
  std::map<std::string, std::string> group;          // tensor -> its group's first tensor
  std::function<std::string(const std::string&)> find = [&](const std::string& t) {
    auto it = group.find(t);
    if (it == group.end() || it->second == t) return t;
    return it->second = find(it->second);
  };
  for (size_t i = 0; i < emitted.size(); ++i) {
    const ManifestKernel& k = emitted[i].kernel;
    // A Winograd convolution reads and writes its own layouts, which no other kernel
    // shares: its tensors stay plain (the solver costs it so).
    if (k.impl == "onednn" && emitted[i].native_ok && k.schedule != kOnednnWinograd) {
      native[i] = onednn_native_layouts(graph, dag, emitted[i].candidate, bf16);
      // The channels-last alternative, where the solver stored a side so.
      bool channels_last = false;
      if (decided)
        for (const auto& [t, layout] : native[i]) {
          const auto it = decided->find(t);
          channels_last =
              channels_last || (it != decided->end() && it->second != layout &&
                                is_channels_last(it->second, graph.value(t).shape.size()));
        }
      if (channels_last)
        native[i] = onednn_channels_last_layouts(graph, dag, emitted[i].candidate, bf16);
    }
    if (k.impl == "generated") native[i] = emitted[i].views;
    agnostic[i] =
        !bf16 && k.impl == "generated" && layout_agnostic(graph, dag, emitted[i].candidate);
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) {
        users[t].push_back(i);
        if (agnostic[i]) group[find(t)] = find(k.writes.at(0));
      }
  }
  // Per group: the layout every oneDNN user wants, or "" when some user cannot take one.
  std::map<std::string, std::optional<std::string>> layout;
  for (const auto& [t, kernels] : users) {
    std::optional<std::string>& want = layout[find(t)];
    const ManifestTensor& tensor = m.tensors.at(t);
    bool ok = tensor.storage == Storage::kArena && !(want && want->empty());
    if (decided) {  // only what the solver chose, as it chose it
      auto it = decided->find(t);
      ok = ok && it != decided->end() && (!want || *want == it->second);
      if (ok) want = it->second;
    }
    for (size_t i : kernels) {
      if (!ok || agnostic[i]) continue;
      auto it = native[i].find(t);
      ok = it != native[i].end() && (!want || *want == it->second);
      if (ok) want = it->second;
    }
    if (!ok) want = std::string();
  }
  int64_t blocked = 0;
  for (const auto& [t, kernels] : users) {
    const std::optional<std::string>& want = layout[find(t)];
    if (!want || want->empty()) continue;  // no oneDNN user, or one that cannot
    m.tensors.at(t).layout = *want;
    ++blocked;
  }
  return blocked;
}

// The CPU target: generated C++ libraries, oneDNN, the interpreter, blocked layouts.
class CpuBackend : public ArtifactBackend {
 public:
  CpuBackend(const ProfileDb* db, const ArtifactOptions& options, const OrchestrationResult& plan)
      : db_(db), options_(options), plan_(plan) {}
  void describe(Manifest& m) const override {
    m.target = "cpu";
    m.device = options_.device;
    m.threads = options_.threads > 0 ? options_.threads
                                     : static_cast<int>(std::thread::hardware_concurrency());
  }
  void implement(const PrimGraph& graph, const KernelDag& dag, int index,
                 const ChosenKernel& chosen, Emitted& e) override {
    choose_implementation(graph, dag, db_, options_, index, chosen,
                          plan_.layouts_decided ? &plan_.layouts : nullptr, e);
  }
  void compile(const PrimGraph& graph, const KernelDag& dag, std::vector<Emitted>& emitted,
               const fs::path& tmp, Manifest& m) override {
    compile_kernels(graph, dag, emitted, options_, tmp, m);
  }
  int64_t assign_layouts(const PrimGraph& graph, const KernelDag& dag,
                         const std::vector<Emitted>& emitted, Manifest& m) override {
    return kora::assign_layouts(graph, dag, emitted,
                                plan_.layouts_decided ? &plan_.layouts : nullptr, options_.bf16, m);
  }
  void finish(const PrimGraph& graph, Emitted& e, int index, ArtifactSummary& summary) override {
    ManifestKernel& k = e.kernel;
    if (k.impl != "generated") k.graph = kernel_graph(graph, e.candidate, k, index);
    ++(k.impl == "generated" ? summary.generated
       : k.impl == "onednn"  ? summary.onednn
                             : summary.interpreter);
  }

 private:
  const ProfileDb* db_;
  const ArtifactOptions& options_;
  const OrchestrationResult& plan_;
};

}  // namespace

ArtifactSummary write_cpu_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                   const ProfileDb* db, const std::string& dir_name,
                                   const ArtifactOptions& options) {
  CpuBackend backend(db, options, plan);
  return write_artifact_with(graph, plan, dir_name, backend);
}

}  // namespace kora
