// Replays the fuzzers' seed corpus and every crasher they found (fuzz/corpus/READER/,
// fuzz/crashers/READER/) through the same readers (fuzz/targets.h): each input must end
// in success or a kora::Error, in `make test` as under `make fuzz`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/targets.h"

namespace {

namespace fs = std::filesystem;

// Runs `reader` on every file under fuzz/corpus/NAME and fuzz/crashers/NAME; the count.
int replay(const std::string& name, void (*reader)(const uint8_t*, size_t)) {
  int inputs = 0;
  for (const char* kind : {"corpus", "crashers"}) {
    const fs::path dir = fs::path(KORA_FUZZ_DIR) / kind / name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      SCOPED_TRACE(entry.path().string());
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      reader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  return inputs;
}

TEST(FuzzReplay, OnnxImporter) { EXPECT_GT(replay("onnx_import", kora_fuzz::onnx_import), 0); }
TEST(FuzzReplay, NpyReader) { EXPECT_GT(replay("npy", kora_fuzz::npy), 0); }
TEST(FuzzReplay, ManifestReader) { EXPECT_GT(replay("manifest", kora_fuzz::manifest), 0); }
TEST(FuzzReplay, CudaJobAndResultsReader) { EXPECT_GT(replay("cuda_job", kora_fuzz::cuda_job), 0); }
TEST(FuzzReplay, ProfileDatabase) { EXPECT_GT(replay("profile_db", kora_fuzz::profile_db), 0); }

}  // namespace
