// write_cpu_artifact() (src/cpu/artifact.h) and the runtime Session
// (include/kora/runtime.h) end to end on small models: every strategy's artifact computes
// what the reference interpreter computes; generated, oneDNN and interpreter kernels all
// run from the manifest; intermediates share the arena; a corrupt manifest or weights
// file, a missing library, wrong inputs and a bad output directory are clear errors that
// leave nothing half written. Kernels compile at -O1 into one cache for the suite.
#include "cpu/artifact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cpu/backend.h"
#include "cpu/library.h"
#include "frontend/model_builder.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/interpreter.h"
#include "kora/kora_c.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "kora/runtime.h"

namespace {

using namespace kora;
namespace fs = std::filesystem;

// conv + bias -> relu -> (+ x residual through a 1x1 conv) -> softmax, and TopK (an
// opaque primitive: int64 indices out).
PrimGraph small_model() {
  kora_test::ModelBuilder m;
  std::vector<float> w(4 * 3 * 3 * 3), b(4), w1(4 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37 % 17) - 8) / 16;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i) - 0.5f;
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>((i * 5 % 7) - 3) / 4;
  m.input("x", {1, 3, 6, 6})
      .init_f32("w", {4, 3, 3, 3}, w)
      .init_f32("b", {4}, b)
      .init_f32("w1", {4, 3, 1, 1}, w1);
  m.node("Conv", {"x", "w", "b"}, {"c"}, {kora_test::attr_is("pads", {1, 1, 1, 1})}, "conv");
  m.node("Relu", {"c"}, {"r"}, {}, "relu");
  m.node("Conv", {"x", "w1"}, {"s"}, {}, "shortcut");
  m.node("Add", {"r", "s"}, {"a"}, {}, "residual");
  m.node("Softmax", {"a"}, {"p"}, {kora_test::attr_i("axis", 1)}, "softmax");
  m.init_i64("k", {1}, {3}).output("p").output("top").output("idx", onnx::TensorProto::INT64);
  m.node("TopK", {"a", "k"}, {"top", "idx"}, {kora_test::attr_i("axis", 3)}, "topk");
  return fission(kora_test::import_model(m));
}

// x -> 8 x (relu, negate) in a chain: many intermediates, two alive at a time.
PrimGraph chain_model() {
  kora_test::ModelBuilder m;
  m.input("x", {64, 64});
  std::string t = "x";
  for (int i = 0; i < 8; ++i) {
    m.node(i % 2 ? "Neg" : "Relu", {t}, {"t" + std::to_string(i)}, {}, "n" + std::to_string(i));
    t = "t" + std::to_string(i);
  }
  m.output(t);
  return fission(kora_test::import_model(m));
}

// a = relu(x); b = -a; c = exp(a); d = b + c: a plan may compute `a` in two kernels,
// {a, b} and {a, c}, each writing it.
PrimGraph diamond_model() {
  kora_test::ModelBuilder m;
  m.input("x", {16, 16});
  m.node("Relu", {"x"}, {"a"}, {}, "relu");
  m.node("Neg", {"a"}, {"b"}, {}, "neg");
  m.node("Exp", {"a"}, {"c"}, {}, "exp");
  m.node("Add", {"b", "c"}, {"d"}, {}, "add");
  m.output("d");
  return fission(kora_test::import_model(m));
}

ArtifactOptions quick_options() {
  static kora_test::TempDir cache;
  ArtifactOptions o;
  o.threads = 1;
  o.device = cpu_backend_fingerprint(1);
  o.compile.cache_dir = cache.file("kernels");
  o.compile.flags = default_compile_flags(o.compile.compiler);
  for (std::string& f : o.compile.flags)
    if (f.rfind("-O", 0) == 0) f = "-O1";
  return o;
}

OrchestrationResult plan_of(const PrimGraph& g, const std::string& strategy) {
  RooflineCost costs(device_params("cpu"));
  OrchestrationOptions o;
  o.strategy = strategy;
  return orchestrate(g, costs, o);
}

std::map<std::string, Tensor> random_inputs(const PrimGraph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> feeds;
  for (const std::string& name : g.inputs)
    feeds[name] = random_tensor(g.value(name).dtype, g.value(name).shape, rng);
  return feeds;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& name) {
  ASSERT_EQ(got.shape(), want.shape()) << name;
  ASSERT_EQ(got.dtype(), want.dtype()) << name;
  if (!is_floating(want.dtype())) {
    EXPECT_EQ(got.to_int64(), want.to_int64()) << name;
    return;
  }
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff += std::pow(got.double_at(i) - want.double_at(i), 2);
    norm += std::pow(want.double_at(i), 2);
  }
  EXPECT_LT(std::sqrt(diff / std::max(norm, 1e-30)), 1e-5) << name;
}

// The artifact's outputs equal the interpreter's on two different random inputs (the
// second run reuses the session: inputs rebound, arena reused).
void expect_matches_interpreter(const PrimGraph& g, const std::string& dir) {
  Session session(dir);
  for (uint64_t seed : {1, 2}) {
    const auto feeds = random_inputs(g, seed);
    const auto want = interpret(g, feeds);
    const auto got = session.run(feeds);
    for (const std::string& out : g.outputs) expect_close(got.at(out), want.at(out), out);
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Runs `f`, which must throw kora::Error mentioning `words`.
template <typename F>
void expect_error(F&& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << words << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Artifact, EveryStrategyMatchesTheInterpreter) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  for (const std::string strategy : {"optimal", "greedy", "unfused"}) {
    SCOPED_TRACE(strategy);
    const OrchestrationResult plan = plan_of(g, strategy);
    const std::string out = dir.file(strategy);
    const ArtifactSummary s = write_cpu_artifact(g, plan, nullptr, out, quick_options());
    EXPECT_EQ(s.kernels, static_cast<int64_t>(plan.kernels.size()));
    EXPECT_GE(s.interpreter, 1);  // TopK
    EXPECT_GE(s.generated, 1);
    EXPECT_LE(s.arena_bytes, s.intermediate_bytes);
    expect_matches_interpreter(g, out);
    Session session(out);
    EXPECT_EQ(session.strategy(), strategy);
    EXPECT_EQ(session.kernels(), s.kernels);
    EXPECT_NEAR(session.predicted_ms(), plan.total_cost_ms, 1e-9);
  }
  // The unfused plan has more kernels than the fused ones.
  EXPECT_GT(Session(dir.file("unfused")).kernels(), Session(dir.file("optimal")).kernels());
}

TEST(Artifact, LibraryKernelsFromTheDatabaseRunFromTheManifest) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const OrchestrationResult plan = plan_of(g, "unfused");
  // The database says oneDNN is fastest where it applies, else the interpreter: no
  // generated code at all.
  ProfileDb db(dir.file("p.db"));
  const ArtifactOptions options = quick_options();
  const KernelDag dag = kernel_dag_of(g);
  int onednn = 0;
  for (const ChosenKernel& k : plan.kernels) {
    const Candidate c = make_candidate(dag, k.prims);
    ProfileRecord r;
    r.device = options.device;
    r.signature = k.signature;
    r.schedule = onednn_supports(g, dag, c) ? "onednn" : "interpreter";
    onednn += r.schedule == "onednn";
    r.median_ms = 0.01;
    r.samples = 3;
    db.put(r);
  }
  ASSERT_GE(onednn, 2);  // both convolutions
  const ArtifactSummary s = write_cpu_artifact(g, plan, &db, dir.file("lib"), options);
  EXPECT_EQ(s.generated, 0);
  EXPECT_EQ(s.onednn, onednn);
  EXPECT_EQ(s.libraries, 0);
  expect_matches_interpreter(g, dir.file("lib"));
}

TEST(Artifact, IntermediatesShareTheArena) {
  kora_test::TempDir dir;
  const PrimGraph g = chain_model();
  const ArtifactSummary s =
      write_cpu_artifact(g, plan_of(g, "unfused"), nullptr, dir.file("a"), quick_options());
  const int64_t one = 64 * 64 * 4;
  EXPECT_EQ(s.intermediate_bytes, 7 * one);  // 8 kernels, the last writes the output
  EXPECT_EQ(s.arena_bytes, 2 * one);
  expect_matches_interpreter(g, dir.file("a"));
}

TEST(Artifact, RecomputedPrimitivesAreWrittenByEachKernel) {
  kora_test::TempDir dir;
  const PrimGraph g = diamond_model();
  ASSERT_EQ(g.prims.size(), 4u);
  OrchestrationResult plan;
  plan.strategy = "optimal";
  for (std::vector<int> members : {std::vector<int>{0, 1}, {0, 2}, {3}}) {
    ChosenKernel k;
    k.prims = members;
    plan.kernels.push_back(k);
  }
  write_cpu_artifact(g, plan, nullptr, dir.file("a"), quick_options());
  expect_matches_interpreter(g, dir.file("a"));
}

TEST(Artifact, BadArtifactsAreClearErrors) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const std::string good = dir.file("good");
  write_cpu_artifact(g, plan_of(g, "optimal"), nullptr, good, quick_options());
  const std::string manifest = read_file(fs::path(good) / "manifest.json");
  const std::string weights = read_file(fs::path(good) / "weights.bin");
  auto fresh = [&](const std::string& name) {
    const fs::path p = dir.file(name);
    fs::copy(good, p, fs::copy_options::recursive);
    return p;
  };
  expect_error([&] { Session s(dir.file("nowhere")); }, "not a directory");
  {
    const fs::path p = fresh("truncated_manifest");
    write_file(p / "manifest.json", manifest.substr(0, manifest.size() / 2));
    expect_error([&] { Session s(p.string()); }, "not valid JSON");
  }
  {
    const fs::path p = fresh("version");
    std::string m = manifest;
    m.replace(m.rfind("\"version\": 3"), 12, "\"version\": 7");  // the last: top level
    write_file(p / "manifest.json", m);
    expect_error([&] { Session s(p.string()); }, "format version 7");
  }
  {
    const fs::path p = fresh("field");
    std::string m = manifest;
    m.replace(m.find("\"reads\""), 7, "\"rEads\"");
    write_file(p / "manifest.json", m);
    expect_error([&] { Session s(p.string()); }, "has no field 'reads'");
  }
  {
    const fs::path p = fresh("short_weights");
    write_file(p / "weights.bin", weights.substr(0, weights.size() - 64));
    expect_error([&] { Session s(p.string()); }, "truncated");
  }
  {
    const fs::path p = fresh("flipped_weights");
    std::string w = weights;
    w[w.size() / 2] ^= 0x10;
    write_file(p / "weights.bin", w);
    expect_error([&] { Session s(p.string()); }, "corrupt");
  }
  {
    const fs::path p = fresh("no_library");
    fs::remove(p / "kernels_0.so");
    expect_error([&] { Session s(p.string()); }, "kernels_0.so");
  }
  // Wrong inputs.
  Session s(good);
  expect_error([&] { s.run(); }, "input 'x' is not bound");
  expect_error([&] { s.set_input("y", Tensor(DType::kFloat32, {1, 3, 6, 6})); }, "no input 'y'");
  expect_error(
      [&] {
        s.set_input("x", Tensor(DType::kFloat32, {1, 3, 6, 5}));
      },
      "must be float32 [1, 3, 6, 6], got float32 [1, 3, 6, 5]");
  expect_error([&] { s.set_input("x", Tensor(DType::kInt64, {1, 3, 6, 6})); }, "got int64");
  expect_error([&] { s.output("nothing"); }, "no output 'nothing'");
}

TEST(Artifact, NothingHalfWritten) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const OrchestrationResult plan = plan_of(g, "greedy");
  // A directory that holds something else is refused and left alone.
  fs::create_directories(dir.file("taken"));
  write_file(dir.file("taken") + "/notes.txt", "mine");
  expect_error([&] { write_cpu_artifact(g, plan, nullptr, dir.file("taken"), quick_options()); },
               "exists and is not a kora artifact");
  EXPECT_EQ(read_file(dir.file("taken") + "/notes.txt"), "mine");
  // A plan that fails after the kernels compiled (a kernel dropped: its value is read
  // before anything writes it) leaves no directory and no temporary one.
  OrchestrationResult broken = plan;
  broken.kernels.erase(broken.kernels.begin());
  expect_error([&] { write_cpu_artifact(g, broken, nullptr, dir.file("failed"), quick_options()); },
               "before any kernel writes it");
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_TRUE(e.path().filename() == "taken") << e.path();
  // Kernels that do not compile (a compiler that rejects everything) fall back to library
  // kernels; the artifact still computes the right values.
  ArtifactOptions no_compiler = quick_options();
  no_compiler.compile.compiler = "false";
  const ArtifactSummary s = write_cpu_artifact(g, plan, nullptr, dir.file("fallback"), no_compiler);
  EXPECT_EQ(s.generated, 0);
  EXPECT_EQ(s.libraries, 0);
  expect_matches_interpreter(g, dir.file("fallback"));
  // An earlier artifact is replaced.
  write_cpu_artifact(g, plan_of(g, "unfused"), nullptr, dir.file("art"), quick_options());
  write_cpu_artifact(g, plan, nullptr, dir.file("art"), quick_options());
  EXPECT_EQ(Session(dir.file("art")).strategy(), "greedy");
  expect_matches_interpreter(g, dir.file("art"));
}

TEST(Artifact, CApi) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  write_cpu_artifact(g, plan_of(g, "optimal"), nullptr, dir.file("a"), quick_options());
  EXPECT_EQ(kora_session_open(dir.file("missing").c_str(), 0), nullptr);
  EXPECT_NE(std::string(kora_last_error()).find("not a directory"), std::string::npos);
  kora_session* s = kora_session_open(dir.file("a").c_str(), 1);
  ASSERT_NE(s, nullptr) << kora_last_error();
  ASSERT_EQ(kora_session_input_count(s), 1);
  EXPECT_STREQ(kora_session_input_name(s, 0), "x");
  EXPECT_STREQ(kora_session_input_dtype(s, 0), "float32");
  ASSERT_EQ(kora_session_input_rank(s, 0), 4);
  int64_t dims[4];
  ASSERT_EQ(kora_session_input_shape(s, 0, dims), 0);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 4), (std::vector<int64_t>{1, 3, 6, 6}));
  EXPECT_EQ(kora_session_input_name(s, 1), nullptr);
  EXPECT_EQ(kora_session_output_count(s), 3);

  const auto feeds = random_inputs(g, 3);
  const Tensor& x = feeds.at("x");
  EXPECT_EQ(kora_session_run(s), -1);  // not bound
  EXPECT_EQ(kora_session_set_input(s, "x", x.bytes(), x.nbytes() - 4), -1);
  EXPECT_NE(std::string(kora_last_error()).find("takes 432 bytes"), std::string::npos);
  ASSERT_EQ(kora_session_set_input(s, "x", x.bytes(), x.nbytes()), 0) << kora_last_error();
  ASSERT_EQ(kora_session_run(s), 0) << kora_last_error();
  const auto want = interpret(g, feeds);
  for (int i = 0; i < kora_session_output_count(s); ++i) {
    const char* name = kora_session_output_name(s, i);
    const void* data = nullptr;
    size_t bytes = 0;
    ASSERT_EQ(kora_session_output(s, name, &data, &bytes), 0);
    const Tensor& w = want.at(name);
    ASSERT_EQ(bytes, w.nbytes());
    expect_close(Tensor(w.dtype(), w.shape(), data, bytes), w, name);
  }
  EXPECT_EQ(kora_session_output(s, "nothing", nullptr, nullptr), -1);
  kora_session_close(s);
}

}  // namespace
