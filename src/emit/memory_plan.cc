// Interval packing of buffer lifetimes into one arena (src/emit/memory_plan.h): sizes and
// live step ranges in, offsets and arena size out. Placed buffers are kept sorted by
// offset, so placing one more is a single first-fit scan over them.
#include "emit/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "kora/error.h"

namespace kora {
namespace {

bool lifetimes_intersect(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

struct Placed {
  int64_t begin, end;  // [begin, end) in the arena, aligned
  size_t buffer;
};

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, int64_t alignment,
                       const std::function<bool(size_t, size_t)>& also_live) {
  if (alignment <= 0) throw Error("memory plan: alignment " + std::to_string(alignment));
  std::vector<int64_t> size(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLifetime& b = buffers[i];
    if (b.bytes < 0 || b.bytes > std::numeric_limits<int64_t>::max() / 2 - alignment)
      throw Error("memory plan: buffer " + std::to_string(i) + " has " + std::to_string(b.bytes) +
                  " bytes");
    if (b.first > b.last)
      throw Error("memory plan: buffer " + std::to_string(i) + " is live from step " +
                  std::to_string(b.first) + " to step " + std::to_string(b.last));
    size[i] = (b.bytes + alignment - 1) / alignment * alignment;
  }

  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);

  // Peak of live bytes: +size at `first`, -size after `last`; ends sort before starts.
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, delta)
  for (size_t i = 0; i < buffers.size(); ++i) {
    plan.total_bytes += size[i];
    if (size[i] == 0) continue;
    events.push_back({buffers[i].first, size[i]});
    events.push_back({static_cast<int64_t>(buffers[i].last) + 1, -size[i]});
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0;
  for (const auto& [step, delta] : events) {
    live += delta;
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
  }

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = buffers[a].last - buffers[a].first, lb = buffers[b].last - buffers[b].first;
    if (size[a] != size[b]) return size[a] > size[b];
    if (la != lb) return la > lb;
    if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
    return a < b;
  });

  std::vector<Placed> placed;  // sorted by begin
  for (size_t i : order) {
    if (size[i] == 0) continue;
    // First fit: the lowest offset below every conflicting buffer's start or after its end.
    int64_t offset = 0;
    for (const Placed& p : placed) {
      if (!lifetimes_intersect(buffers[p.buffer], buffers[i]) &&
          !(also_live && also_live(p.buffer, i)))
        continue;
      if (offset + size[i] <= p.begin) break;
      offset = std::max(offset, p.end);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size[i]);
    const Placed next{offset, offset + size[i], i};
    placed.insert(
        std::upper_bound(placed.begin(), placed.end(), next,
                         [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
        next);
  }
  return plan;
}

}  // namespace kora
