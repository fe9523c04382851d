// FissionBuilder: emits primitives into the primitive graph with inferred types.
#include "fission/builder.h"

#include <algorithm>
#include <set>

namespace kora {
namespace {

Shape broadcast_pair(const Shape& a, const Shape& b, const FissionBuilder& fb) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fb.fail("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace

FissionBuilder::FissionBuilder(const Graph& source, PrimGraph& target, const Node& node,
                               std::map<std::string, std::string>& renames)
    : source_(source), target_(target), node_(node), renames_(renames) {}

void FissionBuilder::fail(const std::string& message) const {
  throw Error(node_.describe() + ": " + message);
}

std::string FissionBuilder::in(size_t i) const {
  if (!node_.has_input(i)) return "";
  auto it = renames_.find(node_.inputs[i]);
  return it == renames_.end() ? node_.inputs[i] : it->second;
}

const Tensor& FissionBuilder::require_constant(size_t i, const char* role) const {
  const Tensor* t = has_in(i) ? constant(in(i)) : nullptr;
  if (!t)
    fail(std::string("input '") + (has_in(i) ? node_.inputs[i] : "") + "' (" + role +
         ") must be a constant: kora compiles static shapes");
  return *t;
}

std::string FissionBuilder::fresh_name() {
  std::string name;
  do {
    name = node_.name + "#" + std::to_string(counter_++);
  } while (target_.values.count(name));
  return name;
}

std::string FissionBuilder::emit(PrimAttrs attrs, std::vector<std::string> inputs, ValueInfo out) {
  Primitive p;
  p.name = fresh_name();
  p.origin = node_.name;
  p.inputs = std::move(inputs);
  p.outputs = {p.name};
  p.attrs = std::move(attrs);
  target_.values[p.name] = std::move(out);
  target_.prims.push_back(std::move(p));
  return target_.prims.back().name;
}

std::string FissionBuilder::add_constant(Tensor value) {
  const std::string name = fresh_name();
  target_.values[name] = ValueInfo{value.dtype(), value.shape()};
  target_.constants[name] = std::move(value);
  return name;
}

std::string FissionBuilder::ew(ScalarOp op, std::vector<Arg> args, std::optional<DType> dtype) {
  if (static_cast<int>(args.size()) != scalar_op_arity(op))
    fail(std::string("internal error: ") + scalar_op_name(op) + " takes " +
         std::to_string(scalar_op_arity(op)) + " operands");
  // Result shape and dtype from the tensor operands as given.
  Shape out_shape;
  std::optional<DType> first;
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k].immediate) continue;
    out_shape = broadcast_pair(out_shape, shape(args[k].tensor), *this);
    if (!first && !(op == ScalarOp::kWhere && k == 0)) first = this->dtype(args[k].tensor);
  }
  if (!dtype) dtype = scalar_op_is_predicate(op) ? DType::kBool : first.value_or(DType::kFloat32);
  // Single-element constants become immediates while another tensor operand remains.
  size_t tensors = 0;
  for (const Arg& a : args) tensors += !a.immediate;
  for (Arg& a : args) {
    if (a.immediate || tensors <= 1) continue;
    const Tensor* c = constant(a.tensor);
    if (c && c->numel() == 1 && c->dtype() != DType::kUInt64) {
      const double v = c->double_at(0);
      if (!is_floating(c->dtype()) && static_cast<double>(static_cast<int64_t>(v)) != v) continue;
      if (!is_floating(c->dtype()) && std::abs(v) > 9007199254740992.0) continue;
      a = Arg(v);
      --tensors;
    }
  }
  ElementwiseAttrs attrs{op, {}};
  std::vector<std::string> inputs;
  for (const Arg& a : args) {
    if (a.immediate) {
      attrs.operands.push_back(Operand{-1, a.value});
      continue;
    }
    const std::string t = broadcast(a.tensor, out_shape);
    auto at = std::find(inputs.begin(), inputs.end(), t);
    if (at == inputs.end()) {
      inputs.push_back(t);
      at = inputs.end() - 1;
    }
    attrs.operands.push_back(Operand{static_cast<int>(at - inputs.begin()), 0});
  }
  if (inputs.empty()) fail("internal error: elementwise without tensor operands");
  return emit(attrs, inputs, ValueInfo{*dtype, out_shape});
}

std::string FissionBuilder::reduce(ReduceOp op, const std::string& x, std::vector<int64_t> axes) {
  const Shape& s = shape(x);
  const int64_t r = static_cast<int64_t>(s.size());
  for (int64_t& a : axes) {
    if (a < -r || a >= r) fail("axis " + std::to_string(a) + " out of range");
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty()) return x;
  Shape out = s;
  for (int64_t a : axes) out[a] = 1;
  return emit(ReduceAttrs{op, axes}, {x}, ValueInfo{dtype(x), out});
}

std::string FissionBuilder::broadcast(const std::string& x, const Shape& target) {
  const Shape& s = shape(x);
  if (s == target) return x;
  if (s.size() > target.size())
    fail("cannot broadcast " + shape_str(s) + " to " + shape_str(target));
  Shape padded(target.size() - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t i = 0; i < target.size(); ++i)
    if (padded[i] != 1 && padded[i] != target[i])
      fail("cannot broadcast " + shape_str(s) + " to " + shape_str(target));
  const std::string r = reshape(x, padded);
  if (padded == target) return r;
  return emit(BroadcastAttrs{}, {r}, ValueInfo{dtype(x), target});
}

std::string FissionBuilder::reshape(const std::string& x, const Shape& target) {
  if (shape(x) == target) return x;
  if (numel(shape(x)) != numel(target))
    fail("internal error: reshape " + shape_str(shape(x)) + " to " + shape_str(target));
  return emit(LayoutAttrs{layout::Reshape{}}, {x}, ValueInfo{dtype(x), target});
}

std::string FissionBuilder::transpose(const std::string& x, const std::vector<int64_t>& perm) {
  const Shape& s = shape(x);
  bool identity = true;
  Shape out;
  for (size_t d = 0; d < perm.size(); ++d) {
    identity = identity && perm[d] == static_cast<int64_t>(d);
    out.push_back(s.at(perm[d]));
  }
  if (identity) return x;
  return emit(LayoutAttrs{layout::Transpose{perm}}, {x}, ValueInfo{dtype(x), out});
}

std::string FissionBuilder::layout(LayoutAttrs attrs, const std::vector<std::string>& inputs,
                                   Shape out_shape) {
  return emit(std::move(attrs), inputs, ValueInfo{dtype(inputs.at(0)), std::move(out_shape)});
}

std::string FissionBuilder::matmul(const std::string& a, const std::string& b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  if (sa.size() != sb.size() || sa.size() < 2 || sa.back() != sb[sb.size() - 2])
    fail("internal error: matmul " + shape_str(sa) + " x " + shape_str(sb));
  Shape out =
      broadcast_pair(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2), *this);
  out.push_back(sa[sa.size() - 2]);
  out.push_back(sb.back());
  return emit(LinearAttrs{MatMulAttrs{}}, {a, b}, ValueInfo{dtype(a), out});
}

std::string FissionBuilder::conv(const std::string& x, const std::string& w, ConvAttrs attrs) {
  const Shape& sx = shape(x);
  const Shape& sw = shape(w);
  Shape out{sx[0], sw[0]};
  for (size_t i = 0; i + 2 < sx.size(); ++i) {
    const int64_t span = sx[i + 2] + attrs.pads_begin[i] + attrs.pads_end[i] -
                         attrs.dilations[i] * (sw[i + 2] - 1) - 1;
    if (span < 0) fail("convolution window larger than the padded input");
    out.push_back(span / attrs.strides[i] + 1);
  }
  return emit(LinearAttrs{std::move(attrs)}, {x, w}, ValueInfo{dtype(x), out});
}

void FissionBuilder::opaque() {
  Primitive p;
  p.name = fresh_name();
  p.origin = node_.name;
  OpaqueAttrs attrs{node_};
  for (size_t i = 0; i < node_.inputs.size(); ++i) {
    attrs.node.inputs[i] = in(i);
    if (!attrs.node.inputs[i].empty()) p.inputs.push_back(attrs.node.inputs[i]);
  }
  for (size_t i = 0; i < node_.outputs.size(); ++i) {
    if (!node_.has_output(i)) continue;
    const std::string t = p.name + "." + std::to_string(i);
    attrs.node.outputs[i] = t;
    p.outputs.push_back(t);
    target_.values[t] = out_info(i);
    renames_[node_.outputs[i]] = t;
  }
  p.attrs = std::move(attrs);
  target_.prims.push_back(std::move(p));
}

std::vector<std::string> FissionBuilder::opaque_node(Node node,
                                                     const std::vector<ValueInfo>& outs) {
  Primitive p;
  p.name = fresh_name();
  p.origin = node_.name;
  node.name = p.name;
  for (const std::string& t : node.inputs)
    if (!t.empty()) p.inputs.push_back(t);
  node.outputs.clear();
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string t = p.name + "." + std::to_string(i);
    node.outputs.push_back(t);
    p.outputs.push_back(t);
    target_.values[t] = outs[i];
  }
  p.attrs = OpaqueAttrs{std::move(node)};
  target_.prims.push_back(std::move(p));
  return target_.prims.back().outputs;
}

std::string FissionBuilder::iota(int64_t n, int64_t axis, size_t rank) {
  Shape shape(rank, 1);
  shape.at(static_cast<size_t>(axis)) = n;
  Tensor t(DType::kInt64, shape);
  for (int64_t i = 0; i < n; ++i) set_element_int(t, i, i);
  return add_constant(std::move(t));
}

void FissionBuilder::bind(size_t i, const std::string& tensor) {
  if (!node_.has_output(i)) return;
  const ValueInfo& got = info(tensor);
  const ValueInfo& want = out_info(i);
  if (got.dtype != want.dtype || got.shape != want.shape)
    fail("internal error: fission gives output " + std::to_string(i) + " as " +
         dtype_name(got.dtype) + " " + shape_str(got.shape) + ", the front end inferred " +
         dtype_name(want.dtype) + " " + shape_str(want.shape));
  renames_[node_.outputs[i]] = tensor;
}

}  // namespace kora
