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
#include <sstream>

#include "kora/cpu_codegen.h"
#include "kora/error.h"

namespace kora {
namespace {

std::string literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9gf", v);
  std::string s = buf;
  if (s == "inff") return "INFINITY";
  if (s == "-inff") return "(-INFINITY)";
  if (s == "nanf" || s == "-nanf") return "NAN";
  return "(" + s + ")";
}

// How a scalar function is written in C++ on floats (semantics as
// src/interpreter/elementwise.cc; the kora_ helpers are in cpu_codegen_prelude()): a
// function applied to the operands, or an infix operator between two. Functions not
// listed (predicates, logic, Where: their values are not float) are not generated.
struct Syntax {
  const char* text;
  bool infix;
};

const Syntax* syntax_of(ScalarOp op) {
  static const std::map<ScalarOp, Syntax> kTable = {
      {ScalarOp::kIdentity, {"", false}},
      {ScalarOp::kCast, {"", false}},
      {ScalarOp::kNeg, {"-", false}},
      {ScalarOp::kAbs, {"std::fabs", false}},
      {ScalarOp::kExp, {"std::exp", false}},
      {ScalarOp::kLog, {"std::log", false}},
      {ScalarOp::kSqrt, {"std::sqrt", false}},
      {ScalarOp::kRsqrt, {"kora_rsqrt", false}},
      {ScalarOp::kReciprocal, {"1.0f / ", false}},
      {ScalarOp::kTanh, {"std::tanh", false}},
      {ScalarOp::kErf, {"std::erf", false}},
      {ScalarOp::kSigmoid, {"kora_sigmoid", false}},
      {ScalarOp::kRelu, {"kora_relu", false}},
      {ScalarOp::kSoftplus, {"kora_softplus", false}},
      {ScalarOp::kFloor, {"std::floor", false}},
      {ScalarOp::kCeil, {"std::ceil", false}},
      {ScalarOp::kRound, {"std::nearbyint", false}},
      {ScalarOp::kSign, {"kora_sign", false}},
      {ScalarOp::kSin, {"std::sin", false}},
      {ScalarOp::kCos, {"std::cos", false}},
      {ScalarOp::kAdd, {" + ", true}},
      {ScalarOp::kSub, {" - ", true}},
      {ScalarOp::kMul, {" * ", true}},
      {ScalarOp::kDiv, {" / ", true}},
      {ScalarOp::kPow, {"std::pow", false}},
      {ScalarOp::kMax, {"kora_max", false}},
      {ScalarOp::kMin, {"kora_min", false}},
      {ScalarOp::kMod, {"kora_mod", false}},
      {ScalarOp::kFmod, {"std::fmod", false}},
  };
  auto it = kTable.find(op);
  return it == kTable.end() ? nullptr : &it->second;
}

std::string scalar_expr(ScalarOp op, const std::vector<std::string>& a) {
  const Syntax* syntax = syntax_of(op);
  if (!syntax)
    throw Error(std::string("cpu codegen: scalar function ") + scalar_op_name(op) +
                " is not generated for float32");
  if (syntax->infix) return "(" + a[0] + syntax->text + a[1] + ")";
  std::string args;
  for (const std::string& x : a) args += (args.empty() ? "" : ", ") + x;
  return "(" + std::string(syntax->text) + "(" + args + "))";
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
      const std::vector<int64_t> strides = row_major_strides(shape);
      std::string header;  // the coordinates of element i
      std::vector<std::string> coords;
      for (size_t d = 0; d < shape.size(); ++d) {
        coords.push_back("c" + std::to_string(d));
        header += "    const int64_t " + coords.back() + " = i / " + std::to_string(strides[d]) +
                  "LL % " + std::to_string(shape[d]) + "LL;\n";
      }
      const std::string result = value(writes_[i], coords);
      os << "  // " << writes_[i] << "\n";
      os << "  for (int64_t i = 0; i < " << n << "LL; ++i) {\n" << header;
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
    const std::vector<int64_t> strides = row_major_strides(shape);
    std::string s = "0";
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1 && coords[d] != "0")
        s += " + " + coords[d] + " * " + std::to_string(strides[d]) + "LL";
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
      if (!syntax_of(e->op)) return false;
    } else if (!std::holds_alternative<BroadcastAttrs>(p.attrs)) {
      return false;
    }
    if (graph.value(p.output()).dtype != DType::kFloat32) return false;
    for (const std::string& t : p.inputs)
      if (graph.value(t).dtype != DType::kFloat32) return false;
  }
  return !c.members.empty();
}

std::string CpuSchedule::key() const { return parallel ? "default" : "serial"; }

std::vector<CpuSchedule> cpu_schedule_space(const PrimGraph&, const KernelDag&, const Candidate&) {
  return {CpuSchedule{}};
}

GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol,
                                    const CpuSchedule&) {
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
static inline float kora_rsqrt(float x) { return 1.0f / std::sqrt(x); }
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
