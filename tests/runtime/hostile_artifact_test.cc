// Corrupt and hostile artifacts (src/runtime/manifest.cc's plan check, src/runtime/cpu_plan.cc,
// src/runtime/session.cc): a copy of a good artifact of the small model
// (tests/emit/small_artifacts.h), one thing changed, must be refused by Session with a
// kora::Error saying what is wrong, never run: an output shape too small, an arena too
// small, an offset near INT64_MAX, an output of 2^62 elements, a kernel's reads or writes
// removed, the kernels in reverse order, a truncated or modified kernel library or
// weights file, files without a recorded SHA-256. A thread count beyond the machine's is
// clamped, and the artifact still runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "emit/small_artifacts.h"
#include "kora/runtime.h"

namespace {

using namespace kora;
namespace fs = std::filesystem;
using json = nlohmann::json;
using kora_test::expect_error;
using kora_test::read_bytes;
using kora_test::write_bytes;

class HostileArtifact : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new kora_test::TempDir;
    graph_ = new PrimGraph(kora_test::small_model());
    write_cpu_artifact(*graph_, kora_test::plan_of(*graph_, "unfused"), nullptr, good(),
                       kora_test::quick_options());
  }
  static void TearDownTestSuite() {
    delete graph_;
    delete dir_;
  }
  static std::string good() { return dir_->file("good"); }
  static json manifest() { return json::parse(read_bytes(fs::path(good()) / "manifest.json")); }

  // A copy of the good artifact named `name`, its manifest changed by `edit`.
  static std::string tampered(const std::string& name, const std::function<void(json&)>& edit) {
    const fs::path p = dir_->file(name);
    fs::remove_all(p);
    fs::copy(good(), p, fs::copy_options::recursive);
    json m = manifest();
    edit(m);
    write_bytes(p / "manifest.json", m.dump(1));
    return p.string();
  }
  static json& tensor(json& m, const std::string& name) {
    for (json& t : m["tensors"])
      if (t["name"] == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  // The index of the first kernel of implementation `impl`, -1 if none.
  static int first_kernel(const json& m, const std::string& impl) {
    for (size_t i = 0; i < m["kernels"].size(); ++i)
      if (m["kernels"][i]["impl"] == impl) return static_cast<int>(i);
    return -1;
  }

  static kora_test::TempDir* dir_;
  static PrimGraph* graph_;
};

kora_test::TempDir* HostileArtifact::dir_ = nullptr;
PrimGraph* HostileArtifact::graph_ = nullptr;

TEST_F(HostileArtifact, TheGoodOneRunsAndRecordsItsFiles) {
  const json m = manifest();
  EXPECT_EQ(m["version"], 4);
  ASSERT_TRUE(m["files"].contains("weights.bin"));
  ASSERT_TRUE(m["files"].contains("kernels_0.so"));
  EXPECT_EQ(m["files"]["kernels_0.so"]["bytes"], fs::file_size(fs::path(good()) / "kernels_0.so"));
  EXPECT_EQ(m["files"]["kernels_0.so"]["sha256"].get<std::string>().size(), 64u);
  ASSERT_GE(first_kernel(m, "generated"), 0);
  kora_test::expect_matches_interpreter(*graph_, good());
}

TEST_F(HostileArtifact, OutputShapeTooSmall) {
  // p [1, 4, 6, 6] is written by a kernel compiled for it: a smaller buffer is refused.
  const std::string a = tampered("small_output", [](json& m) { tensor(m, "p")["shape"][3] = 5; });
  expect_error([&] { Session s(a); }, "not what the manifest stores");
}

TEST_F(HostileArtifact, LibraryKernelOutputShapeTooSmall) {
  const std::string a = tampered("small_idx", [](json& m) { tensor(m, "idx")["shape"][3] = 1; });
  expect_error([&] { Session s(a); }, "not what the manifest stores");
}

TEST_F(HostileArtifact, ArenaTooSmall) {
  const std::string a = tampered("small_arena", [](json& m) { m["arena_bytes"] = 64; });
  expect_error([&] { Session s(a); }, "lies outside the arena");
}

TEST_F(HostileArtifact, OffsetNearInt64Max) {
  const std::string a = tampered("far_offset", [](json& m) {
    for (json& t : m["tensors"])
      if (t["storage"] == "arena") {
        t["offset"] = INT64_MAX - 16;
        break;
      }
  });
  expect_error([&] { Session s(a); }, "lies outside the arena");
  const std::string w = tampered("far_constant", [](json& m) {
    for (json& t : m["tensors"])
      if (t["storage"] == "constant") {
        t["offset"] = INT64_MAX - 16;
        break;
      }
  });
  expect_error([&] { Session s(w); }, "lies outside the weights");
}

TEST_F(HostileArtifact, OutputOf2To62Elements) {
  const std::string a = tampered("huge_output", [](json& m) {
    tensor(m, "p")["shape"] = json::array({int64_t{1} << 31, int64_t{1} << 31});
  });
  expect_error([&] { Session s(a); }, "is absurdly large");
}

TEST_F(HostileArtifact, KernelReadsOrWritesRemoved) {
  const json m = manifest();
  const int gen = first_kernel(m, "generated");
  ASSERT_GE(gen, 0);
  const std::string reads =
      tampered("no_reads", [&](json& j) { j["kernels"][gen]["reads"] = json::array(); });
  expect_error([&] { Session s(reads); }, "not what the manifest stores");
  const std::string writes =
      tampered("no_writes", [&](json& j) { j["kernels"][gen]["writes"] = json::array(); });
  expect_error([&] { Session s(writes); }, "writes nothing");
  const int lib = first_kernel(m, "interpreter");
  ASSERT_GE(lib, 0);
  const std::string lib_reads =
      tampered("lib_no_reads", [&](json& j) { j["kernels"][lib]["reads"] = json::array(); });
  expect_error([&] { Session s(lib_reads); }, "reads or writes other tensors");
}

TEST_F(HostileArtifact, KernelsInReverseOrder) {
  const std::string a = tampered("reversed", [](json& m) {
    json k = json::array();
    for (auto it = m["kernels"].rbegin(); it != m["kernels"].rend(); ++it) k.push_back(*it);
    m["kernels"] = k;
  });
  expect_error([&] { Session s(a); }, "kernels out of order");
}

TEST_F(HostileArtifact, ArenaTensorsSharingBytesWhileLive) {
  // Every arena tensor at offset 0: two of them are live together in the unfused plan.
  const std::string a = tampered("overlap", [](json& m) {
    for (json& t : m["tensors"])
      if (t["storage"] == "arena") t["offset"] = 0;
  });
  expect_error([&] { Session s(a); }, "share bytes while both are live");
}

TEST_F(HostileArtifact, OutputListedTwiceOrNeverWritten) {
  const std::string twice = tampered("output_twice", [](json& m) { m["outputs"].push_back("p"); });
  expect_error([&] { Session s(twice); }, "output 'p' is listed twice");
  const std::string unwritten = tampered("unwritten", [](json& m) {
    json kept = json::array();
    for (const json& k : m["kernels"])
      if (k["writes"] != json::array({"p"})) kept.push_back(k);
    ASSERT_EQ(kept.size() + 1, m["kernels"].size());
    m["kernels"] = kept;
  });
  expect_error([&] { Session s(unwritten); }, "output 'p' is written by no kernel");
}

TEST_F(HostileArtifact, TruncatedOrModifiedKernelLibrary) {
  const std::string cut = tampered("cut_library", [](json&) {});
  const std::string so = read_bytes(fs::path(cut) / "kernels_0.so");
  write_bytes(fs::path(cut) / "kernels_0.so", so.substr(0, so.size() / 2));
  expect_error([&] { Session s(cut); }, "the manifest says");
  const std::string flipped = tampered("flipped_library", [](json&) {});
  std::string bytes = so;
  bytes[bytes.size() / 2] ^= 0x01;
  write_bytes(fs::path(flipped) / "kernels_0.so", bytes);
  expect_error([&] { Session s(flipped); }, "SHA-256 differs");
}

TEST_F(HostileArtifact, ModifiedWeights) {
  // The SHA-256 is checked first (then the FNV checksum of earlier versions).
  const std::string a = tampered("weights", [](json&) {});
  std::string w = read_bytes(fs::path(a) / "weights.bin");
  ASSERT_GT(w.size(), 16u);
  w[3] ^= 0x40;
  write_bytes(fs::path(a) / "weights.bin", w);
  expect_error([&] { Session s(a); }, "SHA-256 differs");
}

TEST_F(HostileArtifact, FilesWithoutSha256) {
  const std::string lib =
      tampered("no_lib_hash", [](json& m) { m["files"].erase("kernels_0.so"); });
  expect_error([&] { Session s(lib); }, "library 'kernels_0.so'");
  const std::string bad =
      tampered("bad_hash", [](json& m) { m["files"]["weights.bin"]["sha256"] = "00"; });
  expect_error([&] { Session s(bad); }, "64 lowercase hex digits");
  const std::string old = tampered("version_3", [](json& m) {
    m["version"] = 3;
    m.erase("files");
  });
  expect_error([&] { Session s(old); }, "compile the model again");
}

TEST_F(HostileArtifact, ThreadsClampedToTheMachine) {
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  ASSERT_GT(hardware, 0);
  Session s(good(), SessionOptions{100000});
  EXPECT_EQ(s.threads(), hardware);
  const std::string many = tampered("many_threads", [](json& m) { m["threads"] = 100000; });
  Session t(many);
  EXPECT_EQ(t.threads(), hardware);
  const auto feeds = kora_test::random_inputs(*graph_, 5);
  const auto want = interpret(*graph_, feeds);
  const auto got = t.run(feeds);
  for (const std::string& out : graph_->outputs)
    kora_test::expect_close(got.at(out), want.at(out), out);
}

}  // namespace
