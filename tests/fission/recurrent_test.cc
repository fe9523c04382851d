// Tests of the recurrent operators RNN, GRU and LSTM: their shape rule (every expected
// shape worked out by hand from the ONNX specification), the errors that name the node,
// and the structure of the unrolled fission (one input-projection matmul for all steps
// and directions, one recurrent matmul per step). Their values are checked against
// onnxruntime in test_synthetic.py and against the ONNX node tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/frontend.h"

namespace {

using kora::Shape;
using kora_test::attr_f;
using kora_test::attr_i;
using kora_test::attr_s;
using kora_test::attr_ss;
using kora_test::Dim;
using kora_test::import_error;
using kora_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::vector<Dim> dims(const Shape& s) { return std::vector<Dim>(s.begin(), s.end()); }

// op(X, W, R, <optional inputs>) with every input a float graph input of the given shape
// (an empty shape leaves that input out), outputs Y, Y_h (and Y_c for LSTM).
ModelBuilder recurrent_model(const std::string& op, const std::vector<Shape>& inputs,
                             const std::vector<onnx::AttributeProto>& attrs) {
  static const char* kNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                 "initial_h", "initial_c", "P"};
  ModelBuilder m(17);
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(inputs[i].empty() ? "" : kNames[i]);
    if (inputs[i].empty()) continue;
    m.input(kNames[i], dims(inputs[i]),
            i == 4 ? onnx::TensorProto::INT32 : onnx::TensorProto::FLOAT);
  }
  std::vector<std::string> outs{"Y", "Y_h"};
  if (op == "LSTM") outs.push_back("Y_c");
  for (const std::string& o : outs) m.output(o);
  m.node(op, names, outs, attrs, "node_under_test");
  return m;
}

TEST(RecurrentShapeTest, BidirectionalLstm) {
  // X [seq 7, batch 2, input 3]; W [dirs 2, 4 gates * hidden 4, 3]; R [2, 16, 4]:
  // Y [seq, dirs, batch, hidden] = [7, 2, 2, 4]; Y_h, Y_c [dirs, batch, hidden] = [2, 2, 4].
  kora::Graph g = kora_test::import_model(recurrent_model(
      "LSTM", {{7, 2, 3}, {2, 16, 3}, {2, 16, 4}, {2, 32}, {}, {2, 2, 4}, {2, 2, 4}, {2, 12}},
      {attr_s("direction", "bidirectional"), attr_i("hidden_size", 4)}));
  EXPECT_EQ(g.value("Y").shape, (Shape{7, 2, 2, 4}));
  EXPECT_EQ(g.value("Y_h").shape, (Shape{2, 2, 4}));
  EXPECT_EQ(g.value("Y_c").shape, (Shape{2, 2, 4}));
}

TEST(RecurrentShapeTest, BatchFirstGru) {
  // layout 1: X [batch 2, seq 7, input 3]; 3 gates * hidden 5 = 15:
  // Y [batch, seq, dirs, hidden] = [2, 7, 1, 5]; Y_h [batch, dirs, hidden] = [2, 1, 5].
  kora::Graph g = kora_test::import_model(recurrent_model(
      "GRU", {{2, 7, 3}, {1, 15, 3}, {1, 15, 5}, {}, {}, {2, 1, 5}}, {attr_i("layout", 1)}));
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 7, 1, 5}));
  EXPECT_EQ(g.value("Y_h").shape, (Shape{2, 1, 5}));
}

TEST(RecurrentShapeTest, RnnHiddenSizeFromR) {
  // No hidden_size attribute: R [1, 6, 6] gives hidden 6. Y [4, 1, 3, 6], Y_h [1, 3, 6].
  kora::Graph g = kora_test::import_model(
      recurrent_model("RNN", {{4, 3, 2}, {1, 6, 2}, {1, 6, 6}}, {attr_s("direction", "reverse")}));
  EXPECT_EQ(g.value("Y").shape, (Shape{4, 1, 3, 6}));
  EXPECT_EQ(g.value("Y_h").shape, (Shape{1, 3, 6}));
}

TEST(RecurrentErrorTest, NamesTheNode) {
  // Bidirectional GRU takes 4 activation functions (f, g per direction), not 2.
  EXPECT_THAT(import_error(recurrent_model("GRU", {{4, 1, 2}, {2, 9, 2}, {2, 9, 3}},
                                           {attr_s("direction", "bidirectional"),
                                            attr_ss("activations", {"Sigmoid", "Tanh"})})),
              AllOf(HasSubstr("node_under_test"), HasSubstr("activations"), HasSubstr("takes 4")));
  // An unknown activation function.
  EXPECT_THAT(import_error(recurrent_model("RNN", {{4, 1, 2}, {1, 3, 2}, {1, 3, 3}},
                                           {attr_ss("activations", {"Gelu"})})),
              AllOf(HasSubstr("node_under_test"), HasSubstr("'Gelu'")));
  // W's rows are not gates * hidden (LSTM: 4 * 3 = 12).
  EXPECT_THAT(import_error(recurrent_model("LSTM", {{4, 1, 2}, {1, 9, 2}, {1, 12, 3}}, {})),
              AllOf(HasSubstr("node_under_test"), HasSubstr("W has shape [1, 9, 2]")));
  EXPECT_THAT(import_error(recurrent_model("RNN", {{4, 1, 2}, {1, 3, 2}, {1, 3, 3}},
                                           {attr_s("direction", "sideways")})),
              AllOf(HasSubstr("node_under_test"), HasSubstr("sideways")));
  EXPECT_THAT(import_error(recurrent_model("RNN", {{4, 1, 2}, {1, 3, 2}, {1, 3, 3}},
                                           {attr_f("clip", -1.0f)})),
              AllOf(HasSubstr("node_under_test"), HasSubstr("clip")));
}

TEST(RecurrentFissionTest, SequenceLensComputedAtRuntimeIsAnError) {
  const kora::Graph g = kora_test::import_model(
      recurrent_model("RNN", {{4, 2, 2}, {1, 3, 2}, {1, 3, 3}, {}, {2}}, {}));
  try {
    kora::fission(g);
    ADD_FAILURE() << "fission did not throw kora::Error";
  } catch (const kora::Error& e) {
    EXPECT_THAT(std::string(e.what()),
                AllOf(HasSubstr("node_under_test"), HasSubstr("sequence_lens"),
                      HasSubstr("must be a constant")));
  }
}

int matmuls(const kora::PrimGraph& p) {
  int count = 0;
  for (const kora::Primitive& prim : p.prims)
    if (const auto* l = std::get_if<kora::LinearAttrs>(&prim.attrs))
      count += std::holds_alternative<kora::MatMulAttrs>(*l);
  return count;
}

TEST(RecurrentFissionTest, OneInputProjectionAndOneRecurrentMatmulPerStep) {
  // Bidirectional LSTM over 6 steps with initial_h: X·Wᵀ for all steps and both
  // directions is one matmul; each direction's 6 steps each multiply H by Rᵀ: 1 + 2 * 6.
  const kora::Graph with_state = kora_test::import_model(
      recurrent_model("LSTM", {{6, 2, 3}, {2, 16, 3}, {2, 16, 4}, {}, {}, {2, 2, 4}},
                      {attr_s("direction", "bidirectional")}));
  EXPECT_EQ(matmuls(kora::fission(with_state)), 1 + 2 * 6);
  // Without an initial state the first step's H is zero: no recurrent matmul there.
  const kora::Graph zero_state =
      kora_test::import_model(recurrent_model("LSTM", {{6, 2, 3}, {1, 16, 3}, {1, 16, 4}}, {}));
  EXPECT_EQ(matmuls(kora::fission(zero_state)), 1 + 5);
}

}  // namespace
