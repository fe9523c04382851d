// Tests of kora's static shape and dtype inference, one operator at a time. Every
// expected shape is worked out by hand from the ONNX operator specification (the
// arithmetic is in the comments), not taken from kora's output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/frontend.h"

namespace {

using kora::DType;
using kora::Graph;
using kora::Shape;
using kora_test::attr_f;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::attr_s;
using kora_test::Dim;
using kora_test::ModelBuilder;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;

std::vector<Dim> dims(const Shape& s) { return std::vector<Dim>(s.begin(), s.end()); }

// Y = op(X0, X1, ...) where Xi are float graph inputs of the given shapes.
ModelBuilder op_model(int64_t opset, const std::string& op, const std::vector<Shape>& inputs,
                      const std::vector<onnx::AttributeProto>& attrs = {}) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("X" + std::to_string(i));
    m.input(names.back(), dims(inputs[i]));
  }
  m.output("Y");
  m.node(op, names, {"Y"}, attrs, "node_under_test");
  return m;
}

Shape shape_of(const ModelBuilder& m, const std::string& tensor = "Y") {
  return kora_test::import_model(m).value(tensor).shape;
}

Shape op_shape(int64_t opset, const std::string& op, const std::vector<Shape>& inputs,
               const std::vector<onnx::AttributeProto>& attrs = {}) {
  return shape_of(op_model(opset, op, inputs, attrs));
}

// Y = op(X, <int64 constants>...) with X a float input: for the operators whose
// shape-defining operands are inputs (Reshape, Slice, Expand, ...). An empty name in
// `consts` leaves that optional input out.
struct Const {
  std::string name;
  Shape dims;
  std::vector<int64_t> values;
};
ModelBuilder op_with_consts(int64_t opset, const std::string& op, const Shape& x,
                            const std::vector<Const>& consts,
                            const std::vector<onnx::AttributeProto>& attrs = {},
                            const std::vector<std::string>& outputs = {"Y"}) {
  ModelBuilder m(opset);
  m.input("X", dims(x));
  std::vector<std::string> ins = {"X"};
  for (const Const& c : consts) {
    ins.push_back(c.name);
    if (!c.name.empty()) m.init_i64(c.name, c.dims, c.values);
  }
  for (const std::string& o : outputs) m.output(o);
  m.node(op, ins, outputs, attrs, "node_under_test");
  return m;
}

Shape const_shape(int64_t opset, const std::string& op, const Shape& x,
                  const std::vector<Const>& consts,
                  const std::vector<onnx::AttributeProto>& attrs = {}) {
  return shape_of(op_with_consts(opset, op, x, consts, attrs));
}

// ---------------------------------------------------------------- Conv

TEST(ConvShapeTest, PaddedSameSize) {
  // (32 + 1 + 1 - 3) / 1 + 1 = 32
  EXPECT_EQ(op_shape(17, "Conv", {{1, 3, 32, 32}, {16, 3, 3, 3}}, {attr_is("pads", {1, 1, 1, 1})}),
            (Shape{1, 16, 32, 32}));
}

TEST(ConvShapeTest, Grouped) {
  // group 2: W is [M=4, C/group=4, 3, 3]; (10 - 3) + 1 = 8
  EXPECT_EQ(op_shape(17, "Conv", {{2, 8, 10, 10}, {4, 4, 3, 3}}, {attr_i("group", 2)}),
            (Shape{2, 4, 8, 8}));
}

TEST(ConvShapeTest, Depthwise) {
  // group = C = 32; floor((16 + 2 - 3) / 2) + 1 = 7 + 1 = 8
  EXPECT_EQ(
      op_shape(17, "Conv", {{1, 32, 16, 16}, {32, 1, 3, 3}},
               {attr_i("group", 32), attr_is("pads", {1, 1, 1, 1}), attr_is("strides", {2, 2})}),
      (Shape{1, 32, 8, 8}));
}

TEST(ConvShapeTest, Strided) {
  // ResNet stem: floor((224 + 6 - 7) / 2) + 1 = 111 + 1 = 112
  EXPECT_EQ(op_shape(17, "Conv", {{1, 3, 224, 224}, {64, 3, 7, 7}},
                     {attr_is("strides", {2, 2}), attr_is("pads", {3, 3, 3, 3})}),
            (Shape{1, 64, 112, 112}));
}

TEST(ConvShapeTest, Dilated) {
  // effective kernels (3-1)*2+1 = 5 and (3-1)*3+1 = 7: 20 - 5 + 1 = 16, 20 - 7 + 1 = 14
  EXPECT_EQ(op_shape(17, "Conv", {{1, 1, 20, 20}, {1, 1, 3, 3}}, {attr_is("dilations", {2, 3})}),
            (Shape{1, 1, 16, 14}));
}

TEST(ConvShapeTest, ExplicitAsymmetricPads) {
  // pads [h_begin=1, w_begin=0, h_end=2, w_end=3]: H 10 + 3 - 3 + 1 = 11, W 12 + 3 - 4 + 1 = 12
  EXPECT_EQ(op_shape(17, "Conv", {{1, 1, 10, 12}, {2, 1, 3, 4}}, {attr_is("pads", {1, 0, 2, 3})}),
            (Shape{1, 2, 11, 12}));
}

TEST(ConvShapeTest, AutoPadSameUpper) {
  // SAME: ceil(15 / 2) = 8
  EXPECT_EQ(op_shape(17, "Conv", {{1, 3, 15, 15}, {4, 3, 3, 3}},
                     {attr_s("auto_pad", "SAME_UPPER"), attr_is("strides", {2, 2})}),
            (Shape{1, 4, 8, 8}));
}

TEST(ConvShapeTest, AutoPadSameLower) {
  // SAME: ceil(7 / 3) = 3, ceil(10 / 3) = 4
  EXPECT_EQ(op_shape(17, "Conv", {{1, 1, 7, 10}, {1, 1, 4, 4}},
                     {attr_s("auto_pad", "SAME_LOWER"), attr_is("strides", {3, 3})}),
            (Shape{1, 1, 3, 4}));
}

TEST(ConvShapeTest, AutoPadSameUpperDilated1D) {
  // SAME keeps ceil(10 / 1) = 10 whatever the dilation
  EXPECT_EQ(op_shape(17, "Conv", {{1, 2, 10}, {5, 2, 3}},
                     {attr_s("auto_pad", "SAME_UPPER"), attr_is("dilations", {2})}),
            (Shape{1, 5, 10}));
}

TEST(ConvShapeTest, AutoPadValid) {
  // VALID: floor((7 - 4) / 3) + 1 = 2, floor((10 - 4) / 3) + 1 = 3
  EXPECT_EQ(op_shape(17, "Conv", {{1, 1, 7, 10}, {1, 1, 4, 4}},
                     {attr_s("auto_pad", "VALID"), attr_is("strides", {3, 3})}),
            (Shape{1, 1, 2, 3}));
}

TEST(ConvShapeTest, Conv1DWithBias) {
  // (50 - 5) / 5 + 1 = 10
  EXPECT_EQ(op_shape(17, "Conv", {{1, 4, 50}, {8, 4, 5}, {8}}, {attr_is("strides", {5})}),
            (Shape{1, 8, 10}));
}

TEST(ConvShapeTest, Conv3D) {
  // (5 - 3) + 1 = 3, (6 - 3) + 1 = 4, (7 - 3) + 1 = 5
  EXPECT_EQ(op_shape(17, "Conv", {{1, 2, 5, 6, 7}, {4, 2, 3, 3, 3}}), (Shape{1, 4, 3, 4, 5}));
}

// ---------------------------------------------------------------- ConvTranspose
// out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end

TEST(ConvTransposeShapeTest, Strided) {
  // 2 * 4 + 0 + 2 + 1 - 0 = 11; output channels = W[1] * group = 4
  EXPECT_EQ(
      op_shape(17, "ConvTranspose", {{1, 8, 5, 5}, {8, 4, 3, 3}}, {attr_is("strides", {2, 2})}),
      (Shape{1, 4, 11, 11}));
}

TEST(ConvTransposeShapeTest, PadsAndOutputPadding) {
  // 2 * 4 + 1 + 2 + 1 - 1 - 1 = 10
  EXPECT_EQ(op_shape(17, "ConvTranspose", {{1, 8, 5, 5}, {8, 4, 3, 3}},
                     {attr_is("strides", {2, 2}), attr_is("pads", {1, 1, 1, 1}),
                      attr_is("output_padding", {1, 1})}),
            (Shape{1, 4, 10, 10}));
}

TEST(ConvTransposeShapeTest, OutputShapeAttribute) {
  EXPECT_EQ(op_shape(17, "ConvTranspose", {{1, 8, 5, 5}, {8, 4, 3, 3}},
                     {attr_is("strides", {2, 2}), attr_is("output_shape", {10, 10})}),
            (Shape{1, 4, 10, 10}));
}

TEST(ConvTransposeShapeTest, GroupedDilated1D) {
  // channels 3 * 2 = 6; length 1 * 3 + 0 + (3 - 1) * 2 + 1 = 8
  EXPECT_EQ(op_shape(17, "ConvTranspose", {{1, 8, 4}, {8, 3, 3}},
                     {attr_i("group", 2), attr_is("dilations", {2})}),
            (Shape{1, 6, 8}));
}

TEST(ConvTransposeShapeTest, AutoPadSame) {
  // SAME: in * stride = 5 * 2
  EXPECT_EQ(op_shape(17, "ConvTranspose", {{1, 8, 5, 5}, {8, 4, 3, 3}},
                     {attr_is("strides", {2, 2}), attr_s("auto_pad", "SAME_UPPER")}),
            (Shape{1, 4, 10, 10}));
}

TEST(DeformConvShapeTest, GroupsOffsetGroupsMaskBias) {
  // height (7 + 1 + 2 - 2 - 1) / 2 + 1 = 4, width (8 + 0 + 1 - 2 - 1) / 1 + 1 = 7; offset
  // 2 groups * 3 * 2 taps * 2 = 24 channels, mask 12
  EXPECT_EQ(
      op_shape(19, "DeformConv", {{2, 4, 7, 8}, {6, 2, 3, 2}, {2, 24, 4, 7}, {6}, {2, 12, 4, 7}},
               {attr_i("group", 2), attr_i("offset_group", 2), attr_is("strides", {2, 1}),
                attr_is("pads", {1, 0, 2, 1}), attr_is("dilations", {1, 2})}),
      (Shape{2, 6, 4, 7}));
}

// ---------------------------------------------------------------- MatMul / Gemm / Einsum

TEST(MatMulShapeTest, Batched) {
  EXPECT_EQ(op_shape(13, "MatMul", {{2, 3, 4}, {4, 5}}), (Shape{2, 3, 5}));
}

TEST(MatMulShapeTest, OneDimensionalOperands) {
  EXPECT_EQ(op_shape(13, "MatMul", {{4}, {4}}), Shape{});        // dot product
  EXPECT_EQ(op_shape(13, "MatMul", {{3}, {3, 5}}), (Shape{5}));  // prepended 1 removed
  EXPECT_EQ(op_shape(13, "MatMul", {{2, 3}, {3}}), (Shape{2}));  // appended 1 removed
  EXPECT_EQ(op_shape(13, "MatMul", {{4}, {2, 4, 5}}), (Shape{2, 5}));
}

TEST(MatMulShapeTest, BatchBroadcast) {
  // batch dims [2, 1] and [5] broadcast to [2, 5]
  EXPECT_EQ(op_shape(13, "MatMul", {{2, 1, 3, 4}, {5, 4, 6}}), (Shape{2, 5, 3, 6}));
}

TEST(GemmShapeTest, Transposes) {
  EXPECT_EQ(op_shape(13, "Gemm", {{3, 5}, {5, 4}}), (Shape{3, 4}));
  EXPECT_EQ(op_shape(13, "Gemm", {{5, 3}, {5, 4}}, {attr_i("transA", 1)}), (Shape{3, 4}));
  EXPECT_EQ(op_shape(13, "Gemm", {{3, 5}, {4, 5}}, {attr_i("transB", 1)}), (Shape{3, 4}));
  EXPECT_EQ(op_shape(13, "Gemm", {{5, 3}, {4, 5}}, {attr_i("transA", 1), attr_i("transB", 1)}),
            (Shape{3, 4}));
  EXPECT_EQ(op_shape(13, "Gemm", {{3, 5}, {4, 5}, {4}}, {attr_i("transB", 1)}), (Shape{3, 4}));
  EXPECT_EQ(op_shape(13, "Gemm", {{3, 5}, {5, 4}, {3, 1}}), (Shape{3, 4}));
}

TEST(EinsumShapeTest, BatchedMatMul) {
  EXPECT_EQ(op_shape(12, "Einsum", {{2, 3, 4}, {2, 4, 5}}, {attr_s("equation", "bij,bjk->bik")}),
            (Shape{2, 3, 5}));
}

TEST(EinsumShapeTest, Transpose) {
  EXPECT_EQ(op_shape(12, "Einsum", {{3, 7}}, {attr_s("equation", "ij->ji")}), (Shape{7, 3}));
}

TEST(EinsumShapeTest, ImplicitOutput) {
  // implicit output: labels used once, alphabetical: "ik"
  EXPECT_EQ(op_shape(12, "Einsum", {{3, 4}, {4, 5}}, {attr_s("equation", "ij,jk")}), (Shape{3, 5}));
  // "ji" implicitly means "ji->ij": i = 4, j = 3
  EXPECT_EQ(op_shape(12, "Einsum", {{3, 4}}, {attr_s("equation", "ji")}), (Shape{4, 3}));
}

TEST(EinsumShapeTest, EllipsisTraceAndFullReduction) {
  EXPECT_EQ(
      op_shape(12, "Einsum", {{2, 1, 3, 4}, {5, 4, 6}}, {attr_s("equation", "...ij,...jk->...ik")}),
      (Shape{2, 5, 3, 6}));
  EXPECT_EQ(op_shape(12, "Einsum", {{3, 3}}, {attr_s("equation", "ii->i")}), (Shape{3}));
  EXPECT_EQ(op_shape(12, "Einsum", {{2, 3, 3}}, {attr_s("equation", "bii->bi")}), (Shape{2, 3}));
  EXPECT_EQ(op_shape(12, "Einsum", {{4, 4, 4}}, {attr_s("equation", "iii")}), Shape{});
  EXPECT_EQ(op_shape(12, "Einsum", {{2, 3}, {2, 3}}, {attr_s("equation", "ij,ij->")}), Shape{});
}

// ---------------------------------------------------------------- Pooling

TEST(PoolShapeTest, MaxPoolCeilMode) {
  // floor((8 - 3) / 2) + 1 = 3; ceil((8 - 3) / 2) + 1 = 4 (last window starts at 6 < 8)
  EXPECT_EQ(op_shape(17, "MaxPool", {{1, 1, 8, 8}},
                     {attr_is("kernel_shape", {3, 3}), attr_is("strides", {2, 2})}),
            (Shape{1, 1, 3, 3}));
  EXPECT_EQ(op_shape(17, "MaxPool", {{1, 1, 8, 8}},
                     {attr_is("kernel_shape", {3, 3}), attr_is("strides", {2, 2}),
                      attr_i("ceil_mode", 1)}),
            (Shape{1, 1, 4, 4}));
}

TEST(PoolShapeTest, AveragePoolCeilModeDropsWindowInRightPadding) {
  // padded 5 + 1 + 1 = 7: ceil((7 - 2) / 2) + 1 = 4, but the 4th window would start at
  // padded index 6 = the right padding, so it is dropped: 3.
  EXPECT_EQ(op_shape(17, "AveragePool", {{1, 1, 5, 5}},
                     {attr_is("kernel_shape", {2, 2}), attr_is("strides", {2, 2}),
                      attr_is("pads", {1, 1, 1, 1}), attr_i("ceil_mode", 1)}),
            (Shape{1, 1, 3, 3}));
  // without ceil_mode: floor(5 / 2) + 1 = 3
  EXPECT_EQ(op_shape(17, "AveragePool", {{1, 1, 5, 5}},
                     {attr_is("kernel_shape", {2, 2}), attr_is("strides", {2, 2}),
                      attr_is("pads", {1, 1, 1, 1})}),
            (Shape{1, 1, 3, 3}));
  // ceil((9 - 2) / 2) + 1 = 5 windows starting at 0, 2, 4, 6, 8 - all inside: 5
  EXPECT_EQ(
      op_shape(17, "AveragePool", {{2, 3, 9}},
               {attr_is("kernel_shape", {2}), attr_is("strides", {2}), attr_i("ceil_mode", 1)}),
      (Shape{2, 3, 5}));
}

TEST(PoolShapeTest, DilatedAndSamePooling) {
  // effective kernel (3 - 1) * 2 + 1 = 5: 10 - 5 + 1 = 6
  EXPECT_EQ(op_shape(17, "MaxPool", {{1, 1, 10}},
                     {attr_is("kernel_shape", {3}), attr_is("dilations", {2})}),
            (Shape{1, 1, 6}));
  // SAME_UPPER: ceil(7 / 2) = 4
  EXPECT_EQ(op_shape(17, "AveragePool", {{1, 2, 7, 7}},
                     {attr_is("kernel_shape", {3, 3}), attr_is("strides", {2, 2}),
                      attr_s("auto_pad", "SAME_UPPER")}),
            (Shape{1, 2, 4, 4}));
}

TEST(PoolShapeTest, MaxPoolIndicesOutput) {
  ModelBuilder m = op_model(17, "MaxPool", {{1, 2, 6, 6}});
  m.graph().mutable_node(0)->add_output("I");
  *m.graph().mutable_node(0)->add_attribute() = attr_is("kernel_shape", {2, 2});
  *m.graph().mutable_node(0)->add_attribute() = attr_is("strides", {2, 2});
  m.output("I", kInt64);
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{1, 2, 3, 3}));
  EXPECT_EQ(g.value("I").shape, (Shape{1, 2, 3, 3}));
  EXPECT_EQ(g.value("I").dtype, DType::kInt64);
}

TEST(PoolShapeTest, GlobalAveragePool) {
  EXPECT_EQ(op_shape(17, "GlobalAveragePool", {{2, 16, 7, 9}}), (Shape{2, 16, 1, 1}));
  EXPECT_EQ(op_shape(17, "GlobalMaxPool", {{2, 16, 5}}), (Shape{2, 16, 1}));
}

// ---------------------------------------------------------------- Reductions

TEST(ReduceShapeTest, AxesAttributeOpset13) {
  EXPECT_EQ(op_shape(13, "ReduceMean", {{2, 3, 4, 5}}, {attr_is("axes", {1, 2})}),
            (Shape{2, 1, 1, 5}));
  EXPECT_EQ(
      op_shape(13, "ReduceMean", {{2, 3, 4, 5}}, {attr_is("axes", {1, -1}), attr_i("keepdims", 0)}),
      (Shape{2, 4}));
  EXPECT_EQ(op_shape(13, "ReduceMean", {{2, 3, 4, 5}}), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(op_shape(13, "ReduceMean", {{2, 3, 4, 5}}, {attr_i("keepdims", 0)}), Shape{});
}

TEST(ReduceShapeTest, AxesInputOpset18) {
  EXPECT_EQ(const_shape(18, "ReduceMean", {2, 3, 4, 5}, {{"axes", {1}, {-1}}}),
            (Shape{2, 3, 4, 1}));
  EXPECT_EQ(
      const_shape(18, "ReduceMean", {2, 3, 4, 5}, {{"axes", {2}, {0, 2}}}, {attr_i("keepdims", 0)}),
      (Shape{3, 5}));
  // ReduceSum takes axes as an input from opset 13 on.
  EXPECT_EQ(const_shape(13, "ReduceSum", {2, 3, 4}, {{"axes", {1}, {1}}}, {attr_i("keepdims", 0)}),
            (Shape{2, 4}));
  // no axes and noop_with_empty_axes = 1: identity
  EXPECT_EQ(op_shape(18, "ReduceMean", {{2, 3}}, {attr_i("noop_with_empty_axes", 1)}),
            (Shape{2, 3}));
}

TEST(ReduceShapeTest, ArgMax) {
  Graph g = kora_test::import_model(op_model(13, "ArgMax", {{3, 4, 5}}, {attr_i("axis", 1)}));
  EXPECT_EQ(g.value("Y").shape, (Shape{3, 1, 5}));
  EXPECT_EQ(g.value("Y").dtype, DType::kInt64);
  EXPECT_EQ(op_shape(13, "ArgMax", {{3, 4, 5}}, {attr_i("axis", 1), attr_i("keepdims", 0)}),
            (Shape{3, 5}));
  EXPECT_EQ(op_shape(13, "ArgMin", {{3, 4, 5}}, {attr_i("axis", -1)}), (Shape{3, 4, 1}));
  EXPECT_EQ(op_shape(13, "ArgMax", {{3, 4, 5}}), (Shape{1, 4, 5}));  // default axis 0
}

// ---------------------------------------------------------------- Layout

TEST(LayoutShapeTest, ReshapeZeroAndMinusOne) {
  // 0 copies the input dim, -1 takes what is left: 24 / 2 = 12
  EXPECT_EQ(const_shape(13, "Reshape", {2, 3, 4}, {{"s", {2}, {0, -1}}}), (Shape{2, 12}));
  // [4, 0 -> 3, -1 -> 24 / 12 = 2]
  EXPECT_EQ(const_shape(13, "Reshape", {2, 3, 4}, {{"s", {3}, {4, 0, -1}}}), (Shape{4, 3, 2}));
  EXPECT_EQ(const_shape(13, "Reshape", {2, 3, 4}, {{"s", {1}, {-1}}}), (Shape{24}));
}

TEST(LayoutShapeTest, Flatten) {
  EXPECT_EQ(op_shape(13, "Flatten", {{2, 3, 4, 5}}), (Shape{2, 60}));
  EXPECT_EQ(op_shape(13, "Flatten", {{2, 3, 4, 5}}, {attr_i("axis", 2)}), (Shape{6, 20}));
  EXPECT_EQ(op_shape(13, "Flatten", {{2, 3, 4, 5}}, {attr_i("axis", 0)}), (Shape{1, 120}));
  EXPECT_EQ(op_shape(13, "Flatten", {{2, 3, 4, 5}}, {attr_i("axis", -1)}), (Shape{24, 5}));
  EXPECT_EQ(op_shape(13, "Flatten", {{2, 3}}, {attr_i("axis", 2)}), (Shape{6, 1}));
}

TEST(LayoutShapeTest, Transpose) {
  EXPECT_EQ(op_shape(13, "Transpose", {{2, 3, 4}}), (Shape{4, 3, 2}));  // default: reverse
  EXPECT_EQ(op_shape(13, "Transpose", {{2, 3, 4}}, {attr_is("perm", {0, 2, 1})}), (Shape{2, 4, 3}));
}

TEST(LayoutShapeTest, SqueezeAttributeOpset11) {
  EXPECT_EQ(op_shape(11, "Squeeze", {{3, 1, 4, 1}}, {attr_is("axes", {1})}), (Shape{3, 4, 1}));
  EXPECT_EQ(op_shape(11, "Squeeze", {{3, 1, 4, 1}}), (Shape{3, 4}));  // all unit dims
}

TEST(LayoutShapeTest, SqueezeInputOpset13) {
  EXPECT_EQ(const_shape(13, "Squeeze", {3, 1, 4, 1}, {{"axes", {1}, {-1}}}), (Shape{3, 1, 4}));
  EXPECT_EQ(const_shape(13, "Squeeze", {1, 1, 4}, {{"axes", {2}, {0, 1}}}), (Shape{4}));
}

TEST(LayoutShapeTest, UnsqueezeAttributeOpset11) {
  // output rank 4, ones at positions 0 and 3
  EXPECT_EQ(op_shape(11, "Unsqueeze", {{3, 4}}, {attr_is("axes", {0, 3})}), (Shape{1, 3, 4, 1}));
}

TEST(LayoutShapeTest, UnsqueezeInputOpset13) {
  // output rank 4: axes 1 and -1 -> 3
  EXPECT_EQ(const_shape(13, "Unsqueeze", {3, 4}, {{"axes", {2}, {1, -1}}}), (Shape{3, 1, 4, 1}));
  EXPECT_EQ(const_shape(13, "Unsqueeze", {}, {{"axes", {1}, {0}}}), (Shape{1}));
}

TEST(LayoutShapeTest, Concat) {
  EXPECT_EQ(op_shape(13, "Concat", {{2, 3}, {2, 5}}, {attr_i("axis", 1)}), (Shape{2, 8}));
  EXPECT_EQ(op_shape(13, "Concat", {{2, 3}, {2, 5}, {2, 1}}, {attr_i("axis", -1)}), (Shape{2, 9}));
  EXPECT_EQ(op_shape(13, "Concat", {{1, 4}, {3, 4}, {2, 4}}, {attr_i("axis", 0)}), (Shape{6, 4}));
}

TEST(LayoutShapeTest, SplitSizesInput) {
  Graph g = kora_test::import_model(
      op_with_consts(13, "Split", {6, 4}, {{"split", {2}, {2, 4}}}, {}, {"A", "B"}));
  EXPECT_EQ(g.value("A").shape, (Shape{2, 4}));
  EXPECT_EQ(g.value("B").shape, (Shape{4, 4}));
}

TEST(LayoutShapeTest, SplitAttributeOpset11) {
  Graph g = kora_test::import_model(op_with_consts(
      11, "Split", {2, 6}, {}, {attr_is("split", {1, 5}), attr_i("axis", 1)}, {"A", "B"}));
  EXPECT_EQ(g.value("A").shape, (Shape{2, 1}));
  EXPECT_EQ(g.value("B").shape, (Shape{2, 5}));
}

TEST(LayoutShapeTest, SplitEqual) {
  Graph g = kora_test::import_model(
      op_with_consts(13, "Split", {6, 9}, {}, {attr_i("axis", 1)}, {"A", "B", "C"}));
  for (const char* t : {"A", "B", "C"}) EXPECT_EQ(g.value(t).shape, (Shape{6, 3})) << t;
}

TEST(LayoutShapeTest, SplitNumOutputsUnevenOpset18) {
  // ceil(7 / 3) = 3: chunks 3, 3, 1
  Graph g = kora_test::import_model(
      op_with_consts(18, "Split", {7, 2}, {}, {attr_i("num_outputs", 3)}, {"A", "B", "C"}));
  EXPECT_EQ(g.value("A").shape, (Shape{3, 2}));
  EXPECT_EQ(g.value("B").shape, (Shape{3, 2}));
  EXPECT_EQ(g.value("C").shape, (Shape{1, 2}));
  // ceil(10 / 4) = 3: chunks 3, 3, 3, 1
  Graph h = kora_test::import_model(op_with_consts(18, "Split", {2, 10}, {},
                                                   {attr_i("num_outputs", 4), attr_i("axis", -1)},
                                                   {"A", "B", "C", "D"}));
  EXPECT_EQ(h.value("A").shape, (Shape{2, 3}));
  EXPECT_EQ(h.value("C").shape, (Shape{2, 3}));
  EXPECT_EQ(h.value("D").shape, (Shape{2, 1}));
}

TEST(LayoutShapeTest, SliceNegativeStartsAndInt64MaxEnd) {
  // rows -3.. end: 7, 8, 9 -> 3
  EXPECT_EQ(const_shape(13, "Slice", {10, 20},
                        {{"starts", {1}, {-3}}, {"ends", {1}, {kInt64Max}}, {"axes", {1}, {0}}}),
            (Shape{3, 20}));
  // columns 1 .. -1 (= 19): 18
  EXPECT_EQ(const_shape(13, "Slice", {10, 20},
                        {{"starts", {1}, {1}}, {"ends", {1}, {-1}}, {"axes", {1}, {1}}}),
            (Shape{10, 18}));
  // without axes: starts/ends apply to the leading dims; out-of-range clamps
  EXPECT_EQ(
      const_shape(13, "Slice", {10, 20}, {{"starts", {2}, {-100, 5}}, {"ends", {2}, {100, 8}}}),
      (Shape{10, 3}));
}

TEST(LayoutShapeTest, SliceNegativeStep) {
  // reverse all: start -1 (= 9), end INT64_MIN clamps to -1, step -1: 10 elements
  EXPECT_EQ(const_shape(13, "Slice", {10, 20},
                        {{"starts", {1}, {-1}},
                         {"ends", {1}, {kInt64Min}},
                         {"axes", {1}, {0}},
                         {"steps", {1}, {-1}}}),
            (Shape{10, 20}));
  // 8, 5, 2 -> 3 elements
  EXPECT_EQ(
      const_shape(
          13, "Slice", {10, 20},
          {{"starts", {1}, {8}}, {"ends", {1}, {1}}, {"axes", {1}, {0}}, {"steps", {1}, {-3}}}),
      (Shape{3, 20}));
  // two axes with positive steps: 0..10 step 2 -> 5; 1..20 step 3 -> 1,4,...,19 -> 7
  EXPECT_EQ(const_shape(13, "Slice", {10, 20},
                        {{"starts", {2}, {0, 1}},
                         {"ends", {2}, {10, 20}},
                         {"axes", {2}, {0, 1}},
                         {"steps", {2}, {2, 3}}}),
            (Shape{5, 7}));
}

TEST(LayoutShapeTest, GatherScalarIndicesRemoveAxis) {
  EXPECT_EQ(const_shape(13, "Gather", {5, 6, 7}, {{"i", {}, {2}}}, {attr_i("axis", 1)}),
            (Shape{5, 7}));
  EXPECT_EQ(const_shape(13, "Gather", {5, 6, 7}, {{"i", {2, 3}, {0, 1, 2, 3, 4, 0}}}),
            (Shape{2, 3, 6, 7}));
  EXPECT_EQ(const_shape(13, "Gather", {5, 6, 7}, {{"i", {4}, {0, 1, 2, 3}}}, {attr_i("axis", -1)}),
            (Shape{5, 6, 4}));
}

TEST(LayoutShapeTest, Expand) {
  EXPECT_EQ(const_shape(13, "Expand", {3, 1}, {{"s", {3}, {2, 1, 6}}}), (Shape{2, 3, 6}));
  // the shape may be of lower rank or have ones: the result never shrinks
  EXPECT_EQ(const_shape(13, "Expand", {2, 3}, {{"s", {1}, {3}}}), (Shape{2, 3}));
  EXPECT_EQ(const_shape(13, "Expand", {3, 1}, {{"s", {2}, {1, 1}}}), (Shape{3, 1}));
}

TEST(LayoutShapeTest, Tile) {
  EXPECT_EQ(const_shape(13, "Tile", {2, 3}, {{"r", {2}, {3, 2}}}), (Shape{6, 6}));
  EXPECT_EQ(const_shape(13, "Tile", {2, 3, 4}, {{"r", {3}, {1, 1, 5}}}), (Shape{2, 3, 20}));
}

TEST(LayoutShapeTest, PadConstantAndReflect) {
  // pads [x1_begin, x2_begin, x1_end, x2_end] = [1, 2, 3, 4]: 5 + 1 + 3, 6 + 2 + 4
  EXPECT_EQ(const_shape(13, "Pad", {5, 6}, {{"p", {4}, {1, 2, 3, 4}}}), (Shape{9, 12}));
  EXPECT_EQ(const_shape(13, "Pad", {1, 1, 5, 6}, {{"p", {8}, {0, 0, 2, 1, 0, 0, 1, 2}}},
                        {attr_s("mode", "reflect")}),
            (Shape{1, 1, 8, 9}));
  EXPECT_EQ(const_shape(11, "Pad", {5, 6}, {{"p", {4}, {0, 1, 0, 1}}}, {attr_s("mode", "edge")}),
            (Shape{5, 8}));
  // negative pads crop: 6 - 1 - 2
  EXPECT_EQ(const_shape(13, "Pad", {5, 6}, {{"p", {4}, {0, -1, 0, -2}}}), (Shape{5, 3}));
}

TEST(LayoutShapeTest, PadAxesInputOpset18) {
  // axes [1, 2]: dim 1 gets 1 + 2, dim 2 gets 1 + 2
  EXPECT_EQ(const_shape(18, "Pad", {2, 5, 6},
                        {{"p", {4}, {1, 1, 2, 2}}, {"", {}, {}}, {"axes", {2}, {1, 2}}}),
            (Shape{2, 8, 9}));
}

ModelBuilder resize_model(int64_t opset, const Shape& x, const std::vector<float>& scales,
                          const std::vector<int64_t>& sizes,
                          const std::vector<onnx::AttributeProto>& attrs = {}) {
  ModelBuilder m(opset);
  m.input("X", dims(x)).output("Y");
  std::vector<std::string> ins = {"X", "", "", ""};
  if (!scales.empty()) {
    m.init_f32("scales", {static_cast<int64_t>(scales.size())}, scales);
    ins[2] = "scales";
  }
  if (!sizes.empty()) {
    m.init_i64("sizes", {static_cast<int64_t>(sizes.size())}, sizes);
    ins[3] = "sizes";
  } else {
    ins.pop_back();
  }
  m.node("Resize", ins, {"Y"}, attrs);
  return m;
}

TEST(LayoutShapeTest, ResizeScales) {
  // floor(10 * 2) = 20, floor(20 * 0.5) = 10
  EXPECT_EQ(shape_of(resize_model(13, {1, 3, 10, 20}, {1, 1, 2, 0.5f}, {})), (Shape{1, 3, 20, 10}));
  // floor(5 * 1.5) = floor(7.5) = 7, floor(9 * 0.5) = floor(4.5) = 4
  EXPECT_EQ(shape_of(resize_model(13, {1, 3, 5, 9}, {1, 1, 1.5f, 0.5f}, {})), (Shape{1, 3, 7, 4}));
}

TEST(LayoutShapeTest, ResizeSizes) {
  EXPECT_EQ(shape_of(resize_model(13, {1, 3, 10, 20}, {}, {1, 3, 7, 9})), (Shape{1, 3, 7, 9}));
  // opset 18: sizes for the listed axes only
  EXPECT_EQ(shape_of(resize_model(18, {1, 3, 10, 20}, {}, {7, 9}, {attr_is("axes", {2, 3})})),
            (Shape{1, 3, 7, 9}));
  // not_larger: scale = min(6/12, 6/20) = 0.3 -> round(3.6) = 4, round(6) = 6
  EXPECT_EQ(shape_of(resize_model(
                18, {1, 3, 12, 20}, {}, {6, 6},
                {attr_is("axes", {2, 3}), attr_s("keep_aspect_ratio_policy", "not_larger")})),
            (Shape{1, 3, 4, 6}));
  // not_smaller: scale = max(0.5, 0.3) = 0.5 -> 6, 10
  EXPECT_EQ(shape_of(resize_model(
                18, {1, 3, 12, 20}, {}, {6, 6},
                {attr_is("axes", {2, 3}), attr_s("keep_aspect_ratio_policy", "not_smaller")})),
            (Shape{1, 3, 6, 10}));
}

TEST(LayoutShapeTest, ResizeOpset11EmptyScalesWithSizes) {
  // opset 11: roi and scales are required inputs; an empty scales tensor means "use sizes"
  ModelBuilder m(11);
  m.input("X", {1, 3, 4, 4}).output("Y");
  m.init_f32("roi", {0}, {});
  m.init_f32("scales", {0}, {});
  m.init_i64("sizes", {4}, {1, 3, 8, 2});
  m.node("Resize", {"X", "roi", "scales", "sizes"}, {"Y"});
  EXPECT_EQ(shape_of(m), (Shape{1, 3, 8, 2}));
}

TEST(LayoutShapeTest, DepthToSpaceAndSpaceToDepth) {
  // [N, C / b^2, H * b, W * b] and back
  EXPECT_EQ(op_shape(13, "DepthToSpace", {{1, 8, 3, 4}}, {attr_i("blocksize", 2)}),
            (Shape{1, 2, 6, 8}));
  EXPECT_EQ(op_shape(13, "DepthToSpace", {{2, 18, 2, 2}},
                     {attr_i("blocksize", 3), attr_s("mode", "CRD")}),
            (Shape{2, 2, 6, 6}));
  EXPECT_EQ(op_shape(13, "SpaceToDepth", {{1, 2, 6, 8}}, {attr_i("blocksize", 2)}),
            (Shape{1, 8, 3, 4}));
}

// ---------------------------------------------------------------- Normalization

TEST(NormalizationShapeTest, LayerNormalizationMeanAndInvStdDev) {
  ModelBuilder m(17);
  m.input("X", {2, 5, 8}).input("scale", {8}).input("bias", {8});
  m.output("Y").output("Mean").output("InvStdDev");
  m.node("LayerNormalization", {"X", "scale", "bias"}, {"Y", "Mean", "InvStdDev"});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 5, 8}));
  EXPECT_EQ(g.value("Mean").shape, (Shape{2, 5, 1}));
  EXPECT_EQ(g.value("InvStdDev").shape, (Shape{2, 5, 1}));
  EXPECT_EQ(g.value("Mean").dtype, DType::kFloat32);

  ModelBuilder a(17);
  a.input("X", {2, 5, 8}, onnx::TensorProto::FLOAT16)
      .input("scale", {5, 8}, onnx::TensorProto::FLOAT16);
  a.output("Y").output("Mean").output("InvStdDev");
  a.node("LayerNormalization", {"X", "scale"}, {"Y", "Mean", "InvStdDev"}, {attr_i("axis", 1)});
  Graph h = kora_test::import_model(a);
  EXPECT_EQ(h.value("Y").shape, (Shape{2, 5, 8}));
  EXPECT_EQ(h.value("Y").dtype, DType::kFloat16);
  EXPECT_EQ(h.value("Mean").shape, (Shape{2, 1, 1}));
  EXPECT_EQ(h.value("InvStdDev").shape, (Shape{2, 1, 1}));
  // stash_type defaults to 1 (float32) whatever X is
  EXPECT_EQ(h.value("Mean").dtype, DType::kFloat32);
  EXPECT_EQ(h.value("InvStdDev").dtype, DType::kFloat32);
}

TEST(NormalizationShapeTest, BatchNormAndSoftmax) {
  EXPECT_EQ(op_shape(15, "BatchNormalization", {{2, 4, 3, 3}, {4}, {4}, {4}, {4}}),
            (Shape{2, 4, 3, 3}));
  EXPECT_EQ(op_shape(13, "Softmax", {{2, 7}}), (Shape{2, 7}));
}

TEST(NormalizationShapeTest, DropoutMaskOutput) {
  ModelBuilder m(13);
  m.input("X", {2, 3}).output("Y").output("mask", kBool);
  m.init_f32("ratio", {}, {0.5f});
  m.initializer(
      kora_test::raw_tensor("training", onnx::TensorProto::BOOL, {}, std::string(1, '\0')));
  m.node("Dropout", {"X", "ratio", "training"}, {"Y", "mask"});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("Y").dtype, DType::kFloat32);
  EXPECT_EQ(g.value("mask").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("mask").dtype, DType::kBool);
}

// ---------------------------------------------------------------- Misc

TEST(MiscShapeTest, TopK) {
  ModelBuilder m = op_with_consts(11, "TopK", {3, 10}, {{"K", {1}, {4}}}, {}, {"V", "I"});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("V").shape, (Shape{3, 4}));
  EXPECT_EQ(g.value("V").dtype, DType::kFloat32);
  EXPECT_EQ(g.value("I").shape, (Shape{3, 4}));
  EXPECT_EQ(g.value("I").dtype, DType::kInt64);
  Graph h = kora_test::import_model(
      op_with_consts(11, "TopK", {3, 10}, {{"K", {1}, {2}}}, {attr_i("axis", 0)}, {"V", "I"}));
  EXPECT_EQ(h.value("V").shape, (Shape{2, 10}));
  EXPECT_EQ(h.value("I").shape, (Shape{2, 10}));
}

// Shape(X) with start/end attributes: output dtype, length and (folded) value.
void expect_shape_op(const std::vector<onnx::AttributeProto>& attrs,
                     const std::vector<int64_t>& expect) {
  ModelBuilder m = op_model(15, "Shape", {{2, 3, 4, 5}}, attrs);
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").dtype, DType::kInt64);
  EXPECT_EQ(g.value("Y").shape, (Shape{static_cast<int64_t>(expect.size())}));
  ASSERT_TRUE(g.is_constant("Y"));
  EXPECT_EQ(g.constant("Y")->to_int64(), expect);
}

TEST(MiscShapeTest, ShapeStartEndOpset15) {
  expect_shape_op({}, {2, 3, 4, 5});
  expect_shape_op({attr_i("start", 1)}, {3, 4, 5});
  expect_shape_op({attr_i("start", 1), attr_i("end", -1)}, {3, 4});
  expect_shape_op({attr_i("start", -2)}, {4, 5});
  expect_shape_op({attr_i("end", 10)}, {2, 3, 4, 5});  // clamped to the rank
  expect_shape_op({attr_i("start", 3), attr_i("end", 1)}, {});
}

ModelBuilder range_model(int type, const std::string& start, const std::string& limit,
                         const std::string& delta) {
  ModelBuilder m(11);
  auto scalar = [&](const std::string& name, const std::string& v) {
    if (type == kInt64)
      m.init_i64(name, {}, {std::stoll(v)});
    else
      m.init_f32(name, {}, {std::stof(v)});
  };
  scalar("start", start);
  scalar("limit", limit);
  scalar("delta", delta);
  m.output("Y", type);
  m.node("Range", {"start", "limit", "delta"}, {"Y"});
  return m;
}

TEST(MiscShapeTest, Range) {
  // max(ceil((limit - start) / delta), 0)
  Graph g = kora_test::import_model(range_model(kInt64, "0", "10", "3"));
  EXPECT_EQ(g.value("Y").shape, (Shape{4}));
  EXPECT_EQ(g.value("Y").dtype, DType::kInt64);
  EXPECT_EQ(shape_of(range_model(kInt64, "10", "4", "-2")), (Shape{3}));
  EXPECT_EQ(shape_of(range_model(kInt64, "5", "0", "1")), (Shape{0}));
  Graph f = kora_test::import_model(range_model(kFloat, "1.0", "2.0", "0.3"));
  EXPECT_EQ(f.value("Y").shape, (Shape{4}));  // ceil(1 / 0.3) = 4
  EXPECT_EQ(f.value("Y").dtype, DType::kFloat32);
}

TEST(MiscShapeTest, ConstantOfShape) {
  ModelBuilder m(13);
  m.init_i64("s", {2}, {2, 3});
  m.output("Y", kInt64);
  m.node("ConstantOfShape", {"s"}, {"Y"},
         {kora_test::attr_t("value", kora_test::int64_tensor("", {1}, {7}))});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("Y").dtype, DType::kInt64);

  ModelBuilder d(13);
  d.init_i64("s", {3}, {4, 1, 2});
  d.output("Y");
  d.node("ConstantOfShape", {"s"}, {"Y"});
  Graph h = kora_test::import_model(d);
  EXPECT_EQ(h.value("Y").shape, (Shape{4, 1, 2}));
  EXPECT_EQ(h.value("Y").dtype, DType::kFloat32);  // default value: float32 zero

  ModelBuilder e(13);  // an empty shape gives a scalar
  e.init_i64("s", {0}, {});
  e.output("Y");
  e.node("ConstantOfShape", {"s"}, {"Y"});
  EXPECT_EQ(shape_of(e), Shape{});
}

TEST(MiscShapeTest, Cast) {
  Graph g = kora_test::import_model(
      op_model(13, "Cast", {{2, 3}}, {attr_i("to", onnx::TensorProto::INT64)}));
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("Y").dtype, DType::kInt64);
  EXPECT_EQ(kora_test::import_model(
                op_model(13, "Cast", {{4}}, {attr_i("to", onnx::TensorProto::FLOAT16)}))
                .value("Y")
                .dtype,
            DType::kFloat16);
  EXPECT_EQ(
      kora_test::import_model(op_model(13, "Cast", {{4}}, {attr_i("to", kBool)})).value("Y").dtype,
      DType::kBool);
}

TEST(MiscShapeTest, WhereBroadcastsThreeWays) {
  ModelBuilder m(16);
  m.input("C", {4, 1, 1}, kBool).input("A", {1, 3, 1}).input("B", {5}).output("Y");
  m.node("Where", {"C", "A", "B"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.value("Y").shape, (Shape{4, 3, 5}));
  EXPECT_EQ(g.value("Y").dtype, DType::kFloat32);
}

TEST(MiscShapeTest, ComparisonsGiveBool) {
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    ModelBuilder m(16);
    m.input("A", {3, 1}, kInt64).input("B", {4}, kInt64).output("Y", kBool);
    m.node(op, {"A", "B"}, {"Y"});
    Graph g = kora_test::import_model(m);
    EXPECT_EQ(g.value("Y").shape, (Shape{3, 4}));
    EXPECT_EQ(g.value("Y").dtype, DType::kBool);
  }
  for (const char* op : {"And", "Or", "Xor"}) {
    SCOPED_TRACE(op);
    ModelBuilder m(16);
    m.input("A", {2, 3}, kBool).input("B", {}, kBool).output("Y", kBool);
    m.node(op, {"A", "B"}, {"Y"});
    Graph g = kora_test::import_model(m);
    EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
    EXPECT_EQ(g.value("Y").dtype, DType::kBool);
  }
  ModelBuilder m(16);
  m.input("A", {2, 3}).input("B", {}).output("Y", kBool);
  m.node("Greater", {"A", "B"}, {"Y"});
  EXPECT_EQ(kora_test::import_model(m).value("Y").dtype, DType::kBool);
}

TEST(MiscShapeTest, ElementwiseBroadcast) {
  EXPECT_EQ(op_shape(14, "Add", {{2, 3, 1}, {4}}), (Shape{2, 3, 4}));
  EXPECT_EQ(op_shape(14, "Mul", {{1, 5}, {7, 1}}), (Shape{7, 5}));
  EXPECT_EQ(op_shape(14, "Sum", {{3, 1}, {1, 4}, {2, 1, 1}}), (Shape{2, 3, 4}));
  EXPECT_EQ(op_shape(14, "Relu", {{6, 7}}), (Shape{6, 7}));
}

}  // namespace
