// QDQ groups folded into QLinearConv and QLinearMatMul (qdq_fold.h).
#include "frontend/qdq_fold.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "frontend/op_rules.h"

namespace kora {
namespace {

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// A DequantizeLinear or QuantizeLinear node's parameters, when they are constants.
struct QParams {
  std::string data;                    // the quantized (DQ) or float (Q) input
  const Tensor* scale = nullptr;       // float32
  const Tensor* zero_point = nullptr;  // nullptr: absent
  int64_t axis = 1;                    // as written; normalized by the caller
};

std::optional<QParams> constant_params(const Graph& g, const Node& n) {
  if (!n.domain.empty() || n.attr_int("block_size", 0) != 0 || n.has_attr("output_dtype"))
    return std::nullopt;
  QParams p;
  p.data = n.inputs[0];
  p.scale = g.constant(n.inputs[1]);
  if (!p.scale || p.scale->dtype() != DType::kFloat32 || p.scale->numel() == 0) return std::nullopt;
  if (n.has_input(2)) {
    p.zero_point = g.constant(n.inputs[2]);
    if (!p.zero_point || p.zero_point->shape() != p.scale->shape()) return std::nullopt;
  }
  p.axis = n.attr_int("axis", 1);
  return p;
}

// Per tensor: one scale. Per channel: a vector of `channels` along `axis` of data of
// rank `rank`.
bool per_tensor(const QParams& p) { return p.scale->numel() == 1 && p.scale->shape().size() <= 1; }
bool per_channel(const QParams& p, int64_t rank, int64_t axis, int64_t channels) {
  if (per_tensor(p)) return true;
  const int64_t a = p.axis < 0 ? p.axis + rank : p.axis;
  return a == axis && p.scale->shape() == Shape{channels};
}

class Folder {
 public:
  explicit Folder(Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& out : g.nodes[i].outputs)
        if (!out.empty()) producer_[out] = i;
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) consumers_[in].push_back(i);
    }
    for (const std::string& out : g.outputs) graph_outputs_.insert(out);
  }

  int run() {
    int folded = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!n.domain.empty()) continue;
      if (n.op_type == "Conv" || n.op_type == "MatMul") folded += fold(i);
      if (n.op_type == "Add") folded += fold_add(i);
    }
    if (folded == 0) return 0;
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed_.count(i)) continue;
      auto ins = inserted_.find(i);
      if (ins != inserted_.end())
        for (Node& n : ins->second) kept.push_back(std::move(n));
      else
        kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    return folded;
  }

 private:
  // The node producing `tensor` when it is an operator of the default domain.
  const Node* producer(const std::string& tensor, const char* op_type) const {
    auto it = producer_.find(tensor);
    if (it == producer_.end() || removed_.count(it->second)) return nullptr;
    const Node& n = g_.nodes[it->second];
    return n.op_type == op_type && n.domain.empty() ? &n : nullptr;
  }

  // The one QuantizeLinear reading `tensor`, when nothing else does.
  std::optional<size_t> sole_quantize(const std::string& tensor) const {
    if (graph_outputs_.count(tensor)) return std::nullopt;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    const Node& q = g_.nodes[it->second[0]];
    if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.inputs[0] != tensor)
      return std::nullopt;
    return it->second[0];
  }

  // A new tensor of the graph named `name` (numbered when taken).
  std::string new_tensor(const std::string& name, DType dtype, const Shape& shape) {
    std::string unique = name;
    for (int k = 1; g_.values.count(unique); ++k) unique = name + "_" + std::to_string(k);
    g_.values[unique] = ValueInfo{dtype, shape};
    return unique;
  }

  // A constant zero point: the one given, or a new zero of `dtype`.
  std::string zero_point(const Node& n, size_t input, DType dtype, const std::string& name) {
    if (n.has_input(input)) return n.inputs[input];
    const std::string t = new_tensor(name, dtype, {});
    g_.constants[t] = Tensor(dtype, {});
    return t;
  }

  // A group around the node at `at`: its result read only by a QuantizeLinear (index q),
  // its first two inputs DequantizeLinear nodes (d0, d1), every parameter constant, the
  // first input and the output quantized per tensor.
  struct Group {
    size_t q;
    const Node *d0, *d1;
    QParams p0, p1, out;
  };
  std::optional<Group> match(size_t at) const {
    const Node& op = g_.nodes[at];
    const std::optional<size_t> qi = sole_quantize(op.outputs[0]);
    if (!qi) return std::nullopt;
    const Node* d0 = producer(op.inputs[0], "DequantizeLinear");
    const Node* d1 = producer(op.inputs[1], "DequantizeLinear");
    if (!d0 || !d1) return std::nullopt;
    const std::optional<QParams> p0 = constant_params(g_, *d0), p1 = constant_params(g_, *d1),
                                 out = constant_params(g_, g_.nodes[*qi]);
    if (!p0 || !p1 || !out || !per_tensor(*p0) || !per_tensor(*out)) return std::nullopt;
    return Group{*qi, d0, d1, *p0, *p1, *out};
  }

  size_t fold(size_t at) {
    const Node& op = g_.nodes[at];
    const bool conv = op.op_type == "Conv";
    const std::optional<Group> group = match(at);
    if (!group) return 0;
    const Node& q = g_.nodes[group->q];
    const Node *dx = group->d0, *dw = group->d1;
    const QParams *px = &group->p0, *pw = &group->p1, *py = &group->out;
    const Tensor* w = g_.constant(pw->data);
    if (!w || !is_8bit(w->dtype()) || !is_8bit(g_.value(px->data).dtype)) return 0;
    if (py->zero_point ? !is_8bit(py->zero_point->dtype()) : q.has_attr("output_dtype")) return 0;
    const int64_t wrank = static_cast<int64_t>(w->shape().size());
    if (conv ? !per_channel(*pw, wrank, 0, w->shape()[0])
             : (wrank != 2 || !per_channel(*pw, 2, 1, w->shape()[1])))
      return 0;

    std::string bias;
    if (conv && op.has_input(2)) {
      const Node* db = producer(op.inputs[2], "DequantizeLinear");
      const std::optional<QParams> pb = db ? constant_params(g_, *db) : std::nullopt;
      if (!pb || !bias_matches(*pb, *px, *pw, w->shape()[0])) return 0;
      bias = pb->data;
    }

    Node folded;
    folded.name = op.name;
    folded.op_type = conv ? "QLinearConv" : "QLinearMatMul";
    if (conv) folded.attributes = op.attributes;
    const std::string base = op.name + "/qdq_fold/";
    folded.inputs = {px->data,
                     dx->inputs[1],
                     zero_point(*dx, 2, g_.value(px->data).dtype, base + "x_zero_point"),
                     pw->data,
                     dw->inputs[1],
                     zero_point(*dw, 2, w->dtype(), base + "w_zero_point"),
                     q.inputs[1],
                     zero_point(q, 2, DType::kUInt8, base + "y_zero_point")};
    if (!bias.empty()) folded.inputs.push_back(bias);
    folded.outputs = {q.outputs[0]};
    // The integer operator's own shape rule must agree with the group's result.
    try {
      const std::vector<ValueInfo> out =
          op_rules().at(folded.op_type).infer(InferContext(g_, folded));
      const ValueInfo& want = g_.value(q.outputs[0]);
      if (out.size() != 1 || out[0].dtype != want.dtype || out[0].shape != want.shape) return 0;
    } catch (const Error&) {
      return 0;
    }
    removed_.insert(group->q);
    g_.nodes[at] = std::move(folded);
    producer_[g_.nodes[at].outputs[0]] = at;
    return 1;
  }

  // DequantizeLinear(a) + DequantizeLinear(b), quantized, as onnxruntime's QLinearAdd
  // computes it on x86-64 (MLAS's AVX2 kernel, also used where AVX-512 is present), with
  // r_a = s_a / s_c, r_b = s_b / s_c and F = z_c - (r_a z_a + r_b z_b), all in float32:
  //
  //   y = saturate(round_half_even(fma(a, r_a, fma(b, r_b, F))))     (a and b alike)
  //   y = saturate(round_half_even(fma(b, r_b, F + r_a a)))          (a one value)
  //   y = saturate(round_half_even(fma(a, r_a, F + r_b b)))          (b one value)
  //
  // The literal DequantizeLinear-Add-QuantizeLinear rounds differently on a few elements
  // in 10^5, and a one-step difference grows through the layers after it. A float32 fma
  // is written as double arithmetic rounded to float32 once: the product of an 8-bit
  // integer and a float32 is exact in double, and so is its sum with a float32 of
  // similar magnitude. The group becomes Cast, Mul, Add, Round, Clip and Cast nodes,
  // which fission fuses into one elementwise kernel. Other broadcasts keep the literal
  // form.
  size_t fold_add(size_t at) {
    const Node& op = g_.nodes[at];
    const std::optional<Group> group = match(at);
    if (!group || !per_tensor(group->p1)) return 0;
    const Node& q = g_.nodes[group->q];
    const QParams *pa = &group->p0, *pb = &group->p1, *pc = &group->out;
    const ValueInfo& va = g_.value(pa->data);
    const ValueInfo& vb = g_.value(pb->data);
    const ValueInfo& vc = g_.value(q.outputs[0]);
    if (!is_8bit(vc.dtype) || va.dtype != vc.dtype || vb.dtype != vc.dtype) return 0;
    const bool scalar_a = numel(va.shape) == 1 && va.shape != vc.shape;
    const bool scalar_b = numel(vb.shape) == 1 && vb.shape != vc.shape;
    if (!(scalar_a ? vb.shape == vc.shape
                   : va.shape == vc.shape && (scalar_b || vb.shape == vc.shape)))
      return 0;

    // Each step in double, rounded to float32 once: float32 arithmetic exactly.
    auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    auto value = [](const QParams& p, bool zero) {
      return zero ? (p.zero_point ? p.zero_point->double_at(0) : 0.0) : p.scale->double_at(0);
    };
    const double ra = f32(value(*pa, false) / value(*pc, false));
    const double rb = f32(value(*pb, false) / value(*pc, false));
    const double fixed =
        f32(value(*pc, true) - f32(f32(ra * value(*pa, true)) + f32(rb * value(*pb, true))));
    const std::string base = op.name + "/qdq_fold/";
    std::vector<Node> nodes;
    auto constant = [&](const std::string& name, DType dtype, double v) {
      const std::string t = new_tensor(base + name, dtype, {});
      g_.constants[t] = Tensor::from_double(dtype, {}, {v});
      return t;
    };
    auto node = [&](const char* type, std::vector<std::string> inputs, DType dtype,
                    const Shape& shape, const std::string& out = "") {
      Node n;
      n.op_type = type;
      n.name = base + type + "_" + std::to_string(nodes.size());
      n.inputs = std::move(inputs);
      n.outputs = {out.empty() ? new_tensor(n.name, dtype, shape) : out};
      if (n.op_type == "Cast") {
        Attribute to;
        to.kind = Attribute::Kind::kInt;
        to.i = dtype_to_onnx(dtype);
        n.attributes["to"] = to;
      }
      nodes.push_back(std::move(n));
      return nodes.back().outputs[0];
    };
    const Shape& shape = vc.shape;
    // x r + t in double, rounded to float32: fma(x, r, t) for 8-bit x and float32 t.
    auto fma32 = [&](const std::string& x, double r, const std::string& t, const Shape& s) {
      const std::string x64 = node("Cast", {x}, DType::kFloat64, g_.value(x).shape);
      const std::string t64 = node("Cast", {t}, DType::kFloat64, g_.value(t).shape);
      const std::string p =
          node("Mul", {x64, constant("r", DType::kFloat64, r)}, DType::kFloat64, g_.value(x).shape);
      return node("Cast", {node("Add", {p, t64}, DType::kFloat64, s)}, DType::kFloat32, s);
    };
    std::string y;
    if (scalar_a || scalar_b) {
      // F + r x for the one value, in float32; then the fma of the other.
      const std::string& one = scalar_a ? pa->data : pb->data;
      const std::string& many = scalar_a ? pb->data : pa->data;
      const std::string one32 = node("Cast", {one}, DType::kFloat32, g_.value(one).shape);
      const std::string part =
          node("Mul", {one32, constant("r", DType::kFloat32, scalar_a ? ra : rb)}, DType::kFloat32,
               g_.value(one).shape);
      const std::string f = node("Add", {constant("F", DType::kFloat32, fixed), part},
                                 DType::kFloat32, g_.value(one).shape);
      y = fma32(many, scalar_a ? rb : ra, f, shape);
    } else {
      const std::string inner = fma32(pb->data, rb, constant("F", DType::kFloat32, fixed), shape);
      y = fma32(pa->data, ra, inner, shape);
    }
    const bool u8 = vc.dtype == DType::kUInt8;
    const std::string clipped = node(
        "Clip",
        {node("Round", {y}, DType::kFloat32, shape), constant("lo", DType::kFloat32, u8 ? 0 : -128),
         constant("hi", DType::kFloat32, u8 ? 255 : 127)},
        DType::kFloat32, shape);
    node("Cast", {clipped}, vc.dtype, shape, q.outputs[0]);
    removed_.insert(group->q);
    inserted_[at] = std::move(nodes);
    return 1;
  }

  // An int32 bias with zero point 0 whose scale is x_scale * w_scale, per output channel.
  bool bias_matches(const QParams& pb, const QParams& px, const QParams& pw,
                    int64_t channels) const {
    const Tensor* b = g_.constant(pb.data);
    if (!b || b->dtype() != DType::kInt32 || b->shape() != Shape{channels}) return false;
    if (!per_channel(pb, 1, 0, channels)) return false;
    if (pb.zero_point)
      for (int64_t k = 0; k < pb.zero_point->numel(); ++k)
        if (pb.zero_point->double_at(k) != 0) return false;
    const float xs = static_cast<float>(px.scale->double_at(0));
    for (int64_t k = 0; k < channels; ++k) {
      const double ws = pw.scale->double_at(per_tensor(pw) ? 0 : k);
      const double bs = pb.scale->double_at(per_tensor(pb) ? 0 : k);
      const double want = static_cast<float>(xs * static_cast<float>(ws));
      if (std::abs(bs - want) > 1e-6 * std::abs(want)) return false;
    }
    return true;
  }

  Graph& g_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, std::vector<size_t>> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<size_t> removed_;
  std::map<size_t, std::vector<Node>> inserted_;  // nodes that replace the node at an index
};

}  // namespace

int fold_qdq(Graph& graph) { return Folder(graph).run(); }

std::map<std::string, int> float_qdq_groups(const Graph& graph) {
  static const std::set<std::string> exact = {
      "Identity", "Reshape",      "Flatten",      "Transpose", "Squeeze", "Unsqueeze",
      "MaxPool",  "Slice",        "Gather",       "Split",     "Expand",  "Tile",
      "Pad",      "DepthToSpace", "SpaceToDepth", "Resize"};
  std::map<std::string, const Node*> producer;
  for (const Node& n : graph.nodes)
    for (const std::string& out : n.outputs) producer[out] = &n;
  std::map<std::string, int> groups;
  for (const Node& q : graph.nodes) {
    if (q.op_type != "QuantizeLinear" || !q.domain.empty()) continue;
    auto p = producer.find(q.inputs[0]);
    if (p == producer.end() || exact.count(p->second->op_type) ||
        p->second->op_type == "DequantizeLinear")
      continue;
    for (const std::string& in : p->second->inputs) {
      auto d = producer.find(in);
      if (d != producer.end() && d->second->op_type == "DequantizeLinear") {
        ++groups[p->second->op_type];
        break;
      }
    }
  }
  return groups;
}

}  // namespace kora
