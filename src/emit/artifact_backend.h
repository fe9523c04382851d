// Internal: what a backend gives the artifact emitter (src/emit/emit_artifact.cc). The
// emitter does what every target shares: the chosen kernels' reads and writes, the
// tensors' storage (inputs, weights, an arena placed by lifetime, outputs), weights.bin,
// manifest.json, the directory written under a temporary name and renamed into place. A
// backend chooses each kernel's implementation and compiles the generated code into
// files of the artifact: the CPU one (src/cpu/artifact.cc: generated C++ libraries,
// oneDNN, the interpreter, blocked layouts) and the CUDA one (src/cuda/artifact.cc:
// cubins, cuBLAS, cuDNN).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/compile.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"
#include "runtime/manifest.h"

namespace kora {

// One chosen kernel on its way into the artifact.
struct Emitted {
  Candidate candidate;
  ManifestKernel kernel;  // reads, writes, signature, predicted cost and names filled
  std::string source;     // generated: its source
  // oneDNN convolutions: whether to run in native blocked layouts when its neighbours
  // allow (false where the database measured that slower than on plain tensors).
  bool native_ok = true;
  // Generated code on layout views (src/cpu/layout_view.h): the sides it reads or writes
  // stored in a permutation layout, as the solver decided them.
  std::map<std::string, std::string> views;
};

class ArtifactBackend {
 public:
  virtual ~ArtifactBackend() = default;
  // Sets the manifest's target fields (target, arch, threads).
  virtual void describe(Manifest& m) const = 0;
  // Chooses kernel `index`'s implementation: e.kernel.impl, schedule and what it needs.
  virtual void implement(const PrimGraph& graph, const KernelDag& dag, int index,
                         const ChosenKernel& chosen, Emitted& e) = 0;
  // Compiles the generated kernels into files in `tmp`, listed in m.libraries.
  virtual void compile(const PrimGraph& graph, const KernelDag& dag, std::vector<Emitted>& emitted,
                       const std::filesystem::path& tmp, Manifest& m) = 0;
  // Once every tensor has its storage: blocked layouts (returns how many tensors) and the
  // last fields of each kernel; counts implementations in `summary`.
  virtual int64_t assign_layouts(const PrimGraph& graph, const KernelDag& dag,
                                 const std::vector<Emitted>& emitted, Manifest& m) = 0;
  virtual void finish(const PrimGraph& graph, Emitted& e, int index, ArtifactSummary& summary) = 0;
  // Whether the runtime may run kernels of different steps side by side, each once the
  // kernels it depends on are done (CUDA's graph): the arena then shares bytes only
  // between tensors ordered by those dependencies in every run.
  virtual bool kernels_overlap() const { return false; }
};

// The kernel's primitives as a graph of their own (ManifestKernel::graph), for a library
// kernel (oneDNN, the interpreter) to be rebuilt from at run time (constants carried by
// name; the session takes their bytes from the weights).
std::shared_ptr<PrimGraph> kernel_graph(const PrimGraph& graph, const Candidate& c,
                                        const ManifestKernel& k, int index);

// Throws kora::Error unless `dir` is absent, empty or an artifact (which writing replaces).
void check_artifact_dir(const std::string& dir);
// Replaces `dir` (absent, empty or an artifact) with the artifact directory `from`.
void move_artifact_into_place(const std::string& from, const std::string& dir);

ArtifactSummary write_artifact_with(const PrimGraph& graph, const OrchestrationResult& plan,
                                    const std::string& dir, ArtifactBackend& backend);

}  // namespace kora
