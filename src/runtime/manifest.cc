// manifest.json written and read (src/runtime/manifest.h). Every field read is checked
// for presence and type; nlohmann's exceptions become kora::Error naming the manifest and
// the field, so a corrupt file reads as a clear error. Then the plan is checked as a
// whole (check_plan) and, at load, each file against its recorded size and SHA-256.
#include "runtime/manifest.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cuda/kernel_spec.h"
#include "kora/error.h"
#include "runtime/prim_json.h"
#include "runtime/sha256.h"

namespace kora {
namespace {

using json = nlohmann::json;

const Storage kStorages[] = {Storage::kInput, Storage::kConstant, Storage::kArena,
                             Storage::kOutput};

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Field access that names what is missing or of the wrong type.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  const json& at(const json& j, const std::string& key, const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where + " has no field '" + key + "'");
    return j.at(key);
  }
  std::string str(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_string()) fail(where + "." + key + " is not a string");
    return v.get<std::string>();
  }
  int64_t integer(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_number_integer()) fail(where + "." + key + " is not an integer");
    return v.get<int64_t>();
  }
  int64_t size(const json& j, const std::string& key, const std::string& where) const {
    const int64_t v = integer(j, key, where);
    if (v < 0) fail(where + "." + key + " is negative");
    return v;
  }
  double number(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_number()) fail(where + "." + key + " is not a number");
    return v.get<double>();
  }
  bool boolean(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_boolean()) fail(where + "." + key + " is not true or false");
    return v.get<bool>();
  }
  std::vector<std::string> strings(const json& j, const std::string& key,
                                   const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_array()) fail(where + "." + key + " is not a list");
    std::vector<std::string> out;
    for (const json& e : v) {
      if (!e.is_string()) fail(where + "." + key + " holds a non-string");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  const json& array(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_array()) fail(where + "." + key + " is not a list");
    return v;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("artifact manifest '" + source_ + "': " + what);
  }

 private:
  std::string source_;
};

// The plan as a whole: graph inputs and outputs each listed once and stored as such,
// every arena or output tensor a kernel reads written in an earlier step, every graph
// output written by a kernel (or an input or constant passed through), no two arena
// tensors sharing bytes while both are live (from the step of the first write to that of
// the last use), and kernels of one step (run at the same time) neither writing the same
// tensor nor calling the same generated function (its scratch is static).
void check_plan(const Manifest& m, const Reader& r) {
  std::set<std::string> seen;
  for (const std::string& in : m.inputs)
    if (!seen.insert(in).second) r.fail("input '" + in + "' is listed twice");
  std::set<std::string> outputs;
  for (const std::string& out : m.outputs)
    if (!outputs.insert(out).second) r.fail("output '" + out + "' is listed twice");
  for (const auto& [name, t] : m.tensors)
    if (t.storage == Storage::kOutput && !outputs.count(name))
      r.fail("tensor '" + name + "' has storage \"output\" but is not a graph output");
  std::set<std::string> written;                    // before this step
  std::set<std::string> in_step;                    // written in this step
  std::set<std::pair<int, std::string>> functions;  // called in this step
  std::map<std::string, std::pair<int, int>> live;  // arena tensor: [first, last] step
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const ManifestKernel& k = m.kernels[i];
    const int step = k.step;
    if (i == 0 || step != m.kernels[i - 1].step) {
      written.insert(in_step.begin(), in_step.end());
      in_step.clear();
      functions.clear();
    }
    if (k.impl == "generated" && !functions.insert({k.library, k.symbol}).second)
      r.fail("kernel " + std::to_string(i) + " calls " + k.symbol +
             " at the same time as another kernel of step " + std::to_string(step));
    for (const std::string& t : k.reads) {
      const Storage s = m.tensors.at(t).storage;
      if ((s == Storage::kArena || s == Storage::kOutput) && !written.count(t))
        r.fail("kernel " + std::to_string(i) + " reads '" + t +
               "' before any kernel writes it (kernels out of order?)");
      if (s == Storage::kArena) live[t].second = step;
    }
    if (k.writes.empty()) r.fail("kernel " + std::to_string(i) + " writes nothing");
    for (const std::string& t : k.writes) {
      if (m.tensors.at(t).storage != Storage::kArena) continue;
      if (!live.count(t)) live[t] = {step, step};
      live[t].second = step;
    }
    for (const std::string& t : k.writes)
      if (!in_step.insert(t).second)
        r.fail("kernel " + std::to_string(i) + " writes '" + t +
               "' at the same time as another kernel of step " + std::to_string(step));
  }
  written.insert(in_step.begin(), in_step.end());
  std::vector<std::pair<const std::string*, std::pair<int, int>>> arena(live.size());
  std::transform(live.begin(), live.end(), arena.begin(), [](const auto& e) {
    return std::pair{&e.first, e.second};
  });
  for (size_t a = 0; a < arena.size(); ++a)
    for (size_t b = a + 1; b < arena.size(); ++b) {
      const auto& [ta, la] = arena[a];
      const auto& [tb, lb] = arena[b];
      if (la.first > lb.second || lb.first > la.second) continue;  // never live together
      const ManifestTensor& x = m.tensors.at(*ta);
      const ManifestTensor& y = m.tensors.at(*tb);
      if (x.bytes() > 0 && y.bytes() > 0 && x.offset < y.offset + y.bytes() &&
          y.offset < x.offset + x.bytes())
        r.fail("arena tensors '" + *ta + "' and '" + *tb +
               "' share bytes while both are live (kernels out of order?)");
    }
  for (const std::string& out : m.outputs) {
    const Storage s = m.tensors.at(out).storage;
    if (s == Storage::kArena)
      r.fail("output '" + out + "' is stored in the arena, not as an output");
    if (s == Storage::kOutput && !written.count(out))
      r.fail("output '" + out + "' is written by no kernel");
  }
}

}  // namespace

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::kInput:
      return "input";
    case Storage::kConstant:
      return "constant";
    case Storage::kArena:
      return "arena";
    case Storage::kOutput:
      return "output";
  }
  return "?";
}

int64_t ManifestTensor::bytes() const {
  return numel(info.shape) * static_cast<int64_t>(dtype_size(info.dtype));
}

uint64_t weights_checksum(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string manifest_to_json(const Manifest& m) {
  json j;
  j["format"] = "kora-artifact";
  j["version"] = kManifestVersion;
  j["model"] = m.model;
  j["target"] = m.target;
  if (m.target == "cuda") j["arch"] = m.arch;
  j["device"] = m.device;
  j["threads"] = m.threads;
  j["strategy"] = m.strategy;
  j["predicted_ms"] = m.predicted_ms;
  j["proven_optimal"] = m.proven_optimal;
  j["libraries"] = m.libraries;
  j["weights"] = {{"file", m.weights_file},
                  {"bytes", m.weights_bytes},
                  {"checksum", hex64(m.weights_checksum)}};
  j["arena_bytes"] = m.arena_bytes;
  j["intermediate_bytes"] = m.intermediate_bytes;
  j["inputs"] = m.inputs;
  j["outputs"] = m.outputs;
  json tensors = json::array();
  for (const auto& [name, t] : m.tensors) {
    json e = value_info_to_json(t.info);
    e["name"] = name;
    e["storage"] = storage_name(t.storage);
    if (t.storage == Storage::kConstant || t.storage == Storage::kArena) e["offset"] = t.offset;
    if (!t.layout.empty()) e["layout"] = t.layout;
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  json kernels = json::array();
  for (const ManifestKernel& k : m.kernels) {
    json e;
    e["impl"] = k.impl;
    if (k.impl == "generated") {
      e["library"] = k.library;
      e["symbol"] = k.symbol;
    }
    if (k.impl == "cuda") e["cuda"] = json::parse(cuda_job_kernel_json(k.cuda));
    e["reads"] = k.reads;
    e["writes"] = k.writes;
    e["signature"] = k.signature;
    e["schedule"] = k.schedule;
    e["predicted_ms"] = k.predicted_ms;
    e["primitives"] = k.primitives;
    e["step"] = k.step;
    if (k.threads > 0) e["threads"] = k.threads;
    if (k.graph) e["graph"] = prim_graph_to_json(*k.graph);
    kernels.push_back(std::move(e));
  }
  j["kernels"] = std::move(kernels);
  json files = json::object();
  for (const auto& [name, f] : m.files) files[name] = {{"bytes", f.bytes}, {"sha256", f.sha256}};
  j["files"] = std::move(files);
  return j.dump(1);
}

Manifest manifest_from_json(const std::string& text, const std::string& source) {
  const Reader r(source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    r.fail(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "kora-artifact")
    r.fail("not a kora artifact manifest (no \"format\": \"kora-artifact\")");
  const int64_t version = r.integer(j, "version", "manifest");
  if (version < kMinManifestVersion || version > kManifestVersion)
    r.fail("format version " + std::to_string(version) + ", this kora reads version " +
           std::to_string(kManifestVersion) + " (compile the model again)");
  Manifest m;
  m.model = r.str(j, "model", "manifest");
  m.target = r.str(j, "target", "manifest");
  if (m.target != "cpu" && m.target != "cuda")
    r.fail("target '" + m.target + "' is not supported by this runtime");
  if (m.target == "cuda") m.arch = r.str(j, "arch", "manifest");
  m.device = r.str(j, "device", "manifest");
  m.threads = static_cast<int>(std::min<int64_t>(r.size(j, "threads", "manifest"), 1 << 16));
  m.strategy = r.str(j, "strategy", "manifest");
  m.predicted_ms = r.number(j, "predicted_ms", "manifest");
  m.proven_optimal = r.boolean(j, "proven_optimal", "manifest");
  m.libraries = r.strings(j, "libraries", "manifest");
  for (const std::string& lib : m.libraries)
    if (lib.empty() || lib.find('/') != std::string::npos)
      r.fail("library name '" + lib + "' is not a file name in the artifact");
  const json& w = r.at(j, "weights", "manifest");
  m.weights_file = r.str(w, "file", "weights");
  if (m.weights_file.empty() || m.weights_file.find('/') != std::string::npos)
    r.fail("weights file name '" + m.weights_file + "' is not a file name in the artifact");
  m.weights_bytes = r.size(w, "bytes", "weights");
  const std::string checksum = r.str(w, "checksum", "weights");
  try {
    size_t used = 0;
    m.weights_checksum = std::stoull(checksum, &used, 16);
    if (used != checksum.size()) throw std::invalid_argument(checksum);
  } catch (const std::exception&) {
    r.fail("weights.checksum '" + checksum + "' is not 16 hex digits");
  }
  if (m.weights_bytes > kMaxTensorBytes) r.fail("weights.bytes is absurdly large");
  m.arena_bytes = r.size(j, "arena_bytes", "manifest");
  if (m.arena_bytes > kMaxTensorBytes) r.fail("arena_bytes is absurdly large");
  m.intermediate_bytes = r.size(j, "intermediate_bytes", "manifest");
  m.inputs = r.strings(j, "inputs", "manifest");
  m.outputs = r.strings(j, "outputs", "manifest");

  for (const json& e : r.array(j, "tensors", "manifest")) {
    const std::string name = r.str(e, "name", "tensor");
    const std::string where = "tensor '" + name + "'";
    ManifestTensor t;
    try {
      t.info = value_info_from_json(e);
    } catch (const Error& err) {
      r.fail(where + ": " + err.what());
    }
    for (int64_t d : t.info.shape)
      if (d < 0) r.fail(where + " has a negative dimension");
    const int64_t bytes = checked_nbytes(t.info.dtype, t.info.shape);
    if (bytes < 0) r.fail(where + " of shape " + shape_str(t.info.shape) + " is absurdly large");
    const std::string storage = r.str(e, "storage", where);
    bool known = false;
    for (Storage s : kStorages)
      if (storage == storage_name(s)) t.storage = s, known = true;
    if (!known) r.fail(where + ": unknown storage '" + storage + "'");
    if (t.storage == Storage::kConstant || t.storage == Storage::kArena) {
      t.offset = r.size(e, "offset", where);
      const int64_t limit = t.storage == Storage::kConstant ? m.weights_bytes : m.arena_bytes;
      if (t.offset > limit || bytes > limit - t.offset)
        r.fail(where + " (" + std::to_string(t.bytes()) + " bytes at offset " +
               std::to_string(t.offset) + ") lies outside the " +
               (t.storage == Storage::kConstant ? "weights" : "arena") + " (" +
               std::to_string(limit) + " bytes)");
    }
    if (e.contains("layout")) {
      t.layout = r.str(e, "layout", where);
      if (t.storage != Storage::kArena || t.layout.empty())
        r.fail(where + ": only arena tensors have a \"layout\", and it names one");
    }
    if (!m.tensors.emplace(name, std::move(t)).second) r.fail(where + " is listed twice");
  }
  auto check_tensor = [&](const std::string& name, const std::string& where) {
    if (!m.tensors.count(name)) r.fail(where + " names tensor '" + name + "', which is not listed");
  };
  for (const std::string& in : m.inputs) {
    check_tensor(in, "inputs");
    if (m.tensors.at(in).storage != Storage::kInput)
      r.fail("input '" + in + "' does not have storage \"input\"");
  }
  for (const std::string& out : m.outputs) check_tensor(out, "outputs");

  for (const json& e : r.array(j, "kernels", "manifest")) {
    ManifestKernel k;
    const std::string where = "kernel " + std::to_string(m.kernels.size());
    k.impl = r.str(e, "impl", where);
    if (k.impl == "generated" && m.target == "cpu") {
      k.library = static_cast<int>(r.integer(e, "library", where));
      if (k.library < 0 || k.library >= static_cast<int>(m.libraries.size()))
        r.fail(where + ": library " + std::to_string(k.library) + " is not listed");
      k.symbol = r.str(e, "symbol", where);
    } else if (k.impl == "cuda" && m.target == "cuda") {
      try {
        k.cuda = cuda_job_kernel_from_json(r.at(e, "cuda", where).dump(), m.libraries.size());
      } catch (const Error& err) {
        r.fail(where + ": " + err.what());
      }
    } else if ((m.target == "cuda" && k.impl != "interpreter") ||
               (k.impl != "onednn" && k.impl != "interpreter")) {
      r.fail(where + ": unknown implementation '" + k.impl + "' for target " + m.target);
    }
    k.reads = r.strings(e, "reads", where);
    k.writes = r.strings(e, "writes", where);
    for (const std::string& t : k.reads) check_tensor(t, where + ".reads");
    for (const std::string& t : k.writes) {
      check_tensor(t, where + ".writes");
      const Storage s = m.tensors.at(t).storage;
      if (s != Storage::kArena && s != Storage::kOutput)
        r.fail(where + " writes '" + t + "', which is stored as " + storage_name(s));
    }
    k.signature = r.str(e, "signature", where);
    k.schedule = r.str(e, "schedule", where);
    k.predicted_ms = r.number(e, "predicted_ms", where);
    k.primitives = r.strings(e, "primitives", where);
    // A parallel schedule's step (older manifests: one step per kernel) and threads.
    const int index = static_cast<int>(m.kernels.size());
    k.step = e.contains("step") ? static_cast<int>(r.integer(e, "step", where)) : index;
    k.threads = e.contains("threads") ? static_cast<int>(r.integer(e, "threads", where)) : 0;
    if (k.step < 0 || (index > 0 && k.step < m.kernels.back().step))
      r.fail(where + ": step " + std::to_string(k.step) +
             " comes before the step of the kernel listed before it (kernels out of order?)");
    if (k.threads < 0 || k.threads > 4096)
      r.fail(where + ": " + std::to_string(k.threads) + " threads");
    if (k.impl == "cuda") {  // its buffers are its reads and writes, in order
      auto same = [&](const std::vector<std::string>& names,
                      const std::vector<CudaJobBuffer>& buffers) {
        if (names.size() != buffers.size()) return false;
        for (size_t i = 0; i < names.size(); ++i)
          if (buffers[i].count != numel(m.tensors.at(names[i]).info.shape) ||
              buffers[i].dtype != dtype_name(m.tensors.at(names[i]).info.dtype))
            return false;
        return true;
      };
      if (!same(k.reads, k.cuda.reads) || !same(k.writes, k.cuda.writes))
        r.fail(where + ": its CUDA kernel's buffers are not the tensors it reads and writes");
    } else if (k.impl != "generated") {
      k.graph_json = r.at(e, "graph", where).dump();
    }
    m.kernels.push_back(std::move(k));
  }

  for (const auto& [name, f] : r.at(j, "files", "manifest").items()) {
    const std::string where = "files." + name;
    ManifestFile file;
    file.bytes = r.size(f, "bytes", where);
    file.sha256 = r.str(f, "sha256", where);
    if (file.sha256.size() != 64 ||
        file.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      r.fail(where + ".sha256 is not 64 lowercase hex digits");
    m.files[name] = file;
  }
  for (const std::string& name : m.libraries)
    if (!m.files.count(name)) r.fail("files has no size and SHA-256 of library '" + name + "'");
  if (!m.files.count(m.weights_file) || m.files[m.weights_file].bytes != m.weights_bytes)
    r.fail("files does not record the weights file '" + m.weights_file + "' of " +
           std::to_string(m.weights_bytes) + " bytes");
  check_plan(m, r);
  return m;
}

PrimGraph kernel_graph_from_json(const std::string& graph_json, const std::string& where,
                                 const std::function<Tensor(const std::string&)>& constant) {
  try {
    const json j = json::parse(graph_json);
    std::map<std::string, Tensor> constants;
    if (j.contains("constants") && j["constants"].is_object())
      for (const auto& item : j["constants"].items()) constants[item.key()] = constant(item.key());
    return prim_graph_from_json(j, constants);
  } catch (const json::exception& e) {
    throw Error(where + ": " + e.what());
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

void verify_artifact_bytes(const Manifest& m, const std::string& path, const std::string& name,
                           const void* data, size_t bytes) {
  auto it = m.files.find(name);
  if (it == m.files.end())
    throw Error("artifact file '" + path + "' has no size and SHA-256 in the manifest");
  if (static_cast<int64_t>(bytes) != it->second.bytes)
    throw Error("artifact file '" + path + "' has " + std::to_string(bytes) +
                " bytes, the manifest says " + std::to_string(it->second.bytes) +
                " (truncated or from another compile)");
  if (sha256_hex(data, bytes) != it->second.sha256)
    throw Error("artifact file '" + path +
                "' is corrupt: its SHA-256 differs from the manifest's (modified or from "
                "another compile)");
}

void verify_artifact_file(const Manifest& m, const std::string& dir, const std::string& name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  auto it = m.files.find(name);
  if (it == m.files.end())
    throw Error("artifact file '" + path + "' has no size and SHA-256 in the manifest");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("artifact file '" + path + "' is missing (or not a regular file)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error("cannot read artifact file '" + path + "'");
  if (static_cast<int64_t>(size) != it->second.bytes)
    throw Error("artifact file '" + path + "' has " + std::to_string(size) +
                " bytes, the manifest says " + std::to_string(it->second.bytes) +
                " (truncated or from another compile)");
  if (sha256_file_hex(path) != it->second.sha256)
    throw Error("artifact file '" + path +
                "' is corrupt: its SHA-256 differs from the manifest's (modified or from "
                "another compile)");
}

std::string kernel_io_text(const std::vector<ValueInfo>& reads,
                           const std::vector<ValueInfo>& writes,
                           const std::vector<std::string>& layouts) {
  std::string text;
  size_t at = 0;
  for (const auto* list : {&reads, &writes}) {
    if (list == &writes) text += " ->";
    for (size_t i = 0; i < list->size(); ++i, ++at) {
      text += std::string(i ? ", " : " ") + dtype_name((*list)[i].dtype) + " " +
              shape_str((*list)[i].shape);
      if (at < layouts.size() && !layouts[at].empty()) text += " @" + layouts[at];
    }
  }
  return text.substr(1);
}

Manifest read_artifact_manifest(const std::string& artifact_dir) {
  const std::filesystem::path dir(artifact_dir);
  if (!std::filesystem::is_directory(dir))
    throw Error("artifact '" + artifact_dir + "' is not a directory (write one with kora compile)");
  const std::filesystem::path path = dir / "manifest.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path.string() + "' (is this a kora artifact directory?)");
  std::ostringstream text;
  text << in.rdbuf();
  return manifest_from_json(text.str(), path.string());
}

std::vector<KernelInfo> kernel_infos_of(const Manifest& m) {
  const bool cpu = m.target == "cpu";
  std::vector<KernelInfo> infos;
  for (const ManifestKernel& k : m.kernels) {
    std::string names;
    for (const std::string& p : k.primitives) names += (names.empty() ? "" : ", ") + p;
    bool blocked = false;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) blocked |= !m.tensors.at(t).layout.empty();
    infos.push_back({cpu                       ? k.impl
                     : k.impl == "interpreter" ? "interpreter (host)"
                     : k.cuda.library.empty()  ? "generated"
                                               : k.cuda.library,
                     k.schedule, names, k.predicted_ms, k.signature, blocked,
                     // Native: its sides stored in the primitive's layouts, or its schedule
                     // native where those layouts are all plain.
                     k.impl == "onednn" && (blocked || k.schedule.starts_with("onednn:native"))});
  }
  return infos;
}

}  // namespace kora
