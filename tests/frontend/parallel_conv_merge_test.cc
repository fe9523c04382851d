// Tests of parallel_conv_merge.h: a RepVGG block in its training form (3x3 and 1x1
// convolutions, a batch norm of x, a per-channel constant, summed) becomes one 3x3
// convolution whose weight and bias are checked against the sum worked out here; a
// depthwise block with x itself keeps its groups; trees that compute something else stay
// as written. Values against onnxruntime: test_synthetic.py
// (test_summed_convolutions_of_one_input).
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/model_builder.h"
#include "kora/frontend.h"

namespace {

using kora::Shape;
using kora_test::attr_f;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::ModelBuilder;

std::vector<float> ramp(size_t n, float scale, float offset = 0) {
  std::vector<float> v;
  for (size_t i = 0; i < n; ++i) v.push_back(offset + scale * std::sin(1.3f * float(i) + 0.2f));
  return v;
}

int count(const kora::Graph& g, const std::string& op) {
  int n = 0;
  for (const kora::Node& node : g.nodes) n += node.op_type == op;
  return n;
}

constexpr int64_t C = 3;

// y = Conv3x3(x) + Conv1x1(x) + BatchNorm(x) + k, x [1, 3, 5, 5].
ModelBuilder repvgg_block() {
  ModelBuilder m(17);
  m.input("x", {1, C, 5, 5}).output("y");
  m.init_f32("w3", {C, C, 3, 3}, ramp(C * C * 9, 0.5f));
  m.init_f32("b3", {C}, ramp(C, 0.1f));
  m.init_f32("w1", {C, C, 1, 1}, ramp(C * C, 0.7f, 0.1f));
  m.init_f32("b1", {C}, ramp(C, 0.2f, 0.3f));
  m.init_f32("scale", {C}, {1.5f, 0.5f, 2.0f});
  m.init_f32("shift", {C}, {0.1f, -0.2f, 0.3f});
  m.init_f32("mean", {C}, {0.4f, 0.0f, -0.4f});
  m.init_f32("var", {C}, {1.0f, 4.0f, 0.25f});
  m.init_f32("k", {1, C, 1, 1}, {0.01f, 0.02f, 0.03f});
  m.node("Conv", {"x", "w3", "b3"}, {"c3"}, {attr_is("pads", {1, 1, 1, 1})}, "conv3x3");
  m.node("Conv", {"x", "w1", "b1"}, {"c1"});
  m.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"bn"},
         {attr_f("epsilon", 1e-3f)});
  m.node("Add", {"c3", "c1"}, {"s1"});
  m.node("Add", {"s1", "bn"}, {"s2"});
  m.node("Add", {"s2", "k"}, {"y"}, {}, "block_sum");
  return m;
}

TEST(ParallelConvMerge, ARepVggBlockIsOneConvolutionOfTheSummedWeights) {
  const kora::Graph g = kora_test::import_model(repvgg_block());
  ASSERT_EQ(g.nodes.size(), 1u);
  const kora::Node& conv = g.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.name, "conv3x3");  // named as its first convolution
  EXPECT_EQ(conv.attr_ints("kernel_shape"), (Shape{3, 3}));
  EXPECT_EQ(conv.attr_ints("pads"), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(conv.attr_int("group", 0), 1);
  const kora::Tensor& w = *g.constant(conv.inputs[1]);
  const kora::Tensor& b = *g.constant(conv.inputs[2]);
  ASSERT_EQ(w.shape(), (Shape{C, C, 3, 3}));
  const std::vector<float> w3 = ramp(C * C * 9, 0.5f), w1 = ramp(C * C, 0.7f, 0.1f);
  const std::vector<float> b3 = ramp(C, 0.1f), b1 = ramp(C, 0.2f, 0.3f);
  const double scale[] = {1.5, 0.5, 2.0}, shift[] = {0.1, -0.2, 0.3}, mean[] = {0.4, 0.0, -0.4},
               var[] = {1.0, 4.0, 0.25}, k[] = {0.01, 0.02, 0.03};
  for (int64_t o = 0; o < C; ++o) {
    const double a = scale[o] / std::sqrt(var[o] + 1e-3);
    EXPECT_NEAR(b.double_at(o), b3[o] + b1[o] + shift[o] - mean[o] * a + k[o], 1e-6) << o;
    for (int64_t i = 0; i < C; ++i)
      for (int64_t t = 0; t < 9; ++t) {
        double want = w3[(o * C + i) * 9 + t];
        if (t == 4) want += w1[o * C + i] + (i == o ? a : 0.0);
        EXPECT_NEAR(w.double_at((o * C + i) * 9 + t), want, 1e-6) << o << " " << i << " " << t;
      }
  }
}

TEST(ParallelConvMerge, ADepthwiseBlockWithXItselfKeepsItsGroups) {
  ModelBuilder m(17);
  m.input("x", {1, 4, 5, 5}).output("y");
  m.init_f32("w3", {4, 1, 3, 3}, ramp(36, 0.5f));
  m.init_f32("w1", {4, 1, 1, 1}, ramp(4, 0.5f));
  m.node("Conv", {"x", "w3"}, {"c3"}, {attr_is("pads", {1, 1, 1, 1}), attr_i("group", 4)});
  m.node("Conv", {"x", "w1"}, {"c1"}, {attr_i("group", 4)});
  m.node("Add", {"c3", "c1"}, {"s"});
  m.node("Add", {"s", "x"}, {"y"});
  const kora::Graph g = kora_test::import_model(m);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attr_int("group", 0), 4);
  EXPECT_EQ(g.nodes[0].inputs.size(), 2u);  // every bias zero: none
  for (const auto& [name, tensor] : g.constants)
    EXPECT_EQ(name.find("merged_bias"), std::string::npos) << "an unused bias constant";
  const kora::Tensor& w = *g.constant(g.nodes[0].inputs[1]);
  ASSERT_EQ(w.shape(), (Shape{4, 1, 3, 3}));
  const std::vector<float> w3 = ramp(36, 0.5f), w1 = ramp(4, 0.5f);
  for (int64_t o = 0; o < 4; ++o)
    EXPECT_NEAR(w.double_at(o * 9 + 4), w3[o * 9 + 4] + w1[o] + 1.0, 1e-6) << o;
}

TEST(ParallelConvMerge, TreesComputingSomethingElseStayAsWritten) {
  {  // the 1x1 convolution is an output too
    ModelBuilder m = repvgg_block();
    m.output("c1");
    const kora::Graph g = kora_test::import_model(m);
    EXPECT_EQ(count(g, "Conv"), 2);
  }
  {  // padding off centre: same output shape, shifted by a pixel
    ModelBuilder m(17);
    m.input("x", {1, 2, 5, 5}).output("y");
    m.init_f32("w3", {2, 2, 3, 3}, ramp(36, 0.5f));
    m.init_f32("w1", {2, 2, 1, 1}, ramp(4, 0.5f));
    m.node("Conv", {"x", "w3"}, {"c3"}, {attr_is("pads", {2, 2, 0, 0})});
    m.node("Conv", {"x", "w1"}, {"c1"});
    m.node("Add", {"c3", "c1"}, {"y"});
    EXPECT_EQ(count(kora_test::import_model(m), "Conv"), 2);
  }
  {  // a constant of shape [W] adds along the width, not per channel
    ModelBuilder m(17);
    m.input("x", {1, 3, 5, 3}).output("y");
    m.init_f32("w3", {3, 3, 3, 3}, ramp(81, 0.5f));
    m.init_f32("w1", {3, 3, 1, 1}, ramp(9, 0.5f));
    m.init_f32("k", {3}, {1.0f, 2.0f, 3.0f});
    m.node("Conv", {"x", "w3"}, {"c3"}, {attr_is("pads", {1, 1, 1, 1})});
    m.node("Conv", {"x", "w1"}, {"c1"});
    m.node("Add", {"c3", "c1"}, {"s"});
    m.node("Add", {"s", "k"}, {"y"});
    const kora::Graph g = kora_test::import_model(m);
    EXPECT_EQ(count(g, "Add"), 1);  // the two convolutions merged, the [W] constant kept
    EXPECT_EQ(count(g, "Conv"), 1);
  }
  {  // convolutions of two different inputs
    ModelBuilder m(17);
    m.input("x", {1, 2, 5, 5}).input("z", {1, 2, 5, 5}).output("y");
    m.init_f32("w1", {2, 2, 1, 1}, ramp(4, 0.5f));
    m.init_f32("w2", {2, 2, 1, 1}, ramp(4, 0.3f));
    m.node("Conv", {"x", "w1"}, {"c1"});
    m.node("Conv", {"z", "w2"}, {"c2"});
    m.node("Add", {"c1", "c2"}, {"y"});
    EXPECT_EQ(count(kora_test::import_model(m), "Conv"), 2);
  }
}

}  // namespace
