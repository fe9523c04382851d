// The parallel schedule of a plan (src/orchestrate/parallel_schedule.h): kernels paired
// only when independent and when the pair is faster than both in turn; every kernel
// scheduled once, after what it reads; and its artifact runs like the interpreter, with
// the runtime refusing a schedule that runs a kernel beside what it reads.
#include "orchestrate/parallel_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "emit/small_artifacts.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"

namespace kora_test {
namespace {

using namespace kora;

// Checks the schedule's shape; returns the number of pairs.
int check_schedule(const PrimGraph& g, const OrchestrationResult& serial,
                   const ParallelSchedule& s) {
  const KernelDag dag = kernel_dag_of(g);
  EXPECT_EQ(s.plan.kernels.size(), serial.kernels.size());
  std::set<std::vector<int>> scheduled, expected;
  for (const ChosenKernel& k : serial.kernels) expected.insert(k.prims);
  std::map<std::string, int> written_at;  // tensor -> step
  std::map<int, std::vector<size_t>> steps;
  for (size_t i = 0; i < s.plan.kernels.size(); ++i) {
    const ChosenKernel& k = s.plan.kernels[i];
    EXPECT_TRUE(scheduled.insert(k.prims).second);
    if (i > 0) {
      EXPECT_GE(k.step, s.plan.kernels[i - 1].step);
    }
    steps[k.step].push_back(i);
    const Candidate c = make_candidate(dag, k.prims);
    for (const std::string& t : kernel_reads(g, dag, c))
      if (!g.constant(t) && std::find(g.inputs.begin(), g.inputs.end(), t) == g.inputs.end()) {
        EXPECT_TRUE(written_at.count(t)) << t;
        if (written_at.count(t)) {
          EXPECT_LT(written_at[t], k.step) << t;
        }
      }
    for (const std::string& t : kernel_writes(g, dag, c))
      if (!written_at.count(t)) written_at[t] = k.step;
  }
  EXPECT_EQ(scheduled, expected);
  int pairs = 0;
  for (const auto& [step, kernels] : steps) {
    EXPECT_LE(kernels.size(), 2u);
    for (size_t i : kernels) EXPECT_EQ(s.plan.kernels[i].threads, kernels.size() == 2 ? 1 : 0);
    pairs += kernels.size() == 2;
  }
  return pairs;
}

PairCosts costs_of(const OrchestrationResult& plan, double all, double half) {
  PairCosts c;
  c.threads = 2;
  c.slowdown = 1.0;
  c.all_ms.assign(plan.kernels.size(), all);
  c.half_ms.assign(plan.kernels.size(), half);
  c.function.assign(plan.kernels.size(), "");
  return c;
}

TEST(ParallelSchedule, PairsIndependentKernelsOnlyWhenThatIsFaster) {
  const PrimGraph g = small_model();  // conv and the shortcut conv are independent
  const OrchestrationResult plan = plan_of(g, "unfused");
  // At half the threads a kernel takes as long as on all: pairing saves half.
  const ParallelSchedule fast = schedule_pairs(g, plan, costs_of(plan, 1.0, 1.0));
  const int pairs = check_schedule(g, plan, fast);
  EXPECT_GE(pairs, 1);
  EXPECT_EQ(fast.pairs, pairs);
  EXPECT_DOUBLE_EQ(fast.serial_ms, static_cast<double>(plan.kernels.size()));
  EXPECT_DOUBLE_EQ(fast.predicted_ms, static_cast<double>(plan.kernels.size() - pairs));
  // At half the threads twice as slow: nothing to gain, nothing paired.
  const ParallelSchedule slow = schedule_pairs(g, plan, costs_of(plan, 1.0, 2.0));
  EXPECT_EQ(check_schedule(g, plan, slow), 0);
  EXPECT_DOUBLE_EQ(slow.predicted_ms, slow.serial_ms);
  // Kernels calling one function never run together.
  PairCosts same = costs_of(plan, 1.0, 1.0);
  same.function.assign(plan.kernels.size(), "0:kora_k0");
  EXPECT_EQ(check_schedule(g, plan, schedule_pairs(g, plan, same)), 0);
}

TEST(ParallelSchedule, ItsArtifactRunsLikeTheInterpreterAndABadScheduleIsRefused) {
  TempDir dir;
  const PrimGraph g = small_model();
  const OrchestrationResult plan = plan_of(g, "unfused");
  const ParallelSchedule s = schedule_pairs(g, plan, costs_of(plan, 1.0, 1.0));
  ASSERT_GE(s.pairs, 1);
  const std::string out = dir.file("parallel");
  write_cpu_artifact(g, s.plan, nullptr, out, quick_options());
  for (int run = 0; run < 3; ++run) expect_matches_interpreter(g, out);
  // The same kernels on another run order: still the interpreter's results.
  {
    Session session(out, SessionOptions{2});
    const auto feeds = random_inputs(g, 7);
    std::vector<double> ms = (session.run(feeds), session.profile_kernels(3));
    EXPECT_EQ(ms.size(), s.plan.kernels.size());
  }
  // A kernel moved into the step of the kernel whose output it reads is refused at load.
  nlohmann::json m =
      nlohmann::json::parse(read_bytes(std::filesystem::path(out) / "manifest.json"));
  auto& kernels = m["kernels"];
  size_t reader = 0;
  for (size_t i = 1; i < kernels.size(); ++i)
    for (const auto& t : kernels[i]["reads"])
      for (const auto& w : kernels[i - 1]["writes"])
        if (t == w && kernels[i]["step"] != kernels[i - 1]["step"]) reader = i;
  ASSERT_GT(reader, 0u);
  const int step = kernels[reader - 1]["step"].get<int>();
  for (size_t i = reader; i < kernels.size(); ++i)
    kernels[i]["step"] =
        kernels[i]["step"].get<int>() - (kernels[reader]["step"].get<int>() - step);
  write_bytes(std::filesystem::path(out) / "manifest.json", m.dump());
  expect_error([&] { Session bad(out); }, "before any kernel writes it");
}

// Two chains that read each other at every step (a_i = tanh(a + b), b_i = tanh(a - b)):
// the unfused plan pairs them step after step, so the runtime runs those steps in one
// OpenMP region with a barrier between them (src/runtime/cpu_plan.cc, spans). Every step
// reads what the other thread wrote in the step before: without the barrier a thread runs
// ahead and reads a tensor not yet written. Kernels of 262,144 elements, so that a thread
// running ahead would be seen.
TEST(ParallelSchedule, StepsOfPairsInOneRegionRunLikeTheInterpreter) {
  TempDir dir;
  ModelBuilder m;
  m.input("x", {1, 64, 64, 64}).input("y", {1, 64, 64, 64});
  std::string a = "x", b = "y";
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    m.node("Add", {a, b}, {"sum" + n}, {}, "add" + n);
    m.node("Sub", {a, b}, {"diff" + n}, {}, "sub" + n);
    m.node("Tanh", {"sum" + n}, {"a" + n}, {}, "tanh_a" + n);
    m.node("Tanh", {"diff" + n}, {"b" + n}, {}, "tanh_b" + n);
    a = "a" + n, b = "b" + n;
  }
  m.output(a).output(b);
  const PrimGraph g = fission(import_model(m));
  const OrchestrationResult plan = plan_of(g, "unfused");
  const ParallelSchedule s = schedule_pairs(g, plan, costs_of(plan, 1.0, 1.0));
  check_schedule(g, plan, s);
  // The pairs come in consecutive steps (a span of one region).
  int longest = 0, run = 0;
  for (size_t i = 0; i + 1 < s.plan.kernels.size(); ++i)
    if (s.plan.kernels[i].step == s.plan.kernels[i + 1].step) {
      longest = std::max(longest, ++run);
      ++i;
    } else {
      run = 0;
    }
  ASSERT_GE(longest, 6);
  const std::string out = dir.file("chains");
  write_cpu_artifact(g, s.plan, nullptr, out, quick_options());
  Session session(out, SessionOptions{2});
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto feeds = random_inputs(g, seed);
    const auto want = interpret(g, feeds);
    const auto got = session.run(feeds);
    for (const std::string& o : g.outputs) expect_close(got.at(o), want.at(o), o);
  }
  const std::vector<double> ms = session.profile_kernels(3);
  ASSERT_EQ(ms.size(), s.plan.kernels.size());
  for (double k : ms) EXPECT_GT(k, 0);
}

// Two independent convolutions large enough for oneDNN's JIT kernels (and their
// scratchpads), paired: the second of a pair runs on a thread of the OpenMP team, not the
// one that created its primitive. Both match the interpreter, run after run.
TEST(ParallelSchedule, PairedOnednnConvolutionsRunLikeTheInterpreter) {
  TempDir dir;
  ModelBuilder m;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  std::vector<float> w1(64 * 64 * 3 * 3), w2(64 * 64 * 3 * 3);
  for (float& v : w1) v = u(rng);
  for (float& v : w2) v = u(rng);
  m.input("x", {1, 64, 28, 28})
      .input("y", {1, 64, 28, 28})
      .init_f32("w1", {64, 64, 3, 3}, w1)
      .init_f32("w2", {64, 64, 3, 3}, w2);
  m.node("Conv", {"x", "w1"}, {"c1"}, {attr_is("pads", {1, 1, 1, 1})}, "conv1");
  m.node("Conv", {"y", "w2"}, {"c2"}, {attr_is("pads", {1, 1, 1, 1})}, "conv2");
  m.output("c1").output("c2");
  const PrimGraph g = fission(import_model(m));
  const OrchestrationResult plan = plan_of(g, "unfused");
  const ParallelSchedule s = schedule_pairs(g, plan, costs_of(plan, 1.0, 1.0));
  ASSERT_EQ(check_schedule(g, plan, s), 1);
  const std::string out = dir.file("convs");
  write_cpu_artifact(g, s.plan, nullptr, out, quick_options());
  Session session(out, SessionOptions{2});
  ASSERT_EQ(session.kernel_infos().size(), 2u);
  for (const KernelInfo& k : session.kernel_infos()) EXPECT_EQ(k.impl, "onednn");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto feeds = random_inputs(g, seed);
    const auto want = interpret(g, feeds);
    const auto got = session.run(feeds);
    for (const std::string& o : g.outputs) expect_close(got.at(o), want.at(o), o);
  }
}

}  // namespace
}  // namespace kora_test
