// Automatic partitioning: a KernelDag in, consecutive node ranges (segments) out, cut
// where few values cross, so that each segment's orchestration problem stays small. No
// per-model configuration: segment sizes come from the options' bounds.
//
// A kernel cannot span two segments, so the partitioned optimum can be above the
// whole-graph optimum: by what fusing across a cut would have saved. Cuts prefer
// positions where one value crosses; a cut right after an opaque primitive (which is
// a kernel of its own) loses nothing.
#pragma once

#include <utility>
#include <vector>

#include "kora/kernel_dag.h"

namespace kora {

struct Segment {
  int begin = 0, end = 0;  // nodes [begin, end)
  int live_in = 0;         // values produced before `begin` and read at or after it
};

struct PartitionOptions {
  // Segments of up to 100 primitives (a few thousand candidates) are solved to proven
  // optimality in at most ~1.3 s each on every zoo model (docs/benchmarks.md); at 300,
  // a Segformer segment is not proven within a minute. Larger segments lose less at
  // the cuts, but only by 0.0-0.4% of the plan cost on the zoo.
  int min_size = 12;   // a segment has at least this many nodes (except a short graph)
  int max_size = 100;  // and at most this many
  // A segment whose optimum is not proven within this many seconds is cut into halves
  // (partition_range with max_size half its size), each solved with the full time limit:
  // the plan is then proven optimal for the finer partition. 0: never split; negative:
  // split every segment of at least 2 min_size without trying it whole. Recurrent
  // networks' layer ends (many values crossing, thousands of candidates) need it.
  double split_after_seconds = 5;
  // Segments ([begin, end) node ranges) that an earlier solve of the same graph could not
  // prove within split_after_seconds: partition_dag cuts them in halves at once, so that
  // a graph solved many times (measure on demand, the check's rounds) does not spend
  // split_after_seconds on each of them again, and every solve (and the kernels measured
  // for it) sees the same segments. OrchestrationResult::hard_segments adds to it.
  std::vector<std::pair<int, int>> hard;
};

std::vector<Segment> partition_dag(const KernelDag& dag, const PartitionOptions& options = {});
// A segment cut in halves: partition_range with max_size half its size (at least
// min_size); a segment of at least 2 min_size nodes always makes two or more pieces.
std::vector<Segment> split_in_halves(const KernelDag& dag, const Segment& segment,
                                     const PartitionOptions& options);
// The nodes [begin, end) of the DAG cut the same way: a segment split into smaller ones.
std::vector<Segment> partition_range(const KernelDag& dag, int begin, int end,
                                     const PartitionOptions& options);

}  // namespace kora
