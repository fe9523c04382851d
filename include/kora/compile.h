// The compile API: an ONNX model (or its primitive graph) and a Target in; an artifact
// directory that libkora_runtime runs (include/kora/runtime.h) and a typed summary out.
// The pipeline, the same for every target (src/driver/compile.cc):
//   import     ONNX -> operator graph -> primitive graph (fission)
//   profile    the candidate kernels the database lacks, measured by the target
//   orchestrate  candidates (the target's) costed by the database for the target's device
//              (the target's roofline where unmeasured) -> chosen kernels
//   emit       the target writes the chosen kernels, weights and manifest; plan.json beside
//              them holds the primitive graph and this summary for reports (not executed)
// Where the target has lower bounds, profile and orchestrate are one stage, measure on
// demand (solve_on_demand): only the kernels of the plans the solver chooses are measured.
// Each stage is callable alone: import_model, profile_for, target_costs + orchestrate_for,
// solve_on_demand, Target::write_artifact. Progress (one line per stage) goes to options.progress.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kora/frontend.h"
#include "kora/orchestration.h"
#include "kora/primitive.h"
#include "kora/target.h"

namespace kora {

class ProfileDb;
class ProfileDbCost;

struct CompileOptions {
  std::string strategy = "optimal";  // optimal | greedy | unfused
  std::string db;                    // profile database; empty: default_profile_db_path()
  bool measure = true;  // profile what the database lacks, where the target measures here
  OrchestrationOptions orchestration;  // candidates, partition, solver (strategy: above)
  std::string model_path;  // the model file (names a measuring job); compile(path) sets it
  std::ostream* progress = nullptr;  // one line per stage, and the stages' progress
  bool terminal = false;             // progress as rewritten lines
  // Check the plan against the clock where the target measures here (and `measure`): the
  // optimal plan, its alternatives and the baselines run end to end, their in-plan kernel
  // times fed back as costs, and the fastest on the clock emitted (src/driver/plan_check.h).
  // Without `measure`: the plan's kernels checked against the interpreter, each run once
  // (src/driver/kernel_check.cc), what fails not emitted.
  bool verify = true;
  int verify_rounds = 3;  // re-solves after feedback, at most
  // The check's first round also times the solver's next-best plans, pool - 1 of them
  // (OrchestrationOptions::pool: the optimum with one segment's plan replaced by its
  // runner-up; of kernels measured, when measuring on demand), those 1-10% above the
  // optimum's cost. 1 (the default): none. On ResNet-50 and MobileNetV2 every runner-up
  // was within 1% (a kernel swapped for a near twin), too close to tell apart on the clock.
  int pool = 1;
  // "parallel" (cpu, with the check on the clock): the fastest plan's independent kernels
  // also tried in pairs, each on half the threads (src/orchestrate/parallel_schedule.h),
  // and that schedule emitted when it is faster on the clock; "serial": one kernel after
  // another, each on every thread.
  std::string schedule = "serial";
  // Measure on demand where the target has lower bounds (src/driver/measure_on_demand.cc):
  // only the kernels of the plans the solver chooses at predicted costs, until the plan
  // holds measured kernels only (docs/benchmarks.md: a fifth of the candidates measured,
  // plans 0-8% above the optimum of the full table). False (kora compile --all): every
  // candidate the database lacks, first.
  bool on_demand = true;
  int on_demand_rounds = 40;  // solves, at most
  // Then the solve with kernels not measured at their lower bounds bounds every plan's
  // cost: with a gap >= 0, the bound solve's kernels not measured are measured too until
  // the plan costs at most this much (relative) more than that bound (0: only at the
  // optimum itself); < 0: the bound is reported, nothing more measured for it.
  double on_demand_gap = -1;
  // Kernels not measured cost their prediction (PredictedCost) while the solver chooses
  // what to measure, lowered by this many spreads of the similar kernels' ratios (so it
  // also measures kernels that may beat their prediction).
  double on_demand_caution = 1.0;
  // Stop measuring when the plan at predicted costs promises less than this fraction below
  // the best plan of kernels already measured (the measurements' noise: a recompile of a
  // model measured before measures nothing).
  double on_demand_tolerance = 0.01;
  // Stop measuring too after this many rounds in a row whose measurements did not make the
  // plan of measured kernels cheaper by on_demand_tolerance (predictions that each round
  // stay a little optimistic for the kernels not yet measured: an unrolled recurrent cell's
  // dozens of shapes); the best plan of measured kernels is taken. 0: never (kora profile,
  // which measures on demand further, so that a compile after it measures nothing more).
  int on_demand_patience = 5;
  // A recompile (compile sets it where the database remembers the plan it emitted for the
  // graph): the best plan of the kernels measured is taken and nothing is measured, unless
  // they cannot compute the graph. kora profile measures on demand further.
  bool on_demand_recompile = false;
};

// Measure on demand: what the rounds did.
struct OnDemandReport {
  bool used = false;       // the target has lower bounds and on_demand was on
  std::string bound;       // the lower bound model
  int rounds = 0;          // solves
  int64_t candidates = 0;  // unique candidate kernels of the graph
  int64_t measured = 0;    // kernels measured by the rounds
  int64_t searched = 0;    // of them, kernels of a plan whose other schedules were measured
  int64_t failed = 0;      // implementations stored as failed
  int64_t at_bound = 0;    // kernels of the plan not measured (0 unless out of rounds)
  int64_t settled = 0;     // times the plan promised no more than on_demand_tolerance
  int64_t patience = 0;    // times measuring stopped after on_demand_patience rounds of no gain
  // The plan's cost and the lower bound of every plan's (the solve at lower bounds):
  // within `gap` (relative) of each other, the plan is that close to the optimum of the full
  // measured table, 0 when it is that optimum.
  double cost_ms = 0, bound_ms = 0, gap = 0;
  bool complete = false;  // every kernel of the plan measured and the gap within the option
  double profile_seconds = 0, solve_seconds = 0;
  // The options' PartitionOptions::hard and the segments the solves cut in halves: a solve
  // of the graph given them cuts those at once.
  std::vector<std::pair<int, int>> hard_segments;
};

// One plan measured end to end by the check on the clock.
struct PlanCheck {
  std::string label;  // "optimal", "greedy", "unfused", "optimal (round 2)", ...
  int64_t kernels = 0;
  double predicted_ms = 0;  // the solver's prediction when chosen
  double in_plan_ms = 0;    // the sum of its kernels' times inside the running plan
  double measured_ms = 0;   // median end-to-end latency (device time of the plan)
  // Among the plans timed in the final window (those within 10% of the fastest they were
  // last timed with); the emitted plan is the fastest of them.
  bool finalist = false;
  std::string error;  // not measured: why
  // The kernel whose time inside the running plan most exceeded its cost when the plan
  // was chosen (measured alone, or in context), where it took at least 4x that cost:
  // "kernel 1 (generated: /conv1/Relu#0, ...): 6.482 ms in the plan against its cost of
  // 0.114 ms (57x)"; its excess over that cost in outlier_ms.
  // Empty: none. (A kernel generated into the artifact's translation unit can compile
  // differently from when it was measured; or its inputs can arrive in another state.)
  std::string outlier;
  double outlier_ms = 0;
};

// What the emitted artifact holds.
struct ArtifactSummary {
  int64_t kernels = 0, generated = 0, onednn = 0, interpreter = 0;
  int64_t cublas = 0, cudnn = 0;  // target cuda: library calls (generated: CUDA kernels)
  int64_t libraries = 0;          // kernel libraries (cpu) or cubins (cuda)
  std::string arch;               // target cuda: the cubins' architecture
  double predicted_ms = 0;
  int64_t arena_bytes = 0, intermediate_bytes = 0, weights_bytes = 0;
  int64_t blocked_tensors = 0;  // kept in a blocked layout between oneDNN convolutions
  double generate_seconds = 0, compile_seconds = 0, write_seconds = 0;
};

struct CompileSummary {
  std::string target, device, describe, artifact_dir, database;
  int64_t primitives = 0;
  bool profiled = false;  // profile ran (measure on, the target measures here)
  ProfileReport profile;
  OnDemandReport on_demand;  // when measured on demand (profile then holds the rounds' sum)
  std::string strategy;
  int64_t kernels = 0;
  double predicted_ms = 0, gap_ms = 0;
  bool proven_optimal = false;
  int64_t measured_costs = 0, roofline_costs = 0;  // kernel costs looked up
  int64_t estimated_kernels = 0;   // chosen kernels never measured (roofline estimates)
  std::vector<std::string> notes;  // what the user should know of the plan
  // Not measured (CompileOptions::measure off, verify on): the plan's kernels checked
  // against the interpreter, and what failed (src/driver/kernel_check.cc).
  KernelCheck kernel_check;
  ArtifactSummary artifact;
  // The check on the clock (CompileOptions::verify): every plan measured, and which one was
  // emitted (the fastest; -1: no check).
  std::vector<PlanCheck> checked;
  int emitted_check = -1;
  double measured_ms = 0;  // the emitted plan's latency, when checked
  double verify_seconds = 0;
  double import_seconds = 0, profile_seconds = 0, orchestrate_seconds = 0, emit_seconds = 0,
         total_seconds = 0;
};

struct CompiledArtifact {
  std::string dir;
  CompileSummary summary;
};

// ONNX file -> primitive graph (import_onnx, then fission).
PrimGraph import_model(const std::string& path, const ImportOptions& options = {});

// Throws kora::Error naming the first input or computed tensor that kora cannot compile:
// one without elements (a zero-sized dimension) or one larger than this machine's memory.
// compile, profile_for and solve_on_demand call it first.
void check_compilable(const PrimGraph& graph);

// Measures what the database lacks for the graph's candidates (as orchestrate_for sees
// them) on the target; with `only`, of those kernels only.
ProfileReport profile_for(const PrimGraph& graph, Target& target, ProfileDb& db,
                          const CompileOptions& options = {},
                          const std::set<uint64_t>* only = nullptr);

// The database's costs for the target's device (*device set), its roofline for kernels
// not measured (or `fallback`: then also native layouts at its cost, as for a lower
// bound), its penalty for kernels that failed.
std::unique_ptr<ProfileDbCost> target_costs(Target& target, std::shared_ptr<const ProfileDb> db,
                                            std::string* device = nullptr,
                                            std::unique_ptr<CostModel> fallback = nullptr);

// The plan and the costs it was solved at.
struct SolvedPlan {
  OrchestrationResult plan;
  std::unique_ptr<ProfileDbCost> costs;
};

// Measure on demand, profile and orchestrate in one (src/driver/measure_on_demand.cc):
// solved with kernels not measured at their predicted cost (PredictedCost, from the
// graph's kernels measured so far), the plan's kernels not yet measured are measured (one
// target.profile per round, all of them together) until the plan holds measured kernels
// only; then solved with kernels not measured at their lower bound (Target::lower_bound),
// which bounds every plan's cost from below and is reported. With options.on_demand_gap
// >= 0 and the plan further than that from the bound, that solve's unmeasured kernels are
// measured too and both solved again. Throws kora::Error for a target without bounds.
SolvedPlan solve_on_demand(const PrimGraph& graph, Target& target, std::shared_ptr<ProfileDb> db,
                           const CompileOptions& options, OnDemandReport& report);

// The plan over the target's candidates at `costs`.
OrchestrationResult orchestrate_for(const PrimGraph& graph, Target& target, CostModel& costs,
                                    const CompileOptions& options = {});

// Every stage. Throws kora::Error (nothing left at `dir`) naming what failed.
CompiledArtifact compile(const PrimGraph& graph, Target& target, const std::string& dir,
                         const CompileOptions& options = {});
CompiledArtifact compile(const std::string& model_path, Target& target, const std::string& dir,
                         const CompileOptions& options = {}, const ImportOptions& import = {});

// Measure on demand's rounds and its plan, as text (kora profile) and as JSON.
std::string format_on_demand(const OnDemandReport& report, const OrchestrationResult& plan);
std::string on_demand_json(const OnDemandReport& report, const OrchestrationResult& plan);

// kora compile's summary on stdout, and the same as JSON.
std::string format_compile_summary(const CompileSummary& summary);
std::string compile_summary_json(const CompileSummary& summary);

}  // namespace kora
