// torch.onnx's GroupNorm (Reshape, InstanceNormalization, Reshape) folded into one
// GroupNormalization (group_norm_fold.h).
#include "frontend/group_norm_fold.h"

#include <map>
#include <set>

namespace kora {
namespace {

struct Uses {
  std::map<std::string, size_t> producer;
  std::map<std::string, int> consumers;
  std::set<std::string> graph_outputs;

  explicit Uses(const Graph& g) : graph_outputs(g.outputs.begin(), g.outputs.end()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& out : g.nodes[i].outputs)
        if (!out.empty()) producer[out] = i;
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) ++consumers[in];
    }
  }
  // The node producing `t` with op type `op`, when `t` feeds only one node.
  const Node* sole_use_producer(const Graph& g, const std::string& t, const char* op) const {
    auto p = producer.find(t);
    if (p == producer.end() || graph_outputs.count(t)) return nullptr;
    auto c = consumers.find(t);
    if (c == consumers.end() || c->second != 1) return nullptr;
    const Node& n = g.nodes[p->second];
    return n.op_type == op && n.domain.empty() ? &n : nullptr;
  }
};

const Shape* shape_of(const Graph& g, const std::string& t) {
  auto v = g.values.find(t);
  return v == g.values.end() ? nullptr : &v->second.shape;
}

}  // namespace

int fold_group_norm(Graph& g) {
  const Uses uses(g);
  int folded = 0;
  for (Node& outer : g.nodes) {
    if (outer.op_type != "Reshape" || !outer.domain.empty() || !outer.has_input(0) ||
        !outer.has_output(0))
      continue;
    const Node* norm = uses.sole_use_producer(g, outer.inputs[0], "InstanceNormalization");
    if (!norm || !norm->has_input(0) || !norm->has_input(1) || !norm->has_input(2)) continue;
    const Node* inner = uses.sole_use_producer(g, norm->inputs[0], "Reshape");
    if (!inner || !inner->has_input(0)) continue;
    const std::string& x = inner->inputs[0];
    const Shape* xs = shape_of(g, x);
    const Shape* grouped = shape_of(g, inner->outputs[0]);
    const Shape* ys = shape_of(g, outer.outputs[0]);
    if (!xs || !grouped || !ys || xs->size() < 3 || *ys != *xs || grouped->size() != 3) continue;
    if (g.values.at(x).dtype != g.values.at(outer.outputs[0]).dtype) continue;
    const int64_t n = (*xs)[0], c = (*xs)[1], groups = (*grouped)[1];
    if ((*grouped)[0] != n || groups < 1 || c % groups != 0 ||
        (*grouped)[2] * groups * n != numel(*xs))
      continue;
    Node gn;
    gn.name = norm->name;
    gn.op_type = "GroupNormalization";
    gn.inputs = {x, norm->inputs[1], norm->inputs[2]};
    gn.outputs = {outer.outputs[0]};
    gn.attributes["num_groups"].kind = Attribute::Kind::kInt;
    gn.attributes["num_groups"].i = groups;
    gn.attributes["epsilon"].kind = Attribute::Kind::kFloat;
    gn.attributes["epsilon"].f = norm->attr_float("epsilon", 1e-5);
    outer = std::move(gn);
    ++folded;
  }
  return folded;
}

}  // namespace kora
