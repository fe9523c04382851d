// Views of a primitive graph for people: text (one line per primitive), JSON (for
// tools), and Graphviz dot.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "kora/fission.h"

namespace kora {
namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// The primitive's own parameters, e.g. "perm=[0,2,1,3]" or "axes=[1] op=max".
std::string attrs_str(const Primitive& p) {
  struct Visitor {
    const Primitive& p;
    std::string operator()(const ElementwiseAttrs& e) const {
      std::string s = scalar_op_name(e.op);
      s += "(";
      for (size_t i = 0; i < e.operands.size(); ++i) {
        const Operand& o = e.operands[i];
        s += i ? ", " : "";
        s += o.input >= 0 ? "%" + std::to_string(o.input) : fmt::format("{:g}", o.value);
      }
      return s + ")";
    }
    std::string operator()(const ReduceAttrs& r) const {
      return std::string(reduce_op_name(r.op)) + " axes=" + ints_str(r.axes);
    }
    std::string operator()(const BroadcastAttrs&) const { return ""; }
    std::string operator()(const LayoutAttrs& l) const {
      std::string s = layout_name(l);
      if (auto* t = std::get_if<layout::Transpose>(&l)) s += " perm=" + ints_str(t->perm);
      if (auto* t = std::get_if<layout::Slice>(&l))
        s += " starts=" + ints_str(t->starts) + " steps=" + ints_str(t->steps);
      if (auto* t = std::get_if<layout::Pad>(&l))
        s += fmt::format(" begin={} stride={} mode={} value={:g}", ints_str(t->begin),
                         ints_str(t->stride), static_cast<int>(t->mode), t->value);
      if (auto* t = std::get_if<layout::Concat>(&l))
        s += fmt::format(" axis={} offsets={}", t->axis, ints_str(t->offsets));
      if (auto* t = std::get_if<layout::Gather>(&l))
        s += fmt::format(
            " axis={} indices={}", t->axis,
            t->indices.size() > 8 ? fmt::format("<{}>", t->indices.size()) : ints_str(t->indices));
      if (auto* t = std::get_if<layout::Window>(&l))
        s += fmt::format(" strides={} dilations={} pads={} fill={:g}{}", ints_str(t->strides),
                         ints_str(t->dilations), ints_str(t->pads_begin), t->fill,
                         t->channels_last ? " channels_last" : "");
      return s;
    }
    std::string operator()(const LinearAttrs& l) const {
      if (std::holds_alternative<MatMulAttrs>(l)) return "matmul";
      const ConvAttrs& c = std::get<ConvAttrs>(l);
      return fmt::format("conv group={} strides={} dilations={} pads={}/{}", c.group,
                         ints_str(c.strides), ints_str(c.dilations), ints_str(c.pads_begin),
                         ints_str(c.pads_end));
    }
    std::string operator()(const OpaqueAttrs& o) const { return o.node.op_type; }
  };
  return std::visit(Visitor{p}, p.attrs);
}

std::string type_str(const ValueInfo& v) {
  return std::string(dtype_name(v.dtype)) + " " + shape_str(v.shape);
}

std::string counts_str(const PrimGraph& g) {
  std::string s;
  for (const auto& [kind, n] : count_by_kind(g))
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", kind, n);
  return s;
}

}  // namespace

std::string format_prim_graph(const PrimGraph& g) {
  std::string s = fmt::format("primitive graph '{}': {} primitives ({})\n", g.name, g.prims.size(),
                              counts_str(g));
  s += fmt::format("inputs ({})\n", g.inputs.size());
  for (const std::string& t : g.inputs) s += fmt::format("  {:<24} {}\n", t, type_str(g.value(t)));
  s += fmt::format("constants ({})\n", g.constants.size());
  s += "primitives\n";
  for (const Primitive& p : g.prims) {
    std::string outs, ins;
    for (const std::string& t : p.outputs) outs += (outs.empty() ? "" : ", ") + t;
    for (const std::string& t : p.inputs)
      ins += (ins.empty() ? "" : ", ") + t + (g.constants.count(t) ? "(const)" : "");
    s += fmt::format("  {} = {} {} ({})  -> {}\n", outs, prim_kind_name(p.kind()), attrs_str(p),
                     ins, type_str(g.value(p.outputs[0])));
  }
  s += fmt::format("outputs ({})\n", g.outputs.size());
  for (const std::string& t : g.outputs) s += fmt::format("  {:<24} {}\n", t, type_str(g.value(t)));
  s += "counts: " + counts_str(g) + "\n";
  return s;
}

std::string prim_graph_json(const PrimGraph& g) {
  nlohmann::json j;
  j["name"] = g.name;
  auto tensor = [&](const std::string& t) {
    const ValueInfo& v = g.value(t);
    return nlohmann::json{{"name", t}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
  };
  j["inputs"] = nlohmann::json::array();
  for (const std::string& t : g.inputs) j["inputs"].push_back(tensor(t));
  j["outputs"] = nlohmann::json::array();
  for (const std::string& t : g.outputs) j["outputs"].push_back(tensor(t));
  j["constants"] = nlohmann::json::array();
  for (const auto& [name, c] : g.constants) j["constants"].push_back(tensor(name));
  j["primitives"] = nlohmann::json::array();
  for (const Primitive& p : g.prims) {
    nlohmann::json outs = nlohmann::json::array();
    for (const std::string& t : p.outputs) outs.push_back(tensor(t));
    j["primitives"].push_back({{"name", p.name},
                               {"kind", prim_kind_name(p.kind())},
                               {"op", attrs_str(p)},
                               {"origin", p.origin},
                               {"inputs", p.inputs},
                               {"outputs", outs},
                               {"flops", prim_flops(g, p)},
                               {"bytes_read", prim_bytes_read(g, p)},
                               {"bytes_written", prim_bytes_written(g, p)}});
  }
  j["counts"] = count_by_kind(g);
  return j.dump(2);
}

std::string prim_graph_dot(const PrimGraph& g) {
  auto quote = [](const std::string& s) {
    std::string q;
    for (char c : s) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return "\"" + q + "\"";
  };
  static const char* const kColors[] = {"lightblue", "khaki",  "lightgrey",
                                        "palegreen", "salmon", "plum"};
  std::string s = "digraph kora {\n  rankdir=TB;\n  node [shape=box, style=filled];\n";
  std::map<std::string, std::string> producer;
  for (const std::string& t : g.inputs) {
    s += fmt::format("  {} [shape=ellipse, fillcolor=white];\n", quote(t));
    producer[t] = t;
  }
  for (const Primitive& p : g.prims) {
    s += fmt::format("  {} [label={}, fillcolor={}];\n", quote(p.name),
                     quote(std::string(prim_kind_name(p.kind())) + " " + attrs_str(p) + "\\n" +
                           type_str(g.value(p.outputs[0]))),
                     kColors[static_cast<int>(p.kind())]);
    for (const std::string& t : p.outputs) producer[t] = p.name;
    for (const std::string& t : p.inputs)
      if (producer.count(t)) s += fmt::format("  {} -> {};\n", quote(producer[t]), quote(p.name));
  }
  for (const std::string& t : g.outputs) {
    s += fmt::format("  {} [shape=ellipse, fillcolor=white];\n", quote("out:" + t));
    if (producer.count(t)) s += fmt::format("  {} -> {};\n", quote(producer[t]), quote("out:" + t));
  }
  return s + "}\n";
}

}  // namespace kora
