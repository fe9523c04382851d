// Automatic partitioning (include/kora/partition.h): the DAG's nodes are in topological
// order, so any position i splits it into nodes before i and from i on, with every edge
// crossing forward. live(i) counts the values crossing: nodes before i with a successor
// at or after i. From the start of the current segment, the cut goes at the position
// in [start + min_size, start + max_size] with the fewest crossing values, the latest
// such position on ties (larger segments, fewer cuts). A range of the DAG (a segment split
// again) is cut the same way.
#include "kora/partition.h"

#include <algorithm>
#include <set>

#include "kora/error.h"

namespace kora {

std::vector<Segment> partition_dag(const KernelDag& dag, const PartitionOptions& options) {
  std::vector<Segment> segments = partition_range(dag, 0, dag.size(), options);
  if (options.hard.empty()) return segments;
  // Known hard segments in halves, and their halves again where those are known hard.
  const std::set<std::pair<int, int>> hard(options.hard.begin(), options.hard.end());
  std::vector<Segment> cut;
  while (!segments.empty()) {
    const Segment s = segments.back();
    segments.pop_back();
    if (!hard.count({s.begin, s.end}) || s.end - s.begin < 2 * options.min_size) {
      cut.push_back(s);
      continue;
    }
    const std::vector<Segment> pieces = split_in_halves(dag, s, options);
    segments.insert(segments.end(), pieces.begin(), pieces.end());
  }
  std::sort(cut.begin(), cut.end(),
            [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
  return cut;
}

std::vector<Segment> split_in_halves(const KernelDag& dag, const Segment& segment,
                                     const PartitionOptions& options) {
  PartitionOptions halves = options;
  halves.max_size = std::max(options.min_size, (segment.end - segment.begin + 1) / 2);
  return partition_range(dag, segment.begin, segment.end, halves);
}

std::vector<Segment> partition_range(const KernelDag& dag, int begin, int end,
                                     const PartitionOptions& options) {
  if (options.min_size < 1 || options.max_size < options.min_size)
    throw Error("partition: need 1 <= min_size <= max_size");
  if (begin < 0 || end > dag.size() || begin > end) throw Error("partition: range out of the DAG");
  const int all = dag.size(), n = end;
  // live[i] for i in [0, all]: values produced before i and read at or after i.
  std::vector<int> delta(all + 2, 0);
  for (int v = 0; v < all; ++v) {
    if (dag.succ[v].empty()) continue;
    const int last = dag.succ[v].back();
    delta[v + 1] += 1;     // live from position v + 1 ...
    delta[last + 1] -= 1;  // ... through position last
  }
  std::vector<int> live(all + 1, 0);
  for (int i = 1; i <= all; ++i) live[i] = live[i - 1] + delta[i];

  std::vector<Segment> segments;
  int start = begin;
  while (start < n) {
    if (n - start <= options.max_size) {
      segments.push_back({start, n, live[start]});
      break;
    }
    int best = start + options.min_size;
    const int hi = std::min(n - 1, start + options.max_size);
    for (int i = best; i <= hi; ++i)
      if (live[i] <= live[best]) best = i;
    segments.push_back({start, best, live[start]});
    start = best;
  }
  return segments;
}

}  // namespace kora
