// Internal: the plan report as one self-contained HTML page. In: the report's data
// (src/report/plan_data.h) and the graph drawn by dot (src/report/graphviz.h); out: the
// page's text: the plan and where it came from, notes, totals next to the greedy and
// unfused plans, where the time goes (per implementation and per kernel, inline CSS bars),
// the graph with a details panel, and the kernel table. Style and scripts inline
// (src/report/page_assets.h); the kernels' details as JSON in the page.
#pragma once

#include <string>

#include "report/plan_data.h"

namespace kora {

struct GraphView {
  std::string svg;          // inline <svg> element
  bool primitives = false;  // the primitive graph (else one node per kernel)
  std::string note;         // why the kernel graph is drawn, when it is
  double dot_seconds = 0;   // dot's layout time
};

std::string plan_report_html(const PlanReportData& data, const GraphView& graph);

}  // namespace kora
