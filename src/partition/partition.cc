// Automatic partitioning (include/kora/partition.h): the DAG's nodes are in topological
// order, so any position i splits it into nodes before i and from i on, with every edge
// crossing forward. live(i) counts the values crossing: nodes before i with a successor
// at or after i. From the start of the current segment, the cut goes at the position
// in [start + min_size, start + max_size] with the fewest crossing values, the latest
// such position on ties (larger segments, fewer cuts). A range of the DAG (a segment split
// again) is cut the same way.
#include "kora/partition.h"

#include <algorithm>

#include "kora/error.h"

namespace kora {

std::vector<Segment> partition_dag(const KernelDag& dag, const PartitionOptions& options) {
  return partition_range(dag, 0, dag.size(), options);
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
