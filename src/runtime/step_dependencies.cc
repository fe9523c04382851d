// The plan's steps as a DAG of memory dependences (src/runtime/step_dependencies.h): byte
// ranges read and written per step in; per step, the earlier steps it waits for out,
// transitively reduced with reachability bitsets (a few hundred steps: a few kilobytes).
#include "runtime/step_dependencies.h"

#include <algorithm>

namespace kora {

namespace {

bool overlap(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (x.begin < y.end && y.begin < x.end && x.begin < x.end && y.begin < y.end) return true;
  return false;
}

// Whether step j must follow step i (i before j): either writes what the other touches.
bool conflict(const StepAccess& i, const StepAccess& j) {
  return overlap(j.writes, i.reads) || overlap(j.writes, i.writes) || overlap(j.reads, i.writes);
}

}  // namespace

std::vector<std::vector<size_t>> step_dependencies(const std::vector<StepAccess>& steps) {
  const size_t n = steps.size(), words = (n + 63) / 64;
  // reach[j]: every step j waits for, directly or not.
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  std::vector<std::vector<size_t>> after(n);
  for (size_t j = 0; j < n; ++j) {
    // A step implied by another is earlier than it: visit the latest first, keep those not
    // yet reached.
    for (size_t i = j; i-- > 0;) {
      if (reach[j][i / 64] >> (i % 64) & 1) continue;
      if (!conflict(steps[i], steps[j])) continue;
      after[j].push_back(i);
      reach[j][i / 64] |= uint64_t{1} << (i % 64);
      for (size_t w = 0; w < words; ++w) reach[j][w] |= reach[i][w];
    }
    std::reverse(after[j].begin(), after[j].end());
  }
  return after;
}

size_t longest_chain(const std::vector<std::vector<size_t>>& after) {
  std::vector<size_t> depth(after.size(), 1);
  size_t longest = 0;
  for (size_t j = 0; j < after.size(); ++j) {
    for (size_t i : after[j]) depth[j] = std::max(depth[j], depth[i] + 1);
    longest = std::max(longest, depth[j]);
  }
  return longest;
}

}  // namespace kora
