// Elementwise primitives: a scalar function over tensor operands of the output's shape and
// immediate scalars. float32 operands are computed in float (one loop per op, so the
// compiler can vectorize it); other floating types in double; integers in int64 (Div
// truncates, Mod takes the divisor's sign, Fmod the dividend's); bool as 0/1. Cast
// converts element by element to the output dtype.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// One operand as the loops see it: a vector (p[i]) or a scalar (*p).
template <typename T>
struct Operand {
  const T* p = nullptr;
  bool vec = false;
};

template <typename Out, typename T, typename F>
void map1(Operand<T> a, Out* out, int64_t n, F f) {
  if (a.vec) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(a.p[i]));
  } else {
    const Out v = static_cast<Out>(f(*a.p));
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

template <typename Out, typename T, typename F>
void map2(Operand<T> a, Operand<T> b, Out* out, int64_t n, F f) {
  if (a.vec && b.vec) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(a.p[i], b.p[i]));
  } else if (a.vec) {
    const T y = *b.p;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(a.p[i], y));
  } else if (b.vec) {
    const T x = *a.p;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(x, b.p[i]));
  } else {
    const Out v = static_cast<Out>(f(*a.p, *b.p));
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// The functions defined for floating operands only (scalar_op_is_float_only).
template <typename T, typename Out>
void float_function(ScalarOp op, const std::vector<Operand<T>>& a, Out* out, int64_t n) {
  switch (op) {
    case ScalarOp::kExp:
      return map1(a[0], out, n, [](T x) { return std::exp(x); });
    case ScalarOp::kLog:
      return map1(a[0], out, n, [](T x) { return std::log(x); });
    case ScalarOp::kSqrt:
      return map1(a[0], out, n, [](T x) { return std::sqrt(x); });
    case ScalarOp::kRsqrt:
      return map1(a[0], out, n, [](T x) { return T(1) / std::sqrt(x); });
    case ScalarOp::kReciprocal:
      return map1(a[0], out, n, [](T x) { return T(1) / x; });
    case ScalarOp::kTanh:
      return map1(a[0], out, n, [](T x) { return std::tanh(x); });
    case ScalarOp::kErf:
      return map1(a[0], out, n, [](T x) { return std::erf(x); });
    case ScalarOp::kSigmoid:
      return map1(a[0], out, n, [](T x) {
        if (x >= 0) return T(1) / (T(1) + std::exp(-x));
        const T e = std::exp(x);
        return e / (T(1) + e);
      });
    case ScalarOp::kSoftplus:
      return map1(a[0], out, n, [](T x) {
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
      });
    case ScalarOp::kSin:
      return map1(a[0], out, n, [](T x) { return std::sin(x); });
    case ScalarOp::kCos:
      return map1(a[0], out, n, [](T x) { return std::cos(x); });
    case ScalarOp::kTan:
      return map1(a[0], out, n, [](T x) { return std::tan(x); });
    case ScalarOp::kAsin:
      return map1(a[0], out, n, [](T x) { return std::asin(x); });
    case ScalarOp::kAcos:
      return map1(a[0], out, n, [](T x) { return std::acos(x); });
    case ScalarOp::kAtan:
      return map1(a[0], out, n, [](T x) { return std::atan(x); });
    case ScalarOp::kSinh:
      return map1(a[0], out, n, [](T x) { return std::sinh(x); });
    case ScalarOp::kCosh:
      return map1(a[0], out, n, [](T x) { return std::cosh(x); });
    case ScalarOp::kAsinh:
      return map1(a[0], out, n, [](T x) { return std::asinh(x); });
    case ScalarOp::kAcosh:
      return map1(a[0], out, n, [](T x) { return std::acosh(x); });
    default:
      return map1(a[0], out, n, [](T x) { return std::atanh(x); });
  }
}

// The bitwise operators, integers only (scalar_op_is_integer_only); right shifts logical.
template <typename T, typename Out>
void bitwise(ScalarOp op, const std::vector<Operand<T>>& a, Out* out, int64_t n) {
  switch (op) {
    case ScalarOp::kBitNot:
      return map1(a[0], out, n, [](T x) { return ~x; });
    case ScalarOp::kBitAnd:
      return map2(a[0], a[1], out, n, [](T x, T y) { return x & y; });
    case ScalarOp::kBitOr:
      return map2(a[0], a[1], out, n, [](T x, T y) { return x | y; });
    case ScalarOp::kBitXor:
      return map2(a[0], a[1], out, n, [](T x, T y) { return x ^ y; });
    case ScalarOp::kShiftLeft:
      return map2(a[0], a[1], out, n, [](T x, T y) {
        return static_cast<uint64_t>(y) >= 64 ? T(0)
                                              : static_cast<T>(static_cast<uint64_t>(x) << y);
      });
    default:
      return map2(a[0], a[1], out, n, [](T x, T y) {
        return static_cast<uint64_t>(y) >= 64 ? T(0)
                                              : static_cast<T>(static_cast<uint64_t>(x) >> y);
      });
  }
}

// Applies `op` in the domain T (float, double or int64_t), writing Out (T, or uint8_t for
// predicates with a bool output).
template <typename T, typename Out>
void compute(const Primitive& prim, ScalarOp op, const std::vector<Operand<T>>& a,
             const uint8_t* cond, bool cond_vec, Out* out, int64_t n) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  if (scalar_op_is_float_only(op)) {
    if constexpr (kFloat) return float_function(op, a, out, n);
    fail(prim, std::string("'") + scalar_op_name(op) + "' is not defined for integer operands");
  }
  if (scalar_op_is_integer_only(op)) {
    if constexpr (!kFloat) return bitwise(op, a, out, n);
    fail(prim, std::string("'") + scalar_op_name(op) + "' is not defined for floating operands");
  }
  switch (op) {
    case ScalarOp::kIdentity:
    case ScalarOp::kCast:
      return map1(a[0], out, n, [](T x) { return x; });
    case ScalarOp::kNeg:
      return map1(a[0], out, n, [](T x) { return wrap_sub(T(0), x); });
    case ScalarOp::kAbs:
      return map1(a[0], out, n, [](T x) {
        if constexpr (kFloat)
          return std::abs(x);
        else
          return x < 0 ? wrap_sub(T(0), x) : x;
      });
    case ScalarOp::kRelu:
      return map1(a[0], out, n, [](T x) { return x < 0 ? T(0) : x; });
    case ScalarOp::kSign:
      return map1(a[0], out, n, [](T x) {
        return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;
      });
    case ScalarOp::kNot:
      return map1(a[0], out, n, [](T x) { return T(x == T(0)); });
    case ScalarOp::kFloor:
      if constexpr (kFloat) return map1(a[0], out, n, [](T x) { return std::floor(x); });
      return map1(a[0], out, n, [](T x) { return x; });
    case ScalarOp::kCeil:
      if constexpr (kFloat) return map1(a[0], out, n, [](T x) { return std::ceil(x); });
      return map1(a[0], out, n, [](T x) { return x; });
    case ScalarOp::kRound:
      if constexpr (kFloat) return map1(a[0], out, n, [](T x) { return std::nearbyint(x); });
      return map1(a[0], out, n, [](T x) { return x; });
    case ScalarOp::kAdd:
      return map2(a[0], a[1], out, n, [](T x, T y) { return wrap_add(x, y); });
    case ScalarOp::kSub:
      return map2(a[0], a[1], out, n, [](T x, T y) { return wrap_sub(x, y); });
    case ScalarOp::kMul:
      return map2(a[0], a[1], out, n, [](T x, T y) { return wrap_mul(x, y); });
    case ScalarOp::kDiv:
      if constexpr (kFloat) {
        return map2(a[0], a[1], out, n, [](T x, T y) { return x / y; });
      } else {
        bool by_zero = false;
        map2(a[0], a[1], out, n, [&](T x, T y) -> T {
          if (y == 0) return by_zero = true, T(0);
          if (y == -1) return wrap_sub(T(0), x);  // also INT64_MIN / -1
          return x / y;
        });
        if (by_zero) fail(prim, "integer division by zero");
        return;
      }
    case ScalarOp::kMod:
    case ScalarOp::kFmod:
      if constexpr (kFloat) {
        if (op == ScalarOp::kFmod)
          return map2(a[0], a[1], out, n, [](T x, T y) { return std::fmod(x, y); });
        return map2(a[0], a[1], out, n, [](T x, T y) {
          T r = std::fmod(x, y);
          if (r != 0 && ((r < 0) != (y < 0))) r += y;
          return r;
        });
      } else {
        bool by_zero = false;
        const bool floor_mod = op == ScalarOp::kMod;
        map2(a[0], a[1], out, n, [&](T x, T y) -> T {
          if (y == 0) return by_zero = true, T(0);
          if (y == -1) return T(0);
          T r = x % y;
          if (floor_mod && r != 0 && ((r < 0) != (y < 0))) r += y;
          return r;
        });
        if (by_zero) fail(prim, "integer modulo by zero");
        return;
      }
    case ScalarOp::kPow:
      if constexpr (kFloat)
        return map2(a[0], a[1], out, n, [](T x, T y) { return std::pow(x, y); });
      else
        return map2(a[0], a[1], out, n, [](T x, T y) { return int_pow(x, y); });
    case ScalarOp::kMax:
      return map2(a[0], a[1], out, n, [](T x, T y) {
        return is_nan(x) ? x : is_nan(y) ? y : (x < y ? y : x);
      });
    case ScalarOp::kMin:
      return map2(a[0], a[1], out, n, [](T x, T y) {
        return is_nan(x) ? x : is_nan(y) ? y : (y < x ? y : x);
      });
    case ScalarOp::kEqual:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x == y); });
    case ScalarOp::kLess:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x < y); });
    case ScalarOp::kLessEqual:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x <= y); });
    case ScalarOp::kGreater:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x > y); });
    case ScalarOp::kGreaterEqual:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x >= y); });
    case ScalarOp::kAnd:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x != T(0) && y != T(0)); });
    case ScalarOp::kOr:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T(x != T(0) || y != T(0)); });
    case ScalarOp::kXor:
      return map2(a[0], a[1], out, n, [](T x, T y) { return T((x != T(0)) != (y != T(0))); });
    case ScalarOp::kWhere: {
      const Operand<T> x = a[1], y = a[2];
      for (int64_t i = 0; i < n; ++i) {
        const bool c = cond[cond_vec ? i : 0] != 0;
        out[i] = static_cast<Out>(c ? x.p[x.vec ? i : 0] : y.p[y.vec ? i : 0]);
      }
      return;
    }
    default:  // float-only and integer-only functions, above
      return;
  }
}

int64_t saturate_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

Tensor run_cast(const Tensor& x, const ValueInfo& out) {
  if (x.dtype() == out.dtype) return x.reshaped(out.shape);
  Tensor y(out.dtype, out.shape);
  const int64_t n = y.numel();
  const bool via_double =
      is_floating(x.dtype()) || (x.dtype() == DType::kUInt64 && is_floating(out.dtype));
  if (x.dtype() == DType::kFloat32 && out.dtype == DType::kBool) {
    const float* p = reinterpret_cast<const float*>(x.bytes());
    uint8_t* q = reinterpret_cast<uint8_t*>(y.mutable_bytes());
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] != 0;
  } else if (out.dtype == DType::kFloat32 && !is_floating(x.dtype()) &&
             x.dtype() != DType::kUInt64) {
    float* q = reinterpret_cast<float*>(y.mutable_bytes());
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<float>(x.int64_at(i));
  } else if (via_double && is_integer(out.dtype)) {
    for (int64_t i = 0; i < n; ++i) set_element_int(y, i, saturate_to_int64(x.double_at(i)));
  } else if (via_double) {
    for (int64_t i = 0; i < n; ++i) set_element(y, i, x.double_at(i));
  } else {
    for (int64_t i = 0; i < n; ++i) set_element_int(y, i, x.int64_at(i));
  }
  return y;
}

enum class Domain { kFloat32, kDouble, kInt64 };

// Runs `op` in the general domain T (double or int64_t) and converts to the output dtype.
template <typename T>
Tensor compute_general(const Primitive& prim, const ElementwiseAttrs& attrs, const Inputs& in,
                       const ValueInfo& out, const uint8_t* cond, bool cond_vec) {
  const int64_t n = numel(out.shape);
  std::vector<std::vector<T>> bufs(attrs.operands.size());
  std::vector<T> scalars(attrs.operands.size());
  std::vector<Operand<T>> ops(attrs.operands.size());
  for (size_t i = 0; i < attrs.operands.size(); ++i) {
    const kora::Operand& o = attrs.operands[i];
    if (attrs.op == ScalarOp::kWhere && i == 0) continue;
    if (o.input < 0) {
      if constexpr (std::is_floating_point_v<T>)
        scalars[i] = o.value;
      else
        scalars[i] = saturate_to_int64(o.value);
      ops[i] = {&scalars[i], false};
    } else {
      const Tensor& t = *in[static_cast<size_t>(o.input)];
      if constexpr (std::is_floating_point_v<T>)
        bufs[i] = t.to_double();
      else
        bufs[i] = t.to_int64();
      ops[i] = {bufs[i].data(), true};
    }
  }
  std::vector<T> result(static_cast<size_t>(n));
  compute<T, T>(prim, attrs.op, ops, cond, cond_vec, result.data(), n);
  Tensor y(out.dtype, out.shape);
  if (out.dtype == DType::kFloat64 && std::is_same_v<T, double>) {
    std::memcpy(y.mutable_bytes(), result.data(), static_cast<size_t>(n) * sizeof(double));
  } else if (out.dtype == DType::kInt64 && std::is_same_v<T, int64_t>) {
    std::memcpy(y.mutable_bytes(), result.data(), static_cast<size_t>(n) * sizeof(int64_t));
  } else if (is_floating(out.dtype) || out.dtype == DType::kBool) {
    for (int64_t i = 0; i < n; ++i) set_element(y, i, static_cast<double>(result[i]));
  } else if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) set_element_int(y, i, saturate_to_int64(result[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) set_element_int(y, i, result[i]);
  }
  return y;
}

}  // namespace

int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {  // 1 / base^-exp, truncated
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exp); e; e >>= 1, b *= b)
    if (e & 1) result *= b;
  return static_cast<int64_t>(result);
}

Tensor run_elementwise(const Primitive& prim, const ElementwiseAttrs& attrs, const Inputs& in,
                       const ValueInfo& out) {
  const int arity = scalar_op_arity(attrs.op);
  if (static_cast<int>(attrs.operands.size()) != arity)
    fail(prim, "has " + std::to_string(attrs.operands.size()) + " operands, '" +
                   scalar_op_name(attrs.op) + "' takes " + std::to_string(arity));
  for (const kora::Operand& o : attrs.operands) {
    if (o.input < 0) continue;
    if (static_cast<size_t>(o.input) >= in.size())
      fail(prim, "operand refers to input " + std::to_string(o.input) + " of " +
                     std::to_string(in.size()));
    const Tensor& t = *in[static_cast<size_t>(o.input)];
    if (t.shape() != out.shape)
      fail(prim, "operand of shape " + shape_str(t.shape()) + " for an output of shape " +
                     shape_str(out.shape));
  }
  const ScalarOp op = attrs.op;
  const int64_t n = numel(out.shape);

  if (op == ScalarOp::kCast || op == ScalarOp::kIdentity) {
    const kora::Operand& o = attrs.operands[0];
    if (o.input < 0) {
      Tensor y(out.dtype, out.shape);
      for (int64_t i = 0; i < n; ++i) set_element(y, i, o.value);
      return y;
    }
    return run_cast(*in[static_cast<size_t>(o.input)], out);
  }

  // The condition of Where, as bytes 0/1.
  std::vector<uint8_t> cond_buf;
  const uint8_t* cond = nullptr;
  bool cond_vec = false;
  if (op == ScalarOp::kWhere) {
    const kora::Operand& c = attrs.operands[0];
    if (c.input < 0) {
      cond_buf.assign(1, c.value != 0);
    } else {
      const Tensor& t = *in[static_cast<size_t>(c.input)];
      cond_vec = true;
      if (t.dtype() != DType::kBool) {
        cond_buf.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) cond_buf[i] = t.double_at(i) != 0;
      }
      cond = reinterpret_cast<const uint8_t*>(t.bytes());
    }
    if (!cond_buf.empty()) cond = cond_buf.data();
  }

  // The domain follows the value operands (all but Where's condition).
  const bool predicate = scalar_op_is_predicate(op);
  bool any_tensor = false, all_f32 = true, any_floating = false;
  for (size_t i = (op == ScalarOp::kWhere ? 1 : 0); i < attrs.operands.size(); ++i) {
    const kora::Operand& o = attrs.operands[i];
    if (o.input < 0) continue;
    const DType t = in[static_cast<size_t>(o.input)]->dtype();
    any_tensor = true;
    all_f32 = all_f32 && t == DType::kFloat32;
    any_floating = any_floating || is_floating(t);
  }
  if (!any_tensor) {
    all_f32 = out.dtype == DType::kFloat32;
    any_floating = is_floating(out.dtype);
  }
  Domain domain = Domain::kInt64;
  if (all_f32 &&
      ((predicate && out.dtype == DType::kBool) || (!predicate && out.dtype == DType::kFloat32)))
    domain = Domain::kFloat32;
  else if (any_floating || (!predicate && is_floating(out.dtype)))
    domain = Domain::kDouble;

  if (domain == Domain::kFloat32) {
    std::vector<float> scalars(attrs.operands.size());
    std::vector<Operand<float>> ops(attrs.operands.size());
    for (size_t i = 0; i < attrs.operands.size(); ++i) {
      const kora::Operand& o = attrs.operands[i];
      if (op == ScalarOp::kWhere && i == 0) continue;
      if (o.input < 0) {
        scalars[i] = static_cast<float>(o.value);
        ops[i] = {&scalars[i], false};
      } else {
        ops[i] = {reinterpret_cast<const float*>(in[static_cast<size_t>(o.input)]->bytes()), true};
      }
    }
    Tensor y(out.dtype, out.shape);
    if (out.dtype == DType::kBool)
      compute<float, uint8_t>(prim, op, ops, cond, cond_vec,
                              reinterpret_cast<uint8_t*>(y.mutable_bytes()), n);
    else
      compute<float, float>(prim, op, ops, cond, cond_vec,
                            reinterpret_cast<float*>(y.mutable_bytes()), n);
    return y;
  }
  if (domain == Domain::kDouble)
    return compute_general<double>(prim, attrs, in, out, cond, cond_vec);
  return compute_general<int64_t>(prim, attrs, in, out, cond, cond_vec);
}

}  // namespace kora::interp
