// The artifact emitter, the part every target shares (src/emit/artifact_backend.h): a
// primitive graph and the orchestration's chosen kernels in; an artifact directory out:
//   manifest.json   kernels in execution order with the tensors they read and write,
//                   every tensor's dtype, shape and storage (input, weights offset,
//                   arena offset, output), inputs and outputs, strategy, predicted cost;
//   the target's kernel files (kernels_N.so on the CPU, kernels_N.cubin on CUDA);
//   weights.bin     every constant a kernel reads, 64-byte aligned (its FNV checksum in
//                   the manifest; a hard link to the same bytes where this process wrote
//                   them beside it before, as the check on the clock does per plan);
// and in the manifest each file's size and SHA-256, which the runtime checks before
// loading it.
// The backend chooses each kernel's implementation and compiles the generated ones;
// here, in order: implement, compile, place the tensors (intermediates share one arena,
// each live from the kernel writing it to its last reader, placed by
// src/emit/memory_plan.h), let the backend assign layouts, write the weights and the
// manifest. Library kernels carry their primitives as a small graph in the manifest
// (src/runtime/prim_json.h), from which the runtime rebuilds them. The directory is
// written as DIR.tmp-PID and renamed into place: a failed compile leaves no half
// artifact, and an existing artifact at the path is replaced only on success.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "emit/artifact_backend.h"
#include "emit/memory_plan.h"
#include "kora/error.h"
#include "runtime/manifest.h"
#include "runtime/sha256.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

// Each chosen kernel's reads, writes, names and cost; the backend's implementation.
std::vector<Emitted> implement_kernels(const PrimGraph& graph, const KernelDag& dag,
                                       const OrchestrationResult& plan, ArtifactBackend& backend) {
  std::vector<Emitted> emitted(plan.kernels.size());
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const ChosenKernel& chosen = plan.kernels[i];
    Emitted& e = emitted[i];
    e.candidate = make_candidate(dag, chosen.prims);
    e.candidate.signature = chosen.signature;
    e.kernel.reads = kernel_reads(graph, dag, e.candidate);
    e.kernel.writes = kernel_writes(graph, dag, e.candidate);
    e.kernel.signature = signature_hex(chosen.signature);
    e.kernel.predicted_ms = chosen.cost_ms;
    const bool scheduled = plan.kernels.front().step >= 0;
    if ((chosen.step >= 0) != scheduled || (i > 0 && chosen.step < plan.kernels[i - 1].step))
      throw Error("the plan's kernel " + std::to_string(i) +
                  " is out of its parallel schedule (steps must not decrease)");
    e.kernel.step = scheduled ? chosen.step : static_cast<int>(i);
    e.kernel.threads = scheduled ? chosen.threads : 0;
    for (int v : chosen.prims) e.kernel.primitives.push_back(graph.prims[v].name);
    backend.implement(graph, dag, static_cast<int>(i), chosen, e);
  }
  return emitted;
}

// For kernels that overlap (kernels_overlap()): whether the arena tensors a and b (indices
// into `tensors`) may be live at once in some run, where each kernel waits only for the
// kernels that write what it reads. They may not when every writer of the later one comes
// after every kernel that reads or writes the earlier one, in every run.
std::function<bool(size_t, size_t)> live_in_some_order(const std::vector<Emitted>& emitted,
                                                       const std::vector<std::string>& tensors,
                                                       const std::vector<BufferLifetime>& life) {
  const size_t n = emitted.size(), words = (n + 63) / 64;
  // Row j of `before`: the kernels kernel j waits for, transitively; a tensor's row of
  // `used`: the kernels that read or write it. Bitsets, `words` words a row.
  std::vector<uint64_t> before(n * words, 0), used;
  std::map<std::string, size_t> row;  // a tensor's row of `used`
  std::map<std::string, std::vector<size_t>> writers;
  auto bit = [](uint64_t* r, size_t i) { r[i / 64] |= uint64_t{1} << (i % 64); };
  for (size_t j = 0; j < n; ++j) {
    for (const std::string& t : emitted[j].kernel.reads) {
      auto it = writers.find(t);
      if (it == writers.end()) continue;
      for (size_t w : it->second) {
        bit(&before[j * words], w);
        for (size_t k = 0; k < words; ++k) before[j * words + k] |= before[w * words + k];
      }
    }
    for (const std::string& t : emitted[j].kernel.writes) writers[t].push_back(j);
    for (const auto* list : {&emitted[j].kernel.reads, &emitted[j].kernel.writes})
      for (const std::string& t : *list) {
        auto [it, added] = row.try_emplace(t, used.size() / std::max<size_t>(words, 1));
        if (added) used.resize(used.size() + words, 0);
        bit(&used[it->second * words], j);
      }
  }
  return [=](size_t a, size_t b) {
    if (life[a].first > life[b].first) std::swap(a, b);  // a: the earlier
    const uint64_t* u = &used[row.at(tensors[a]) * words];
    for (size_t w : writers.at(tensors[b]))
      for (size_t k = 0; k < words; ++k)
        if (u[k] & ~before[w * words + k]) return true;
    return false;
  };
}

// Every tensor's storage: graph inputs, constants (listed in `constants` in the order the
// weights hold them), outputs, and intermediates in one arena placed by lifetime (and,
// where kernels overlap, by their dependencies).
void place_tensors(const PrimGraph& graph, const KernelDag& dag,
                   const std::vector<Emitted>& emitted, Manifest& m,
                   std::vector<std::string>& constants, bool kernels_overlap) {
  const std::set<std::string> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  std::map<std::string, int> produced_at;
  std::vector<std::string> arena_tensors;
  std::map<std::string, BufferLifetime> lifetimes;
  auto add_constant = [&](const std::string& t) {
    if (!m.tensors.count(t)) {
      m.tensors[t] = {graph.value(t), Storage::kConstant, 0, ""};
      constants.push_back(t);
    }
  };
  for (const std::string& t : graph.inputs) m.tensors[t] = {graph.value(t), Storage::kInput, 0, ""};
  for (size_t i = 0; i < emitted.size(); ++i) {
    const ManifestKernel& k = emitted[i].kernel;
    const int step = k.step;  // kernels of one step run at the same time
    for (const std::string& t : k.reads) {
      if (graph.constant(t)) {
        add_constant(t);
      } else if (m.tensors.count(t) && m.tensors[t].storage == Storage::kInput) {
      } else if (!produced_at.count(t) || produced_at[t] >= step) {
        throw Error("the plan's kernel " + std::to_string(i) + " (" +
                    kernel_name(graph, dag, emitted[i].candidate) + ") reads '" + t +
                    "' before any kernel writes it (in an earlier step)");
      } else if (lifetimes.count(t)) {
        lifetimes[t].last = step;
      }
    }
    for (const std::string& t : k.writes) {
      // A primitive that two kernels compute (the plan recomputes it rather than reading
      // it) is written by both, the same value into the same buffer: it stays live until
      // the later writer is done.
      if (produced_at.count(t)) {
        if (lifetimes.count(t)) lifetimes[t].last = std::max(lifetimes[t].last, step);
        continue;
      }
      produced_at[t] = step;
      const ValueInfo& v = graph.value(t);
      if (graph_outputs.count(t)) {
        m.tensors[t] = {v, Storage::kOutput, 0, ""};
      } else {
        m.tensors[t] = {v, Storage::kArena, 0, ""};
        lifetimes[t] = {numel(v.shape) * static_cast<int64_t>(dtype_size(v.dtype)), step, step};
        arena_tensors.push_back(t);
      }
    }
  }
  for (const std::string& t : graph.outputs) {
    if (m.tensors.count(t)) continue;
    if (!graph.constant(t))
      throw Error("the plan computes no value for the graph output '" + t + "'");
    add_constant(t);
  }
  std::vector<BufferLifetime> buffers;
  for (const std::string& t : arena_tensors) buffers.push_back(lifetimes.at(t));
  const MemoryPlan memory = plan_memory(
      buffers, 64, kernels_overlap ? live_in_some_order(emitted, arena_tensors, buffers) : nullptr);
  for (size_t i = 0; i < arena_tensors.size(); ++i)
    m.tensors[arena_tensors[i]].offset = memory.offsets[i];
  m.arena_bytes = memory.arena_bytes;
  m.intermediate_bytes = memory.total_bytes;
}

// Weights files this process wrote, by the directory they lie in, their size and SHA-256:
// a later artifact beside them with the same bytes links the file instead of writing it
// again (the check on the clock writes an artifact per plan, BERT-base's 434 MB of
// weights each, about 1 s of writing).
using WeightsKey = std::tuple<std::string, int64_t, std::string>;
std::mutex written_weights_mutex;
std::map<WeightsKey, fs::path>& written_weights() {
  static std::map<WeightsKey, fs::path> written;
  return written;
}

WeightsKey weights_key(const fs::path& artifact_dir, const Manifest& m) {
  return {artifact_dir.parent_path().string(), m.weights_bytes, m.files.at(m.weights_file).sha256};
}

// Whether the same weights were written beside `tmp` (and still lie there): then linked
// into it.
bool link_written_weights(const fs::path& tmp, const Manifest& m) {
  std::lock_guard<std::mutex> lock(written_weights_mutex);
  const auto it = written_weights().find(weights_key(tmp, m));
  if (it == written_weights().end()) return false;
  std::error_code ec;
  if (fs::file_size(it->second, ec) != static_cast<uintmax_t>(m.weights_bytes) || ec) return false;
  fs::create_hard_link(it->second, tmp / m.weights_file, ec);
  return !ec;
}

void remember_written_weights(const fs::path& dir, const Manifest& m) {
  std::lock_guard<std::mutex> lock(written_weights_mutex);
  written_weights()[weights_key(dir, m)] = dir / m.weights_file;
}

// weights.bin: the constants, 64-byte aligned, in the order of their names (the same
// file whatever plan reads them); offsets, size and checksum into the manifest.
void write_weights(const PrimGraph& graph, std::vector<std::string> constants, const fs::path& tmp,
                   Manifest& m) {
  std::sort(constants.begin(), constants.end());
  int64_t weights_bytes = 0;
  for (const std::string& t : constants) {
    m.tensors[t].offset = weights_bytes;
    weights_bytes = align64(weights_bytes + m.tensors[t].bytes());
  }
  std::vector<char> weights(static_cast<size_t>(weights_bytes), 0);
  for (const std::string& t : constants) {
    const Tensor* c = graph.constant(t);
    std::copy(reinterpret_cast<const char*>(c->bytes()),
              reinterpret_cast<const char*>(c->bytes()) + c->nbytes(),
              weights.data() + m.tensors[t].offset);
  }
  m.weights_bytes = weights_bytes;
  m.weights_checksum = weights_checksum(weights.data(), weights.size());
  m.files[m.weights_file] = {weights_bytes, sha256_hex(weights.data(), weights.size())};
  if (link_written_weights(tmp, m)) return;
  std::ofstream out(tmp / m.weights_file, std::ios::binary);
  out.write(weights.data(), static_cast<std::streamsize>(weights.size()));
  if (!out.flush()) throw Error("cannot write '" + (tmp / m.weights_file).string() + "'");
}

void write_manifest(const Manifest& m, const fs::path& tmp) {
  std::ofstream out(tmp / "manifest.json");
  out << manifest_to_json(m) << "\n";
  if (!out.flush()) throw Error("cannot write '" + (tmp / "manifest.json").string() + "'");
}

}  // namespace

void check_artifact_dir(const std::string& name) {
  const fs::path dir(name);
  if (fs::exists(dir) &&
      (!fs::is_directory(dir) || (!fs::is_empty(dir) && !fs::exists(dir / "manifest.json"))))
    throw Error("'" + name +
                "' exists and is not a kora artifact; choose another output directory");
}

void move_artifact_into_place(const std::string& from, const std::string& to) {
  const fs::path dir(to);
  check_artifact_dir(to);
  if (fs::exists(dir)) {
    const fs::path old = dir.string() + ".old-" + std::to_string(::getpid());
    fs::rename(dir, old);
    fs::rename(from, dir);
    fs::remove_all(old);
  } else {
    fs::rename(from, dir);
  }
}

// The kernel's primitives as a graph of their own, for a library kernel to be rebuilt
// from at run time (constants carried by name; the session takes their bytes from the
// weights).
std::shared_ptr<PrimGraph> kernel_graph(const PrimGraph& graph, const Candidate& c,
                                        const ManifestKernel& k, int index) {
  auto g = std::make_shared<PrimGraph>();
  g->name = "kernel " + std::to_string(index);
  for (int v : c.members) {
    const Primitive& p = graph.prims[v];
    g->prims.push_back(p);
    for (const std::string& t : p.inputs) {
      g->values[t] = graph.value(t);
      if (const Tensor* constant = graph.constant(t)) g->constants[t] = *constant;
    }
    for (const std::string& t : p.outputs) g->values[t] = graph.value(t);
  }
  for (const std::string& t : k.reads)
    if (!graph.constant(t)) g->inputs.push_back(t);
  g->outputs = k.writes;
  return g;
}

ArtifactSummary write_artifact_with(const PrimGraph& graph, const OrchestrationResult& plan,
                                    const std::string& dir_name, ArtifactBackend& backend) {
  ArtifactSummary summary;
  const fs::path dir = fs::absolute(dir_name).lexically_normal();
  if (dir.filename().empty()) throw Error("output directory '" + dir_name + "' has no name");
  check_artifact_dir(dir_name);
  fs::create_directories(dir.parent_path());
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directory(tmp);
  try {
    auto stage = std::chrono::steady_clock::now();
    const KernelDag dag = kernel_dag_of(graph);
    Manifest m;
    m.model = graph.name;
    backend.describe(m);
    m.strategy = plan.strategy;
    m.predicted_ms = plan.total_cost_ms;
    m.proven_optimal = plan.proven_optimal;
    m.inputs = graph.inputs;
    m.outputs = graph.outputs;
    std::vector<Emitted> emitted = implement_kernels(graph, dag, plan, backend);
    summary.generate_seconds = seconds_since(stage);
    stage = std::chrono::steady_clock::now();
    backend.compile(graph, dag, emitted, tmp, m);
    summary.compile_seconds = seconds_since(stage);
    stage = std::chrono::steady_clock::now();
    std::vector<std::string> constants;
    place_tensors(graph, dag, emitted, m, constants, backend.kernels_overlap());
    summary.blocked_tensors = backend.assign_layouts(graph, dag, emitted, m);
    write_weights(graph, constants, tmp, m);
    for (size_t i = 0; i < emitted.size(); ++i) {
      backend.finish(graph, emitted[i], static_cast<int>(i), summary);
      m.kernels.push_back(std::move(emitted[i].kernel));
    }
    for (const std::string& lib : m.libraries)
      m.files[lib] = {static_cast<int64_t>(fs::file_size(tmp / lib)),
                      sha256_file_hex((tmp / lib).string())};
    write_manifest(m, tmp);
    move_artifact_into_place(tmp.string(), dir.string());
    remember_written_weights(dir, m);
    summary.write_seconds = seconds_since(stage);
    summary.kernels = static_cast<int64_t>(m.kernels.size());
    summary.libraries = static_cast<int64_t>(m.libraries.size());
    summary.predicted_ms = m.predicted_ms;
    summary.arena_bytes = m.arena_bytes;
    summary.intermediate_bytes = m.intermediate_bytes;
    summary.weights_bytes = m.weights_bytes;
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  return summary;
}

}  // namespace kora
