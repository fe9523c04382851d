// Interpreter tests of elementwise primitives: every ScalarOp in float32 against a double
// brute-force formula, the float64/float16 paths, immediate operands on either side, NaN
// handling of Max/Min, integer Div/Mod/Fmod/Pow semantics and wrapping, bool logic, Where,
// and Cast between many dtypes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "interpreter/interp_helpers.h"
#include "kora/error.h"

namespace kora_interp_test {
namespace {

using kora::ElementwiseAttrs;
using kora::ScalarOp;

kora::Operand in(int i) { return {i, 0}; }
kora::Operand imm(double v) { return {-1, v}; }

ElementwiseAttrs ew(ScalarOp op, std::vector<kora::Operand> operands) {
  return ElementwiseAttrs{op, std::move(operands)};
}

double ref_unary(ScalarOp op, double x) {
  switch (op) {
    case ScalarOp::kIdentity:
      return x;
    case ScalarOp::kNeg:
      return -x;
    case ScalarOp::kAbs:
      return std::fabs(x);
    case ScalarOp::kExp:
      return std::exp(x);
    case ScalarOp::kLog:
      return std::log(x);
    case ScalarOp::kSqrt:
      return std::sqrt(x);
    case ScalarOp::kRsqrt:
      return 1 / std::sqrt(x);
    case ScalarOp::kReciprocal:
      return 1 / x;
    case ScalarOp::kTanh:
      return std::tanh(x);
    case ScalarOp::kErf:
      return std::erf(x);
    case ScalarOp::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case ScalarOp::kRelu:
      return x > 0 ? x : 0;
    case ScalarOp::kSoftplus:
      return std::log(1 + std::exp(x));
    case ScalarOp::kFloor:
      return std::floor(x);
    case ScalarOp::kCeil:
      return std::ceil(x);
    case ScalarOp::kRound: {  // half to even, by hand
      const double f = std::floor(x), d = x - f;
      if (d < 0.5) return f;
      if (d > 0.5) return f + 1;
      return std::fmod(f, 2) == 0 ? f : f + 1;
    }
    case ScalarOp::kSign:
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case ScalarOp::kSin:
      return std::sin(x);
    case ScalarOp::kCos:
      return std::cos(x);
    case ScalarOp::kTan:
      return std::tan(x);
    case ScalarOp::kAsin:
      return std::asin(x);
    case ScalarOp::kAcos:
      return std::acos(x);
    case ScalarOp::kAtan:
      return std::atan(x);
    case ScalarOp::kSinh:
      return std::sinh(x);
    case ScalarOp::kCosh:
      return std::cosh(x);
    case ScalarOp::kAsinh:
      return std::asinh(x);
    case ScalarOp::kAcosh:
      return std::acosh(x);
    case ScalarOp::kAtanh:
      return std::atanh(x);
    default:
      ADD_FAILURE() << "no reference for " << kora::scalar_op_name(op);
      return 0;
  }
}

double ref_binary(ScalarOp op, double a, double b) {
  switch (op) {
    case ScalarOp::kAdd:
      return a + b;
    case ScalarOp::kSub:
      return a - b;
    case ScalarOp::kMul:
      return a * b;
    case ScalarOp::kDiv:
      return a / b;
    case ScalarOp::kPow:
      return std::pow(a, b);
    case ScalarOp::kMax:
      return a > b ? a : b;
    case ScalarOp::kMin:
      return a < b ? a : b;
    case ScalarOp::kMod:  // Python's %: the divisor's sign
      return a - b * std::floor(a / b);
    case ScalarOp::kFmod:  // C's fmod: the dividend's sign
      return a - b * std::trunc(a / b);
    case ScalarOp::kEqual:
      return a == b;
    case ScalarOp::kLess:
      return a < b;
    case ScalarOp::kLessEqual:
      return a <= b;
    case ScalarOp::kGreater:
      return a > b;
    case ScalarOp::kGreaterEqual:
      return a >= b;
    case ScalarOp::kAnd:
      return a != 0 && b != 0;
    case ScalarOp::kOr:
      return a != 0 || b != 0;
    case ScalarOp::kXor:
      return (a != 0) != (b != 0);
    default:
      ADD_FAILURE() << "no reference for " << kora::scalar_op_name(op);
      return 0;
  }
}

bool is_comparison(ScalarOp op) {
  return op == ScalarOp::kEqual || op == ScalarOp::kLess || op == ScalarOp::kLessEqual ||
         op == ScalarOp::kGreater || op == ScalarOp::kGreaterEqual;
}

// float32 rounding of each value, as the input tensor holds it.
std::vector<double> as_f32(const std::vector<double>& v) {
  std::vector<double> r;
  for (double x : v) r.push_back(static_cast<float>(x));
  return r;
}

TEST(InterpElementwise, EveryUnaryOpInFloat32) {
  const std::vector<double> base = {-3.7, -2.5, -1.5, -0.5, -0.25, 0,   0.25,
                                    0.5,  1.5,  2.5,  3.5,  3.7,   -30, 30};
  const ScalarOp ops[] = {
      ScalarOp::kIdentity, ScalarOp::kNeg,   ScalarOp::kAbs,     ScalarOp::kExp,
      ScalarOp::kLog,      ScalarOp::kSqrt,  ScalarOp::kRsqrt,   ScalarOp::kReciprocal,
      ScalarOp::kTanh,     ScalarOp::kErf,   ScalarOp::kSigmoid, ScalarOp::kRelu,
      ScalarOp::kSoftplus, ScalarOp::kFloor, ScalarOp::kCeil,    ScalarOp::kRound,
      ScalarOp::kSign,     ScalarOp::kSin,   ScalarOp::kCos,     ScalarOp::kTan,
      ScalarOp::kAsin,     ScalarOp::kAcos,  ScalarOp::kAtan,    ScalarOp::kSinh,
      ScalarOp::kCosh,     ScalarOp::kAsinh, ScalarOp::kAcosh,   ScalarOp::kAtanh};
  for (ScalarOp op : ops) {
    SCOPED_TRACE(kora::scalar_op_name(op));
    std::vector<double> xs = base;
    // Inside each inverse function's domain; sinh and cosh of +-30 are 5e12.
    if (op == ScalarOp::kAsin || op == ScalarOp::kAcos || op == ScalarOp::kAtanh)
      for (double& x : xs) x = std::tanh(x) * 0.99;
    if (op == ScalarOp::kAcosh)
      for (double& x : xs) x = std::fabs(x) + 1;
    if (op == ScalarOp::kSinh || op == ScalarOp::kCosh)
      for (double& x : xs) x = std::clamp(x, -5.0, 5.0);
    if (op == ScalarOp::kLog || op == ScalarOp::kSqrt || op == ScalarOp::kRsqrt)
      for (double& x : xs) x = std::fabs(x) + 0.1;
    if (op == ScalarOp::kReciprocal)
      for (double& x : xs) x = x == 0 ? 0.125 : x;
    const Tensor x = f32({2, 7}, xs);
    const Tensor y = run1(ew(op, {in(0)}), {x}, DType::kFloat32, {2, 7});
    ASSERT_EQ(y.dtype(), DType::kFloat32);
    std::vector<double> want;
    for (double v : as_f32(xs)) want.push_back(ref_unary(op, v));
    expect_near(y, want, 1e-6, 2e-6);
  }
}

TEST(InterpElementwise, SigmoidAndSoftplusAreStableForLargeInputs) {
  const Tensor x = f32({4}, {-100, -1000, 100, 1000});
  const Tensor s = run1(ew(ScalarOp::kSigmoid, {in(0)}), {x}, DType::kFloat32, {4});
  expect_near(s, {0, 0, 1, 1});
  const Tensor p = run1(ew(ScalarOp::kSoftplus, {in(0)}), {x}, DType::kFloat32, {4});
  expect_near(p, {0, 0, 100, 1000});
  const Tensor x64 = Tensor::from_double(DType::kFloat64, {2}, {-800, 800});
  const Tensor p64 = run1(ew(ScalarOp::kSoftplus, {in(0)}), {x64}, DType::kFloat64, {2});
  expect_near(p64, {0, 800});
}

TEST(InterpElementwise, EveryBinaryOpInFloat32) {
  std::vector<double> a = random_values(24, -4, 4, 7), b = random_values(24, -4, 4, 8);
  // Some equal pairs for the comparisons, and the Mod sign cases.
  a[0] = b[0] = 1.5;
  a[1] = b[1] = -2;
  a[2] = 7.5, b[2] = 2;
  a[3] = -7.5, b[3] = 2;
  a[4] = 7.5, b[4] = -2;
  a[5] = -7.5, b[5] = -2;
  a[6] = 0, b[6] = 3;
  const ScalarOp ops[] = {ScalarOp::kAdd,     ScalarOp::kSub,         ScalarOp::kMul,
                          ScalarOp::kDiv,     ScalarOp::kPow,         ScalarOp::kMax,
                          ScalarOp::kMin,     ScalarOp::kMod,         ScalarOp::kFmod,
                          ScalarOp::kEqual,   ScalarOp::kLess,        ScalarOp::kLessEqual,
                          ScalarOp::kGreater, ScalarOp::kGreaterEqual};
  for (ScalarOp op : ops) {
    SCOPED_TRACE(kora::scalar_op_name(op));
    std::vector<double> xa = a, xb = b;
    if (op == ScalarOp::kPow)
      for (double& x : xa) x = std::fabs(x) + 0.5;
    const Tensor ta = f32({4, 6}, xa), tb = f32({4, 6}, xb);
    const DType out = is_comparison(op) ? DType::kBool : DType::kFloat32;
    const Tensor y = run1(ew(op, {in(0), in(1)}), {ta, tb}, out, {4, 6});
    ASSERT_EQ(y.dtype(), out);
    std::vector<double> want;
    const std::vector<double> fa = as_f32(xa), fb = as_f32(xb);
    for (size_t i = 0; i < fa.size(); ++i) want.push_back(ref_binary(op, fa[i], fb[i]));
    expect_near(y, want, 1e-5, 1e-5);
  }
}

TEST(InterpElementwise, ModAndFmodSigns) {
  const Tensor a = f32({4}, {7.5, -7.5, 7.5, -7.5}), b = f32({4}, {2, 2, -2, -2});
  expect_near(run1(ew(ScalarOp::kMod, {in(0), in(1)}), {a, b}, DType::kFloat32, {4}),
              {1.5, 0.5, -0.5, -1.5});
  expect_near(run1(ew(ScalarOp::kFmod, {in(0), in(1)}), {a, b}, DType::kFloat32, {4}),
              {1.5, -1.5, 1.5, -1.5});
}

TEST(InterpElementwise, ImmediateOperandsOnEitherSide) {
  const Tensor x = f32({3}, {1, 2, 4});
  expect_near(run1(ew(ScalarOp::kSub, {in(0), imm(10)}), {x}, DType::kFloat32, {3}), {-9, -8, -6});
  expect_near(run1(ew(ScalarOp::kSub, {imm(10), in(0)}), {x}, DType::kFloat32, {3}), {9, 8, 6});
  expect_near(run1(ew(ScalarOp::kDiv, {imm(1), in(0)}), {x}, DType::kFloat32, {3}), {1, 0.5, 0.25});
  expect_near(run1(ew(ScalarOp::kPow, {in(0), imm(2)}), {x}, DType::kFloat32, {3}), {1, 4, 16});
  const Tensor xi = i64({3}, {1, 2, 4});
  const Tensor yi = run1(ew(ScalarOp::kSub, {imm(10), in(0)}), {xi}, DType::kInt64, {3});
  EXPECT_EQ(yi.to_int64(), (std::vector<int64_t>{9, 8, 6}));
  const Tensor c = run1(ew(ScalarOp::kGreater, {in(0), imm(1.5)}), {x}, DType::kBool, {3});
  EXPECT_EQ(c.to_int64(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(InterpElementwise, MaxMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = f32({4}, {nan, 1, 2, nan}), b = f32({4}, {1, nan, 3, nan});
  expect_near(run1(ew(ScalarOp::kMax, {in(0), in(1)}), {a, b}, DType::kFloat32, {4}),
              {nan, nan, 3, nan});
  expect_near(run1(ew(ScalarOp::kMin, {in(0), in(1)}), {a, b}, DType::kFloat32, {4}),
              {nan, nan, 2, nan});
  const Tensor a64 = Tensor::from_double(DType::kFloat64, {2}, {nan, 5});
  expect_near(run1(ew(ScalarOp::kMax, {in(0), imm(1)}), {a64}, DType::kFloat64, {2}), {nan, 5});
}

TEST(InterpElementwise, Float64AndFloat16Paths) {
  const std::vector<double> a = random_values(10, 0.5, 3, 3), b = random_values(10, -2, 2, 4);
  const Tensor ta = Tensor::from_double(DType::kFloat64, {10}, a);
  const Tensor tb = Tensor::from_double(DType::kFloat64, {10}, b);
  for (ScalarOp op : {ScalarOp::kAdd, ScalarOp::kDiv, ScalarOp::kPow, ScalarOp::kMod}) {
    SCOPED_TRACE(kora::scalar_op_name(op));
    const Tensor y = run1(ew(op, {in(0), in(1)}), {ta, tb}, DType::kFloat64, {10});
    std::vector<double> want;
    for (size_t i = 0; i < a.size(); ++i) want.push_back(ref_binary(op, a[i], b[i]));
    expect_near(y, want, 1e-12, 1e-12);
  }
  const Tensor y = run1(ew(ScalarOp::kExp, {in(0)}), {ta}, DType::kFloat64, {10});
  std::vector<double> want;
  for (double v : a) want.push_back(std::exp(v));
  expect_near(y, want, 1e-12, 1e-12);

  // float16: computed in double, rounded to half on store.
  const Tensor h1 = Tensor::from_double(DType::kFloat16, {3}, {1, 2048, 0.1});
  const Tensor h2 = Tensor::from_double(DType::kFloat16, {3}, {0.5, 1, 0.2});
  const Tensor hs = run1(ew(ScalarOp::kAdd, {in(0), in(1)}), {h1, h2}, DType::kFloat16, {3});
  ASSERT_EQ(hs.dtype(), DType::kFloat16);
  expect_near(hs, {1.5, 2048, 0.2998046875}, 0, 0);  // 2049 rounds to even 2048
  const Tensor hc = run1(ew(ScalarOp::kLess, {in(0), in(1)}), {h1, h2}, DType::kBool, {3});
  EXPECT_EQ(hc.to_int64(), (std::vector<int64_t>{0, 0, 1}));
  const Tensor bf = Tensor::from_double(DType::kBFloat16, {2}, {1, -3});
  expect_near(run1(ew(ScalarOp::kMul, {in(0), imm(2)}), {bf}, DType::kBFloat16, {2}), {2, -6});
}

TEST(InterpElementwise, IntegerDivModFmodSemantics) {
  const Tensor a = i64({8}, {7, -7, 7, -7, 6, 0, -1, 9});
  const Tensor b = i64({8}, {2, 2, -2, -2, 3, 5, 4, -4});
  const Tensor div = run1(ew(ScalarOp::kDiv, {in(0), in(1)}), {a, b}, DType::kInt64, {8});
  const Tensor mod = run1(ew(ScalarOp::kMod, {in(0), in(1)}), {a, b}, DType::kInt64, {8});
  const Tensor fmod = run1(ew(ScalarOp::kFmod, {in(0), in(1)}), {a, b}, DType::kInt64, {8});
  const std::vector<int64_t> av = a.to_int64(), bv = b.to_int64();
  for (size_t i = 0; i < av.size(); ++i) {
    const double x = static_cast<double>(av[i]), y = static_cast<double>(bv[i]);
    EXPECT_EQ(div.int64_at(i), static_cast<int64_t>(std::trunc(x / y))) << i;
    EXPECT_EQ(mod.int64_at(i), static_cast<int64_t>(x - y * std::floor(x / y))) << i;
    EXPECT_EQ(fmod.int64_at(i), static_cast<int64_t>(x - y * std::trunc(x / y))) << i;
  }
  EXPECT_EQ(div.to_int64(), (std::vector<int64_t>{3, -3, -3, 3, 2, 0, 0, -2}));
  EXPECT_EQ(mod.to_int64(), (std::vector<int64_t>{1, 1, -1, -1, 0, 0, 3, -3}));
  EXPECT_EQ(fmod.to_int64(), (std::vector<int64_t>{1, -1, 1, -1, 0, 0, -1, 1}));
  // int32 and int8 too (computed in int64, stored back).
  const Tensor a32 = Tensor::from_int64(DType::kInt32, {2}, {-7, 7});
  const Tensor b32 = Tensor::from_int64(DType::kInt32, {2}, {2, -2});
  const Tensor m32 = run1(ew(ScalarOp::kMod, {in(0), in(1)}), {a32, b32}, DType::kInt32, {2});
  ASSERT_EQ(m32.dtype(), DType::kInt32);
  EXPECT_EQ(m32.to_int64(), (std::vector<int64_t>{1, -1}));
}

TEST(InterpElementwise, IntegerDivisionByZeroIsAnError) {
  const Tensor a = i64({2}, {1, 2}), b = i64({2}, {1, 0});
  for (ScalarOp op : {ScalarOp::kDiv, ScalarOp::kMod, ScalarOp::kFmod}) {
    try {
      run1(ew(op, {in(0), in(1)}), {a, b}, DType::kInt64, {2});
      ADD_FAILURE() << "no error for " << kora::scalar_op_name(op);
    } catch (const kora::Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("primitive 'p'"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("by zero"));
    }
  }
}

TEST(InterpElementwise, IntegerArithmeticUnaryAndWrapping) {
  const Tensor a = i64({5}, {-3, -1, 0, 2, 5}), b = i64({5}, {2, 3, 4, -1, 2});
  EXPECT_EQ(run1(ew(ScalarOp::kAdd, {in(0), in(1)}), {a, b}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{-1, 2, 4, 1, 7}));
  EXPECT_EQ(run1(ew(ScalarOp::kMul, {in(0), in(1)}), {a, b}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{-6, -3, 0, -2, 10}));
  EXPECT_EQ(run1(ew(ScalarOp::kPow, {in(0), in(1)}), {a, b}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{9, -1, 0, 0, 25}));
  EXPECT_EQ(run1(ew(ScalarOp::kMax, {in(0), in(1)}), {a, b}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{2, 3, 4, 2, 5}));
  EXPECT_EQ(run1(ew(ScalarOp::kMin, {in(0), in(1)}), {a, b}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{-3, -1, 0, -1, 2}));
  EXPECT_EQ(run1(ew(ScalarOp::kNeg, {in(0)}), {a}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{3, 1, 0, -2, -5}));
  EXPECT_EQ(run1(ew(ScalarOp::kAbs, {in(0)}), {a}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{3, 1, 0, 2, 5}));
  EXPECT_EQ(run1(ew(ScalarOp::kSign, {in(0)}), {a}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{-1, -1, 0, 1, 1}));
  EXPECT_EQ(run1(ew(ScalarOp::kRelu, {in(0)}), {a}, DType::kInt64, {5}).to_int64(),
            (std::vector<int64_t>{0, 0, 0, 2, 5}));
  EXPECT_EQ(run1(ew(ScalarOp::kLessEqual, {in(0), in(1)}), {a, b}, DType::kBool, {5}).to_int64(),
            (std::vector<int64_t>{1, 1, 1, 0, 0}));
  EXPECT_EQ(run1(ew(ScalarOp::kEqual, {in(0), imm(0)}), {a}, DType::kBool, {5}).to_int64(),
            (std::vector<int64_t>{0, 0, 1, 0, 0}));
  // int32 overflow wraps; uint8 subtraction wraps.
  const Tensor big = Tensor::from_int64(DType::kInt32, {1}, {2147483647});
  EXPECT_EQ(run1(ew(ScalarOp::kAdd, {in(0), imm(1)}), {big}, DType::kInt32, {1}).int64_at(0),
            -2147483648ll);
  const Tensor u = Tensor::from_int64(DType::kUInt8, {2}, {3, 250});
  EXPECT_EQ(run1(ew(ScalarOp::kSub, {in(0), imm(5)}), {u}, DType::kUInt8, {2}).to_int64(),
            (std::vector<int64_t>{254, 245}));
  // Float-only functions are errors on integers.
  EXPECT_THROW(run1(ew(ScalarOp::kExp, {in(0)}), {a}, DType::kInt64, {5}), kora::Error);
}

TEST(InterpElementwise, BitwiseLogicAndShifts) {
  const Tensor a = Tensor::from_int64(DType::kUInt8, {4}, {0x0f, 0xf0, 0xff, 0x81});
  const Tensor b = Tensor::from_int64(DType::kUInt8, {4}, {0x3c, 0x3c, 1, 7});
  auto run = [&](ScalarOp op) {
    return run1(ew(op, {in(0), in(1)}), {a, b}, DType::kUInt8, {4}).to_int64();
  };
  EXPECT_EQ(run(ScalarOp::kBitAnd), (std::vector<int64_t>{0x0c, 0x30, 1, 1}));
  EXPECT_EQ(run(ScalarOp::kBitOr), (std::vector<int64_t>{0x3f, 0xfc, 0xff, 0x87}));
  EXPECT_EQ(run(ScalarOp::kBitXor), (std::vector<int64_t>{0x33, 0xcc, 0xfe, 0x86}));
  // Shifted-out bits leave the byte; right shifts are logical.
  EXPECT_EQ(run(ScalarOp::kShiftLeft), (std::vector<int64_t>{0, 0, 0xfe, 0x80}));
  EXPECT_EQ(run(ScalarOp::kShiftRight), (std::vector<int64_t>{0, 0, 0x7f, 1}));
  EXPECT_EQ(run1(ew(ScalarOp::kBitNot, {in(0)}), {a}, DType::kUInt8, {4}).to_int64(),
            (std::vector<int64_t>{0xf0, 0x0f, 0, 0x7e}));
  const Tensor big = Tensor::from_int64(DType::kUInt64, {2}, {-1, 1});
  const Tensor by = Tensor::from_int64(DType::kUInt64, {2}, {63, 64});
  EXPECT_EQ(
      run1(ew(ScalarOp::kShiftRight, {in(0), in(1)}), {big, by}, DType::kUInt64, {2}).to_int64(),
      (std::vector<int64_t>{1, 0}));
  // Bitwise operators are errors on floats.
  const Tensor f = Tensor::from_double(DType::kFloat32, {1}, {1.5});
  EXPECT_THROW(run1(ew(ScalarOp::kBitNot, {in(0)}), {f}, DType::kFloat32, {1}), kora::Error);
}

TEST(InterpElementwise, BoolLogic) {
  const Tensor a = Tensor::from_int64(DType::kBool, {4}, {0, 0, 1, 1});
  const Tensor b = Tensor::from_int64(DType::kBool, {4}, {0, 1, 0, 1});
  auto run = [&](ScalarOp op) {
    return run1(ew(op, {in(0), in(1)}), {a, b}, DType::kBool, {4}).to_int64();
  };
  EXPECT_EQ(run(ScalarOp::kAnd), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(run(ScalarOp::kOr), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(run(ScalarOp::kXor), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(run(ScalarOp::kEqual), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(run1(ew(ScalarOp::kNot, {in(0)}), {a}, DType::kBool, {4}).to_int64(),
            (std::vector<int64_t>{1, 1, 0, 0}));
  const Tensor n = run1(ew(ScalarOp::kNot, {in(0)}), {a}, DType::kBool, {4});
  EXPECT_EQ(n.dtype(), DType::kBool);
}

TEST(InterpElementwise, Where) {
  const Tensor c = Tensor::from_int64(DType::kBool, {2, 2}, {1, 0, 0, 1});
  const Tensor x = f32({2, 2}, {1, 2, 3, 4}), y = f32({2, 2}, {-1, -2, -3, -4});
  expect_near(run1(ew(ScalarOp::kWhere, {in(0), in(1), in(2)}), {c, x, y}, DType::kFloat32, {2, 2}),
              {1, -2, -3, 4});
  expect_near(run1(ew(ScalarOp::kWhere, {in(0), in(1), imm(-9)}), {c, x}, DType::kFloat32, {2, 2}),
              {1, -9, -9, 4});
  expect_near(run1(ew(ScalarOp::kWhere, {in(0), imm(7), in(1)}), {c, x}, DType::kFloat32, {2, 2}),
              {7, 2, 3, 7});
  const Tensor xi = i64({2, 2}, {10, 20, 30, 40});
  EXPECT_EQ(
      run1(ew(ScalarOp::kWhere, {in(0), in(1), imm(0)}), {c, xi}, DType::kInt64, {2, 2}).to_int64(),
      (std::vector<int64_t>{10, 0, 0, 40}));
  const Tensor xh = Tensor::from_double(DType::kFloat16, {2, 2}, {0.5, 1, 2, 4});
  expect_near(run1(ew(ScalarOp::kWhere, {in(0), in(1), imm(3)}), {c, xh}, DType::kFloat16, {2, 2}),
              {0.5, 3, 3, 4});
}

TEST(InterpElementwise, Cast) {
  auto cast = [](const Tensor& x, DType to) {
    return run1(ew(ScalarOp::kCast, {in(0)}), {x}, to, x.shape());
  };
  const Tensor f = f32({6}, {-2.7, -0.5, 0, 0.5, 2.7, 300.9});
  // float to integer truncates toward zero; narrower integers wrap.
  EXPECT_EQ(cast(f, DType::kInt64).to_int64(), (std::vector<int64_t>{-2, 0, 0, 0, 2, 300}));
  EXPECT_EQ(cast(f, DType::kInt32).to_int64(), (std::vector<int64_t>{-2, 0, 0, 0, 2, 300}));
  EXPECT_EQ(cast(f, DType::kInt8).to_int64(), (std::vector<int64_t>{-2, 0, 0, 0, 2, 44}));
  EXPECT_EQ(cast(f, DType::kBool).to_int64(), (std::vector<int64_t>{1, 1, 0, 1, 1, 1}));
  const Tensor d = cast(f, DType::kFloat64);
  ASSERT_EQ(d.dtype(), DType::kFloat64);
  expect_near(d, as_f32({-2.7, -0.5, 0, 0.5, 2.7, 300.9}), 0, 0);
  const Tensor h = cast(f, DType::kFloat16);
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  expect_near(h, {-2.69921875, -0.5, 0, 0.5, 2.69921875, 301}, 0, 0);
  // integers and bools to floats and other integers
  const Tensor i = i64({4}, {-3, 0, 5, 1ll << 40});
  expect_near(cast(i, DType::kFloat32), {-3, 0, 5, 1099511627776.0}, 0, 0);
  EXPECT_EQ(cast(i, DType::kBool).to_int64(), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(cast(i, DType::kUInt8).to_int64(), (std::vector<int64_t>{253, 0, 5, 0}));
  const Tensor b = Tensor::from_int64(DType::kBool, {2}, {1, 0});
  expect_near(cast(b, DType::kFloat32), {1, 0}, 0, 0);
  EXPECT_EQ(cast(b, DType::kInt32).to_int64(), (std::vector<int64_t>{1, 0}));
  // same dtype: unchanged
  expect_near(cast(f, DType::kFloat32), as_f32({-2.7, -0.5, 0, 0.5, 2.7, 300.9}), 0, 0);
}

TEST(InterpElementwise, OperandShapeMismatchIsAnError) {
  const Tensor a = f32({2}, {1, 2}), b = f32({3}, {1, 2, 3});
  EXPECT_THROW(run1(ew(ScalarOp::kAdd, {in(0), in(1)}), {a, b}, DType::kFloat32, {2}), kora::Error);
  EXPECT_THROW(run1(ew(ScalarOp::kAdd, {in(0)}), {a}, DType::kFloat32, {2}), kora::Error);
}

}  // namespace
}  // namespace kora_interp_test
