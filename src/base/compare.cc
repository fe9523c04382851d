// The correctness rule of src/base/compare.h: (got, want) pairs accumulated into a relative
// L2 error and the first non-finite disagreement; a comparison turned into the one-line
// reason a profiler stores.
#include "base/compare.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace kora {

void ElementComparison::add(int64_t index, double got, double want) {
  if (std::isfinite(want) && std::isfinite(got)) {
    difference_ += (got - want) * (got - want);
    norm_ += want * want;
    return;
  }
  // At least one is not finite: they match only as NaN and NaN or as the same infinity.
  const bool same = std::isnan(want) ? std::isnan(got) : got == want;
  if (!same && mismatch_index_ < 0) {
    mismatch_index_ = index;
    mismatch_got_ = got;
    mismatch_want_ = want;
  }
}

double ElementComparison::relative_error() const {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (norm_ == 0) return difference_ == 0 ? 0 : kInfinity;
  const double error = std::sqrt(difference_) / std::sqrt(norm_);
  return std::isnan(error) ? kInfinity : error;  // both sums overflowed
}

bool ElementComparison::within(double tolerance) const {
  return !mismatched() && relative_error() <= tolerance;
}

std::string comparison_failure(const ElementComparison& c, double tolerance,
                               const std::string& subject, const std::string& reference) {
  if (c.within(tolerance)) return "";
  const std::string prefix = subject.empty() ? "" : subject + " ";
  if (c.mismatched())
    return prefix + "element " + std::to_string(c.mismatch_index()) + " is " +
           std::to_string(c.mismatch_got()) + ", the " + reference + "'s " +
           std::to_string(c.mismatch_want());
  std::ostringstream os;
  os << prefix << "relative L2 error " << c.relative_error() << " (tolerance " << tolerance << ")";
  return os.str();
}

}  // namespace kora
