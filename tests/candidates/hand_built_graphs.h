// Small primitive graphs built by hand, for the tests of what a kernel reads and writes
// (tests/candidates/kernel_io_test.cc) and of its cost (tests/cost/cost_test.cc,
// predicted_cost_test.cc): names,
// shapes and primitives in; a PrimGraph out, every tensor's value info filled in.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kora/primitive.h"

namespace kora_test {

// A primitive named `name` (its origin `name`_node).
inline kora::Primitive make_prim(const std::string& name, kora::PrimAttrs attrs,
                                 std::vector<std::string> inputs,
                                 std::vector<std::string> outputs) {
  kora::Primitive p;
  p.name = name;
  p.origin = name + "_node";
  p.attrs = std::move(attrs);
  p.inputs = std::move(inputs);
  p.outputs = std::move(outputs);
  return p;
}

// An elementwise primitive of one operand.
inline kora::ElementwiseAttrs unary(kora::ScalarOp op) {
  return kora::ElementwiseAttrs{op, {kora::Operand{0, 0}}};
}

// A matmul by a constant and a relu in a chain: a [n, n] (graph input), b [n, n]
// (constant), t between them, y (output).
inline kora::PrimGraph matmul_and_relu(bool relu_first, int64_t n = 64) {
  using namespace kora;
  PrimGraph g;
  g.name = relu_first ? "relu_matmul" : "matmul_relu";
  g.inputs = {"a"};
  g.outputs = {"y"};
  for (const char* t : {"a", "b", "t", "y"}) g.values[t] = {DType::kFloat32, {n, n}};
  g.constants["b"] = Tensor(DType::kFloat32, {n, n});
  Primitive mm = make_prim("mm", LinearAttrs{MatMulAttrs{}}, {"a", "b"}, {"t"});
  Primitive relu = make_prim("relu", unary(ScalarOp::kRelu), {"t"}, {"y"});
  if (relu_first) {
    relu.inputs = {"a"}, relu.outputs = {"t"};
    mm.inputs = {"t", "b"}, mm.outputs = {"y"};
    g.prims = {relu, mm};
  } else {
    g.prims = {mm, relu};
  }
  return g;
}
// t = a x b -> y = relu(t).
inline kora::PrimGraph matmul_relu_graph(int64_t n = 64) { return matmul_and_relu(false, n); }
// t = relu(a) -> y = t x b: the relu is the matmul's prologue.
inline kora::PrimGraph relu_matmul_graph() { return matmul_and_relu(true); }

// x [4, 10] -> TopK(k = 3) -> values [4, 3] float32, indices [4, 3] int64.
inline kora::PrimGraph topk_graph() {
  using namespace kora;
  PrimGraph g;
  g.inputs = {"x"};
  g.outputs = {"values", "indices"};
  g.values["x"] = {DType::kFloat32, {4, 10}};
  g.values["k"] = {DType::kInt64, {1}};
  g.values["values"] = {DType::kFloat32, {4, 3}};
  g.values["indices"] = {DType::kInt64, {4, 3}};
  g.constants["k"] = Tensor::from_int64(DType::kInt64, {1}, {3});
  Node node;
  node.name = "topk";
  node.op_type = "TopK";
  node.inputs = {"x", "k"};
  node.outputs = {"values", "indices"};
  g.prims.push_back(make_prim("topk", OpaqueAttrs{node}, {"x", "k"}, {"values", "indices"}));
  return g;
}

}  // namespace kora_test
