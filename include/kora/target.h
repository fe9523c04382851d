// A compilation target: what a backend tells the pipeline (include/kora/compile.h). The
// pipeline is the same for every target; a backend answers, for one device:
//   device()          which fingerprint in the profile database measures it (and holds
//                     the costs the plan is chosen by);
//   candidates()      which candidate kernels it computes (a filter on enumeration);
//   fallback_cost()   what a kernel not measured yet costs (the device's roofline);
//   failure_penalty_ms()  what a kernel whose every implementation failed costs;
//   measures_here() / profile()  how its kernels are measured: on this machine, or
//                     through a job for a machine elsewhere;
//   check_kernels()   without measuring, whether the kernels it would emit compute what
//                     the interpreter does;
//   kernel_note()     what a user should know of a chosen kernel (it runs on the host);
//   write_artifact()  how a plan becomes an artifact directory.
// The runtime half of a backend lives in libkora_runtime (src/runtime/plan.h): the
// manifest's target name, name() here, selects the plan that runs the artifact's steps.
// make_target() builds the targets kora has: "cpu" (src/cpu/target.h) and "cuda"
// (src/cuda/target.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/kernel_dag.h"
#include "kora/orchestration.h"
#include "kora/partition.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

// The options of every target, each read by the targets it names.
struct TargetOptions {
  // cpu: threads per kernel (0: all cores) and the compiler of the generated kernels
  // (empty: g++); both are part of the device fingerprint.
  int threads = 0;
  std::string compiler;
  // cpu profiling: every schedule of every kernel; the schedule search's time limit.
  bool exhaustive = false;
  double search_seconds = 300;
  bool remeasure_suspect = false;  // measure again what was measured on a busy machine
  // cuda: the GPU whose fingerprint in the database contains `gpu` (empty: the GPU here,
  // else the database's only one); its architecture (empty: that GPU's, else sm_80).
  std::string gpu, arch;
  bool tf32 = false;  // cuBLAS / cuDNN with TF32 tensor-core math (explicit; ~1e-3 error)
  bool bf16 = false;  // cpu: oneDNN convolutions and matmuls in bf16 (explicit; ~1e-2)
  // cuda: horizontal fusion, pairs of independent generated kernels in one launch offered
  // per segment (CandidateOptions::horizontal_pairs); 0: none.
  int horizontal = 0;
  int schedules = -1;      // generated kernels' schedules measured: first N, 0 all, -1 tuned
  double tune_ms = 0.01;   // -1 tuning: all schedules of kernels whose default took this long
  std::string job_dir;     // the measuring job's directory (empty: next to the database)
  bool run_worker = true;  // false: write the job only, even with a GPU here
  // cuda, `gpu` and `arch` set: a GPU the database holds no measurement of is measured
  // from nothing (kora profile's first job for it) instead of being an error.
  bool new_gpu = false;
};

// What profiling measured, in the target's own words too.
struct ProfileReport {
  std::string device;
  int64_t kernels = 0;   // unique candidate kernels
  int64_t measured = 0;  // implementations or kernels measured now
  int64_t from_db = 0;   // known before
  int64_t failed = 0;    // implementations stored as failed
  int64_t searched = 0;  // kernels whose other schedules were measured now
  double seconds = 0;
  std::string text;  // the target's summary, several lines
  std::string json;  // the same as a JSON object
};

// What a target computed for a graph that its later profiles of the same graph reuse (the
// CPU target: the reference values measurements are checked against); kept by the caller
// across calls for one graph (measure on demand's rounds).
struct ProfileScratch {
  std::shared_ptr<void> data;
};

struct TargetProfileOptions {
  CandidateOptions candidates;  // as orchestration enumerates them
  PartitionOptions partition;
  std::string model_path;  // names the measuring job of targets that write one
  std::ostream* progress = nullptr;
  bool terminal = false;  // progress as rewritten lines
  // Measure only these kernels (by signature; measure on demand), or, without, every
  // candidate the database lacks.
  std::optional<std::set<uint64_t>> only;
  // Measure on demand: the kernels measured now get no schedule search; the known kernels
  // of `only` with one pending (unexplored_costs) get theirs. Ignored by targets without
  // a schedule search.
  bool defer_search = false;
  std::shared_ptr<ProfileScratch> scratch;  // null: nothing kept between calls
  // The graph's candidates enumerated with these options (unique_candidates), or null.
  const ModelCandidates* enumerated = nullptr;
};

// What check_kernels() found: the implementations that failed their check against the
// interpreter, and the kernels none of whose checked implementations works.
struct KernelCheck {
  int64_t kernels = 0;  // kernels checked
  // signature -> schedule -> what was wrong
  std::map<uint64_t, std::map<std::string, std::string>> failed;
  std::set<uint64_t> unusable;  // only the interpreter computes them
  double seconds = 0;
  bool rejects(uint64_t signature, const std::string& schedule) const {
    const auto it = failed.find(signature);
    return it != failed.end() && it->second.count(schedule) > 0;
  }
};

struct TargetEmitOptions {
  std::ostream* progress = nullptr;
  bool terminal = false;
  // Implementations not to emit: they failed check_kernels() (null: none checked).
  const KernelCheck* rejected = nullptr;
};

struct ArtifactSummary;

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda": the manifest's target
  // The device fingerprint of the costs (the database may decide it: a GPU measured
  // elsewhere). Throws kora::Error when there is none, saying how to measure one.
  virtual std::string device(const ProfileDb& db) = 0;
  // One line for progress: the target and what it compiles for.
  virtual std::string describe() const = 0;
  virtual CandidateOptions candidates(const PrimGraph& graph, CandidateOptions options) const {
    (void)graph;
    return options;
  }
  virtual std::unique_ptr<CostModel> fallback_cost() const = 0;
  // A cost no implementation of a kernel can beat on the device (measure on demand:
  // src/driver/measure_on_demand.h); nullptr: the target measures every candidate.
  virtual std::unique_ptr<CostModel> lower_bound(ProfileDb& db, const std::string& device) {
    (void)db, (void)device;
    return nullptr;
  }
  // What a kernel not measured yet typically costs on the device (never below its lower
  // bound): guides which kernels measure on demand measures first; nullptr: the bounds do.
  virtual std::unique_ptr<CostModel> typical_cost(ProfileDb& db, const std::string& device) {
    (void)db, (void)device;
    return nullptr;
  }
  // What implements a kernel, as measure on demand's predictor tells kernels apart: a
  // library's call ("library") or generated code ("generated"); "": not told apart.
  virtual std::string implemented_by(const PrimGraph& graph, const KernelDag& dag,
                                     const Candidate& c) const {
    (void)graph, (void)dag, (void)c;
    return "";
  }
  // Measure on demand: kernels measured, but not yet every implementation a full profile
  // measures (the CPU's schedule search, deferred: TargetProfileOptions::defer_search),
  // each with what it may cost once they are measured too (optimistic). A plan that takes
  // one at that cost has it measured further. Empty: every measured kernel's cost is final.
  virtual std::map<uint64_t, double> unexplored_costs(const PrimGraph& graph,
                                                      const ModelCandidates& candidates,
                                                      ProfileDb& db, const std::string& device) {
    (void)graph, (void)candidates, (void)db, (void)device;
    return {};
  }
  // < 0: a kernel whose implementations all failed costs what the fallback says.
  virtual double failure_penalty_ms() const { return -1; }
  virtual bool measures_here() const = 0;
  // Measures through a job for a machine elsewhere, whose results a later call brings back
  // (cuda with --gpu): measure on demand runs one round per job there.
  virtual bool measures_elsewhere() const { return false; }
  // The results of the last job for a machine elsewhere, brought back next to it, checked
  // and stored; how many kernels were stored (0: none were there).
  virtual int64_t merge_results(const PrimGraph& graph, ProfileDb& db,
                                const TargetProfileOptions& options) {
    (void)graph, (void)db, (void)options;
    return 0;
  }
  virtual ProfileReport profile(const PrimGraph& graph, ProfileDb& db,
                                const TargetProfileOptions& options) = 0;
  // Without measuring (kora compile --no-measure): what write_artifact() would emit for
  // `kernels` (by signature) when the database has no measurement of them, each run once
  // on the interpreter's values and compared with them. A target that cannot run kernels
  // here checks nothing (KernelCheck::kernels 0).
  virtual KernelCheck check_kernels(const PrimGraph& graph, ProfileDb& db,
                                    const std::set<uint64_t>& kernels,
                                    const TargetProfileOptions& options) {
    (void)graph, (void)db, (void)kernels, (void)options;
    return {};
  }
  virtual std::string kernel_note(const PrimGraph& graph, const KernelDag& dag,
                                  const Candidate& c) const {
    (void)graph, (void)dag, (void)c;
    return "";
  }
  // How to measure kernels the plan took at the fallback's estimate ("" : kora compile
  // measures them itself).
  virtual std::string measure_hint() const { return ""; }
  // `device` is device(db)'s answer, whose measurements choose implementations.
  virtual ArtifactSummary write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                         const ProfileDb* db, const std::string& device,
                                         const std::string& dir,
                                         const TargetEmitOptions& options) = 0;
};

// "cpu" or "cuda"; throws kora::Error for another name, or "cuda" in a kora built
// without the CUDA toolkit.
std::unique_ptr<Target> make_target(const std::string& name, const TargetOptions& options = {});
std::vector<std::string> target_names();

}  // namespace kora
