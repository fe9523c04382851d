// The profiling driver (src/cpu/profile.h): a primitive graph in; its unique
// candidate kernels, each implementation checked against the interpreter and measured,
// in the profile database out. In named steps: unknown_jobs (the candidates enumerated
// exactly as orchestrate() does, one job per canonical signature the database does not
// know for the fingerprint), first_round, schedule_search (unless exhaustive),
// warn_if_busy. A round has four stages:
//   generate   sources per schedule; oneDNN where onednn_supports() (built only when
//              measured: it holds reordered weights); for a convolution with native
//              layouts also onednn:native (no reorders: its cost between two such
//              kernels) and onednn:blocked (the same primitive reordering at the
//              boundary); plug-ins (extra_kernels). A kernel the database knows but for
//              the native records gets just those.
//   compile    kernels_per_unit (32) per translation unit with the prelude once, as many
//              compilers at once as cores; a unit that fails is compiled again kernel by
//              kernel, so one bad kernel fails alone (the kernel cache remembers it).
//   reference  the interpreter runs the whole graph once on random inputs; those values
//              are every kernel's inputs and expected outputs (reference_values).
//   check and measure  one job at a time: each implementation runs once on outputs
//              poisoned with NaN bytes and is compared with the reference (compare;
//              an output that cancels to about zero within the rounding noise the
//              interpreter shows under perturbed inputs, perturbed_outputs); a
//              mismatch, an exception or a compile error is a failed record with the
//              reason. Working ones are measured over rotating buffers (make_buffers);
//              when none works the interpreter kernel is measured, so every kernel has a
//              cost. Records are stored every 2 s, so an interrupted run keeps them.
//              Each is watched: other processes seen (src/cpu/machine_load.h) or the
//              speed probe slowed before and after (src/cpu/speed_probe.h) make it
//              measured again or stored as suspect.
// Implementations whose generated code is the same (different candidates often are: a
// reshape more or less, repeated layers) are compiled and measured once, checked for each.
#include "cpu/profile.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/compare.h"
#include "base/file_lock.h"
#include "base/fnv_hash.h"
#include "base/interrupt.h"
#include "base/progress.h"
#include "cpu/backend.h"
#include "cpu/codegen.h"
#include "cpu/library.h"
#include "cpu/machine_load.h"
#include "cpu/speed_probe.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

using KernelFn = void (*)(const void* const*, void* const*);

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One way to compute a kernel.
struct Implementation {
  std::string schedule;
  // Generated code: its source until compiled, then the function.
  std::string symbol, source;
  // Generated code: the hash of its code (code_key()); 0 for library kernels.
  uint64_t code = 0;
  std::shared_ptr<SharedLibrary> library;
  KernelFn fn = nullptr;
  // Library kernels (oneDNN, interpreter); `make` builds the object when the kernel is
  // measured (a oneDNN kernel holds its reordered weights, too much to keep for all).
  std::unique_ptr<CpuLibraryKernel> object;
  // More objects made by `make` (Buffers::objects), each with its own reordered weights
  // and reorder buffers: the measurement rotates through them with the buffer copies (a
  // running plan reads a kernel's weights from memory where the model's do not fit the
  // cache: float32 Inception-v3's last matmul 0.045 ms alone on one object, 0.16-0.18 in
  // plan; its 25 MB Winograd convolutions 0.12 and 0.45).
  std::vector<std::unique_ptr<CpuLibraryKernel>> more_objects;
  std::function<std::unique_ptr<CpuLibraryKernel>()> make;
  std::string error;  // non-empty: failed

  // On buffer copy `copy`, a library kernel with its object and scratchpad for it.
  void run(size_t copy, const void* const* in, void* const* out) const {
    if (fn) {
      fn(in, out);
      return;
    }
    const size_t k = copy % (more_objects.size() + 1);
    select_onednn_scratchpad(static_cast<int>(copy));
    (k == 0 ? object : more_objects[k - 1])->run(in, out);
    select_onednn_scratchpad(0);
  }
  // On plain tensors, for the check against the interpreter (a oneDNN kernel measured
  // in its native layouts reorders around the same primitive).
  void run_plain(const void* const* in, void* const* out) const {
    if (fn)
      fn(in, out);
    else
      object->run_plain(in, out);
  }
};

// A unique kernel to profile: where it was first seen, its implementations not yet
// measured, its schedule space and what was measured so far.
struct Job {
  const KernelDag* dag = nullptr;
  const Candidate* candidate = nullptr;
  std::vector<Implementation> impls;
  std::vector<CpuSchedule> schedules;  // generated code's space (empty: not generated)
  std::string default_schedule;
  double default_ms = -1;  // the default schedule's median, when it worked
  double best_ms = 1e300;  // the fastest working implementation's
  // A oneDNN convolution's native layouts: measured as schedule kOnednnNative too; its
  // channels-last alternative as kOnednnChannelsLast.
  TensorLayouts native_layouts, channels_last;
  // Known to the database but for library schedules added since it was measured: only
  // those are measured (missing_native: kOnednnNative and kOnednnBlocked;
  // missing_channels_last: kOnednnChannelsLast; missing_winograd: kOnednnWinograd).
  bool missing_native = false, missing_channels_last = false, missing_winograd = false;
  bool fill_in() const { return missing_native || missing_channels_last || missing_winograd; }
  // Known, its schedule search pending (ProfileOptions::defer_search): only the schedule
  // search measures it (default_ms and best_ms from the database).
  bool search_pending = false;
  // bf16: generated code's and the interpreter's records taken from the float32 device
  // (they compute the same there); only the oneDNN kernels are measured, in bf16.
  bool library_only = false;
};

// An error in one line: its first line, and the compiler's first "error:" line if any.
std::string brief(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  const size_t e = text.find("error:", line.size());
  if (e != std::string::npos) {
    const size_t end = text.find('\n', e);
    line += " " + text.substr(e, end == std::string::npos ? std::string::npos : end - e);
  }
  return line;
}

// The kernel's tensors in buffer sets: activations (inputs and outputs) allocated for as
// many sets as overflow the cache, constants (with their values) `objects` times; set k
// reads the activations of set k % (their copies) and the constants k % objects.
struct Buffers {
  std::vector<std::vector<Tensor>> in, out;  // [copy][tensor]
  std::vector<std::vector<const void*>> in_ptrs;
  std::vector<std::vector<void*>> out_ptrs;
  // How many copies of the constants there are, and how many objects a library kernel is
  // built as (Implementation::more_objects): each holds its own reordered weights and
  // reorder buffers.
  size_t objects = 1;
};

// A kernel's copies of its constants (and a library kernel's objects) hold at most this
// many bytes of them together (at least two copies, whatever their size).
constexpr int64_t kObjectConstantBytes = int64_t{512} << 20;
// A kernel's constants (weights), where they outweigh its activations, rotate through
// copies of at least this many bytes together (as the kernel holds them: bfloat16 under
// bf16), at most 32 of them: a running plan reads them from memory once its model's
// weights overflow the last-level cache, and finds its activations where their producer
// just wrote them. 12 of DeiT-S's bf16 MLP matmuls chained alone (28 MB of weights) ran
// 1.3x as slow as one of them repeated, 4 (9 MB) 1.1x, on a Xeon whose L3 reads 300 MB
// but is shared with other machines; measured with the weights rotating with the 8
// activation copies (9 MB), such a matmul ran 1.6-2x its measured time in plan.
constexpr int64_t kConstantRotationBytes = int64_t{64} << 20;
constexpr int kMaxConstantCopies = 32;
// An output's distance from the interpreter's may be, beyond the tolerance's share of it,
// this many times what rounding-sized changes of the kernel's inputs move it by
// (perturbed_outputs): rounding inside the kernel moves it as much.
constexpr double kNoiseTimes = 8;

// `single`: one copy (a check, not a measurement). `bf16`: the library kernels measured
// hold their weights in bfloat16, half the constants' bytes.
Buffers make_buffers(const PrimGraph& graph, const std::map<std::string, Tensor>& values,
                     const std::vector<std::string>& reads, const std::vector<std::string>& writes,
                     bool single, bool bf16) {
  int64_t bytes = 0, constant_bytes = 0;
  for (const std::string& t : reads)
    if (graph.constant(t))
      constant_bytes += static_cast<int64_t>(graph.constant(t)->nbytes());
    else
      bytes += static_cast<int64_t>(values.at(t).nbytes());
  for (const std::string& t : writes)
    bytes += numel(graph.value(t).shape) * static_cast<int64_t>(dtype_size(graph.value(t).dtype));
  // Enough copies of the activations that rotating through them overflows a 32 MiB
  // last-level cache, so a kernel does not find its inputs there unless they are small;
  // at most 8. Constants at least as large as the activations rotate apart, through
  // `objects` copies of kConstantRotationBytes together (a library kernel's object holds
  // its reorder buffers too, so smaller ones rotate with the activations); the buffer
  // sets are as many as the larger count.
  const int64_t cache_bytes = int64_t{32} << 20;
  const int activation_copies = single
                                    ? 1
                                    : static_cast<int>(std::clamp<int64_t>(
                                          bytes > 0 ? (cache_bytes + bytes - 1) / bytes : 1, 2, 8));
  Buffers b;
  const int64_t held = bf16 ? std::max<int64_t>(constant_bytes / 2, 1) : constant_bytes;
  if (single || constant_bytes == 0)
    b.objects = 1;
  else if (constant_bytes < bytes)
    b.objects = static_cast<size_t>(
        std::clamp<int64_t>(kObjectConstantBytes / constant_bytes, 2, activation_copies));
  else
    b.objects = static_cast<size_t>(std::clamp<int64_t>(
        std::min((kConstantRotationBytes + held - 1) / held, kObjectConstantBytes / constant_bytes),
        2, kMaxConstantCopies));
  const int copies = std::max(activation_copies, static_cast<int>(b.objects));
  b.in.resize(copies);
  b.out.resize(copies);
  for (int k = 0; k < copies; ++k) {
    const size_t shared_activations = static_cast<size_t>(k % activation_copies);
    for (size_t i = 0; i < reads.size(); ++i) {
      const Tensor* constant = graph.constant(reads[i]);
      const Tensor& v = constant ? *constant : values.at(reads[i]);
      if (constant && static_cast<size_t>(k) >= b.objects)
        b.in[k].push_back(b.in[static_cast<size_t>(k) % b.objects][i]);
      else if (!constant && k >= activation_copies)
        b.in[k].push_back(b.in[shared_activations][i]);
      else
        b.in[k].push_back(k == 0 ? v : Tensor(v.dtype(), v.shape(), v.bytes(), v.nbytes()));
    }
    for (size_t o = 0; o < writes.size(); ++o)
      if (k >= activation_copies)
        b.out[k].push_back(b.out[shared_activations][o]);
      else
        b.out[k].emplace_back(graph.value(writes[o]).dtype, graph.value(writes[o]).shape);
  }
  for (int k = 0; k < copies; ++k) {
    b.in_ptrs.emplace_back();
    b.out_ptrs.emplace_back();
    for (const Tensor& t : b.in[k]) b.in_ptrs.back().push_back(t.bytes());
    for (Tensor& t : b.out[k]) b.out_ptrs.back().push_back(t.mutable_bytes());
  }
  return b;
}

// Every tensor's value on random graph inputs (integers 0/1, valid indices into any
// axis), computed by the interpreter: the kernels' inputs and reference outputs. Kernels
// so see realistic data (a variance is not negative: no NaN from sqrt of noise).
std::map<std::string, Tensor> reference_values(const PrimGraph& graph) {
  std::map<std::string, Tensor> values;
  std::mt19937_64 rng(0x6b6f7261);
  for (const std::string& name : graph.inputs)
    values[name] = random_tensor(graph.value(name).dtype, graph.value(name).shape, rng, 1);
  for (const Primitive& p : graph.prims) {
    std::vector<const Tensor*> args;
    for (const std::string& t : p.inputs)
      args.push_back(graph.constant(t) ? graph.constant(t) : &values.at(t));
    std::vector<Tensor> results = run_primitive(graph, p, args);
    for (size_t o = 0; o < results.size(); ++o) values[p.outputs[o]] = std::move(results[o]);
  }
  return values;
}

// Empty when `got` matches `want`: floats by the correctness rule of src/base/compare.h
// (relative L2 error within `tolerance`, non-finite values where the interpreter has them),
// other dtypes exactly.
std::string compare(const std::string& name, const Tensor& got, const Tensor& want,
                    double tolerance) {
  if (!is_floating(want.dtype())) {
    if (std::memcmp(got.bytes(), want.bytes(), want.nbytes()) != 0)
      return "output '" + name + "' differs from the interpreter";
    return "";
  }
  ElementComparison c;
  for (int64_t i = 0; i < want.numel() && !c.mismatched(); ++i)
    c.add(i, got.double_at(i), want.double_at(i));
  return comparison_failure(c, tolerance, "output '" + name + "'", "interpreter");
}

// The kernel's outputs (in kernel_writes' order) as the interpreter kernel computes them
// from its inputs' reference values with each floating element of the activations scaled by
// 1 + or - 2^-20 (a seeded random sign), a change of the inputs a little above rounding's:
// how far rounding inside a kernel may move each output. A well-conditioned output moves by
// about 2^-20 of itself; one that cancels to about zero (a mean of LayerNorm outputs whose
// weights are 1 and biases 0) by as much as it is, and an implementation's rounding there is
// no wrong result.
std::vector<Tensor> perturbed_outputs(const PrimGraph& graph, const KernelDag& d,
                                      const Candidate& c,
                                      const std::map<std::string, Tensor>& values) {
  constexpr double kChange = 1.0 / (1 << 20);
  std::mt19937_64 rng(20);
  const std::vector<std::string> reads = kernel_reads(graph, d, c);
  std::vector<Tensor> in;  // its buffers stay where they are as the vector grows
  std::vector<const void*> in_ptrs;
  for (const std::string& t : reads) {
    if (graph.constant(t)) {  // the interpreter kernel uses the graph's constants in place
      in_ptrs.push_back(nullptr);
      continue;
    }
    const Tensor& v = values.at(t);
    in.emplace_back(v.dtype(), v.shape(), v.bytes(), v.nbytes());
    if (is_floating(v.dtype()))
      for (int64_t i = 0; i < v.numel(); ++i)
        set_element(in.back(), i, v.double_at(i) * (rng() & 1 ? 1 + kChange : 1 - kChange));
    in_ptrs.push_back(in.back().bytes());
  }
  std::vector<Tensor> out;
  std::vector<void*> out_ptrs;
  for (const std::string& t : kernel_writes(graph, d, c)) {
    out.emplace_back(graph.value(t).dtype, graph.value(t).shape);
    out_ptrs.push_back(out.back().mutable_bytes());
  }
  make_interpreter_kernel(graph, d, c)->run(in_ptrs.data(), out_ptrs.data());
  return out;
}

// The L2 norm of `a - b` (of `a` without `b`) over the elements where both are finite.
double l2(const Tensor& a, const Tensor* b = nullptr) {
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.double_at(i) - (b ? b->double_at(i) : 0);
    if (std::isfinite(d)) sum += d * d;
  }
  return std::sqrt(sum);
}

// Fills the output buffers with a byte pattern (NaN for floats) so that elements a
// kernel forgets to write are caught.
void poison(std::vector<Tensor>& outs) {
  for (Tensor& t : outs) std::memset(t.mutable_bytes(), 0xff, t.nbytes());
}

// What makes a generated kernel compute and cost what it does: its source without the
// comments (tensor names) and with its symbol blanked, and which inputs are constants
// (measuring keeps those in one buffer). Equal keys: one compilation, one measurement.
uint64_t code_key(const PrimGraph& graph, const GeneratedKernel& k) {
  FnvHash hash;
  std::istringstream in(k.source);
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;
    if (const size_t at = line.find(k.symbol); at != std::string::npos)
      line.replace(at, k.symbol.size(), "@");
    hash.str(line);
  }
  for (const std::string& t : k.reads) hash.u64(graph.constant(t) ? 1 : 0);
  return hash.h;
}

// Compiles the generated implementations of `jobs`, kernels_per_unit per translation
// unit, `jobs` compilers at once; an implementation whose code another one pending has
// takes that one's function. A unit that fails is compiled again kernel by kernel, so one
// bad kernel fails alone.
void compile_all(std::vector<Job>& jobs, const ProfileOptions& options, ProfileSummary& summary) {
  std::vector<Implementation*> pending;
  std::vector<std::pair<Implementation*, const Implementation*>> same;  // (copy, compiled)
  std::map<uint64_t, const Implementation*> by_code;
  for (Job& job : jobs)
    for (Implementation& impl : job.impls) {
      if (impl.source.empty() || !impl.error.empty() || impl.fn) continue;
      if (auto [it, fresh] = by_code.emplace(impl.code, &impl); !fresh && impl.code != 0) {
        same.emplace_back(&impl, it->second);
        continue;
      }
      pending.push_back(&impl);
    }
  summary.same_code += static_cast<int64_t>(same.size());
  if (pending.empty()) return;
  const int jobs_at_once = options.compile_jobs > 0
                               ? options.compile_jobs
                               : static_cast<int>(std::thread::hardware_concurrency());
  // kernels_per_unit per unit, fewer when that would leave a compiler without a unit.
  const size_t per_unit = std::max<size_t>(
      1, std::min<size_t>(std::max(1, options.kernels_per_unit),
                          (pending.size() + jobs_at_once - 1) / std::max(1, jobs_at_once)));
  std::vector<std::vector<Implementation*>> units;
  for (size_t i = 0; i < pending.size(); i += per_unit)
    units.emplace_back(pending.begin() + i,
                       pending.begin() + std::min(pending.size(), i + per_unit));
  const std::string prelude = cpu_codegen_prelude();
  auto compile_unit = [&](const std::vector<Implementation*>& unit, bool* cached) {
    std::string source = prelude;
    for (const Implementation* impl : unit) source += "\n" + impl->source;
    CompileResult r = compile_shared(source, options.compile);
    if (cached) *cached = r.cached;
    for (Implementation* impl : unit) {
      impl->library = r.library;
      impl->fn = reinterpret_cast<KernelFn>(r.library->symbol(impl->symbol));
    }
  };
  const int workers =
      std::max(1, std::min<int>(options.compile_jobs > 0
                                    ? options.compile_jobs
                                    : static_cast<int>(std::thread::hardware_concurrency()),
                                static_cast<int>(units.size())));
  Progress progress(options.progress, "kora profile: compile", static_cast<int64_t>(units.size()),
                    "units", options.terminal);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0}, cached_units{0};
  std::mutex mutex;  // progress output
  auto worker = [&]() {
    for (size_t u; !interrupt_requested() && (u = next++) < units.size();) {
      bool cached = false;
      try {
        compile_unit(units[u], &cached);
      } catch (const Error& unit_error) {
        for (Implementation* impl : units[u]) {
          try {
            compile_unit({impl}, nullptr);
          } catch (const Error& e) {
            impl->error = std::string("compile: ") + e.what();
          }
        }
      }
      if (cached) ++cached_units;
      const int64_t d = ++done;
      std::lock_guard<std::mutex> lock(mutex);
      progress.update(d);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  progress.finish();
  throw_if_interrupted("compiling candidate kernels");
  for (auto [copy, compiled] : same) {
    copy->library = compiled->library;
    copy->fn = compiled->fn;
    if (!compiled->error.empty()) copy->error = compiled->error;
  }
  summary.units += static_cast<int64_t>(units.size());
  summary.units_cached += cached_units;
}

}  // namespace

namespace {

// The generated implementation of `job` with schedule number `s` of `schedules`.
Implementation generated(const PrimGraph& graph, const Job& job,
                         const std::vector<CpuSchedule>& schedules, size_t s) {
  Implementation impl;
  impl.schedule = "gen:" + schedules[s].key();
  impl.symbol = "kora_" + signature_hex(job.candidate->signature) + "_" + std::to_string(s);
  try {
    GeneratedKernel k =
        generate_cpu_kernel(graph, *job.dag, *job.candidate, impl.symbol, schedules[s]);
    impl.code = code_key(graph, k);
    impl.source = std::move(k.source);
  } catch (const Error& e) {
    impl.error = std::string("generate: ") + e.what();
  }
  return impl;
}

// Checks and measures the implementations the jobs hold, one job at a time, storing
// records every 2 s; then drops the implementations. With `fallback`, a job
// none of whose implementations works measures the interpreter kernel. Generated code
// measured before (the same code_key(), for another kernel or schedule) is checked, not
// measured again: it takes the earlier measurement.
class Measurer {
 public:
  Measurer(const PrimGraph& graph, ProfileDb& db, const ProfileOptions& options,
           ProfileSummary& summary)
      : graph_(graph), db_(db), options_(options), summary_(summary) {}

  // Measures the jobs in order; with max_seconds > 0, stops once that long has passed
  // and returns how many were measured. The schedule search (fallback false) drops a
  // schedule whose first call takes twice the kernel's best so far.
  size_t run(std::vector<Job*>& jobs, const std::string& label, bool fallback,
             double max_seconds = 0) {
    if (jobs.empty()) return 0;
    const auto start = std::chrono::steady_clock::now();
    if (values_->empty()) *values_ = reference_values(graph_);
    Progress progress(options_.progress, "kora profile: " + label,
                      static_cast<int64_t>(jobs.size()), "kernels", options_.terminal);
    auto last_store = std::chrono::steady_clock::now();
    size_t j = 0;
    while (j < jobs.size()) {
      if (interrupt_requested()) {  // keep what was measured, then stop
        db_.put(pending_);
        pending_.clear();
        throw_if_interrupted("measuring candidate kernels");
      }
      const int runnable = runnable_tasks();  // kora's own: its threads at most
      if (runnable > 0) {
        ++summary_.load_looks;
        summary_.busy_looks += runnable > omp_get_max_threads();
      }
      measure_job(*jobs[j], fallback);
      ++j;
      const bool out_of_time = max_seconds > 0 && seconds_since(start) > max_seconds;
      if (!options_.check_only &&
          (seconds_since(last_store) > 2 || j == jobs.size() || out_of_time)) {
        db_.put(pending_);
        pending_.clear();
        last_store = std::chrono::steady_clock::now();
      }
      progress.update(static_cast<int64_t>(j));
      if (out_of_time) break;
    }
    progress.finish();
    return j;
  }

 private:
  // Other work seen while `timed` measured: the CPU time other processes took in the
  // window (LoadWatch; it needs tens of milliseconds to see anything), or more tasks
  // runnable than kora's threads both at a glance before and one after (a single glance is
  // too easily a passing kernel thread). Then it is measured again once the machine is
  // quiet (twice at most, waiting a second at most each time, options.quiet_budget_seconds
  // in all); still seen, the record is marked suspect (ProfileRecord::error, not failed).
  // With no other work seen, the speed probe slowed both before and after (a tenant on
  // these cores that /proc cannot see, a power limit) marks it suspect too, not waited
  // for: on a shared host such spells can last most of a profile.
  Measurement watched(const std::function<Measurement()>& timed, ProfileRecord& r) {
    const int threads = omp_get_max_threads();
    // The probe's fastest first, its threads spun up; then its lesser ratio before and after.
    if (probe_.fastest_ms() <= 0)
      for (int i = 0; i < 5; ++i) probe_.sample();
    double slowed = 1;
    auto measure_watched = [&](bool* seen) {
      LoadWatch watch;
      const bool before = runnable_tasks() > threads;
      const double probe_before = probe_.sample();
      Measurement m = timed();
      slowed = std::min(probe_before, probe_.sample());
      *seen = watch.busy() || (before && runnable_tasks() > threads);
      return m;
    };
    bool seen = false;
    Measurement m = measure_watched(&seen);
    for (int again = 0; seen && again < 2 && quiet_budget_ > 0; ++again) {
      const auto wait = std::chrono::steady_clock::now();
      const bool quiet = wait_until_quiet(std::min(1.0, quiet_budget_));
      quiet_budget_ -= seconds_since(wait);
      if (!quiet) break;
      m = measure_watched(&seen);
      ++summary_.remeasured;
    }
    if (seen) {
      r.error = "suspect: other processes used the CPU while it was measured";
      ++summary_.suspect;
    } else if (probe_.slowed(slowed)) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2f", slowed);
      r.error = std::string(
                    "suspect: the machine ran slowed while it was measured (a reference "
                    "GEMM took ") +
                ratio + "x its fastest time before and after; no other process in sight)";
      ++summary_.suspect;
      ++summary_.slowed;
    }
    return m;
  }

  MeasureOptions measure_options(const Job& job, bool fallback) const {
    MeasureOptions m = options_.measure;
    if (!fallback && job.best_ms < 1e300) m.abandon_ms = 2 * job.best_ms;
    return m;
  }

  void measure_job(Job& job, bool fallback) {
    const KernelDag& d = *job.dag;
    const Candidate& c = *job.candidate;
    const std::vector<std::string> reads = kernel_reads(graph_, d, c);
    const std::vector<std::string> writes = kernel_writes(graph_, d, c);
    Buffers buffers =
        make_buffers(graph_, *values_, reads, writes, options_.check_only, options_.bf16);
    bool any_ok = false;
    int emittable = 0;  // check_only: implementations an artifact may emit
    auto record = [&](Implementation& impl) {
      if (options_.check_only) {  // nothing measured, nothing stored: only what failed
        // What an artifact emits (plain oneDNN, generated code), not plug-ins.
        const bool emitted = impl.schedule == "onednn" || impl.schedule.rfind("gen:", 0) == 0;
        emittable += emitted;
        if (impl.error.empty()) {
          any_ok = any_ok || emitted;
          return;
        }
        summary_.failures.push_back(
            {c.signature, impl.schedule, kernel_name(graph_, d, c), impl.error});
        return;
      }
      ProfileRecord r;
      r.device = summary_.device;
      r.signature = c.signature;
      r.schedule = impl.schedule;
      if (impl.error.empty()) {
        try {
          auto known = impl.code ? measured_.find(impl.code) : measured_.end();
          auto timed = [&]() {
            return measure(
                [&](int i) {
                  const size_t k = static_cast<size_t>(i) % buffers.in_ptrs.size();
                  impl.run(k, buffers.in_ptrs[k].data(), buffers.out_ptrs[k].data());
                },
                measure_options(job, fallback));
          };
          Measurement m;
          if (known != measured_.end()) {
            m = known->second;
          } else {
            m = watched(timed, r);
          }
          if (impl.code && m.samples > 1) measured_.emplace(impl.code, m);  // not abandoned
          r.median_ms = m.median_ms;
          r.spread_ms = m.spread_ms;
          r.samples = m.samples;
          ++summary_.implementations;
          any_ok = true;
          job.best_ms = std::min(job.best_ms, m.median_ms);
          if (impl.schedule == job.default_schedule) job.default_ms = m.median_ms;
        } catch (const Error& e) {
          impl.error = std::string("run: ") + e.what();
        }
      }
      if (!impl.error.empty()) {
        r.failed = true;
        r.error = impl.error;
        summary_.failures.push_back(
            {c.signature, impl.schedule, kernel_name(graph_, d, c), impl.error});
        if (options_.progress && !options_.terminal)
          *options_.progress << "kora profile: " << impl.schedule << " of kernel "
                             << signature_hex(c.signature) << " (" << kernel_name(graph_, d, c)
                             << ") failed: " << brief(impl.error) << std::endl;
      }
      pending_.push_back(std::move(r));
    };
    std::optional<std::vector<Tensor>> perturbed;  // computed at the first failure
    for (Implementation& impl : job.impls) {
      if (impl.error.empty() && impl.make) {
        try {
          impl.object = impl.make();
          for (size_t k = 1; k < buffers.objects; ++k) impl.more_objects.push_back(impl.make());
        } catch (const Error& e) {
          impl.error = impl.schedule + ": " + e.what();
        }
      }
      if (impl.error.empty()) {
        try {
          poison(buffers.out[0]);
          impl.run_plain(buffers.in_ptrs[0].data(), buffers.out_ptrs[0].data());
          for (size_t o = 0; o < writes.size() && impl.error.empty(); ++o) {
            const Tensor& want = values_->at(writes[o]);
            impl.error = compare(writes[o], buffers.out[0][o], want, options_.tolerance);
            if (impl.error.empty() || !is_floating(want.dtype())) continue;
            // Judged by the rounding noise too: its distance from the reference may be the
            // tolerance's share of the reference plus kNoiseTimes how far rounding-sized
            // changes of the inputs move the output (an output cancelling to about zero).
            ElementComparison finite;
            for (int64_t i = 0; i < want.numel() && !finite.mismatched(); ++i)
              finite.add(i, buffers.out[0][o].double_at(i), want.double_at(i));
            if (finite.mismatched()) continue;
            if (!perturbed) {
              try {
                perturbed = perturbed_outputs(graph_, d, c, *values_);
              } catch (const Error&) {
                perturbed.emplace();  // judged by the tolerance alone
              }
            }
            if (perturbed->size() != writes.size()) continue;
            const double moved = l2((*perturbed)[o], &want);
            if (l2(buffers.out[0][o], &want) <= options_.tolerance * l2(want) + kNoiseTimes * moved)
              impl.error.clear();
          }
          if (!impl.error.empty()) impl.error = "wrong result: " + impl.error;
        } catch (const Error& e) {
          impl.error = std::string("run: ") + e.what();
        }
      }
      record(impl);
    }
    if (options_.check_only) {
      ++summary_.checked;  // a kernel with nothing to check is the interpreter's anyway
      if (!any_ok && emittable > 0) summary_.unusable.push_back(c.signature);
    } else if (!any_ok && fallback && !job.library_only) {  // only the interpreter computes it
      Implementation interp;
      interp.schedule = "interpreter";
      interp.object = make_interpreter_kernel(graph_, d, c);
      record(interp);
      if (any_ok) ++summary_.interpreter_only;
    }
    job.impls.clear();  // library objects, and the last reference to their libraries
  }

  const PrimGraph& graph_;
  ProfileDb& db_;
  const ProfileOptions& options_;
  ProfileSummary& summary_;
  // The reference values: computed at the first measurement, or kept from an earlier
  // profile of the graph (ProfileOptions::reference).
  std::shared_ptr<std::map<std::string, Tensor>> values_ =
      options_.reference ? options_.reference : std::make_shared<std::map<std::string, Tensor>>();
  std::map<uint64_t, Measurement> measured_;             // by code_key()
  double quiet_budget_ = options_.quiet_budget_seconds;  // waiting for quiet, left
  SpeedProbe probe_{options_.speed_probe};
  std::vector<ProfileRecord> pending_;
};

}  // namespace

namespace {

// A known kernel whose schedule search was deferred (ProfileOptions::defer_search):
// generated code with other schedules, its default measured and working, no other
// schedule recorded, and the search's rules (schedule_search) pick it.
struct PendingSearch {
  std::vector<CpuSchedule> schedules;
  std::string default_schedule;
  double default_ms = -1, best_ms = 1e300;
};
std::optional<PendingSearch> pending_search(const PrimGraph& graph, const KernelDag& dag,
                                            const Candidate& c,
                                            const std::vector<ProfileRecord>& records,
                                            const ProfileOptions& options) {
  int generated = 0;
  for (const ProfileRecord& r : records) generated += r.schedule.rfind("gen:", 0) == 0;
  if (generated != 1 || !cpu_codegen_supports(graph, dag, c)) return std::nullopt;
  PendingSearch p;
  p.schedules = cpu_schedule_space(graph, dag, c);
  if (p.schedules.size() < 2) return std::nullopt;
  p.default_schedule = "gen:" + p.schedules[0].key();
  for (const ProfileRecord& r : records) {
    if (r.failed) continue;
    p.best_ms = std::min(p.best_ms, r.median_ms);
    if (r.schedule == p.default_schedule) p.default_ms = r.median_ms;
  }
  if (p.default_ms < 0 || p.default_ms > options.search_within * p.best_ms ||
      p.best_ms < options.search_min_ms)
    return std::nullopt;
  return p;
}

// One job per unique candidate the database does not know for the device (or knows but
// for its native-layout measurements, from before they were taken; with defer_search, or
// for its deferred schedule search).
//
// bf16: a kernel the float32 device knows keeps its records of generated code and the
// interpreter (they compute the same under bf16), copied to the bf16 device; only its
// oneDNN kernels are measured, in bf16.
std::vector<Job> unknown_jobs(const PrimGraph& graph, const ModelCandidates& candidates,
                              ProfileDb& db, const ProfileOptions& options,
                              const std::string& float32_device, ProfileSummary& summary) {
  std::vector<Job> jobs;
  const std::set<uint64_t> again =
      options.remeasure_suspect ? db.suspect(summary.device) : std::set<uint64_t>{};
  for (const UniqueCandidate& u : candidates.unique) {
    const Candidate& c = *u.candidate;
    if (options.only && !options.only->count(c.signature)) {
      ++summary.not_needed;
      continue;
    }
    Job job;
    job.dag = u.sub;
    job.candidate = &c;
    job.native_layouts = onednn_native_layouts(graph, *u.sub, c, options.bf16);
    if (!job.native_layouts.empty())
      job.channels_last = onednn_channels_last_layouts(graph, *u.sub, c, options.bf16);
    if (options.check_only && db.known(summary.device, c.signature)) {
      ++summary.from_db;  // measured (so checked) before, or failed then
      continue;
    }
    if (db.known(summary.device, c.signature) && !again.count(c.signature)) {
      int native = 0;
      bool winograd = false, channels_last = false;
      const std::vector<ProfileRecord> records = db.records(summary.device, c.signature);
      for (const ProfileRecord& r : records) {
        native += r.schedule == kOnednnNative || r.schedule == kOnednnBlocked;
        channels_last = channels_last || r.schedule == kOnednnChannelsLast;
        winograd = winograd || r.schedule == kOnednnWinograd;
      }
      if (options.defer_search)
        if (std::optional<PendingSearch> p = pending_search(graph, *u.sub, c, records, options)) {
          job.schedules = std::move(p->schedules);
          job.default_schedule = p->default_schedule;
          job.default_ms = p->default_ms;
          job.best_ms = p->best_ms;
          job.search_pending = true;
          jobs.push_back(std::move(job));
          continue;
        }
      job.missing_native = !job.native_layouts.empty() && native < 2;
      job.missing_channels_last = !job.channels_last.empty() && !channels_last;
      job.missing_winograd =
          !winograd && !options.bf16 && onednn_winograd_supports(graph, *u.sub, c);
      if (!job.fill_in()) {
        ++summary.from_db;
        continue;
      }
      ++summary.library_filled;
    } else if (options.bf16 && !options.check_only) {
      std::vector<ProfileRecord> reused;
      for (ProfileRecord r : db.records(float32_device, c.signature))
        if (!is_onednn_schedule(r.schedule)) {
          r.device = summary.device;
          reused.push_back(std::move(r));
        }
      if (!reused.empty()) {
        db.put(reused);
        ++summary.reused_float32;
        job.library_only = true;
        if (job.native_layouts.empty() && !onednn_supports(graph, *u.sub, c)) {
          ++summary.from_db;
          continue;
        }
      }
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// The library kernels of a job, built when measured: oneDNN where it fits, its native
// primitive (then with reorders) where it has native layouts, the plug-ins.
void add_library_kernels(const PrimGraph& graph, const ProfileOptions& options, Job& job) {
  const KernelDag& d = *job.dag;
  const Candidate& c = *job.candidate;
  auto add = [&](const std::string& schedule,
                 std::function<std::unique_ptr<CpuLibraryKernel>()> make) {
    Implementation impl;
    impl.schedule = schedule;
    impl.make = std::move(make);
    job.impls.push_back(std::move(impl));
  };
  // bf16: the same kernels computing in bf16, stored under their float32 names (the bf16
  // device's records are all bf16).
  const std::string bf16 = options.bf16 ? kBf16 : "";
  if (!job.fill_in() && onednn_supports(graph, d, c))
    add("onednn",
        [&graph, &d, &c, bf16]() { return make_onednn_kernel(graph, d, c, {}, "onednn" + bf16); });
  // A check (ProfileOptions::check_only) runs what an artifact emits unmeasured: of
  // oneDNN, the plain primitive.
  if (!job.native_layouts.empty() && !options.check_only &&
      (!job.fill_in() || job.missing_native)) {
    add(kOnednnNative, [&graph, &d, &c, layouts = job.native_layouts, bf16]() {
      return make_onednn_kernel(graph, d, c, layouts, kOnednnNative + bf16);
    });
    add(kOnednnBlocked, [&graph, &d, &c, bf16]() {
      return make_onednn_kernel(graph, d, c, {}, kOnednnBlocked + bf16);
    });
  }
  if (!job.channels_last.empty() && !options.check_only &&
      (!job.fill_in() || job.missing_channels_last))
    add(kOnednnChannelsLast, [&graph, &d, &c, layouts = job.channels_last, bf16]() {
      return make_onednn_kernel(graph, d, c, layouts, kOnednnChannelsLast + bf16);
    });
  if (!options.check_only &&
      (job.fill_in() ? job.missing_winograd
                     : !options.bf16 && onednn_winograd_supports(graph, d, c)))
    add(kOnednnWinograd,
        [&graph, &d, &c]() { return make_onednn_kernel(graph, d, c, {}, kOnednnWinograd); });
  if (options.extra_kernels && !job.fill_in())
    for (std::unique_ptr<CpuLibraryKernel>& k : options.extra_kernels(graph, d, c)) {
      Implementation impl;
      impl.schedule = k->schedule();
      impl.object = std::move(k);
      job.impls.push_back(std::move(impl));
    }
}

// Round 1: every job's default schedule (every schedule when exhaustive) and library
// kernels, compiled, checked and measured.
void first_round(const PrimGraph& graph, std::vector<Job>& jobs, const ProfileOptions& options,
                 Measurer& measurer, ProfileSummary& summary) {
  auto stage = std::chrono::steady_clock::now();
  std::vector<Job*> all;
  for (Job& job : jobs) {
    if (job.search_pending) continue;
    all.push_back(&job);
    if (!job.fill_in() && !job.library_only &&
        cpu_codegen_supports(graph, *job.dag, *job.candidate)) {
      job.schedules = cpu_schedule_space(graph, *job.dag, *job.candidate);
      job.default_schedule = "gen:" + job.schedules[0].key();
      const size_t schedules = options.exhaustive && !options.check_only ? job.schedules.size() : 1;
      for (size_t s = 0; s < schedules; ++s)
        job.impls.push_back(generated(graph, job, job.schedules, s));
    }
    add_library_kernels(graph, options, job);
  }
  summary.generate_seconds = seconds_since(stage);
  stage = std::chrono::steady_clock::now();
  compile_all(jobs, options, summary);
  summary.compile_seconds = seconds_since(stage);
  stage = std::chrono::steady_clock::now();
  measurer.run(all, options.check_only ? "check" : "measure", true);
  if (!options.check_only) summary.measured = static_cast<int64_t>(all.size());
  summary.measure_seconds = seconds_since(stage);
}

// Round 2, the schedule search: the other schedules of the slowest kernels whose default
// schedule worked, came within `search_within` of the kernel's best implementation and
// takes long enough to matter; measuring stops after `search_max_seconds`.
void schedule_search(const PrimGraph& graph, std::vector<Job>& jobs, const ProfileOptions& options,
                     Measurer& measurer, ProfileSummary& summary) {
  auto stage = std::chrono::steady_clock::now();
  std::vector<Job*> search;
  for (Job& job : jobs) {
    if (options.defer_search && !job.search_pending) continue;
    if (job.schedules.size() < 2 || job.default_ms <= 0) continue;
    if (job.default_ms > options.search_within * job.best_ms) continue;
    if (job.best_ms < options.search_min_ms) continue;
    search.push_back(&job);
  }
  std::stable_sort(search.begin(), search.end(),
                   [](const Job* a, const Job* b) { return a->best_ms > b->best_ms; });
  if (static_cast<int>(search.size()) > options.search_max_kernels)
    search.resize(std::max(0, options.search_max_kernels));
  for (Job* job : search)
    for (size_t s = 1; s < job->schedules.size(); ++s)
      job->impls.push_back(generated(graph, *job, job->schedules, s));
  summary.searched = static_cast<int64_t>(search.size());
  summary.generate_seconds += seconds_since(stage);
  stage = std::chrono::steady_clock::now();
  compile_all(jobs, options, summary);
  summary.compile_seconds += seconds_since(stage);
  stage = std::chrono::steady_clock::now();
  const size_t searched =
      measurer.run(search, "schedule search", false, options.search_max_seconds);
  if (searched < search.size()) {
    summary.searched = static_cast<int64_t>(searched);
    if (options.progress)
      *options.progress << "kora profile: schedule search stopped after "
                        << options.search_max_seconds << " s (" << searched << " of "
                        << search.size() << " kernels)" << std::endl;
  }
  summary.measure_seconds += seconds_since(stage);
}

// SpeedProbe::kSlowed as the summaries print it ("1.15").
std::string slowed_threshold() {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", SpeedProbe::kSlowed);
  return text;
}

// Suspect records stored; more than 20% of the looks before a measurement saw other work
// running.
void warn_if_busy(const ProfileOptions& options, const ProfileSummary& summary) {
  if (options.progress && summary.suspect > summary.slowed)
    *options.progress << "kora profile: warning: " << summary.suspect - summary.slowed
                      << " implementations were measured while other processes used the CPU "
                         "and stored as suspect"
                      << std::endl;
  // Measuring on demand (options.only), the rounds stay quiet: kora compile notes the
  // chosen kernels that are suspect.
  if (options.progress && summary.slowed > 0 && !options.only)
    *options.progress << "kora profile: warning: " << summary.slowed
                      << " implementations were measured while the machine ran slowed (a "
                         "reference GEMM "
                      << slowed_threshold()
                      << "x its fastest time or more, no other process in sight: another "
                         "tenant on these cores?) and stored as suspect"
                      << std::endl;
  if (options.progress && summary.load_looks > 0 && summary.busy_looks * 5 > summary.load_looks)
    *options.progress << "kora profile: warning: other processes were running during "
                      << 100 * summary.busy_looks / summary.load_looks
                      << "% of the measurements; their times are inflated (profile on an idle "
                         "machine for plans to trust)"
                      << std::endl;
}

}  // namespace

ProfileSummary profile_model(const PrimGraph& graph, ProfileDb& db, const ProfileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  ProfileSummary summary;
  summary.device = cpu_backend_fingerprint(threads, options.compile.compiler, options.bf16);
  // One kora profile at a time per database: a second waits, then measures only what the
  // first left (and does not share the cores with it while measuring). A check measures
  // and stores nothing: it does not wait.
  std::optional<FileLock> lock;
  if (!options.check_only)
    lock.emplace(db.path() + ".lock", [&] {
      if (options.progress)
        *options.progress << "kora profile: another kora profile is measuring into " << db.path()
                          << "; waiting for it (what it measures is then reused)" << std::endl;
    });
  if (db.count(summary.device) == 0) summary.other_fingerprints = db.count("");
  ModelCandidates own;
  if (!options.enumerated) own = unique_candidates(graph, options.partition, options.candidates);
  const ModelCandidates& candidates = options.enumerated ? *options.enumerated : own;
  std::vector<Job> jobs = unknown_jobs(
      graph, candidates, db, options,
      options.bf16 ? cpu_backend_fingerprint(threads, options.compile.compiler) : "", summary);
  summary.kernels = static_cast<int64_t>(candidates.unique.size());
  summary.enumerate_seconds = seconds_since(start);
  omp_set_num_threads(threads);  // oneDNN kernels take the thread count current when built
  Measurer measurer(graph, db, options, summary);
  first_round(graph, jobs, options, measurer, summary);
  if (!options.exhaustive && !options.check_only)
    schedule_search(graph, jobs, options, measurer, summary);
  summary.total_seconds = seconds_since(start);
  if (!options.check_only) warn_if_busy(options, summary);
  return summary;
}

std::map<uint64_t, double> unexplored_schedule_costs(const PrimGraph& graph,
                                                     const ModelCandidates& candidates,
                                                     const ProfileDb& db, const std::string& device,
                                                     const ProfileOptions& options) {
  std::map<uint64_t, std::pair<double, double>> pending;  // default and best ms
  std::vector<double> gains;  // best generated / default, of the kernels searched
  const std::string default_schedule = "gen:" + CpuSchedule{}.key();
  for (const UniqueCandidate& u : candidates.unique) {
    const std::vector<ProfileRecord> records = db.records(device, u.candidate->signature);
    double default_ms = -1, generated_ms = 1e300;
    int generated = 0;
    for (const ProfileRecord& r : records)
      if (r.schedule.rfind("gen:", 0) == 0) {
        ++generated;
        if (r.failed) continue;
        generated_ms = std::min(generated_ms, r.median_ms);
        if (r.schedule == default_schedule) default_ms = r.median_ms;
      }
    if (generated > 1 && default_ms > 0 && generated_ms < 1e300)
      gains.push_back(generated_ms / default_ms);
    else if (generated == 1)
      if (std::optional<PendingSearch> p =
              pending_search(graph, *u.sub, *u.candidate, records, options))
        pending[u.candidate->signature] = {p->default_ms, p->best_ms};
  }
  // Optimistic: the gain a fifth of the searched kernels reached; before five are known,
  // half the default's time (searches gave 1.35x on average on ResNet-50, 3.3x at most).
  double gain = 0.5;
  if (gains.size() >= 5) {
    std::sort(gains.begin(), gains.end());
    gain = gains[gains.size() / 5];
  }
  std::map<uint64_t, double> costs;
  for (const auto& [signature, ms] : pending)
    costs[signature] = std::min(ms.second, ms.first * gain);
  return costs;
}

std::string format_profile_summary(const ProfileSummary& s) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << "device " << s.device << "\n";
  if (s.other_fingerprints)
    os << "the database had no measurements for this device; its " << s.other_fingerprints
       << " under other fingerprints (another machine, thread count, compiler, oneDNN or kora "
          "revision) are not reused\n";
  os << s.kernels << " unique kernels: " << s.measured << " measured now, " << s.from_db
     << " from the database, ";
  if (s.reused_float32)
    os << s.reused_float32 << " with generated code measured in float32 (its oneDNN kernels "
       << "measured in bf16), ";
  if (s.library_filled)
    os << s.library_filled << " measured only for library schedules the database lacked "
       << "(native layouts, Winograd), ";
  if (s.not_needed) os << s.not_needed << " not needed, ";
  os << s.failures.size() << " implementations failed\n";
  os << s.implementations << " implementations measured";
  if (s.interpreter_only) os << " (" << s.interpreter_only << " kernels only by the interpreter)";
  os << "; schedule search on " << s.searched << " kernels\n";
  os << "compiled " << s.units << " translation units (" << s.units_cached << " from the cache)";
  if (s.same_code) os << "; " << s.same_code << " implementations had another's code";
  os << "\n";
  if (s.busy_looks > 0)
    os << "other processes were running during " << 100 * s.busy_looks / s.load_looks
       << "% of the measurements\n";
  if (s.remeasured > 0 || s.suspect > s.slowed)
    os << s.remeasured << " implementations measured again once the machine was quiet; "
       << s.suspect - s.slowed << " stored as suspect (other processes used the CPU while "
       << "they were measured; kora compile's check on the clock decides among them)\n";
  if (s.slowed > 0)
    os << s.slowed << " of " << s.implementations << " implementations stored as suspect: "
       << "the machine ran slowed while they were measured (a reference GEMM "
       << SpeedProbe::kSlowed
       << "x its fastest time or more before and after, with no other process in sight: another "
          "tenant on "
       << "these cores, or a power limit; kora profile --suspect measures them again)\n";
  os << "time: enumerate " << s.enumerate_seconds << " s, generate " << s.generate_seconds
     << " s, compile " << s.compile_seconds << " s, measure " << s.measure_seconds << " s, total "
     << s.total_seconds << " s\n";
  for (const ProfileFailure& f : s.failures)
    os << "failed: " << f.schedule << " of kernel " << signature_hex(f.signature) << " ("
       << f.kernel << "): " << brief(f.error) << "\n";
  return os.str();
}

std::string profile_summary_json(const ProfileSummary& s) {
  nlohmann::json j;
  j["device"] = s.device;
  j["kernels"] = s.kernels;
  j["from_db"] = s.from_db;
  j["not_needed"] = s.not_needed;
  j["measured"] = s.measured;
  j["reused_float32"] = s.reused_float32;
  j["library_filled"] = s.library_filled;
  j["implementations"] = s.implementations;
  j["interpreter_only"] = s.interpreter_only;
  j["searched"] = s.searched;
  j["units"] = s.units;
  j["units_cached"] = s.units_cached;
  j["same_code"] = s.same_code;
  j["remeasured"] = s.remeasured;
  j["suspect"] = s.suspect;
  j["slowed"] = s.slowed;
  j["other_fingerprints"] = s.other_fingerprints;
  j["busy_fraction"] = s.load_looks > 0
                           ? static_cast<double>(s.busy_looks) / static_cast<double>(s.load_looks)
                           : 0.0;
  j["seconds"] = {{"enumerate", s.enumerate_seconds},
                  {"generate", s.generate_seconds},
                  {"compile", s.compile_seconds},
                  {"measure", s.measure_seconds},
                  {"total", s.total_seconds}};
  j["failures"] = nlohmann::json::array();
  for (const ProfileFailure& f : s.failures)
    j["failures"].push_back({{"signature", signature_hex(f.signature)},
                             {"schedule", f.schedule},
                             {"kernel", f.kernel},
                             {"error", f.error}});
  return j.dump(2);
}

}  // namespace kora
