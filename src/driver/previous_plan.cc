// The plan a compile emitted, remembered per device and primitive graph
// (src/driver/previous_plan.h).
#include "driver/previous_plan.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/fnv_hash.h"
#include "runtime/prim_json.h"

namespace kora {
namespace {

using nlohmann::json;

std::string fact_key(const PrimGraph& graph) { return "emitted_plan:" + plan_graph_key(graph); }

// The plan, when every kernel fits the graph.
std::optional<OrchestrationResult> read_plan(const json& j, const PrimGraph& graph) {
  const int n = static_cast<int>(graph.prims.size());
  OrchestrationResult plan;
  plan.strategy = "optimal";
  plan.cost_model = j.at("cost_model").get<std::string>();
  std::vector<bool> computed(static_cast<size_t>(n), false);
  for (const json& k : j.at("kernels")) {
    ChosenKernel c;
    c.prims = k.at("prims").get<std::vector<int>>();
    c.outputs = k.at("outputs").get<std::vector<int>>();
    c.signature = k.at("signature").get<uint64_t>();
    c.cost_ms = k.at("cost_ms").get<double>();
    c.segment = k.at("segment").get<int>();
    c.native = k.at("native").get<bool>();
    c.step = k.value("step", -1);
    c.threads = k.value("threads", 0);
    if ((c.step >= 0) != (plan.kernels.empty() ? c.step >= 0 : plan.kernels[0].step >= 0) ||
        (!plan.kernels.empty() && c.step < plan.kernels.back().step) || c.threads < 0)
      return std::nullopt;
    if (c.prims.empty() || !std::is_sorted(c.prims.begin(), c.prims.end()) ||
        std::adjacent_find(c.prims.begin(), c.prims.end()) != c.prims.end() ||
        c.prims.front() < 0 || c.prims.back() >= n || !std::isfinite(c.cost_ms))
      return std::nullopt;
    for (int o : c.outputs)
      if (!std::binary_search(c.prims.begin(), c.prims.end(), o)) return std::nullopt;
    for (int p : c.prims) computed[static_cast<size_t>(p)] = true;
    plan.total_cost_ms += c.cost_ms;
    plan.kernels.push_back(std::move(c));
  }
  if (plan.kernels.empty() || std::find(computed.begin(), computed.end(), false) != computed.end())
    return std::nullopt;
  plan.layouts_decided = j.at("layouts_decided").get<bool>();
  plan.layouts = j.at("layouts").get<std::map<std::string, std::string>>();
  plan.primitives = n;
  return plan;
}

}  // namespace

std::string plan_graph_key(const PrimGraph& graph) {
  FnvHash h;
  h.str(prim_graph_to_json(graph).dump());
  return hex64(h.h);
}

void remember_emitted_plan(ProfileDb& db, const std::string& device, const PrimGraph& graph,
                           const OrchestrationResult& plan, double measured_ms) {
  json kernels = json::array();
  for (const ChosenKernel& k : plan.kernels)
    kernels.push_back({{"prims", k.prims},
                       {"outputs", k.outputs},
                       {"signature", k.signature},
                       {"cost_ms", k.cost_ms},
                       {"segment", k.segment},
                       {"native", k.native},
                       {"step", k.step},
                       {"threads", k.threads}});
  const json j = {{"cost_model", plan.cost_model},
                  {"kernels", kernels},
                  {"layouts_decided", plan.layouts_decided},
                  {"layouts", plan.layouts},
                  {"measured_ms", measured_ms}};
  db.put_device_fact(device, fact_key(graph), j.dump());
}

std::optional<OrchestrationResult> previous_emitted_plan(const ProfileDb& db,
                                                         const std::string& device,
                                                         const PrimGraph& graph,
                                                         double* measured_ms) {
  const std::optional<std::string> text = db.device_fact(device, fact_key(graph));
  if (!text) return std::nullopt;
  try {
    const json j = json::parse(*text);
    std::optional<OrchestrationResult> plan = read_plan(j, graph);
    if (plan && measured_ms) *measured_ms = j.at("measured_ms").get<double>();
    return plan;
  } catch (const json::exception&) {
    return std::nullopt;  // written by another version or damaged: not a plan to time
  }
}

}  // namespace kora
