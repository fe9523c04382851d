// `kora inspect`: In: an operator graph. Out: InspectReport, as text or JSON.
#include "kora/inspect.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace kora {
namespace {

std::string human(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}{}", v, units[u]);
}

}  // namespace

InspectReport inspect_graph(const Graph& g) {
  InspectReport r;
  r.graph_name = g.name;
  r.producer = g.producer;
  r.opset = g.opset;
  for (const std::string& name : g.inputs)
    r.inputs.push_back({name, g.value(name).dtype, g.value(name).shape});
  for (const std::string& name : g.outputs)
    r.outputs.push_back({name, g.value(name).dtype, g.value(name).shape});
  for (const Node& n : g.nodes) {
    ++r.op_histogram[n.op_type];
    r.flops += estimate_flops(g, n);
  }
  r.node_count = static_cast<int64_t>(g.nodes.size());
  r.parameter_count = g.parameter_count;
  return r;
}

std::string format_report(const InspectReport& r) {
  std::string s;
  s += fmt::format("graph      {}\n", r.graph_name.empty() ? "(unnamed)" : r.graph_name);
  if (!r.producer.empty()) s += fmt::format("producer   {}\n", r.producer);
  s += fmt::format("opset      {}\n", r.opset);
  auto tensors = [&](const char* title, const std::vector<TensorSummary>& ts) {
    s += fmt::format("{} ({})\n", title, ts.size());
    for (const TensorSummary& t : ts)
      s += fmt::format("  {:<28} {:<8} {}\n", t.name, dtype_name(t.dtype), shape_str(t.shape));
  };
  tensors("inputs", r.inputs);
  tensors("outputs", r.outputs);
  s += fmt::format("operators  {} nodes after folding shape arithmetic\n", r.node_count);
  std::vector<std::pair<int64_t, std::string>> ops;
  for (const auto& [op, count] : r.op_histogram) ops.push_back({-count, op});
  std::sort(ops.begin(), ops.end());
  for (const auto& [neg, op] : ops) s += fmt::format("  {:<28} {}\n", op, -neg);
  s += fmt::format("parameters {} ({})\n", human(static_cast<double>(r.parameter_count)),
                   r.parameter_count);
  s += fmt::format("FLOPs      {} ({})\n", human(static_cast<double>(r.flops)), r.flops);
  return s;
}

std::string report_json(const InspectReport& r) {
  nlohmann::json j;
  j["graph"] = r.graph_name;
  j["producer"] = r.producer;
  j["opset"] = r.opset;
  auto tensors = [](const std::vector<TensorSummary>& ts) {
    nlohmann::json a = nlohmann::json::array();
    for (const TensorSummary& t : ts)
      a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
    return a;
  };
  j["inputs"] = tensors(r.inputs);
  j["outputs"] = tensors(r.outputs);
  j["operators"] = r.op_histogram;
  j["nodes"] = r.node_count;
  j["parameters"] = r.parameter_count;
  j["flops"] = r.flops;
  return j.dump(2);
}

}  // namespace kora
