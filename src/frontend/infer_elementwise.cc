// Shape rules of the elementwise operators: unary functions keep shape and dtype;
// binary, variadic and ternary ones broadcast (numpy rules); comparisons and logic give
// bool; Cast and CastLike change only the dtype.
#include <optional>

#include "frontend/op_rules.h"

namespace kora {
namespace {

std::vector<ValueInfo> same_as_input(const InferContext& c) { return {c.in(0)}; }

std::vector<ValueInfo> broadcast_all(const InferContext& c, DType dtype) {
  Shape s = c.shape(0);
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.has(i)) s = broadcast_shapes(c, s, c.shape(i));
  return {ValueInfo{dtype, s}};
}

std::vector<ValueInfo> arithmetic(const InferContext& c) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.has(i) && c.dtype(i) != c.dtype(0))
      c.fail(std::string("input dtypes differ: ") + dtype_name(c.dtype(0)) + " and " +
             dtype_name(c.dtype(i)));
  return broadcast_all(c, c.dtype(0));
}

// Pow and PRelu: the first input's dtype, operands may differ in dtype (Pow) or
// broadcast one way onto the first (PRelu).
std::vector<ValueInfo> first_dtype_broadcast(const InferContext& c) {
  return broadcast_all(c, c.dtype(0));
}

// Bitwise logic and shifts: integer operands of one dtype, broadcast.
std::vector<ValueInfo> integer_only(const InferContext& c) {
  if (!is_integer(c.dtype(0)))
    c.fail(std::string("input must be an integer, not ") + dtype_name(c.dtype(0)));
  return arithmetic(c);
}

std::vector<ValueInfo> compare(const InferContext& c) { return broadcast_all(c, DType::kBool); }

std::vector<ValueInfo> where(const InferContext& c) {
  if (c.dtype(0) != DType::kBool) c.fail("condition must be bool");
  return broadcast_all(c, c.dtype(1));
}

std::vector<ValueInfo> cast(const InferContext& c) {
  const int64_t to = c.node().attr_int("to", 0);
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int>(to));
  if (!dtype) c.fail("cast to " + onnx_dtype_name(static_cast<int>(to)) + " is not supported");
  return {ValueInfo{*dtype, c.shape(0)}};
}

std::vector<ValueInfo> cast_like(const InferContext& c) {
  return {ValueInfo{c.dtype(1), c.shape(0)}};
}

std::vector<ValueInfo> clip(const InferContext& c) {
  for (size_t i = 1; i < 3; ++i)
    if (c.has(i) && !c.shape(i).empty() && numel(c.shape(i)) != 1)
      c.fail("min and max must be scalars");
  return {c.in(0)};
}

std::vector<ValueInfo> is_special(const InferContext& c) {
  if (!is_floating(c.dtype(0))) c.fail("input must be floating point");
  return {ValueInfo{DType::kBool, c.shape(0)}};
}

std::vector<ValueInfo> logical_not(const InferContext& c) {
  if (c.dtype(0) != DType::kBool) c.fail("input must be bool");
  return {c.in(0)};
}

}  // namespace

void add_elementwise_rules(RuleTable& t) {
  for (const char* op :
       {"Relu",      "LeakyRelu", "Elu",  "Selu",       "Celu", "Sigmoid",  "HardSigmoid",
        "HardSwish", "Tanh",      "Erf",  "Gelu",       "Mish", "Softplus", "Softsign",
        "Exp",       "Log",       "Sqrt", "Reciprocal", "Neg",  "Abs",      "Floor",
        "Ceil",      "Round",     "Sign", "Sin",        "Cos",  "Identity"})
    t[op] = {same_as_input, 1, 1};
  for (const char* op : {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                         "ThresholdedRelu", "Shrink"})
    t[op] = {same_as_input, 1, 1};
  t["BitwiseNot"] = {integer_only, 1, 1};
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift"})
    t[op] = {integer_only, 2, 2};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod"}) t[op] = {arithmetic, 2, 2};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) t[op] = {arithmetic, 1, -1};
  t["Pow"] = {first_dtype_broadcast, 2, 2};
  t["PRelu"] = {first_dtype_broadcast, 2, 2};
  for (const char* op :
       {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"})
    t[op] = {compare, 2, 2};
  t["Not"] = {logical_not, 1, 1};
  t["IsNaN"] = {is_special, 1, 1};
  t["IsInf"] = {is_special, 1, 1};
  t["Where"] = {where, 3, 3};
  t["Cast"] = {cast, 1, 1};
  t["CastLike"] = {cast_like, 2, 2};
  t["Clip"] = {clip, 1, 3};
}

}  // namespace kora
