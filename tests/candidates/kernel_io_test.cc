// A candidate kernel's tensors (include/kora/candidates.h: kernel_reads, kernel_writes)
// on hand-built primitive graphs (tests/candidates/hand_built_graphs.h and below), each
// checked against the lists their construction implies: the external tensors read
// (graph inputs, constants, other kernels' outputs) once each in first-use order, the
// tensors of the output members written (every output of a multi-output primitive), and
// on a segment's sub-DAG the tensors of the primitives its nodes stand for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "candidates/hand_built_graphs.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {
namespace {

using kora_test::make_prim;
using kora_test::matmul_relu_graph;
using kora_test::topk_graph;
using kora_test::unary;

TEST(KernelIo, ReadsAndWritesOfFusedAndSingleKernels) {
  const PrimGraph g = matmul_relu_graph();
  const KernelDag dag = kernel_dag_of(g);
  ASSERT_EQ(dag.size(), 2);

  const Candidate fused = make_candidate(dag, {0, 1});
  EXPECT_EQ(kernel_reads(g, dag, fused), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(kernel_writes(g, dag, fused), (std::vector<std::string>{"y"}));

  const Candidate mm = make_candidate(dag, {0});
  EXPECT_EQ(kernel_reads(g, dag, mm), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(kernel_writes(g, dag, mm), (std::vector<std::string>{"t"}));

  const Candidate relu = make_candidate(dag, {1});
  EXPECT_EQ(kernel_reads(g, dag, relu), (std::vector<std::string>{"t"}));
  EXPECT_EQ(kernel_writes(g, dag, relu), (std::vector<std::string>{"y"}));
}

TEST(KernelIo, ReadsAreDistinctInFirstUseOrderAndIntermediatesRequiredAreWritten) {
  // u = x * x; v = u + z; w = v * x; u is also a graph output, so the fused kernel of all
  // three writes u and w, and reads x and z once each (x first).
  PrimGraph g;
  g.inputs = {"x", "z"};
  g.outputs = {"u", "w"};
  for (const char* t : {"x", "z", "u", "v", "w"}) g.values[t] = {DType::kFloat32, {8}};
  g.prims.push_back(
      make_prim("sq", ElementwiseAttrs{ScalarOp::kMul, {{0, 0}, {1, 0}}}, {"x", "x"}, {"u"}));
  g.prims.push_back(
      make_prim("add", ElementwiseAttrs{ScalarOp::kAdd, {{0, 0}, {1, 0}}}, {"u", "z"}, {"v"}));
  g.prims.push_back(
      make_prim("mul", ElementwiseAttrs{ScalarOp::kMul, {{0, 0}, {1, 0}}}, {"v", "x"}, {"w"}));
  const KernelDag dag = kernel_dag_of(g);
  const Candidate all = make_candidate(dag, {0, 1, 2});
  EXPECT_EQ(kernel_reads(g, dag, all), (std::vector<std::string>{"x", "z"}));
  EXPECT_EQ(kernel_writes(g, dag, all), (std::vector<std::string>{"u", "w"}));

  const Candidate tail = make_candidate(dag, {1, 2});
  EXPECT_EQ(kernel_reads(g, dag, tail), (std::vector<std::string>{"u", "z", "x"}));
  EXPECT_EQ(kernel_writes(g, dag, tail), (std::vector<std::string>{"w"}));
}

TEST(KernelIo, OpaqueKernelWritesEveryOutput) {
  const PrimGraph g = topk_graph();
  const KernelDag dag = kernel_dag_of(g);
  const Candidate c = make_candidate(dag, {0});
  EXPECT_EQ(kernel_reads(g, dag, c), (std::vector<std::string>{"x", "k"}));
  EXPECT_EQ(kernel_writes(g, dag, c), (std::vector<std::string>{"values", "indices"}));
}

// a = exp(x); b = a + y; c = relu(b); d = c * a (the output). The segment of c and d
// (sub-DAG nodes 0 and 1 for primitives 2 and 3) reads b from the segment before and a
// across it; c leaves a kernel of its own only because d reads it.
TEST(KernelIo, SubDagNodesStandForTheirPrimitives) {
  PrimGraph g;
  g.inputs = {"x", "y"};
  g.outputs = {"d"};
  for (const char* t : {"x", "y", "a", "b", "c", "d"}) g.values[t] = {DType::kFloat32, {4, 4}};
  const ElementwiseAttrs binary_add{ScalarOp::kAdd, {{0, 0}, {1, 0}}};
  const ElementwiseAttrs binary_mul{ScalarOp::kMul, {{0, 0}, {1, 0}}};
  g.prims.push_back(make_prim("exp", unary(ScalarOp::kExp), {"x"}, {"a"}));
  g.prims.push_back(make_prim("add", binary_add, {"a", "y"}, {"b"}));
  g.prims.push_back(make_prim("relu", unary(ScalarOp::kRelu), {"b"}, {"c"}));
  g.prims.push_back(make_prim("mul", binary_mul, {"c", "a"}, {"d"}));
  const KernelDag dag = kernel_dag_of(g);
  const KernelDag sub = sub_dag(dag, 2, 4);
  ASSERT_EQ(sub.size(), 2);
  ASSERT_EQ(sub.prim, (std::vector<int>{2, 3}));

  const Candidate both = make_candidate(sub, {0, 1});
  EXPECT_EQ(kernel_reads(g, sub, both), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(kernel_writes(g, sub, both), (std::vector<std::string>{"d"}));

  const Candidate relu = make_candidate(sub, {0});
  EXPECT_EQ(kernel_reads(g, sub, relu), (std::vector<std::string>{"b"}));
  EXPECT_EQ(kernel_writes(g, sub, relu), (std::vector<std::string>{"c"}));

  const Candidate mul = make_candidate(sub, {1});
  EXPECT_EQ(kernel_reads(g, sub, mul), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(kernel_writes(g, sub, mul), (std::vector<std::string>{"d"}));

  // The whole graph as one kernel reads the graph inputs only and writes the output.
  const Candidate all = make_candidate(dag, {0, 1, 2, 3});
  EXPECT_EQ(kernel_reads(g, dag, all), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(kernel_writes(g, dag, all), (std::vector<std::string>{"d"}));
}

}  // namespace
}  // namespace kora
