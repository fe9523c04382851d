// manifest.json written and read (src/runtime/manifest.h). Every field read is checked
// for presence and type; nlohmann's exceptions become kora::Error naming the manifest and
// the field, so a corrupt file reads as a clear error.
#include "runtime/manifest.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cuda/kernel_spec.h"
#include "kora/error.h"
#include "runtime/prim_json.h"

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
    if (k.graph) e["graph"] = prim_graph_to_json(*k.graph);
    kernels.push_back(std::move(e));
  }
  j["kernels"] = std::move(kernels);
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
  if (version < 1 || version > kManifestVersion)
    r.fail("format version " + std::to_string(version) + ", this kora reads versions 1 to " +
           std::to_string(kManifestVersion) + " (compile the model again)");
  Manifest m;
  m.model = r.str(j, "model", "manifest");
  m.target = r.str(j, "target", "manifest");
  if (m.target != "cpu" && m.target != "cuda")
    r.fail("target '" + m.target + "' is not supported by this runtime");
  if (m.target == "cuda") m.arch = r.str(j, "arch", "manifest");
  m.device = r.str(j, "device", "manifest");
  m.threads = static_cast<int>(r.size(j, "threads", "manifest"));
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
  m.arena_bytes = r.size(j, "arena_bytes", "manifest");
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
    const std::string storage = r.str(e, "storage", where);
    bool known = false;
    for (Storage s : kStorages)
      if (storage == storage_name(s)) t.storage = s, known = true;
    if (!known) r.fail(where + ": unknown storage '" + storage + "'");
    if (t.storage == Storage::kConstant || t.storage == Storage::kArena) {
      t.offset = r.size(e, "offset", where);
      const int64_t limit = t.storage == Storage::kConstant ? m.weights_bytes : m.arena_bytes;
      if (t.offset + t.bytes() > limit)
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

}  // namespace kora
