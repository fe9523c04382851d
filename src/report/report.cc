// The plan report (include/kora/report.h): an artifact directory in; one HTML page out.
// In order: the data (manifest, plan.json: src/report/plan_data.h), each kernel's in-plan
// time unless asked not to, the graph laid out by dot (src/report/plan_dot.h,
// src/report/graphviz.h: the primitive graph, or one node per kernel when there is no
// plan.json, when it is too large, or when dot runs out of time on it), the page
// (src/report/html_page.h).
#include "kora/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "kora/error.h"
#include "report/graphviz.h"
#include "report/html_page.h"
#include "report/plan_data.h"
#include "report/plan_dot.h"

namespace kora {
namespace {

// dot's time on the primitive graph before the report draws kernels instead.
constexpr double kPrimitiveGraphSeconds = 60;
// ... and on the kernel graph (a few thousand nodes at most: seconds).
constexpr double kKernelGraphSeconds = 600;

GraphView draw_graph(const PlanReportData& data) {
  GraphView view;
  const int nodes = primitive_node_count(data);
  if (data.plan && nodes > kMaxPrimitiveNodes) {
    view.note = fmt::format(
        "The primitive graph would have {} primitive nodes, more than the {} Graphviz lays out "
        "in reasonable time: one node per kernel is drawn instead (each kernel's primitives are "
        "in its details).",
        nodes, kMaxPrimitiveNodes);
  } else if (data.plan) {
    const DotResult r = run_dot(primitive_graph_dot(data), kPrimitiveGraphSeconds);
    view.dot_seconds = r.seconds;
    if (!r.timed_out) {
      view.svg = inline_svg(r.svg);
      view.primitives = true;
      return view;
    }
    view.note = fmt::format(
        "Graphviz did not lay out the primitive graph ({} primitive nodes) within {:.0f} s: one "
        "node per kernel is drawn instead.",
        nodes, kPrimitiveGraphSeconds);
  }
  const DotResult r = run_dot(kernel_graph_dot(data), kKernelGraphSeconds);
  if (r.timed_out)
    throw Error(
        fmt::format("Graphviz's dot did not lay out the kernel graph ({} kernels) within "
                    "{:.0f} s",
                    data.kernels.size(), kKernelGraphSeconds));
  view.svg = inline_svg(r.svg);
  view.dot_seconds += r.seconds;
  return view;
}

}  // namespace

void write_plan_report(const std::string& artifact_dir, const std::string& html_path,
                       const PlanReportOptions& options) {
  PlanReportData data = load_plan_report_data(artifact_dir);
  if (options.measure)
    measure_in_plan(data, options);
  else
    data.measure_note = "In-plan times not measured (kora report --no-measure)";
  const std::string html = plan_report_html(data, draw_graph(data));
  const std::filesystem::path path(html_path);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << html;
  if (!out.flush()) throw Error("cannot write the plan report '" + html_path + "'");
}

}  // namespace kora
