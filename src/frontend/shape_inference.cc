// Static shape and dtype inference with constant folding. In: an operator graph in
// topological order whose inputs and constants have types. Out: graph.values holds the
// dtype and shape of every tensor; shape arithmetic is folded into graph.constants; nodes
// that no longer contribute to an output are removed.
//
// A rule (op_rules.h) maps input types and the values of constant inputs to output types;
// operators whose output shape depends on an input's value (Reshape, Expand, Slice,
// Resize, ...) require that input to be constant. A node is folded (constant_fold.h) when
// its inputs are constants (Shape and Size need only the input's shape) and its results
// hold at most 4M (2^22) elements; each folded value must have the inferred type.
// Control flow (If, Loop, Scan) is replaced by the nodes it runs when inference reaches
// it, once what decides the control (condition, trip count) has folded. QDQ groups
// become the integer operators (qdq_fold.h), PyTorch's GroupNorm export one
// GroupNormalization (group_norm_fold.h), summed convolutions of one input one
// convolution (parallel_conv_merge.h), before nodes without a use are removed.
#include <ostream>
#include <set>

#include "frontend/constant_fold.h"
#include "frontend/control_flow.h"
#include "frontend/group_norm_fold.h"
#include "frontend/op_rules.h"
#include "frontend/parallel_conv_merge.h"
#include "frontend/qdq_fold.h"
#include "kora/frontend.h"

namespace kora {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 40;
// Larger constant results are left to later stages rather than materialized here.
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

void check_arity(const Node& n, const OpRule& rule) {
  const int given = static_cast<int>(n.inputs.size());
  int present = 0;
  for (const std::string& in : n.inputs) present += !in.empty();
  if (given < rule.min_inputs || (rule.max_inputs >= 0 && given > rule.max_inputs) ||
      (present == 0 && rule.min_inputs > 0))
    throw Error(n.describe() + ": has " + std::to_string(given) + " inputs, the operator takes " +
                std::to_string(rule.min_inputs) +
                (rule.max_inputs < 0 ? " or more"
                                     : (rule.max_inputs == rule.min_inputs
                                            ? std::string()
                                            : " to " + std::to_string(rule.max_inputs))));
}

void check_output_shape(const Node& n, const std::string& tensor, const Shape& shape) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxDim || (d > 0 && total > kMaxElements / d))
      throw Error(n.describe() + ": output '" + tensor + "' gets the absurd shape " +
                  shape_str(shape));
    total *= d;
  }
}

bool all_inputs_constant(const Graph& g, const Node& n) {
  for (const std::string& in : n.inputs)
    if (!in.empty() && !g.is_constant(in)) return false;
  return true;
}

// Removes nodes whose outputs all became constants, then nodes and constants that no
// graph output depends on. Graph inputs stay, used or not.
void prune(Graph& g) {
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::vector<Node> kept;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    bool needed = false, computed = false;
    for (const std::string& out : it->outputs) {
      if (out.empty() || g.is_constant(out)) continue;
      computed = true;
      needed = needed || live.count(out);
    }
    if (!computed || !needed) continue;
    for (const std::string& in : it->inputs) live.insert(in);
    kept.push_back(std::move(*it));
  }
  g.nodes.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  for (auto it = g.constants.begin(); it != g.constants.end();)
    it = live.count(it->first) ? std::next(it) : g.constants.erase(it);
  for (const Node& n : g.nodes)
    for (const std::string& out : n.outputs) live.insert(out);
  for (const std::string& in : g.inputs) live.insert(in);
  for (auto it = g.values.begin(); it != g.values.end();)
    it = live.count(it->first) ? std::next(it) : g.values.erase(it);
}

}  // namespace

void infer_shapes(Graph& g, const ImportOptions& options) {
  int folded = 0;
  const size_t before = g.nodes.size();
  for (size_t at = 0; at < g.nodes.size();) {
    if (is_control_flow_operator(g.nodes[at].op_type)) {
      expand_control_flow(g, at);  // the nodes it runs now start at `at`
      continue;
    }
    const Node& n = g.nodes[at++];
    auto rule = op_rules().find(n.op_type);
    if (rule == op_rules().end())
      throw Error(n.describe() + ": operator '" + n.op_type + "' (opset " +
                  std::to_string(g.opset) + ") is not supported");
    check_arity(n, rule->second);
    InferContext ctx(g, n);
    std::vector<ValueInfo> outs = rule->second.infer(ctx);
    if (n.outputs.size() > outs.size())
      throw Error(n.describe() + ": has " + std::to_string(n.outputs.size()) +
                  " outputs, the operator defines " + std::to_string(outs.size()));
    outs.resize(n.outputs.size());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      check_output_shape(n, n.outputs[i], outs[i].shape);
      g.values[n.outputs[i]] = outs[i];
    }
    if (!options.fold_constants) continue;
    if (!(folds_from_shapes(n.op_type) || all_inputs_constant(g, n))) continue;
    int64_t elements = 0;
    for (const ValueInfo& v : outs) elements += numel(v.shape);
    if (elements > kMaxFoldElements) continue;
    std::optional<std::vector<Tensor>> values = fold_node(ctx, outs);
    if (!values) continue;
    for (size_t i = 0; i < values->size(); ++i) {
      const Tensor& t = (*values)[i];
      if (t.dtype() != outs[i].dtype || t.shape() != outs[i].shape)
        throw Error(n.describe() + ": internal error: folded value " + dtype_name(t.dtype()) + " " +
                    shape_str(t.shape()) + " disagrees with inferred " + dtype_name(outs[i].dtype) +
                    " " + shape_str(outs[i].shape));
      g.constants[n.outputs[i]] = t;
    }
    ++folded;
  }
  int qdq = 0, group_norms = 0, conv_sums = 0;
  if (options.fold_constants) {
    qdq = fold_qdq(g);
    group_norms = fold_group_norm(g);
    conv_sums = merge_parallel_convs(g);
    prune(g);
  }
  if (options.trace)
    *options.trace << "[frontend] shapes inferred for " << before << " nodes; " << folded
                   << " folded into constants; " << qdq
                   << " QDQ groups folded into integer operators; " << group_norms
                   << " GroupNorm exports folded into GroupNormalization; " << conv_sums
                   << " sums of convolutions of one input merged into one; " << g.nodes.size()
                   << " nodes remain\n";
}

}  // namespace kora
