// Code generation for elementwise/broadcast kernels (include/kora/cpu_codegen.h). For each
// written tensor: a loop over its elements, the coordinates from the flat index, then
// value(tensor, coordinates) expanded recursively: an external tensor is a load at its
// row-major offset, an elementwise member applies its scalar function to its operands at
// the same coordinates, a broadcast member reads its input with size-1 dimensions at 0.
// Each (tensor, coordinates) pair becomes one local, so shared subexpressions are
// computed once per element.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "kora/cpu_codegen.h"
#include "kora/error.h"

namespace kora {
namespace {

bool float_op(ScalarOp op) {
  switch (op) {
    case ScalarOp::kNot:
    case ScalarOp::kAnd:
    case ScalarOp::kOr:
    case ScalarOp::kXor:
    case ScalarOp::kWhere:
      return false;
    default:
      return !scalar_op_is_predicate(op);
  }
}

std::string literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9gf", v);
  std::string s = buf;
  if (s == "inff") return "INFINITY";
  if (s == "-inff") return "(-INFINITY)";
  if (s == "nanf" || s == "-nanf") return "NAN";
  return "(" + s + ")";
}

// The C++ expression of a scalar function (semantics as src/interpreter/elementwise.cc).
std::string scalar_expr(ScalarOp op, const std::vector<std::string>& a) {
  switch (op) {
    case ScalarOp::kIdentity:
    case ScalarOp::kCast:
      return a[0];
    case ScalarOp::kNeg:
      return "(-" + a[0] + ")";
    case ScalarOp::kAbs:
      return "std::fabs(" + a[0] + ")";
    case ScalarOp::kExp:
      return "std::exp(" + a[0] + ")";
    case ScalarOp::kLog:
      return "std::log(" + a[0] + ")";
    case ScalarOp::kSqrt:
      return "std::sqrt(" + a[0] + ")";
    case ScalarOp::kRsqrt:
      return "(1.0f / std::sqrt(" + a[0] + "))";
    case ScalarOp::kReciprocal:
      return "(1.0f / " + a[0] + ")";
    case ScalarOp::kTanh:
      return "std::tanh(" + a[0] + ")";
    case ScalarOp::kErf:
      return "std::erf(" + a[0] + ")";
    case ScalarOp::kSigmoid:
      return "kora_sigmoid(" + a[0] + ")";
    case ScalarOp::kRelu:
      return "kora_relu(" + a[0] + ")";
    case ScalarOp::kSoftplus:
      return "kora_softplus(" + a[0] + ")";
    case ScalarOp::kFloor:
      return "std::floor(" + a[0] + ")";
    case ScalarOp::kCeil:
      return "std::ceil(" + a[0] + ")";
    case ScalarOp::kRound:
      return "std::nearbyint(" + a[0] + ")";
    case ScalarOp::kSign:
      return "kora_sign(" + a[0] + ")";
    case ScalarOp::kSin:
      return "std::sin(" + a[0] + ")";
    case ScalarOp::kCos:
      return "std::cos(" + a[0] + ")";
    case ScalarOp::kAdd:
      return "(" + a[0] + " + " + a[1] + ")";
    case ScalarOp::kSub:
      return "(" + a[0] + " - " + a[1] + ")";
    case ScalarOp::kMul:
      return "(" + a[0] + " * " + a[1] + ")";
    case ScalarOp::kDiv:
      return "(" + a[0] + " / " + a[1] + ")";
    case ScalarOp::kPow:
      return "std::pow(" + a[0] + ", " + a[1] + ")";
    case ScalarOp::kMax:
      return "kora_max(" + a[0] + ", " + a[1] + ")";
    case ScalarOp::kMin:
      return "kora_min(" + a[0] + ", " + a[1] + ")";
    case ScalarOp::kMod:
      return "kora_mod(" + a[0] + ", " + a[1] + ")";
    case ScalarOp::kFmod:
      return "std::fmod(" + a[0] + ", " + a[1] + ")";
    default:
      throw Error(std::string("cpu codegen: scalar function ") + scalar_op_name(op) +
                  " is not generated for float32");
  }
}

class Generator {
 public:
  Generator(const PrimGraph& graph, const KernelDag& dag, const Candidate& c)
      : graph_(graph), reads_(kernel_reads(graph, dag, c)), writes_(kernel_writes(graph, dag, c)) {
    for (int v : c.members)
      producer_[graph.prims[dag.prim[v]].output()] = &graph.prims[dag.prim[v]];
  }

  GeneratedKernel run(const std::string& symbol) {
    std::ostringstream os;
    os << "extern \"C\" void " << symbol << "(const float* const* in, float* const* out) {\n";
    for (size_t i = 0; i < writes_.size(); ++i) {
      const Shape& shape = graph_.value(writes_[i]).shape;
      const int64_t n = numel(shape);
      locals_.clear();
      body_.str("");
      std::vector<std::string> coords;
      int64_t stride = 1;
      std::vector<std::string> lines;
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        const std::string name = "c" + std::to_string(d);
        lines.push_back("    const int64_t " + name + " = i / " + std::to_string(stride) + "LL % " +
                        std::to_string(shape[d]) + "LL;\n");
        stride *= shape[d];
      }
      for (int d = 0; d < static_cast<int>(shape.size()); ++d)
        coords.push_back("c" + std::to_string(d));
      const std::string result = value(writes_[i], coords);
      os << "  // " << writes_[i] << "\n";
      os << "  for (int64_t i = 0; i < " << n << "LL; ++i) {\n";
      for (auto it = lines.rbegin(); it != lines.rend(); ++it) os << *it;
      os << body_.str() << "    out[" << i << "][i] = " << result << ";\n  }\n";
    }
    os << "}\n";
    return {symbol, os.str(), reads_, writes_};
  }

 private:
  // A local holding `tensor` at `coords`, emitting its computation on first use.
  std::string value(const std::string& tensor, const std::vector<std::string>& coords) {
    std::string key = tensor;
    for (const std::string& c : coords) key += "|" + c;
    if (auto it = locals_.find(key); it != locals_.end()) return it->second;
    std::string expr;
    auto p = producer_.find(tensor);
    if (p == producer_.end()) {
      const auto r = std::find(reads_.begin(), reads_.end(), tensor);
      if (r == reads_.end()) throw Error("cpu codegen: tensor '" + tensor + "' is not read");
      expr = "in[" + std::to_string(r - reads_.begin()) + "][" +
             offset(graph_.value(tensor).shape, coords) + "]";
    } else {
      const Primitive& prim = *p->second;
      if (const auto* e = std::get_if<ElementwiseAttrs>(&prim.attrs)) {
        std::vector<std::string> args;
        for (const Operand& o : e->operands)
          args.push_back(o.input < 0 ? literal(o.value) : value(prim.inputs[o.input], coords));
        expr = scalar_expr(e->op, args);
      } else if (std::holds_alternative<BroadcastAttrs>(prim.attrs)) {
        const Shape& in = graph_.value(prim.inputs[0]).shape;
        std::vector<std::string> c = coords;
        for (size_t d = 0; d < in.size(); ++d)
          if (in[d] == 1) c[d] = "0";
        expr = value(prim.inputs[0], c);
      } else {
        throw Error("cpu codegen: " + prim.describe() + " is not generated yet");
      }
    }
    const std::string name = "v" + std::to_string(locals_.size());  // after the operands
    body_ << "    const float " << name << " = " << expr << ";\n";
    locals_[key] = name;
    return name;
  }

  static std::string offset(const Shape& shape, const std::vector<std::string>& coords) {
    std::string s = "0";
    int64_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (shape[d] != 1 && coords[d] != "0")
        s += " + " + coords[d] + " * " + std::to_string(stride) + "LL";
      stride *= shape[d];
    }
    return s;
  }

  const PrimGraph& graph_;
  std::vector<std::string> reads_, writes_;
  std::map<std::string, const Primitive*> producer_;
  std::map<std::string, std::string> locals_;
  std::ostringstream body_;
};

}  // namespace

bool cpu_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    if (const auto* e = std::get_if<ElementwiseAttrs>(&p.attrs)) {
      if (!float_op(e->op)) return false;
    } else if (!std::holds_alternative<BroadcastAttrs>(p.attrs)) {
      return false;
    }
    if (graph.value(p.output()).dtype != DType::kFloat32) return false;
    for (const std::string& t : p.inputs)
      if (graph.value(t).dtype != DType::kFloat32) return false;
  }
  return !c.members.empty();
}

GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol) {
  return Generator(graph, dag, c).run(symbol);
}

std::string cpu_codegen_prelude() {
  return R"(// Generated by kora (src/cpu/codegen.cc).
#include <cmath>
#include <cstdint>
static inline float kora_sigmoid(float x) {
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}
static inline float kora_relu(float x) { return x < 0 ? 0.0f : x; }
static inline float kora_softplus(float x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
static inline float kora_sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x; }
static inline float kora_max(float x, float y) { return x != x ? x : y != y ? y : (x < y ? y : x); }
static inline float kora_min(float x, float y) { return x != x ? x : y != y ? y : (y < x ? y : x); }
static inline float kora_mod(float x, float y) {
  float r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
)";
}

}  // namespace kora
