// NVRTC compilation (src/cuda/nvrtc_compile.h) without a GPU: a kernel compiles to a
// cubin for sm_80 and sm_90 (different images), the second compile is a cache hit with the
// same bytes, a rejected source throws with NVRTC's diagnostic and fails again at once
// from the cache; the architectures list has both.
#include "cuda/nvrtc_compile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cuda/codegen.h"
#include "frontend/model_builder.h"
#include "kora/error.h"

namespace {

using namespace kora;

const char* kSource = R"(extern "C" __global__ void scale(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";

TEST(NvrtcCompile, CompilesAndCaches) {
  if (!cuda_built()) {
    EXPECT_THROW(compile_cubin(kSource), Error);
    GTEST_SKIP() << "kora was built without CUDA";
  }
  kora_test::TempDir dir;
  NvrtcOptions options;
  options.cache_dir = dir.file("cubins");
  const CubinResult a = compile_cubin(kSource, options);
  EXPECT_FALSE(a.cached);
  EXPECT_EQ(a.key.size(), 16u);
  ASSERT_GT(a.cubin.size(), 4u);
  EXPECT_EQ(a.cubin.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(a.cubin.find("scale"), std::string::npos);
  const CubinResult b = compile_cubin(kSource, options);
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_TRUE(std::filesystem::exists(dir.file("cubins/" + a.key + ".cu")));
  options.arch = "sm_90";
  const CubinResult c = compile_cubin(kSource, options);
  EXPECT_FALSE(c.cached);
  EXPECT_NE(c.key, a.key);
  EXPECT_NE(c.cubin, a.cubin);
}

TEST(NvrtcCompile, ErrorsCarryTheLog) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  kora_test::TempDir dir;
  NvrtcOptions options;
  options.cache_dir = dir.file("cubins");
  const std::string bad = "extern \"C\" __global__ void k(float* y) { y[0] = undefined_name; }\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      compile_cubin(bad, options);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;
      EXPECT_NE(what.find("source kept at"), std::string::npos) << what;
      if (attempt == 1) {
        EXPECT_NE(what.find("failed before"), std::string::npos) << what;
      }
    }
  }
}

TEST(NvrtcCompile, KnowsTheTargetArchitectures) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const std::vector<std::string> archs = nvrtc_architectures();
  for (const char* a : {"sm_80", "sm_90"})
    EXPECT_NE(std::find(archs.begin(), archs.end(), a), archs.end()) << a;
  EXPECT_EQ(nvrtc_version().rfind("nvrtc ", 0), 0u);
  // The prelude alone compiles (every helper parses in device code).
  kora_test::TempDir dir;
  NvrtcOptions options;
  options.cache_dir = dir.file("cubins");
  const CubinResult r = compile_cubin(cuda_codegen_prelude(), options);
  EXPECT_EQ(r.log, "");
}

}  // namespace
