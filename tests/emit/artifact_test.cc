// write_cpu_artifact() (src/cpu/artifact.h) end to end on small models
// (tests/emit/small_artifacts.h): every strategy's artifact computes what the reference
// interpreter computes, run by a Session; generated, oneDNN and interpreter kernels all
// run from the manifest; intermediates share the arena; recomputed primitives are written
// by each kernel computing them; a bad output directory or plan is a clear error that
// leaves nothing half written, and kernels that do not compile fall back to library
// kernels. Kernels compile at -O1 into one cache for the suite. How a Session loads an
// artifact and takes its inputs: tests/runtime/session_test.cc.
#include "cpu/artifact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "cpu/layout_view.h"
#include "cpu/library.h"
#include "emit/small_artifacts.h"
#include "frontend/model_builder.h"
#include "kora/check.h"
#include "kora/fission.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "kora/runtime.h"
#include "runtime/manifest.h"

namespace {

using namespace kora;
namespace fs = std::filesystem;
using kora_test::expect_error;
using kora_test::expect_matches_interpreter;
using kora_test::plan_of;
using kora_test::quick_options;
using kora_test::read_bytes;
using kora_test::small_model;
using kora_test::write_bytes;

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

// A kernel the solver chose on plain tensors runs the schedule the cost model priced: its
// cheapest plain one (a native record times the kernel in layouts it does not have), each
// schedule at its in-plan time where it has one.
TEST(Artifact, PlainKernelsRunTheirCheapestPlainScheduleInPlanOrAlone) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  OrchestrationResult plan = plan_of(g, "unfused");
  plan.layouts_decided = true;  // nothing stored blocked: every kernel plain
  ProfileDb db(dir.file("p.db"));
  const ArtifactOptions options = quick_options();
  const KernelDag dag = kernel_dag_of(g);
  auto record = [&](uint64_t signature, const std::string& schedule, double ms) {
    ProfileRecord r;
    r.device = options.device, r.signature = signature, r.schedule = schedule;
    r.median_ms = ms, r.samples = 3;
    db.put(r);
  };
  std::vector<uint64_t> convs;
  for (const ChosenKernel& k : plan.kernels)
    if (onednn_supports(g, dag, make_candidate(dag, k.prims))) {
      convs.push_back(k.signature);
      record(k.signature, kOnednnNative, 0.01);
      record(k.signature, kOnednnBlocked, 0.03);
      record(k.signature, "onednn", 0.02);
    }
  ASSERT_GE(convs.size(), 2u);
  // The first convolution's plain oneDNN kernel ran slower inside a plan than its native
  // primitive with reorders alone.
  db.put_in_plan(options.device, {{convs[0], {{"onednn", 0.05}}}}, 1);
  write_cpu_artifact(g, plan, &db, dir.file("lib"), options);
  const Manifest m = read_artifact_manifest(dir.file("lib"));
  std::map<uint64_t, std::string> schedule;
  for (const ManifestKernel& k : m.kernels)
    schedule[std::strtoull(k.signature.c_str(), nullptr, 16)] = k.schedule;
  EXPECT_EQ(schedule.at(convs[0]), kOnednnBlocked);
  EXPECT_EQ(schedule.at(convs[1]), "onednn");
  expect_matches_interpreter(g, dir.file("lib"));
}

// Small weights in [-1/4, 1/4], a different pattern per salt.
std::vector<float> weights(size_t n, int salt) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; ++i)
    w[i] = static_cast<float>(static_cast<int>((i + salt) * 37 % 17) - 8) / 32;
  return w;
}

// A 1x1 convolution, a grouped 3x3 one of 8 channels a group (oneDNN picks channel
// blocks aBcd8b for it, channels last for the others), a squeeze-excitation
// (GlobalAveragePool, sigmoid, Mul) and a 1x1 convolution: x [1, 16, 10, 10] -> y.
PrimGraph excitation_model() {
  kora_test::ModelBuilder m;
  m.input("x", {1, 16, 10, 10})
      .init_f32("w1", {32, 16, 1, 1}, weights(32 * 16, 1))
      .init_f32("w2", {32, 8, 3, 3}, weights(32 * 8 * 9, 2))
      .init_f32("b2", {32}, weights(32, 3))
      .init_f32("w3", {16, 32, 1, 1}, weights(16 * 32, 4));
  m.node("Conv", {"x", "w1"}, {"c1"}, {}, "conv1");
  m.node("Relu", {"c1"}, {"r1"}, {}, "relu1");
  m.node("Conv", {"r1", "w2", "b2"}, {"c2"},
         {kora_test::attr_is("pads", {1, 1, 1, 1}), kora_test::attr_i("group", 4)}, "grouped");
  m.node("GlobalAveragePool", {"c2"}, {"g"}, {}, "pool");
  m.node("Sigmoid", {"g"}, {"s"}, {}, "gate");
  m.node("Mul", {"c2", "s"}, {"e"}, {}, "excite");
  m.node("Conv", {"e", "w3"}, {"y"}, {}, "conv3");
  m.output("y");
  return fission(kora_test::import_model(m));
}

// Layouts as the solver would decide them (layouts_decided): every oneDNN kernel native,
// every tensor it or a generated kernel on views can take stored channels last (the model's
// input x and output y stay plain).
void store_channels_last(const PrimGraph& g, OrchestrationResult& plan) {
  const KernelDag dag = kernel_dag_of(g);
  plan.layouts_decided = true;
  for (ChosenKernel& k : plan.kernels) {
    const Candidate c = make_candidate(dag, k.prims);
    std::vector<std::string> sides = layout_view_sides(g, dag, c);
    for (const auto& [t, layout] : onednn_native_layouts(g, dag, c)) {
      sides.push_back(t);
      k.native = true;
    }
    for (const std::string& t : sides)
      if (t != "x" && t != "y") plan.layouts[t] = "acdb";
  }
}

TEST(Artifact, GeneratedKernelsOnLayoutViewsShareChannelsLastTensorsWithConvolutions) {
  kora_test::TempDir dir;
  const PrimGraph g = excitation_model();
  const KernelDag dag = kernel_dag_of(g);
  // The unfused plan with every tensor a convolution or a kernel on views could take
  // stored channels last, as the solver would decide it (layouts_decided).
  OrchestrationResult plan = plan_of(g, "unfused");
  store_channels_last(g, plan);
  int grouped_blocked = 0;
  for (const ChosenKernel& k : plan.kernels)
    for (const auto& [t, layout] : onednn_native_layouts(g, dag, make_candidate(dag, k.prims)))
      grouped_blocked += layout == "aBcd8b";
  ASSERT_GT(grouped_blocked, 0) << "oneDNN picked channels last for the grouped convolution";
  ASSERT_GE(plan.layouts.size(), 4u);
  const std::string out = dir.file("views");
  write_cpu_artifact(g, plan, nullptr, out, quick_options());
  expect_matches_interpreter(g, out);
  // Every decided tensor is stored channels last; the pool and the excitation are
  // generated kernels on views (their SYMBOL_io names the layouts), the grouped
  // convolution runs its channels-last alternative.
  const Manifest m = read_artifact_manifest(out);
  int laid_out = 0;
  for (const auto& [name, t] : m.tensors) laid_out += t.layout == "acdb";
  EXPECT_EQ(laid_out, static_cast<int>(plan.layouts.size()));
  int views = 0;
  std::string viewed;  // a tensor a kernel on views writes
  for (const ManifestKernel& k : m.kernels) {
    std::set<std::string> layouts;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list)
        if (m.tensors.at(t).storage != Storage::kConstant) layouts.insert(m.tensors.at(t).layout);
    if (k.impl != "generated" || layouts.size() < 2) continue;
    ++views;
    for (const std::string& t : k.writes)
      if (m.tensors.at(t).layout == "acdb") viewed = t;
  }
  EXPECT_GE(views, 2);  // the pool (acdb -> [1, 32, 1, 1]) and the Mul
  ASSERT_FALSE(viewed.empty());
  // Given that tensor in another layout than it was generated for, it refuses to run.
  std::string text = kora_test::read_bytes(out + "/manifest.json");
  const std::string stored = "\"layout\": \"acdb\",\n   \"name\": \"" + viewed + "\"";
  const size_t at = text.find(stored);
  ASSERT_NE(at, std::string::npos) << stored;
  text.replace(at, stored.size(), "\"layout\": \"aBcd8b\",\n   \"name\": \"" + viewed + "\"");
  kora_test::write_bytes(out + "/manifest.json", text);
  expect_error([&] { Session session(out); }, "its arguments are");
}

// --bf16: the convolutions' native layouts hold bfloat16, and the generated kernels
// between them (the ReLU, the squeeze-excitation's pool and Mul) read and write those
// tensors through views, so that activations stay bfloat16 from the first convolution
// to the last; likewise with every tensor channels last, the grouped convolution on its
// bf16 channels-last alternative. Each artifact computes what the interpreter does within
// bf16's tolerance.
TEST(Artifact, GeneratedKernelsOnLayoutViewsReadAndWriteBfloat16BetweenConvolutions) {
  kora_test::TempDir dir;
  const PrimGraph g = excitation_model();
  const KernelDag dag = kernel_dag_of(g);
  OrchestrationResult plan = plan_of(g, "unfused");
  plan.layouts_decided = true;
  // Each tensor in the bf16 layout its convolution writes or reads it in; the generated
  // kernels beside them (the agnostic ReLU too) take those through views.
  std::map<std::string, std::string> native;
  for (ChosenKernel& k : plan.kernels)
    for (const auto& [t, layout] :
         onednn_native_layouts(g, dag, make_candidate(dag, k.prims), true)) {
      native[t] = layout;
      k.native = true;
    }
  if (native.empty()) GTEST_SKIP() << "this CPU's oneDNN offers no native bf16 convolution";
  for (const auto& [t, layout] : native)
    if (t != "x" && t != "y") plan.layouts[t] = layout;
  ArtifactOptions options = quick_options();
  options.bf16 = true;
  options.device = cpu_backend_fingerprint(1, options.compile.compiler, true);
  const std::string out = dir.file("bf16_views");
  write_cpu_artifact(g, plan, nullptr, out, options);
  expect_matches_interpreter(g, out, kBf16Tolerance);
  const Manifest m = read_artifact_manifest(out);
  int generated_on_bf16 = 0;
  for (const ManifestKernel& k : m.kernels) {
    bool bf16 = false;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list) bf16 = bf16 || has_bf16_suffix(m.tensors.at(t).layout);
    generated_on_bf16 += bf16 && k.impl == "generated";
    EXPECT_NE(k.impl, "interpreter");
  }
  EXPECT_GE(generated_on_bf16, 3);  // the ReLU, the pool and the Mul
  // Every tensor channels last in bfloat16: the grouped convolution (oneDNN picks channel
  // blocks for it) runs its bf16 channels-last alternative.
  int alternatives = 0;
  for (ChosenKernel& k : plan.kernels) {
    const TensorLayouts cl =
        onednn_channels_last_layouts(g, dag, make_candidate(dag, k.prims), true);
    alternatives += !cl.empty();
    for (const auto& [t, layout] : cl) EXPECT_EQ(layout, "acdb+bf16") << t;
  }
  EXPECT_GE(alternatives, 1);
  for (auto& [t, layout] : plan.layouts) layout = "acdb+bf16";
  const std::string cl_out = dir.file("bf16_channels_last");
  write_cpu_artifact(g, plan, nullptr, cl_out, options);
  expect_matches_interpreter(g, cl_out, kBf16Tolerance);
  const Manifest cl_manifest = read_artifact_manifest(cl_out);
  int stored = 0;
  for (const auto& [name, t] : cl_manifest.tensors) stored += t.layout == "acdb+bf16";
  EXPECT_EQ(stored, static_cast<int>(plan.layouts.size()));
}

// A transformer block's matmuls: x [1, 12, 32] -> LayerNorm -> MLP (GELU) + x -> y1, then
// attention scores of y1 (q k^T, softmax) times v -> a.
PrimGraph transformer_model() {
  kora_test::ModelBuilder m;
  m.input("x", {1, 12, 32})
      .init_f32("gamma", {32}, weights(32, 1))
      .init_f32("beta", {32}, weights(32, 2))
      .init_f32("w1", {32, 64}, weights(32 * 64, 3))
      .init_f32("b1", {64}, weights(64, 4))
      .init_f32("w2", {64, 32}, weights(64 * 32, 5))
      .init_f32("wq", {32, 32}, weights(32 * 32, 6))
      .init_f32("wk", {32, 32}, weights(32 * 32, 7))
      .init_f32("wv", {32, 32}, weights(32 * 32, 8));
  m.node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"}, {kora_test::attr_i("axis", -1)},
         "ln");
  m.node("MatMul", {"ln", "w1"}, {"h"}, {}, "fc1");
  m.node("Add", {"h", "b1"}, {"hb"}, {}, "bias1");
  m.node("Gelu", {"hb"}, {"g"}, {}, "gelu");
  m.node("MatMul", {"g", "w2"}, {"o"}, {}, "fc2");
  m.node("Add", {"o", "x"}, {"y1"}, {}, "residual");
  m.node("MatMul", {"y1", "wq"}, {"q"}, {}, "q");
  m.node("MatMul", {"y1", "wk"}, {"k"}, {}, "k");
  m.node("MatMul", {"y1", "wv"}, {"v"}, {}, "v");
  m.node("Transpose", {"k"}, {"kt"}, {kora_test::attr_is("perm", {0, 2, 1})}, "kt");
  m.node("MatMul", {"q", "kt"}, {"s"}, {}, "scores");
  m.node("Softmax", {"s"}, {"p"}, {kora_test::attr_i("axis", -1)}, "softmax");
  m.node("MatMul", {"p", "v"}, {"a"}, {}, "context");
  m.output("a");
  m.opset(20);
  return fission(kora_test::import_model(m));
}

// --bf16: a matmul's native layouts are its activations (source, runtime weights,
// destination) stored as bfloat16 in their own order, and the generated kernels beside it
// (the LayerNorm, the GELU, the softmax) write and read those tensors as bfloat16 on their
// own (bfloat16_sides), so that no float32 activation is reordered to bf16 for a matmul.
// Where every kernel touching a tensor takes it so, the artifact stores it so, and
// computes what the interpreter does within bf16's tolerance; greedy and unfused plans
// alike.
TEST(Artifact, MatmulsReadAndWriteBfloat16ActivationsInTheirOwnOrder) {
  kora_test::TempDir dir;
  const PrimGraph g = transformer_model();
  const KernelDag dag = kernel_dag_of(g);
  for (const std::string strategy : {"unfused", "greedy"}) {
    OrchestrationResult plan = plan_of(g, strategy);
    plan.layouts_decided = true;
    // Each tensor a native matmul names, where every kernel touching it takes it so.
    std::map<std::string, std::vector<TensorLayouts>> takers;  // tensor -> its kernels' layouts
    std::map<std::string, std::string> wanted;
    for (ChosenKernel& k : plan.kernels) {
      const Candidate c = make_candidate(dag, k.prims);
      TensorLayouts takes = onednn_native_layouts(g, dag, c, true);
      k.native = !takes.empty();
      for (const auto& [t, layout] : takes) wanted[t] = layout;
      for (const std::string& t : bfloat16_sides(g, dag, c))
        takes[t] = plain_layout(g.value(t).shape.size()) + kBf16;
      std::vector<std::string> sides = kernel_reads(g, dag, c);
      for (const std::string& t : kernel_writes(g, dag, c)) sides.push_back(t);
      for (const std::string& t : sides) takers[t].push_back(takes);
    }
    if (wanted.empty()) GTEST_SKIP() << "this CPU's oneDNN offers no bf16 matmul";
    for (const auto& [t, layout] : wanted) {
      bool all = t != "a" && t != "x";
      for (const TensorLayouts& takes : takers[t])
        all = all && takes.count(t) && takes.at(t) == layout;
      if (all) plan.layouts[t] = layout;
    }
    ArtifactOptions options = quick_options();
    options.bf16 = true;
    options.device = cpu_backend_fingerprint(1, options.compile.compiler, true);
    const std::string out = dir.file("bf16_matmuls_" + strategy);
    write_cpu_artifact(g, plan, nullptr, out, options);
    expect_matches_interpreter(g, out, kBf16Tolerance);
    const Manifest m = read_artifact_manifest(out);
    int stored = 0, generated_writes = 0, matmul_reads = 0;
    for (const auto& [name, t] : m.tensors)
      stored += is_plain_bfloat16(t.layout, g.value(name).shape.size());
    for (const ManifestKernel& k : m.kernels) {
      EXPECT_NE(k.impl, "interpreter") << strategy;
      for (const std::string& t : k.writes)
        generated_writes += k.impl == "generated" && has_bf16_suffix(m.tensors.at(t).layout);
      for (const std::string& t : k.reads)
        matmul_reads += k.impl == "onednn" && has_bf16_suffix(m.tensors.at(t).layout);
    }
    EXPECT_EQ(stored, static_cast<int>(plan.layouts.size())) << strategy;
    // The LayerNorm, the GELU and the softmax at least write bfloat16 for a matmul; the
    // matmuls read at least those and the projections q, k (or k^T) and v.
    EXPECT_GE(generated_writes, 3) << strategy;
    EXPECT_GE(matmul_reads, 5) << strategy;
  }
}

// A 1x1 convolution, a 3x3 max pool (stride 1, pad 1) and a 3x3 convolution:
// x [1, 16, 9, 9] -> y, the pool between two convolutions as in an inception block.
PrimGraph pooling_model() {
  kora_test::ModelBuilder m;
  m.input("x", {1, 16, 9, 9})
      .init_f32("w1", {32, 16, 1, 1}, weights(32 * 16, 1))
      .init_f32("w2", {32, 32, 3, 3}, weights(32 * 32 * 9, 2));
  m.node("Conv", {"x", "w1"}, {"c1"}, {}, "conv1");
  m.node("Relu", {"c1"}, {"r1"}, {}, "relu1");
  m.node("MaxPool", {"r1"}, {"p"},
         {kora_test::attr_is("kernel_shape", {3, 3}), kora_test::attr_is("pads", {1, 1, 1, 1})},
         "pool");
  m.node("Conv", {"p", "w2"}, {"y"}, {kora_test::attr_is("pads", {1, 1, 1, 1})}, "conv2");
  m.output("y");
  return fission(kora_test::import_model(m));
}

TEST(Artifact, MaxPoolsOnChannelsLastViewsBetweenConvolutions) {
  kora_test::TempDir dir;
  const PrimGraph g = pooling_model();
  const KernelDag dag = kernel_dag_of(g);
  // The unfused plan with the pool's window, max and reshape joined in one kernel, and
  // every tensor a convolution or the pool could take stored channels last, as the solver
  // would decide.
  OrchestrationResult plan = plan_of(g, "unfused");
  ChosenKernel pool;
  std::vector<ChosenKernel> kernels;
  for (const ChosenKernel& k : plan.kernels) {
    if (g.prims[k.prims.at(0)].origin != "pool") {
      kernels.push_back(k);
      continue;
    }
    pool.prims.insert(pool.prims.end(), k.prims.begin(), k.prims.end());
    pool.outputs = k.outputs;
    if (pool.prims.size() == k.prims.size()) kernels.push_back(ChosenKernel());  // its place
  }
  ASSERT_EQ(pool.prims.size(), 3u);  // window, max, reshape
  std::sort(pool.prims.begin(), pool.prims.end());
  for (ChosenKernel& k : kernels)
    if (k.prims.empty()) k = pool;
  plan.kernels = kernels;
  store_channels_last(g, plan);
  int pools = 0;
  for (const ChosenKernel& k : plan.kernels)
    pools += views_channels_last_only(g, dag, make_candidate(dag, k.prims));
  ASSERT_EQ(pools, 1);
  ASSERT_EQ(plan.layouts.size(), 3u);  // the convolution's output, its relu's, the pool's
  const std::string out = dir.file("pool");
  write_cpu_artifact(g, plan, nullptr, out, quick_options());
  expect_matches_interpreter(g, out);
  // The pool is generated code reading and writing channels last.
  const Manifest m = read_artifact_manifest(out);
  int pool_views = 0;
  for (const ManifestKernel& k : m.kernels) {
    if (k.impl != "generated" || k.primitives.size() != 3) continue;  // the pool's kernel
    bool all = true;
    for (const auto* list : {&k.reads, &k.writes})
      for (const std::string& t : *list)
        all = all &&
              (m.tensors.at(t).storage == Storage::kConstant || m.tensors.at(t).layout == "acdb");
    pool_views += all;
  }
  EXPECT_EQ(pool_views, 1);
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

TEST(Artifact, NothingHalfWritten) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const OrchestrationResult plan = plan_of(g, "greedy");
  // A directory that holds something else is refused and left alone.
  fs::create_directories(dir.file("taken"));
  write_bytes(dir.file("taken") + "/notes.txt", "mine");
  expect_error([&] { write_cpu_artifact(g, plan, nullptr, dir.file("taken"), quick_options()); },
               "exists and is not a kora artifact");
  EXPECT_EQ(read_bytes(dir.file("taken") + "/notes.txt"), "mine");
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

// Artifacts of one model written side by side (the check on the clock writes one per plan)
// share one weights file, a hard link; other bytes get their own, and each computes its
// model's values.
TEST(Artifact, PlansOfOneModelSideBySideShareTheirWeightsFile) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  write_cpu_artifact(g, plan_of(g, "greedy"), nullptr, dir.file("a"), quick_options());
  write_cpu_artifact(g, plan_of(g, "unfused"), nullptr, dir.file("b"), quick_options());
  const std::string a = dir.file("a") + "/weights.bin", b = dir.file("b") + "/weights.bin";
  ASSERT_GT(fs::file_size(a), 0u);
  EXPECT_TRUE(fs::equivalent(a, b));
  EXPECT_EQ(fs::hard_link_count(a), 2u);
  expect_matches_interpreter(g, dir.file("a"));
  expect_matches_interpreter(g, dir.file("b"));
  // Other weight values (every constant's copy changed): their own file.
  PrimGraph other = g;
  for (auto& [name, c] : other.constants) {
    Tensor changed(c.dtype(), c.shape());
    std::copy(c.bytes(), c.bytes() + c.nbytes(), changed.mutable_bytes());
    if (c.dtype() == DType::kFloat32 && c.numel() > 0)
      reinterpret_cast<float*>(changed.mutable_bytes())[0] += 1;
    c = changed;
  }
  write_cpu_artifact(other, plan_of(other, "greedy"), nullptr, dir.file("c"), quick_options());
  EXPECT_FALSE(fs::equivalent(a, dir.file("c") + "/weights.bin"));
  expect_matches_interpreter(other, dir.file("c"));
  // The files linked before are gone: written again.
  fs::remove_all(dir.file("a"));
  fs::remove_all(dir.file("b"));
  write_cpu_artifact(g, plan_of(g, "greedy"), nullptr, dir.file("d"), quick_options());
  EXPECT_EQ(fs::hard_link_count(dir.file("d") + "/weights.bin"), 1u);
  expect_matches_interpreter(g, dir.file("d"));
}

}  // namespace
