// Measure on demand (include/kora/compile.h, solve_on_demand; src/driver/
// measure_on_demand.cc): a synthetic target whose "measurement" of a kernel is a cost
// drawn from its signature and whose lower bound is a fraction of it shows that the plan
// found while measuring on demand costs what the optimum of the full table costs (solved
// with every candidate measured: the brute-force reference), with fewer kernels measured;
// the cpu target compiles a model on demand from an empty database into an artifact that
// matches the interpreter; the machine's peaks give bounds below every kernel measured
// here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cpu/machine_peaks.h"
#include "cpu/profile.h"
#include "driver/cpu_compile_setup.h"
#include "driver/stages.h"
#include "emit/small_artifacts.h"
#include "frontend/model_builder.h"
#include "kora/compile.h"
#include "kora/cost.h"
#include "kora/profile_db.h"

namespace kora_test {
namespace {

using namespace kora;

// A two-layer perceptron with a softmax and a residual: fusion choices all along.
ModelBuilder mlp_builder() {
  ModelBuilder m;
  std::vector<float> w1(16 * 32), w2(32 * 16);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>((i * 13 % 11) - 5) / 16;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>((i * 7 % 9) - 4) / 16;
  m.input("x", {8, 16}).init_f32("w1", {16, 32}, w1).init_f32("w2", {32, 16}, w2);
  m.init_f32("b1", {32}, std::vector<float>(32, 0.125f));
  m.node("MatMul", {"x", "w1"}, {"h"});
  m.node("Add", {"h", "b1"}, {"hb"});
  m.node("Relu", {"hb"}, {"r"});
  m.node("MatMul", {"r", "w2"}, {"o"});
  m.node("Add", {"o", "x"}, {"res"});
  m.node("Softmax", {"res"}, {"p"}, {attr_i("axis", 1)});
  m.node("Sigmoid", {"p"}, {"y"});
  m.output("y");
  return m;
}

uint64_t mix(uint64_t v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdULL;
  v ^= v >> 33;
  return v;
}

// A kernel's synthetic cost: larger kernels cost more, but less than their parts apart.
double true_ms(const Candidate& c) {
  return 0.01 * static_cast<double>(1 + c.members.size()) +
         0.001 * static_cast<double>(mix(c.signature) % 1000) / 100;
}

// The true cost, a bound below it (0.2-0.9 of it), or a typical cost around it (0.5-1.5).
enum class Synthetic { kTrue, kBound, kTypical };
class SyntheticCost : public CostModel {
 public:
  explicit SyntheticCost(Synthetic what) : what_(what) {}
  double cost_ms(const PrimGraph&, const KernelDag&, const Candidate& c) override {
    const double ms = true_ms(c), r = static_cast<double>(mix(c.signature ^ 7) % 100) / 100;
    return what_ == Synthetic::kBound     ? ms * (0.2 + 0.7 * r)
           : what_ == Synthetic::kTypical ? ms * (0.5 + r)
                                          : ms;
  }
  std::string describe() const override { return "synthetic"; }

 private:
  Synthetic what_;
};

// A synthetic measurement of kernel `c`.
ProfileRecord synthetic_record(const Candidate& c, const std::string& schedule, double ms) {
  ProfileRecord rec;
  rec.device = "synthetic";
  rec.signature = c.signature;
  rec.schedule = schedule;
  rec.median_ms = ms;
  rec.samples = 1;
  return rec;
}

class SyntheticTarget : public Target {
 public:
  std::string name() const override { return "cpu"; }
  std::string device(const ProfileDb&) override { return "synthetic"; }
  std::string describe() const override { return "synthetic"; }
  std::unique_ptr<CostModel> fallback_cost() const override {
    return std::make_unique<SyntheticCost>(Synthetic::kTrue);
  }
  std::unique_ptr<CostModel> lower_bound(ProfileDb&, const std::string&) override {
    return std::make_unique<SyntheticCost>(Synthetic::kBound);
  }
  std::unique_ptr<CostModel> typical_cost(ProfileDb&, const std::string&) override {
    return std::make_unique<SyntheticCost>(Synthetic::kTypical);
  }
  bool measures_here() const override { return true; }
  // "Measures" the kernels asked for (all the candidates without `only`).
  ProfileReport profile(const PrimGraph& graph, ProfileDb& db,
                        const TargetProfileOptions& o) override {
    const ModelCandidates cands = unique_candidates(graph, o.partition, o.candidates);
    ProfileReport r;
    r.kernels = static_cast<int64_t>(cands.unique.size());
    std::vector<ProfileRecord> records;
    for (const UniqueCandidate& u : cands.unique) {
      if (o.only && !o.only->count(u.candidate->signature)) continue;
      EXPECT_FALSE(db.known("synthetic", u.candidate->signature)) << "measured twice";
      records.push_back(synthetic_record(*u.candidate, "gen:default", true_ms(*u.candidate)));
    }
    db.put(records);
    r.measured = static_cast<int64_t>(records.size());
    measured += r.measured;
    return r;
  }
  ArtifactSummary write_artifact(const PrimGraph&, const OrchestrationResult&, const ProfileDb*,
                                 const std::string&, const std::string&,
                                 const TargetEmitOptions&) override {
    ADD_FAILURE() << "not written";
    return {};
  }
  int64_t measured = 0;
};

// Options that measure on demand to the optimum itself, however many solves that takes.
CompileOptions to_the_optimum() {
  CompileOptions options;
  options.on_demand_gap = 0;
  options.on_demand_rounds = 1000;
  options.on_demand_patience = 0;
  return options;
}

TEST(MeasureOnDemand, FindsTheOptimumOfTheFullTableMeasuringFewerKernels) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget on_demand_target, full_target;
  const CompileOptions options = to_the_optimum();
  auto on_demand_db = std::make_shared<ProfileDb>(dir.file("on_demand.db"));
  OnDemandReport r;
  const SolvedPlan solved = solve_on_demand(g, on_demand_target, on_demand_db, options, r);
  EXPECT_TRUE(r.used);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.at_bound, 0);
  EXPECT_DOUBLE_EQ(r.gap, 0);
  EXPECT_GE(r.rounds, 3);
  EXPECT_EQ(r.measured, on_demand_target.measured);
  for (const ChosenKernel& k : solved.plan.kernels)
    EXPECT_TRUE(on_demand_db->known("synthetic", k.signature));

  // The reference: every candidate measured, solved once.
  auto full_db = std::make_shared<ProfileDb>(dir.file("full.db"));
  full_target.profile(g, *full_db, {});
  const auto costs = target_costs(full_target, full_db);
  const OrchestrationResult optimum = orchestrate_for(g, full_target, *costs, options);
  ASSERT_TRUE(optimum.proven_optimal);
  EXPECT_NEAR(solved.plan.total_cost_ms, optimum.total_cost_ms, 1e-9);
  EXPECT_LT(on_demand_target.measured, full_target.measured);
  EXPECT_EQ(r.candidates, full_target.measured);

  // Solved again, nothing is left to measure.
  OnDemandReport again;
  solve_on_demand(g, on_demand_target, on_demand_db, options, again);
  EXPECT_EQ(again.rounds, 2);
  EXPECT_EQ(again.measured, 0);
  EXPECT_NEAR(solve_on_demand(g, on_demand_target, on_demand_db, options, again).plan.total_cost_ms,
              optimum.total_cost_ms, 1e-9);
}

// The plan's costs outlive the loop: kora compile --no-verify prices the greedy and unfused
// plans with them after solve_on_demand returned, kernels not measured at their
// predictions (a predictor that asks the target what implements a kernel: once that
// asked through the loop's own state, freed by then; AddressSanitizer runs this test).
TEST(MeasureOnDemand, ThePlansCostsPriceOtherPlansAfterTheLoop) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget target;
  CompileOptions options;
  auto db = std::make_shared<ProfileDb>(dir.file("db"));
  OnDemandReport r;
  SolvedPlan solved = solve_on_demand(g, target, db, options, r);
  ASSERT_TRUE(solved.costs);
  for (const char* strategy : {"greedy", "unfused"}) {
    CompileOptions o = options;
    o.strategy = strategy;
    const OrchestrationResult plan = orchestrate_for(g, target, *solved.costs, o);
    EXPECT_FALSE(plan.kernels.empty()) << strategy;
    EXPECT_GT(plan.total_cost_ms, 0) << strategy;
  }
}

TEST(MeasureOnDemand, SegmentsCutInOneSolveAreCutAtOnceInTheNextAndTheirKernelsMeasured) {
  // Every segment of 2 min_size or more is cut in halves (as one not proven within
  // split_after_seconds would be): the first solve cuts, the solves after it start from the
  // halves, and the kernels of the halves are measured like any other.
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget on_demand_target, full_target;
  CompileOptions options = to_the_optimum();
  options.orchestration.partition.min_size = 2;
  options.orchestration.partition.split_after_seconds = -1;
  auto db = std::make_shared<ProfileDb>(dir.file("on_demand.db"));
  OnDemandReport r;
  const SolvedPlan solved = solve_on_demand(g, on_demand_target, db, options, r);
  ASSERT_FALSE(r.hard_segments.empty());
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.at_bound, 0);
  for (const ChosenKernel& k : solved.plan.kernels)
    EXPECT_TRUE(db->known("synthetic", k.signature));

  // Given the cuts, a solve of the graph cuts nothing more, and the plan is the optimum of
  // the full table over the same finer partition.
  CompileOptions fine = options;
  fine.orchestration.partition.hard = r.hard_segments;
  auto full_db = std::make_shared<ProfileDb>(dir.file("full.db"));
  TargetProfileOptions all;
  all.partition = fine.orchestration.partition;
  full_target.profile(g, *full_db, all);
  const OrchestrationResult optimum =
      orchestrate_for(g, full_target, *target_costs(full_target, full_db), fine);
  EXPECT_EQ(optimum.segments_split, 0);
  EXPECT_TRUE(optimum.hard_segments.empty());
  EXPECT_NEAR(solved.plan.total_cost_ms, optimum.total_cost_ms, 1e-9);
  EXPECT_LT(on_demand_target.measured, full_target.measured);
}

TEST(MeasureOnDemand, ByDefaultTheProofIsReportedNotMeasuredFor) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget guided, proved, full;
  auto guided_db = std::make_shared<ProfileDb>(dir.file("guided.db"));
  OnDemandReport r;
  const SolvedPlan plan = solve_on_demand(g, guided, guided_db, CompileOptions(), r);
  // Every kernel of the plan measured; the bound solve said how close it is, and nothing
  // was measured for it.
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.at_bound, 0);
  for (const ChosenKernel& k : plan.plan.kernels)
    EXPECT_TRUE(guided_db->known("synthetic", k.signature));
  EXPECT_LE(r.bound_ms, r.cost_ms);
  EXPECT_NEAR(r.gap, (r.cost_ms - r.bound_ms) / r.cost_ms, 1e-12);
  EXPECT_NEAR(r.cost_ms, plan.plan.total_cost_ms, 1e-12);
  // The bound holds: the optimum of the full table is no cheaper than it.
  auto full_db = std::make_shared<ProfileDb>(dir.file("full.db"));
  full.profile(g, *full_db, {});
  const OrchestrationResult optimum = orchestrate_for(g, full, *target_costs(full, full_db));
  EXPECT_GE(optimum.total_cost_ms, r.bound_ms - 1e-9);
  EXPECT_GE(plan.plan.total_cost_ms, optimum.total_cost_ms - 1e-9);
  // Asking for the proof measures at least as much.
  const CompileOptions prove = to_the_optimum();
  OnDemandReport p;
  solve_on_demand(g, proved, std::make_shared<ProfileDb>(dir.file("proved.db")), prove, p);
  EXPECT_GE(proved.measured, guided.measured);
  EXPECT_LT(guided.measured, full.measured);
}

TEST(MeasureOnDemand, StopsWhenMeasuringMorePromisesLessThanTheTolerance) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget exact, tolerant;
  CompileOptions options;
  options.on_demand_tolerance = 0;
  auto exact_db = std::make_shared<ProfileDb>(dir.file("exact.db"));
  OnDemandReport e;
  const SolvedPlan optimum = solve_on_demand(g, exact, exact_db, options, e);
  EXPECT_EQ(e.settled, 0);

  // A tolerance of a half: once a round's plan is measured, the next promises too little.
  options.on_demand_tolerance = 0.5;
  auto db = std::make_shared<ProfileDb>(dir.file("tolerant.db"));
  OnDemandReport r;
  const SolvedPlan plan = solve_on_demand(g, tolerant, db, options, r);
  EXPECT_EQ(r.settled, 1);
  EXPECT_EQ(r.at_bound, 0);
  EXPECT_LE(tolerant.measured, exact.measured);
  for (const ChosenKernel& k : plan.plan.kernels) EXPECT_TRUE(db->known("synthetic", k.signature));
  EXPECT_LE(plan.plan.total_cost_ms, optimum.plan.total_cost_ms / (1 - 0.5));

  // A recompile after the check on the clock fed in-plan times back (each kernel of the
  // plan 0.5% slower than alone): measures nothing.
  ProfileDb::ScheduleTimes in_plan;
  for (const ChosenKernel& k : optimum.plan.kernels)
    in_plan[k.signature]["gen:default"] = 1.005 * k.cost_ms;
  exact_db->put_in_plan("synthetic", in_plan, 1);
  const int64_t before = exact.measured;
  OnDemandReport again;
  const SolvedPlan recompiled = solve_on_demand(g, exact, exact_db, CompileOptions(), again);
  // Its first plan took kernels measured only, or promised less than 1% over them.
  EXPECT_EQ(again.measured, 0);
  EXPECT_LE(again.settled, 1);
  EXPECT_EQ(exact.measured, before);
  EXPECT_NEAR(recompiled.plan.total_cost_ms, optimum.plan.total_cost_ms,
              0.01 * optimum.plan.total_cost_ms);
}

// Patience: with no tolerance the loop measures until the plan holds measured kernels only;
// with a patience of one round it stops at the first round whose measured plan was no
// cheaper than the cheapest before it, taking the best plan of measured kernels, after
// fewer solves and measurements.
TEST(MeasureOnDemand, StopsAfterRoundsWhoseMeasurementsGaveNothing) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget patient, impatient;
  CompileOptions options;
  options.on_demand_tolerance = 0;
  options.on_demand_patience = 0;
  auto patient_db = std::make_shared<ProfileDb>(dir.file("patient.db"));
  OnDemandReport p;
  const SolvedPlan to_the_end = solve_on_demand(g, patient, patient_db, options, p);
  EXPECT_EQ(p.patience, 0);
  ASSERT_GE(p.rounds, 3);

  options.on_demand_patience = 1;
  auto db = std::make_shared<ProfileDb>(dir.file("impatient.db"));
  OnDemandReport r;
  const SolvedPlan plan = solve_on_demand(g, impatient, db, options, r);
  EXPECT_EQ(r.patience, 1);
  EXPECT_EQ(r.at_bound, 0);
  EXPECT_LT(r.rounds, p.rounds);
  EXPECT_LT(impatient.measured, patient.measured);
  for (const ChosenKernel& k : plan.plan.kernels) EXPECT_TRUE(db->known("synthetic", k.signature));
  EXPECT_GE(plan.plan.total_cost_ms, to_the_end.plan.total_cost_ms - 1e-9);
  CompileSummary summary;  // kora compile --json says so
  summary.on_demand = r;
  EXPECT_EQ(nlohmann::json::parse(compile_summary_json(summary))["on_demand"]["patience"], 1);
}

TEST(MeasureOnDemand, ARecompileTakesTheKernelsMeasuredAndMeasuresNothing) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  SyntheticTarget target;
  auto db = std::make_shared<ProfileDb>(dir.file("p.db"));
  OnDemandReport first;
  const SolvedPlan plan = solve_on_demand(g, target, db, CompileOptions(), first);
  // The check on the clock found the kernels measured three times slower inside its plans
  // (a busy machine): the solver would rather try kernels not measured. A recompile does not.
  ProfileDb::ScheduleTimes in_plan;
  for (const auto& [signature, ms] : db->fastest("synthetic"))
    in_plan[signature]["gen:default"] = 3 * ms;
  db->put_in_plan("synthetic", in_plan, 1);
  CompileOptions recompile;
  recompile.on_demand_recompile = true;
  const int64_t before = target.measured;
  OnDemandReport again;
  const SolvedPlan replanned = solve_on_demand(g, target, db, recompile, again);
  EXPECT_EQ(again.measured, 0);
  EXPECT_EQ(target.measured, before);
  EXPECT_EQ(again.at_bound, 0);
  for (const ChosenKernel& k : replanned.plan.kernels)
    EXPECT_TRUE(db->known("synthetic", k.signature));
  // Without the flag the same database is measured further.
  OnDemandReport explored;
  solve_on_demand(g, target, db, CompileOptions(), explored);
  EXPECT_GT(explored.measured, 0);
}

// Kernels of an even signature are slower at their first measurement (a default
// schedule at twice the true cost) than once searched; the search runs only when asked for
// with the search deferred (a full profile runs it with the first measurement).
int64_t full_target_candidates(const PrimGraph& g) {
  return static_cast<int64_t>(unique_candidates(g, {}, {}).unique.size());
}

class DeferredSearchTarget : public SyntheticTarget {
 public:
  static bool searchable(uint64_t signature) { return signature % 2 == 0; }
  std::map<uint64_t, double> unexplored_costs(const PrimGraph&, const ModelCandidates& cands,
                                              ProfileDb& db, const std::string&) override {
    std::map<uint64_t, double> costs;
    for (const UniqueCandidate& u : cands.unique) {
      const std::vector<ProfileRecord> records = db.records("synthetic", u.candidate->signature);
      if (searchable(u.candidate->signature) && records.size() == 1)
        costs[u.candidate->signature] = 0.4 * records[0].median_ms;  // optimistic
    }
    return costs;
  }
  ProfileReport profile(const PrimGraph& graph, ProfileDb& db,
                        const TargetProfileOptions& o) override {
    const ModelCandidates cands = unique_candidates(graph, o.partition, o.candidates);
    ProfileReport r;
    r.kernels = static_cast<int64_t>(cands.unique.size());
    std::vector<ProfileRecord> records;
    auto record = [&](const Candidate& c, const std::string& schedule, double ms) {
      records.push_back(synthetic_record(c, schedule, ms));
    };
    for (const UniqueCandidate& u : cands.unique) {
      const Candidate& c = *u.candidate;
      if (o.only && !o.only->count(c.signature)) continue;
      const size_t known = db.records("synthetic", c.signature).size();
      const bool search = searchable(c.signature) && (known == 1 || !o.defer_search);
      EXPECT_TRUE(known == 0 || (o.defer_search && search)) << "measured twice";
      if (known == 0) {
        record(c, "gen:default", (searchable(c.signature) ? 2 : 1) * true_ms(c));
        ++r.measured;
      }
      if (search) {
        record(c, "gen:searched", true_ms(c));
        if (known) ++r.searched;
      }
    }
    db.put(records);
    measured += r.measured;
    searched += r.searched;
    return r;
  }
  int64_t searched = 0;
};

TEST(MeasureOnDemand, ADeferredSearchRunsForTheKernelsPlansTake) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  DeferredSearchTarget on_demand_target, full_target;
  const CompileOptions options = to_the_optimum();  // the unexplored costs are optimistic
  auto on_demand_db = std::make_shared<ProfileDb>(dir.file("on_demand.db"));
  OnDemandReport r;
  const SolvedPlan solved = solve_on_demand(g, on_demand_target, on_demand_db, options, r);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.at_bound, 0);
  EXPECT_GT(r.searched, 0);
  EXPECT_EQ(r.searched, on_demand_target.searched);
  EXPECT_LT(on_demand_target.measured, full_target_candidates(g));
  // Every kernel of the plan measured as a full profile measures it.
  for (const ChosenKernel& k : solved.plan.kernels)
    EXPECT_EQ(on_demand_db->records("synthetic", k.signature).size(),
              DeferredSearchTarget::searchable(k.signature) ? 2u : 1u);

  auto full_db = std::make_shared<ProfileDb>(dir.file("full.db"));
  full_target.profile(g, *full_db, {});
  const OrchestrationResult optimum =
      orchestrate_for(g, full_target, *target_costs(full_target, full_db), options);
  ASSERT_TRUE(optimum.proven_optimal);
  EXPECT_NEAR(solved.plan.total_cost_ms, optimum.total_cost_ms, 1e-9);
}

TEST(MeasureOnDemand, TargetsWithoutBoundsAreAClearError) {
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  class NoBounds : public SyntheticTarget {
    std::unique_ptr<CostModel> lower_bound(ProfileDb&, const std::string&) override {
      return nullptr;
    }
  } target;
  OnDemandReport r;
  expect_error(
      [&] { solve_on_demand(g, target, std::make_shared<ProfileDb>(dir.file("p.db")), {}, r); },
      "no lower bounds");
}

TEST(MeasureOnDemand, CpuTargetCompilesFromAnEmptyDatabaseMeasuringPartOfTheCandidates) {
  // A few solves only (the loop's convergence is the synthetic test's): the artifact is
  // right whatever was measured, the summary says what was, and out of solves the last
  // plan's kernels are measured all the same (one more solve: the best plan of measured
  // kernels), so that no kernel of the plan is an estimate.
  CpuCompileSetup setup;  // the cpu target, its kernel cache and database in setup.dir
  TempDir& dir = setup.dir;
  const std::string model = mlp_builder().save(dir);
  const std::unique_ptr<Target>& target = setup.target;
  CompileOptions& options = setup.options;
  options.verify = false;
  options.on_demand = true;
  options.on_demand_rounds = 3;
  const CompiledArtifact a = compile(model, *target, dir.file("art"), options);
  const CompileSummary& s = a.summary;
  EXPECT_TRUE(s.on_demand.used);
  EXPECT_GE(s.on_demand.rounds, 2);
  EXPECT_LE(s.on_demand.rounds, 4);
  EXPECT_GT(s.on_demand.measured, 0);
  EXPECT_LT(s.on_demand.measured, s.on_demand.candidates);
  EXPECT_EQ(s.profile.measured, s.on_demand.measured);
  EXPECT_EQ(s.on_demand.at_bound, 0);
  EXPECT_EQ(s.estimated_kernels, 0);
  EXPECT_LE(s.on_demand.bound_ms, s.on_demand.cost_ms);
  EXPECT_NE(s.on_demand.bound.find("GFLOP/s"), std::string::npos) << s.on_demand.bound;
  expect_matches_interpreter(kora::import_model(model), a.dir);
  EXPECT_NE(format_compile_summary(s).find(
                "measured on demand: " + std::to_string(s.on_demand.rounds) + " solves"),
            std::string::npos)
      << format_compile_summary(s);
  const nlohmann::json j = nlohmann::json::parse(compile_summary_json(s));
  EXPECT_EQ(j["on_demand"]["measured"], s.on_demand.measured);
  EXPECT_EQ(j["on_demand"]["complete"], s.on_demand.complete);
}

// A kernel of a plan that no segment enumerates (the whole-graph layout pass moves a
// reshape of unit dims into a neighbouring kernel and so makes one) is measured as a
// kernel of the whole graph. Before, a round asked for it, measured nothing and stopped,
// the plan keeping the kernel at a typical cost (Inception-v3 and YOLOv8n under --bf16:
// "1 of the chosen kernels were never measured").
TEST(MeasureOnDemand, PlanKernelsNoSegmentEnumeratesAreMeasuredAsKernelsOfTheGraph) {
  CpuCompileSetup setup;
  const PrimGraph g = kora::import_model(mlp_builder().save(setup.dir));
  CandidateOptions one;
  one.max_size = 1;  // only single primitives are candidates
  const ModelCandidates enumerated = unique_candidates(g, PartitionOptions{}, one);
  // The first matmul and the bias add after it, as one kernel of the plan.
  const KernelDag dag = kernel_dag_of(g);
  std::vector<int> pair;
  for (int v = 0; v < dag.size() && pair.size() < 2; ++v)
    if (g.prims[dag.prim[v]].kind() == PrimKind::kLinear || !pair.empty()) pair.push_back(v);
  ASSERT_EQ(pair.size(), 2u);
  Candidate c = make_candidate(dag, pair);
  c.signature = canonical_signature(g, dag, c);
  OrchestrationResult plan;
  ChosenKernel k;
  for (int v : pair) k.prims.push_back(dag.prim[v]);
  k.signature = c.signature;
  plan.kernels.push_back(k);
  ChosenKernel single;  // a kernel the segments do enumerate: not taken again
  single.prims = {dag.prim[pair[0]]};
  single.signature = enumerated.unique.front().candidate->signature;
  plan.kernels.push_back(single);

  const std::set<uint64_t> wanted = {c.signature, single.signature};
  EXPECT_TRUE(plan_kernels_outside(g, plan, {}, enumerated).unique.empty());
  const ModelCandidates outside = plan_kernels_outside(g, plan, wanted, enumerated);
  ASSERT_EQ(outside.unique.size(), 1u);
  EXPECT_EQ(outside.unique[0].candidate->signature, c.signature);
  EXPECT_EQ(outside.unique[0].candidate->members, pair);

  ProfileDb db(setup.options.db);
  const ProfileReport r = measure_candidates(g, *setup.target, db, setup.options, &wanted,
                                             ScheduleSearch::kDeferred, nullptr, &outside);
  EXPECT_GE(r.measured, 1);
  EXPECT_TRUE(db.known(setup.target->device(db), c.signature));
}

TEST(MeasureOnDemand, MachinePeaksBoundEveryKernelMeasuredHere) {
  // Every candidate of the model measured (briefly) and set against its bound at this
  // machine's peaks. Measurements only get slower when other tests run beside this one,
  // and the peaks are the best of several runs; still, half the bound is the check (the
  // exact calibration over whole models: bench/bounds.cc, docs/benchmarks.md).
  TempDir dir;
  const PrimGraph g = kora::import_model(mlp_builder().save(dir));
  ProfileDb db(dir.file("profiles.db"));
  ProfileOptions p;
  p.threads = 1;
  p.compile.cache_dir = dir.file("kernels");
  p.measure = {1, 3, 20, 0.05, 0.01, 2.0};
  p.quiet_budget_seconds = 0;
  p.exhaustive = false;
  const ProfileSummary summary = profile_model(g, db, p);
  const MachinePeaks peaks = cpu_peaks(db, summary.device, 1);
  EXPECT_GT(peaks.gflops, 1);
  EXPECT_GT(peaks.cache_gbps, peaks.dram_gbps * 0.5);
  if (const auto kept = db.device_fact(summary.device, "peaks")) {  // unless others ran beside
    EXPECT_EQ(*kept, peaks.to_json());
    // --bf16: the GEMM peak is AVX512-BF16's, twice the float32 one, or AMX's, 16 times;
    // the rest as measured, and the database keeps the float32 measurement.
    const MachinePeaks bf16 = cpu_peaks(db, summary.device, 1, true);
    EXPECT_TRUE(bf16_compute_factor() == kBf16ComputeFactor ||
                bf16_compute_factor() == kAmxBf16ComputeFactor);
    EXPECT_DOUBLE_EQ(bf16.gflops, peaks.gflops * bf16_compute_factor());
    EXPECT_DOUBLE_EQ(bf16.dram_gbps, peaks.dram_gbps);
    EXPECT_DOUBLE_EQ(bf16.cache_gbps, peaks.cache_gbps);
    EXPECT_EQ(*db.device_fact(summary.device, "peaks"), peaks.to_json());
  }
  LowerBoundCost bound(peaks);
  const std::map<uint64_t, double> measured = db.fastest(summary.device);
  const ModelCandidates cands = unique_candidates(g, {}, {});
  int checked = 0;
  for (const UniqueCandidate& u : cands.unique) {
    const auto it = measured.find(u.candidate->signature);
    ASSERT_NE(it, measured.end());
    const double b = bound.cost_ms(g, *u.sub, *u.candidate);
    EXPECT_GT(b, 0);
    EXPECT_GE(it->second, 0.5 * b) << "kernel " << signature_hex(u.candidate->signature);
    ++checked;
  }
  EXPECT_GT(checked, 10);
  EXPECT_THROW(MachinePeaks::from_json("{\"gflops\": -1}"), Error);
}

}  // namespace
}  // namespace kora_test
