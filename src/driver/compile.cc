// The compile pipeline (include/kora/compile.h), the same for every target: import,
// profile what the database lacks and orchestrate at the database's costs for the target's
// device (both at once where the target has lower bounds: measure on demand), check the
// plan on the clock (or, measuring nothing, its kernels against the interpreter), emit with the
// target, and add plan.json to the artifact (the primitive graph, this summary and the baselines'
// predictions, for `kora report`: src/report/plan_file.h). Each stage reports one progress line;
// the summary collects what each did. A graph with a zero-sized tensor or one larger than the
// machine's memory is refused first, naming the tensor.
#include "kora/compile.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <set>
#include <sstream>

#include "base/interrupt.h"
#include "base/text.h"
#include "driver/plan_check.h"
#include "driver/previous_plan.h"
#include "driver/stages.h"
#include "emit/artifact_backend.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/profile_db.h"
#include "report/plan_file.h"

namespace kora {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void progress_line(const CompileOptions& options, const std::string& line) {
  if (options.progress) *options.progress << "kora compile: " << line << std::endl;
}

// What the user should know of the chosen kernels: those the target notes (grouped by
// note), and how many were chosen at the roofline's estimate (never measured).
void note_plan(const PrimGraph& graph, const OrchestrationResult& plan, const Target& target,
               const ProfileDbCost& costs, CompileSummary& s) {
  int64_t suspect = 0;
  for (const ChosenKernel& k : plan.kernels) suspect += costs.suspect(k.signature);
  if (suspect > 0)
    s.notes.push_back(std::to_string(suspect) + " of the " + std::to_string(plan.kernels.size()) +
                      " chosen kernels cost what was measured while other processes used the "
                      "CPU or the machine ran slowed (suspect: the check on the clock decides "
                      "among the plans; kora profile --suspect on a quiet machine measures them "
                      "again)");
  if (plan.segments_over_budget > 0)
    s.notes.push_back(std::to_string(plan.segments_over_budget) +
                      " segments had more candidate kernels than the budget of one segment "
                      "(wide fan-outs or fan-ins): their kernels were limited to " +
                      std::to_string(plan.budget_max_size) + " primitives");
  const KernelDag dag = kernel_dag_of(graph);
  if (plan.horizontal_pairs > 0)
    s.notes.push_back("horizontal fusion: " + std::to_string(plan.horizontal_pairs) +
                      " pairs of independent kernels offered as one launch each, " +
                      std::to_string(plan.horizontal_chosen) + " in the plan");
  std::vector<std::pair<std::string, std::string>> noted;  // (note, kernels)
  for (const ChosenKernel& k : plan.kernels) {
    const std::string note = target.kernel_note(graph, dag, make_candidate(dag, k.prims));
    if (note.empty()) {
      s.estimated_kernels += !costs.measured(k.signature);
      continue;
    }
    auto it =
        std::find_if(noted.begin(), noted.end(), [&](const auto& n) { return n.first == note; });
    if (it == noted.end()) it = noted.insert(noted.end(), {note, ""});
    it->second += (it->second.empty() ? "" : ", ") + graph.prims[k.prims[0]].name;
  }
  for (const auto& [note, kernels] : noted) s.notes.push_back(note + ": " + kernels);
  if (s.estimated_kernels > 0) {
    const std::string hint = target.measure_hint();
    s.notes.push_back(
        std::to_string(s.estimated_kernels) + " of the " + std::to_string(plan.kernels.size()) +
        " chosen kernels were never measured on " + s.device + ": their costs are estimates (" +
        (s.on_demand.used ? "typical costs" : "roofline") + ")" +
        (hint.empty() ? "" : " (" + hint + ")"));
  }
}

// What failed the check against the interpreter (unmeasured compiles): per kernel of the
// plan, the implementations not emitted; the kernels solved out of the plan, counted.
void note_failed_checks(const PrimGraph& graph, const OrchestrationResult& plan,
                        CompileSummary& s) {
  constexpr size_t kNamed = 5;  // kernels named one by one; the rest counted
  const KernelCheck& check = s.kernel_check;
  size_t in_plan = 0;
  std::set<uint64_t> kept;  // failed signatures still in the plan
  for (const ChosenKernel& k : plan.kernels) {
    const auto it = check.failed.find(k.signature);
    if (it == check.failed.end()) continue;
    kept.insert(k.signature);
    if (++in_plan > kNamed) continue;
    std::string what;
    for (const auto& [schedule, error] : it->second)
      what += (what.empty() ? "" : "; ") + schedule + ": " + error.substr(0, error.find('\n'));
    s.notes.push_back("kernel " + graph.prims[k.prims[0]].name +
                      " failed its check against the interpreter (" + what + "): " +
                      (check.unusable.count(k.signature) ? "the interpreter runs it"
                                                         : "another implementation runs it"));
  }
  if (in_plan > kNamed)
    s.notes.push_back(std::to_string(in_plan - kNamed) +
                      " more kernels of the plan failed their check against the interpreter");
  if (check.failed.size() > kept.size())
    s.notes.push_back(std::to_string(check.failed.size() - kept.size()) +
                      " kernels failed their check against the interpreter and were solved out "
                      "of the plan");
}

}  // namespace

void check_compilable(const PrimGraph& graph) {
  const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) *
                         static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
  auto check = [&](const std::string& name) {
    const ValueInfo& v = graph.value(name);
    const int64_t bytes = checked_nbytes(v.dtype, v.shape);
    const std::string what =
        "tensor '" + name + "' (" + dtype_name(v.dtype) + " " + shape_str(v.shape) + ")";
    if (bytes == 0)
      throw Error(what +
                  " has no elements: kora does not compile zero-sized tensors (set a "
                  "symbolic dimension with --dim NAME=VALUE)");
    if (bytes < 0 || (memory > 0 && bytes > memory))
      throw Error(what + " is larger than this machine's memory (" + std::to_string(memory) +
                  " bytes)");
  };
  for (const std::string& in : graph.inputs) check(in);
  for (const Primitive& p : graph.prims)
    for (const std::string& out : p.outputs) check(out);
}

PrimGraph import_model(const std::string& path, const ImportOptions& options) {
  FissionOptions f;
  f.trace = options.trace;
  return fission(import_onnx(path, options), f);
}

ProfileReport profile_for(const PrimGraph& graph, Target& target, ProfileDb& db,
                          const CompileOptions& options, const std::set<uint64_t>* only) {
  check_compilable(graph);
  return measure_candidates(graph, target, db, options, only);
}

TargetProfileOptions target_profile_options(const PrimGraph& graph, const Target& target,
                                            const CompileOptions& options) {
  TargetProfileOptions p;
  // The target's candidates, as the solver enumerates them (its capability filter and
  // horizontal pairs), so that a round measures the kernels a solve asks for.
  p.candidates = target.candidates(graph, options.orchestration.candidates);
  p.partition = options.orchestration.partition;
  p.model_path = options.model_path.empty() ? graph.name : options.model_path;
  p.progress = options.progress;
  p.terminal = options.terminal;
  return p;
}

ProfileReport measure_candidates(const PrimGraph& graph, Target& target, ProfileDb& db,
                                 const CompileOptions& options, const std::set<uint64_t>* only,
                                 ScheduleSearch search, std::shared_ptr<ProfileScratch> scratch,
                                 const ModelCandidates* enumerated) {
  TargetProfileOptions p = target_profile_options(graph, target, options);
  if (only) p.only = *only;
  p.defer_search = search == ScheduleSearch::kDeferred;
  p.scratch = std::move(scratch);
  p.enumerated = enumerated;
  return target.profile(graph, db, p);
}

std::unique_ptr<ProfileDbCost> target_costs(Target& target, std::shared_ptr<const ProfileDb> db,
                                            std::string* device,
                                            std::unique_ptr<CostModel> fallback) {
  const std::string fingerprint = target.device(*db);
  if (device) *device = fingerprint;
  const bool bound = fallback != nullptr;
  auto costs = std::make_unique<ProfileDbCost>(
      std::move(db), fingerprint, bound ? std::move(fallback) : target.fallback_cost());
  if (bound) costs->offer_native_at_fallback();
  if (target.failure_penalty_ms() >= 0) costs->penalize_failed(target.failure_penalty_ms());
  return costs;
}

OrchestrationResult orchestrate_for(const PrimGraph& graph, Target& target, CostModel& costs,
                                    const CompileOptions& options) {
  OrchestrationOptions o = options.orchestration;
  o.strategy = options.strategy;
  o.candidates = target.candidates(graph, o.candidates);
  // Costs in context: kernels never timed inside a running plan priced like the graph's
  // kernels that were (ProfileDbCost::learn_context), from the candidates the solve sees.
  auto* db_costs = dynamic_cast<ProfileDbCost*>(&costs);
  if (!db_costs || db_costs->in_plan() == 0) return orchestrate(graph, costs, o);
  ModelCandidates own;
  if (!o.enumerated) {
    own = unique_candidates(graph, o.partition, o.candidates);
    o.enumerated = &own;
  }
  db_costs->learn_context(graph, o.enumerated->unique);
  return orchestrate(graph, costs, o);
}

CompiledArtifact compile(const PrimGraph& graph, Target& target, const std::string& dir,
                         const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_compilable(graph);
  CompiledArtifact out;
  out.dir = dir;
  CompileSummary& s = out.summary;
  s.target = target.name();
  s.artifact_dir = dir;
  s.primitives = static_cast<int64_t>(graph.prims.size());
  auto db =
      std::make_shared<ProfileDb>(options.db.empty() ? default_profile_db_path() : options.db);
  s.database = db->path();

  const bool measure = options.measure && target.measures_here();
  const bool on_demand =
      measure && options.on_demand && target.lower_bound(*db, target.device(*db));
  if (measure && !on_demand) {
    const auto stage = std::chrono::steady_clock::now();
    s.profile = measure_candidates(graph, target, *db, options, nullptr);
    s.profiled = true;
    s.profile_seconds = seconds_since(stage);
    progress_line(options, "profile: " + std::to_string(s.profile.kernels) + " kernels, " +
                               std::to_string(s.profile.measured) + " measured now, " +
                               std::to_string(s.profile.from_db) + " from the database " +
                               s.database + ", " + std::to_string(s.profile.failed) +
                               " implementations failed (" + fixed(s.profile_seconds, 1) + " s)");
  }

  throw_if_interrupted("compiling");
  auto stage = std::chrono::steady_clock::now();
  CompileOptions recompile = options;
  std::unique_ptr<ProfileDbCost> costs;
  OrchestrationResult plan;
  if (on_demand) {
    s.device = target.device(*db);
    s.describe = target.describe();  // after device(): a target may learn its device there
    progress_line(options,
                  "target " + s.describe + ", costs of " + s.device + ", measured on demand");
    // A graph compiled before: what was measured for it is what this compile takes.
    recompile.on_demand_recompile = previous_emitted_plan(*db, s.device, graph).has_value();
    SolvedPlan solved = solve_on_demand(graph, target, db, recompile, s.on_demand);
    recompile.orchestration.partition.hard = s.on_demand.hard_segments;
    plan = std::move(solved.plan);
    costs = std::move(solved.costs);
    s.profiled = true;
    s.profile.device = s.device;
    s.profile.kernels = s.on_demand.candidates;
    s.profile.measured = s.on_demand.measured;
    s.profile.failed = s.on_demand.failed;
    s.profile.seconds = s.profile_seconds = s.on_demand.profile_seconds;
  } else {
    costs = target_costs(target, db, &s.device);
    s.describe = target.describe();  // after target.device(): the CUDA arch is known
    progress_line(options, "target " + s.describe + ", costs of " + s.device);
    plan = orchestrate_for(graph, target, *costs, options);
    // For a machine elsewhere measured on demand (kora profile --gpu, a round per job): the
    // best plan of the kernels measured on it where they compute the graph, not one of
    // kernels whose estimates only look cheaper.
    const auto measured = [](const ProfileDbCost& c, const OrchestrationResult& p) {
      return std::all_of(p.kernels.begin(), p.kernels.end(),
                         [&](const ChosenKernel& k) { return c.measured(k.signature); });
    };
    if (options.on_demand && target.measures_elsewhere() && !measured(*costs, plan)) {
      std::unique_ptr<ProfileDbCost> only =
          target_costs(target, db, nullptr, std::make_unique<ExcludedCost>());
      OrchestrationResult best = orchestrate_for(graph, target, *only, options);
      if (measured(*only, best)) {
        progress_line(options, "the plan of kernels measured on " + s.device +
                                   " (kora profile measured on demand for it)");
        plan = std::move(best);
        costs = std::move(only);
      }
    }
  }
  // Not measured, so not checked yet: the plan's kernels run once against the interpreter.
  if (!measure && options.verify) {
    s.kernel_check = check_plan_kernels(graph, target, *db, *costs, plan, options);
    if (s.kernel_check.kernels > 0)
      progress_line(options, "check: " + std::to_string(s.kernel_check.kernels) +
                                 " kernels of the plan run once against the interpreter, " +
                                 std::to_string(s.kernel_check.failed.size()) + " failed (" +
                                 fixed(s.kernel_check.seconds, 1) + " s)");
  }
  s.measured_costs = costs->hits();
  s.roofline_costs = costs->misses();
  // The baselines' predictions at the same costs, for the plan report (plan.json), unless
  // the check on the clock measures them below.
  const bool check = options.verify && options.measure && target.measures_here();
  std::vector<PlanBaseline> baselines;
  if (!check && plan.strategy == "optimal")
    for (const char* strategy : {"greedy", "unfused"}) {
      CompileOptions o = options;
      o.strategy = strategy;
      o.orchestration.progress = o.orchestration.progress_line = false;
      const OrchestrationResult b = orchestrate_for(graph, target, *costs, o);
      baselines.push_back({strategy, static_cast<int64_t>(b.kernels.size()), b.total_cost_ms});
    }
  // Measuring on demand profiles inside this stage; otherwise profile ran before it.
  s.orchestrate_seconds =
      seconds_since(stage) - (on_demand ? s.profile_seconds : 0) - s.kernel_check.seconds;
  s.strategy = plan.strategy;
  s.kernels = static_cast<int64_t>(plan.kernels.size());
  s.predicted_ms = plan.total_cost_ms;
  s.gap_ms = plan.gap_ms;
  s.proven_optimal = plan.proven_optimal;

  progress_line(options,
                "orchestrate: " + plan.strategy + ", " + std::to_string(s.kernels) +
                    " kernels, predicted " + fixed(plan.total_cost_ms, 3) + " ms" +
                    (plan.strategy != "optimal" ? ""
                     : plan.proven_optimal      ? " (proven optimal)"
                                                : " (gap " + fixed(plan.gap_ms, 3) + " ms)") +
                    "; " + std::to_string(s.measured_costs) + " kernel costs measured, " +
                    std::to_string(s.roofline_costs) +
                    (on_demand ? " at their lower bounds (" : " from the roofline model (") +
                    fixed(s.orchestrate_seconds, 1) + " s)");
  note_plan(graph, plan, target, *costs, s);
  note_failed_checks(graph, plan, s);
  for (const std::string& note : s.notes) progress_line(options, "note: " + note);

  throw_if_interrupted("compiling");
  stage = std::chrono::steady_clock::now();
  if (check) {
    check_artifact_dir(dir);
    const PlanCheckResult checked =
        check_plans_on_the_clock(graph, target, db, s.device, plan, dir, recompile);
    s.artifact = checked.artifact;
    s.checked = checked.plans;
    s.emitted_check = checked.emitted;
    if (checked.emitted >= 0) {
      const PlanCheck& emitted = checked.plans[static_cast<size_t>(checked.emitted)];
      s.kernels = emitted.kernels;
      s.predicted_ms = emitted.predicted_ms;
      s.measured_ms = emitted.measured_ms;
      progress_line(options, "emitted: " + emitted.label + ", the fastest on the clock (" +
                                 fixed(emitted.measured_ms, 3) + " ms, predicted " +
                                 fixed(emitted.predicted_ms, 3) + " ms when chosen)");
    }
    s.verify_seconds = seconds_since(stage);
  } else {
    s.artifact = target.write_artifact(
        graph, plan, db.get(), s.device, dir,
        TargetEmitOptions{options.progress, options.terminal, &s.kernel_check});
  }
  s.emit_seconds = seconds_since(stage);
  s.total_seconds = seconds_since(start);
  write_plan_file(dir, graph, compile_summary_json(s), baselines);
  return out;
}

CompiledArtifact compile(const std::string& model_path, Target& target, const std::string& dir,
                         const CompileOptions& options, const ImportOptions& import) {
  const auto start = std::chrono::steady_clock::now();
  const PrimGraph graph = import_model(model_path, import);
  check_compilable(graph);  // before the progress line: the error is all a user sees
  const double import_seconds = seconds_since(start);
  CompileOptions o = options;
  o.model_path = model_path;
  if (o.progress)
    *o.progress << "kora compile: import and fission: " << graph.prims.size() << " primitives ("
                << fixed(import_seconds, 1) << " s)" << std::endl;
  CompiledArtifact out = compile(graph, target, dir, o);
  out.summary.import_seconds = import_seconds;
  out.summary.total_seconds = seconds_since(start);
  return out;
}

}  // namespace kora
