// The plan report page's style sheet and scripts (src/report/page_assets.h): plain CSS and
// plain JavaScript, no library; system fonts only.
#include "report/page_assets.h"

namespace kora {

const char* const kReportStyle = R"css(
:root { --ink: #111827; --muted: #6b7280; --line: #e5e7eb; --bg: #f9fafb; --accent: #2563eb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       color: var(--ink); background: var(--bg); }
main { max-width: 1400px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0 0 10px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px;
          margin-top: 16px; }
.sub { color: var(--muted); margin: 0; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 10px 0 0;
        font-size: 13px; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; word-break: break-all; }
.notes { margin: 0; padding: 0; list-style: none; }
.notes li { border-left: 3px solid #f59e0b; background: #fffbeb; padding: 6px 10px; margin: 6px 0;
            border-radius: 0 4px 4px 0; }
.notes li.info { border-color: #60a5fa; background: #eff6ff; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 14px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 170px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; background: #fafafa; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.emitted td { background: #eff6ff; font-weight: 600; }
.badge { display: inline-block; font-size: 11px; padding: 0 6px; border-radius: 9px;
         background: var(--accent); color: #fff; margin-left: 6px; font-weight: 500; }
.foot { color: var(--muted); font-size: 12px; margin: 8px 0 0; }
.chip { display: inline-block; width: 11px; height: 11px; border-radius: 3px; vertical-align: -1px;
        margin-right: 5px; border: 1px solid; }
.stack { display: flex; height: 22px; border-radius: 5px; overflow: hidden; border: 1px solid var(--line);
         margin: 4px 0 6px; }
.stack div { height: 100%; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; color: #374151; }
.bars { display: grid; grid-template-columns: minmax(120px, max-content) 1fr minmax(150px, max-content);
        gap: 3px 10px; align-items: center; margin-top: 14px; font-size: 12px; }
.bars .lbl { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 360px; cursor: pointer; }
.bars .lbl:hover { color: var(--accent); }
.bars .track { background: #f3f4f6; border-radius: 3px; height: 14px; position: relative; cursor: pointer; }
.bars .bar { height: 100%; border-radius: 3px; border: 1px solid; }
.bars .pred { position: absolute; top: -2px; bottom: -2px; width: 2px; background: #111827; opacity: .55; }
.bars .val { font-variant-numeric: tabular-nums; color: #374151; white-space: nowrap; }
.graph-head { display: flex; align-items: center; justify-content: space-between; gap: 12px;
              flex-wrap: wrap; margin-bottom: 8px; }
.tools button { font: inherit; font-size: 12px; padding: 2px 10px; border: 1px solid var(--line);
                background: #fff; border-radius: 5px; cursor: pointer; }
.tools button:hover { border-color: var(--accent); }
.graph-wrap { display: grid; grid-template-columns: 1fr 340px; gap: 14px; align-items: start; }
#graph { overflow: auto; max-height: 82vh; border: 1px solid var(--line); border-radius: 6px;
         background: #fff; padding: 8px; }
#graph svg { display: block; margin: 0 auto; }
#graph .kernel { cursor: pointer; }
#graph .kernel:hover > polygon, #graph .kernel:hover > path { stroke-width: 2.5; }
#graph .kernel.selected > polygon, #graph .kernel.selected > path { stroke-width: 3.5; stroke: #111827; }
#details { position: sticky; top: 12px; border: 1px solid var(--line); border-radius: 6px; padding: 12px;
           max-height: 82vh; overflow: auto; font-size: 13px; background: #fff; }
#details h3 { margin: 0 0 6px; font-size: 15px; }
#details dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 0 0 8px; }
#details dt { color: var(--muted); }
#details dd { margin: 0; word-break: break-all; }
#details ol, #details ul { margin: 4px 0 8px; padding-left: 20px; }
#details li { margin: 1px 0; word-break: break-all; }
#details .op { color: var(--muted); }
#details .hint { color: var(--muted); }
#kernels th { cursor: pointer; user-select: none; }
#kernels tbody tr { cursor: pointer; }
#kernels tbody tr:hover td { background: #f3f4f6; }
#kernels tr.selected td { background: #dbeafe; }
#kernels td.prims { max-width: 460px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#kernels td.sched { max-width: 240px; word-break: break-all; }
.scroll { overflow-x: auto; }
@media (max-width: 900px) { .graph-wrap { grid-template-columns: 1fr; } #details { position: static; } }
)css";

const char* const kReportErrorHook = R"js(
window.koraErrors = [];
window.onerror = function (message, source, line) {
  window.koraErrors.push(String(message) + " (line " + line + ")");
  if (document.body) {
    document.body.setAttribute("data-report-errors", String(window.koraErrors.length));
    document.body.setAttribute("data-report-error-messages", window.koraErrors.join(" | "));
  }
};
)js";

const char* const kReportScript = R"js(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("kora-data").textContent);
  var body = document.body;
  var graph = document.getElementById("graph");
  var details = document.getElementById("details");
  var svg = graph.querySelector("svg");
  var groups = {};
  var found = graph.querySelectorAll(".kernel");
  for (var i = 0; i < found.length; ++i) {
    var k = Number(found[i].id.replace("kernel_", ""));
    groups[k] = found[i];
  }
  body.setAttribute("data-kernel-groups", String(found.length));

  function ms(v) {
    if (v === null || v === undefined || v < 0) return "\u2014";
    if (v >= 10) return v.toFixed(1) + " ms";
    if (v >= 0.01) return v.toFixed(3) + " ms";
    return (v * 1000).toFixed(1) + " us";
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function list(tag, items, most, render) {
    var l = el(tag);
    items.slice(0, most).forEach(function (item) { l.appendChild(render(item)); });
    if (items.length > most) l.appendChild(el("li", "+" + (items.length - most) + " more", "hint"));
    return l;
  }

  var selected = -1;
  function show(k) {
    details.textContent = "";
    if (k < 0) {
      details.appendChild(el("p", "Hover or click a kernel in the graph, the bars or the table.", "hint"));
      return;
    }
    var kn = data.kernels[k];
    details.appendChild(el("h3", "Kernel k" + k + " of " + data.kernels.length));
    var dl = el("dl");
    function row(name, value) { dl.appendChild(el("dt", name)); dl.appendChild(el("dd", value)); }
    row("implementation", kn.impl);
    row("schedule", kn.schedule || "\u2014");
    row("predicted", ms(kn.predicted_ms));
    row("in plan", kn.in_plan_ms === null ? "not measured" : ms(kn.in_plan_ms));
    if (kn.in_plan_ms !== null && kn.predicted_ms > 0)
      row("in plan / predicted", (kn.in_plan_ms / kn.predicted_ms).toFixed(2) + "x");
    if (data.total_ms > 0) row("share of plan", (100 * kn.shown_ms / data.total_ms).toFixed(1) + "%");
    row("signature", kn.signature);
    if (kn.native) row("layout", "native blocked layouts");
    else if (kn.blocked) row("layout", "reads or writes a blocked tensor");
    details.appendChild(dl);
    details.appendChild(el("strong", kn.prims.length + " primitive" + (kn.prims.length === 1 ? "" : "s")));
    details.appendChild(list("ol", kn.prims, 200, function (p) {
      var li = el("li", p[0]);
      if (p[1]) li.appendChild(el("span", "  " + p[1] + (p[2] ? "  \u2192 " + p[2] : ""), "op"));
      return li;
    }));
    details.appendChild(el("strong", "reads"));
    details.appendChild(list("ul", kn.reads, 40, function (t) { return el("li", t); }));
    details.appendChild(el("strong", "writes"));
    details.appendChild(list("ul", kn.writes, 40, function (t) { return el("li", t); }));
  }
  function select(k, scroll) {
    if (selected >= 0 && groups[selected]) groups[selected].classList.remove("selected");
    var rows = document.querySelectorAll("#kernels tbody tr.selected");
    for (var i = 0; i < rows.length; ++i) rows[i].classList.remove("selected");
    selected = k;
    if (k >= 0) {
      if (groups[k]) {
        groups[k].classList.add("selected");
        if (scroll) groups[k].scrollIntoView({ block: "center", inline: "center", behavior: "smooth" });
      }
      var tr = document.querySelector('#kernels tbody tr[data-kernel="' + k + '"]');
      if (tr) tr.classList.add("selected");
    }
    show(k);
  }

  Object.keys(groups).forEach(function (key) {
    var k = Number(key), g = groups[k];
    var title = g.querySelector("title");
    var kn = data.kernels[k];
    if (title && kn)
      title.textContent = "k" + k + " " + kn.impl + ", " + kn.prims.length + " primitives, predicted " +
        ms(kn.predicted_ms) + (kn.in_plan_ms === null ? "" : ", in plan " + ms(kn.in_plan_ms));
    g.addEventListener("mouseenter", function () { show(k); });
    g.addEventListener("mouseleave", function () { show(selected); });
    g.addEventListener("click", function (e) { e.stopPropagation(); select(k, false); });
  });
  var others = document.querySelectorAll("[data-kernel]");
  for (var j = 0; j < others.length; ++j) {
    (function (e) {
      e.addEventListener("click", function () { select(Number(e.getAttribute("data-kernel")), true); });
    })(others[j]);
  }

  // Zoom: the SVG's own size (dot's points as pixels) times the factor.
  var vb = svg ? svg.viewBox.baseVal : null;
  var zoom = 1;
  function setZoom(z) {
    if (!vb) return;
    zoom = Math.max(0.05, Math.min(4, z));
    svg.setAttribute("width", String(vb.width * zoom));
    svg.setAttribute("height", String(vb.height * zoom));
  }
  function fit() {
    if (vb) setZoom(Math.min(1, (graph.clientWidth - 20) / vb.width));
  }
  var tools = { "zoom-in": function () { setZoom(zoom * 1.25); },
                "zoom-out": function () { setZoom(zoom / 1.25); },
                "zoom-fit": fit, "zoom-1": function () { setZoom(1); } };
  Object.keys(tools).forEach(function (id) {
    var b = document.getElementById(id);
    if (b) b.addEventListener("click", tools[id]);
  });
  fit();

  // The kernel table sorts by a column on click (numbers by value).
  var table = document.getElementById("kernels");
  if (table) {
    var ths = table.querySelectorAll("thead th");
    for (var c = 0; c < ths.length; ++c) {
      (function (col, th) {
        var descending = false;
        th.addEventListener("click", function () {
          var tbody = table.querySelector("tbody");
          var trs = Array.prototype.slice.call(tbody.querySelectorAll("tr"));
          descending = !descending;
          trs.sort(function (a, b) {
            var x = a.children[col].getAttribute("data-v"), y = b.children[col].getAttribute("data-v");
            var nx = Number(x), ny = Number(y);
            var r = isNaN(nx) || isNaN(ny) ? String(x).localeCompare(String(y)) : nx - ny;
            return descending ? -r : r;
          });
          trs.forEach(function (tr) { tbody.appendChild(tr); });
        });
      })(c, ths[c]);
    }
  }

  select(data.slowest, false);  // the slowest kernel, shown when the page opens
  body.setAttribute("data-report-ready", "1");
})();
)js";

}  // namespace kora
