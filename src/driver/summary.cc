// kora compile's summary (include/kora/compile.h): a CompileSummary in; the lines kora
// compile prints on stdout, or the same as one JSON object (nlohmann-json), out.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/text.h"
#include "kora/compile.h"

namespace kora {
namespace {

std::string megabytes(int64_t bytes) { return fixed(static_cast<double>(bytes) / 1e6, 1) + " MB"; }

// How close to the optimum of the full measured table the plan is proven to be.
std::string on_demand_verdict(const OnDemandReport& r) {
  if (r.at_bound > 0)
    return std::to_string(r.at_bound) +
           " kernels of it not measured (out of solves, or measured by a job elsewhere)";
  if (r.bound_ms <= 0) return "every kernel of it measured";
  return "every kernel of it measured; every plan costs at least " + fixed(r.bound_ms, 3) +
         " ms: " +
         (r.gap <= 0 ? "the optimum of the full measured table"
                     : "within " + fixed(100 * r.gap, 1) + "% of the optimum");
}

nlohmann::json on_demand_object(const OnDemandReport& r) {
  return {{"bound", r.bound},
          {"rounds", r.rounds},
          {"candidates", r.candidates},
          {"measured", r.measured},
          {"failed", r.failed},
          {"at_bound", r.at_bound},
          {"settled", r.settled},
          {"patience", r.patience},
          {"cost_ms", r.cost_ms},
          {"bound_ms", r.bound_ms},
          {"gap", r.gap},
          {"complete", r.complete},
          {"profile_seconds", r.profile_seconds},
          {"solve_seconds", r.solve_seconds}};
}

}  // namespace

std::string format_on_demand(const OnDemandReport& r, const OrchestrationResult& plan) {
  std::ostringstream os;
  os << "measured on demand at " << r.bound << ": " << r.rounds << " solves, " << r.measured
     << " kernels measured now";
  if (r.candidates) os << " (of " << r.candidates << " candidates)";
  os << ", " << r.failed << " implementations failed\n"
     << plan.strategy << " plan: " << plan.kernels.size() << " kernels, predicted "
     << fixed(plan.total_cost_ms, 3) << " ms; " << on_demand_verdict(r) << "\ntime: measure "
     << fixed(r.profile_seconds, 1) << " s, solve " << fixed(r.solve_seconds, 1) << " s\n"
     << "(kora profile --all measures every candidate kernel: the full cost table)\n";
  return os.str();
}

std::string on_demand_json(const OnDemandReport& r, const OrchestrationResult& plan) {
  nlohmann::json j = on_demand_object(r);
  j["strategy"] = plan.strategy;
  j["kernels"] = plan.kernels.size();
  j["predicted_ms"] = plan.total_cost_ms;
  return j.dump();
}

std::string format_compile_summary(const CompileSummary& s) {
  const ArtifactSummary& a = s.artifact;
  const double predicted = s.emitted_check >= 0 ? s.predicted_ms : a.predicted_ms;
  std::ostringstream os;
  if (s.target == "cuda")
    os << "kora compile: " << s.artifact_dir << ": " << a.kernels << " CUDA kernels ("
       << a.generated << " generated, " << a.cublas << " cuBLAS, " << a.cudnn << " cuDNN"
       << (a.interpreter ? ", " + std::to_string(a.interpreter) + " on the host" : "") << ") in "
       << a.libraries << " cubins for " << a.arch << "; strategy " << s.strategy << ", predicted "
       << fixed(predicted, 3) << " ms\n";
  else
    os << "kora compile: " << s.artifact_dir << ": " << a.kernels << " kernels (" << a.generated
       << " generated, " << a.onednn << " oneDNN, " << a.interpreter << " interpreter) in "
       << a.libraries << " libraries; strategy " << s.strategy << ", predicted "
       << fixed(predicted, 3) << " ms\n"
       << "layouts: " << a.blocked_tensors
       << " tensors kept in oneDNN's layouts between kernels (blocked, channels last, bf16)\n";
  if (!s.checked.empty()) {
    os << "checked on the clock (median latency; predicted: the solver's when chosen; in plan: "
          "its kernels' times inside it):\n";
    for (size_t i = 0; i < s.checked.size(); ++i) {
      const PlanCheck& c = s.checked[i];
      char line[160];
      if (c.error.empty())
        std::snprintf(
            line, sizeof line,
            "  %-20s %4lld kernels  predicted %9.3f ms  in plan %9.3f ms  measured %9.3f ms%s\n",
            c.label.c_str(), static_cast<long long>(c.kernels), c.predicted_ms, c.in_plan_ms,
            c.measured_ms, static_cast<int>(i) == s.emitted_check ? "  <- emitted" : "");
      else
        std::snprintf(line, sizeof line, "  %-20s not run here\n", c.label.c_str());
      os << line;
    }
    // A kernel of the emitted plan far slower in it than measured alone, where that costs
    // the plan a tenth of its time: the predictions were wrong there.
    if (s.emitted_check >= 0) {
      const PlanCheck& e = s.checked[static_cast<size_t>(s.emitted_check)];
      if (!e.outlier.empty() && e.outlier_ms >= 0.1 * e.measured_ms)
        os << "note: in the emitted plan " << e.outlier
           << ": that kernel costs the plan far more than predicted\n";
    }
  }
  if (s.kernel_check.kernels > 0) {
    os << "checked against the interpreter (not measured): " << s.kernel_check.kernels
       << " kernels, each run once; ";
    if (s.kernel_check.failed.empty())
      os << "all computed what the interpreter does\n";
    else
      os << s.kernel_check.failed.size() << " failed, their failed implementations not emitted "
         << "(notes below)\n";
  }
  if (s.on_demand.used)
    os << "measured on demand: " << s.on_demand.rounds << " solves, " << s.on_demand.measured
       << " kernels measured now"
       << (s.on_demand.candidates ? " of " + std::to_string(s.on_demand.candidates) + " candidates"
                                  : std::string())
       << "; the solver's plan: " << on_demand_verdict(s.on_demand) << "\n";
  os << "memory: activations " << megabytes(a.arena_bytes) << " in one arena (sum of "
     << "intermediates " << megabytes(a.intermediate_bytes) << "), weights "
     << megabytes(a.weights_bytes) << "\n"
     << "time: import " << fixed(s.import_seconds, 1) << " s, profile "
     << fixed(s.profile_seconds, 1) << " s, orchestrate " << fixed(s.orchestrate_seconds, 1)
     << (s.kernel_check.kernels > 0 ? " s, check " + fixed(s.kernel_check.seconds, 1)
                                    : std::string())
     << " s, emit " << fixed(s.emit_seconds, 1) << " s, total " << fixed(s.total_seconds, 1)
     << " s\n";
  return os.str();
}

std::string compile_summary_json(const CompileSummary& s) {
  const ArtifactSummary& a = s.artifact;
  nlohmann::json j;
  j["artifact"] = s.artifact_dir;
  j["target"] = s.target;
  j["device"] = s.device;
  j["database"] = s.database;
  j["strategy"] = s.strategy;
  j["primitives"] = s.primitives;
  j["kernels"] = a.kernels;
  j["generated"] = a.generated;
  j["onednn"] = a.onednn;
  j["interpreter"] = a.interpreter;
  j["cublas"] = a.cublas;
  j["cudnn"] = a.cudnn;
  j["libraries"] = a.libraries;
  j["predicted_ms"] = s.emitted_check >= 0 ? s.predicted_ms : a.predicted_ms;
  if (s.emitted_check >= 0) j["measured_ms"] = s.measured_ms;
  j["checked"] = nlohmann::json::array();
  for (size_t i = 0; i < s.checked.size(); ++i) {
    const PlanCheck& c = s.checked[i];
    nlohmann::json p = {{"label", c.label},
                        {"kernels", c.kernels},
                        {"predicted_ms", c.predicted_ms},
                        {"in_plan_ms", c.in_plan_ms},
                        {"outlier", c.outlier},
                        {"outlier_ms", c.outlier_ms},
                        {"measured_ms", c.measured_ms},
                        {"finalist", c.finalist},
                        {"emitted", static_cast<int>(i) == s.emitted_check}};
    if (!c.error.empty()) p["error"] = c.error;
    j["checked"].push_back(p);
  }
  j["proven_optimal"] = s.proven_optimal;
  j["gap_ms"] = s.gap_ms;
  j["measured_costs"] = s.measured_costs;
  j["roofline_costs"] = s.roofline_costs;
  j["estimated_kernels"] = s.estimated_kernels;
  j["blocked_tensors"] = a.blocked_tensors;
  j["arena_bytes"] = a.arena_bytes;
  j["intermediate_bytes"] = a.intermediate_bytes;
  j["weights_bytes"] = a.weights_bytes;
  j["notes"] = s.notes;
  if (s.profiled)
    j["profile"] = {{"device", s.profile.device},
                    {"kernels", s.profile.kernels},
                    {"measured", s.profile.measured},
                    {"from_db", s.profile.from_db},
                    {"failed", s.profile.failed}};
  if (s.on_demand.used) j["on_demand"] = on_demand_object(s.on_demand);
  if (s.kernel_check.kernels > 0) {
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& [signature, schedules] : s.kernel_check.failed)
      for (const auto& [schedule, error] : schedules)
        failed.push_back({{"signature", signature_hex(signature)},
                          {"schedule", schedule},
                          {"error", error},
                          {"interpreter", s.kernel_check.unusable.count(signature) > 0}});
    j["kernel_check"] = {{"kernels", s.kernel_check.kernels}, {"failed", failed}};
  }
  j["seconds"] = {{"import", s.import_seconds},
                  {"profile", s.profile_seconds},
                  {"orchestrate", s.orchestrate_seconds},
                  {"check", s.kernel_check.seconds},
                  {"emit", s.emit_seconds},
                  {"total", s.total_seconds}};
  return j.dump();
}

}  // namespace kora
