// Names, look-ups and work estimates (FLOPs, bytes) of the primitive IR.
#include "kora/primitive.h"

#include <iterator>

#include "kora/error.h"

namespace kora {

const char* prim_kind_name(PrimKind kind) {
  static const char* const kNames[] = {"elementwise", "reduce", "broadcast",
                                       "layout",      "linear", "opaque"};
  return kNames[static_cast<int>(kind)];
}

namespace {

struct ScalarOpRow {
  const char* name;
  int arity;
};

constexpr ScalarOpRow kScalarOps[] = {
    {"identity", 1}, {"cast", 1},    {"neg", 1},        {"abs", 1},         {"exp", 1},
    {"log", 1},      {"sqrt", 1},    {"rsqrt", 1},      {"reciprocal", 1},  {"tanh", 1},
    {"erf", 1},      {"sigmoid", 1}, {"relu", 1},       {"softplus", 1},    {"floor", 1},
    {"ceil", 1},     {"round", 1},   {"sign", 1},       {"sin", 1},         {"cos", 1},
    {"not", 1},      {"add", 2},     {"sub", 2},        {"mul", 2},         {"div", 2},
    {"pow", 2},      {"max", 2},     {"min", 2},        {"mod", 2},         {"fmod", 2},
    {"equal", 2},    {"less", 2},    {"less_equal", 2}, {"greater", 2},     {"greater_equal", 2},
    {"and", 2},      {"or", 2},      {"xor", 2},        {"where", 3},       {"tan", 1},
    {"asin", 1},     {"acos", 1},    {"atan", 1},       {"sinh", 1},        {"cosh", 1},
    {"asinh", 1},    {"acosh", 1},   {"atanh", 1},      {"bit_not", 1},     {"bit_and", 2},
    {"bit_or", 2},   {"bit_xor", 2}, {"shift_left", 2}, {"shift_right", 2},
};
static_assert(std::size(kScalarOps) == static_cast<size_t>(kLastScalarOp) + 1);

}  // namespace

const char* scalar_op_name(ScalarOp op) { return kScalarOps[static_cast<int>(op)].name; }
int scalar_op_arity(ScalarOp op) { return kScalarOps[static_cast<int>(op)].arity; }

bool scalar_op_is_float_only(ScalarOp op) {
  switch (op) {
    case ScalarOp::kExp:
    case ScalarOp::kLog:
    case ScalarOp::kSqrt:
    case ScalarOp::kRsqrt:
    case ScalarOp::kReciprocal:
    case ScalarOp::kTanh:
    case ScalarOp::kErf:
    case ScalarOp::kSigmoid:
    case ScalarOp::kSoftplus:
    case ScalarOp::kSin:
    case ScalarOp::kCos:
    case ScalarOp::kTan:
    case ScalarOp::kAsin:
    case ScalarOp::kAcos:
    case ScalarOp::kAtan:
    case ScalarOp::kSinh:
    case ScalarOp::kCosh:
    case ScalarOp::kAsinh:
    case ScalarOp::kAcosh:
    case ScalarOp::kAtanh:
      return true;
    default:
      return false;
  }
}

bool scalar_op_is_integer_only(ScalarOp op) {
  switch (op) {
    case ScalarOp::kBitNot:
    case ScalarOp::kBitAnd:
    case ScalarOp::kBitOr:
    case ScalarOp::kBitXor:
    case ScalarOp::kShiftLeft:
    case ScalarOp::kShiftRight:
      return true;
    default:
      return false;
  }
}

bool scalar_op_is_predicate(ScalarOp op) {
  switch (op) {
    case ScalarOp::kEqual:
    case ScalarOp::kLess:
    case ScalarOp::kLessEqual:
    case ScalarOp::kGreater:
    case ScalarOp::kGreaterEqual:
    case ScalarOp::kAnd:
    case ScalarOp::kOr:
    case ScalarOp::kXor:
    case ScalarOp::kNot:
      return true;
    default:
      return false;
  }
}

const char* reduce_op_name(ReduceOp op) {
  static const char* const kNames[] = {"sum", "max", "min", "prod", "mean"};
  return kNames[static_cast<int>(op)];
}

const char* layout_name(const LayoutAttrs& attrs) {
  static const char* const kNames[] = {"transpose", "reshape", "slice", "pad",
                                       "concat",    "gather",  "tile",  "window"};
  return kNames[attrs.index()];
}

std::string Primitive::op_label() const {
  std::string what = prim_kind_name(kind());
  if (const auto* e = std::get_if<ElementwiseAttrs>(&attrs))
    what += std::string(" ") + scalar_op_name(e->op);
  if (const auto* r = std::get_if<ReduceAttrs>(&attrs))
    what += std::string(" ") + reduce_op_name(r->op);
  if (const auto* l = std::get_if<LayoutAttrs>(&attrs)) what += std::string(" ") + layout_name(*l);
  if (const auto* o = std::get_if<OpaqueAttrs>(&attrs)) what += " " + o->node.op_type;
  if (const auto* l = std::get_if<LinearAttrs>(&attrs)) {
    const auto* conv = std::get_if<ConvAttrs>(l);
    what += !conv ? " matmul" : conv->group > 1 ? " grouped conv" : " conv";
  }
  return what;
}

std::string Primitive::describe() const {
  return "primitive '" + name + "' (" + op_label() + ", from node '" + origin + "')";
}

const ValueInfo& PrimGraph::value(const std::string& tensor) const {
  auto it = values.find(tensor);
  if (it == values.end()) throw Error("primitive graph: tensor '" + tensor + "' has no type");
  return it->second;
}

const Tensor* PrimGraph::constant(const std::string& tensor) const {
  auto it = constants.find(tensor);
  return it == constants.end() ? nullptr : &it->second;
}

int64_t prim_flops(const PrimGraph& g, const Primitive& p) {
  const int64_t out = numel(g.value(p.output()).shape);
  switch (p.kind()) {
    case PrimKind::kElementwise:
      return out;
    case PrimKind::kReduce:
      return numel(g.value(p.inputs[0]).shape);
    case PrimKind::kLinear: {
      const Shape& b = g.value(p.inputs[1]).shape;
      if (std::holds_alternative<MatMulAttrs>(std::get<LinearAttrs>(p.attrs)))
        return 2 * out * b[b.size() - 2];
      int64_t per_output = 1;  // C/group * K1 * ... * Kn multiply-adds per output element
      for (size_t i = 1; i < b.size(); ++i) per_output *= b[i];
      return 2 * out * per_output;
    }
    default:
      return 0;
  }
}

int64_t prim_bytes_read(const PrimGraph& g, const Primitive& p) {
  if (p.kind() == PrimKind::kLayout || p.kind() == PrimKind::kBroadcast) {
    // Reads at most what it writes (each output element reads one input element), and
    // never more than its inputs hold.
    int64_t in = 0;
    for (const std::string& t : p.inputs) {
      const ValueInfo& v = g.value(t);
      in += numel(v.shape) * static_cast<int64_t>(dtype_size(v.dtype));
    }
    return std::min(in, prim_bytes_written(g, p));
  }
  int64_t bytes = 0;
  for (const std::string& t : p.inputs) {
    const ValueInfo& v = g.value(t);
    bytes += numel(v.shape) * static_cast<int64_t>(dtype_size(v.dtype));
  }
  return bytes;
}

int64_t prim_bytes_written(const PrimGraph& g, const Primitive& p) {
  int64_t bytes = 0;
  for (const std::string& t : p.outputs) {
    if (t.empty()) continue;
    const ValueInfo& v = g.value(t);
    bytes += numel(v.shape) * static_cast<int64_t>(dtype_size(v.dtype));
  }
  return bytes;
}

bool unit_dims_reshape(const PrimGraph& graph, const Primitive& prim) {
  const auto* layout = std::get_if<LayoutAttrs>(&prim.attrs);
  if (!layout || !std::holds_alternative<layout::Reshape>(*layout) || prim.inputs.size() != 1)
    return false;
  auto squeezed = [](const Shape& s) {
    Shape r;
    for (int64_t d : s)
      if (d != 1) r.push_back(d);
    return r;
  };
  return squeezed(graph.value(prim.inputs[0]).shape) == squeezed(graph.value(prim.output()).shape);
}

}  // namespace kora
