// The artifact's plan (manifest.json), between the emitter (src/emit/) that writes it and
// the runtime (src/runtime/session.cc) that replays it: kernels in execution order, each
// with the tensors it reads and writes; every tensor with its dtype, shape and storage
// (a graph input, a constant in the weights file, a slot in the activation arena, or a
// graph output buffer) and, for a blocked arena tensor, its layout; the kernel libraries; the
// weights file's size and checksum; every file the runtime reads besides the manifest (the
// weights, the kernel libraries) with its size and SHA-256. Parsing checks every field and
// names the bad one, then the plan as a whole (sizes without overflow, offsets inside the
// weights and the arena, every tensor a kernel reads written by an earlier kernel, every
// output written): a corrupt manifest is an error, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/kernel_spec.h"
#include "kora/graph.h"
#include "kora/primitive.h"
#include "kora/runtime.h"

namespace kora {

// 2: tensors may have a "layout" (a reader of version 1 would take them as plain).
// 3: target "cuda" (arch; kernels of impl "cuda").
// 4: "files": size and SHA-256 of the weights and each library (required); a generated CPU
//    kernel's library defines SYMBOL_io, the text of kernel_io_text for its arguments.
constexpr int kManifestVersion = 4;
constexpr int kMinManifestVersion = 4;

enum class Storage { kInput, kConstant, kArena, kOutput };
const char* storage_name(Storage s);

struct ManifestTensor {
  ValueInfo info;
  Storage storage = Storage::kArena;
  int64_t offset = 0;  // constant: in the weights file; arena: in the arena
  // Arena tensors between oneDNN convolutions: the blocked layout they are stored in
  // (TensorLayouts in src/cpu/library.h), no bigger than the plain tensor;
  // empty: plain row-major.
  std::string layout;
  int64_t bytes() const;
};

struct ManifestKernel {
  std::string impl;    // "generated", "onednn" or "interpreter"; "cuda" on target cuda
  int library = -1;    // generated: index into Manifest::libraries
  std::string symbol;  // generated: the function
  std::vector<std::string> reads, writes;
  std::string signature, schedule;  // as in the profile database
  double predicted_ms = 0;
  std::vector<std::string> primitives;  // names, for reports
  // A parallel schedule: kernels of one step run at the same time (each on `threads`
  // threads, 0: all of the session's); listed in step order. Without one, step = index.
  int step = 0;
  int threads = 0;
  // Library kernels: their primitives as a graph of their own (inputs: the reads that
  // are not constants; outputs: the writes; constants by name only). Written from
  // `graph`; read as `graph_json`, made a graph by kernel_graph_from_json.
  std::shared_ptr<PrimGraph> graph;
  std::string graph_json;
  // Target cuda: the launches of a generated kernel (program: index into
  // Manifest::libraries, the cubins) or its cuBLAS / cuDNN call; its arguments are a
  // device pointer per read, then per write (buffers in it are unused).
  CudaJobKernel cuda;
};

struct ManifestFile {
  int64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
};

struct Manifest {
  std::string model, target = "cpu", device, strategy;
  std::string arch;  // target cuda: the cubins' architecture ("sm_90")
  int threads = 0;
  double predicted_ms = 0;
  bool proven_optimal = false;
  std::vector<std::string> libraries;  // file names in the artifact directory
  std::string weights_file = "weights.bin";
  int64_t weights_bytes = 0;
  uint64_t weights_checksum = 0;
  int64_t arena_bytes = 0;         // peak activation memory
  int64_t intermediate_bytes = 0;  // sum of all intermediates, had each its own buffer
  std::vector<std::string> inputs, outputs;
  std::map<std::string, ManifestTensor> tensors;  // every tensor a kernel or the graph names
  std::vector<ManifestKernel> kernels;            // execution order
  std::map<std::string, ManifestFile> files;      // by file name: weights_file and libraries
};

std::string manifest_to_json(const Manifest& m);
// `source` names the file in errors. Throws kora::Error naming the field that is wrong.
Manifest manifest_from_json(const std::string& text, const std::string& source);
// A library kernel's graph; `constant` gives the value of each constant it names.
PrimGraph kernel_graph_from_json(const std::string& graph_json, const std::string& where,
                                 const std::function<Tensor(const std::string&)>& constant);

// The manifest of the artifact in `dir`, parsed and checked (manifest_from_json); throws
// kora::Error when the directory or its manifest.json is missing or corrupt.
Manifest read_artifact_manifest(const std::string& dir);
// Per kernel, for reports: its implementation as the user knows it ("generated", "onednn",
// "interpreter"; target cuda: "generated", "cublas_gemm", "cudnn_conv", "interpreter
// (host)"), schedule, primitives, predicted cost, signature, blocked layouts.
std::vector<KernelInfo> kernel_infos_of(const Manifest& m);

// Checks that file `name` of the artifact in `dir` has the size and SHA-256 the manifest
// records, before the runtime reads or loads it; throws kora::Error naming the file.
void verify_artifact_file(const Manifest& m, const std::string& dir, const std::string& name);
// Checks bytes already read (the weights) against the manifest's record of file `name`.
void verify_artifact_bytes(const Manifest& m, const std::string& path, const std::string& name,
                           const void* data, size_t bytes);
// A generated kernel's arguments as text ("float32 [2, 3], float32 [3] -> float32 [2]"):
// compiled into its library as SYMBOL_io, compared with the manifest's tensors at load.
// `layouts` (reads then writes; empty: none) marks the tensors a kernel generated on
// layout views (src/cpu/layout_view.h) takes in a permutation layout:
// "float32 [1, 8, 5, 6] @acdb -> ...". A text with a layout binds every argument's layout.
std::string kernel_io_text(const std::vector<ValueInfo>& reads,
                           const std::vector<ValueInfo>& writes,
                           const std::vector<std::string>& layouts = {});

// Checksum of the weights file: FNV-1a over 8-byte words (fast enough for 400 MB).
uint64_t weights_checksum(const void* data, size_t bytes);

}  // namespace kora
