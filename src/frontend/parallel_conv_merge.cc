// Summed convolutions of one input merged into one convolution (parallel_conv_merge.h).
#include "frontend/parallel_conv_merge.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/graph_uses.h"

namespace kora {
namespace {

const Tensor* float_constant(const Graph& g, const std::string& t) {
  const Tensor* c = t.empty() ? nullptr : g.constant(t);
  return c && c->dtype() == DType::kFloat32 ? c : nullptr;
}

const float* floats(const Tensor& t) { return reinterpret_cast<const float*>(t.bytes()); }

// One leaf of the sum: a convolution of x, x scaled per channel (a batch norm, or x with
// scale 1), or a constant.
struct Term {
  const Node* conv = nullptr;
  std::vector<double> scale, shift;  // x's own terms, per channel
  const Tensor* constant = nullptr;
  std::string x;  // the convolution's or the scaled term's input
};

class Merger {
 public:
  Merger(Graph& g, const GraphUses& uses) : g_(g), uses_(uses) {}

  // The tree rooted at `add` as leaves, or nullopt when it is not one this merge takes.
  std::optional<std::vector<Term>> leaves(const Node& add) {
    std::vector<Term> terms;
    for (const std::string& t : add.inputs)
      if (!collect(t, terms)) return std::nullopt;
    return terms;
  }

  bool merge(Node& root, const std::vector<Term>& terms);

 private:
  bool collect(const std::string& t, std::vector<Term>& terms) {
    if (const Tensor* c = float_constant(g_, t)) {
      terms.push_back(Term{nullptr, {}, {}, c, ""});
      return true;
    }
    const Node* n = uses_.private_producer(g_, t);
    if (n && n->op_type == "Add" && n->inputs.size() == 2)
      return collect(n->inputs[0], terms) && collect(n->inputs[1], terms);
    if (n && n->op_type == "Conv" && float_constant(g_, n->inputs.at(1)) &&
        (!n->has_input(2) || float_constant(g_, n->inputs[2])) &&
        n->attr_string("auto_pad", "NOTSET") == "NOTSET") {
      terms.push_back(Term{n, {}, {}, nullptr, n->inputs[0]});
      return true;
    }
    if (n && n->op_type == "BatchNormalization" && n->attr_int("training_mode", 0) == 0 &&
        n->outputs.size() == 1) {
      const Tensor* p[4];
      for (int i = 0; i < 4; ++i)
        if (!(p[i] = float_constant(g_, n->inputs.at(static_cast<size_t>(i) + 1)))) return false;
      const double eps = n->attr_float("epsilon", 1e-5);
      Term term{nullptr, {}, {}, nullptr, n->inputs[0]};
      for (int64_t c = 0; c < p[0]->numel(); ++c) {
        const double a = floats(*p[0])[c] / std::sqrt(double(floats(*p[3])[c]) + eps);
        term.scale.push_back(a);
        term.shift.push_back(floats(*p[1])[c] - floats(*p[2])[c] * a);
      }
      terms.push_back(std::move(term));
      return true;
    }
    if (!n && !g_.constant(t) && g_.values.count(t)) {  // x itself, if the convolutions read it
      const int64_t channels = g_.value(t).shape.size() > 1 ? g_.value(t).shape[1] : 0;
      terms.push_back(Term{nullptr, std::vector<double>(channels, 1.0),
                           std::vector<double>(channels, 0.0), nullptr, t});
      return true;
    }
    return false;
  }

  Graph& g_;
  const GraphUses& uses_;
};

bool Merger::merge(Node& root, const std::vector<Term>& terms) {
  const Shape& ys = g_.value(root.outputs[0]).shape;
  if (ys.size() < 3 || g_.value(root.outputs[0]).dtype != DType::kFloat32) return false;
  const size_t r = ys.size() - 2;
  const Node* first = nullptr;
  int linear_terms = 0;
  for (const Term& t : terms) {
    if (t.constant) continue;
    ++linear_terms;
    if (t.conv && !first) first = t.conv;
  }
  if (!first || linear_terms < 2) return false;
  const std::string x = first->inputs[0];
  const Shape& xs = g_.value(x).shape;
  if (xs.size() != ys.size() || g_.value(x).dtype != DType::kFloat32) return false;
  const int64_t group = first->attr_int("group", 1), cin = xs[1], cout = ys[1];
  const Shape strides = first->attr_ints("strides", Shape(r, 1));
  const Shape dilations = first->attr_ints("dilations", Shape(r, 1));
  // every convolution: same x, group, strides, dilations, odd kernel, padding offset
  Shape kmax(r, 1);
  std::optional<Shape> offset;  // pads minus the kernel's half, begin then end
  bool scaled = false;
  for (const Term& t : terms) {
    if (t.constant) {
      const Shape& cs = t.constant->shape();
      const int64_t n = t.constant->numel();
      // a scalar, or one value per channel ([C, 1, 1], [1, C, 1, 1]; [C] would run along
      // the last dim)
      if (!(n == 1 || (n == cout && cs.size() > r && cs.size() <= ys.size() &&
                       cs[cs.size() - 1 - r] == cout)))
        return false;
      continue;
    }
    if (t.x != x) return false;
    if (!t.conv) {
      scaled = true;
      if (static_cast<int64_t>(t.scale.size()) != cout || cin != cout || g_.value(t.x).shape != ys)
        return false;
      continue;
    }
    const Node& c = *t.conv;
    const Shape& ws = g_.value(c.inputs[1]).shape;
    if (c.attr_int("group", 1) != group || c.attr_ints("strides", Shape(r, 1)) != strides ||
        c.attr_ints("dilations", Shape(r, 1)) != dilations || ws.size() != ys.size() ||
        ws[0] != cout || g_.value(c.outputs[0]).shape != ys)
      return false;
    const Shape pads = c.attr_ints("pads", Shape(2 * r, 0));
    Shape off(2 * r);
    for (size_t i = 0; i < r; ++i) {
      if (ws[2 + i] % 2 == 0) return false;
      const int64_t half = dilations[i] * (ws[2 + i] - 1) / 2;
      off[i] = pads[i] - half;
      off[r + i] = pads[r + i] - half;
      kmax[i] = std::max(kmax[i], ws[2 + i]);
    }
    if (offset && *offset != off) return false;
    offset = off;
  }
  if (scaled) {
    for (int64_t s : strides)
      if (s != 1) return false;
    for (int64_t o : *offset)
      if (o != 0) return false;
  }
  // the merged weight [cout, cin / group, kmax...] and bias [cout]
  Shape wshape{cout, cin / group};
  wshape.insert(wshape.end(), kmax.begin(), kmax.end());
  const int64_t taps = numel(kmax);
  std::vector<double> w(static_cast<size_t>(numel(wshape)), 0.0), bias(cout, 0.0);
  const std::vector<int64_t> kstrides = row_major_strides(kmax);
  for (const Term& t : terms) {
    if (t.constant) {
      for (int64_t o = 0; o < cout; ++o)
        bias[o] += floats(*t.constant)[t.constant->numel() == 1 ? 0 : o];
      continue;
    }
    if (!t.conv) {
      const int64_t per_group = cin / group;
      for (int64_t o = 0; o < cout; ++o) {
        w[(o * per_group + o % per_group) * taps + taps / 2] += t.scale[o];
        bias[o] += t.shift[o];
      }
      continue;
    }
    const Tensor& wt = *g_.constant(t.conv->inputs[1]);
    const Shape& ws = wt.shape();
    const Shape k(ws.begin() + 2, ws.end());
    const int64_t kt = numel(k);
    for (int64_t oi = 0; oi < cout * (cin / group); ++oi)
      for (int64_t tap = 0; tap < kt; ++tap) {
        int64_t rest = tap, at = 0;
        for (size_t i = r; i-- > 0;) {  // the tap's place in the larger kernel, centred
          const int64_t ki = rest % k[i];
          rest /= k[i];
          at += (ki + (kmax[i] - k[i]) / 2) * kstrides[i];
        }
        w[oi * taps + at] += floats(wt)[oi * kt + tap];
      }
    if (t.conv->has_input(2))
      for (int64_t o = 0; o < cout; ++o) bias[o] += floats(*g_.constant(t.conv->inputs[2]))[o];
  }
  // the merged convolution replaces the root
  const std::string wname = root.outputs[0] + "::merged_weight";
  const std::string bname = root.outputs[0] + "::merged_bias";
  if (g_.values.count(wname) || g_.values.count(bname)) return false;
  g_.constants[wname] = Tensor::from_double(DType::kFloat32, wshape, w);
  g_.values[wname] = {DType::kFloat32, wshape};
  Node conv;
  conv.name = first->name;  // a convolution, named as its first (pruned after the merge)
  conv.op_type = "Conv";
  conv.inputs = {x, wname};
  if (std::any_of(bias.begin(), bias.end(), [](double v) { return v != 0; })) {
    g_.constants[bname] = Tensor::from_double(DType::kFloat32, {cout}, bias);
    g_.values[bname] = {DType::kFloat32, {cout}};
    conv.inputs.push_back(bname);
  }
  conv.outputs = {root.outputs[0]};
  auto ints = [&](const char* key, const Shape& v) {
    conv.attributes[key].kind = Attribute::Kind::kInts;
    conv.attributes[key].ints = v;
  };
  Shape pads(2 * r);
  for (size_t i = 0; i < 2 * r; ++i)
    pads[i] = (*offset)[i] + dilations[i % r] * (kmax[i % r] - 1) / 2;
  ints("kernel_shape", kmax);
  ints("strides", strides);
  ints("dilations", dilations);
  ints("pads", pads);
  conv.attributes["group"].kind = Attribute::Kind::kInt;
  conv.attributes["group"].i = group;
  root = std::move(conv);
  return true;
}

}  // namespace

int merge_parallel_convs(Graph& g) {
  int merged = 0;
  // Outermost sums first (reverse topological order): a partial sum read only by another
  // Add is part of that tree, and left without a reader once the tree merges.
  std::optional<GraphUses> uses;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!uses) uses.emplace(g);
    Node& n = g.nodes[i];
    if (n.op_type != "Add" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1)
      continue;
    if (!uses->consumers.count(n.outputs[0]) && !uses->graph_outputs.count(n.outputs[0]))
      continue;  // absorbed by a tree merged before
    Merger m(g, *uses);
    std::optional<std::vector<Term>> terms = m.leaves(n);
    if (terms && m.merge(n, *terms)) {
      ++merged;
      uses.reset();
    }
  }
  return merged;
}

}  // namespace kora
