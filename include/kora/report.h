// The plan report: an artifact directory (kora compile -o) in; one self-contained HTML page
// out (no external URLs, scripts or fonts), `kora report ARTIFACT -o plan.html`:
//   - the primitive graph top to bottom, laid out by Graphviz's dot (run as a program: the
//     Debian package graphviz), every chosen kernel a coloured group; hover or click one for
//     its primitives, implementation, schedule, predicted and in-plan time. Above a size
//     where dot takes too long (src/report/plan_dot.h), or for an artifact without
//     plan.json (written by an older kora), one node per kernel instead, and the page says so;
//   - the plan's totals next to the greedy and unfused plans' (predicted, and measured where
//     the compile's check on the clock measured them);
//   - where the time goes: per kernel, largest first, and per implementation.
// Each kernel's in-plan time is measured here by running the artifact (Session::
// profile_kernels on random inputs) unless options.measure is false; a CUDA artifact that
// cannot run on this machine is reported without, and the page says why.
// The implementation is src/report/.
#pragma once

#include <string>

namespace kora {

struct PlanReportOptions {
  bool measure = true;  // time each kernel inside the running plan (Session::profile_kernels)
  int iters = 20;       // runs for those medians
  int threads = 0;      // 0: the artifact's
};

// Writes the plan report of the artifact at `artifact_dir` to `html_path`. Throws kora::Error.
void write_plan_report(const std::string& artifact_dir, const std::string& html_path,
                       const PlanReportOptions& options = {});

}  // namespace kora
