// The plan report page (src/report/html_page.h): the report's data and the graph's SVG in;
// one HTML document out, every part inline. Sections in page order: header, notes, totals,
// where the time goes, graph with details, kernel table; then the kernels as JSON and the
// script (src/report/page_assets.h).
#include "report/html_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "report/page_assets.h"
#include "report/plan_dot.h"

namespace kora {
namespace {

using json = nlohmann::json;

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

std::string percent(double part, double whole) {
  return whole > 0 ? fixed(100 * part / whole, 1) + "%" : "";
}

// The plan's total as shown: the report's in-plan sum when measured, else predicted.
double shown_total(const PlanReportData& d) {
  double total = 0;
  for (const ReportKernel& k : d.kernels) total += d.shown_ms(k);
  return total;
}

std::string chip(const std::string& impl) {
  const ImplColour c = impl_colour(impl);
  return fmt::format("<span class=\"chip\" style=\"background:{};border-color:{}\"></span>", c.fill,
                     c.stroke);
}

std::string header(const PlanReportData& d) {
  const Manifest& m = d.manifest;
  std::string optimal;
  if (m.strategy == "optimal")
    optimal = m.proven_optimal ? ", proven optimal"
              : d.plan ? ", not proven optimal (gap " + format_ms(d.plan->summary.gap_ms) + ")"
                       : ", not proven optimal";
  std::string s = "<header>\n<h1>kora plan: " + esc(m.model) + "</h1>\n";
  s += fmt::format(
      "<p class=\"sub\">{} {} plan{}: {} kernels over {} primitives, predicted {}</p>\n",
      esc(m.target), esc(m.strategy), esc(optimal), d.kernels.size(),
      d.plan ? std::to_string(d.plan->primitives.size()) : std::string("?"),
      format_ms(m.predicted_ms));
  s += "<dl class=\"meta\">";
  s += "<dt>artifact</dt><dd>" + esc(d.artifact_dir) + "</dd>";
  s += "<dt>compiled for</dt><dd>" + esc(m.device) + "</dd>";
  if (m.target == "cuda") s += "<dt>architecture</dt><dd>" + esc(m.arch) + "</dd>";
  s += fmt::format("<dt>threads</dt><dd>{}</dd>", m.threads);
  s += fmt::format(
      "<dt>memory</dt><dd>activations {:.1f} MB in one arena (intermediates {:.1f} MB), "
      "weights {:.1f} MB</dd>",
      static_cast<double>(m.arena_bytes) / 1e6, static_cast<double>(m.intermediate_bytes) / 1e6,
      static_cast<double>(m.weights_bytes) / 1e6);
  return s + "</dl>\n</header>\n";
}

std::string notes(const PlanReportData& d, const GraphView& g) {
  std::vector<std::pair<std::string, bool>> items;  // (text, warning)
  if (!d.plan_missing.empty())
    items.push_back({"Primitive detail missing: " + d.plan_missing +
                         ". The graph shows one node per kernel, joined by the tensors they read "
                         "and write; baselines and the compile's measurements are not known.",
                     true});
  if (!g.note.empty()) items.push_back({g.note, true});
  if (d.measured_busy)
    items.push_back(
        {"Other processes used the CPU while kora report measured the kernels: the "
         "in-plan times below may be inflated (run it again on a quiet machine).",
         true});
  if (!d.measured)
    items.push_back(
        {(d.measure_note.empty() ? std::string("In-plan times not measured") : d.measure_note) +
             "; times below are the compile's predictions.",
         true});
  if (d.plan)
    for (const std::string& n : d.plan->summary.notes) items.push_back({"Compile: " + n, false});
  if (items.empty()) return "";
  std::string s = "<section id=\"notes\">\n<h2>Notes</h2>\n<ul class=\"notes\">\n";
  for (const auto& [text, warning] : items)
    s += std::string("<li") + (warning ? "" : " class=\"info\"") + ">" + esc(text) + "</li>\n";
  return s + "</ul>\n</section>\n";
}

std::string card(const std::string& value, const std::string& what) {
  return "<div class=\"card\"><div class=\"v\">" + esc(value) + "</div><div class=\"k\">" +
         esc(what) + "</div></div>";
}

std::string totals(const PlanReportData& d) {
  const Manifest& m = d.manifest;
  const PlanSummary* summary = d.plan ? &d.plan->summary : nullptr;
  std::string s = "<section id=\"totals\">\n<h2>Plan totals</h2>\n<div class=\"cards\">";
  s += card(format_ms(m.predicted_ms), "predicted (sum of its kernels' costs)");
  if (d.measured)
    s += card(format_ms(d.in_plan_total_ms), "in plan, measured now (sum of kernels)");
  if (summary && summary->emitted >= 0)
    s += card(format_ms(summary->checked[static_cast<size_t>(summary->emitted)].measured_ms),
              "end to end, measured at compile");
  s += card(std::to_string(d.kernels.size()), "kernels");
  s += "</div>\n<table>\n";
  if (summary && !summary->checked.empty()) {
    const PlanCheck& emitted = summary->checked[static_cast<size_t>(std::max(0, summary->emitted))];
    s += "<thead><tr><th>plan</th><th class=\"n\">kernels</th><th class=\"n\">predicted</th>"
         "<th class=\"n\">in plan (compile)</th><th class=\"n\">measured end to end</th>"
         "<th class=\"n\">time vs emitted</th></tr></thead>\n<tbody>\n";
    for (size_t i = 0; i < summary->checked.size(); ++i) {
      const PlanCheck& c = summary->checked[i];
      const bool is_emitted = static_cast<int>(i) == summary->emitted;
      s += std::string("<tr") + (is_emitted ? " class=\"emitted\"" : "") + "><td>" + esc(c.label) +
           (is_emitted ? "<span class=\"badge\">emitted</span>" : "") + "</td>";
      if (!c.error.empty()) {
        s += "<td colspan=\"5\">not run here: " + esc(c.error) + "</td></tr>\n";
        continue;
      }
      s += fmt::format(
          "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
          "class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
          c.kernels, format_ms(c.predicted_ms), format_ms(c.in_plan_ms), format_ms(c.measured_ms),
          emitted.measured_ms > 0 ? fixed(c.measured_ms / emitted.measured_ms, 2) + "x" : "");
    }
    for (const char* baseline : {"greedy", "unfused"})
      if (std::none_of(summary->checked.begin(), summary->checked.end(),
                       [&](const PlanCheck& c) { return c.label == baseline; }))
        s += std::string("<tr><td>") + baseline +
             "</td><td colspan=\"5\">the same plan as one above (measured once)</td></tr>\n";
    s +=
        "</tbody>\n</table>\n<p class=\"foot\">Checked on the clock by kora compile: each plan run "
        "end to end in turn (median latency); predicted is the solver's when it chose the plan, "
        "in plan the sum of its kernels' times inside it. The fastest on the clock is "
        "emitted.</p>\n";
  } else {
    s += "<thead><tr><th>plan</th><th class=\"n\">kernels</th><th class=\"n\">predicted</th>"
         "<th class=\"n\">measured end to end</th><th class=\"n\">predicted vs this plan</th>"
         "</tr></thead>\n<tbody>\n";
    s += fmt::format(
        "<tr class=\"emitted\"><td>{}<span class=\"badge\">emitted</span></td><td "
        "class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">not measured</td><td "
        "class=\"n\">1.00x</td></tr>\n",
        esc(m.strategy), d.kernels.size(), format_ms(m.predicted_ms));
    if (d.plan)
      for (const PlanBaseline& b : d.plan->baselines)
        s += fmt::format(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">not "
            "measured</td><td class=\"n\">{}</td></tr>\n",
            esc(b.strategy), b.kernels, format_ms(b.predicted_ms),
            m.predicted_ms > 0 ? fixed(b.predicted_ms / m.predicted_ms, 2) + "x" : "");
    s += "</tbody>\n</table>\n<p class=\"foot\">";
    s += d.plan ? (d.plan->baselines.empty() && m.strategy != "optimal"
                       ? "Baselines are predicted for optimal plans only. "
                       : "Greedy and unfused are predicted at the same costs as this plan. ")
                : "Baselines unknown: the artifact has no plan.json. ";
    s += "Not checked on the clock at compile (compiled with --no-measure or --no-verify, or the "
         "target does not measure here).</p>\n";
  }
  if (d.measured)
    s += "<p class=\"foot\">Measured now by kora report: " + esc(d.measure_note) + ".</p>\n";
  return s + "</section>\n";
}

std::string time_breakdown(const PlanReportData& d) {
  const double total = shown_total(d);
  std::string s = "<section id=\"time\">\n<h2>Where the time goes</h2>\n<p class=\"sub\">";
  s += d.measured ? "Each kernel's time inside the running plan, measured now (" +
                        esc(d.measure_note) + "); the black mark is its predicted cost."
                  : std::string("Each kernel's predicted cost (in-plan times not measured).");
  s += fmt::format(" Total {}.</p>\n", format_ms(total));

  std::map<std::string, std::pair<double, int>> by_impl;  // impl -> (ms, kernels)
  for (const ReportKernel& k : d.kernels) {
    by_impl[k.info.impl].first += d.shown_ms(k);
    ++by_impl[k.info.impl].second;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> impls(by_impl.begin(), by_impl.end());
  std::sort(impls.begin(), impls.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  s += "<div class=\"stack\" id=\"by-impl\">";
  for (const auto& [impl, v] : impls) {
    const ImplColour c = impl_colour(impl);
    s +=
        fmt::format("<div style=\"width:{:.3f}%;background:{}\" title=\"{}: {}\"></div>",
                    total > 0 ? 100 * v.first / total : 0, c.stroke, esc(impl), format_ms(v.first));
  }
  s += "</div>\n<div class=\"legend\">";
  for (const auto& [impl, v] : impls)
    s += "<span>" + chip(impl) + esc(impl) +
         fmt::format(": {} kernel{}, {} ({})", v.second, v.second == 1 ? "" : "s",
                     format_ms(v.first), percent(v.first, total)) +
         "</span>";
  s += "</div>\n";

  std::vector<size_t> order(d.kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return d.shown_ms(d.kernels[a]) > d.shown_ms(d.kernels[b]);
  });
  double largest = 0;
  for (const ReportKernel& k : d.kernels)
    largest = std::max({largest, d.shown_ms(k), d.measured ? k.info.predicted_ms : 0.0});
  const size_t shown = std::min<size_t>(order.size(), 30);
  s += "<div class=\"bars\" id=\"by-kernel\">\n";
  for (size_t r = 0; r < shown; ++r) {
    const size_t i = order[r];
    const ReportKernel& k = d.kernels[i];
    const ImplColour c = impl_colour(k.info.impl);
    const double v = d.shown_ms(k);
    const std::string first = k.primitives.empty() ? "" : k.primitives.front();
    s += fmt::format("<div class=\"lbl\" data-kernel=\"{}\" title=\"{}\">k{} {} &middot; {}</div>",
                     i, esc(k.info.impl + ": " + first), i, esc(k.info.impl), esc(first));
    s += fmt::format(
        "<div class=\"track\" data-kernel=\"{}\"><div class=\"bar\" "
        "style=\"width:{:.2f}%;background:{};border-color:{}\"></div>",
        i, largest > 0 ? 100 * v / largest : 0, c.fill, c.stroke);
    if (d.measured && largest > 0)
      s += fmt::format("<div class=\"pred\" style=\"left:{:.2f}%\" title=\"predicted {}\"></div>",
                       std::min(99.5, 100 * k.info.predicted_ms / largest),
                       format_ms(k.info.predicted_ms));
    s += "</div><div class=\"val\">" + format_ms(v) + " &middot; " + percent(v, total) +
         (d.measured ? " (predicted " + format_ms(k.info.predicted_ms) + ")" : std::string()) +
         "</div>\n";
  }
  s += "</div>\n";
  if (shown < order.size()) {
    double rest = 0;
    for (size_t r = shown; r < order.size(); ++r) rest += d.shown_ms(d.kernels[order[r]]);
    s += fmt::format(
        "<p class=\"foot\">{} more kernels: {} ({}); all of them in the table "
        "below.</p>\n",
        order.size() - shown, format_ms(rest), percent(rest, total));
  }
  return s + "</section>\n";
}

std::string graph_section(const PlanReportData& d, const GraphView& g) {
  std::map<std::string, int> impls;
  for (const ReportKernel& k : d.kernels) ++impls[k.info.impl];
  std::string s = "<section id=\"plan-graph\">\n<div class=\"graph-head\"><h2>";
  s += g.primitives ? "Primitive graph, one group per kernel" : "Kernel graph, one node per kernel";
  s += "</h2><div class=\"legend\">";
  for (const auto& [impl, n] : impls) s += "<span>" + chip(impl) + esc(impl) + "</span>";
  s += "</div><div class=\"tools\"><button id=\"zoom-out\">&minus;</button> <button "
       "id=\"zoom-fit\">fit</button> <button id=\"zoom-1\">100%</button> <button "
       "id=\"zoom-in\">+</button></div></div>\n";
  s += "<div class=\"graph-wrap\"><div id=\"graph\">\n" + g.svg +
       "\n</div><aside id=\"details\"></aside></div>\n";
  s += fmt::format(
      "<p class=\"foot\">Top to bottom in data-flow order; {}. Layout by Graphviz dot "
      "({:.1f} s).</p>\n",
      g.primitives ? "a primitive computed by several kernels is drawn in each; constants are not "
                     "drawn"
                   : "edges are the tensors kernels write and read",
      g.dot_seconds);
  return s + "</section>\n";
}

std::string kernel_table(const PlanReportData& d) {
  std::string s =
      "<section>\n<h2>Kernels in run order</h2>\n<div class=\"scroll\"><table "
      "id=\"kernels\">\n<thead><tr>"
      "<th class=\"n\">#</th><th>implementation</th><th>schedule</th><th>primitives</th>"
      "<th class=\"n\">predicted</th><th class=\"n\">in plan</th><th class=\"n\">in plan / "
      "predicted</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const ReportKernel& k = d.kernels[i];
    std::string names;
    for (const std::string& p : k.primitives) names += (names.empty() ? "" : ", ") + p;
    const bool in_plan = k.in_plan_ms >= 0;
    s += fmt::format(
        "<tr data-kernel=\"{0}\"><td class=\"n\" data-v=\"{0}\">k{0}</td><td data-v=\"{1}\">{2}{1}"
        "</td><td class=\"sched\" data-v=\"{3}\">{3}</td><td class=\"prims\" data-v=\"{4}\" "
        "title=\"{5}\">{4}: "
        "{5}</td><td class=\"n\" data-v=\"{6}\">{7}</td><td class=\"n\" data-v=\"{8}\">{9}</td>"
        "<td class=\"n\" data-v=\"{10}\">{11}</td></tr>\n",
        i, esc(k.info.impl), chip(k.info.impl), esc(k.info.schedule), k.primitives.size(),
        esc(names), k.info.predicted_ms, format_ms(k.info.predicted_ms),
        in_plan ? k.in_plan_ms : -1, in_plan ? format_ms(k.in_plan_ms) : "&mdash;",
        in_plan && k.info.predicted_ms > 0 ? k.in_plan_ms / k.info.predicted_ms : -1,
        in_plan && k.info.predicted_ms > 0 ? fixed(k.in_plan_ms / k.info.predicted_ms, 2) + "x"
                                           : "&mdash;");
  }
  return s + "</tbody>\n</table></div>\n</section>\n";
}

// The kernels' details for the script; "<" escaped so that no "</script>" can end it.
std::string page_json(const PlanReportData& d) {
  std::map<std::string, const PlanPrimitive*> prims;
  if (d.plan)
    for (const PlanPrimitive& p : d.plan->primitives) prims[p.name] = &p;
  json j;
  j["kernels"] = json::array();
  size_t slowest = 0;
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const ReportKernel& k = d.kernels[i];
    if (d.shown_ms(k) > d.shown_ms(d.kernels[slowest])) slowest = i;
    json names = json::array();
    for (const std::string& p : k.primitives) {
      const auto it = prims.find(p);
      names.push_back(
          it == prims.end()
              ? json::array({p, "", ""})
              : json::array({p, it->second->op.empty() ? it->second->kind : it->second->op,
                             it->second->type}));
    }
    j["kernels"].push_back({{"impl", k.info.impl},
                            {"schedule", k.info.schedule},
                            {"signature", k.info.signature},
                            {"predicted_ms", k.info.predicted_ms},
                            {"in_plan_ms", k.in_plan_ms >= 0 ? json(k.in_plan_ms) : json(nullptr)},
                            {"shown_ms", d.shown_ms(k)},
                            {"blocked", k.info.blocked},
                            {"native", k.info.native},
                            {"prims", names},
                            {"reads", k.reads},
                            {"writes", k.writes}});
  }
  j["total_ms"] = shown_total(d);
  j["slowest"] = d.kernels.empty() ? -1 : static_cast<int>(slowest);
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

}  // namespace

std::string plan_report_html(const PlanReportData& d, const GraphView& g) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += "<title>kora plan: " + esc(d.manifest.model) + "</title>\n";
  s += std::string("<script>") + kReportErrorHook + "</script>\n";
  s += std::string("<style>") + kReportStyle + "</style>\n</head>\n";
  s += fmt::format(
      "<body data-report-errors=\"0\" data-kernel-groups=\"-1\" data-kernels=\"{}\" "
      "data-graph=\"{}\" data-measured=\"{}\">\n<main>\n",
      d.kernels.size(), g.primitives ? "primitives" : "kernels", d.measured ? 1 : 0);
  s += header(d);
  s += notes(d, g);
  s += totals(d);
  s += time_breakdown(d);
  s += graph_section(d, g);
  s += kernel_table(d);
  s += "<p class=\"foot\">Written by kora report.</p>\n</main>\n";
  s += "<script type=\"application/json\" id=\"kora-data\">" + page_json(d) + "</script>\n";
  s += std::string("<script>") + kReportScript + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace kora
