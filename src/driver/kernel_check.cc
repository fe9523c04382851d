// The check of an unmeasured plan (kora compile --no-measure): a plan and its costs in;
// the kernels it holds that the database has no measurement of are run once against the
// interpreter (Target::check_kernels), and while one of them has no working implementation
// but the interpreter, it is priced out (kFailedCheckMs) and the plan solved again. Out:
// what failed, which write_artifact then does not emit (TargetEmitOptions::rejected).
// A measured compile needs none of this: measuring checks every implementation first.
#include <algorithm>
#include <set>

#include "driver/stages.h"
#include "kora/target.h"

namespace kora {

namespace {

// A kernel only the interpreter computes costs this much (as CUDA's failed kernels do,
// kCudaFailedKernelMs): the solver takes it only where no other plan computes its
// primitives.
constexpr double kFailedCheckMs = 1000;
constexpr int kCheckRounds = 3;  // solves after the first, at most

}  // namespace

KernelCheck check_plan_kernels(const PrimGraph& graph, Target& target, ProfileDb& db,
                               ProfileDbCost& costs, OrchestrationResult& plan,
                               const CompileOptions& options) {
  TargetProfileOptions p = target_profile_options(graph, target, options);
  p.scratch = std::make_shared<ProfileScratch>();  // the interpreter's values, once
  KernelCheck all;
  std::set<uint64_t> seen, priced_out;
  for (int round = 0;; ++round) {
    std::set<uint64_t> unchecked;
    for (const ChosenKernel& k : plan.kernels)
      if (!costs.measured(k.signature) && seen.insert(k.signature).second)
        unchecked.insert(k.signature);
    if (unchecked.empty()) break;
    const KernelCheck r = target.check_kernels(graph, db, unchecked, p);
    all.kernels += r.kernels;
    all.seconds += r.seconds;
    for (const auto& [signature, failed] : r.failed)
      all.failed[signature].insert(failed.begin(), failed.end());
    all.unusable.insert(r.unusable.begin(), r.unusable.end());
    if (r.unusable.empty() || round == kCheckRounds) break;
    priced_out.insert(r.unusable.begin(), r.unusable.end());
    costs.penalize(priced_out, kFailedCheckMs);
    plan = orchestrate_for(graph, target, costs, options);
  }
  return all;
}

}  // namespace kora
