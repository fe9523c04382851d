// Internal: the plan report page's own style sheet and scripts (src/report/html_page.cc
// inlines them; no external file, library or font). The scripts read the page's data from
// <script type="application/json" id="kora-data"> and the graph's SVG groups (class
// "kernel", id "kernel_K": src/report/plan_dot.h).
#pragma once

namespace kora {

// CSS of the whole page.
extern const char* const kReportStyle;
// In <head>, first: window.onerror counts script errors into <body data-report-errors> and
// their messages into data-report-error-messages, for headless checks.
extern const char* const kReportErrorHook;
// At the end of <body>: hover or click a kernel (graph, bars, table) for its details; zoom;
// sortable kernel table; sets <body data-kernel-groups> to the kernel groups found in the
// graph and data-report-ready="1" when done.
extern const char* const kReportScript;

}  // namespace kora
