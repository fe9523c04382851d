// Scalars in generated code (CPU and CUDA): a dtype in, its C type and literals out; an
// elementwise primitive with its operands' C expressions in, the C expression of its result
// out; the backend-neutral kora_* helpers those expressions call. The semantics are
// src/interpreter/elementwise.cc's: the computation domain follows the
// value operands (float32 when all are float32, double when any is floating or the
// non-predicate output is, else int64), integers wrap, Div truncates, Mod takes the
// divisor's sign, Max/Min propagate NaN, float-to-integer conversion saturates.
#include "codegen/scalar.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "kora/error.h"

namespace kora::codegen {
namespace {

enum class Domain { kF32, kF64, kI64 };

const char* domain_type(Domain d) {
  return d == Domain::kF32 ? "float" : d == Domain::kF64 ? "double" : "int64_t";
}

int64_t saturate_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "((int64_t)(-9223372036854775807LL - 1))";
  return "((int64_t)" + std::to_string(v) + "LL)";
}

std::string float_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "KORA_NAN" : "((double)KORA_NAN)";
  if (std::isinf(v))
    return std::string(v < 0 ? "(-" : "(") + (single ? "KORA_INF)" : "(double)KORA_INF)");
  char buf[48];
  if (single)
    std::snprintf(buf, sizeof buf, "(%.9ef)", static_cast<double>(static_cast<float>(v)));
  else
    std::snprintf(buf, sizeof buf, "(%.17e)", v);
  return buf;
}

std::string domain_literal(double v, Domain d) {
  if (d == Domain::kI64) return int_literal(saturate_to_int64(v));
  return float_literal(v, d == Domain::kF32);
}

std::string to_domain(const std::string& x, Domain d) {
  if (d == Domain::kF32) return x;
  return "((" + std::string(domain_type(d)) + ")" + x + ")";
}

std::string from_domain(const std::string& x, Domain d, DType out) {
  switch (d) {
    case Domain::kF32:
      return out == DType::kBool ? "((uint8_t)" + x + ")" : x;
    case Domain::kF64:
      if (out == DType::kFloat32) return "((float)" + x + ")";
      if (out == DType::kFloat64) return x;
      if (out == DType::kBool) return "((uint8_t)(" + x + " != 0))";
      return "((" + std::string(ctype(out)) + ")kora_sat_i64(" + x + "))";
    case Domain::kI64:
      if (out == DType::kFloat32) return "((float)(double)" + x + ")";
      if (out == DType::kBool) return "((uint8_t)(" + x + " != 0))";
      return "((" + std::string(ctype(out)) + ")" + x + ")";
  }
  return x;
}

// run_cast(): element conversion from one dtype to another: between floating types a C
// conversion (rounding to nearest), to an integer saturated to int64 and then wrapped.
std::string cast_expr(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  const bool from_float = from == DType::kFloat32 || from == DType::kFloat64;
  if (to == DType::kFloat32 || to == DType::kFloat64)
    return "((" + std::string(ctype(to)) + ")" + (from_float ? "" : "(int64_t)") + x + ")";
  if (to == DType::kBool)
    return from_float ? "((uint8_t)(" + x + " != 0))" : "((uint8_t)((int64_t)" + x + " != 0))";
  if (from_float) return "((" + std::string(ctype(to)) + ")kora_sat_i64((double)" + x + "))";
  return "((" + std::string(ctype(to)) + ")(int64_t)" + x + ")";
}

Domain domain_of(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e) {
  const ScalarOp op = e.op;
  const DType out = g.value(p.output()).dtype;
  const bool predicate = scalar_op_is_predicate(op);
  bool any_tensor = false, all_f32 = true, any_floating = false;
  for (size_t i = (op == ScalarOp::kWhere ? 1 : 0); i < e.operands.size(); ++i) {
    const Operand& o = e.operands[i];
    if (o.input < 0) continue;
    const DType t = g.value(p.inputs[o.input]).dtype;
    any_tensor = true;
    all_f32 = all_f32 && t == DType::kFloat32;
    any_floating = any_floating || is_floating(t);
  }
  if (!any_tensor) {
    all_f32 = out == DType::kFloat32;
    any_floating = is_floating(out);
  }
  if (all_f32 && ((predicate && out == DType::kBool) || (!predicate && out == DType::kFloat32)))
    return Domain::kF32;
  if (any_floating || (!predicate && is_floating(out))) return Domain::kF64;
  return Domain::kI64;
}

// The function in domain d on operands already converted to it.
std::string op_expr(ScalarOp op, Domain d, const std::vector<std::string>& a) {
  const bool fl = d != Domain::kI64;
  const std::string T = domain_type(d);
  const std::string one = "(" + T + ")1", zero = "(" + T + ")0";
  auto call = [&](const std::string& f) {
    std::string s = f + "(";
    for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
    return s + ")";
  };
  switch (op) {
    case ScalarOp::kIdentity:
    case ScalarOp::kCast:
      return a[0];
    case ScalarOp::kNeg:
      return fl ? "(-" + a[0] + ")" : "kora_wsub((int64_t)0, " + a[0] + ")";
    case ScalarOp::kAbs:
      return fl ? call("kora_fabs") : call("kora_iabs");
    case ScalarOp::kRelu:
      return "(" + a[0] + " < " + zero + " ? " + zero + " : " + a[0] + ")";
    case ScalarOp::kSign:
      return call("kora_sign");
    case ScalarOp::kNot:
      return "(" + T + ")(" + a[0] + " == " + zero + ")";
    case ScalarOp::kFloor:
      return fl ? call("kora_floor") : a[0];
    case ScalarOp::kCeil:
      return fl ? call("kora_ceil") : a[0];
    case ScalarOp::kRound:
      return fl ? call("kora_nearbyint") : a[0];
    case ScalarOp::kExp:
      return call("kora_exp");
    case ScalarOp::kLog:
      return call("kora_log");
    case ScalarOp::kSqrt:
      return call("kora_sqrt");
    case ScalarOp::kRsqrt:
      return "(" + one + " / kora_sqrt(" + a[0] + "))";
    case ScalarOp::kReciprocal:
      return "(" + one + " / " + a[0] + ")";
    case ScalarOp::kTanh:
      return call("kora_tanh");
    case ScalarOp::kErf:
      return call("kora_erf");
    case ScalarOp::kSigmoid:
      return call("kora_sigmoid");
    case ScalarOp::kSoftplus:
      return call("kora_softplus");
    case ScalarOp::kSin:
      return call("kora_sin");
    case ScalarOp::kCos:
      return call("kora_cos");
    case ScalarOp::kTan:
      return call("kora_tan");
    case ScalarOp::kAsin:
      return call("kora_asin");
    case ScalarOp::kAcos:
      return call("kora_acos");
    case ScalarOp::kAtan:
      return call("kora_atan");
    case ScalarOp::kSinh:
      return call("kora_sinh");
    case ScalarOp::kCosh:
      return call("kora_cosh");
    case ScalarOp::kAsinh:
      return call("kora_asinh");
    case ScalarOp::kAcosh:
      return call("kora_acosh");
    case ScalarOp::kAtanh:
      return call("kora_atanh");
    case ScalarOp::kBitNot:
      return "(~" + a[0] + ")";
    case ScalarOp::kBitAnd:
      return "(" + a[0] + " & " + a[1] + ")";
    case ScalarOp::kBitOr:
      return "(" + a[0] + " | " + a[1] + ")";
    case ScalarOp::kBitXor:
      return "(" + a[0] + " ^ " + a[1] + ")";
    case ScalarOp::kShiftLeft:
      return call("kora_shl");
    case ScalarOp::kShiftRight:
      return call("kora_shr");
    case ScalarOp::kAdd:
      return fl ? "(" + a[0] + " + " + a[1] + ")" : call("kora_wadd");
    case ScalarOp::kSub:
      return fl ? "(" + a[0] + " - " + a[1] + ")" : call("kora_wsub");
    case ScalarOp::kMul:
      return fl ? "(" + a[0] + " * " + a[1] + ")" : call("kora_wmul");
    case ScalarOp::kDiv:
      return fl ? "(" + a[0] + " / " + a[1] + ")" : call("kora_idiv");
    case ScalarOp::kPow:
      return fl ? call("kora_pow") : call("kora_ipow");
    case ScalarOp::kMax:
      return call("kora_max");
    case ScalarOp::kMin:
      return call("kora_min");
    case ScalarOp::kMod:
      return fl ? call("kora_fmod_floor") : "kora_imod(" + a[0] + ", " + a[1] + ", true)";
    case ScalarOp::kFmod:
      return fl ? call("kora_fmod") : "kora_imod(" + a[0] + ", " + a[1] + ", false)";
    case ScalarOp::kEqual:
      return "(" + T + ")(" + a[0] + " == " + a[1] + ")";
    case ScalarOp::kLess:
      return "(" + T + ")(" + a[0] + " < " + a[1] + ")";
    case ScalarOp::kLessEqual:
      return "(" + T + ")(" + a[0] + " <= " + a[1] + ")";
    case ScalarOp::kGreater:
      return "(" + T + ")(" + a[0] + " > " + a[1] + ")";
    case ScalarOp::kGreaterEqual:
      return "(" + T + ")(" + a[0] + " >= " + a[1] + ")";
    case ScalarOp::kAnd:
      return "(" + T + ")(" + a[0] + " != " + zero + " && " + a[1] + " != " + zero + ")";
    case ScalarOp::kOr:
      return "(" + T + ")(" + a[0] + " != " + zero + " || " + a[1] + " != " + zero + ")";
    case ScalarOp::kXor:
      return "(" + T + ")((" + a[0] + " != " + zero + ") != (" + a[1] + " != " + zero + "))";
    case ScalarOp::kWhere:
      return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
  }
  return a[0];
}

}  // namespace

bool dtype_supported(DType t, bool narrow) {
  if (t == DType::kFloat32 || t == DType::kInt64 || t == DType::kInt32 || t == DType::kBool)
    return true;
  return narrow && (t == DType::kFloat64 || t == DType::kInt8 || t == DType::kUInt8 ||
                    t == DType::kInt16 || t == DType::kUInt16);
}

const char* ctype(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float";
    case DType::kInt64:
      return "int64_t";
    case DType::kInt32:
      return "int32_t";
    case DType::kBool:
      return "uint8_t";
    case DType::kFloat64:
      return "double";
    case DType::kInt8:
      return "int8_t";
    case DType::kUInt8:
      return "uint8_t";
    case DType::kInt16:
      return "int16_t";
    case DType::kUInt16:
      return "uint16_t";
    default:
      throw Error(std::string("codegen: dtype ") + dtype_name(t) + " is not generated");
  }
}

std::string literal(double v, DType t) {
  if (t == DType::kFloat32) return float_literal(v, true);
  if (t == DType::kBool) return v != 0 ? "((uint8_t)1)" : "((uint8_t)0)";
  const int64_t i = static_cast<int64_t>(std::trunc(v));
  if (t == DType::kInt32) return "((int32_t)" + int_literal(static_cast<int32_t>(i)) + ")";
  if (t == DType::kFloat64) return float_literal(v, false);
  if (t == DType::kInt64) return int_literal(i);
  return "((" + std::string(ctype(t)) + ")" + int_literal(i) + ")";
}

bool elementwise_supported(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e,
                           bool narrow) {
  if (static_cast<int>(e.operands.size()) != scalar_op_arity(e.op)) return false;
  if (!dtype_supported(g.value(p.output()).dtype, narrow)) return false;
  for (const Operand& o : e.operands)
    if (o.input >= 0 && (o.input >= static_cast<int>(p.inputs.size()) ||
                         !dtype_supported(g.value(p.inputs[o.input]).dtype, narrow)))
      return false;
  if (e.op == ScalarOp::kIdentity || e.op == ScalarOp::kCast) return true;
  if (scalar_op_is_float_only(e.op) && domain_of(g, p, e) == Domain::kI64) return false;
  if (scalar_op_is_integer_only(e.op) && domain_of(g, p, e) != Domain::kI64) return false;
  return true;
}

namespace {

// x^n for a floating x and an immediate integer n, |n| <= 4, as products (a reciprocal for
// n < 0): no call, so loops over it vectorize (GPT-2's GELU cubes its input: with powf a
// layer's GELU took 1.3 ms). A rounding per product, so a few ulp from pow; "" for other
// exponents.
std::string integer_power(const std::string& x, double n, Domain d) {
  if (n != std::round(n) || std::fabs(n) > 4) return "";
  const std::string one = domain_literal(1, d);
  const int k = static_cast<int>(std::fabs(n));
  std::string product;
  if (k == 0) return one;  // pow(x, 0) is 1 for every x, NaN included
  if (k == 1) product = x;
  if (k == 2) product = "(" + x + " * " + x + ")";
  if (k == 3) product = "(" + x + " * " + x + " * " + x + ")";
  if (k == 4) product = "((" + x + " * " + x + ") * (" + x + " * " + x + "))";
  return n < 0 ? "(" + one + " / " + product + ")" : product;
}

}  // namespace

std::string elementwise_expr(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e,
                             const std::vector<std::string>& args, bool row_divisor) {
  // The backend chose which dtypes it generates (its own check, narrow or not).
  if (!elementwise_supported(g, p, e, true))
    throw Error("codegen: " + p.describe() + " (" + scalar_op_name(e.op) +
                ") is not generated for these dtypes");
  const DType out = g.value(p.output()).dtype;
  if (e.op == ScalarOp::kIdentity || e.op == ScalarOp::kCast) {
    const Operand& o = e.operands[0];
    if (o.input < 0) return literal(o.value, out);
    return cast_expr(args[o.input], g.value(p.inputs[o.input]).dtype, out);
  }
  const Domain d = domain_of(g, p, e);
  std::vector<std::string> a;
  for (size_t i = 0; i < e.operands.size(); ++i) {
    const Operand& o = e.operands[i];
    if (e.op == ScalarOp::kWhere && i == 0) {  // the condition, as a C bool
      if (o.input < 0) {
        a.push_back(o.value != 0 ? "true" : "false");
      } else {
        const DType t = g.value(p.inputs[o.input]).dtype;
        a.push_back(t == DType::kBool ? "(" + args[o.input] + " != 0)"
                                      : "((double)" + args[o.input] + " != 0)");
      }
      continue;
    }
    a.push_back(o.input < 0 ? domain_literal(o.value, d) : to_domain(args[o.input], d));
  }
  // x / c for a constant c as x * (1 / c) in float32: a multiply instead of a division
  // (a vector division has about a tenth of a multiply's throughput; GELU's x / sqrt(2)
  // was a tenth of its kernel). Within 1.5 ulp of the quotient; only where 1 / c is a
  // normal float (and a power of two, exact, is left to the compiler).
  if (e.op == ScalarOp::kDiv && d == Domain::kF32 && e.operands[0].input >= 0 &&
      e.operands[1].input < 0) {
    const float c = static_cast<float>(e.operands[1].value);
    const float r = 1.0f / c;
    int exponent = 0;
    const bool power_of_two = std::fabs(std::frexp(c, &exponent)) == 0.5f;
    if (std::isnormal(c) && std::isnormal(r) && !power_of_two)
      return from_domain("(" + a[0] + " * " + domain_literal(r, d) + ")", d, out);
  }
  if (row_divisor && e.op == ScalarOp::kDiv && d == Domain::kF32 && e.operands[0].input >= 0 &&
      e.operands[1].input >= 0)
    return from_domain("(" + a[0] + " * (1.0f / " + a[1] + "))", d, out);
  if (e.op == ScalarOp::kPow && d != Domain::kI64 && e.operands[0].input >= 0 &&
      e.operands[1].input < 0) {
    const std::string power = integer_power(a[0], e.operands[1].value, d);
    if (!power.empty()) return from_domain(power, d, out);
  }
  return from_domain(op_expr(e.op, d, a), d, out);
}

std::string scalar_helpers_text() {
  // sigmoid: 1 / (1 + e^-x), accurate in relative terms over the whole line (e^-x, the
  // only rounding that the sum amplifies, is within 1.5 ulp); where e^-x overflows, 1 / inf
  // is the 0 that the exact value rounds to (below FLT_MIN). No select of the sign: a
  // vectorized SiLU took 1.4x the time with e^-|x| and a chosen numerator.
  return R"(template <class T> KORA_FN T kora_sigmoid(T x) {
  return T(1) / (T(1) + kora_exp(-x));
}
template <class T> KORA_FN T kora_softplus(T x) {
  return x > 0 ? x + kora_log1p(kora_exp(-x)) : kora_log1p(kora_exp(x));
}
template <class T> KORA_FN T kora_sign(T x) {
  return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;
}
template <class T> KORA_FN T kora_max(T x, T y) { return x != x ? x : y != y ? y : (x < y ? y : x); }
template <class T> KORA_FN T kora_min(T x, T y) { return x != x ? x : y != y ? y : (y < x ? y : x); }
template <class T> KORA_FN T kora_fmod_floor(T x, T y) {
  T r = kora_fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
KORA_FN int64_t kora_imin(int64_t x, int64_t y) { return y < x ? y : x; }
KORA_FN int64_t kora_wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
KORA_FN int64_t kora_wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
KORA_FN int64_t kora_wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
KORA_FN int64_t kora_iabs(int64_t a) { return a < 0 ? kora_wsub(0, a) : a; }
KORA_FN int64_t kora_idiv(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return kora_wsub(0, x);
  return x / y;
}
KORA_FN int64_t kora_imod(int64_t x, int64_t y, bool floor_mod) {
  if (y == 0 || y == -1) return 0;
  int64_t r = x % y;
  if (floor_mod && r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
KORA_FN int64_t kora_ipow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  uint64_t result = 1, b = (uint64_t)base;
  for (uint64_t e = (uint64_t)exp; e; e >>= 1, b *= b)
    if (e & 1) result *= b;
  return (int64_t)result;
}
KORA_FN int64_t kora_shl(int64_t x, int64_t s) {
  return (uint64_t)s >= 64 ? 0 : (int64_t)((uint64_t)x << s);
}
KORA_FN int64_t kora_shr(int64_t x, int64_t s) {
  return (uint64_t)s >= 64 ? 0 : (int64_t)((uint64_t)x >> s);
}
KORA_FN int64_t kora_sat_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}
KORA_FN int64_t kora_clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }
KORA_FN int64_t kora_reflect(int64_t q, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = q % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}
)";
}

}  // namespace kora::codegen
