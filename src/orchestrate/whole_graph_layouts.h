// The whole-graph layout pass. orchestrate() solves each segment on its own, so a tensor
// that crosses a cut is stored plain: the segment writing it cannot know how later ones
// read it (a dense block's concatenations read every earlier layer's output, across many
// cuts, and paid a reorder on each side of each). And a segment's program gives a layout
// only to tensors some native implementation stores; passing layouts along views and
// agnostic kernels there (layout_problem.h) made CBC 3-6x slower on ResNet-50's segments
// for no gain in their plans. In: the whole graph's DAG, every segment's chosen kernels
// (OrchestrationResult), the cost model. Out: the same kernels, with the blocked tensors
// and native implementations chosen over the whole graph at once, layouts passed along:
// the program of include/kora/orchestrate.h over the chosen kernels only (no other
// candidate, so only their layout terms are free), kept when it is cheaper than the
// segments' choices together. The kernels stay each segment's proven choice, except that a
// reshape of unit dims between two kernels may move from one to the other (the same work:
// a pool writing [N, C, H, W, 1, 1] for the convolution after it to reshape can write [N,
// C, H, W], which both can store blocked); otherwise only where tensors are stored, and so
// the reorders, change.
#pragma once

#include "kora/cost.h"
#include "kora/orchestrate.h"
#include "kora/orchestration.h"

namespace kora {

struct WholeGraphLayouts {
  bool applied = false;
  double saved_ms = 0;              // predicted: the segments' total minus the pass's
  int64_t cut_tensors_blocked = 0;  // tensors crossing a segment cut, stored blocked
  int64_t reshapes_moved = 0;       // kernels that gained or lost a unit-dims reshape
  double solve_seconds = 0;
};

// Updates result.layouts, each kernel's `native` and total_cost_ms when applied.
WholeGraphLayouts whole_graph_layouts(const PrimGraph& graph, const KernelDag& dag,
                                      CostModel& costs, const SolveOptions& solve,
                                      OrchestrationResult& result);

}  // namespace kora
