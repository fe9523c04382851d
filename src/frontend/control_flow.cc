// Control flow expansion (control_flow.h): If, Loop and Scan replaced by the nodes they
// run. A Loop is unrolled one iteration at a time: the node is replaced by one copy of
// its body and a continuation Loop that carries the state (trip count, the condition the
// body computed, the loop-carried values, the scan values so far, the iteration number in
// the attribute kora_iteration), so that shape inference folds the body's condition
// before the continuation decides whether to go on.
#include "frontend/control_flow.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "kora/error.h"

namespace kora {
namespace {

// Unrolling stops with an error past these: a Loop's iterations, and the nodes one
// Loop or Scan expands into.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 16;
constexpr int64_t kMaxUnrolledNodes = int64_t{1} << 20;
constexpr const char* kIterationAttr = "kora_iteration";

[[noreturn]] void fail(const Node& n, const std::string& message) {
  throw Error(n.describe() + ": " + message);
}

// Input i of n, a constant holding one value; `role` names it in the error.
const Tensor& constant_scalar(const Graph& g, const Node& n, size_t i, const std::string& role) {
  const Tensor* t = g.constant(n.inputs[i]);
  if (!t)
    fail(n, "input '" + n.inputs[i] + "' (" + role +
                ") must be a constant: kora expands control flow at compile time");
  if (t->numel() != 1)
    fail(n, role + " must hold one value, it has shape " + shape_str(t->shape()));
  return *t;
}

const Graph& subgraph(const Node& n, const std::string& key) {
  auto it = n.attributes.find(key);
  if (it == n.attributes.end() || it->second.graphs.size() != 1)
    fail(n, "needs the subgraph attribute '" + key + "'");
  return *it->second.graphs[0];
}

// `sub` (at any depth) with the names it reads from the enclosing scope renamed.
std::shared_ptr<const Graph> rename_outer(const Graph& sub,
                                          const std::map<std::string, std::string>& names) {
  auto copy = std::make_shared<Graph>(sub);
  auto rename = [&](std::string& name) {
    auto it = names.find(name);
    if (it != names.end()) name = it->second;
  };
  for (Node& n : copy->nodes) {
    for (std::string& in : n.inputs) rename(in);
    for (auto& [key, attr] : n.attributes)
      for (std::shared_ptr<const Graph>& g : attr.graphs) g = rename_outer(*g, names);
  }
  for (std::string& out : copy->outputs) rename(out);
  return copy;
}

// The nodes (and constants) that replace one control-flow node.
class Expansion {
 public:
  // Tensors of the nodes before `index` have types already (g.values); the names of
  // those from `index` on are reserved too.
  Expansion(Graph& g, size_t index) : g_(g), index_(index), node_(g.nodes[index]) {
    for (size_t k = index; k < g.nodes.size(); ++k)
      for (const std::string& out : g.nodes[k].outputs) taken_.insert(out);
  }

  const Node& node() const { return node_; }
  const Graph& graph() const { return g_; }

  // Replaces the node by what was added.
  void finish() {
    auto at = g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(index_));
    g_.nodes.insert(at, std::make_move_iterator(nodes_.begin()),
                    std::make_move_iterator(nodes_.end()));
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; g_.values.count(name) || taken_.count(name); ++k)
      name = base + "#" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  std::string constant(Tensor t, const std::string& base) {
    const std::string name = fresh(base);
    g_.values[name] = ValueInfo{t.dtype(), t.shape()};
    g_.constants[name] = std::move(t);
    return name;
  }

  Node& add(const std::string& op, std::vector<std::string> inputs,
            std::vector<std::string> outputs) {
    Node n;
    n.op_type = op;
    n.name = node_.name + "/" + op + "_" + std::to_string(nodes_.size());
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    nodes_.push_back(std::move(n));
    return nodes_.back();
  }
  void add(Node n) { nodes_.push_back(std::move(n)); }

  void identity(const std::string& from, const std::string& to) { add("Identity", {from}, {to}); }

  std::string unsqueeze(const std::string& x, int64_t axis, const std::string& base) {
    const std::string out = fresh(base);
    if (g_.opset >= 13) {
      add("Unsqueeze",
          {x, constant(Tensor::from_int64(DType::kInt64, {1}, {axis}), base + ".axes")}, {out});
    } else {
      Attribute axes;
      axes.kind = Attribute::Kind::kInts;
      axes.ints = {axis};
      add("Unsqueeze", {x}, {out}).attributes["axes"] = axes;
    }
    return out;
  }

  // `parts` stacked along a new axis `axis` into `out`.
  void stack(const std::vector<std::string>& parts, int64_t axis, const std::string& out) {
    std::vector<std::string> expanded;
    for (const std::string& p : parts) expanded.push_back(unsqueeze(p, axis, out + ".part"));
    if (expanded.size() == 1) return identity(expanded[0], out);
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = axis;
    add("Concat", expanded, {out}).attributes["axis"] = a;
  }

  // Element `index` of x along `axis` (that axis removed).
  std::string element(const std::string& x, int64_t index, int64_t axis, const std::string& base) {
    const std::string i = constant(Tensor::from_int64(DType::kInt64, {}, {index}), base + ".index");
    const std::string out = fresh(base);
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = axis;
    add("Gather", {x, i}, {out}).attributes["axis"] = a;
    return out;
  }

  // Appends the nodes of `sub` with its formal inputs bound to `inputs` and its own tensors
  // renamed `prefix` + name; returns the tensors that hold its outputs.
  std::vector<std::string> inline_graph(const Graph& sub, const std::vector<std::string>& inputs,
                                        const std::string& prefix) {
    if (sub.inputs.size() != inputs.size())
      fail(node_, "subgraph '" + sub.name + "' takes " + std::to_string(sub.inputs.size()) +
                      " inputs, the node gives it " + std::to_string(inputs.size()));
    std::map<std::string, std::string> names;
    for (size_t k = 0; k < inputs.size(); ++k) names[sub.inputs[k]] = inputs[k];
    for (const auto& [name, t] : sub.constants) names[name] = constant(t, prefix + name);
    const size_t first = nodes_.size();
    for (const Node& sn : sub.nodes) {
      Node n = sn;
      n.name = prefix + sn.name;
      for (std::string& in : n.inputs) {
        auto it = names.find(in);
        if (!in.empty() && it != names.end()) in = it->second;
      }
      for (std::string& out : n.outputs)
        if (!out.empty()) out = names[out] = fresh(prefix + out);
      nodes_.push_back(std::move(n));
    }
    // Nested control flow reads this subgraph's tensors under their new names.
    for (size_t k = first; k < nodes_.size(); ++k)
      for (auto& [key, attr] : nodes_[k].attributes)
        for (std::shared_ptr<const Graph>& g : attr.graphs) g = rename_outer(*g, names);
    std::vector<std::string> outs;
    for (const std::string& out : sub.outputs) {
      auto it = names.find(out);
      outs.push_back(it == names.end() ? out : it->second);  // else from the enclosing scope
    }
    return outs;
  }

 private:
  Graph& g_;
  const size_t index_;
  const Node node_;
  std::vector<Node> nodes_;
  std::set<std::string> taken_;
};

void expand_if(Expansion& e) {
  const Node& n = e.node();
  if (!n.has_input(0)) fail(n, "needs its condition input");
  const bool taken = constant_scalar(e.graph(), n, 0, "If condition").double_at(0) != 0;
  const Graph& branch = subgraph(n, taken ? "then_branch" : "else_branch");
  const std::vector<std::string> outs =
      e.inline_graph(branch, {}, n.name + (taken ? "/then/" : "/else/"));
  if (outs.size() < n.outputs.size())
    fail(n, "branch '" + branch.name + "' has " + std::to_string(outs.size()) +
                " outputs, the node " + std::to_string(n.outputs.size()));
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.has_output(k)) e.identity(outs[k], n.outputs[k]);
}

// Loop(M, cond, v...) with body(iteration, cond, v...) -> (cond, v..., scan...).
void expand_loop(Expansion& e) {
  const Node& n = e.node();
  const Graph& body = subgraph(n, "body");
  if (body.inputs.size() < 2 || body.outputs.size() + 1 < body.inputs.size())
    fail(n,
         "the body must take (iteration, condition, loop-carried values) and return "
         "(condition, loop-carried values, scan outputs)");
  const size_t carried = body.inputs.size() - 2;
  const size_t scans = body.outputs.size() - 1 - carried;
  if (n.inputs.size() < 2 + carried || n.outputs.size() > carried + scans)
    fail(n, "has " + std::to_string(n.inputs.size()) + " inputs and " +
                std::to_string(n.outputs.size()) + " outputs; its body takes " +
                std::to_string(carried) + " loop-carried values and makes " +
                std::to_string(scans) + " scan outputs");
  const int64_t iteration = n.attr_int(kIterationAttr, 0);
  bool go = true;
  if (n.has_input(0))
    go = iteration < constant_scalar(e.graph(), n, 0, "Loop trip count").int64_at(0);
  if (go && n.has_input(1)) {
    if (iteration > 0 && !e.graph().constant(n.inputs[1]))
      fail(n, "the condition its body computes in iteration " + std::to_string(iteration - 1) +
                  " does not fold to a constant: kora unrolls a Loop only while its condition "
                  "is known at compile time");
    go = constant_scalar(e.graph(), n, 1, "Loop condition").double_at(0) != 0;
  }
  const std::vector<std::string> collected(n.inputs.begin() + 2 + carried, n.inputs.end());
  if (go) {
    if (iteration >= kMaxLoopIterations ||
        iteration * static_cast<int64_t>(body.nodes.size()) > kMaxUnrolledNodes)
      fail(n, "runs more than " + std::to_string(iteration) + " iterations of " +
                  std::to_string(body.nodes.size()) +
                  " nodes: kora unrolls Loops, and stops there");
    const std::string prefix = n.name + "/" + std::to_string(iteration) + "/";
    std::vector<std::string> args{
        e.constant(Tensor::from_int64(DType::kInt64, {}, {iteration}), prefix + "iteration"),
        n.has_input(1) ? n.inputs[1]
                       : e.constant(Tensor::from_int64(DType::kBool, {}, {1}), prefix + "cond")};
    args.insert(args.end(), n.inputs.begin() + 2, n.inputs.begin() + 2 + carried);
    const std::vector<std::string> outs = e.inline_graph(body, args, prefix);
    Node next = n;
    next.inputs = {n.has_input(0) ? n.inputs[0] : "", outs[0]};
    next.inputs.insert(next.inputs.end(), outs.begin() + 1, outs.begin() + 1 + carried);
    next.inputs.insert(next.inputs.end(), collected.begin(), collected.end());
    next.inputs.insert(next.inputs.end(), outs.begin() + 1 + carried, outs.end());
    Attribute count;
    count.kind = Attribute::Kind::kInt;
    count.i = iteration + 1;
    next.attributes[kIterationAttr] = count;
    e.add(std::move(next));
    return;
  }
  for (size_t k = 0; k < carried && k < n.outputs.size(); ++k)
    if (n.has_output(k)) e.identity(n.inputs[2 + k], n.outputs[k]);
  for (size_t s = 0; carried + s < n.outputs.size(); ++s) {
    if (!n.has_output(carried + s)) continue;
    if (iteration == 0)
      fail(n, "runs no iteration, so its scan output '" + n.outputs[carried + s] +
                  "' would be empty; kora does not support that");
    std::vector<std::string> parts;
    for (int64_t t = 0; t < iteration; ++t) parts.push_back(collected[t * scans + s]);
    e.stack(parts, 0, n.outputs[carried + s]);
  }
}

// One scan: the body run over `length` steps of the scan inputs (element t, or length-1-t
// where the direction is reversed, along `axes`) from `state`; returns the final states
// and, per scan output, its elements in step order.
struct ScanRun {
  std::vector<std::string> state;
  std::vector<std::vector<std::string>> produced;
};

ScanRun run_scan(Expansion& e, const Graph& body, std::vector<std::string> state,
                 const std::vector<std::string>& inputs, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& dirs, int64_t length, size_t scans,
                 const std::string& prefix) {
  ScanRun run{std::move(state), std::vector<std::vector<std::string>>(scans)};
  const size_t states = run.state.size();
  for (int64_t t = 0; t < length; ++t) {
    const std::string step = prefix + std::to_string(t) + "/";
    std::vector<std::string> args = run.state;
    for (size_t j = 0; j < inputs.size(); ++j)
      args.push_back(e.element(inputs[j], dirs[j] ? length - 1 - t : t, axes[j],
                               step + "scan_input_" + std::to_string(j)));
    const std::vector<std::string> outs = e.inline_graph(body, args, step);
    run.state.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(states));
    for (size_t s = 0; s < scans; ++s) run.produced[s].push_back(outs[states + s]);
  }
  return run;
}

// Scan(state..., scan inputs...) with body(state..., elements...) -> (state..., scan...);
// Scan-8: Scan(sequence_lens, state..., scan inputs...), every tensor with a batch axis 0.
void expand_scan(Expansion& e) {
  const Node& n = e.node();
  const Graph& body = subgraph(n, "body");
  const bool batched = n.has_attr(kScanBatchedAttr);
  const size_t first = batched ? 1 : 0;  // Scan-8's sequence_lens comes first
  const int64_t m = n.attr_int("num_scan_inputs", 0);
  if (m <= 0 || static_cast<size_t>(m) + first > n.inputs.size())
    fail(n, "num_scan_inputs " + std::to_string(m) + " does not fit its " +
                std::to_string(n.inputs.size()) + " inputs");
  const size_t states = n.inputs.size() - first - static_cast<size_t>(m);
  if (body.outputs.size() < states || n.outputs.size() > body.outputs.size())
    fail(n, "its body returns " + std::to_string(body.outputs.size()) + " values for " +
                std::to_string(states) + " states and " + std::to_string(n.outputs.size()) +
                " outputs");
  const size_t scans = body.outputs.size() - states;
  const std::vector<int64_t> in_axes =
      batched ? std::vector<int64_t>(m, 1)
              : n.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  const std::vector<int64_t> in_dirs =
      n.attr_ints(batched ? "directions" : "scan_input_directions", std::vector<int64_t>(m, 0));
  const std::vector<int64_t> out_axes =
      batched ? std::vector<int64_t>(scans, 0)
              : n.attr_ints("scan_output_axes", std::vector<int64_t>(scans, 0));
  const std::vector<int64_t> out_dirs =
      batched ? std::vector<int64_t>(scans, 0)
              : n.attr_ints("scan_output_directions", std::vector<int64_t>(scans, 0));
  if (in_axes.size() != static_cast<size_t>(m) || in_dirs.size() != static_cast<size_t>(m) ||
      out_axes.size() != scans || out_dirs.size() != scans)
    fail(n,
         "scan_input_axes, scan_input_directions (directions), scan_output_axes or "
         "scan_output_directions does not match the scan inputs and outputs");
  const std::vector<std::string> state(
      n.inputs.begin() + static_cast<std::ptrdiff_t>(first),
      n.inputs.begin() + static_cast<std::ptrdiff_t>(first + states));
  const std::vector<std::string> inputs(
      n.inputs.begin() + static_cast<std::ptrdiff_t>(first + states), n.inputs.end());
  std::vector<int64_t> axes;
  int64_t length = -1, batch = -1;
  for (int64_t j = 0; j < m; ++j) {
    const std::string& x = inputs[static_cast<size_t>(j)];
    if (x.empty()) fail(n, "scan input " + std::to_string(j) + " is missing");
    const Shape& s = e.graph().value(x).shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    int64_t axis = in_axes[j];
    if (axis < -rank || axis >= rank)
      fail(n, "scan axis " + std::to_string(axis) + " is out of range for '" + x + "'");
    if (axis < 0) axis += rank;
    axes.push_back(batched ? axis - 1 : axis);  // per batch element, the batch axis is gone
    if (length >= 0 && s[axis] != length)
      fail(n, "scan inputs have different lengths (" + std::to_string(length) + " and " +
                  std::to_string(s[axis]) + ")");
    length = s[axis];
    if (batched) {
      if (batch >= 0 && s[0] != batch) fail(n, "scan inputs have different batch sizes");
      batch = s[0];
    }
  }
  if (length <= 0) fail(n, "scans a sequence of length 0; kora does not support that");
  if (length * std::max<int64_t>(batch, 1) * static_cast<int64_t>(body.nodes.size()) >
      kMaxUnrolledNodes)
    fail(n, "scans " + std::to_string(length) + " steps of " + std::to_string(body.nodes.size()) +
                " nodes: too many for kora to unroll");
  if (!batched) {
    ScanRun run = run_scan(e, body, state, inputs, axes, in_dirs, length, scans, n.name + "/");
    for (size_t k = 0; k < states && k < n.outputs.size(); ++k)
      if (n.has_output(k)) e.identity(run.state[k], n.outputs[k]);
    for (size_t s = 0; states + s < n.outputs.size(); ++s) {
      if (!n.has_output(states + s)) continue;
      std::vector<std::string> parts = run.produced[s];
      if (out_dirs[s]) std::reverse(parts.begin(), parts.end());
      e.stack(parts, out_axes[s], n.outputs[states + s]);
    }
    return;
  }
  // Scan-8: sequence_lens, when given, must say every sequence is whole.
  if (n.has_input(0)) {
    const Tensor* lens = e.graph().constant(n.inputs[0]);
    if (!lens)
      fail(n,
           "sequence_lens is computed at runtime; kora unrolls Scan only over whole "
           "sequences, known at compile time");
    for (int64_t b = 0; b < lens->numel(); ++b)
      if (lens->int64_at(b) != length)
        fail(n, "sequence_lens[" + std::to_string(b) + "] is " + std::to_string(lens->int64_at(b)) +
                    ", not the whole sequence of " + std::to_string(length) +
                    "; kora unrolls Scan only over whole sequences");
  }
  std::vector<std::vector<std::string>> finals(states), outputs(scans);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string prefix = n.name + "/batch" + std::to_string(b) + "/";
    std::vector<std::string> state_b, inputs_b;
    for (size_t k = 0; k < states; ++k)
      state_b.push_back(e.element(state[k], b, 0, prefix + "state_" + std::to_string(k)));
    for (size_t j = 0; j < inputs.size(); ++j)
      inputs_b.push_back(e.element(inputs[j], b, 0, prefix + "input_" + std::to_string(j)));
    ScanRun run = run_scan(e, body, state_b, inputs_b, axes, in_dirs, length, scans, prefix);
    for (size_t k = 0; k < states; ++k) finals[k].push_back(run.state[k]);
    for (size_t s = 0; s < scans; ++s) {
      const std::string seq = e.fresh(prefix + "scan_output_" + std::to_string(s));
      e.stack(run.produced[s], 0, seq);
      outputs[s].push_back(seq);
    }
  }
  for (size_t k = 0; k < states && k < n.outputs.size(); ++k)
    if (n.has_output(k)) e.stack(finals[k], 0, n.outputs[k]);
  for (size_t s = 0; states + s < n.outputs.size(); ++s)
    if (n.has_output(states + s)) e.stack(outputs[s], 0, n.outputs[states + s]);
}

}  // namespace

bool is_control_flow_operator(const std::string& op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

void expand_control_flow(Graph& g, size_t index) {
  Expansion e(g, index);
  const std::string& op = e.node().op_type;
  if (op == "If")
    expand_if(e);
  else if (op == "Loop")
    expand_loop(e);
  else
    expand_scan(e);
  e.finish();
}

}  // namespace kora
