// The CPU target (src/cpu/target.h): the CPU backend's answers to the pipeline.
#include "cpu/target.h"

#include <algorithm>
#include <thread>

#include "cpu/artifact.h"
#include "cpu/backend.h"
#include "cpu/machine_peaks.h"
#include "cpu/onednn_plan.h"
#include "cpu/profile.h"
#include "kora/check.h"
#include "kora/compile.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {

CpuTarget::CpuTarget(const TargetOptions& options)
    : options_(options),
      threads_(options.threads > 0 ? options.threads
                                   : static_cast<int>(std::thread::hardware_concurrency())) {
  if (options.bf16)
    if (const std::string why = onednn_bf16_missing(); !why.empty())
      throw Error("--bf16: " + why + "; compile without --bf16 (float32) on this machine");
}

std::string CpuTarget::device(const ProfileDb&) {
  return cpu_backend_fingerprint(threads_, options_.compiler, options_.bf16);
}

std::string CpuTarget::describe() const { return "cpu, " + std::to_string(threads_) + " threads"; }

std::unique_ptr<CostModel> CpuTarget::fallback_cost() const {
  return std::make_unique<RooflineCost>(device_params("cpu"));
}

const MachinePeaks& CpuTarget::peaks(ProfileDb& db, const std::string& device) {
  auto it = peaks_.find(device);  // measured once per target, kept or not by the database
  if (it == peaks_.end())
    it = peaks_.emplace(device, cpu_peaks(db, device, threads_, options_.bf16)).first;
  return it->second;
}

std::unique_ptr<CostModel> CpuTarget::lower_bound(ProfileDb& db, const std::string& device) {
  return std::make_unique<LowerBoundCost>(peaks(db, device));
}

std::unique_ptr<CostModel> CpuTarget::typical_cost(ProfileDb& db, const std::string& device) {
  return std::make_unique<LowerBoundCost>(peaks(db, device), true);
}

std::map<uint64_t, double> CpuTarget::unexplored_costs(const PrimGraph& graph,
                                                       const ModelCandidates& candidates,
                                                       ProfileDb& db, const std::string& device) {
  return unexplored_schedule_costs(graph, candidates, db, device);
}

std::string CpuTarget::implemented_by(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c) const {
  return onednn::plan_kernel(graph, dag, c, nullptr) ? "library" : "generated";
}

ProfileOptions CpuTarget::profile_options(const TargetProfileOptions& options) const {
  ProfileOptions p;
  p.threads = threads_;
  p.candidates = options.candidates;
  p.partition = options.partition;
  if (!options_.compiler.empty()) p.compile.compiler = options_.compiler;
  p.exhaustive = options_.exhaustive;
  p.search_max_seconds = options_.search_seconds;
  p.remeasure_suspect = options_.remeasure_suspect;
  p.bf16 = options_.bf16;
  if (p.bf16) p.tolerance = std::max(p.tolerance, kBf16Tolerance);
  p.progress = options.progress;
  p.terminal = options.terminal;
  p.only = options.only;
  p.defer_search = options.defer_search;
  p.enumerated = options.enumerated;
  if (options.scratch) {
    if (!options.scratch->data)
      options.scratch->data = std::make_shared<std::map<std::string, Tensor>>();
    p.reference = std::static_pointer_cast<std::map<std::string, Tensor>>(options.scratch->data);
  }
  return p;
}

ProfileReport CpuTarget::profile(const PrimGraph& graph, ProfileDb& db,
                                 const TargetProfileOptions& options) {
  const ProfileSummary s = profile_model(graph, db, profile_options(options));
  ProfileReport r;
  r.device = s.device;
  r.kernels = s.kernels;
  r.measured = s.measured;
  r.from_db = s.from_db;
  r.searched = s.searched;
  r.failed = static_cast<int64_t>(s.failures.size());
  r.seconds = s.total_seconds;
  r.text = format_profile_summary(s);
  r.json = profile_summary_json(s);
  return r;
}

KernelCheck CpuTarget::check_kernels(const PrimGraph& graph, ProfileDb& db,
                                     const std::set<uint64_t>& kernels,
                                     const TargetProfileOptions& options) {
  ProfileOptions p = profile_options(options);
  p.only = kernels;
  p.check_only = true;
  const ProfileSummary s = profile_model(graph, db, p);
  KernelCheck check;
  check.kernels = s.checked;
  for (const ProfileFailure& f : s.failures) check.failed[f.signature][f.schedule] = f.error;
  check.unusable.insert(s.unusable.begin(), s.unusable.end());
  check.seconds = s.total_seconds;
  return check;
}

ArtifactSummary CpuTarget::write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                          const ProfileDb* db, const std::string& device,
                                          const std::string& dir,
                                          const TargetEmitOptions& options) {
  ArtifactOptions a;
  a.device = device;
  a.threads = threads_;
  a.bf16 = options_.bf16;
  if (!options_.compiler.empty()) a.compile.compiler = options_.compiler;
  a.progress = options.progress;
  a.terminal = options.terminal;
  a.rejected = options.rejected;
  return write_cpu_artifact(graph, plan, db, dir, a);
}

}  // namespace kora
