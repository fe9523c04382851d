// Operator fission driver. In: an operator graph with static types (front end). Out: the
// primitive graph: each node replaced by the primitives its rule emits, every result
// checked against the front end's inferred type, graph outputs under their ONNX names,
// constant primitives folded (fold.cc) and unused primitives removed.
#include "kora/fission.h"

#include <ostream>
#include <set>

#include "fission/builder.h"
#include "fission/fold.h"

namespace kora {
namespace {

// Renames tensor `from` to `to` everywhere in the primitive graph.
void rename_tensor(PrimGraph& g, const std::string& from, const std::string& to) {
  for (Primitive& p : g.prims) {
    for (std::string& t : p.inputs)
      if (t == from) t = to;
    for (std::string& t : p.outputs)
      if (t == from) t = to;
    if (auto* o = std::get_if<OpaqueAttrs>(&p.attrs)) {
      for (std::string& t : o->node.inputs)
        if (t == from) t = to;
      for (std::string& t : o->node.outputs)
        if (t == from) t = to;
    }
  }
  auto v = g.values.extract(from);
  v.key() = to;
  g.values.insert(std::move(v));
}

// Makes every graph output a tensor of that name: the producing primitive's output is
// renamed, or (for an input, a constant, or a tensor that is two outputs) copied.
void name_outputs(PrimGraph& g, const std::map<std::string, std::string>& renames) {
  std::set<std::string> produced, taken;
  for (const Primitive& p : g.prims) produced.insert(p.outputs.begin(), p.outputs.end());
  for (const std::string& out : g.outputs) {
    auto it = renames.find(out);
    const std::string held = it == renames.end() ? out : it->second;
    if (held == out) continue;
    const bool renamable = produced.count(held) && !taken.count(held) &&
                           std::find(g.outputs.begin(), g.outputs.end(), held) == g.outputs.end();
    if (renamable) {
      rename_tensor(g, held, out);
      taken.insert(out);
      continue;
    }
    Primitive copy;
    copy.name = out + "#copy";
    copy.origin = out;
    copy.inputs = {held};
    copy.outputs = {out};
    copy.attrs = ElementwiseAttrs{ScalarOp::kIdentity, {Operand{0, 0}}};
    g.values[out] = g.value(held);
    g.prims.push_back(std::move(copy));
  }
}

// Removes primitives and constants no graph output depends on.
void prune(PrimGraph& g) {
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::vector<Primitive> kept;
  for (auto it = g.prims.rbegin(); it != g.prims.rend(); ++it) {
    bool needed = false;
    for (const std::string& t : it->outputs) needed = needed || live.count(t);
    if (!needed) continue;
    live.insert(it->inputs.begin(), it->inputs.end());
    kept.push_back(std::move(*it));
  }
  g.prims.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  for (const Primitive& p : g.prims) live.insert(p.outputs.begin(), p.outputs.end());
  live.insert(g.inputs.begin(), g.inputs.end());
  for (auto it = g.constants.begin(); it != g.constants.end();)
    it = live.count(it->first) ? std::next(it) : g.constants.erase(it);
  for (auto it = g.values.begin(); it != g.values.end();)
    it = live.count(it->first) ? std::next(it) : g.values.erase(it);
}

}  // namespace

const FissionTable& fission_rules() {
  static const FissionTable table = [] {
    FissionTable t;
    add_elementwise_fission(t);
    add_linear_fission(t);
    add_normalization_fission(t);
    add_reduce_fission(t);
    add_layout_fission(t);
    add_resize_fission(t);
    add_opaque_fission(t);
    add_indexing_fission(t);
    add_loss_fission(t);
    add_quantize_fission(t);
    add_sampling_fission(t);
    add_random_fission(t);
    add_signal_fission(t);
    add_recurrent_fission(t);
    return t;
  }();
  return table;
}

PrimGraph fission(const Graph& g, const FissionOptions& options) {
  PrimGraph p;
  p.name = g.name;
  p.inputs = g.inputs;
  p.outputs = g.outputs;
  for (const std::string& in : g.inputs) p.values[in] = g.value(in);
  for (const auto& [name, t] : g.constants) {
    p.values[name] = ValueInfo{t.dtype(), t.shape()};
    p.constants[name] = t;
  }
  std::map<std::string, std::string> renames;
  for (const Node& n : g.nodes) {
    auto rule = fission_rules().find(n.op_type);
    if (rule == fission_rules().end())
      throw Error(n.describe() + ": no fission rule for operator '" + n.op_type + "'");
    FissionBuilder b(g, p, n, renames);
    rule->second(b);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.has_output(i) && !renames.count(n.outputs[i]))
        throw Error(n.describe() + ": internal error: fission left output '" + n.outputs[i] +
                    "' unbound");
  }
  name_outputs(p, renames);
  const size_t emitted = p.prims.size();
  int folded = 0;
  if (options.fold_constants) folded = fold_constant_primitives(p);
  prune(p);
  if (options.trace)
    *options.trace << "[fission] " << g.nodes.size() << " operators -> " << emitted
                   << " primitives; " << folded << " folded into constants; " << p.prims.size()
                   << " remain\n";
  return p;
}

std::map<std::string, int> count_by_kind(const PrimGraph& g) {
  std::map<std::string, int> counts;
  for (const Primitive& p : g.prims) ++counts[prim_kind_name(p.kind())];
  return counts;
}

}  // namespace kora
