// The CPU target (include/kora/target.h): x86-64 kernels generated as C++ (compiled with
// the system compiler) or taken from oneDNN, measured on this machine (src/cpu/profile.h)
// under its fingerprint (src/cpu/backend.h), emitted as shared libraries
// (src/cpu/artifact.h) that the runtime's CPU plan calls (src/runtime/cpu_plan.h).
#pragma once

#include <map>
#include <string>

#include "cpu/profile.h"
#include "kora/cost.h"
#include "kora/target.h"

namespace kora {

class CpuTarget : public Target {
 public:
  explicit CpuTarget(const TargetOptions& options);
  std::string name() const override { return "cpu"; }
  std::string device(const ProfileDb& db) override;
  std::string describe() const override;
  std::unique_ptr<CostModel> fallback_cost() const override;
  // LowerBoundCost at the machine's peaks (src/cpu/machine_peaks.h), measured once.
  std::unique_ptr<CostModel> lower_bound(ProfileDb& db, const std::string& device) override;
  std::unique_ptr<CostModel> typical_cost(ProfileDb& db, const std::string& device) override;
  std::map<uint64_t, double> unexplored_costs(const PrimGraph& graph,
                                              const ModelCandidates& candidates, ProfileDb& db,
                                              const std::string& device) override;
  // "library" where oneDNN computes the kernel (src/cpu/onednn_plan.h), else "generated".
  std::string implemented_by(const PrimGraph& graph, const KernelDag& dag,
                             const Candidate& c) const override;
  bool measures_here() const override { return true; }
  ProfileReport profile(const PrimGraph& graph, ProfileDb& db,
                        const TargetProfileOptions& options) override;
  // The profiler's check only (ProfileOptions::check_only).
  KernelCheck check_kernels(const PrimGraph& graph, ProfileDb& db,
                            const std::set<uint64_t>& kernels,
                            const TargetProfileOptions& options) override;
  ArtifactSummary write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                 const ProfileDb* db, const std::string& device,
                                 const std::string& dir, const TargetEmitOptions& options) override;

 private:
  const MachinePeaks& peaks(ProfileDb& db, const std::string& device);
  ProfileOptions profile_options(const TargetProfileOptions& options) const;

  TargetOptions options_;
  std::map<std::string, MachinePeaks> peaks_;  // by device fingerprint
  int threads_ = 0;                            // resolved: all cores when options_.threads is 0
};

}  // namespace kora
