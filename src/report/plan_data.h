// Internal: what a plan report shows, gathered from an artifact directory. In: the
// manifest (kernels in run order, their primitives, reads, writes, implementation,
// schedule, predicted cost), plan.json when the artifact has it (the primitive graph, the
// compile summary, the baselines: src/report/plan_file.h) and, when asked, each kernel's
// time inside the running plan (Session::profile_kernels on random inputs). Out: a
// PlanReportData, which the DOT writer and the HTML page read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kora/report.h"
#include "kora/runtime.h"
#include "report/plan_file.h"
#include "runtime/manifest.h"

namespace kora {

struct ReportKernel {
  KernelInfo info;  // implementation, schedule, predicted cost, signature
  std::vector<std::string> primitives, reads, writes;
  double in_plan_ms = -1;  // measured by the report; -1: not measured
};

struct PlanReportData {
  std::string artifact_dir;
  Manifest manifest;
  std::vector<ReportKernel> kernels;  // run order
  std::optional<PlanFile> plan;       // plan.json, when the artifact has a readable one
  std::string plan_missing;           // why not, when not
  // The report's own measurement: each kernel's median time inside the running plan.
  bool measured = false;
  std::string measure_note;    // why not measured, or where and how it was
  bool measured_busy = false;  // other processes used the CPU meanwhile (times inflated)
  int iters = 0;
  double in_plan_total_ms = 0;

  // The kernel's time as the report shows it: in plan when measured, else predicted.
  double shown_ms(const ReportKernel& k) const {
    return measured ? k.in_plan_ms : k.info.predicted_ms;
  }
};

// A time for people: "12.3 ms", "0.648 ms", "4.2 us".
std::string format_ms(double ms);

// Reads the artifact's manifest and plan.json. Throws kora::Error when the directory or
// its manifest is missing or corrupt; a missing, unreadable or mismatched plan.json is
// noted in plan_missing instead.
PlanReportData load_plan_report_data(const std::string& artifact_dir);

// Runs the artifact (random inputs, seeded) and times each kernel inside the running plan
// (options.iters runs, the median). A CUDA artifact that cannot run here is left
// unmeasured with the reason in measure_note; any other failure throws kora::Error.
void measure_in_plan(PlanReportData& data, const PlanReportOptions& options);

}  // namespace kora
