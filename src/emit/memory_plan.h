// Memory planning: places every intermediate buffer of an execution plan at an offset in
// one arena so that buffers alive at the same time never share bytes. In: each buffer's
// size and the steps during which it is live; out: aligned offsets and the arena size.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace kora {

// A buffer of `bytes` bytes, live during steps [first, last] inclusive.
struct BufferLifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // one per buffer, a multiple of the alignment
  int64_t arena_bytes = 0;       // max over buffers of offset + aligned size
  int64_t total_bytes = 0;       // sum of aligned sizes: the arena without any reuse
  int64_t peak_live_bytes = 0;   // max over steps of the aligned sizes live: a lower bound
};

// Each size is rounded up to `alignment` (> 0). Buffers are placed largest first (ties:
// longer lifetime first, then earlier), each at the lowest aligned offset where it
// overlaps no already placed buffer whose lifetime intersects its own, or that
// `also_live(a, b)` says may be live with it (kernels that run side by side: buffers of
// disjoint steps that are not ordered in every run). Zero-byte buffers get offset 0 and
// take no space. O(n^2) time. Throws kora::Error on a negative size, first > last, or
// alignment <= 0.
MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, int64_t alignment = 64,
                       const std::function<bool(size_t, size_t)>& also_live = nullptr);

}  // namespace kora
