// Reports of an orchestration result: the chosen kernels as text (one line each, then
// totals) and as JSON (strategy, total_cost_ms, gap, solve_seconds, kernels, counts,
// the blocked tensors when the solver chose layouts).
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kora/orchestration.h"

namespace kora {
namespace {

std::string kernel_kinds(const PrimGraph& graph, const ChosenKernel& k) {
  std::map<std::string, int> count;
  for (int p : k.prims) ++count[prim_kind_name(graph.prims[p].kind())];
  std::string s;
  for (const auto& [kind, n] : count) s += (s.empty() ? "" : " ") + std::to_string(n) + " " + kind;
  return s;
}

std::string fmt_ms(double ms) {
  std::ostringstream os;
  os.precision(4);
  os << ms;
  return os.str();
}

}  // namespace

std::string format_orchestration(const PrimGraph& graph, const OrchestrationResult& r) {
  std::ostringstream os;
  os << "kernels (" << r.kernels.size() << ", in run order)\n";
  std::map<size_t, int> by_size;
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const ChosenKernel& k = r.kernels[i];
    ++by_size[k.prims.size()];
    os << "  k" << i << "  " << fmt_ms(k.cost_ms) << " ms  [" << kernel_kinds(graph, k) << "] "
       << (k.native ? "native " : "");
    for (size_t j = 0; j < k.prims.size(); ++j)
      os << (j ? ", " : "") << graph.prims[k.prims[j]].name;
    os << "  -> ";
    for (size_t j = 0; j < k.outputs.size(); ++j) {
      const auto& outs = graph.prims[k.outputs[j]].outputs;
      for (size_t t = 0; t < outs.size(); ++t) os << (j || t ? ", " : "") << outs[t];
    }
    os << "\n";
  }
  os << "strategy     " << r.strategy << "\n";
  os << "cost model   " << r.cost_model << "\n";
  os << "total cost   " << fmt_ms(r.total_cost_ms) << " ms\n";
  if (r.strategy == "optimal")
    os << "optimality   "
       << (r.proven_optimal ? std::string("proven (gap 0)")
                            : "not proven: gap " + fmt_ms(r.gap_ms) + " ms (time limit)")
       << "\n";
  if (r.layouts_decided) {
    int64_t native = 0;
    for (const ChosenKernel& k : r.kernels) native += k.native;
    os << "layouts      " << r.layouts.size() << " tensors blocked, " << native
       << " kernels native (their cost above is on plain tensors; the total counts the layouts)\n";
    if (r.whole_graph_layouts_saved_ms > 0)
      os << "whole graph  layouts decided again with the kernels fixed: "
         << fmt_ms(r.whole_graph_layouts_saved_ms) << " ms less, " << r.cut_tensors_blocked
         << " tensors crossing segment cuts blocked\n";
  }
  os << "kernels by size";
  for (const auto& [size, n] : by_size) os << "  " << size << ":" << n;
  os << "\n";
  os << "primitives   " << r.primitives << " in " << r.segments << " segment"
     << (r.segments == 1 ? "" : "s");
  if (r.segments_reused)
    os << " (" << r.segments_reused << " the same problem as an earlier segment, solved once)";
  if (r.segments_split)
    os << " (" << r.segments_split << " not proven within the first seconds, cut in halves)";
  os << "\n";
  os << "candidates   " << r.candidates << " (" << r.unique_signatures << " unique signatures"
     << (r.seeds_capped ? ", " + std::to_string(r.seeds_capped) + " seeds hit the bound" : "")
     << (r.horizontal_pairs ? ", " + std::to_string(r.horizontal_pairs) + " horizontal pairs (" +
                                  std::to_string(r.horizontal_chosen) + " chosen)"
                            : "")
     << (r.segments_over_budget ? ", " + std::to_string(r.segments_over_budget) +
                                      " segments over the budget: kernels of at most " +
                                      std::to_string(r.budget_max_size) + " primitives there"
                                : "")
     << ")\n";
  os << "time         enumerate " << fmt_ms(r.enumerate_seconds) << " s, cost "
     << fmt_ms(r.cost_seconds) << " s, solve " << fmt_ms(r.solve_seconds) << " s";
  if (r.cycle_cuts) os << " (" << r.cycle_cuts << " cycle cuts)";
  os << "\n";
  return os.str();
}

std::string orchestration_json(const PrimGraph& graph, const OrchestrationResult& r) {
  nlohmann::json j;
  j["strategy"] = r.strategy;
  j["cost_model"] = r.cost_model;
  j["horizontal_pairs"] = r.horizontal_pairs;
  j["horizontal_chosen"] = r.horizontal_chosen;
  j["total_cost_ms"] = r.total_cost_ms;
  j["gap"] = r.strategy == "optimal" ? nlohmann::json(r.gap_ms) : nlohmann::json(nullptr);
  j["proven_optimal"] = r.strategy == "optimal" && r.proven_optimal;
  j["solve_seconds"] = r.solve_seconds;
  j["enumerate_seconds"] = r.enumerate_seconds;
  j["cost_seconds"] = r.cost_seconds;
  j["primitives"] = r.primitives;
  j["candidates"] = r.candidates;
  j["unique_signatures"] = r.unique_signatures;
  j["segments"] = r.segments;
  j["segments_reused"] = r.segments_reused;
  j["seeds_capped"] = r.seeds_capped;
  j["segments_over_budget"] = r.segments_over_budget;
  j["segments_split"] = r.segments_split;
  if (r.segments_over_budget) j["budget_max_size"] = r.budget_max_size;
  j["cycle_cuts"] = r.cycle_cuts;
  if (r.layouts_decided) {
    j["layouts"] = r.layouts;
    j["cut_tensors_blocked"] = r.cut_tensors_blocked;
    j["whole_graph_layouts_saved_ms"] = r.whole_graph_layouts_saved_ms;
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const ChosenKernel& k : r.kernels) {
    nlohmann::json jk;
    jk["primitives"] = nlohmann::json::array();
    for (int p : k.prims) jk["primitives"].push_back(graph.prims[p].name);
    jk["outputs"] = nlohmann::json::array();
    for (int p : k.outputs)
      for (const std::string& t : graph.prims[p].outputs) jk["outputs"].push_back(t);
    jk["cost_ms"] = k.cost_ms;
    jk["signature"] = signature_hex(k.signature);
    jk["segment"] = k.segment;
    if (k.native) jk["native"] = true;
    kernels.push_back(std::move(jk));
  }
  j["kernels"] = std::move(kernels);
  return j.dump(1) + "\n";
}

}  // namespace kora
