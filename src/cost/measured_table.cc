// Measured kernel costs: a JSON file {"device": "...", "kernels": {"<signature, 16 hex
// digits>": <ms>, ...}} in, a cost per candidate out, looked up by canonical signature;
// kernels the table lacks get the fallback model's cost (counted as misses). Also the
// lookup shared with ProfileDbCost (TableCost).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kora/cost.h"
#include "kora/error.h"

namespace kora {

MeasuredCostTable::MeasuredCostTable(const std::string& path, std::unique_ptr<CostModel> fallback)
    : TableCost("cost table '" + path + "'", std::move(fallback)), path_(path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read cost table '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost table '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("kernels") || !j["kernels"].is_object())
    throw Error("cost table '" + path + "' needs an object \"kernels\": {signature: ms}");
  for (const auto& [key, value] : j["kernels"].items()) {
    if (key.size() != 16 || key.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error("cost table '" + path + "': key '" + key +
                  "' is not a signature (16 lowercase hex digits)");
    if (!value.is_number() || value.get<double>() < 0)
      throw Error("cost table '" + path + "': kernel " + key + " has cost " + value.dump() +
                  " (need a number of milliseconds >= 0)");
    table_[std::stoull(key, nullptr, 16)] = value.get<double>();
  }
}

double TableCost::cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const uint64_t sig = c.signature ? c.signature : canonical_signature(graph, dag, c);
  auto it = table_.find(sig);
  if (it != table_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  if (!fallback_) {
    std::string names;
    for (int v : c.members) names += (names.empty() ? "" : ", ") + graph.prims[dag.prim[v]].name;
    throw Error(source_ + " has no kernel " + signature_hex(sig) + " (" + names + ")");
  }
  return fallback_->cost_ms(graph, dag, c) + fallback_extra_ms_;
}

std::string MeasuredCostTable::describe() const {
  const std::string fallback = fallback_describe();
  return "measured table '" + path_ + "' (" + std::to_string(table_.size()) + " kernels, " +
         std::to_string(hits()) + " hits, " + std::to_string(misses()) + " misses" +
         (fallback.empty() ? "" : ", else " + fallback) + ")";
}

}  // namespace kora
