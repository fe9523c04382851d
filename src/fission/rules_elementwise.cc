// Fission of elementwise operators into scalar-function primitives: one primitive for a
// direct match (Relu, Exp, Add, trigonometric and hyperbolic functions, bitwise logic and
// shifts, ...), a short chain for activations (GELU, SiLU-style HardSwish, Mish, Elu,
// ThresholdedRelu, Shrink, ...), Clip as min/max, variadic Sum/Mean/Max/Min as pairwise
// chains. Broadcasting becomes explicit broadcast primitives (FissionBuilder::ew).
#include <cmath>
#include <limits>

#include "fission/builder.h"

namespace kora {
namespace {

using S = ScalarOp;

template <S op>
void unary(FissionBuilder& b) {
  b.bind(0, b.ew(op, {b.in(0)}));
}

template <S op>
void binary(FissionBuilder& b) {
  b.bind(0, b.ew(op, {b.in(0), b.in(1)}));
}

void identity(FissionBuilder& b) { b.bind(0, b.in(0)); }

// Variadic Sum/Max/Min/Mean: a pairwise chain over the present inputs.
template <S op>
std::string chain(FissionBuilder& b) {
  std::string acc;
  for (size_t i = 0; i < b.node().inputs.size(); ++i) {
    if (!b.has_in(i)) continue;
    acc = acc.empty() ? b.in(i) : b.ew(op, {acc, b.in(i)});
  }
  return acc;
}

template <S op>
void variadic(FissionBuilder& b) {
  b.bind(0, chain<op>(b));
}

void mean(FissionBuilder& b) {
  int count = 0;
  for (size_t i = 0; i < b.node().inputs.size(); ++i) count += b.has_in(i);
  const std::string sum = chain<S::kAdd>(b);
  b.bind(0, count == 1 ? sum : b.ew(S::kDiv, {sum, static_cast<double>(count)}));
}

void mod(FissionBuilder& b) {
  const bool fmod = b.node().attr_int("fmod", 0) != 0;
  b.bind(0, b.ew(fmod ? S::kFmod : S::kMod, {b.in(0), b.in(1)}));
}

// where(x < 0, f(x), x)
void leaky_relu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double alpha = b.node().attr_float("alpha", 0.01);
  b.bind(0, b.ew(S::kWhere, {b.ew(S::kLess, {x, 0.0}), b.ew(S::kMul, {x, alpha}), x}));
}

void prelu(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.ew(S::kWhere, {b.ew(S::kLess, {x, 0.0}), b.ew(S::kMul, {x, b.in(1)}), x}));
}

// alpha * (exp(x) - 1)
std::string expm1_scaled(FissionBuilder& b, const std::string& x, double alpha) {
  return b.ew(S::kMul, {b.ew(S::kSub, {b.ew(S::kExp, {x}), 1.0}), alpha});
}

void elu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double alpha = b.node().attr_float("alpha", 1.0);
  b.bind(0, b.ew(S::kWhere, {b.ew(S::kLess, {x, 0.0}), expm1_scaled(b, x, alpha), x}));
}

void selu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double alpha = b.node().attr_float("alpha", 1.67326319217681884765625);
  const double gamma = b.node().attr_float("gamma", 1.05070102214813232421875);
  const std::string y =
      b.ew(S::kWhere, {b.ew(S::kLessEqual, {x, 0.0}), expm1_scaled(b, x, alpha), x});
  b.bind(0, b.ew(S::kMul, {y, gamma}));
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
void celu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double alpha = b.node().attr_float("alpha", 1.0);
  const std::string neg = expm1_scaled(b, b.ew(S::kDiv, {x, alpha}), alpha);
  b.bind(0, b.ew(S::kAdd, {b.ew(S::kMax, {x, 0.0}), b.ew(S::kMin, {neg, 0.0})}));
}

// max(0, min(1, alpha * x + beta))
std::string hard_sigmoid_of(FissionBuilder& b, const std::string& x, double alpha, double beta) {
  const std::string lin = b.ew(S::kAdd, {b.ew(S::kMul, {x, alpha}), beta});
  return b.ew(S::kMax, {b.ew(S::kMin, {lin, 1.0}), 0.0});
}

void hard_sigmoid(FissionBuilder& b) {
  b.bind(0, hard_sigmoid_of(b, b.in(0), b.node().attr_float("alpha", 0.2),
                            b.node().attr_float("beta", 0.5)));
}

void hard_swish(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.ew(S::kMul, {x, hard_sigmoid_of(b, x, 1.0 / 6.0, 0.5)}));
}

// Exact: 0.5 x (1 + erf(x / sqrt 2)); tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu(FissionBuilder& b) {
  const std::string x = b.in(0);
  std::string inner;
  if (b.node().attr_string("approximate", "none") == "tanh") {
    const std::string cube = b.ew(S::kMul, {b.ew(S::kMul, {x, x}), x});
    const std::string poly = b.ew(S::kAdd, {x, b.ew(S::kMul, {cube, 0.044715})});
    inner = b.ew(S::kTanh, {b.ew(S::kMul, {poly, std::sqrt(2.0 / M_PI)})});
  } else {
    inner = b.ew(S::kErf, {b.ew(S::kMul, {x, M_SQRT1_2})});
  }
  const std::string half_x = b.ew(S::kMul, {x, 0.5});
  b.bind(0, b.ew(S::kMul, {half_x, b.ew(S::kAdd, {inner, 1.0})}));
}

void mish(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.ew(S::kMul, {x, b.ew(S::kTanh, {b.ew(S::kSoftplus, {x})})}));
}

void softsign(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.ew(S::kDiv, {x, b.ew(S::kAdd, {b.ew(S::kAbs, {x}), 1.0})}));
}

void clip(FissionBuilder& b) {
  std::string y = b.in(0);
  if (b.has_in(1)) y = b.ew(S::kMax, {y, b.in(1)}, b.dtype(y));
  if (b.has_in(2)) y = b.ew(S::kMin, {y, b.in(2)}, b.dtype(y));
  b.bind(0, y);
}

void cast(FissionBuilder& b) {
  const DType to = b.out_info(0).dtype;
  const std::string x = b.in(0);
  b.bind(0, b.dtype(x) == to ? x : b.ew(S::kCast, {x}, to));
}

// NaN is the one value not equal to itself.
void is_nan(FissionBuilder& b) {
  const std::string x = b.in(0);
  b.bind(0, b.ew(S::kNot, {b.ew(S::kEqual, {x, x})}));
}

void is_inf(FissionBuilder& b) {
  const std::string x = b.in(0);
  const bool pos = b.node().attr_int("detect_positive", 1) != 0;
  const bool neg = b.node().attr_int("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  std::string y;
  if (pos) y = b.ew(S::kEqual, {x, inf});
  if (neg) {
    const std::string n = b.ew(S::kEqual, {x, -inf});
    y = y.empty() ? n : b.ew(S::kOr, {y, n});
  }
  if (y.empty()) y = b.ew(S::kAnd, {b.ew(S::kEqual, {x, inf}), b.ew(S::kEqual, {x, -inf})});
  b.bind(0, y);
}

// x > alpha ? x : 0
void thresholded_relu(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double alpha = b.node().attr_float("alpha", 1.0);
  b.bind(0, b.ew(S::kWhere, {b.ew(S::kGreater, {x, alpha}), x, 0.0}));
}

// x < -lambd ? x + bias : x > lambd ? x - bias : 0
void shrink(FissionBuilder& b) {
  const std::string x = b.in(0);
  const double lambd = b.node().attr_float("lambd", 0.5);
  const double bias = b.node().attr_float("bias", 0.0);
  const std::string upper =
      b.ew(S::kWhere, {b.ew(S::kGreater, {x, lambd}), b.ew(S::kSub, {x, bias}), 0.0});
  b.bind(0, b.ew(S::kWhere, {b.ew(S::kLess, {x, -lambd}), b.ew(S::kAdd, {x, bias}), upper}));
}

void bit_shift(FissionBuilder& b) {
  const std::string direction = b.node().attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    b.fail("direction must be \"LEFT\" or \"RIGHT\", not \"" + direction + "\"");
  b.bind(0, b.ew(direction == "LEFT" ? S::kShiftLeft : S::kShiftRight, {b.in(0), b.in(1)}));
}

void where(FissionBuilder& b) { b.bind(0, b.ew(S::kWhere, {b.in(0), b.in(1), b.in(2)})); }

}  // namespace

void add_elementwise_fission(FissionTable& t) {
  t["Relu"] = unary<S::kRelu>;
  t["Sigmoid"] = unary<S::kSigmoid>;
  t["Tanh"] = unary<S::kTanh>;
  t["Erf"] = unary<S::kErf>;
  t["Exp"] = unary<S::kExp>;
  t["Log"] = unary<S::kLog>;
  t["Sqrt"] = unary<S::kSqrt>;
  t["Reciprocal"] = unary<S::kReciprocal>;
  t["Neg"] = unary<S::kNeg>;
  t["Abs"] = unary<S::kAbs>;
  t["Floor"] = unary<S::kFloor>;
  t["Ceil"] = unary<S::kCeil>;
  t["Round"] = unary<S::kRound>;
  t["Sign"] = unary<S::kSign>;
  t["Sin"] = unary<S::kSin>;
  t["Cos"] = unary<S::kCos>;
  t["Not"] = unary<S::kNot>;
  t["Tan"] = unary<S::kTan>;
  t["Asin"] = unary<S::kAsin>;
  t["Acos"] = unary<S::kAcos>;
  t["Atan"] = unary<S::kAtan>;
  t["Sinh"] = unary<S::kSinh>;
  t["Cosh"] = unary<S::kCosh>;
  t["Asinh"] = unary<S::kAsinh>;
  t["Acosh"] = unary<S::kAcosh>;
  t["Atanh"] = unary<S::kAtanh>;
  t["BitwiseNot"] = unary<S::kBitNot>;
  t["BitwiseAnd"] = binary<S::kBitAnd>;
  t["BitwiseOr"] = binary<S::kBitOr>;
  t["BitwiseXor"] = binary<S::kBitXor>;
  t["BitShift"] = bit_shift;
  t["ThresholdedRelu"] = thresholded_relu;
  t["Shrink"] = shrink;
  t["Softplus"] = unary<S::kSoftplus>;
  t["Identity"] = identity;
  t["Add"] = binary<S::kAdd>;
  t["Sub"] = binary<S::kSub>;
  t["Mul"] = binary<S::kMul>;
  t["Div"] = binary<S::kDiv>;
  t["Pow"] = binary<S::kPow>;
  t["Equal"] = binary<S::kEqual>;
  t["Less"] = binary<S::kLess>;
  t["LessOrEqual"] = binary<S::kLessEqual>;
  t["Greater"] = binary<S::kGreater>;
  t["GreaterOrEqual"] = binary<S::kGreaterEqual>;
  t["And"] = binary<S::kAnd>;
  t["Or"] = binary<S::kOr>;
  t["Xor"] = binary<S::kXor>;
  t["Mod"] = mod;
  t["Sum"] = variadic<S::kAdd>;
  t["Max"] = variadic<S::kMax>;
  t["Min"] = variadic<S::kMin>;
  t["Mean"] = mean;
  t["LeakyRelu"] = leaky_relu;
  t["PRelu"] = prelu;
  t["Elu"] = elu;
  t["Selu"] = selu;
  t["Celu"] = celu;
  t["HardSigmoid"] = hard_sigmoid;
  t["HardSwish"] = hard_swish;
  t["Gelu"] = gelu;
  t["Mish"] = mish;
  t["Softsign"] = softsign;
  t["Clip"] = clip;
  t["Cast"] = cast;
  t["CastLike"] = cast;
  t["Where"] = where;
  t["IsNaN"] = is_nan;
  t["IsInf"] = is_inf;
}

}  // namespace kora
