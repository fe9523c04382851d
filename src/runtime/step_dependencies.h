// Which kernels of a plan must wait for which, from the memory they touch (the CUDA
// runtime's graph of real dependencies; issue 27). In: per step of the plan, in the plan's
// order, the byte ranges it reads and those it writes (device addresses: weights, arena,
// inputs, outputs, its library workspace). Out: per step, the earlier steps it must follow:
// every pair where one writes what the other reads or writes (a true dependence, or the
// arena or a workspace reused), transitively reduced, so that no listed step is reachable
// through another listed one. Running the steps in any order that keeps these gives the
// plan's serial result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kora {

struct ByteRange {
  uint64_t begin = 0, end = 0;  // [begin, end)
};

struct StepAccess {
  std::vector<ByteRange> reads, writes;
};

// after[j]: the steps before j that j waits for, in increasing order.
std::vector<std::vector<size_t>> step_dependencies(const std::vector<StepAccess>& steps);

// The number of steps on the longest chain of `after` (0 for no steps).
size_t longest_chain(const std::vector<std::vector<size_t>>& after);

}  // namespace kora
