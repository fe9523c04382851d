// Tests of kora's one correctness rule (src/base/compare.h) on hand-computed cases: NaN
// against NaN, infinities of either sign, non-finite against finite values both ways, a
// zero reference, overflowing sums, the tolerance's edge, the stored one-line messages; and
// kora check's relative_l2 (include/kora/check.h), which applies the same rule to tensors,
// and its exact comparison of integer outputs (count_mismatches).
#include "base/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "kora/check.h"
#include "kora/tensor.h"

namespace {

using kora::ElementComparison;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Pairs (got, want) added at indices 0, 1, ...
ElementComparison compare(const std::vector<std::pair<double, double>>& pairs) {
  ElementComparison c;
  for (size_t i = 0; i < pairs.size(); ++i)
    c.add(static_cast<int64_t>(i), pairs[i].first, pairs[i].second);
  return c;
}

TEST(Compare, NanMatchesNan) {
  // The NaN pair counts in neither sum: ||(0, 0.5)|| / ||(3, 4)|| = 0.5 / 5.
  const ElementComparison c = compare({{3, 3}, {kNan, kNan}, {4.5, 4}});
  EXPECT_FALSE(c.mismatched());
  EXPECT_DOUBLE_EQ(c.relative_error(), 0.1);
  EXPECT_TRUE(c.within(0.1));
  EXPECT_EQ(kora::comparison_failure(c, 0.1, "output 'y'", "interpreter"), "");
}

TEST(Compare, InfinityMatchesTheSameInfinity) {
  const ElementComparison c = compare({{kInf, kInf}, {-kInf, -kInf}, {2, 2}});
  EXPECT_FALSE(c.mismatched());
  EXPECT_EQ(c.relative_error(), 0);
  EXPECT_TRUE(c.within(0));
}

TEST(Compare, InfinityOfTheOtherSignMismatches) {
  const ElementComparison c = compare({{1, 1}, {-kInf, kInf}, {kInf, -kInf}});
  ASSERT_TRUE(c.mismatched());
  EXPECT_EQ(c.mismatch_index(), 1);  // the first one
  EXPECT_EQ(c.mismatch_got(), -kInf);
  EXPECT_EQ(c.mismatch_want(), kInf);
  EXPECT_FALSE(c.within(kInf));  // no tolerance accepts it
  EXPECT_EQ(kora::comparison_failure(c, 1e-4, "output 'y'", "interpreter"),
            "output 'y' element 1 is -inf, the interpreter's inf");
}

TEST(Compare, NanWhereTheReferenceIsFiniteMismatches) {
  const ElementComparison c = compare({{2, 2}, {7, 7}, {kNan, 1}});
  ASSERT_TRUE(c.mismatched());
  EXPECT_EQ(c.mismatch_index(), 2);
  EXPECT_EQ(c.relative_error(), 0);  // the finite pairs agree: the mismatch alone fails it
  EXPECT_FALSE(c.within(1e-4));
  EXPECT_EQ(kora::comparison_failure(c, 1e-4, "", "reference"),
            "element 2 is nan, the reference's 1.000000");
  // An infinity where the reference is finite, too.
  EXPECT_TRUE(compare({{kInf, 1e30}}).mismatched());
  EXPECT_TRUE(compare({{-kInf, 0}}).mismatched());
}

TEST(Compare, FiniteWhereTheReferenceIsNotMismatches) {
  EXPECT_TRUE(compare({{1, kNan}}).mismatched());
  EXPECT_TRUE(compare({{0, kInf}}).mismatched());
  EXPECT_TRUE(compare({{1e308, kInf}}).mismatched());
  EXPECT_TRUE(compare({{kNan, kInf}}).mismatched());  // NaN is no infinity
  EXPECT_TRUE(compare({{kInf, kNan}}).mismatched());  // nor the reverse
  const ElementComparison c = compare({{3, 3}, {0.5, kNan}});
  EXPECT_EQ(kora::comparison_failure(c, 1e-4, "output 'y'", "interpreter"),
            "output 'y' element 1 is 0.500000, the interpreter's nan");
}

TEST(Compare, TheFirstMismatchIsKeptByItsGivenIndex) {
  ElementComparison c;
  c.add(17, 1, kNan);
  c.add(40, kNan, 1);
  ASSERT_TRUE(c.mismatched());
  EXPECT_EQ(c.mismatch_index(), 17);
  EXPECT_EQ(c.mismatch_got(), 1);
  EXPECT_TRUE(std::isnan(c.mismatch_want()));
}

TEST(Compare, ZeroReference) {
  // All zeros against all zeros, and no finite element at all: no error.
  EXPECT_EQ(compare({{0, 0}, {0, 0}}).relative_error(), 0);
  EXPECT_TRUE(compare({{0, 0}, {0, 0}}).within(0));
  EXPECT_EQ(compare({{kNan, kNan}}).relative_error(), 0);
  EXPECT_EQ(ElementComparison().relative_error(), 0);
  // Anything else against zeros is infinitely wrong, however small.
  const ElementComparison c = compare({{0, 0}, {1e-30, 0}});
  EXPECT_EQ(c.relative_error(), kInf);
  EXPECT_FALSE(c.mismatched());
  EXPECT_FALSE(c.within(1e300));
  EXPECT_EQ(kora::comparison_failure(c, 1e-4, "output 'y'", "interpreter"),
            "output 'y' relative L2 error inf (tolerance 0.0001)");
}

TEST(Compare, OverflowingSumsAreInfinite) {
  // (1e200 - -1e200)^2 and (1e200)^2 both overflow: infinity, not inf / inf = NaN.
  const ElementComparison c = compare({{1e200, -1e200}});
  EXPECT_EQ(c.relative_error(), kInf);
  EXPECT_FALSE(c.within(1e300));
}

TEST(Compare, ToleranceEdge) {
  // ||(0, 0, 0.5)|| / ||(0, 3, 4)|| = 0.5 / 5 = 0.1 exactly as doubles (0.5 / 5.0 rounds
  // to the double nearest 0.1, which is the literal 0.1).
  const ElementComparison c = compare({{0, 0}, {3, 3}, {4.5, 4}});
  EXPECT_EQ(c.relative_error(), 0.1);
  EXPECT_TRUE(c.within(0.1));  // at the tolerance: within
  EXPECT_FALSE(c.within(std::nextafter(0.1, 0.0)));
  EXPECT_EQ(kora::comparison_failure(c, 0.1, "output 'y'", "interpreter"), "");
  EXPECT_EQ(kora::comparison_failure(c, 0.05, "output 'y'", "interpreter"),
            "output 'y' relative L2 error 0.1 (tolerance 0.05)");
  EXPECT_EQ(kora::comparison_failure(c, 0.05, "probed elements:", "reference"),
            "probed elements: relative L2 error 0.1 (tolerance 0.05)");
  // ||(1, -1)|| / ||(1, 1, 1, 1)|| with the reference (1, 1, 1, 1): sqrt(2) / 2.
  const ElementComparison d = compare({{2, 1}, {0, 1}, {1, 1}, {1, 1}});
  EXPECT_DOUBLE_EQ(d.relative_error(), std::sqrt(2.0) / 2);
}

kora::Tensor floats(const kora::Shape& shape, const std::vector<double>& values) {
  return kora::Tensor::from_double(kora::DType::kFloat32, shape, values);
}

TEST(Compare, KoraCheckAppliesTheRule) {
  const double nan = kNan, inf = kInf;
  const kora::Tensor want = floats({2, 2}, {3, nan, inf, 4});
  EXPECT_DOUBLE_EQ(kora::relative_l2(floats({2, 2}, {3, nan, inf, 4.5}), want), 0.1);
  EXPECT_EQ(kora::relative_l2(want, want), 0);
  EXPECT_EQ(kora::relative_l2(floats({2, 2}, {3, 1, inf, 4}), want), kInf);      // 1 for NaN
  EXPECT_EQ(kora::relative_l2(floats({2, 2}, {3, nan, -inf, 4}), want), kInf);   // sign
  EXPECT_EQ(kora::relative_l2(floats({2, 2}, {nan, nan, inf, 4}), want), kInf);  // NaN for 3
  EXPECT_EQ(kora::relative_l2(floats({4}, {3, nan, inf, 4}), want), kInf);       // shape
  const kora::Tensor zeros = floats({2}, {0, 0});
  EXPECT_EQ(kora::relative_l2(zeros, zeros), 0);
  EXPECT_EQ(kora::relative_l2(floats({2}, {0, 1e-6}), zeros), kInf);
}

TEST(Compare, KoraCheckComparesIntegersExactly) {
  auto int8s = [](const std::vector<int64_t>& v) {
    kora::Tensor t(kora::DType::kInt8, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) kora::set_element_int(t, static_cast<int64_t>(i), v[i]);
    return t;
  };
  const kora::Tensor want = int8s({-128, 0, 127, 5});
  EXPECT_EQ(kora::count_mismatches(want, want), 0);
  EXPECT_EQ(kora::count_mismatches(int8s({-128, 1, 127, 4}), want), 2);  // off by one
  EXPECT_EQ(kora::count_mismatches(int8s({-128, 0, 127}), want), 3);     // shape: all
  kora::Tensor wide(kora::DType::kInt32, {4});
  EXPECT_EQ(kora::count_mismatches(wide, want), 4);  // dtype: all
}

}  // namespace
