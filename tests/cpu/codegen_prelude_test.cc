// Tests of the generated kernels' prelude (src/cpu/codegen_prelude.cc): its branch-free
// float exp, tanh, erf and sigmoid, compiled as kernels are (default flags) in loops over
// arrays, against the C library in double, in units in the last place of the float result,
// over a dense sweep and the special values; its 16-lane vectors (the max pools' AVX-512
// code) and bfloat16 row stores against the scalar forms they replace.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen.h"
#include "cpu/compile.h"
#include "frontend/model_builder.h"

namespace kora {
namespace {

// |got - want| in units of the float spacing at want (at least the smallest normal's).
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double spacing = std::max<double>(std::nextafter(std::fabs(w), INFINITY) - std::fabs(w),
                                          std::numeric_limits<float>::min());
  return std::fabs(double(got) - want) / spacing;
}

TEST(CpuCodegenPrelude, VectorMathWithinUlpsOfTheCLibrary) {
  struct Fn {
    const char* name;
    double (*reference)(double);
    double max_ulps;
  };
  const Fn fns[] = {
      {"kora_exp", [](double x) { return std::exp(x); }, 3},
      {"kora_tanh", [](double x) { return std::tanh(x); }, 3},
      {"kora_erf", [](double x) { return std::erf(x); }, 3},
      {"kora_sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 3},
  };
  std::string source = cpu_codegen_prelude();
  for (const Fn& f : fns)
    source += std::string("extern \"C\" void apply_") + f.name +
              "(const float* x, float* y, int64_t n) {\n  for (int64_t i = 0; i < n; ++i) y[i] = " +
              f.name + "(x[i]);\n}\n";
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  const CompileResult lib = compile_shared(source, options);

  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(i * 5e-5f);  // [-10, 10]
  for (float v = 1e-30f; v < 1e3f; v *= 1.01f) x.push_back(v), x.push_back(-v);
  for (int i = 0; i <= 100000; ++i)  // exp's edges: overflow above 88.72, flush below -87.34
    x.push_back(80.0f + i * 1e-4f), x.push_back(-80.0f - i * 1e-4f);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, 3.92f, 3.93f, 1.0f, -1.0f};
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.insert(x.end(), special.begin(), special.end());
  std::vector<float> y(x.size());
  for (const Fn& f : fns) {
    using Apply = void (*)(const float*, float*, int64_t);
    const auto apply = reinterpret_cast<Apply>(lib.library->symbol(std::string("apply_") + f.name));
    apply(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    float worst_at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = f.reference(x[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << f.name << "(" << x[i] << ") = " << y[i];
        continue;
      }
      if (std::isinf(want) || std::fabs(want) > std::numeric_limits<float>::max()) {
        EXPECT_EQ(y[i], static_cast<float>(want)) << f.name << "(" << x[i] << ")";
        continue;
      }
      const double e = ulps(y[i], want);
      if (e > worst) worst = e, worst_at = x[i];
    }
    EXPECT_LE(worst, f.max_ulps) << f.name << " at " << worst_at;
    if (std::string(f.name) != "kora_exp" && std::string(f.name) != "kora_sigmoid") {
      const size_t minus_zero = x.size() - special.size() + 1;  // odd: -0 stays -0
      EXPECT_TRUE(std::signbit(y[minus_zero])) << f.name << "(-0)";
    }
  }
}

// KORA_VEC16 (GCC with AVX-512; skipped elsewhere): bfloat16 loads widen exactly, stores
// round bit for bit as kora_bf16's scalar assignment does (ties to even, NaN quiet,
// infinities, overflow, subnormals), kora_max16 folds the scalar NaN-keeping max: NaN
// wherever a lane saw one, else the first of equal maxima (v > m ? v : m, as the scalar
// loop: -0 then +0 gives -0), and kora_sum16 the float sum in order.
TEST(CpuCodegenPrelude, SixteenLanesMatchTheScalarForms) {
  const std::string source = cpu_codegen_prelude() + R"(
extern "C" int has_vec16() {
#ifdef KORA_VEC16
  return 1;
#else
  return 0;
#endif
}
#ifdef KORA_VEC16
extern "C" void round16(const float* x, kora_bf16* lanes, kora_bf16* scalar, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) kora_store16(lanes + i, kora_load16(x + i));
  for (int64_t i = 0; i < n; ++i) scalar[i] = x[i];
}
extern "C" void widen16(const kora_bf16* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) kora_store16(y + i, kora_load16(x + i));
}
extern "C" void max16(const float* x, int64_t rows, float* y) {
  kora_max16 a;
  for (int64_t r = 0; r < rows; ++r) kora_max16_fold(a, kora_load16(x + 16 * r));
  kora_store16(y, kora_max16_value(a));
}
extern "C" void sum16(const float* x, int64_t rows, float* y) {
  kora_sum16 a;
  for (int64_t r = 0; r < rows; ++r) kora_sum16_fold(a, kora_load16(x + 16 * r));
  kora_store16(y, kora_sum16_value(a));
}
#endif
)";
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  const CompileResult lib = compile_shared(source, options);
  if (!reinterpret_cast<int (*)()>(lib.library->symbol("has_vec16"))())
    GTEST_SKIP() << "no AVX-512 here (or not GCC): the kernels keep their scalar loops";

  std::mt19937 rng(3);
  std::vector<float> x;
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::max(), 1.0f, -1.0f,
                  0x1.018p-130f, 0x1p-140f, 3.14159265f, 0x1.00018p0f, 0x1.00008p0f, 0x1.ff8p127f})
    x.push_back(v);
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xff800001u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);  // NaNs: quiet, negative, signalling with low payloads
  }
  std::uniform_int_distribution<uint32_t> any;
  while (x.size() % 16 != 0 || x.size() < 4096) {
    const uint32_t bits = any(rng);
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> lanes(x.size()), scalar(x.size());
  using Round = void (*)(const float*, void*, void*, int64_t);
  reinterpret_cast<Round>(lib.library->symbol("round16"))(x.data(), lanes.data(), scalar.data(), n);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(lanes[i], scalar[i]) << "x = " << x[i] << " (element " << i << ")";
  std::vector<float> widened(x.size());
  using Widen = void (*)(const void*, float*, int64_t);
  reinterpret_cast<Widen>(lib.library->symbol("widen16"))(lanes.data(), widened.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &widened[i], 4);
    ASSERT_EQ(bits, uint32_t{lanes[i]} << 16) << i;
  }

  // Rows of 16 lanes folded: lane 0 all NaN, lane 1 a NaN first, lane 2 a NaN last,
  // lane 3 -0 then +0, lane 4 +inf among, lane 5 all -inf, the others random.
  const int rows = 7;
  std::vector<float> m(16 * rows);
  std::normal_distribution<float> normal;
  for (float& v : m) v = normal(rng);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int r = 0; r < rows; ++r) m[16 * r] = nan, m[16 * r + 5] = -inf;
  m[16 * 0 + 1] = nan;
  m[16 * (rows - 1) + 2] = nan;
  for (int r = 0; r < rows; ++r) m[16 * r + 3] = r == 0 ? -0.0f : 0.0f;
  m[16 * 3 + 4] = inf;
  std::vector<float> got(16);
  using Max = void (*)(const float*, int64_t, float*);
  reinterpret_cast<Max>(lib.library->symbol("max16"))(m.data(), rows, got.data());
  for (int q = 0; q < 16; ++q) {
    float want = -inf;
    for (int r = 0; r < rows; ++r) {
      const float v = m[16 * r + q];
      want = (v > want || v != v) ? v : want;
    }
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[q])) << "lane " << q;
    } else {
      EXPECT_EQ(got[q], want) << "lane " << q;
      EXPECT_EQ(std::signbit(got[q]), std::signbit(want)) << "lane " << q;
    }
  }
  // kora_sum16: the float sum of each lane in row order (the random rows).
  std::vector<float> sums(16 * rows);
  for (float& v : sums) v = normal(rng);
  reinterpret_cast<Max>(lib.library->symbol("sum16"))(sums.data(), rows, got.data());
  for (int q = 0; q < 16; ++q) {
    float want = 0;
    for (int r = 0; r < rows; ++r) want += sums[16 * r + q];
    EXPECT_EQ(got[q], want) << "lane " << q;
  }
}

// kora_bf16_row and kora_bf16_row_h (a pointwise phase's bfloat16 store of a float row,
// its loop reading no bfloat16 or some): every length from 0 to 40 and a whole chunk, at
// every start, rounds each element as kora_bf16's scalar
// assignment does (ties to even both ways, NaN quiet, infinities, overflow), except that a
// subnormal float may become a zero of its sign (AVX512-BF16's conversion); it writes
// nothing past the row's end.
TEST(CpuCodegenPrelude, Bfloat16RowsRoundAsTheScalarForm) {
  const std::string source = cpu_codegen_prelude() + R"(
extern "C" void row(const float* x, kora_bf16* y, int64_t n) { kora_bf16_row(y, x, n); }
extern "C" void row_h(const float* x, kora_bf16* y, int64_t n) { kora_bf16_row_h(y, x, n); }
extern "C" void scalar(const float* x, kora_bf16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}
)";
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  const CompileResult lib = compile_shared(source, options);
  using Fn = void (*)(const float*, uint16_t*, int64_t);
  const Fn rows[] = {reinterpret_cast<Fn>(lib.library->symbol("row")),
                     reinterpret_cast<Fn>(lib.library->symbol("row_h"))};
  const Fn scalar = reinterpret_cast<Fn>(lib.library->symbol("scalar"));
  std::vector<float> x;
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::max(), 1.0f,
                  0x1.01p0f, 0x1.03p0f, 0x1.00802p0f, -0x1.01p0f, 0x1.ff8p127f, 0x1.018p-130f,
                  -0x1p-140f, std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  while (x.size() < 300)
    x.push_back(normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 60) - 30));
  const uint16_t guard = 0xabcd;
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(256);
  for (int64_t start : {0, 1, 5, 14}) {
    for (int64_t n : lengths) {
      for (const Fn row : rows) {
        std::vector<uint16_t> got(n + 1, guard), want(n + 1, guard);
        row(x.data() + start, got.data(), n);
        scalar(x.data() + start, want.data(), n);
        EXPECT_EQ(got[n], guard) << "past the end, n = " << n;
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[start + i];
          if (got[i] == want[i]) continue;
          EXPECT_TRUE(std::fpclassify(v) == FP_SUBNORMAL &&
                      got[i] == (std::signbit(v) ? 0x8000 : 0))
              << "x = " << v << " at " << i << " of " << n << ": " << got[i] << " against "
              << want[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace kora
