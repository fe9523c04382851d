// Tests of constant folding at import: the exporter shape-arithmetic pattern
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) collapses into a constant shape;
// folded values of Cast, Slice, Mul, Div, Where, Equal, Range, ConstantOfShape and Clip (with
// either bound absent; TensorFlow's same padding computed from a shape) match values worked
// out by hand; fold_constants=false keeps the nodes; dead nodes are pruned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/frontend.h"

namespace {

using kora::DType;
using kora::Graph;
using kora::Shape;
using kora::Tensor;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::ModelBuilder;
using ::testing::ElementsAre;

constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> ops;
  for (const kora::Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

Tensor folded(const Graph& g, const std::string& name) {
  const Tensor* t = g.constant(name);
  if (!t) throw std::runtime_error("'" + name + "' was not folded into a constant");
  return *t;
}

// The pattern PyTorch exporters emit for x.view(x.size(0), -1):
//   s = Shape(X); n = Gather(s, 0); n1 = Unsqueeze(n, [0]); shape = Concat(n1, [-1]);
//   Y = Reshape(X, shape)
ModelBuilder exporter_pattern() {
  ModelBuilder m(13);
  m.input("X", {"batch", 3, 4, 5}).output("Y");
  m.node("Shape", {"X"}, {"s"}, {}, "shape");
  m.node("Constant", {}, {"zero"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {0}))});
  m.node("Gather", {"s", "zero"}, {"n"}, {attr_i("axis", 0)}, "gather");
  m.node("Constant", {}, {"axes0"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {1}, {0}))});
  m.node("Unsqueeze", {"n", "axes0"}, {"n1"}, {}, "unsqueeze");
  m.node("Constant", {}, {"minus1"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {1}, {-1}))});
  m.node("Concat", {"n1", "minus1"}, {"target"}, {attr_i("axis", 0)}, "concat");
  m.node("Reshape", {"X", "target"}, {"Y"}, {}, "reshape");
  return m;
}

TEST(ConstantFoldTest, ExporterReshapePatternFolds) {
  kora::ImportOptions o;
  o.dims = {{"batch", 2}};
  Graph g = kora_test::import_model(exporter_pattern(), o);
  EXPECT_THAT(op_types(g), ElementsAre("Reshape"));
  ASSERT_EQ(g.nodes.size(), 1u);
  const kora::Node& reshape = g.nodes[0];
  ASSERT_EQ(reshape.inputs.size(), 2u);
  EXPECT_EQ(reshape.inputs[0], "X");
  ASSERT_TRUE(g.is_constant(reshape.inputs[1]));
  const Tensor& target = folded(g, reshape.inputs[1]);
  EXPECT_EQ(target.dtype(), DType::kInt64);
  EXPECT_EQ(target.shape(), (Shape{2}));
  EXPECT_EQ(target.to_int64(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 60}));
  // The intermediate tensors are gone from the graph.
  for (const char* t : {"s", "n", "zero", "axes0"}) EXPECT_EQ(g.values.count(t), 0u) << t;
}

TEST(ConstantFoldTest, FoldConstantsFalseKeepsNodes) {
  // With folding off the shape arithmetic stays; Shape -> Gather -> output still types.
  ModelBuilder m(13);
  m.input("X", {2, 3, 4}).output("n", kInt64).output("Y");
  m.init_i64("idx", {}, {-1});
  m.initializer(kora_test::int32_tensor("w", {4}, {1, 2, 3, 4}));
  m.node("Shape", {"X"}, {"s"});
  m.node("Gather", {"s", "idx"}, {"n"});
  m.node("Cast", {"w"}, {"wf"}, {attr_i("to", onnx::TensorProto::FLOAT)});
  m.node("Add", {"X", "wf"}, {"Y"});
  kora::ImportOptions off;
  off.fold_constants = false;
  Graph g = kora_test::import_model(m, off);
  EXPECT_THAT(op_types(g), ElementsAre("Shape", "Gather", "Cast", "Add"));
  EXPECT_FALSE(g.is_constant("s"));
  EXPECT_FALSE(g.is_constant("n"));
  EXPECT_FALSE(g.is_constant("wf"));
  EXPECT_EQ(g.value("n").shape, Shape{});
  EXPECT_EQ(g.value("n").dtype, DType::kInt64);
  EXPECT_EQ(g.value("wf").dtype, DType::kFloat32);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3, 4}));

  // The same model folded: only Add remains, n = 4, wf = [1, 2, 3, 4] as float.
  Graph f = kora_test::import_model(m);
  EXPECT_THAT(op_types(f), ElementsAre("Add"));
  EXPECT_EQ(folded(f, "n").to_int64(), (std::vector<int64_t>{4}));
  EXPECT_EQ(folded(f, "wf").dtype(), DType::kFloat32);
  EXPECT_EQ(folded(f, "wf").to_double(), (std::vector<double>{1, 2, 3, 4}));
}

TEST(ConstantFoldTest, DeadNodesArePruned) {
  ModelBuilder m(13);
  m.input("X", {2, 2}).input("unused", {3}).output("Y");
  m.init_f32("W_dead", {2, 2}, {1, 2, 3, 4});
  m.init_f32("W_live", {2, 2}, {5, 6, 7, 8});
  m.node("Add", {"X", "W_live"}, {"A"}, {}, "live_add");
  m.node("Relu", {"A"}, {"Y"}, {}, "live_relu");
  m.node("Mul", {"X", "W_dead"}, {"D"}, {}, "dead_mul");
  m.node("Sigmoid", {"D"}, {"E"}, {}, "dead_sigmoid");
  Graph g = kora_test::import_model(m);
  std::vector<std::string> names;
  for (const kora::Node& n : g.nodes) names.push_back(n.name);
  EXPECT_THAT(names, ElementsAre("live_add", "live_relu"));
  EXPECT_TRUE(g.is_constant("W_live"));
  EXPECT_FALSE(g.is_constant("W_dead"));
  EXPECT_EQ(g.values.count("D"), 0u);
  EXPECT_EQ(g.values.count("E"), 0u);
  EXPECT_THAT(g.inputs, ElementsAre("X", "unused"));  // graph inputs stay
}

// Y = op(constants...) with every input an initializer: folds into graph.constants["Y"].
Graph fold(const std::string& op, const std::vector<onnx::TensorProto>& inputs,
           const std::vector<onnx::AttributeProto>& attrs = {}, int64_t opset = 13) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  for (const auto& t : inputs) {
    if (t.name().empty()) {
      names.push_back("");
      continue;
    }
    m.initializer(t);
    names.push_back(t.name());
  }
  m.output("Y");
  m.node(op, names, {"Y"}, attrs, "folded_node");
  Graph g = kora_test::import_model(m);
  EXPECT_TRUE(g.nodes.empty()) << op << " was not folded";
  return g;
}

onnx::TensorProto f32(const std::string& name, const kora_test::Dims& d, std::vector<float> v) {
  return kora_test::float_tensor(name, d, v);
}
onnx::TensorProto i64(const std::string& name, const kora_test::Dims& d, std::vector<int64_t> v) {
  return kora_test::int64_tensor(name, d, v);
}
onnx::TensorProto boolean(const std::string& name, const kora_test::Dims& d,
                          std::vector<uint8_t> v) {
  return kora_test::raw_tensor(name, onnx::TensorProto::BOOL, d, kora_test::bytes_of(v));
}

TEST(ConstantFoldTest, Cast) {
  const Tensor& a = folded(fold("Cast", {i64("a", {3}, {1, -2, 3})}, {attr_i("to", 1)}), "Y");
  EXPECT_EQ(a.dtype(), DType::kFloat32);
  EXPECT_EQ(a.to_double(), (std::vector<double>{1.0, -2.0, 3.0}));
  // float -> int32 truncates toward zero
  const Tensor& b = folded(fold("Cast", {f32("b", {4}, {1.7f, -1.7f, 2.5f, 0.2f})},
                                {attr_i("to", onnx::TensorProto::INT32)}),
                           "Y");
  EXPECT_EQ(b.dtype(), DType::kInt32);
  EXPECT_EQ(b.to_int64(), (std::vector<int64_t>{1, -1, 2, 0}));
  // float -> bool: nonzero is true
  const Tensor& c =
      folded(fold("Cast", {f32("c", {3}, {0.0f, 0.5f, -2.0f})}, {attr_i("to", kBool)}), "Y");
  EXPECT_EQ(c.dtype(), DType::kBool);
  EXPECT_EQ(c.to_int64(), (std::vector<int64_t>{0, 1, 1}));
  // float -> float16: 0.1 becomes the nearest half, 0x2e66 = 1638 / 16384
  const Tensor& d = folded(
      fold("Cast", {f32("d", {2}, {1.0f, 0.1f})}, {attr_i("to", onnx::TensorProto::FLOAT16)}), "Y");
  EXPECT_EQ(d.dtype(), DType::kFloat16);
  EXPECT_EQ(d.double_at(0), 1.0);
  EXPECT_EQ(d.double_at(1), 1638.0 / 16384.0);
  // int64 -> int32 keeps the value
  const Tensor& e = folded(
      fold("Cast", {i64("e", {2}, {-7, 1 << 30})}, {attr_i("to", onnx::TensorProto::INT32)}), "Y");
  EXPECT_EQ(e.dtype(), DType::kInt32);
  EXPECT_EQ(e.to_int64(), (std::vector<int64_t>{-7, 1 << 30}));
}

TEST(ConstantFoldTest, Slice) {
  // x = [[0 1 2 3 4] [5 6 7 8 9]]; columns 1.. step 2 -> [[1 3] [6 8]]
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  const Tensor& a =
      folded(fold("Slice", {i64("x", {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), i64("st", {1}, {1}),
                            i64("en", {1}, {max}), i64("ax", {1}, {1}), i64("sp", {1}, {2})}),
             "Y");
  EXPECT_EQ(a.shape(), (Shape{2, 2}));
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{1, 3, 6, 8}));
  // reversed: [4 3 2 1 0]
  const Tensor& b =
      folded(fold("Slice", {i64("x", {5}, {0, 1, 2, 3, 4}), i64("st", {1}, {-1}),
                            i64("en", {1}, {min}), i64("ax", {1}, {0}), i64("sp", {1}, {-1})}),
             "Y");
  EXPECT_EQ(b.to_int64(), (std::vector<int64_t>{4, 3, 2, 1, 0}));
  // x[-3:-1] of a float vector -> [30 40]
  const Tensor& c = folded(fold("Slice", {f32("x", {5}, {10, 20, 30, 40, 50}), i64("st", {1}, {-3}),
                                          i64("en", {1}, {-1})}),
                           "Y");
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(c.to_double(), (std::vector<double>{30, 40}));
  // x[1:2, ::-2] on [[0 1 2 3 4] [5 6 7 8 9]] -> [[9 7 5]]
  const Tensor& d = folded(
      fold("Slice", {i64("x", {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), i64("st", {2}, {1, max}),
                     i64("en", {2}, {2, min}), i64("ax", {2}, {0, 1}), i64("sp", {2}, {1, -2})}),
      "Y");
  EXPECT_EQ(d.shape(), (Shape{1, 3}));
  EXPECT_EQ(d.to_int64(), (std::vector<int64_t>{9, 7, 5}));
}

TEST(ConstantFoldTest, MulAndDiv) {
  const Tensor& a = folded(fold("Mul", {i64("a", {3}, {2, 3, -4}), i64("b", {}, {5})}), "Y");
  EXPECT_EQ(a.shape(), (Shape{3}));
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{10, 15, -20}));
  // broadcast [2, 1] * [3]
  const Tensor& b =
      folded(fold("Mul", {f32("a", {2, 1}, {2, -1}), f32("b", {3}, {1, 0.5f, 3})}), "Y");
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.to_double(), (std::vector<double>{2, 1, 6, -1, -0.5, -3}));
  // integer division truncates toward zero
  const Tensor& c =
      folded(fold("Div", {i64("a", {4}, {7, -7, 9, 60}), i64("b", {4}, {2, 2, 3, -7})}), "Y");
  EXPECT_EQ(c.to_int64(), (std::vector<int64_t>{3, -3, 3, -8}));
  const Tensor& d = folded(fold("Div", {f32("a", {2}, {1, -3}), f32("b", {}, {4})}), "Y");
  EXPECT_EQ(d.to_double(), (std::vector<double>{0.25, -0.75}));
  // large int64 values stay exact: (2^62 + 1) * 1
  const int64_t big = (int64_t{1} << 62) + 1;
  const Tensor& e = folded(fold("Mul", {i64("a", {1}, {big}), i64("b", {1}, {1})}), "Y");
  EXPECT_EQ(e.int64_at(0), big);
}

TEST(ConstantFoldTest, WhereAndEqual) {
  const Tensor& w = folded(fold("Where", {boolean("c", {3}, {1, 0, 1}), i64("x", {3}, {1, 2, 3}),
                                          i64("y", {3}, {10, 20, 30})}),
                           "Y");
  EXPECT_EQ(w.dtype(), DType::kInt64);
  EXPECT_EQ(w.to_int64(), (std::vector<int64_t>{1, 20, 3}));
  // broadcast: cond [2, 1], x [2] float, y scalar
  const Tensor& v = folded(fold("Where", {boolean("c", {2, 1}, {0, 1}), f32("x", {2}, {1.5f, 2.5f}),
                                          f32("y", {}, {-1})}),
                           "Y");
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  EXPECT_EQ(v.to_double(), (std::vector<double>{-1, -1, 1.5, 2.5}));
  const Tensor& e =
      folded(fold("Equal", {i64("a", {3}, {1, 2, 3}), i64("b", {3}, {1, 5, 3})}), "Y");
  EXPECT_EQ(e.dtype(), DType::kBool);
  EXPECT_EQ(e.to_int64(), (std::vector<int64_t>{1, 0, 1}));
  // broadcast [2, 1] == [3]
  const Tensor& f =
      folded(fold("Equal", {i64("a", {2, 1}, {1, 2}), i64("b", {3}, {2, 1, 2})}), "Y");
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_int64(), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
}

TEST(ConstantFoldTest, Range) {
  const Tensor& a = folded(
      fold("Range", {i64("s", {}, {0}), i64("l", {}, {10}), i64("d", {}, {3})}, {}, 11), "Y");
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{0, 3, 6, 9}));
  const Tensor& b = folded(
      fold("Range", {i64("s", {}, {10}), i64("l", {}, {4}), i64("d", {}, {-2})}, {}, 11), "Y");
  EXPECT_EQ(b.to_int64(), (std::vector<int64_t>{10, 8, 6}));
  const Tensor& c = folded(
      fold("Range", {f32("s", {}, {1}), f32("l", {}, {2}), f32("d", {}, {0.25f})}, {}, 11), "Y");
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(c.to_double(), (std::vector<double>{1.0, 1.25, 1.5, 1.75}));
}

TEST(ConstantFoldTest, ConstantOfShape) {
  const Tensor& a =
      folded(fold("ConstantOfShape", {i64("s", {2}, {2, 3})},
                  {kora_test::attr_t("value", kora_test::int32_tensor("", {1}, {5}))}),
             "Y");
  EXPECT_EQ(a.dtype(), DType::kInt32);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.to_int64(), std::vector<int64_t>(6, 5));
  const Tensor& b = folded(fold("ConstantOfShape", {i64("s", {1}, {4})}), "Y");
  EXPECT_EQ(b.dtype(), DType::kFloat32);
  EXPECT_EQ(b.to_double(), std::vector<double>(4, 0.0));
  const Tensor& c =
      folded(fold("ConstantOfShape", {i64("s", {1}, {3})},
                  {kora_test::attr_t("value", kora_test::float_tensor("", {1}, {-2.5f}))}),
             "Y");
  EXPECT_EQ(c.to_double(), std::vector<double>(3, -2.5));
}

TEST(ConstantFoldTest, ShapeArithmeticChain) {
  // Computes the reshape target [batch * 3, h * w] from Shape(X) with Slice, Mul and
  // ReduceProd-free arithmetic; X is [2, 3, 4, 5] -> target [6, 20].
  ModelBuilder m(13);
  m.input("X", {2, 3, 4, 5}).output("Y");
  m.init_i64("zero", {1}, {0});
  m.init_i64("two", {1}, {2});
  m.init_i64("four", {1}, {4});
  m.node("Shape", {"X"}, {"s"});
  m.node("Slice", {"s", "zero", "two"}, {"lead"});  // [2, 3]
  m.node("Slice", {"s", "two", "four"}, {"tail"});  // [4, 5]
  m.node("Gather", {"lead", "zero"}, {"b"});        // [2]
  m.node("Gather", {"lead", "zero"}, {"b2"});       // [2]
  m.node("Div", {"lead", "b2"}, {"lead_div"});      // [1, 1]
  m.node("Mul", {"lead", "lead_div"}, {"same"});    // [2, 3]
  m.node("Gather", {"same", "zero"}, {"unused"});   // dead: never reaches Y
  m.init_i64("one", {1}, {1});
  m.node("Gather", {"same", "one"}, {"c"});  // [3]
  m.node("Mul", {"b", "c"}, {"bc"});         // [6]
  m.node("Gather", {"tail", "zero"}, {"h"});
  m.node("Gather", {"tail", "one"}, {"w"});
  m.node("Mul", {"h", "w"}, {"hw"});  // [20]
  m.node("Concat", {"bc", "hw"}, {"target"}, {attr_i("axis", 0)});
  m.node("Reshape", {"X", "target"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_THAT(op_types(g), ElementsAre("Reshape"));
  EXPECT_EQ(folded(g, "target").to_int64(), (std::vector<int64_t>{6, 20}));
  EXPECT_EQ(g.value("Y").shape, (Shape{6, 20}));
}

TEST(ConstantFoldTest, ConcatAndTransposeValues) {
  const Tensor& a =
      folded(fold("Concat", {i64("a", {2, 1}, {1, 2}), i64("b", {2, 2}, {3, 4, 5, 6})},
                  {attr_i("axis", 1)}),
             "Y");
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  const Tensor& t = folded(fold("Transpose", {i64("a", {2, 3}, {1, 2, 3, 4, 5, 6})}), "Y");
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  const Tensor& u = folded(fold("Unsqueeze", {i64("a", {2}, {7, 8}), i64("ax", {1}, {1})}), "Y");
  EXPECT_EQ(u.shape(), (Shape{2, 1}));
  EXPECT_EQ(u.to_int64(), (std::vector<int64_t>{7, 8}));
  const Tensor& g =
      folded(fold("Gather", {i64("a", {2, 3}, {1, 2, 3, 4, 5, 6}), i64("i", {2}, {2, -3})},
                  {attr_i("axis", 1)}),
             "Y");
  EXPECT_EQ(g.shape(), (Shape{2, 2}));
  EXPECT_EQ(g.to_int64(), (std::vector<int64_t>{3, 1, 6, 4}));
}

TEST(ConstantFoldTest, ModFollowsDivisorSignUnlessFmod) {
  // fmod = 0: the result takes the divisor's sign (Python %)
  const Tensor& a =
      folded(fold("Mod", {i64("a", {4}, {-7, 7, 7, -7}), i64("b", {4}, {3, -3, 3, -3})}), "Y");
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{2, -2, 1, -1}));
  // fmod = 1: C fmod, the dividend's sign
  const Tensor& b = folded(
      fold("Mod", {f32("a", {2}, {-7.5f, 7.5f}), f32("b", {2}, {2, -2})}, {attr_i("fmod", 1)}),
      "Y");
  EXPECT_EQ(b.to_double(), (std::vector<double>{-1.5, 1.5}));
}

TEST(ConstantFoldTest, LogicAndComparisons) {
  const Tensor& l = folded(fold("Less", {f32("a", {3}, {1, 2, 3}), f32("b", {}, {2})}), "Y");
  EXPECT_EQ(l.dtype(), DType::kBool);
  EXPECT_EQ(l.to_int64(), (std::vector<int64_t>{1, 0, 0}));
  const Tensor& ge =
      folded(fold("GreaterOrEqual", {i64("a", {3}, {1, 2, 3}), i64("b", {}, {2})}), "Y");
  EXPECT_EQ(ge.to_int64(), (std::vector<int64_t>{0, 1, 1}));
  const Tensor& n = folded(fold("Not", {boolean("a", {2}, {1, 0})}), "Y");
  EXPECT_EQ(n.to_int64(), (std::vector<int64_t>{0, 1}));
  const Tensor& a =
      folded(fold("And", {boolean("a", {3}, {1, 1, 0}), boolean("b", {3}, {1, 0, 0})}), "Y");
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{1, 0, 0}));
  const Tensor& o =
      folded(fold("Or", {boolean("a", {3}, {1, 1, 0}), boolean("b", {3}, {1, 0, 0})}), "Y");
  EXPECT_EQ(o.to_int64(), (std::vector<int64_t>{1, 1, 0}));
}

TEST(ConstantFoldTest, ExpandAndTileValues) {
  // [3, 1] expanded to [2, 3, 2]
  const Tensor& e =
      folded(fold("Expand", {i64("a", {3, 1}, {1, 2, 3}), i64("s", {3}, {2, 1, 2})}), "Y");
  EXPECT_EQ(e.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(e.to_int64(), (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  const Tensor& t = folded(fold("Tile", {i64("a", {2, 1}, {1, 2}), i64("r", {2}, {2, 2})}), "Y");
  EXPECT_EQ(t.shape(), (Shape{4, 2}));
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(ConstantFoldTest, UnaryMathAndVariadicMax) {
  auto unary = [](const std::string& op, std::vector<float> in) {
    return folded(fold(op, {f32("a", {static_cast<int64_t>(in.size())}, in)}), "Y").to_double();
  };
  EXPECT_EQ(unary("Sqrt", {4, 9}), (std::vector<double>{2, 3}));
  EXPECT_EQ(unary("Floor", {-1.5f, 1.5f}), (std::vector<double>{-2, 1}));
  EXPECT_EQ(unary("Ceil", {-1.5f, 1.5f}), (std::vector<double>{-1, 2}));
  EXPECT_EQ(unary("Reciprocal", {4, -0.5f}), (std::vector<double>{0.25, -2}));
  EXPECT_EQ(unary("Exp", {0}), (std::vector<double>{1}));
  EXPECT_EQ(unary("Log", {1}), (std::vector<double>{0}));
  EXPECT_EQ(unary("Neg", {2.5f}), (std::vector<double>{-2.5}));
  EXPECT_EQ(folded(fold("Abs", {i64("a", {2}, {-3, 3})}), "Y").to_int64(),
            (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(folded(fold("Sub", {i64("a", {1}, {5}), i64("b", {1}, {7})}), "Y").to_int64(),
            (std::vector<int64_t>{-2}));
  EXPECT_EQ(
      folded(fold("Max", {i64("a", {2}, {1, 5}), i64("b", {2}, {3, 2}), i64("c", {2}, {0, 4})}),
             "Y")
          .to_int64(),
      (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(folded(fold("Min", {i64("a", {2}, {1, 5}), i64("b", {}, {3})}), "Y").to_int64(),
            (std::vector<int64_t>{1, 3}));
}

// Clip with either bound absent (an absent input, not a zero) on floats and integers, and
// TensorFlow's "same" padding as timm's tf_* models export it: a pad computed from the
// input's shape, clipped at 0, so that the Pad before the convolution has constant pads.
TEST(ConstantFoldTest, ClipWithEitherBoundAndTheSamePaddingChain) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> lo =
      folded(fold("Clip", {f32("a", {4}, {-2, 0.5f, 3, nan}), f32("lo", {}, {0})}), "Y")
          .to_double();
  EXPECT_EQ(std::vector<double>(lo.begin(), lo.begin() + 3), (std::vector<double>{0, 0.5, 3}));
  EXPECT_TRUE(std::isnan(lo[3]));
  EXPECT_EQ(
      folded(fold("Clip", {i64("a", {3}, {-2, 1, 9}), i64("", {}, {}), i64("hi", {}, {4})}), "Y")
          .to_int64(),
      (std::vector<int64_t>{-2, 1, 4}));
  EXPECT_EQ(
      folded(fold("Clip", {i64("a", {3}, {-2, 1, 9}), i64("lo", {}, {0}), i64("hi", {}, {4})}), "Y")
          .to_int64(),
      (std::vector<int64_t>{0, 1, 4}));

  // pad = max(0, (ceil(H / s) - 1) * s + k - H) for H = 7, s = 2, k = 3: 2
  ModelBuilder m(17);
  m.input("X", {1, 1, 7, 7}).output("Y");
  m.node("Shape", {"X"}, {"s"}, {}, "shape");
  m.node("Constant", {}, {"two"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {2}))});
  m.node("Gather", {"s", "two"}, {"h"}, {attr_i("axis", 0)}, "gather");
  m.node("Constant", {}, {"stride"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {2}))});
  m.node("Constant", {}, {"one"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {1}))});
  m.node("Add", {"h", "one"}, {"h1"}, {}, "add");
  m.node("Div", {"h1", "stride"}, {"out"}, {}, "div");  // ceil(7 / 2) = 4
  m.node("Sub", {"out", "one"}, {"out1"}, {}, "sub");
  m.node("Mul", {"out1", "stride"}, {"span"}, {}, "mul");
  m.node("Constant", {}, {"k"}, {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {3}))});
  m.node("Add", {"span", "k"}, {"need"}, {}, "add_k");
  m.node("Sub", {"need", "h"}, {"raw"}, {}, "sub_h");
  m.node("Constant", {}, {"zero"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {}, {0}))});
  m.node("Clip", {"raw", "zero"}, {"pad"}, {}, "clip");
  m.node("Constant", {}, {"axes0"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {1}, {0}))});
  m.node("Unsqueeze", {"pad", "axes0"}, {"pad1"}, {}, "unsqueeze");
  m.node("Constant", {}, {"lead"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {6}, {0, 0, 0, 0, 0, 0}))});
  m.node("Concat", {"lead", "pad1", "pad1"}, {"pads"}, {attr_i("axis", 0)}, "concat");
  m.node("Pad", {"X", "pads"}, {"Y"}, {}, "pad");
  const Graph g = kora_test::import_model(m);
  EXPECT_THAT(op_types(g), ElementsAre("Pad"));
  EXPECT_EQ(g.value("Y").shape, (Shape{1, 1, 9, 9}));
}

// Pow on floats and on integers (wrapping; a negative exponent truncates 1 / base^-exp), and
// Round (halves to even): DINOv2 sizes its position embedding's grid as 256^0.5 cast to
// int64 before a Reshape, which then has a constant shape.
TEST(ConstantFoldTest, PowAndRound) {
  EXPECT_EQ(
      folded(fold("Pow", {f32("a", {3}, {256, 2, 9}), f32("b", {}, {0.5f})}), "Y").to_double(),
      (std::vector<double>{16, std::sqrt(2.0f), 3}));
  EXPECT_EQ(folded(fold("Pow", {i64("a", {4}, {3, 2, -1, 2}), i64("b", {4}, {4, 63, -3, -1})}), "Y")
                .to_int64(),
            (std::vector<int64_t>{81, std::numeric_limits<int64_t>::min(), -1, 0}));
  EXPECT_EQ(
      folded(fold("Round", {f32("a", {5}, {0.5f, 1.5f, 2.5f, -0.5f, 2.6f})}), "Y").to_double(),
      (std::vector<double>{0, 2, 2, -0.0, 3}));

  ModelBuilder m(17);
  m.input("X", {1, 256, 8}).output("Y");
  m.node("Constant", {}, {"len"},
         {kora_test::attr_t("value", kora_test::float_tensor("", {}, {256}))});
  m.node("Constant", {}, {"half"},
         {kora_test::attr_t("value", kora_test::float_tensor("", {}, {0.5f}))});
  m.node("Pow", {"len", "half"}, {"side_f"}, {}, "pow");
  m.node("Cast", {"side_f"}, {"side"}, {attr_i("to", kInt64)}, "cast");
  m.node("Constant", {}, {"axes0"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {1}, {0}))});
  m.node("Unsqueeze", {"side", "axes0"}, {"side1"}, {}, "unsqueeze");
  m.node("Constant", {}, {"rest"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {2}, {1, -1}))});
  m.node("Concat", {"rest", "side1", "side1"}, {"target"}, {attr_i("axis", 0)}, "concat");
  m.node("Reshape", {"X", "target"}, {"Y"}, {}, "reshape");
  const Graph g = kora_test::import_model(m);
  EXPECT_THAT(op_types(g), ElementsAre("Reshape"));
  EXPECT_EQ(g.value("Y").shape, (Shape{1, 8, 16, 16}));
}

TEST(ConstantFoldTest, SizeAndReshapeLikeOps) {
  ModelBuilder m(13);
  m.input("X", {2, 3, 4}).output("n", kInt64).output("flat", kInt64).output("sq", kInt64);
  m.init_i64("c", {1, 3, 1}, {4, 5, 6});
  m.init_i64("ax", {1}, {0});
  m.node("Size", {"X"}, {"n"});
  m.node("Flatten", {"c"}, {"flat"}, {attr_i("axis", 0)});
  m.node("Squeeze", {"c", "ax"}, {"sq"});
  Graph g = kora_test::import_model(m);
  EXPECT_TRUE(g.nodes.empty());
  EXPECT_EQ(folded(g, "n").shape(), Shape{});
  EXPECT_EQ(folded(g, "n").to_int64(), (std::vector<int64_t>{24}));
  EXPECT_EQ(folded(g, "flat").shape(), (Shape{1, 3}));
  EXPECT_EQ(folded(g, "flat").to_int64(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(folded(g, "sq").shape(), (Shape{3, 1}));
  EXPECT_EQ(folded(g, "sq").to_int64(), (std::vector<int64_t>{4, 5, 6}));
}

TEST(ConstantFoldTest, ExporterPatternOpset11) {
  // The same x.view(x.size(0), -1) pattern with opset-11 Unsqueeze (axes attribute) and
  // the batch taken from Shape with an explicit Cast round trip.
  ModelBuilder m(11);
  m.input("X", {"batch", 6}).output("Y");
  m.init_i64("zero", {}, {0});
  m.init_i64("minus1", {1}, {-1});
  m.node("Shape", {"X"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"n"});
  m.node("Cast", {"n"}, {"nf"}, {attr_i("to", onnx::TensorProto::FLOAT)});
  m.node("Cast", {"nf"}, {"ni"}, {attr_i("to", kInt64)});
  m.node("Unsqueeze", {"ni"}, {"n1"}, {attr_is("axes", {0})});
  m.node("Concat", {"n1", "minus1"}, {"target"}, {attr_i("axis", 0)});
  m.node("Reshape", {"X", "target"}, {"Y"});
  kora::ImportOptions o;
  o.dims = {{"batch", 5}};
  Graph g = kora_test::import_model(m, o);
  EXPECT_THAT(op_types(g), ElementsAre("Reshape"));
  EXPECT_EQ(folded(g, "target").to_int64(), (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(g.value("Y").shape, (Shape{5, 6}));
}

TEST(ConstantFoldTest, ConstantOfShapeFromComputedShape) {
  // Shape(X) -> ConstantOfShape(value 1) -> Add(X, ones): the ones become a constant.
  ModelBuilder m(13);
  m.input("X", {2, 3}).output("Y");
  m.node("Shape", {"X"}, {"s"});
  m.node("ConstantOfShape", {"s"}, {"ones"},
         {kora_test::attr_t("value", kora_test::float_tensor("", {1}, {1.0f}))});
  m.node("Add", {"X", "ones"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_THAT(op_types(g), ElementsAre("Add"));
  EXPECT_EQ(folded(g, "ones").shape(), (Shape{2, 3}));
  EXPECT_EQ(folded(g, "ones").to_double(), std::vector<double>(6, 1.0));
}

TEST(ConstantFoldTest, HugeResultsAreNotMaterialized) {
  // 4096 x 2048 = 8M elements: typed, but left as a node rather than folded.
  ModelBuilder m(13);
  m.init_i64("s", {2}, {4096, 2048});
  m.output("Y");
  m.node("ConstantOfShape", {"s"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_THAT(op_types(g), ElementsAre("ConstantOfShape"));
  EXPECT_FALSE(g.is_constant("Y"));
  EXPECT_EQ(g.value("Y").shape, (Shape{4096, 2048}));
}

}  // namespace
