// Kernel compilation and measurement (src/cpu/compile.h, measure.h): a source
// compiles, loads and computes what it should (checked against the same loop here);
// the same source again comes from the cache without running the compiler, other
// flags give another library; a compile error throws with the compiler's diagnostic
// and the kept source's path; a missing symbol throws. measure() warms up, rotates the
// sample index, stays within its sample bounds and is never below a known busy time.
#include "cpu/compile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cpu/measure.h"
#include "kora/error.h"

namespace {

namespace fs = std::filesystem;

class CompileTest : public testing::Test {
 protected:
  void SetUp() override {
    options_.cache_dir = (fs::temp_directory_path() /
                          ("kora_kernels_" + std::to_string(::getpid()) + "_" +
                           testing::UnitTest::GetInstance()->current_test_info()->name()))
                             .string();
    fs::remove_all(options_.cache_dir);
  }
  void TearDown() override { fs::remove_all(options_.cache_dir); }
  kora::CxxCompileOptions options_;
};

const char* kSaxpy = R"(
extern "C" void saxpy(int n, float a, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
)";

TEST_F(CompileTest, CompilesLoadsAndCaches) {
  const kora::CompileResult first = kora::compile_shared(kSaxpy, options_);
  EXPECT_FALSE(first.cached);
  EXPECT_GT(first.seconds, 0);
  EXPECT_EQ(first.key.size(), 16u);
  using Saxpy = void (*)(int, float, const float*, float*);
  auto saxpy = reinterpret_cast<Saxpy>(first.library->symbol("saxpy"));
  std::vector<float> x(1000), y(1000), want(1000);
  for (int i = 0; i < 1000; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i, want[i] = 3.0f * x[i] + y[i];
  saxpy(1000, 3.0f, x.data(), y.data());
  EXPECT_EQ(y, want);

  const kora::CompileResult again = kora::compile_shared(kSaxpy, options_);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.key, first.key);
  EXPECT_EQ(again.seconds, 0);
  kora::CxxCompileOptions other = options_;
  other.flags = {"-O1", "-fPIC", "-shared"};
  const kora::CompileResult o1 = kora::compile_shared(kSaxpy, other);
  EXPECT_FALSE(o1.cached);
  EXPECT_NE(o1.key, first.key);
  // Only finished libraries and sources are left in the cache.
  for (const auto& entry : fs::directory_iterator(options_.cache_dir))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  EXPECT_THROW(first.library->symbol("no_such_kernel"), kora::Error);
}

TEST_F(CompileTest, CompileErrorsNameTheSourceAndTheProblem) {
  try {
    kora::compile_shared("extern \"C\" int broken() { return undeclared_name; }\n", options_);
    FAIL() << "a broken source compiled";
  } catch (const kora::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("undeclared_name"), std::string::npos) << what;
    EXPECT_NE(what.find(options_.cache_dir), std::string::npos) << what;
  }
  kora::CxxCompileOptions missing = options_;
  missing.compiler = "/nonexistent/c++";
  EXPECT_THROW(kora::compile_shared(kSaxpy, missing), kora::Error);
  EXPECT_EQ(kora::compiler_version("g++").rfind("g++ ", 0), 0u);
}

TEST(Measure, WarmsUpRotatesAndBoundsSamples) {
  std::vector<int> seen;
  auto busy = [&](int i) {
    seen.push_back(i);
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  kora::MeasureOptions options;
  options.warmup = 2;
  options.min_samples = 6;
  options.max_samples = 40;
  const kora::Measurement m = kora::measure(busy, options);
  EXPECT_GE(m.samples, 6);
  EXPECT_LE(m.samples, 40);
  ASSERT_EQ(static_cast<int>(seen.size()), 2 + m.samples);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int>(i));
  EXPECT_GE(m.median_ms, 0.2);  // never below the time the call certainly took
  EXPECT_GE(m.spread_ms, 0);
  options.min_samples = 0;
  EXPECT_THROW(kora::measure(busy, options), kora::Error);
}

TEST(Measure, SlowKernelsGetOneWarmUpAndThreeSamples) {
  int calls = 0;
  auto sleepy = [&](int) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(6));
  };
  kora::MeasureOptions options;
  options.warmup = 3;
  options.min_samples = 10;
  options.max_samples = 10;
  options.max_seconds = 0.001;  // stop at the minimum
  options.slow_ms = 5;          // the first call (>= 6 ms) is slow
  const kora::Measurement slow = kora::measure(sleepy, options);
  EXPECT_EQ(slow.samples, 3);
  EXPECT_EQ(calls, 1 + 3);
  EXPECT_GE(slow.median_ms, 6.0);
  calls = 0;
  options.slow_ms = 50;  // not slow: the options as given
  const kora::Measurement normal = kora::measure(sleepy, options);
  EXPECT_EQ(normal.samples, 10);
  EXPECT_EQ(calls, 3 + 10);
}

TEST(Measure, AbandonsACallFarSlowerThanTheBest) {
  int calls = 0;
  auto sleepy = [&](int) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
  };
  kora::MeasureOptions options;
  options.abandon_ms = 3;
  const kora::Measurement m = kora::measure(sleepy, options);
  EXPECT_EQ(m.samples, 1);
  EXPECT_EQ(calls, 1);
  EXPECT_GE(m.median_ms, 4.0);
}

}  // namespace
