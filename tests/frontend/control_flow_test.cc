// Tests of control flow expansion (src/frontend/control_flow.h): If, Loop and Scan are
// replaced by the nodes they run, with the shapes the ONNX specification gives (worked
// out by hand in the comments), and what kora cannot expand is an error naming the node.
// Their values are checked against onnxruntime in tests/fission/test_synthetic.py and
// against the ONNX node tests (test_if, test_loop11, test_range_*_expanded).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/frontend.h"

namespace {

using kora::Shape;
using kora_test::attr_g;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::import_error;
using kora_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

onnx::GraphProto subgraph(const std::vector<onnx::NodeProto>& nodes,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  onnx::GraphProto g;
  g.set_name("body");
  for (const onnx::NodeProto& n : nodes) *g.add_node() = n;
  for (const std::string& i : inputs) g.add_input()->set_name(i);
  for (const std::string& o : outputs) g.add_output()->set_name(o);
  return g;
}

onnx::NodeProto node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

bool has_op(const kora::Graph& g, const std::string& op) {
  for (const kora::Node& n : g.nodes)
    if (n.op_type == op) return true;
  return false;
}

TEST(ControlFlowTest, IfInlinesTheBranchItsConstantConditionTakes) {
  // then: X [5] + X; else: Concat(X, X) [10]. The condition is false: Y is [10].
  ModelBuilder m(17);
  m.input("X", {5}).output("Y");
  m.initializer(kora_test::raw_tensor("cond", onnx::TensorProto::BOOL, {}, std::string(1, '\0')));
  onnx::NodeProto concat = node("Concat", {"X", "X"}, {"c"});
  *concat.add_attribute() = attr_i("axis", 0);
  m.node("If", {"cond"}, {"Y"},
         {attr_g("then_branch", subgraph({node("Add", {"X", "X"}, {"s"})}, {}, {"s"})),
          attr_g("else_branch", subgraph({concat}, {}, {"c"}))},
         "if_node");
  const kora::Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{10}));
  EXPECT_FALSE(has_op(g, "If"));
  EXPECT_TRUE(has_op(g, "Concat"));
  EXPECT_FALSE(has_op(g, "Add"));
}

TEST(ControlFlowTest, LoopUnrolledAtItsTripCount) {
  // 4 iterations of y <- y + X: the carried Y [2, 3]; the scan output stacks each
  // iteration's [2, 3] along a new first axis: [4, 2, 3].
  ModelBuilder m(17);
  m.input("X", {2, 3}).output("Y").output("S");
  m.init_i64("M", {}, {4});
  m.node("Loop", {"M", "", "X"}, {"Y", "S"},
         {attr_g("body", subgraph({node("Add", {"y_in", "X"}, {"y_out"}),
                                   node("Identity", {"c_in"}, {"c_out"})},
                                  {"i", "c_in", "y_in"}, {"c_out", "y_out", "y_out"}))},
         "loop_node");
  const kora::Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("S").shape, (Shape{4, 2, 3}));
  EXPECT_FALSE(has_op(g, "Loop"));
  int adds = 0;
  for (const kora::Node& n : g.nodes) adds += n.op_type == "Add";
  EXPECT_EQ(adds, 4);
}

TEST(ControlFlowTest, ScanUnrolledAlongItsAxis) {
  // Scan input A [3, 7] along axis 1: 7 steps of s <- s + A[:, t] ([3]); the scan output
  // (each step's s) stacked along axis 1: [3, 7].
  ModelBuilder m(17);
  m.input("S0", {3}).input("A", {3, 7}).output("S").output("Out");
  m.node("Scan", {"S0", "A"}, {"S", "Out"},
         {attr_g("body", subgraph({node("Add", {"s_in", "a"}, {"s_out"}),
                                   node("Identity", {"s_out"}, {"o"})},
                                  {"s_in", "a"}, {"s_out", "o"})),
          attr_i("num_scan_inputs", 1), attr_is("scan_input_axes", {1}),
          attr_is("scan_output_axes", {1})},
         "scan_node");
  const kora::Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("S").shape, (Shape{3}));
  EXPECT_EQ(g.value("Out").shape, (Shape{3, 7}));
}

TEST(ControlFlowTest, LoopConditionKnownOnlyAtRuntimeIsAnError) {
  // The body continues while sum(y) > 0, with y computed from the runtime input X.
  ModelBuilder m(17);
  m.input("X", {2}).output("Y");
  m.init_i64("M", {}, {10});
  m.initializer(kora_test::raw_tensor("go", onnx::TensorProto::BOOL, {}, std::string(1, '\1')));
  m.initializer(kora_test::float_tensor("zero", {}, {0.0f}));
  m.node("Loop", {"M", "go", "X"}, {"Y"},
         {attr_g("body", subgraph({node("Neg", {"y_in"}, {"y_out"}),
                                   node("ReduceSum", {"y_out"}, {"total"}),
                                   node("Greater", {"total", "zero"}, {"c_out"})},
                                  {"i", "c_in", "y_in"}, {"c_out", "y_out"}))},
         "loop_node");
  EXPECT_THAT(import_error(m), AllOf(HasSubstr("loop_node"), HasSubstr("does not fold")));
}

TEST(ControlFlowTest, LoopTripCountKnownOnlyAtRuntimeIsAnError) {
  ModelBuilder m(17);
  m.input("X", {2}).input("M", {}, onnx::TensorProto::INT64).output("Y");
  m.node("Loop", {"M", "", "X"}, {"Y"},
         {attr_g("body",
                 subgraph({node("Neg", {"y_in"}, {"y_out"}), node("Identity", {"c_in"}, {"c_out"})},
                          {"i", "c_in", "y_in"}, {"c_out", "y_out"}))},
         "loop_node");
  EXPECT_THAT(import_error(m), AllOf(HasSubstr("loop_node"), HasSubstr("'M' (Loop trip count)"),
                                     HasSubstr("must be a constant")));
}

}  // namespace
