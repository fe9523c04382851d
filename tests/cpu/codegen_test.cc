// CPU code generation (src/cpu/codegen.h) against the reference interpreter: on
// 6 random float32 graphs of elementwise and broadcast primitives (shapes [2, 3, 5] and
// ones like [1, 3, 1], computed on and broadcast up; immediate operands, shared values,
// NaN and inf results), every candidate kernel x schedule goes through
// tests/cpu/codegen_harness.h's check. Opaque primitives and float16 are refused.
#include "cpu/codegen.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen_graphs.h"
#include "cpu/codegen_harness.h"
#include "cpu/compile.h"
#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;

TEST(CpuCodegen, EveryCandidateMatchesTheInterpreter) {
  std::mt19937 rng(2026);
  kora_codegen_test::CheckStats stats;
  for (int t = 0; t < 6; ++t) {
    const PrimGraph g = kora_codegen_test::random_elementwise_graph(rng);
    kora_codegen_test::check_graph(g, 6, rng, stats);
  }
  EXPECT_GT(stats.kernels, 90);
  EXPECT_GT(stats.multi_output, 10);
  std::printf("[ info     ] %d kernels (%d with several outputs) match the interpreter\n",
              stats.kernels, stats.multi_output);
}

TEST(CpuCodegen, RefusesWhatItCannotGenerate) {
  PrimGraph g;
  g.inputs = {"a", "b"};
  g.values["a"] = {DType::kFloat32, {4, 4}};
  g.values["b"] = {DType::kFloat32, {4, 4}};
  g.values["t"] = {DType::kFloat32, {4, 4}};
  g.values["y"] = {DType::kFloat32, {4, 4}};
  g.values["m"] = {DType::kBool, {4, 4}};
  Primitive mm;
  mm.name = "mm";
  mm.attrs = LinearAttrs{MatMulAttrs{}};
  mm.inputs = {"a", "b"};
  mm.outputs = {"t"};
  Primitive relu;
  relu.name = "relu";
  relu.attrs = ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}};
  relu.inputs = {"t"};
  relu.outputs = {"y"};
  Primitive less;
  less.name = "less";
  less.attrs = ElementwiseAttrs{ScalarOp::kLess, {Operand{0, 0}, Operand{1, 0}}};
  less.inputs = {"a", "b"};
  less.outputs = {"m"};
  g.values["d"] = {DType::kFloat16, {4, 4}};
  Primitive cast;
  cast.name = "cast";
  cast.attrs = ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}};
  cast.inputs = {"a"};
  cast.outputs = {"d"};
  g.values["v"] = {DType::kFloat32, {4, 2}};
  g.values["ix"] = {DType::kInt64, {4, 2}};
  Primitive top;
  top.name = "top";
  OpaqueAttrs op;
  op.node.op_type = "TopK";
  top.attrs = op;
  top.inputs = {"b"};
  top.outputs = {"v", "ix"};
  g.prims = {mm, relu, less, cast, top};
  g.outputs = {"y", "m", "d", "v"};
  const KernelDag dag = kernel_dag_of(g);
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {0, 1})));
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {1})));
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {2})));   // bool output
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {3})));  // float16
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {4})));  // opaque
  try {
    generate_cpu_kernel(g, dag, make_candidate(dag, {4}), "k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'top'"), std::string::npos) << e.what();
  }
}

}  // namespace
