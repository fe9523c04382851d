// profile_model() (src/cpu/profile.h) on a small model (conv + bias, relu, softmax,
// TopK: generated, library and interpreter-only kernels): every unique candidate ends up
// in the database with a working implementation, a second run measures nothing, the
// orchestrator then finds every kernel measured; deliberately wrong or throwing
// implementations and kernels that fail to compile are stored as failed and never
// chosen; kernels whose generated code is the same are compiled and measured once.
#include "cpu/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cpu/backend.h"
#include "cpu/codegen.h"
#include "cpu/library.h"
#include "cpu/spinning_processes.h"
#include "frontend/model_builder.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "profile/second_run_waits.h"

namespace {

using namespace kora;

// conv + bias -> relu, and unless `conv_only`, -> softmax and -> TopK.
PrimGraph small_model(bool conv_only = false) {
  kora_test::ModelBuilder m;
  std::vector<float> w(4 * 3 * 3 * 3), b(4);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>(i * 37 % 17) - 8) / 16;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i) - 0.5f;
  m.input("x", {1, 3, 6, 6}).init_f32("w", {4, 3, 3, 3}, w).init_f32("b", {4}, b);
  m.node("Conv", {"x", "w", "b"}, {"c"}, {kora_test::attr_is("pads", {1, 1, 1, 1})}, "conv");
  m.node("Relu", {"c"}, {"r"}, {}, "relu");
  if (conv_only) {
    m.output("r");
    return fission(kora_test::import_model(m));
  }
  m.init_i64("k", {1}, {3}).output("p").output("top").output("idx", onnx::TensorProto::INT64);
  m.node("Softmax", {"r"}, {"p"}, {kora_test::attr_i("axis", 1)}, "softmax");
  m.node("TopK", {"r", "k"}, {"top", "idx"}, {kora_test::attr_i("axis", 3)}, "topk");
  return fission(kora_test::import_model(m));
}

// Short measurements; kernels compiled at -O1 into one cache for the whole suite (the
// tests check what is stored and chosen, not speed).
ProfileOptions quick(const kora_test::TempDir&) {
  static kora_test::TempDir cache;
  ProfileOptions o;
  o.threads = 1;
  o.measure = {1, 3, 5, 0.05, 0.05};
  o.quiet_budget_seconds = 0;  // other tests may share the machine: no waiting for quiet
  o.compile.cache_dir = cache.file("kernels");
  o.compile.flags = default_compile_flags(o.compile.compiler);
  for (std::string& f : o.compile.flags)
    if (f.rfind("-O", 0) == 0) f = "-O1";
  return o;
}

// The unique signatures profile_model enumerates (default options).
std::set<uint64_t> signatures(const PrimGraph& g) {
  std::set<uint64_t> s;
  const KernelDag dag = kernel_dag_of(g);
  for (const Segment& seg : partition_dag(dag, {}))
    for (const Candidate& c : segment_candidates(g, dag, seg, {}).candidates) s.insert(c.signature);
  return s;
}

// The records of g's kernels on `device` stored as suspect for the reason `why` (the
// error's text after "suspect: "); none of them failed.
std::vector<ProfileRecord> suspect_records(const PrimGraph& g, const ProfileDb& db,
                                           const std::string& device, const std::string& why) {
  std::vector<ProfileRecord> found;
  for (uint64_t sig : signatures(g))
    for (const ProfileRecord& r : db.records(device, sig)) {
      EXPECT_FALSE(r.failed && r.error.rfind("suspect", 0) == 0);
      if (!r.failed && r.error.rfind("suspect: " + why, 0) == 0) found.push_back(r);
    }
  return found;
}

TEST(ProfileModel, MeasuresEveryKernelOnceAndTheOrchestratorUsesThem) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  auto db = std::make_shared<ProfileDb>(dir.file("p.db"));
  const ProfileSummary first = profile_model(g, *db, quick(dir));
  const std::set<uint64_t> sigs = signatures(g);
  EXPECT_EQ(first.kernels, static_cast<int64_t>(sigs.size()));
  EXPECT_EQ(first.measured, first.kernels);
  EXPECT_EQ(first.from_db, 0);
  for (const ProfileFailure& f : first.failures)
    ADD_FAILURE() << f.schedule << " of " << f.kernel << ": " << f.error;
  EXPECT_EQ(first.device, cpu_backend_fingerprint(1));
  for (uint64_t sig : sigs) {
    const auto best = db->best(first.device, sig);
    ASSERT_TRUE(best.has_value()) << signature_hex(sig);
    EXPECT_GT(best->median_ms, 0);
    EXPECT_GE(best->samples, 3);
  }
  // TopK is opaque: only the interpreter computes it.
  EXPECT_GE(first.interpreter_only, 1);

  const ProfileSummary second = profile_model(g, *db, quick(dir));
  EXPECT_EQ(second.measured, 0);
  EXPECT_EQ(second.from_db, first.kernels);
  EXPECT_EQ(second.units, 0);

  ProfileDbCost costs(db, first.device, nullptr);  // no fallback: a miss would throw
  const OrchestrationResult plan = orchestrate(g, costs);
  EXPECT_EQ(costs.misses(), 0);
  EXPECT_EQ(costs.hits(), static_cast<int64_t>(sigs.size()));
  EXPECT_TRUE(plan.proven_optimal);
}

// Two kora profile runs on one database: the second waits for the first (here: a lock held
// by the test, which meanwhile stores every kernel as the first run would), says so, and
// then measures nothing, reading the database only once it holds the lock.
TEST(ProfileModel, ASecondRunOnTheDatabaseWaitsAndReusesTheFirstsMeasurements) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const std::string path = dir.file("p.db");
  ProfileOptions o = quick(dir);
  std::ostringstream progress;
  o.progress = &progress;
  ProfileSummary second;
  kora_test::expect_second_run_waits(
      path, progress,
      [&] {
        ProfileDb db(path);
        second = profile_model(g, db, o);
      },
      [&] {
        ProfileDb db(path);
        const std::string device = cpu_backend_fingerprint(1, o.compile.compiler);
        std::vector<ProfileRecord> records;
        for (uint64_t sig : signatures(g))
          for (const char* schedule :
               {"gen:default", kOnednnNative, kOnednnBlocked, kOnednnWinograd}) {
            ProfileRecord r;
            r.device = device, r.signature = sig, r.schedule = schedule, r.median_ms = 0.01;
            r.samples = 1;
            records.push_back(r);
          }
        db.put(records);
      });
  EXPECT_EQ(second.measured, 0);
  EXPECT_EQ(second.from_db, second.kernels);
}

// A database measured under another fingerprint (here: an older revision of kora's
// generated code) is not reused: everything is measured again, and the summary says why.
// Measured while two other processes spin on the machine's cores: every implementation it
// watched is seen, waited for (the machine never gets quiet) and stored as suspect, not
// failed; the summary and the database say so.
TEST(ProfileModel, MeasurementsTakenWhileOthersRunAreSuspect) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  auto db = std::make_shared<ProfileDb>(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  o.quiet_budget_seconds = 1;
  ProfileSummary s;
  {
    kora_test::SpinningProcesses others(2);
    s = profile_model(g, *db, o);
  }
  EXPECT_GT(s.suspect, 0);
  EXPECT_EQ(s.measured, s.kernels);
  const int64_t suspect =
      static_cast<int64_t>(suspect_records(g, *db, s.device, "other processes").size());
  EXPECT_EQ(suspect, s.suspect - s.slowed);  // the rest: the speed probe slowed, none seen
  EXPECT_NE(format_profile_summary(s).find("stored as suspect"), std::string::npos);
  // The cost model knows which costs are suspect; --suspect measures those kernels again.
  const std::set<uint64_t> flagged = db->suspect(s.device);
  EXPECT_FALSE(flagged.empty());
  ProfileDbCost costs(db, s.device, nullptr);
  for (uint64_t sig : flagged) EXPECT_TRUE(costs.suspect(sig));
  o.remeasure_suspect = true;
  o.quiet_budget_seconds = 0;
  const ProfileSummary again = profile_model(g, *db, o);
  EXPECT_EQ(again.measured, static_cast<int64_t>(flagged.size()));
  EXPECT_EQ(again.from_db, again.kernels - again.measured);
}

// The speed probe (src/cpu/speed_probe.h) reporting the machine slowed before and after
// every measurement: each implementation watched is stored as suspect, not failed and not
// waited for, with the probe's ratio where no other process was seen (other tests running
// beside this one take precedence: "other processes"); the summary says so apart from
// other processes; a probe at full speed marks nothing.
TEST(ProfileModel, MeasurementsTakenWhileTheMachineRunsSlowedAreSuspect) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model(/*conv_only=*/true);
  auto db = std::make_shared<ProfileDb>(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  int calls = 0;
  o.speed_probe = [&] { return ++calls <= 5 ? 1.0 : 1.6; };  // fast while calibrating
  const ProfileSummary s = profile_model(g, *db, o);
  EXPECT_EQ(s.measured, s.kernels);
  const std::vector<ProfileRecord> slowed =
      suspect_records(g, *db, s.device, "the machine ran slowed");
  const std::vector<ProfileRecord> busy = suspect_records(g, *db, s.device, "other processes");
  EXPECT_GT(s.suspect, 0);
  EXPECT_EQ(static_cast<int64_t>(slowed.size() + busy.size()), s.suspect);
  EXPECT_EQ(static_cast<int64_t>(slowed.size()), s.slowed);
  for (const ProfileRecord& r : slowed)
    EXPECT_NE(r.error.find("1.60x its fastest"), std::string::npos) << r.error;
  // Every watched implementation is suspect: none is stored without a reason.
  for (uint64_t sig : signatures(g))
    for (const ProfileRecord& r : db->records(s.device, sig))
      EXPECT_TRUE(r.failed || r.error.rfind("suspect: ", 0) == 0 || s.same_code > 0) << r.error;
  const std::string text = format_profile_summary(s);
  if (s.slowed > 0) {
    EXPECT_NE(text.find("the machine ran slowed"), std::string::npos) << text;
  }
  EXPECT_EQ(nlohmann::json::parse(profile_summary_json(s))["slowed"], s.slowed);
  EXPECT_FALSE(db->suspect(s.device).empty());

  kora_test::TempDir dir2;  // the same at full speed: nothing slowed
  auto db2 = std::make_shared<ProfileDb>(dir2.file("p.db"));
  o.speed_probe = [] { return 1.0; };
  const ProfileSummary fast = profile_model(g, *db2, o);
  EXPECT_EQ(fast.slowed, 0);
  EXPECT_EQ(format_profile_summary(fast).find("ran slowed"), std::string::npos);
}

TEST(ProfileModel, MeasurementsUnderAnotherFingerprintAreNotReused) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  auto db = std::make_shared<ProfileDb>(dir.file("p.db"));
  const std::string now = cpu_backend_fingerprint(1);
  ASSERT_NE(now.find("|kora-gen " + std::to_string(kCpuCodegenRevision)), std::string::npos);
  const std::string old = now.substr(0, now.rfind('|')) + "|kora-gen 1";
  ProfileRecord r;
  r.device = old;
  r.signature = *signatures(g).begin();
  r.schedule = "default";
  r.median_ms = 0.001;
  r.samples = 3;
  db->put({r});
  const ProfileSummary first = profile_model(g, *db, quick(dir));
  EXPECT_EQ(first.other_fingerprints, 1);
  EXPECT_EQ(first.from_db, 0);
  EXPECT_EQ(first.measured, first.kernels);
  EXPECT_NE(format_profile_summary(first).find("are not reused"), std::string::npos);
  EXPECT_NE(db->best(now, r.signature)->median_ms, 0.001);
  const ProfileSummary second = profile_model(g, *db, quick(dir));
  EXPECT_EQ(second.other_fingerprints, 0);
  EXPECT_EQ(second.measured, 0);
}

// A database measured before a library schedule existed (here: without its Winograd
// records, as kora profile wrote them before oneDNN's Winograd convolutions were offered)
// gets that schedule measured on the next run, and nothing else; a third run measures
// nothing.
TEST(ProfileModel, ALibraryScheduleAddedSinceTheDatabaseWasMeasuredIsMeasuredAlone) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model(true);
  ProfileDb full(dir.file("full.db"));
  const ProfileSummary first = profile_model(g, full, quick(dir));
  std::set<uint64_t> winograd;
  int64_t others = 0;
  ProfileDb older(dir.file("older.db"));
  for (uint64_t sig : signatures(g))
    for (const ProfileRecord& r : full.records(first.device, sig)) {
      if (r.schedule == kOnednnWinograd) {
        winograd.insert(sig);
        continue;
      }
      older.put(r);
      ++others;
    }
  if (winograd.empty()) GTEST_SKIP() << "this CPU's oneDNN offers no Winograd convolution";
  const ProfileSummary second = profile_model(g, older, quick(dir));
  EXPECT_EQ(second.measured, static_cast<int64_t>(winograd.size()));
  EXPECT_EQ(second.library_filled, second.measured);
  EXPECT_NE(format_profile_summary(second).find("measured only for library schedules"),
            std::string::npos);
  EXPECT_EQ(second.from_db, first.kernels - second.measured);
  int64_t after = 0;
  for (uint64_t sig : signatures(g)) {
    bool has = false;
    for (const ProfileRecord& r : older.records(first.device, sig)) {
      has = has || r.schedule == kOnednnWinograd;
      after += r.schedule != kOnednnWinograd;
    }
    EXPECT_EQ(has, winograd.count(sig) == 1) << signature_hex(sig);
  }
  EXPECT_EQ(after, others);  // nothing else measured again
  EXPECT_EQ(profile_model(g, older, quick(dir)).measured, 0);
}

// x -> Reshape (adds a unit axis) -> Relu: the candidates {relu} and {reshape, relu} have
// different signatures but the same generated code (a unit axis has no index arithmetic),
// so it is compiled and measured once, yet both kernels get their records.
TEST(ProfileModel, KernelsWithTheSameCodeAreCompiledAndMeasuredOnce) {
  kora_test::TempDir dir;
  kora_test::ModelBuilder m;
  m.input("x", {4, 8}).init_i64("shape", {3}, {1, 4, 8}).output("r");
  m.node("Reshape", {"x", "shape"}, {"t"}, {}, "reshape");
  m.node("Relu", {"t"}, {"r"}, {}, "relu");
  const PrimGraph g = fission(kora_test::import_model(m));
  ProfileDb db(dir.file("p.db"));
  const ProfileSummary s = profile_model(g, db, quick(dir));
  EXPECT_TRUE(s.failures.empty());
  EXPECT_GE(s.same_code, 1);
  for (uint64_t sig : signatures(g)) {
    const auto best = db.best(s.device, sig);
    ASSERT_TRUE(best.has_value()) << signature_hex(sig);
    EXPECT_GT(best->median_ms, 0);
  }
}

// Writes zeros: wrong wherever the true output is not all zeros.
class ZerosKernel : public CpuLibraryKernel {
 public:
  explicit ZerosKernel(std::vector<size_t> bytes) : bytes_(std::move(bytes)) {}
  void run(const void* const*, void* const* out) override {
    for (size_t i = 0; i < bytes_.size(); ++i) std::memset(out[i], 0, bytes_[i]);
  }
  std::string schedule() const override { return "zeros"; }

 private:
  std::vector<size_t> bytes_;
};

class ThrowingKernel : public CpuLibraryKernel {
 public:
  void run(const void* const*, void* const*) override { throw Error("out of luck"); }
  std::string schedule() const override { return "throws"; }
};

// Computes x[1, K] . w[K, N] naively and counts the distinct buffers each input came in.
class BufferCountingMatmul : public CpuLibraryKernel {
 public:
  BufferCountingMatmul(int64_t k, int64_t n, std::vector<std::set<const void*>>* seen)
      : k_(k), n_(n), seen_(seen) {}
  void run(const void* const* in, void* const* out) override {
    for (size_t i = 0; i < seen_->size(); ++i) (*seen_)[i].insert(in[i]);
    const float* x = static_cast<const float*>(in[0]);
    const float* w = static_cast<const float*>(in[1]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t j = 0; j < n_; ++j) y[j] = 0;
    for (int64_t i = 0; i < k_; ++i)
      for (int64_t j = 0; j < n_; ++j) y[j] += x[i] * w[i * n_ + j];
  }
  std::string schedule() const override { return "counting"; }

 private:
  int64_t k_, n_;
  std::vector<std::set<const void*>>* seen_;
};

// A kernel whose weights outweigh its activations (a batch-1 matmul) is measured with
// its weights rotating through 64 MiB of copies (32 copies of 1 MiB), apart from its
// activations (8 copies of 17 KB): a running plan reads such weights from memory, and
// finds its activations where their producer just wrote them.
TEST(ProfileModel, WeightsOutweighingTheActivationsRotateThroughMoreCopies) {
  constexpr int64_t K = 64, N = 4096;
  kora_test::ModelBuilder m;
  std::vector<float> w(K * N);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) / 13 - 0.5f;
  m.input("x", {1, K}).init_f32("w", {K, N}, w).output("y");
  m.node("MatMul", {"x", "w"}, {"y"}, {}, "matmul");
  const PrimGraph g = fission(kora_test::import_model(m));
  kora_test::TempDir dir;
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  o.measure = {1, 64, 64, 30.0, 0.0};  // 64 samples
  std::vector<std::set<const void*>> seen(2);
  int counted = 0;
  o.extra_kernels = [&](const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
    std::vector<std::unique_ptr<CpuLibraryKernel>> v;
    const std::vector<std::string> reads = kernel_reads(graph, dag, c);
    if (reads.size() == 2 && !graph.constant(reads[0]) && graph.constant(reads[1])) {
      v.push_back(std::make_unique<BufferCountingMatmul>(K, N, &seen));
      ++counted;
    }
    return v;
  };
  profile_model(g, db, o);
  ASSERT_EQ(counted, 1);
  EXPECT_EQ(seen[0].size(), 8u);   // activations: 8 copies (of 32 MiB at most)
  EXPECT_EQ(seen[1].size(), 32u);  // weights: 64 MiB / 1 MiB, at most 32
}

// Every schedule of every generated kernel is in the database after an exhaustive run;
// after the default two-round search, at least the default schedule, and all schedules
// of the kernels the search chose.
TEST(ProfileModel, ScheduleSearchRecordsTheSchedules) {
  const PrimGraph g = small_model(true);
  const KernelDag dag = kernel_dag_of(g);
  for (bool exhaustive : {true, false}) {
    kora_test::TempDir dir;
    ProfileDb db(dir.file("p.db"));
    ProfileOptions o = quick(dir);
    o.exhaustive = exhaustive;
    const ProfileSummary s = profile_model(g, db, o);
    EXPECT_TRUE(s.failures.empty());
    int64_t with_all = 0, generated = 0;
    std::set<uint64_t> done;
    for (const Segment& seg : partition_dag(dag, {})) {
      const SegmentCandidates sc = segment_candidates(g, dag, seg, {});
      for (const Candidate& c : sc.candidates) {
        if (!done.insert(c.signature).second || !cpu_codegen_supports(g, sc.sub, c)) continue;
        std::set<std::string> recorded;
        for (const ProfileRecord& r : db.records(s.device, c.signature))
          recorded.insert(r.schedule);
        const std::vector<CpuSchedule> space = cpu_schedule_space(g, sc.sub, c);
        EXPECT_TRUE(recorded.count("gen:" + space[0].key()));
        bool all = true;
        for (const CpuSchedule& cs : space) all = all && recorded.count("gen:" + cs.key());
        with_all += all;
        ++generated;
      }
    }
    EXPECT_GT(generated, 0);
    if (exhaustive)
      EXPECT_EQ(with_all, generated);
    else
      EXPECT_GE(with_all, s.searched);
  }
}

// Measure on demand defers the search: the kernels measured get their default schedule
// only, unexplored_schedule_costs names them with a cost at most their best, and asking
// for one again runs its search (every schedule of its space), once.
TEST(ProfileModel, ADeferredSearchRunsWhenTheKernelIsAskedForAgain) {
  const PrimGraph g = small_model(true);
  kora_test::TempDir dir;
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  o.search_min_ms = 0;    // every kernel is worth searching
  o.search_within = 1e9;  // however far its default is from its best
  o.defer_search = true;
  const ModelCandidates candidates = unique_candidates(g, {}, {});
  o.only.emplace();
  for (const UniqueCandidate& u : candidates.unique) o.only->insert(u.candidate->signature);
  const ProfileSummary first = profile_model(g, db, o);
  EXPECT_EQ(first.searched, 0);
  EXPECT_EQ(first.measured, static_cast<int64_t>(candidates.unique.size()));
  auto generated = [&](uint64_t signature) {
    int n = 0;
    for (const ProfileRecord& r : db.records(first.device, signature))
      n += r.schedule.rfind("gen:", 0) == 0;
    return n;
  };
  for (const UniqueCandidate& u : candidates.unique)
    EXPECT_LE(generated(u.candidate->signature), 1);

  std::map<uint64_t, double> unexplored =
      unexplored_schedule_costs(g, candidates, db, first.device, o);
  ASSERT_FALSE(unexplored.empty());
  const std::map<uint64_t, double> fastest = db.fastest(first.device);
  for (const auto& [signature, ms] : unexplored) {
    EXPECT_GT(ms, 0);
    EXPECT_LE(ms, fastest.at(signature));
  }

  const uint64_t asked = unexplored.begin()->first;
  o.only = std::set<uint64_t>{asked};
  const ProfileSummary second = profile_model(g, db, o);
  EXPECT_EQ(second.measured, 0);
  EXPECT_EQ(second.searched, 1);
  const UniqueCandidate& u =
      *std::find_if(candidates.unique.begin(), candidates.unique.end(),
                    [&](const UniqueCandidate& c) { return c.candidate->signature == asked; });
  EXPECT_EQ(generated(asked), static_cast<int>(cpu_schedule_space(g, *u.sub, *u.candidate).size()));
  const std::map<uint64_t, double> after =
      unexplored_schedule_costs(g, candidates, db, first.device, o);
  EXPECT_FALSE(after.count(asked));
  EXPECT_EQ(after.size(), unexplored.size() - 1);

  const ProfileSummary third = profile_model(g, db, o);
  EXPECT_EQ(third.measured + third.searched, 0);
}

TEST(ProfileModel, WrongAndThrowingImplementationsAreFailedAndNeverChosen) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  o.extra_kernels = [](const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
    std::vector<size_t> bytes;
    for (const std::string& t : kernel_writes(graph, dag, c))
      bytes.push_back(numel(graph.value(t).shape) * dtype_size(graph.value(t).dtype));
    std::vector<std::unique_ptr<CpuLibraryKernel>> v;
    v.push_back(std::make_unique<ZerosKernel>(bytes));
    v.push_back(std::make_unique<ThrowingKernel>());
    return v;
  };
  const ProfileSummary s = profile_model(g, db, o);
  int zeros_failed = 0, throws_failed = 0;
  for (const ProfileFailure& f : s.failures) {
    if (f.schedule == "zeros") {
      ++zeros_failed;
      EXPECT_NE(f.error.find("wrong result"), std::string::npos) << f.error;
    } else if (f.schedule == "throws") {
      ++throws_failed;
      EXPECT_NE(f.error.find("out of luck"), std::string::npos) << f.error;
    } else {
      ADD_FAILURE() << f.schedule << ": " << f.error;
    }
  }
  EXPECT_EQ(throws_failed, s.kernels);
  EXPECT_GE(zeros_failed, s.kernels - 2);  // a kernel's true output may be all zeros
  for (uint64_t sig : signatures(g)) {
    const auto best = db.best(s.device, sig);
    ASSERT_TRUE(best.has_value());
    EXPECT_NE(best->schedule, "throws");
    for (const ProfileRecord& r : db.records(s.device, sig)) {
      EXPECT_TRUE(r.schedule != "throws" || r.failed);
    }
  }
}

// A check (ProfileOptions::check_only): each kernel's plain oneDNN and default generated
// code run once against the interpreter; wrong ones are reported, nothing is measured or
// stored, and a kernel nothing but the interpreter computes (TopK) is not unusable.
TEST(ProfileModel, ACheckOnlyReportsWrongImplementationsAndStoresNothing) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  o.check_only = true;
  o.extra_kernels = [](const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
    std::vector<size_t> bytes;
    for (const std::string& t : kernel_writes(graph, dag, c))
      bytes.push_back(numel(graph.value(t).shape) * dtype_size(graph.value(t).dtype));
    std::vector<std::unique_ptr<CpuLibraryKernel>> v;
    v.push_back(std::make_unique<ThrowingKernel>());
    return v;
  };
  const ProfileSummary s = profile_model(g, db, o);
  EXPECT_EQ(s.checked, static_cast<int64_t>(signatures(g).size()));
  EXPECT_EQ(s.measured, 0);
  EXPECT_EQ(s.implementations, 0);
  EXPECT_EQ(static_cast<int64_t>(s.failures.size()), s.checked);  // each kernel's plug-in
  for (const ProfileFailure& f : s.failures) {
    EXPECT_EQ(f.schedule, "throws");
    EXPECT_NE(f.error.find("out of luck"), std::string::npos) << f.error;
  }
  EXPECT_TRUE(s.unusable.empty());
  EXPECT_EQ(db.count(), 0);
}

// Writes y = mean(x - mean(x)) over rows of x [8, 64] (zero but for rounding) in float,
// summing from the row's end, or that plus 1e-3 ("off"): another rounding of the same
// value, and a wrong one.
class CentredMeanKernel : public CpuLibraryKernel {
 public:
  CentredMeanKernel(size_t x, bool off) : x_(x), off_(off) {}
  void run(const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[x_]);
    float* y = static_cast<float*>(out[0]);
    for (int r = 0; r < 8; ++r) {
      float mean = 0, sum = 0;
      for (int i = 63; i >= 0; --i) mean += x[r * 64 + i];
      mean /= 64;
      for (int i = 63; i >= 0; --i) sum += x[r * 64 + i] - mean;
      y[r] = sum / 64 + (off_ ? 1e-3f : 0);
    }
  }
  std::string schedule() const override { return off_ ? "off" : "rounded"; }

 private:
  size_t x_;
  bool off_;
};

// An output that cancels to about zero is judged by the rounding noise the interpreter
// shows under perturbed inputs, not by its relative error (about 1 for any other rounding
// of it): another rounding passes, a value 1e-3 off still fails.
TEST(ProfileModel, AnOutputThatCancelsToZeroIsJudgedByItsRoundingNoise) {
  kora_test::TempDir dir;
  kora_test::ModelBuilder m;
  m.input("x", {8, 64}).output("y");
  const auto axes = kora_test::attr_is("axes", {1});
  m.node("ReduceMean", {"x"}, {"m"}, {axes});
  m.node("Sub", {"x", "m"}, {"c"});
  m.node("ReduceMean", {"c"}, {"y"}, {axes});
  const PrimGraph g = fission(kora_test::import_model(m));
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  uint64_t whole = 0;  // the kernel of every member
  o.extra_kernels = [&](const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
    std::vector<std::unique_ptr<CpuLibraryKernel>> v;
    const std::vector<std::string> reads = kernel_reads(graph, dag, c);
    const auto x = std::find(reads.begin(), reads.end(), "x");
    if (kernel_writes(graph, dag, c) != std::vector<std::string>{"y"} || x == reads.end() ||
        c.members.size() != static_cast<size_t>(dag.size()))
      return v;
    whole = c.signature;
    for (bool off : {false, true})
      v.push_back(std::make_unique<CentredMeanKernel>(x - reads.begin(), off));
    return v;
  };
  const ProfileSummary s = profile_model(g, db, o);
  ASSERT_NE(whole, 0u);
  std::map<std::string, ProfileRecord> by_schedule;
  for (const ProfileRecord& r : db.records(s.device, whole)) by_schedule[r.schedule] = r;
  ASSERT_TRUE(by_schedule.count("rounded") && by_schedule.count("off"));
  EXPECT_FALSE(by_schedule.at("rounded").failed) << by_schedule.at("rounded").error;
  EXPECT_TRUE(by_schedule.at("off").failed);
  EXPECT_NE(by_schedule.at("off").error.find("wrong result"), std::string::npos);
}

TEST(ProfileModel, KernelsThatFailToCompileFallBackToTheInterpreter) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  ProfileDb db(dir.file("p.db"));
  ProfileOptions o = quick(dir);
  // A "compiler" that reports a version and rejects every source.
  const std::string cc = dir.file("badcc");
  kora_test::write_file(cc,
                        "#!/bin/sh\ncase \"$*\" in *dumpversion*) echo 1.0;; *) echo "
                        "\"x.cc:1: error: refused\" >&2; exit 1;; esac\n");
  std::filesystem::permissions(cc, std::filesystem::perms::owner_all);
  o.compile.compiler = cc;
  const ProfileSummary s = profile_model(g, db, o);
  ASSERT_FALSE(s.failures.empty());
  for (const ProfileFailure& f : s.failures) {
    EXPECT_EQ(f.schedule.rfind("gen:", 0), 0u) << f.schedule;
    EXPECT_NE(f.error.find("error: refused"), std::string::npos) << f.error;
  }
  for (uint64_t sig : signatures(g)) {
    const auto best = db.best(s.device, sig);
    ASSERT_TRUE(best.has_value());
    EXPECT_TRUE(best->schedule == "interpreter" || best->schedule.rfind("onednn", 0) == 0)
        << best->schedule;
  }
}

}  // namespace
