// The plan report's data (src/report/plan_data.h): an artifact directory in; its kernels
// (manifest), its primitive graph and compile summary (plan.json) and, when measured, each
// kernel's median time inside the running plan out.
#include "report/plan_data.h"

#include <algorithm>
#include <random>
#include <set>

#include "base/text.h"
#include "cpu/machine_load.h"
#include "kora/error.h"

namespace kora {

std::string format_ms(double ms) {
  if (ms >= 10) return fixed(ms, 1) + " ms";
  if (ms >= 0.01) return fixed(ms, 3) + " ms";
  return fixed(ms * 1e3, 1) + " us";
}

PlanReportData load_plan_report_data(const std::string& artifact_dir) {
  PlanReportData data;
  data.artifact_dir = artifact_dir;
  data.manifest = read_artifact_manifest(artifact_dir);
  const std::vector<KernelInfo> infos = kernel_infos_of(data.manifest);
  for (size_t i = 0; i < infos.size(); ++i) {
    const ManifestKernel& k = data.manifest.kernels[i];
    data.kernels.push_back({infos[i], k.primitives, k.reads, k.writes});
  }
  try {
    data.plan = read_plan_file(artifact_dir);
    if (!data.plan)
      data.plan_missing =
          std::string("the artifact has no ") + kPlanFileName + " (compiled by an older kora)";
  } catch (const Error& e) {
    data.plan_missing = e.what();
  }
  if (data.plan) {  // every kernel's primitives must be the graph's
    std::set<std::string> names;
    for (const PlanPrimitive& p : data.plan->primitives) names.insert(p.name);
    for (const ReportKernel& k : data.kernels)
      for (const std::string& p : k.primitives)
        if (!names.count(p)) {
          data.plan_missing = std::string(kPlanFileName) +
                              " does not describe this artifact (no primitive '" + p +
                              "'; from another compile?)";
          data.plan.reset();
          return data;
        }
  }
  return data;
}

void measure_in_plan(PlanReportData& data, const PlanReportOptions& options) {
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(data.artifact_dir, SessionOptions{options.threads});
  } catch (const Error& e) {
    if (data.manifest.target != "cuda") throw;
    data.measure_note =
        std::string("not measured: this CUDA artifact cannot run here (") + e.what() + ")";
    return;
  }
  std::mt19937_64 rng(0);  // as kora run's random inputs: normal floats, integers 0 or 1
  for (const TensorInfo& t : session->inputs())
    session->set_input(t.name, random_tensor(t.dtype, t.shape, rng, 1));
  data.iters = std::max(1, options.iters);
  const LoadWatch watch;
  const std::vector<double> ms = session->profile_kernels(data.iters);
  data.measured_busy = data.manifest.target == "cpu" && watch.busy();
  if (ms.size() != data.kernels.size())
    throw Error("artifact '" + data.artifact_dir + "': the session runs " +
                std::to_string(ms.size()) + " kernels, the manifest lists " +
                std::to_string(data.kernels.size()));
  data.in_plan_total_ms = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    data.kernels[i].in_plan_ms = ms[i];
    data.in_plan_total_ms += ms[i];
  }
  data.measured = true;
  data.measure_note = "median of " + std::to_string(data.iters) +
                      " runs inside the running plan, random inputs, " + session->device();
}

}  // namespace kora
