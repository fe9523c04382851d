// The plan report's graph as DOT (src/report/plan_dot.h): the report's data in; the
// primitive graph with one cluster per kernel, or the kernel graph, as DOT text out.
#include "report/plan_dot.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace kora {
namespace {

// A DOT string: quoted, `"` and `\` escaped; `lines` joined by DOT's centred line break.
std::string quoted(const std::vector<std::string>& lines) {
  std::string q = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) q += "\\n";
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') q += '\\';
      q += c == '\n' ? ' ' : c;
    }
  }
  return q + "\"";
}
std::string quoted(const std::string& s) { return quoted(std::vector<std::string>{s}); }

std::string shortened(const std::string& s, size_t most) {
  return s.size() <= most ? s : s.substr(0, most - 3) + "...";
}

// What a primitive node says: its operation in short, then its output type.
std::vector<std::string> primitive_label(const PlanPrimitive& p) {
  std::string op = p.op.empty() ? p.kind : p.op;
  if (p.kind == "elementwise") op = op.substr(0, op.find('('));  // "add(%0, %1)" -> "add"
  if (p.kind == "broadcast") op = "broadcast";
  std::string type = p.type;
  if (type.rfind("float32 ", 0) == 0) type = type.substr(8);
  return {shortened(op, 30), shortened(type, 30)};
}

const char* kHeader =
    "digraph plan {\n"
    "  graph [rankdir=TB, fontname=\"DejaVu Sans\", fontsize=10, nodesep=0.18, ranksep=0.28,\n"
    "         bgcolor=transparent, labeljust=l];\n"
    "  node [shape=box, style=\"rounded,filled\", fontname=\"DejaVu Sans\", fontsize=8,\n"
    "        height=0.3, margin=\"0.08,0.03\", fillcolor=white, color=\"#6b7280\", penwidth=0.8];\n"
    "  edge [arrowsize=0.5, color=\"#6b7280\", penwidth=0.8];\n";

std::string io_nodes(const PlanReportData& data, const std::vector<std::string>& names,
                     const char* prefix) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto it = data.manifest.tensors.find(names[i]);
    std::vector<std::string> label{shortened(names[i], 30)};
    if (it != data.manifest.tensors.end())
      label.push_back(std::string(dtype_name(it->second.info.dtype)) + " " +
                      shape_str(it->second.info.shape));
    s += fmt::format(
        "  {}{} [id=\"{}_{}\", class=\"io\", shape=ellipse, style=filled, fillcolor=\"#f3f4f6\", "
        "label={}];\n",
        prefix, i, prefix, i, quoted(label));
  }
  return s;
}

std::string cluster_label(const PlanReportData& data, size_t k) {
  const ReportKernel& kernel = data.kernels[k];
  return fmt::format("k{}  {}  {}", k, kernel.info.impl, format_ms(data.shown_ms(kernel)));
}

// Per tensor, the kernels that write it, in run order.
std::map<std::string, std::vector<int>> writers_of(const PlanReportData& data) {
  std::map<std::string, std::vector<int>> writers;
  for (size_t k = 0; k < data.kernels.size(); ++k)
    for (const std::string& t : data.kernels[k].writes) writers[t].push_back(static_cast<int>(k));
  return writers;
}

// The last kernel before `before` that writes `tensor`; -1 if none.
int writer_before(const std::map<std::string, std::vector<int>>& writers, const std::string& tensor,
                  int before) {
  const auto it = writers.find(tensor);
  int found = -1;
  if (it != writers.end())
    for (int k : it->second)
      if (k < before) found = k;
  return found;
}

}  // namespace

ImplColour impl_colour(const std::string& impl) {
  if (impl == "generated") return {"#dbeafe", "#2563eb"};
  if (impl == "onednn") return {"#dcfce7", "#16a34a"};
  if (impl.rfind("interpreter", 0) == 0) return {"#fee2e2", "#dc2626"};
  if (impl.rfind("cublas", 0) == 0) return {"#fef3c7", "#d97706"};
  if (impl.rfind("cudnn", 0) == 0) return {"#ede9fe", "#7c3aed"};
  return {"#e5e7eb", "#4b5563"};
}

int primitive_node_count(const PlanReportData& data) {
  size_t n = 0;
  for (const ReportKernel& k : data.kernels) n += k.primitives.size();
  return static_cast<int>(n);
}

std::string primitive_graph_dot(const PlanReportData& data) {
  const PlanFile& plan = *data.plan;
  std::map<std::string, int> index_of, producer_of;
  for (size_t p = 0; p < plan.primitives.size(); ++p) {
    index_of[plan.primitives[p].name] = static_cast<int>(p);
    for (const std::string& t : plan.primitives[p].outputs) producer_of[t] = static_cast<int>(p);
  }
  std::map<std::string, int> input_index, output_index;
  for (size_t i = 0; i < data.manifest.inputs.size(); ++i)
    input_index[data.manifest.inputs[i]] = static_cast<int>(i);
  const auto writers = writers_of(data);
  // Members of each kernel, by primitive index.
  std::vector<std::set<int>> members(data.kernels.size());
  for (size_t k = 0; k < data.kernels.size(); ++k)
    for (const std::string& name : data.kernels[k].primitives) members[k].insert(index_of.at(name));

  std::string s = kHeader;
  s += io_nodes(data, data.manifest.inputs, "in");
  s += io_nodes(data, data.manifest.outputs, "out");
  std::set<std::pair<std::string, std::string>> edges;
  for (size_t k = 0; k < data.kernels.size(); ++k) {
    const ImplColour colour = impl_colour(data.kernels[k].info.impl);
    s += fmt::format(
        "  subgraph cluster_{} {{\n    id=\"kernel_{}\"; class=\"kernel impl_{}\"; "
        "label={}; style=\"filled,rounded\"; fillcolor=\"{}\"; color=\"{}\"; penwidth=1.2; "
        "fontsize=9;\n",
        k, k, data.kernels[k].info.impl.substr(0, data.kernels[k].info.impl.find(' ')),
        quoted(cluster_label(data, k)), colour.fill, colour.stroke);
    for (int p : members[k])
      s += fmt::format("    k{}_p{} [id=\"k{}_p{}\", class=\"prim\", label={}];\n", k, p, k, p,
                       quoted(primitive_label(plan.primitives[static_cast<size_t>(p)])));
    s += "  }\n";
    for (int p : members[k])
      for (const std::string& t : plan.primitives[static_cast<size_t>(p)].inputs) {
        const std::string to = fmt::format("k{}_p{}", k, p);
        const auto produced = producer_of.find(t);
        if (produced != producer_of.end() && members[k].count(produced->second)) {
          edges.insert({fmt::format("k{}_p{}", k, produced->second), to});
        } else if (input_index.count(t)) {
          edges.insert({fmt::format("in{}", input_index[t]), to});
        } else if (produced != producer_of.end()) {  // written by an earlier kernel
          const int w = writer_before(writers, t, static_cast<int>(k));
          if (w >= 0 && members[static_cast<size_t>(w)].count(produced->second))
            edges.insert({fmt::format("k{}_p{}", w, produced->second), to});
        }  // else a constant
      }
  }
  for (size_t o = 0; o < data.manifest.outputs.size(); ++o) {
    const std::string& t = data.manifest.outputs[o];
    const std::string to = fmt::format("out{}", o);
    const int w = writer_before(writers, t, static_cast<int>(data.kernels.size()));
    const auto produced = producer_of.find(t);
    if (w >= 0 && produced != producer_of.end() &&
        members[static_cast<size_t>(w)].count(produced->second))
      edges.insert({fmt::format("k{}_p{}", w, produced->second), to});
    else if (input_index.count(t))
      edges.insert({fmt::format("in{}", input_index[t]), to});
  }
  for (const auto& [from, to] : edges) s += "  " + from + " -> " + to + ";\n";
  return s + "}\n";
}

std::string kernel_graph_dot(const PlanReportData& data) {
  std::map<std::string, int> input_index;
  for (size_t i = 0; i < data.manifest.inputs.size(); ++i)
    input_index[data.manifest.inputs[i]] = static_cast<int>(i);
  const auto writers = writers_of(data);
  std::string s = kHeader;
  s += io_nodes(data, data.manifest.inputs, "in");
  s += io_nodes(data, data.manifest.outputs, "out");
  std::set<std::pair<std::string, std::string>> edges;
  for (size_t k = 0; k < data.kernels.size(); ++k) {
    const ReportKernel& kernel = data.kernels[k];
    const ImplColour colour = impl_colour(kernel.info.impl);
    const std::string first = kernel.primitives.empty() ? "" : kernel.primitives.front();
    const size_t n = kernel.primitives.size();
    s += fmt::format(
        "  k{} [id=\"kernel_{}\", class=\"kernel impl_{}\", fillcolor=\"{}\", color=\"{}\", "
        "penwidth=1.2, fontsize=9, label={}];\n",
        k, k, kernel.info.impl.substr(0, kernel.info.impl.find(' ')), colour.fill, colour.stroke,
        quoted({cluster_label(data, k),
                shortened(first, 32) + (n > 1 ? fmt::format(" +{}", n - 1) : "")}));
    for (const std::string& t : kernel.reads) {
      const std::string to = fmt::format("k{}", k);
      if (input_index.count(t)) {
        edges.insert({fmt::format("in{}", input_index[t]), to});
      } else {
        const int w = writer_before(writers, t, static_cast<int>(k));
        if (w >= 0) edges.insert({fmt::format("k{}", w), to});
      }
    }
  }
  for (size_t o = 0; o < data.manifest.outputs.size(); ++o) {
    const std::string& t = data.manifest.outputs[o];
    const int w = writer_before(writers, t, static_cast<int>(data.kernels.size()));
    if (w >= 0)
      edges.insert({fmt::format("k{}", w), fmt::format("out{}", o)});
    else if (input_index.count(t))
      edges.insert({fmt::format("in{}", input_index[t]), fmt::format("out{}", o)});
  }
  for (const auto& [from, to] : edges) s += "  " + from + " -> " + to + ";\n";
  return s + "}\n";
}

}  // namespace kora
