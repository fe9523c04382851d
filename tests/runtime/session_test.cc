// The runtime Session (include/kora/runtime.h, src/runtime/session.cc) and its C API
// (include/kora/kora_c.h) on artifacts of a small model (tests/emit/small_artifacts.h):
// a missing directory, a truncated or newer-version manifest, a manifest missing a field,
// short or corrupt weights and a missing kernel library are kora::Errors naming what is
// wrong; an unbound input, an unknown input or output and an input of the wrong shape or
// dtype too. Through the C API: the inputs' names, dtypes and shapes, binding (a buffer
// of the wrong size refused), running, and outputs equal to the reference interpreter's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cpu/artifact.h"
#include "emit/small_artifacts.h"
#include "frontend/model_builder.h"
#include "kora/interpreter.h"
#include "kora/kora_c.h"
#include "kora/runtime.h"

namespace {

using namespace kora;
namespace fs = std::filesystem;
using kora_test::expect_close;
using kora_test::expect_error;
using kora_test::plan_of;
using kora_test::quick_options;
using kora_test::random_inputs;
using kora_test::read_bytes;
using kora_test::small_model;
using kora_test::write_bytes;

TEST(Session, BadArtifactsAndWrongInputsAreClearErrors) {
  kora_test::TempDir dir;
  const PrimGraph g = small_model();
  const std::string good = dir.file("good");
  write_cpu_artifact(g, plan_of(g, "optimal"), nullptr, good, quick_options());
  const std::string manifest = read_bytes(fs::path(good) / "manifest.json");
  const std::string weights = read_bytes(fs::path(good) / "weights.bin");
  auto fresh = [&](const std::string& name) {
    const fs::path p = dir.file(name);
    fs::copy(good, p, fs::copy_options::recursive);
    return p;
  };
  expect_error([&] { Session s(dir.file("nowhere")); }, "not a directory");
  {
    const fs::path p = fresh("truncated_manifest");
    write_bytes(p / "manifest.json", manifest.substr(0, manifest.size() / 2));
    expect_error([&] { Session s(p.string()); }, "not valid JSON");
  }
  {
    const fs::path p = fresh("version");
    std::string m = manifest;
    m.replace(m.rfind("\"version\": 4"), 12, "\"version\": 7");  // the last: top level
    write_bytes(p / "manifest.json", m);
    expect_error([&] { Session s(p.string()); }, "format version 7");
  }
  {
    const fs::path p = fresh("field");
    std::string m = manifest;
    m.replace(m.find("\"reads\""), 7, "\"rEads\"");
    write_bytes(p / "manifest.json", m);
    expect_error([&] { Session s(p.string()); }, "has no field 'reads'");
  }
  {
    const fs::path p = fresh("short_weights");
    write_bytes(p / "weights.bin", weights.substr(0, weights.size() - 64));
    expect_error([&] { Session s(p.string()); }, "truncated");
  }
  {
    const fs::path p = fresh("flipped_weights");
    std::string w = weights;
    w[w.size() / 2] ^= 0x10;
    write_bytes(p / "weights.bin", w);
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

TEST(Session, CApi) {
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
