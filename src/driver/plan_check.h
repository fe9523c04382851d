// Internal: kora compile's check of the plan against the clock (src/driver/compile.cc).
// The graph, the target, the database and the solver's plan in; the plan that was fastest
// end to end, its artifact at the output directory, and what was measured out:
//   1. the optimal plan, the greedy and the unfused ones (same candidates) are written as
//      artifacts and run in turn on the same random inputs (warm-up first; each round runs
//      every plan in a short burst, so load that comes and goes hits all alike while each
//      plan finds its own data in the caches), the median of each
//      plan's device time (Session::plan_ms) its latency; each kernel's time inside its
//      running plan is measured too (Session::profile_kernels);
//   2. those in-plan times go into the database (ProfileDb::put_in_plan) and become the
//      costs the solver sees for those kernels (ProfileDbCost);
//   3. the optimal plan is solved again at these costs; while it is a plan not measured
//      yet (at most `rounds` times) and the last one beat the fastest before it on the
//      clock, it is written, run and fed back the same way;
//   With them in the first round: the plan the last compile of this graph emitted on this
//   device (driver/previous_plan.h), which the emitted plan replaces there.
//   4. the plans within 10% of the fastest are timed in turn once more, in one window (so
//      that drift between rounds does not decide), and the fastest is emitted; the others
//      are removed.
// A plan that cannot be run here (a session error) is reported and left out; when none
// can, the solver's plan is emitted unchecked.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kora/compile.h"
#include "kora/profile_db.h"
#include "kora/target.h"

namespace kora {

struct PlanCheckResult {
  std::vector<PlanCheck> plans;  // in the order measured
  int emitted = -1;              // index into plans; -1: none could be measured
  ArtifactSummary artifact;      // the emitted plan's
  OrchestrationResult plan;      // the emitted plan
};

// `first` is the solver's plan for options.strategy at `device`'s costs; the artifact goes
// to `dir`. Strategies other than optimal are only measured (no alternatives).
PlanCheckResult check_plans_on_the_clock(const PrimGraph& graph, Target& target,
                                         std::shared_ptr<ProfileDb> db, const std::string& device,
                                         const OrchestrationResult& first, const std::string& dir,
                                         const CompileOptions& options);

}  // namespace kora
