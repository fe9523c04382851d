// Who produces and who reads each tensor of an operator graph, for the rewrites that fold
// a group of nodes into one (group_norm_fold.cc, parallel_conv_merge.cc): a group folds
// only when its intermediates are private to it. In: a graph; out: its producer and
// consumer counts as of construction (build it again after changing the graph).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "kora/graph.h"

namespace kora {

struct GraphUses {
  std::map<std::string, size_t> producer;  // tensor -> index of the node computing it
  std::map<std::string, int> consumers;    // tensor -> how many node inputs read it
  std::set<std::string> graph_outputs;

  explicit GraphUses(const Graph& g) : graph_outputs(g.outputs.begin(), g.outputs.end()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& out : g.nodes[i].outputs)
        if (!out.empty()) producer[out] = i;
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) ++consumers[in];
    }
  }
  // The default-domain node computing `t` when one node alone reads `t` and it is not a
  // graph output; else nullptr.
  const Node* private_producer(const Graph& g, const std::string& t) const {
    auto p = producer.find(t);
    auto c = consumers.find(t);
    if (p == producer.end() || c == consumers.end() || c->second != 1 || graph_outputs.count(t))
      return nullptr;
    const Node& n = g.nodes[p->second];
    return n.domain.empty() ? &n : nullptr;
  }
};

}  // namespace kora
