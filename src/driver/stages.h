// Internal: the stages compile.cc and measure_on_demand.cc share without the checks
// their public entry points make once (include/kora/compile.h).
#pragma once

#include <cstdint>
#include <set>

#include "kora/compile.h"
#include "kora/cost.h"
#include "kora/orchestration.h"

namespace kora {

// How measuring treats the target's schedule search (TargetProfileOptions::defer_search).
enum class ScheduleSearch {
  kWith,      // with the kernels measured (a full profile)
  kDeferred,  // not with the kernels measured now; the known kernels' pending ones run
};

// What the target's profile of the graph takes from the compile options (its candidates as
// the solver enumerates them, the partition, progress).
TargetProfileOptions target_profile_options(const PrimGraph& graph, const Target& target,
                                            const CompileOptions& options);

// profile_for without check_compilable: the target measures the graph's candidates the
// database lacks (with `only`, of those kernels only).
ProfileReport measure_candidates(const PrimGraph& graph, Target& target, ProfileDb& db,
                                 const CompileOptions& options, const std::set<uint64_t>* only,
                                 ScheduleSearch search = ScheduleSearch::kWith,
                                 std::shared_ptr<ProfileScratch> scratch = nullptr,
                                 const ModelCandidates* enumerated = nullptr);

// The kernels of `plan` whose signature is in `wanted` and that no candidate of
// `enumerated` is: the whole-graph layout pass makes such kernels (a reshape of unit dims
// moved from one kernel into its neighbour, src/orchestrate/whole_graph_layouts.cc). As
// the candidates of one segment spanning the graph, so that a round measures them too.
ModelCandidates plan_kernels_outside(const PrimGraph& graph, const OrchestrationResult& plan,
                                     const std::set<uint64_t>& wanted,
                                     const ModelCandidates& enumerated);

// kora compile without measuring (src/driver/kernel_check.cc): the kernels of `plan` the
// database has no measurement of, checked against the interpreter; while one has no
// working implementation, it is priced out of `costs` and `plan` solved again. What
// failed is returned (for TargetEmitOptions::rejected).
KernelCheck check_plan_kernels(const PrimGraph& graph, Target& target, ProfileDb& db,
                               ProfileDbCost& costs, OrchestrationResult& plan,
                               const CompileOptions& options);

// Kernels not measured at a cost (ExcludedCost::kMs each) no plan takes while one of
// measured kernels exists: the fallback of the solve for the best plan of measured kernels.
class ExcludedCost : public CostModel {
 public:
  static constexpr double kMs = 1e4;
  double cost_ms(const PrimGraph&, const KernelDag&, const Candidate&) override { return kMs; }
  std::string describe() const override { return "kernels not measured excluded"; }
};

}  // namespace kora
