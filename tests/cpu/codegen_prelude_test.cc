// Tests of the generated kernels' prelude (src/cpu/codegen_prelude.cc): its branch-free
// float exp, tanh, erf and sigmoid, compiled as kernels are (default flags) in loops over
// arrays, against the C library in double, in units in the last place of the float result,
// over a dense sweep and the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

}  // namespace
}  // namespace kora
