// The layout terms of one orchestration problem: a sub-DAG, its candidates and the cost
// model's layout costs in (CostModel::layout_cost), the LayoutProblem of
// include/kora/orchestrate.h out: each candidate's native option (its sides on nodes
// inside, the reorders it saves per side), whether it is agnostic, its layout views, and
// per node the one layout it may be stored in. Built per segment by orchestrate() and,
// over the whole graph with the chosen kernels only, by the pass that decides layouts
// across segment cuts (whole_graph_layouts.h), which alone passes layouts along views and
// agnostic kernels (`propagate`: in every segment it slowed CBC 3-6x for no gain).
// Layout names get ids in `names`.
#pragma once

#include <string>
#include <vector>

#include "kora/cost.h"
#include "kora/orchestrate.h"
#include "kora/orchestration.h"

namespace kora {

LayoutProblem layout_problem(const PrimGraph& graph, const SegmentCandidates& segment,
                             CostModel& costs, std::vector<std::string>& names, bool propagate);

}  // namespace kora
