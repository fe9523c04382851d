// plan.json written and read (src/report/plan_file.h): a primitive graph, a compile
// summary (JSON text) and baselines in, the file out; the file in, a PlanFile out. The
// reader takes what a report shows and names the field that is missing or of the wrong type.
#include "report/plan_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "kora/error.h"
#include "kora/fission.h"

namespace kora {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kPlanFileVersion = 1;

std::string type_text(const json& tensor) {
  std::string shape;
  for (const json& d : tensor.at("shape")) shape += (shape.empty() ? "" : ", ") + d.dump();
  return tensor.at("dtype").get<std::string>() + " [" + shape + "]";
}

std::vector<std::string> names_of(const json& list) {
  std::vector<std::string> names;
  for (const json& t : list)
    names.push_back(t.is_string() ? t.get<std::string>() : t.at("name").get<std::string>());
  return names;
}

PlanSummary summary_from_json(const json& s) {
  PlanSummary summary;
  if (s.contains("checked"))
    for (const json& c : s.at("checked")) {
      PlanCheck check;
      check.label = c.at("label").get<std::string>();
      check.kernels = c.at("kernels").get<int64_t>();
      check.predicted_ms = c.at("predicted_ms").get<double>();
      check.in_plan_ms = c.at("in_plan_ms").get<double>();
      check.measured_ms = c.at("measured_ms").get<double>();
      check.error = c.value("error", "");
      if (c.value("emitted", false)) summary.emitted = static_cast<int>(summary.checked.size());
      summary.checked.push_back(check);
    }
  summary.notes = s.value("notes", std::vector<std::string>{});
  summary.proven_optimal = s.value("proven_optimal", false);
  summary.gap_ms = s.value("gap_ms", 0.0);
  summary.measured_costs = s.value("measured_costs", int64_t{0});
  summary.roofline_costs = s.value("roofline_costs", int64_t{0});
  summary.estimated_kernels = s.value("estimated_kernels", int64_t{0});
  return summary;
}

}  // namespace

void write_plan_file(const std::string& dir, const PrimGraph& graph,
                     const std::string& summary_json, const std::vector<PlanBaseline>& baselines) {
  json j;
  j["format"] = "kora-plan";
  j["version"] = kPlanFileVersion;
  j["graph"] = json::parse(prim_graph_json(graph));
  j["summary"] = json::parse(summary_json);
  j["baselines"] = json::array();
  for (const PlanBaseline& b : baselines)
    j["baselines"].push_back(
        {{"strategy", b.strategy}, {"kernels", b.kernels}, {"predicted_ms", b.predicted_ms}});
  const fs::path path = fs::path(dir) / kPlanFileName;
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << j.dump() << "\n";
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write '" + path.string() + "'");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw Error("cannot write '" + path.string() + "': " + ec.message());
}

std::optional<PlanFile> read_plan_file(const std::string& dir) {
  const fs::path path = fs::path(dir) / kPlanFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const json j = json::parse(read_file(path.string()));
    if (j.value("format", "") != "kora-plan")
      throw Error("'" + path.string() + "' is not a kora plan file (format is not kora-plan)");
    if (j.at("version").get<int>() != kPlanFileVersion)
      throw Error("'" + path.string() + "' has version " + j.at("version").dump() +
                  "; this kora reads version " + std::to_string(kPlanFileVersion));
    PlanFile plan;
    const json& g = j.at("graph");
    plan.graph_name = g.value("name", "");
    plan.inputs = names_of(g.at("inputs"));
    plan.outputs = names_of(g.at("outputs"));
    plan.constants = names_of(g.at("constants"));
    for (const json& p : g.at("primitives")) {
      PlanPrimitive prim;
      prim.name = p.at("name").get<std::string>();
      prim.kind = p.at("kind").get<std::string>();
      prim.op = p.at("op").get<std::string>();
      prim.origin = p.value("origin", "");
      prim.inputs = names_of(p.at("inputs"));
      prim.outputs = names_of(p.at("outputs"));
      if (!p.at("outputs").empty()) prim.type = type_text(p.at("outputs").at(0));
      plan.primitives.push_back(std::move(prim));
    }
    plan.summary = summary_from_json(j.at("summary"));
    for (const json& b : j.at("baselines"))
      plan.baselines.push_back({b.at("strategy").get<std::string>(), b.at("kernels").get<int64_t>(),
                                b.at("predicted_ms").get<double>()});
    return plan;
  } catch (const json::exception& e) {
    throw Error("'" + path.string() + "' is corrupt: " + e.what());
  }
}

}  // namespace kora
