// Reduce arithmetic in generated code (codegen/reduce.h): a reduce member in, its
// accumulator type, identity, update statement and result expression out.
#include "codegen/reduce.h"

#include "codegen/scalar.h"

namespace kora::codegen {

ReduceCode reduce_code(const PrimGraph& graph, const Primitive& p, const ReduceAttrs& r) {
  ReduceCode rc;
  const Shape& xs = graph.value(p.inputs.at(0)).shape;
  const DType dt = graph.value(p.inputs.at(0)).dtype;
  rc.op = r.op;
  rc.floating = dt == DType::kFloat32;
  rc.out = graph.value(p.output()).dtype;
  for (int64_t a : r.axes) rc.count *= xs[a];
  rc.acc_type = rc.floating ? "double" : "int64_t";
  switch (r.op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      rc.init = "0";
      break;
    case ReduceOp::kProd:
      rc.init = "1";
      break;
    case ReduceOp::kMax:
      rc.init = rc.floating           ? "-(double)KORA_INF"
                : dt == DType::kInt32 ? "(int64_t)INT32_MIN"
                : dt == DType::kBool  ? "0"
                                      : "INT64_MIN";
      break;
    case ReduceOp::kMin:
      rc.init = rc.floating           ? "(double)KORA_INF"
                : dt == DType::kInt32 ? "(int64_t)INT32_MAX"
                : dt == DType::kBool  ? "1"
                                      : "INT64_MAX";
      break;
  }
  return rc;
}

std::string ReduceCode::update(const std::string& a, const std::string& value) const {
  const std::string v = "(" + acc_type + ")" + value;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      return floating ? a + " += " + v + ";" : a + " = kora_wadd(" + a + ", " + v + ");";
    case ReduceOp::kProd:
      return floating ? a + " *= " + v + ";" : a + " = kora_wmul(" + a + ", " + v + ");";
    case ReduceOp::kMax:
      return a + " = (" + v + " > " + a + " || " + v + " != " + v + ") ? " + v + " : " + a + ";";
    case ReduceOp::kMin:
      return a + " = (" + v + " < " + a + " || " + v + " != " + v + ") ? " + v + " : " + a + ";";
  }
  return "";
}

std::string ReduceCode::result(const std::string& a) const {
  std::string v = a;
  if (op == ReduceOp::kMean)
    v = floating ? "(" + a + " / " + std::to_string(count) + ".0)"
                 : (count > 0 ? "(" + a + " / " + std::to_string(count) + ")" : a);
  if (out == DType::kBool) return "(uint8_t)(" + v + " != 0)";
  return "(" + std::string(ctype(out)) + ")" + v;
}

}  // namespace kora::codegen
