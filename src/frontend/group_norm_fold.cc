// torch.onnx's GroupNorm (Reshape, InstanceNormalization, Reshape) folded into one
// GroupNormalization (group_norm_fold.h).
#include "frontend/group_norm_fold.h"

#include "frontend/graph_uses.h"

namespace kora {
namespace {

// The node computing `t` when it is an `op` private to the group.
const Node* private_op(const Graph& g, const GraphUses& uses, const std::string& t,
                       const char* op) {
  const Node* n = uses.private_producer(g, t);
  return n && n->op_type == op ? n : nullptr;
}

const Shape* shape_of(const Graph& g, const std::string& t) {
  auto v = g.values.find(t);
  return v == g.values.end() ? nullptr : &v->second.shape;
}

}  // namespace

int fold_group_norm(Graph& g) {
  const GraphUses uses(g);
  int folded = 0;
  for (Node& outer : g.nodes) {
    if (outer.op_type != "Reshape" || !outer.domain.empty() || !outer.has_input(0) ||
        !outer.has_output(0))
      continue;
    const Node* norm = private_op(g, uses, outer.inputs[0], "InstanceNormalization");
    if (!norm || !norm->has_input(0) || !norm->has_input(1) || !norm->has_input(2)) continue;
    const Node* inner = private_op(g, uses, norm->inputs[0], "Reshape");
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
