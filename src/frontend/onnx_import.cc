// ONNX import. In: a .onnx file (protobuf ModelProto, weights inline or in external-data
// files) and ImportOptions. Out: kora's operator graph with static shapes, checked:
// supported opset and operators, no dangling names, no cycles, sane dimensions. Then
// shape inference and constant folding (shape_inference.cc) run on it.
//
// The opset must be kMinOpset..kMaxOpset (11..22), or older with every operator unchanged
// up to kMinOpset (older_opset.cc): then it is read as kMinOpset. Attributes of every kind
// are converted; the subgraphs of If, Loop and Scan are converted like the model's graph
// (shape inference expands them: control_flow.h), any other node holding a subgraph is
// rejected by name. Initializers (tensor_proto.cc), sparse initializers and Constant nodes
// become constants. Symbolic dimensions take ImportOptions::dims (kora's
// --dim NAME=VALUE), else default_dim (1).
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>

#include "frontend/control_flow.h"
#include "frontend/graph_check.h"
#include "frontend/older_opset.h"
#include "frontend/tensor_proto.h"
#include "kora/error.h"
#include "kora/frontend.h"

namespace kora {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 40;

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& model_dir,
                            const std::string& what) {
  using K = Attribute::Kind;
  Attribute out;
  int type = a.type();
  if (type == onnx::AttributeProto::UNDEFINED) {  // very old models: infer from the field set
    if (a.has_f())
      type = onnx::AttributeProto::FLOAT;
    else if (a.has_i())
      type = onnx::AttributeProto::INT;
    else if (a.has_s())
      type = onnx::AttributeProto::STRING;
    else if (a.has_t())
      type = onnx::AttributeProto::TENSOR;
    else if (a.floats_size())
      type = onnx::AttributeProto::FLOATS;
    else if (a.ints_size())
      type = onnx::AttributeProto::INTS;
    else if (a.strings_size())
      type = onnx::AttributeProto::STRINGS;
    else
      throw Error(what + ": attribute '" + a.name() + "' has no type and no value");
  }
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      out.kind = K::kFloat;
      out.f = a.f();
      break;
    case onnx::AttributeProto::INT:
      out.kind = K::kInt;
      out.i = a.i();
      break;
    case onnx::AttributeProto::STRING:
      out.kind = K::kString;
      out.s = a.s();
      break;
    case onnx::AttributeProto::TENSOR:
      out.kind = K::kTensor;
      out.tensors.push_back(
          tensor_from_proto(a.t(), model_dir, what + " attribute '" + a.name() + "'"));
      break;
    case onnx::AttributeProto::SPARSE_TENSOR:
      out.kind = K::kSparseTensor;
      out.tensors.push_back(tensor_from_sparse_proto(a.sparse_tensor(), model_dir,
                                                     what + " attribute '" + a.name() + "'"));
      break;
    case onnx::AttributeProto::GRAPH:
      out.kind = K::kGraph;
      out.num_graphs = 1;
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      out.kind = K::kTypeProto;
      break;
    case onnx::AttributeProto::FLOATS:
      out.kind = K::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      out.kind = K::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = K::kStrings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSORS:
      out.kind = K::kTensors;
      for (const auto& t : a.tensors())
        out.tensors.push_back(
            tensor_from_proto(t, model_dir, what + " attribute '" + a.name() + "'"));
      break;
    case onnx::AttributeProto::GRAPHS:
      out.kind = K::kGraphs;
      out.num_graphs = a.graphs_size();
      break;
    case onnx::AttributeProto::SPARSE_TENSORS:
      out.kind = K::kSparseTensors;
      break;
    case onnx::AttributeProto::TYPE_PROTOS:
      out.kind = K::kTypeProtos;
      break;
    default:
      throw Error(what + ": attribute '" + a.name() + "' has unknown type " + std::to_string(type));
  }
  return out;
}

// The tensor a Constant node defines, from whichever value attribute it carries.
Tensor constant_value(const Node& n) {
  if (const Tensor* t = n.attr_tensor("value")) return *t;
  if (const Tensor* t = n.attr_tensor("sparse_value")) return *t;
  auto it = n.attributes.find("value_float");
  if (it != n.attributes.end()) return Tensor::from_double(DType::kFloat32, {}, {it->second.f});
  it = n.attributes.find("value_floats");
  if (it != n.attributes.end())
    return Tensor::from_double(DType::kFloat32, {static_cast<int64_t>(it->second.floats.size())},
                               it->second.floats);
  it = n.attributes.find("value_int");
  if (it != n.attributes.end()) return Tensor::from_int64(DType::kInt64, {}, {it->second.i});
  it = n.attributes.find("value_ints");
  if (it != n.attributes.end())
    return Tensor::from_int64(DType::kInt64, {static_cast<int64_t>(it->second.ints.size())},
                              it->second.ints);
  if (n.has_attr("value_string") || n.has_attr("value_strings"))
    throw Error(n.describe() + ": string constants are not supported");
  throw Error(n.describe() + ": Constant without a value attribute");
}

ValueInfo input_value_info(const onnx::ValueInfoProto& vi, const ImportOptions& options) {
  const std::string what = "graph input '" + vi.name() + "'";
  if (!vi.has_type() || !vi.type().has_tensor_type())
    throw Error(what + ": only tensor inputs are supported (not sequences, maps or optionals)");
  const auto& tt = vi.type().tensor_type();
  auto dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype)
    throw Error(what + ": element type " + onnx_dtype_name(tt.elem_type()) + " is not supported");
  if (!tt.has_shape())
    throw Error(what + ": has no shape (unknown rank); kora needs static shapes");
  ValueInfo info{*dtype, {}};
  int64_t total = 1;
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto& dim = tt.shape().dim(d);
    int64_t v = options.default_dim;
    if (dim.has_dim_value()) {
      v = dim.dim_value();
    } else if (dim.has_dim_param()) {
      auto it = options.dims.find(dim.dim_param());
      if (it != options.dims.end()) v = it->second;
    }
    if (v < 0)
      throw Error(what + ": dimension " + std::to_string(d) + " is negative (" + std::to_string(v) +
                  ")");
    if (v > kMaxDim || (v > 0 && total > kMaxElements / v))
      throw Error(what + ": dimension " + std::to_string(d) + " (" + std::to_string(v) +
                  ") is absurdly large");
    total *= v;
    info.shape.push_back(v);
  }
  return info;
}

void add_initializers(const onnx::GraphProto& gp, Graph& g, const std::string& model_dir) {
  for (const auto& init : gp.initializer()) {
    Tensor t = tensor_from_proto(init, model_dir, "initializer '" + init.name() + "'");
    if (is_floating(t.dtype())) g.parameter_count += t.numel();
    g.values[init.name()] = ValueInfo{t.dtype(), t.shape()};
    g.constants[init.name()] = std::move(t);
  }
  for (const auto& init : gp.sparse_initializer()) {
    const std::string name = init.values().name();
    Tensor t = tensor_from_sparse_proto(init, model_dir, "sparse initializer '" + name + "'");
    if (is_floating(t.dtype())) g.parameter_count += t.numel();
    g.values[name] = ValueInfo{t.dtype(), t.shape()};
    g.constants[name] = std::move(t);
  }
}

void add_nodes(const onnx::GraphProto& gp, Graph& g, const std::string& model_dir);

// A subgraph of If, Loop or Scan: its initializers and Constant nodes as constants, its
// formal inputs and outputs by name, its nodes converted like the model's.
std::shared_ptr<const Graph> convert_subgraph(const onnx::GraphProto& gp, int64_t opset,
                                              const std::string& model_dir) {
  auto sub = std::make_shared<Graph>();
  sub->name = gp.name();
  sub->opset = opset;
  add_initializers(gp, *sub, model_dir);
  for (const auto& vi : gp.input())
    if (!sub->constants.count(vi.name())) sub->inputs.push_back(vi.name());
  for (const auto& vo : gp.output()) sub->outputs.push_back(vo.name());
  add_nodes(gp, *sub, model_dir);
  return sub;
}

void add_nodes(const onnx::GraphProto& gp, Graph& g, const std::string& model_dir) {
  for (int idx = 0; idx < gp.node_size(); ++idx) {
    const onnx::NodeProto& np = gp.node(idx);
    Node n;
    n.op_type = np.op_type();
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(idx) : np.name();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    if (!n.domain.empty())
      throw Error(n.describe() + ": operator domain '" + n.domain +
                  "' is not supported (only the default ONNX domain)");
    if (n.op_type != "Constant" && !is_supported_operator(n.op_type))
      throw Error(n.describe() + ": operator '" + n.op_type + "' (opset " +
                  std::to_string(g.opset) + ") is not supported");
    if (g.opset < kMinOpset) check_unchanged_since(n, g.opset);
    if (n.op_type == "Scan" && g.opset == 8) {  // Scan-8: batch axis 0, sequence_lens first
      Attribute batched;
      batched.kind = Attribute::Kind::kInt;
      batched.i = 1;
      n.attributes[kScanBatchedAttr] = batched;
    }
    const bool control_flow = is_control_flow_operator(n.op_type);
    for (const auto& a : np.attribute()) {
      Attribute& attr = n.attributes[a.name()] = convert_attribute(a, model_dir, n.describe());
      if (attr.num_graphs > 0 && !control_flow)
        throw Error(n.describe() + ": attribute '" + a.name() +
                    "' holds a subgraph; not supported");
      if (attr.kind == Attribute::Kind::kGraph)
        attr.graphs.push_back(convert_subgraph(a.g(), g.opset, model_dir));
      if (attr.kind == Attribute::Kind::kGraphs)
        for (const auto& sub : a.graphs())
          attr.graphs.push_back(convert_subgraph(sub, g.opset, model_dir));
    }
    if (n.op_type == "Constant") {
      if (n.outputs.size() != 1) throw Error(n.describe() + ": Constant needs one output");
      if (g.values.count(n.outputs[0]))
        throw Error(n.describe() + ": tensor '" + n.outputs[0] +
                    "' is already defined (ONNX names each tensor once)");
      Tensor t = constant_value(n);
      if (is_floating(t.dtype())) g.parameter_count += t.numel();
      g.values[n.outputs[0]] = ValueInfo{t.dtype(), t.shape()};
      g.constants[n.outputs[0]] = std::move(t);
      continue;
    }
    g.nodes.push_back(std::move(n));
  }
}

}  // namespace

Graph import_onnx(const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open model file '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();

  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph() ||
      model.ir_version() <= 0)
    throw Error("'" + path + "' is not a valid ONNX model (truncated or corrupt file?)");
  const std::string model_dir = std::filesystem::path(path).parent_path().string();
  auto trace = [&](const std::string& line) {
    if (options.trace) *options.trace << "[frontend] " << line << "\n";
  };

  Graph g;
  g.name = model.graph().name();
  g.producer = model.producer_name();
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
  if (g.opset == 0) throw Error("'" + path + "' imports no version of the default ONNX domain");
  if (g.opset > kMaxOpset)
    throw Error("'" + path + "' uses ONNX opset " + std::to_string(g.opset) +
                "; kora supports opsets " + std::to_string(kMinOpset) + " to " +
                std::to_string(kMaxOpset) + " (and older ones for operators unchanged since then)");
  const int64_t model_opset = g.opset;
  trace("read '" + path + "': " + std::to_string(bytes.size()) + " bytes, ir_version " +
        std::to_string(model.ir_version()) + ", opset " + std::to_string(g.opset));

  const onnx::GraphProto& gp = model.graph();
  add_initializers(gp, g, model_dir);
  for (const auto& vi : gp.input()) {
    if (g.constants.count(vi.name())) continue;  // an initializer listed as input (IR < 4)
    if (g.values.count(vi.name()))
      throw Error("graph input '" + vi.name() + "' is listed twice among the graph's inputs");
    ValueInfo info = input_value_info(vi, options);
    auto bound = options.constant_inputs.find(vi.name());
    if (bound != options.constant_inputs.end()) {
      const Tensor& t = bound->second;
      if (t.dtype() != info.dtype || t.shape().size() != info.shape.size())
        throw Error("graph input '" + vi.name() + "' is " + dtype_name(info.dtype) + " of rank " +
                    std::to_string(info.shape.size()) + ", the bound value is " +
                    dtype_name(t.dtype()) + " " + shape_str(t.shape()));
      g.values[vi.name()] = ValueInfo{t.dtype(), t.shape()};
      g.constants[vi.name()] = t;
      continue;
    }
    g.values[vi.name()] = info;
    g.inputs.push_back(vi.name());
  }
  for (const auto& [name, t] : options.constant_inputs)
    if (!g.values.count(name))
      throw Error("--constant names '" + name + "', which is not a graph input");
  for (const auto& vo : gp.output()) g.outputs.push_back(vo.name());

  add_nodes(gp, g, model_dir);
  if (model_opset < kMinOpset) {
    trace("opset " + std::to_string(model_opset) + ": every operator is unchanged up to opset " +
          std::to_string(kMinOpset) + ", read as opset " + std::to_string(kMinOpset));
    g.opset = kMinOpset;
  }
  trace(std::to_string(g.nodes.size()) + " nodes, " + std::to_string(g.inputs.size()) +
        " inputs, " + std::to_string(g.outputs.size()) + " outputs, " +
        std::to_string(g.constants.size()) + " constants");

  sort_and_check(g);
  infer_shapes(g, options);
  return g;
}

}  // namespace kora
