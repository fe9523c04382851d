// Internal: the one rule by which kora decides that computed values match reference values,
// for every target: the CPU profiler (a kernel against the interpreter), the CUDA profiler
// (a GPU kernel's probes against the interpreter's) and `kora check` (an artifact against
// onnxruntime). (got, want) element pairs in; the relative L2 error over the elements where
// the reference is finite and the first element where non-finite values disagree out, and
// the one-line message the profilers store for a kernel that does not match.
//
// The rule, per pair:
//   want finite, got finite:  (got - want)^2 joins the difference, want^2 the norm;
//   want NaN:                 got must be NaN (any NaN);
//   want +inf or -inf:        got must be the same infinity;
//   want finite, got not:     a mismatch.
// The relative error is sqrt(difference) / sqrt(norm). A zero norm (no finite element, or
// all finite ones zero) gives 0 when the difference is 0 too and infinity otherwise (a
// nonzero value where the reference is all zeros is infinitely wrong, never "close"); sums
// too large for a double give infinity, never NaN. Values match within `tolerance` when no
// pair mismatches and the relative error is at most `tolerance`.
//
// This header and compare.cc use only the standard library (the CUDA worker links them).
#pragma once

#include <cstdint>
#include <string>

namespace kora {

class ElementComparison {
 public:
  // One pair; `index` is what the messages call the element (a tensor's flat index).
  void add(int64_t index, double got, double want);

  double relative_error() const;
  // Whether some pair disagreed on non-finite values, and the first such pair.
  bool mismatched() const { return mismatch_index_ >= 0; }
  int64_t mismatch_index() const { return mismatch_index_; }
  double mismatch_got() const { return mismatch_got_; }
  double mismatch_want() const { return mismatch_want_; }
  // No mismatch and relative_error() <= tolerance.
  bool within(double tolerance) const;

 private:
  double difference_ = 0, norm_ = 0;  // sums of squares over the finite pairs
  int64_t mismatch_index_ = -1;
  double mismatch_got_ = 0, mismatch_want_ = 0;
};

// Empty when `c` is within `tolerance`; else one line saying why not, after `subject` and a
// space (nothing when `subject` is empty):
//   "SUBJECT element I is G, the REFERENCE's W"     (the first non-finite disagreement)
//   "SUBJECT relative L2 error E (tolerance T)"
// e.g. subject "output 'y'", reference "interpreter".
std::string comparison_failure(const ElementComparison& c, double tolerance,
                               const std::string& subject, const std::string& reference);

}  // namespace kora
