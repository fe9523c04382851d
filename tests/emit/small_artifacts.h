// Small models and their artifacts for the emitter and runtime tests
// (tests/emit/artifact_test.cc, tests/runtime/session_test.cc): ONNX models built in code
// in; their primitive graphs, plans and artifact options (kernels compiled at -O1 into
// one cache for the whole suite) out; and the checks both share: a Session's outputs
// against the reference interpreter, and errors that mention given words.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cpu/artifact.h"
#include "cpu/backend.h"
#include "frontend/model_builder.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/interpreter.h"
#include "kora/orchestration.h"
#include "kora/runtime.h"

namespace kora_test {

// conv + bias -> relu -> (+ x residual through a 1x1 conv) -> softmax, and TopK (an
// opaque primitive: int64 indices out). One input, x [1, 3, 6, 6] float32; three outputs.
inline kora::PrimGraph small_model() {
  ModelBuilder m;
  std::vector<float> w(4 * 3 * 3 * 3), b(4), w1(4 * 3);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>(i * 37 % 17) - 8) / 16;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i) - 0.5f;
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3) / 4;
  m.input("x", {1, 3, 6, 6})
      .init_f32("w", {4, 3, 3, 3}, w)
      .init_f32("b", {4}, b)
      .init_f32("w1", {4, 3, 1, 1}, w1);
  m.node("Conv", {"x", "w", "b"}, {"c"}, {attr_is("pads", {1, 1, 1, 1})}, "conv");
  m.node("Relu", {"c"}, {"r"}, {}, "relu");
  m.node("Conv", {"x", "w1"}, {"s"}, {}, "shortcut");
  m.node("Add", {"r", "s"}, {"a"}, {}, "residual");
  m.node("Softmax", {"a"}, {"p"}, {attr_i("axis", 1)}, "softmax");
  m.init_i64("k", {1}, {3}).output("p").output("top").output("idx", onnx::TensorProto::INT64);
  m.node("TopK", {"a", "k"}, {"top", "idx"}, {attr_i("axis", 3)}, "topk");
  return kora::fission(import_model(m));
}

// One thread, the CPU fingerprint, kernels at -O1 in one cache for the whole suite.
inline kora::ArtifactOptions quick_options() {
  static TempDir cache;
  kora::ArtifactOptions o;
  o.threads = 1;
  o.device = kora::cpu_backend_fingerprint(1);
  o.compile.cache_dir = cache.file("kernels");
  o.compile.flags = kora::default_compile_flags(o.compile.compiler);
  for (std::string& f : o.compile.flags)
    if (f.rfind("-O", 0) == 0) f = "-O1";
  return o;
}

// The plan of `strategy` (optimal, greedy, unfused) with roofline costs.
inline kora::OrchestrationResult plan_of(const kora::PrimGraph& g, const std::string& strategy) {
  kora::RooflineCost costs(kora::device_params("cpu"));
  kora::OrchestrationOptions o;
  o.strategy = strategy;
  return kora::orchestrate(g, costs, o);
}

inline std::map<std::string, kora::Tensor> random_inputs(const kora::PrimGraph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, kora::Tensor> feeds;
  for (const std::string& name : g.inputs)
    feeds[name] = kora::random_tensor(g.value(name).dtype, g.value(name).shape, rng);
  return feeds;
}

// Same shape and dtype; integers equal, floats within `tolerance` relative L2 error.
inline void expect_close(const kora::Tensor& got, const kora::Tensor& want, const std::string& name,
                         double tolerance = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape()) << name;
  ASSERT_EQ(got.dtype(), want.dtype()) << name;
  if (!kora::is_floating(want.dtype())) {
    EXPECT_EQ(got.to_int64(), want.to_int64()) << name;
    return;
  }
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff += std::pow(got.double_at(i) - want.double_at(i), 2);
    norm += std::pow(want.double_at(i), 2);
  }
  EXPECT_LT(std::sqrt(diff / std::max(norm, 1e-30)), tolerance) << name;
}

// The artifact's outputs equal the interpreter's on two different random inputs (the
// second run reuses the session: inputs rebound, arena reused).
inline void expect_matches_interpreter(const kora::PrimGraph& g, const std::string& dir,
                                       double tolerance = 1e-5) {
  kora::Session session(dir);
  for (uint64_t seed : {1, 2}) {
    const auto feeds = random_inputs(g, seed);
    const auto want = kora::interpret(g, feeds);
    const auto got = session.run(feeds);
    for (const std::string& out : g.outputs)
      expect_close(got.at(out), want.at(out), out, tolerance);
  }
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
inline void write_bytes(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Runs `f`, which must throw kora::Error mentioning `words`.
template <typename F>
void expect_error(F&& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << words << "'";
  } catch (const kora::Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

}  // namespace kora_test
