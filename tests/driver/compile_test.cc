// The compile API (include/kora/compile.h) over the Target interface: a probe target
// (tests' own backend: a fingerprint of its own, a candidate filter, a constant fallback
// cost, a failure penalty, a note per opaque kernel, the CPU's artifact writer) shows that
// the pipeline asks the target at every stage and reports what it answered; the cpu
// target compiles a model file end to end, measured, into an artifact that matches the
// reference interpreter, and a second compile measures nothing.
#include "kora/compile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "base/interrupt.h"
#include "cpu/codegen.h"
#include "cpu/target.h"
#include "driver/cpu_compile_setup.h"
#include "driver/previous_plan.h"
#include "emit/small_artifacts.h"
#include "frontend/model_builder.h"
#include "kora/profile_db.h"
#include "kora/runtime.h"
#include "orchestrate/parallel_schedule.h"

namespace kora_test {
namespace {

using namespace kora;

// conv + bias -> relu -> softmax, and TopK of the softmax (opaque).
ModelBuilder small_builder() {
  ModelBuilder m;
  std::vector<float> w(4 * 3 * 3 * 3), b(4);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>(i * 37 % 17) - 8) / 16;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i) - 0.5f;
  m.input("x", {1, 3, 6, 6}).init_f32("w", {4, 3, 3, 3}, w).init_f32("b", {4}, b);
  m.node("Conv", {"x", "w", "b"}, {"c"}, {attr_is("pads", {1, 1, 1, 1})}, "conv");
  m.node("Relu", {"c"}, {"r"}, {}, "relu");
  m.node("Softmax", {"r"}, {"p"}, {attr_i("axis", 1)}, "softmax");
  m.init_i64("k", {1}, {2}).output("p").output("top").output("idx", onnx::TensorProto::INT64);
  m.node("TopK", {"p", "k"}, {"top", "idx"}, {attr_i("axis", 3)}, "topk");
  return m;
}

class ConstantCost : public CostModel {
 public:
  explicit ConstantCost(double ms) : ms_(ms) {}
  double cost_ms(const PrimGraph&, const KernelDag&, const Candidate&) override { return ms_; }
  std::string describe() const override { return "constant"; }

 private:
  double ms_;
};

// A backend of the tests' own, writing CPU artifacts.
class ProbeTarget : public Target {
 public:
  std::string name() const override { return "cpu"; }
  std::string device(const ProfileDb&) override {
    ++device_calls;
    return "probe|device";
  }
  std::string describe() const override { return "probe"; }
  CandidateOptions candidates(const PrimGraph&, CandidateOptions options) const override {
    options.max_size = 2;  // kernels of at most two primitives
    return options;
  }
  std::unique_ptr<CostModel> fallback_cost() const override {
    return std::make_unique<ConstantCost>(0.5);
  }
  double failure_penalty_ms() const override { return 1000; }
  bool measures_here() const override { return false; }
  ProfileReport profile(const PrimGraph&, ProfileDb&, const TargetProfileOptions&) override {
    ADD_FAILURE() << "a target that does not measure here was asked to profile";
    return {};
  }
  std::string kernel_note(const PrimGraph& graph, const KernelDag& dag,
                          const Candidate& c) const override {
    return c.members.size() == 1 && graph.prims[dag.prim[c.members[0]]].kind() == PrimKind::kOpaque
               ? "opaque, probed"
               : "";
  }
  ArtifactSummary write_artifact(const PrimGraph& graph, const OrchestrationResult& plan,
                                 const ProfileDb* db, const std::string& device,
                                 const std::string& dir, const TargetEmitOptions&) override {
    EXPECT_EQ(device, "probe|device");
    ArtifactOptions o = quick_options();
    o.device = device;
    return write_cpu_artifact(graph, plan, db, dir, o);
  }
  int device_calls = 0;
};

TEST(Compile, TheTargetAnswersAtEveryStage) {
  TempDir dir;
  const PrimGraph g = kora::import_model(small_builder().save(dir));
  ProbeTarget target;
  CompileOptions options;
  options.db = dir.file("profiles.db");
  const CompiledArtifact a = compile(g, target, dir.file("art"), options);
  const CompileSummary& s = a.summary;
  EXPECT_EQ(target.device_calls, 1);
  EXPECT_EQ(s.target, "cpu");
  EXPECT_EQ(s.device, "probe|device");
  EXPECT_FALSE(s.profiled);
  EXPECT_EQ(s.measured_costs, 0);
  EXPECT_GT(s.roofline_costs, 0);
  // Every kernel at the fallback's 0.5 ms, at most two primitives each.
  EXPECT_DOUBLE_EQ(s.predicted_ms, 0.5 * static_cast<double>(s.kernels));
  const nlohmann::json manifest =
      nlohmann::json::parse(read_bytes(std::filesystem::path(a.dir) / "manifest.json"));
  ASSERT_EQ(manifest["kernels"].size(), static_cast<size_t>(s.kernels));
  for (const auto& k : manifest["kernels"]) EXPECT_LE(k["primitives"].size(), 2u);
  // TopK is noted, by name, and not counted among the estimated kernels.
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_NE(s.notes[0].find("opaque, probed: topk"), std::string::npos) << s.notes[0];
  EXPECT_EQ(s.estimated_kernels, s.kernels - 1);
  EXPECT_NE(s.notes[1].find(std::to_string(s.kernels - 1) + " of the " + std::to_string(s.kernels) +
                            " chosen kernels were never measured"),
            std::string::npos)
      << s.notes[1];
  expect_matches_interpreter(g, a.dir);

  const nlohmann::json j = nlohmann::json::parse(compile_summary_json(s));
  EXPECT_EQ(j["kernels"], s.kernels);
  EXPECT_EQ(j["device"], "probe|device");
  EXPECT_EQ(j["notes"].size(), 2u);
  EXPECT_FALSE(j.contains("profile"));
}

TEST(Compile, TargetCostsAreMeasuredThenPenalizedThenEstimated) {
  TempDir dir;
  const PrimGraph g = kora::import_model(small_builder().save(dir));
  const KernelDag dag = kernel_dag_of(g);
  ProbeTarget target;
  auto db = std::make_shared<ProfileDb>(dir.file("profiles.db"));
  std::vector<Candidate> c;
  for (int m : {0, 1, 2}) {
    c.push_back(make_candidate(dag, {m}));
    c.back().signature = canonical_signature(g, dag, c.back());
  }
  const Candidate &first = c[0], &second = c[1], &third = c[2];
  ASSERT_NE(first.signature, second.signature);
  auto record = [](const std::string& device, uint64_t signature, double ms) {
    ProfileRecord r;
    r.device = device;
    r.signature = signature;
    r.schedule = "gen:default";
    r.median_ms = ms;
    r.samples = 5;
    r.failed = ms < 0;
    return r;
  };
  const ProfileRecord measured = record("probe|device", first.signature, 0.125);
  const ProfileRecord failed = record("probe|device", second.signature, -1);
  const ProfileRecord elsewhere = record("other|device", third.signature, 0.25);
  db->put({measured, failed, elsewhere});
  std::string device;
  const auto costs = target_costs(target, db, &device);
  EXPECT_EQ(device, "probe|device");
  EXPECT_DOUBLE_EQ(costs->cost_ms(g, dag, first), 0.125);
  EXPECT_DOUBLE_EQ(costs->cost_ms(g, dag, second), 1000);  // every implementation failed
  EXPECT_DOUBLE_EQ(costs->cost_ms(g, dag, third), 0.5);    // measured on another device only
}

TEST(Compile, CpuTargetCompilesAModelFileMeasuredAndAgainFromTheDatabase) {
  CpuCompileSetup setup;  // the cpu target, its kernel cache and database in setup.dir
  TempDir& dir = setup.dir;
  const std::string model = small_builder().save(dir);
  const std::unique_ptr<Target>& target = setup.target;
  EXPECT_NE(dynamic_cast<CpuTarget*>(target.get()), nullptr);
  CompileOptions& options = setup.options;
  options.verify = false;     // the solver's plan, twice (the check on the clock: below)
  options.on_demand = false;  // every candidate measured (on demand: measure_on_demand_test)
  const CompiledArtifact a = compile(model, *target, dir.file("art"), options);
  const CompileSummary& s = a.summary;
  EXPECT_TRUE(s.profiled);
  EXPECT_GT(s.profile.kernels, 0);
  EXPECT_EQ(s.profile.measured, s.profile.kernels);
  EXPECT_EQ(s.roofline_costs, 0);  // every kernel's cost measured
  EXPECT_EQ(s.estimated_kernels, 0);
  for (const std::string& note : s.notes)  // only suspect costs, where other tests ran beside
    EXPECT_NE(note.find("while other processes used the CPU"), std::string::npos) << note;
  EXPECT_TRUE(s.proven_optimal);
  EXPECT_EQ(s.device, cpu_backend_fingerprint(1));
  EXPECT_GT(s.primitives, 0);
  expect_matches_interpreter(kora::import_model(model), a.dir);

  const CompiledArtifact again = compile(model, *target, dir.file("art"), options);
  EXPECT_EQ(again.summary.profile.measured, 0);
  EXPECT_EQ(again.summary.profile.from_db, s.profile.kernels);
  EXPECT_EQ(again.summary.kernels, s.kernels);
  EXPECT_NE(format_compile_summary(again.summary).find("strategy optimal, predicted"),
            std::string::npos);
}

// kora compile's default: the optimal, greedy and unfused plans run end to end in turn, their
// kernels' in-plan times stored as costs, re-solved, and the fastest on the clock emitted.
TEST(Compile, TheCheckOnTheClockEmitsTheFastestPlanAndFeedsInPlanCostsBack) {
  CpuCompileSetup setup;  // the cpu target, its kernel cache and database in setup.dir
  TempDir& dir = setup.dir;
  const std::string model = small_builder().save(dir);
  const std::unique_ptr<Target>& target = setup.target;
  CompileOptions& options = setup.options;
  // Every candidate measured: the baselines' kernels too (measured on demand, a baseline's
  // kernels the solver never asked for run unmeasured and get no in-plan cost).
  options.on_demand = false;
  const std::string art = dir.file("art");
  const CompiledArtifact a = compile(model, *target, art, options);
  const CompileSummary& s = a.summary;
  ASSERT_GE(s.checked.size(), 2u);  // greedy or unfused may be the optimal plan itself
  EXPECT_EQ(s.checked[0].label, "optimal");
  int fastest = -1;
  for (size_t i = 0; i < s.checked.size(); ++i) {
    const PlanCheck& c = s.checked[i];
    EXPECT_TRUE(c.error.empty()) << c.label << ": " << c.error;
    EXPECT_GT(c.measured_ms, 0) << c.label;
    EXPECT_GT(c.in_plan_ms, 0) << c.label;
    EXPECT_GT(c.kernels, 0) << c.label;
    // The emitted plan: the fastest of the final window's (timed together, no drift).
    if (c.finalist &&
        (fastest < 0 || c.measured_ms < s.checked[static_cast<size_t>(fastest)].measured_ms))
      fastest = static_cast<int>(i);
  }
  ASSERT_GE(fastest, 0) << "no plan in the final window";
  EXPECT_EQ(s.emitted_check, fastest);
  const PlanCheck& emitted = s.checked[static_cast<size_t>(fastest)];
  EXPECT_DOUBLE_EQ(s.measured_ms, emitted.measured_ms);
  EXPECT_EQ(s.kernels, emitted.kernels);
  EXPECT_EQ(s.artifact.kernels, emitted.kernels);
  // Only the emitted artifact is left, and it computes what the interpreter computes.
  for (size_t i = 0; i < s.checked.size(); ++i)
    EXPECT_FALSE(std::filesystem::exists(art + ".plan-" + std::to_string(i)));
  expect_matches_interpreter(kora::import_model(model), a.dir);
  // Every kernel of the emitted plan has its in-plan time in the database, and the costs the
  // solver sees are those.
  auto db = std::make_shared<ProfileDb>(options.db);
  const ProfileDb::ScheduleTimes in_plan = db->in_plan(s.device);
  Session session(a.dir);
  for (const KernelInfo& k : session.kernel_infos()) {
    const auto it = in_plan.find(std::strtoull(k.signature.c_str(), nullptr, 16));
    ASSERT_NE(it, in_plan.end()) << k.primitives;
    ASSERT_TRUE(it->second.count(k.schedule)) << k.primitives << " " << k.schedule;
    EXPECT_GT(it->second.at(k.schedule), 0);
  }
  EXPECT_EQ(target_costs(*target, db)->in_plan(), static_cast<int64_t>(in_plan.size()));
  const nlohmann::json j = nlohmann::json::parse(compile_summary_json(s));
  EXPECT_EQ(j["checked"].size(), s.checked.size());
  EXPECT_TRUE(j["checked"][static_cast<size_t>(fastest)]["emitted"]);
  EXPECT_DOUBLE_EQ(j["measured_ms"].get<double>(), s.measured_ms);
}

// The solution pool (CompileOptions::pool): the check also solves for the next-best plans
// and times those 1-10% above the optimum's cost with the rest; whatever it emits computes
// what the interpreter computes.
TEST(Compile, TheSolutionPoolsNextBestPlansAreTimedWithTheRest) {
  CpuCompileSetup setup;
  const std::string model = small_builder().save(setup.dir);
  CompileOptions& options = setup.options;
  options.on_demand = false;  // every candidate measured: the runner-ups' kernels too
  options.pool = 4;
  const CompiledArtifact a = compile(model, *setup.target, setup.dir.file("art"), options);
  const CompileSummary& s = a.summary;
  ASSERT_GE(s.checked.size(), 2u);
  const double optimal_ms = s.checked[0].predicted_ms;
  int pooled = 0;
  for (const PlanCheck& c : s.checked) {
    EXPECT_TRUE(c.error.empty()) << c.label << ": " << c.error;
    if (c.label.rfind("next best", 0) != 0) continue;
    ++pooled;
    EXPECT_GE(c.predicted_ms, 1.01 * optimal_ms - 1e-9) << c.label;
    EXPECT_LE(c.predicted_ms, 1.10 * optimal_ms + 1e-9) << c.label;
    EXPECT_GT(c.measured_ms, 0) << c.label;
  }
  EXPECT_LE(pooled, 3);
  expect_matches_interpreter(kora::import_model(model), a.dir);
}

// The primitive names of each kernel of a plan, as a set of sets.
std::set<std::set<std::string>> kernel_sets(const PrimGraph& g, const OrchestrationResult& plan) {
  std::set<std::set<std::string>> out;
  for (const ChosenKernel& k : plan.kernels) {
    std::set<std::string> names;
    for (int p : k.prims) names.insert(g.prims[static_cast<size_t>(p)].name);
    out.insert(names);
  }
  return out;
}

std::set<std::set<std::string>> kernel_sets(const std::string& artifact) {
  std::set<std::set<std::string>> out;
  Session session(artifact);
  for (const KernelInfo& k : session.kernel_infos()) {
    std::set<std::string> names;
    std::stringstream ss(k.primitives);
    for (std::string n; std::getline(ss, n, ',');) names.insert(n.substr(n.find_first_not_of(' ')));
    out.insert(names);
  }
  return out;
}

TEST(Compile, TheEmittedPlanIsTimedAgainByTheNextCompileOfTheGraph) {
  CpuCompileSetup setup;
  const std::string model = small_builder().save(setup.dir);
  const PrimGraph g = kora::import_model(model);
  CompileOptions& options = setup.options;
  const CompiledArtifact first = compile(model, *setup.target, setup.dir.file("a1"), options);
  auto db = std::make_shared<ProfileDb>(options.db);
  const std::string& device = first.summary.device;
  // The emitted plan is remembered for this graph and device.
  double ms = 0;
  std::optional<OrchestrationResult> remembered = previous_emitted_plan(*db, device, g, &ms);
  ASSERT_TRUE(remembered.has_value());
  EXPECT_EQ(kernel_sets(g, *remembered), kernel_sets(first.dir));
  EXPECT_DOUBLE_EQ(ms, first.summary.measured_ms);
  EXPECT_FALSE(previous_emitted_plan(*db, device + "x", g).has_value());

  // A plan none of the next compile's own candidates is (kernels of at most two
  // primitives, solved at constant costs) stands in for the last compile's: it is timed
  // with them, and whichever is emitted is remembered after.
  CompileOptions two = options;
  two.orchestration.candidates.max_size = 2;
  ConstantCost constant(1.0);
  const OrchestrationResult other = orchestrate_for(g, *setup.target, constant, two);
  remember_emitted_plan(*db, device, g, other, 1.0);
  const CompiledArtifact second = compile(model, *setup.target, setup.dir.file("a2"), options);
  int previous = -1;
  for (size_t i = 0; i < second.summary.checked.size(); ++i)
    if (second.summary.checked[i].label == "previous compile") previous = static_cast<int>(i);
  ASSERT_NE(kernel_sets(g, other), kernel_sets(first.dir));  // the first has larger kernels
  ASSERT_GE(previous, 0);
  const PlanCheck& c = second.summary.checked[static_cast<size_t>(previous)];
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_GT(c.measured_ms, 0);
  EXPECT_EQ(c.kernels, static_cast<int64_t>(other.kernels.size()));
  remembered = previous_emitted_plan(*db, device, g);
  ASSERT_TRUE(remembered.has_value());
  EXPECT_EQ(kernel_sets(g, *remembered), kernel_sets(second.dir));
  expect_matches_interpreter(g, second.dir);

  // A remembered plan that does not fit the graph (or is not JSON) is ignored.
  const std::string key = "emitted_plan:" + plan_graph_key(g);
  db->put_device_fact(device, key, "{not json");
  EXPECT_FALSE(previous_emitted_plan(*db, device, g).has_value());
  OrchestrationResult wrong = other;
  wrong.kernels[0].prims = {static_cast<int>(g.prims.size())};
  remember_emitted_plan(*db, device, g, wrong, 1.0);
  EXPECT_FALSE(previous_emitted_plan(*db, device, g).has_value());
  wrong = other;
  wrong.kernels.pop_back();  // a primitive no kernel computes
  remember_emitted_plan(*db, device, g, wrong, 1.0);
  EXPECT_FALSE(previous_emitted_plan(*db, device, g).has_value());
  const CompiledArtifact third = compile(model, *setup.target, setup.dir.file("a3"), options);
  for (const PlanCheck& c : third.summary.checked) EXPECT_NE(c.label, "previous compile");
}

TEST(Compile, AParallelScheduleIsTriedOnTheClockAndComputesTheSame) {
  CpuCompileSetup setup;
  kora::TargetOptions t;
  t.threads = 2;  // pairs of kernels on one thread each
  setup.target = make_target("cpu", t);
  ModelBuilder m;  // four independent branches of x, concatenated
  std::vector<float> w(8 * 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 13 % 11) - 5) / 8;
  m.input("x", {1, 8, 12, 12}).init_f32("w", {8, 8, 1, 1}, w);
  m.node("Conv", {"x", "w"}, {"a"}, {}, "conv");
  m.node("Sigmoid", {"x"}, {"b"}, {}, "sigmoid");
  m.node("Tanh", {"x"}, {"c"}, {}, "tanh");
  m.node("MaxPool", {"x"}, {"d"}, {attr_is("kernel_shape", {3, 3}), attr_is("pads", {1, 1, 1, 1})},
         "pool");
  m.node("Concat", {"a", "b", "c", "d"}, {"y"}, {attr_i("axis", 1)}, "concat");
  m.output("y");
  const std::string model = m.save(setup.dir);
  setup.options.schedule = "parallel";
  setup.options.orchestration.candidates.max_size = 1;  // one kernel per branch at least
  const CompiledArtifact a = compile(model, *setup.target, setup.dir.file("art"), setup.options);
  int parallel = -1;
  for (size_t i = 0; i < a.summary.checked.size(); ++i)
    if (a.summary.checked[i].label == "parallel schedule") parallel = static_cast<int>(i);
  // Whether pairing pays on this machine is the clock's to say; when it was tried it ran.
  if (parallel >= 0) {
    const PlanCheck& c = a.summary.checked[static_cast<size_t>(parallel)];
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_GT(c.measured_ms, 0);
  }
  expect_matches_interpreter(kora::import_model(model), a.dir);
  // The schedule alone (pairs forced) computes the same.
  const PrimGraph g = kora::import_model(model);
  CompileOptions o = setup.options;
  const OrchestrationResult plan = orchestrate_for(
      g, *setup.target, *target_costs(*setup.target, std::make_shared<ProfileDb>(o.db)), o);
  PairCosts costs;
  costs.all_ms.assign(plan.kernels.size(), 1.0);
  costs.half_ms.assign(plan.kernels.size(), 0.6);
  costs.function.assign(plan.kernels.size(), "");
  const ParallelSchedule s = schedule_pairs(g, plan, costs);
  ASSERT_GE(s.pairs, 1);
  auto db = std::make_shared<ProfileDb>(o.db);
  setup.target->write_artifact(g, s.plan, db.get(), a.summary.device, setup.dir.file("pairs"),
                               TargetEmitOptions{});
  expect_matches_interpreter(g, setup.dir.file("pairs"));
}

// An LSTM unrolled over its time steps: each step's kernels slice the inputs' products at
// another row, so they share a signature: measured once (the database holds one record per
// signature), generated once per step, and the artifact computes every step's own rows.
TEST(Compile, TimeStepsOfARecurrentCellAreMeasuredOnceAndEachComputesItsOwnRows) {
  CpuCompileSetup setup;
  const int seq = 6, in = 3, hidden = 4;
  std::vector<float> w(4 * hidden * in), r(4 * hidden * hidden), b(8 * hidden);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7 % 13) - 6) / 8;
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>((i * 5 % 11) - 5) / 8;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 3 % 7) - 3) / 10;
  ModelBuilder m(17);
  m.input("X", {seq, 1, in})
      .init_f32("W", {1, 4 * hidden, in}, w)
      .init_f32("R", {1, 4 * hidden, hidden}, r)
      .init_f32("B", {1, 8 * hidden}, b);
  m.node("LSTM", {"X", "W", "R", "B"}, {"Y", "Y_h"}, {attr_i("hidden_size", hidden)}, "lstm");
  m.output("Y").output("Y_h");
  const std::string model = m.save(setup.dir);
  setup.options.verify = false;
  const CompiledArtifact a = compile(model, *setup.target, setup.dir.file("art"), setup.options);
  expect_matches_interpreter(kora::import_model(model), a.dir);

  std::ifstream in_manifest(setup.dir.file("art") + "/manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(in_manifest);
  std::map<std::string, std::set<std::string>> steps;  // signature -> its kernels' symbols
  for (const nlohmann::json& k : manifest.at("kernels"))
    if (k.at("impl") == "generated") steps[k.at("signature")].insert(k.at("symbol"));
  size_t most = 0;
  for (const auto& [signature, symbols] : steps) most = std::max(most, symbols.size());
  EXPECT_GE(most, 2u);  // steps of one signature, each generated from its own members
  // What a profile measures: one kernel per signature, under half the distinct codes.
  const PrimGraph g = kora::import_model(model);
  const ModelCandidates candidates =
      unique_candidates(g, setup.options.orchestration.partition,
                        setup.target->candidates(g, setup.options.orchestration.candidates));
  std::set<uint64_t> codes;
  for (const SegmentCandidates& segment : candidates.segments)
    for (const Candidate& c : segment.candidates)
      codes.insert(instance_signature(g, segment.sub, c));
  EXPECT_LT(2 * candidates.unique.size(), codes.size());
}

// kora compile --no-measure: the plan's kernels are run once against the interpreter and
// what fails is not emitted. A compiler that miscompiles square roots (2 sqrt(x)) makes
// every generated kernel that takes one wrong: checked, the artifact still matches the
// interpreter (those kernels run in it); unchecked (--no-verify), it does not.
TEST(Compile, UnmeasuredKernelsAreCheckedAgainstTheInterpreterAndWhatFailsIsNotEmitted) {
  CpuCompileSetup setup;
  TempDir& dir = setup.dir;
  const std::string cc = dir.file("sqrt2cc");
  write_file(cc, "#!/bin/sh\nexec g++ '-D__builtin_sqrtf(x)=(2*__builtin_sqrtf(x))' \"$@\"\n");
  std::filesystem::permissions(cc, std::filesystem::perms::owner_all);
  TargetOptions t;
  t.threads = 1;
  t.compiler = cc;
  const std::unique_ptr<Target> target = make_target("cpu", t);
  ModelBuilder m;
  m.input("x", {1, 4, 6, 6}).output("y");
  m.node("Abs", {"x"}, {"a"}, {}, "abs");
  m.node("Sqrt", {"a"}, {"s"}, {}, "sqrt");
  m.node("Sigmoid", {"s"}, {"g"}, {}, "sigmoid");
  m.node("Mul", {"s", "g"}, {"y"}, {}, "swish");
  const std::string model = m.save(dir);
  const PrimGraph g = kora::import_model(model);
  CompileOptions options = setup.options;
  options.measure = false;

  const CompiledArtifact a = compile(model, *target, dir.file("checked"), options);
  const CompileSummary& s = a.summary;
  EXPECT_GT(s.kernel_check.kernels, 0);
  ASSERT_FALSE(s.kernel_check.failed.empty());
  for (const auto& [signature, schedules] : s.kernel_check.failed)
    for (const auto& [schedule, error] : schedules) {
      EXPECT_EQ(schedule, "gen:" + CpuSchedule{}.key());
      EXPECT_NE(error.find("wrong result"), std::string::npos) << error;
    }
  // Every kernel computing the square root failed: one of them stays, in the interpreter.
  EXPECT_EQ(s.artifact.interpreter, 1);
  bool noted = false;
  for (const std::string& note : s.notes)
    noted = noted || note.find("failed its check against the interpreter") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::string text = format_compile_summary(s);
  EXPECT_NE(text.find("checked against the interpreter (not measured)"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(compile_summary_json(s));
  EXPECT_EQ(j["kernel_check"]["kernels"], s.kernel_check.kernels);
  EXPECT_FALSE(j["kernel_check"]["failed"].empty());
  expect_matches_interpreter(g, a.dir);
  // A check measures and stores nothing.
  EXPECT_EQ(ProfileDb(options.db).count(s.device), 0);

  options.verify = false;
  const CompiledArtifact unchecked = compile(model, *target, dir.file("unchecked"), options);
  EXPECT_EQ(unchecked.summary.kernel_check.kernels, 0);
  EXPECT_EQ(unchecked.summary.artifact.interpreter, 0);
  Session session(unchecked.dir);
  const auto feeds = random_inputs(g, 1);
  const Tensor got = session.run(feeds).at("y"), want = kora::interpret(g, feeds).at("y");
  double diff = 0;
  for (int64_t i = 0; i < want.numel(); ++i) diff += std::abs(got.double_at(i) - want.double_at(i));
  EXPECT_GT(diff, 1.0);  // the miscompiled square roots, emitted
}

TEST(Compile, AnInterruptRequestStopsTheCompileAndLeavesNothing) {
  CpuCompileSetup setup;
  const std::string model = small_builder().save(setup.dir);
  const std::string art = setup.dir.file("art");
  request_interrupt();
  try {
    compile(model, *setup.target, art, setup.options);
    ADD_FAILURE() << "compiled although interrupted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted while"), std::string::npos) << e.what();
  }
  clear_interrupt();
  EXPECT_FALSE(std::filesystem::exists(art));
  // Cleared, the same compile runs.
  expect_matches_interpreter(kora::import_model(model),
                             compile(model, *setup.target, art, setup.options).dir);
}

TEST(Compile, UnknownTargetsAndModelsAreClearErrors) {
  expect_error([] { make_target("tpu"); }, "unknown target 'tpu'");
  TempDir dir;
  const std::unique_ptr<Target> target = make_target("cpu");
  CompileOptions options;
  options.db = dir.file("profiles.db");
  expect_error([&] { compile(dir.file("missing.onnx"), *target, dir.file("art"), options); },
               "missing.onnx");
  EXPECT_FALSE(std::filesystem::exists(dir.file("art")));
}

// A kernel of the emitted plan that ran far above its cost inside it is named in
// the summary where it cost the plan a tenth of its time, and in the JSON always.
TEST(Compile, TheSummaryNamesAKernelFarSlowerInThePlanThanAlone) {
  kora::CompileSummary s;
  s.target = "cpu";
  kora::PlanCheck c;
  c.label = "optimal";
  c.kernels = 3;
  c.predicted_ms = 1.0;
  c.in_plan_ms = 7.4;
  c.measured_ms = 7.5;
  c.outlier =
      "kernel 1 (generated: p1, p2): 6.482 ms in the plan against its cost of 0.114 ms (57x)";
  c.outlier_ms = 6.368;
  s.checked = {c};
  s.emitted_check = 0;
  const std::string note = "note: in the emitted plan kernel 1 (generated: p1, p2): 6.482 ms";
  EXPECT_NE(kora::format_compile_summary(s).find(note), std::string::npos)
      << kora::format_compile_summary(s);
  const nlohmann::json j = nlohmann::json::parse(kora::compile_summary_json(s));
  EXPECT_DOUBLE_EQ(j["checked"][0]["outlier_ms"].get<double>(), 6.368);
  s.checked[0].outlier_ms = 0.5;  // under a tenth of 7.5 ms: not worth a note
  EXPECT_EQ(kora::format_compile_summary(s).find("note: in the emitted plan"), std::string::npos);
}

}  // namespace
}  // namespace kora_test
