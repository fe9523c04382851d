// The cost interface (include/kora/cost.h): hand-built primitive graphs (a 64x64x64
// matmul with a relu epilogue, a cast, a two-output TopK; tests/candidates/
// hand_built_graphs.h) and a fission-built one in; checked against costs computed by
// hand, the device table, and MeasuredCostTable round trips through temporary JSON files
// (hits, counted fallbacks, missing fallback, malformed files).
#include "kora/cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "candidates/hand_built_graphs.h"
#include "cpu/library.h"
#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

using kora_test::make_prim;
using kora_test::matmul_relu_graph;
using kora_test::TempDir;
using kora_test::topk_graph;
using kora_test::unary;

constexpr double kMatMulFlops = 2.0 * 64 * 64 * 64;
constexpr double kReluFlops = 64.0 * 64;
constexpr double kTensorBytes = 64.0 * 64 * 4;

// max(flops / peak, bytes / bandwidth) + launch, in milliseconds.
double roofline_ms(const DeviceParams& d, double flops, double bytes) {
  return std::max(flops / (d.peak_gflops * 1e9), bytes / (d.bandwidth_gbps * 1e9)) * 1e3 +
         d.launch_overhead_us * 1e-3;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Runs f, expecting a kora::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no kora::Error thrown";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
  }
}

TEST(RooflineCost, DeviceTable) {
  EXPECT_EQ(known_devices(), (std::vector<std::string>{"cpu", "a100", "h100"}));
  for (const std::string& name : known_devices()) {
    const DeviceParams d = device_params(name);
    EXPECT_EQ(d.name, name);
    EXPECT_GT(d.peak_gflops, 0);
    EXPECT_GT(d.bandwidth_gbps, 0);
    EXPECT_GT(d.launch_overhead_us, 0);
  }
  const DeviceParams a100 = device_params("a100");
  EXPECT_DOUBLE_EQ(a100.peak_gflops, 19500);
  EXPECT_DOUBLE_EQ(a100.bandwidth_gbps, 1555);
  const DeviceParams h100 = device_params("h100");
  EXPECT_DOUBLE_EQ(h100.peak_gflops, 67000);
  EXPECT_DOUBLE_EQ(h100.bandwidth_gbps, 3350);
}

TEST(RooflineCost, UnknownDeviceListsTheKnownOnes) {
  expect_error([] { device_params("tpu-v9"); }, {"tpu-v9", "cpu", "a100", "h100"});
  expect_error([] { device_params(""); }, {"cpu", "a100", "h100"});
  expect_error([] { device_params("CPU"); }, {"CPU"});
}

TEST(RooflineCost, Describe) {
  EXPECT_EQ(RooflineCost(device_params("cpu")).describe(),
            "roofline (cpu: 50 GFLOP/s, 15 GB/s, 2 us launch)");
  EXPECT_EQ(RooflineCost(DeviceParams{"toy", 1.5, 0.25, 10}).describe(),
            "roofline (toy: 1.5 GFLOP/s, 0.25 GB/s, 10 us launch)");
}

TEST(RooflineCost, MatMulReluMatchesHandComputation) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate fused = make_candidate(dag, {0, 1});
  const Candidate mm = make_candidate(dag, {0});
  const Candidate relu = make_candidate(dag, {1});

  // cpu: the fused kernel is compute bound (528384 FLOPs at 50 GFLOP/s = 10.57 us against
  // 49152 bytes at 15 GB/s = 3.28 us), plus 2 us launch.
  const DeviceParams cpu = device_params("cpu");
  RooflineCost cpu_cost(cpu);
  const double fused_cpu = cpu_cost.cost_ms(g, dag, fused);
  EXPECT_NEAR(fused_cpu, (kMatMulFlops + kReluFlops) / 50e9 * 1e3 + 2e-3, 1e-12);
  EXPECT_NEAR(fused_cpu, roofline_ms(cpu, kMatMulFlops + kReluFlops, 3 * kTensorBytes), 1e-12);
  EXPECT_NEAR(cpu_cost.cost_ms(g, dag, mm), roofline_ms(cpu, kMatMulFlops, 3 * kTensorBytes),
              1e-12);
  // relu alone is memory bound: 2 x 16 KiB at 15 GB/s.
  const double relu_cpu = cpu_cost.cost_ms(g, dag, relu);
  EXPECT_NEAR(relu_cpu, 2 * kTensorBytes / 15e9 * 1e3 + 2e-3, 1e-12);

  // h100: the fused kernel is memory bound (49152 bytes at 3350 GB/s = 14.7 ns against
  // 7.9 ns of compute), plus 4 us launch.
  RooflineCost h100_cost(device_params("h100"));
  EXPECT_NEAR(h100_cost.cost_ms(g, dag, fused), 3 * kTensorBytes / 3350e9 * 1e3 + 4e-3, 1e-12);
}

TEST(RooflineCost, FusedKernelIsCheaperThanItsSingletons) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate fused = make_candidate(dag, {0, 1});
  const Candidate mm = make_candidate(dag, {0});
  const Candidate relu = make_candidate(dag, {1});
  for (const std::string& name : known_devices()) {
    RooflineCost cost(device_params(name));
    const double apart = cost.cost_ms(g, dag, mm) + cost.cost_ms(g, dag, relu);
    EXPECT_LT(cost.cost_ms(g, dag, fused), apart) << name;
  }
}

TEST(RooflineCost, BytesFollowTheDtypes) {
  // A cast float32 -> float16 of 1M elements: 4 MB read, 2 MB written, 1M FLOPs.
  PrimGraph g;
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.values["x"] = {DType::kFloat32, {1024, 1024}};
  g.values["y"] = {DType::kFloat16, {1024, 1024}};
  g.prims.push_back(make_prim("cast", unary(ScalarOp::kCast), {"x"}, {"y"}));
  const KernelDag dag = kernel_dag_of(g);
  const DeviceParams cpu = device_params("cpu");
  const double n = 1024.0 * 1024;
  EXPECT_NEAR(RooflineCost(cpu).cost_ms(g, dag, make_candidate(dag, {0})),
              roofline_ms(cpu, n, 6 * n), 1e-12);
}

TEST(RooflineCost, OpaqueKernelIsChargedItsBytes) {
  // TopK: no FLOPs counted; reads x (160 B) and k (8 B), writes values (48 B) and
  // indices (96 B).
  const PrimGraph g = topk_graph();
  const KernelDag dag = kernel_dag_of(g);
  const DeviceParams a100 = device_params("a100");
  EXPECT_NEAR(RooflineCost(a100).cost_ms(g, dag, make_candidate(dag, {0})),
              roofline_ms(a100, 0, 160 + 8 + 48 + 96), 1e-12);
}

TEST(MeasuredCostTable, SignatureHex) {
  EXPECT_EQ(signature_hex(0), "0000000000000000");
  EXPECT_EQ(signature_hex(0x1f), "000000000000001f");
  EXPECT_EQ(signature_hex(0xfedcba9876543210ull), "fedcba9876543210");
  EXPECT_EQ(signature_hex(~0ull), "ffffffffffffffff");
}

TEST(MeasuredCostTable, HitsReturnTheTableAndMissesFallBack) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate fused = make_candidate(dag, {0, 1});
  Candidate relu = make_candidate(dag, {1});
  ASSERT_EQ(fused.signature, 0u);
  const uint64_t sig = canonical_signature(g, dag, fused);

  TempDir dir;
  const std::string path = dir.file("costs.json");
  write_text(path, "{\"device\": \"cpu\", \"kernels\": {\"" + signature_hex(sig) +
                       "\": 0.125, \"00000000000000ab\": 3}}");
  MeasuredCostTable table(path, std::make_unique<RooflineCost>(device_params("cpu")));

  // Signature computed on the fly (fused.signature == 0), then given.
  EXPECT_DOUBLE_EQ(table.cost_ms(g, dag, fused), 0.125);
  Candidate with_sig = fused;
  with_sig.signature = sig;
  EXPECT_DOUBLE_EQ(table.cost_ms(g, dag, with_sig), 0.125);
  // A given signature is trusted: this one is in the table.
  relu.signature = 0xab;
  EXPECT_DOUBLE_EQ(table.cost_ms(g, dag, relu), 3.0);
  EXPECT_EQ(table.hits(), 3);
  EXPECT_EQ(table.misses(), 0);

  // Miss: the roofline's cost, counted.
  const Candidate mm = make_candidate(dag, {0});
  EXPECT_DOUBLE_EQ(table.cost_ms(g, dag, mm),
                   RooflineCost(device_params("cpu")).cost_ms(g, dag, mm));
  EXPECT_EQ(table.hits(), 3);
  EXPECT_EQ(table.misses(), 1);

  const std::string description = table.describe();
  EXPECT_NE(description.find(path), std::string::npos) << description;
  EXPECT_NE(description.find("2 kernels"), std::string::npos) << description;
  EXPECT_NE(description.find("roofline (cpu"), std::string::npos) << description;
}

TEST(ProfileDbCost, FastestMeasuredScheduleOfTheDeviceElseFallback) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate fused = make_candidate(dag, {0, 1});
  const Candidate mm = make_candidate(dag, {0});
  const Candidate relu = make_candidate(dag, {1});
  TempDir dir;
  auto db = std::make_shared<ProfileDb>(dir.file("profiles.db"));
  auto rec = [](const std::string& device, uint64_t sig, const std::string& schedule, double ms,
                bool failed) {
    ProfileRecord r;
    r.device = device, r.signature = sig, r.schedule = schedule, r.median_ms = ms;
    r.failed = failed;
    return r;
  };
  const uint64_t fused_sig = canonical_signature(g, dag, fused);
  const uint64_t relu_sig = canonical_signature(g, dag, relu);
  db->put({rec("dev", fused_sig, "a", 0.5, false), rec("dev", fused_sig, "b", 0.25, false),
           rec("dev", fused_sig, "c", 0.01, true),
           rec("other", canonical_signature(g, dag, mm), "a", 0.001, false),
           rec("dev", relu_sig, "a", 0.001, true)});
  ProfileDbCost cost(db, "dev", std::make_unique<RooflineCost>(device_params("cpu")));
  EXPECT_DOUBLE_EQ(cost.cost_ms(g, dag, fused), 0.25);  // fastest that did not fail
  const double roof_mm = RooflineCost(device_params("cpu")).cost_ms(g, dag, mm);
  EXPECT_DOUBLE_EQ(cost.cost_ms(g, dag, mm), roof_mm);  // measured on another device only
  EXPECT_DOUBLE_EQ(cost.cost_ms(g, dag, relu),          // only a failed schedule
                   RooflineCost(device_params("cpu")).cost_ms(g, dag, relu));
  EXPECT_EQ(cost.hits(), 1);
  EXPECT_EQ(cost.misses(), 2);
  EXPECT_NE(cost.describe().find("1 measured, 2 not"), std::string::npos) << cost.describe();
  ProfileDbCost strict(db, "dev", nullptr);
  expect_error([&] { strict.cost_ms(g, dag, mm); }, {"profiles.db", "mm", "dev"});
  EXPECT_THROW(ProfileDbCost(nullptr, "dev", nullptr), Error);
}

TEST(ProfileDbCost, InPlanTimesReplaceTimesAloneAndEveryCostCarriesTheOverhead) {
  // A convolution with a bias: its kernel measured alone on plain tensors, natively in
  // blocked layouts and blocked with reorders; then the check on the clock's in-plan
  // times (plain and native) and its per-kernel overhead. The cost model charges the
  // in-plan times where known, each plus the overhead.
  kora_test::ModelBuilder mb;
  mb.input("x", {1, 32, 14, 14})
      .init_f32("w", {32, 32, 3, 3}, std::vector<float>(32 * 32 * 9, 0.1f));
  mb.node("Conv", {"x", "w"}, {"y"}, {kora_test::attr_is("pads", {1, 1, 1, 1})});
  mb.output("y");
  const PrimGraph g = fission(kora_test::import_model(mb));
  const KernelDag dag = kernel_dag_of(g);
  Candidate conv = make_candidate(dag, {0});
  ASSERT_EQ(dag.prim.size(), 1u);
  const uint64_t sig = conv.signature = canonical_signature(g, dag, conv);
  TempDir dir;
  auto db = std::make_shared<ProfileDb>(dir.file("profiles.db"));
  auto rec = [&](const std::string& schedule, double ms) {
    ProfileRecord r;
    r.device = "dev", r.signature = sig, r.schedule = schedule, r.median_ms = ms;
    return r;
  };
  db->put({rec("generated", 0.5), rec(kOnednnNative, 0.3), rec(kOnednnBlocked, 0.4)});
  {
    ProfileDbCost alone(db, "dev", nullptr);
    EXPECT_DOUBLE_EQ(alone.cost_ms(g, dag, conv), 0.4);  // blocked with reorders counts
    const LayoutCost l = alone.layout_cost(g, dag, conv);
    ASSERT_FALSE(l.sides.empty());
    EXPECT_DOUBLE_EQ(l.native_ms, 0.3);
    EXPECT_DOUBLE_EQ(l.blocked_ms, 0.4);
    EXPECT_EQ(alone.in_plan(), 0);
  }
  db->put_in_plan("dev", {{sig, {{kOnednnBlocked, 0.35}}}}, 3);
  db->put_in_plan("dev", {{sig, {{kOnednnNative, 0.2}}}}, 3, /*native=*/true);
  db->put_kernel_overhead("dev", 0.01);
  {
    ProfileDbCost in_plan(db, "dev", nullptr);
    EXPECT_DOUBLE_EQ(in_plan.cost_ms(g, dag, conv), 0.35 + 0.01);
    const LayoutCost l = in_plan.layout_cost(g, dag, conv);
    EXPECT_DOUBLE_EQ(l.native_ms, 0.2 + 0.01);   // its time run natively inside a plan
    EXPECT_DOUBLE_EQ(l.blocked_ms, 0.4 + 0.01);  // never run so inside a plan: alone
    EXPECT_EQ(in_plan.in_plan(), 1);
  }
  // The schedule timed in plan slower than another schedule alone gives way to it; once
  // both were timed in plan, the faster there.
  db->put_in_plan("dev", {{sig, {{kOnednnBlocked, 0.6}}}}, 3);
  EXPECT_DOUBLE_EQ(ProfileDbCost(db, "dev", nullptr).cost_ms(g, dag, conv), 0.5 + 0.01);
  db->put_in_plan("dev", {{sig, {{"generated", 0.55}}}}, 3);
  EXPECT_DOUBLE_EQ(ProfileDbCost(db, "dev", nullptr).cost_ms(g, dag, conv), 0.55 + 0.01);
  ProfileDbCost in_plan(db, "dev", nullptr);
  // A kernel not measured costs its fallback's estimate plus the same time between
  // kernels, so that it does not look cheaper than a measured one by it.
  auto roofline = std::make_unique<RooflineCost>(device_params("cpu"));
  RooflineCost reference(device_params("cpu"));
  auto fresh = std::make_shared<ProfileDb>(dir.file("fresh.db"));
  fresh->put_kernel_overhead("dev", 0.01);
  ProfileDbCost unmeasured(fresh, "dev", std::move(roofline));
  EXPECT_DOUBLE_EQ(unmeasured.cost_ms(g, dag, conv), reference.cost_ms(g, dag, conv) + 0.01);
  EXPECT_FALSE(unmeasured.measured(sig));
}

TEST(MeasuredCostTable, MissWithoutFallbackNamesSignatureAndPrimitives) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate fused = make_candidate(dag, {0, 1});
  TempDir dir;
  const std::string path = dir.file("empty.json");
  write_text(path, R"({"device": "cpu", "kernels": {}})");
  MeasuredCostTable table(path, nullptr);
  const std::string sig = signature_hex(canonical_signature(g, dag, fused));
  expect_error([&] { table.cost_ms(g, dag, fused); }, {path, sig, "mm", "relu"});
  EXPECT_EQ(table.misses(), 1);
}

TEST(MeasuredCostTable, BadFilesNameTheFileAndTheEntry) {
  TempDir dir;
  const std::string missing = dir.file("nope.json");
  expect_error([&] { (void)MeasuredCostTable(missing, nullptr); }, {missing});

  struct Case {
    std::string file, text;
    std::vector<std::string> parts;  // besides the path
  };
  const std::vector<Case> cases = {
      {"truncated.json", R"({"kernels": {"0000000000000001": 1.0)", {}},
      {"not_json.json", "kernels = 3", {}},
      {"no_kernels.json", R"({"device": "cpu"})", {"kernels"}},
      {"kernels_array.json", R"({"kernels": [1, 2]})", {"kernels"}},
      {"short_key.json", R"({"kernels": {"abc": 1.0}})", {"abc"}},
      {"upper_key.json", R"({"kernels": {"00000000000000AB": 1.0}})", {"00000000000000AB"}},
      {"prefixed_key.json", R"({"kernels": {"0x00000000000000ab": 1.0}})", {"0x00000000000000ab"}},
      {"negative.json", R"({"kernels": {"00000000000000ab": -0.5}})", {"00000000000000ab", "-0.5"}},
      {"string_cost.json",
       R"({"kernels": {"00000000000000ab": "fast"}})",
       {"00000000000000ab", "fast"}},
      {"null_cost.json", R"({"kernels": {"00000000000000ab": null}})", {"00000000000000ab"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = dir.file(c.file);
    write_text(path, c.text);
    std::vector<std::string> parts = c.parts;
    parts.push_back(path);
    expect_error([&] { (void)MeasuredCostTable(path, nullptr); }, parts);
  }
}

// What each linear primitive of the model surely does as a kernel alone, by the name of
// the ONNX node it came from.
std::map<std::string, KernelWork> linear_work_alone(const kora_test::ModelBuilder& mb) {
  const PrimGraph g = fission(kora_test::import_model(mb));
  const KernelDag dag = kernel_dag_of(g);
  std::map<std::string, KernelWork> work;
  for (int v = 0; v < dag.size(); ++v) {
    const Primitive& p = g.prims[dag.prim[v]];
    if (p.kind() == PrimKind::kLinear)
      work[p.name.substr(0, p.name.find('#'))] = kernel_work(g, dag, make_candidate(dag, {v}));
  }
  return work;
}

TEST(LowerBound, AThreeByThreeConvolutionCountsTheMultipliesOfWinograd) {
  // Three convolutions of 8 -> 8 channels at 10x10: 3x3 of stride 1 (Winograd F(4x4, 3x3)
  // multiplies a quarter of the direct products), 3x3 of stride 2 and 1x1 (counted whole).
  kora_test::ModelBuilder mb;
  mb.input("x", {1, 8, 10, 10});
  mb.init_f32("w3", {8, 8, 3, 3}, std::vector<float>(8 * 8 * 9, 0.125f));
  mb.init_f32("w1", {8, 8, 1, 1}, std::vector<float>(8 * 8, 0.25f));
  const auto pads = kora_test::attr_is("pads", {1, 1, 1, 1});
  mb.node("Conv", {"x", "w3"}, {"a"}, {pads}, "wino");
  mb.node("Conv", {"x", "w3"}, {"b"}, {pads, kora_test::attr_is("strides", {2, 2})}, "strided");
  mb.node("Conv", {"x", "w1"}, {"c"}, {}, "pointwise");
  mb.output("a").output("b").output("c");
  const std::map<std::string, KernelWork> work = linear_work_alone(mb);
  const double direct = 2.0 * 8 * 8 * 9 * 10 * 10;  // multiply-adds of every output
  EXPECT_DOUBLE_EQ(work.at("wino").flops, direct / 4);
  EXPECT_DOUBLE_EQ(work.at("strided").flops, 2.0 * 8 * 8 * 9 * 5 * 5);
  EXPECT_DOUBLE_EQ(work.at("pointwise").flops, 2.0 * 8 * 8 * 10 * 10);
}

TEST(LowerBound, AMatmulReadThroughSlicesCountsTheShareTheSlicesNeed) {
  // Three matmuls x [8, 16] @ w [16, 12], each read only through slices of its columns:
  // a split into three parts of 4 (together all of it), one slice of 4 (a third), and two
  // slices of 6 that overlap (the larger part surely needed: a half). A kernel of the
  // matmul and its slices does that share of the matmul's work at least.
  kora_test::ModelBuilder mb;
  mb.opset(13);
  mb.input("x", {8, 16});
  mb.init_f32("w", {16, 12}, std::vector<float>(16 * 12, 0.5f));
  mb.init_i64("parts", {3}, {4, 4, 4});
  mb.init_i64("axes", {1}, {1});
  mb.init_i64("s0", {1}, {0});
  mb.init_i64("e4", {1}, {4});
  mb.init_i64("e6", {1}, {6});
  mb.init_i64("s3", {1}, {3});
  mb.init_i64("e9", {1}, {9});
  mb.node("MatMul", {"x", "w"}, {"m1"}, {}, "split");
  mb.node("Split", {"m1", "parts"}, {"p0", "p1", "p2"}, {kora_test::attr_i("axis", 1)});
  mb.node("MatMul", {"x", "w"}, {"m2"}, {}, "third");
  mb.node("Slice", {"m2", "s0", "e4", "axes"}, {"q"});
  mb.node("MatMul", {"x", "w"}, {"m3"}, {}, "overlap");
  mb.node("Slice", {"m3", "s0", "e6", "axes"}, {"r0"});
  mb.node("Slice", {"m3", "s3", "e9", "axes"}, {"r1"});
  // torchvision's attention: q, k and v gathered from a packed [8, 3, 4] one index each.
  mb.init_i64("packed", {3}, {8, 3, 4});
  mb.node("MatMul", {"x", "w"}, {"m4"}, {}, "gather");
  mb.node("Reshape", {"m4", "packed"}, {"g"});
  for (int i = 0; i < 3; ++i) {
    mb.init_i64("i" + std::to_string(i), {}, {i});
    mb.node("Gather", {"g", "i" + std::to_string(i)}, {"g" + std::to_string(i)},
            {kora_test::attr_i("axis", 1)});
  }
  for (const char* out : {"p0", "p1", "p2", "q", "r0", "r1", "g0", "g1", "g2"}) mb.output(out);
  const PrimGraph g = fission(kora_test::import_model(mb));
  const KernelDag dag = kernel_dag_of(g);
  // Each matmul with the slices that read it (and the reshapes between), one kernel.
  std::map<std::string, std::vector<int>> members;
  std::map<std::string, std::string> origin_of;  // tensor -> the matmul it comes from
  for (int v = 0; v < dag.size(); ++v) {
    const Primitive& p = g.prims[dag.prim[v]];
    std::string name = p.name.substr(0, p.name.find('#'));
    if (p.kind() != PrimKind::kLinear) {
      // Its first input's matmul (producers come first in the DAG's order).
      ASSERT_TRUE(origin_of.count(p.inputs.at(0))) << p.name;
      name = origin_of.at(p.inputs.at(0));
    }
    origin_of[p.outputs[0]] = name;
    members[name].push_back(v);
  }
  const double whole = 2.0 * 8 * 16 * 12;
  EXPECT_DOUBLE_EQ(kernel_work(g, dag, make_candidate(dag, members.at("split"))).flops, whole);
  EXPECT_DOUBLE_EQ(kernel_work(g, dag, make_candidate(dag, members.at("third"))).flops, whole / 3);
  EXPECT_DOUBLE_EQ(kernel_work(g, dag, make_candidate(dag, members.at("overlap"))).flops,
                   whole / 2);
  EXPECT_DOUBLE_EQ(kernel_work(g, dag, make_candidate(dag, members.at("gather"))).flops, whole);
}

TEST(LowerBound, AConvolutionReadsTheInputItsWindowsTouch) {
  // A 16x16 patch embedding of stride 16 reads all of its input; a 1x1 convolution of
  // stride 2 a quarter of it.
  kora_test::ModelBuilder mb;
  mb.input("x", {1, 4, 32, 32});
  mb.init_f32("wp", {8, 4, 16, 16}, std::vector<float>(8 * 4 * 16 * 16, 0.01f));
  mb.init_f32("w1", {8, 4, 1, 1}, std::vector<float>(8 * 4, 0.25f));
  mb.node("Conv", {"x", "wp"}, {"p"}, {kora_test::attr_is("strides", {16, 16})}, "patch");
  mb.node("Conv", {"x", "w1"}, {"h"}, {kora_test::attr_is("strides", {2, 2})}, "half");
  mb.output("p").output("h");
  const std::map<std::string, KernelWork> work = linear_work_alone(mb);
  const double x = 4.0 * 4 * 32 * 32;
  EXPECT_DOUBLE_EQ(work.at("patch").bytes, x + 4.0 * 8 * 4 * 16 * 16 + 4.0 * 8 * 2 * 2);
  EXPECT_DOUBLE_EQ(work.at("half").bytes, x / 4 + 4.0 * 8 * 4 + 4.0 * 8 * 16 * 16);
}

TEST(CostFission, TwoIdenticalBranchesShareOneMeasuredEntry) {
  // y1 = relu(x1 @ w1), y2 = relu(x2 @ w2) with equal shapes: after fission each branch
  // is a matmul with a relu epilogue; both fused kernels have one signature, so one table
  // entry prices both, and on the roofline each fused kernel beats its two singletons.
  kora_test::ModelBuilder mb;
  mb.input("x1", {16, 32}).input("x2", {16, 32});
  mb.init_f32("w1", {32, 8}, std::vector<float>(32 * 8, 0.5f));
  mb.init_f32("w2", {32, 8}, std::vector<float>(32 * 8, -0.25f));
  mb.node("MatMul", {"x1", "w1"}, {"m1"});
  mb.node("Relu", {"m1"}, {"y1"});
  mb.node("MatMul", {"x2", "w2"}, {"m2"});
  mb.node("Relu", {"m2"}, {"y2"});
  mb.output("y1").output("y2");
  const PrimGraph g = fission(kora_test::import_model(mb));
  const KernelDag dag = kernel_dag_of(g);

  std::vector<Candidate> fused;
  for (const Candidate& c : enumerate_candidates(dag))
    if (c.members.size() == 2) fused.push_back(c);
  ASSERT_EQ(fused.size(), 2u);
  const uint64_t sig = canonical_signature(g, dag, fused[0]);
  EXPECT_EQ(canonical_signature(g, dag, fused[1]), sig);

  RooflineCost roofline(device_params("cpu"));
  for (const Candidate& c : fused) {
    double apart = 0;
    for (int v : c.members) apart += roofline.cost_ms(g, dag, make_candidate(dag, {v}));
    EXPECT_LT(roofline.cost_ms(g, dag, c), apart);
    // Reads the input and the weight, writes the relu's output.
    EXPECT_EQ(kernel_reads(g, dag, c).size(), 2u);
    EXPECT_EQ(kernel_writes(g, dag, c).size(), 1u);
  }

  TempDir dir;
  const std::string path = dir.file("costs.json");
  write_text(path, "{\"device\": \"cpu\", \"kernels\": {\"" + signature_hex(sig) + "\": 0.5}}");
  MeasuredCostTable table(path, std::make_unique<RooflineCost>(device_params("cpu")));
  for (const Candidate& c : fused) EXPECT_DOUBLE_EQ(table.cost_ms(g, dag, c), 0.5);
  EXPECT_EQ(table.hits(), 2);
  EXPECT_EQ(table.misses(), 0);
}

}  // namespace
}  // namespace kora
