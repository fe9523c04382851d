// Automatic partitioning: a KernelDag in, consecutive node ranges (segments) out, cut
// where few values cross, so that each segment's orchestration problem stays small. No
// per-model configuration: segment sizes come from the options' bounds.
//
// A kernel cannot span two segments, so the partitioned optimum can be above the
// whole-graph optimum: by what fusing across a cut would have saved. Cuts prefer
// positions where one value crosses; a cut right after an opaque primitive (which is
// a kernel of its own) loses nothing.
#pragma once

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
};

std::vector<Segment> partition_dag(const KernelDag& dag, const PartitionOptions& options = {});

}  // namespace kora
