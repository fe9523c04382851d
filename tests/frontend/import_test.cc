// Tests of kora::import_onnx on well-formed models: initializer encodings (raw_data vs
// typed fields, external data), Constant nodes, attribute kinds, inputs that are also
// initializers, symbolic dims, topological sorting, ImportOptions::constant_inputs and
// parameter_count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/frontend.h"

namespace {

using kora::DType;
using kora::Graph;
using kora::Shape;
using kora::Tensor;
using kora_test::attr_f;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::Dim;
using kora_test::ModelBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Tensor& constant_of(const Graph& g, const std::string& name) {
  const Tensor* t = g.constant(name);
  if (!t) throw std::runtime_error("no constant '" + name + "'");
  return *t;
}

void expect_same_tensor(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0);
}

onnx::TensorProto typed(const std::string& name, int type, const kora_test::Dims& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

TEST(ImportTest, GraphMetadataAndDefaultNodeNames) {
  ModelBuilder m(17);
  m.input("X", {2, 3}).output("Y");
  m.node("Relu", {"X"}, {"T"});
  m.node("Neg", {"T"}, {"Y"}, {}, "negate");
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.name, "test_graph");
  EXPECT_EQ(g.producer, "kora_tests");
  EXPECT_EQ(g.opset, 17);
  EXPECT_THAT(g.inputs, ElementsAre("X"));
  EXPECT_THAT(g.outputs, ElementsAre("Y"));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "Relu_0");
  EXPECT_EQ(g.nodes[1].name, "negate");
  EXPECT_EQ(g.nodes[1].op_type, "Neg");
  EXPECT_EQ(g.nodes[1].domain, "");
  EXPECT_EQ(g.value("Y").dtype, DType::kFloat32);
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 3}));
}

TEST(ImportTest, AiOnnxDomainCountsAsDefault) {
  ModelBuilder m(13);
  m.proto().mutable_opset_import(0)->set_domain("ai.onnx");
  m.input("X", {4}).output("Y");
  m.node("Relu", {"X"}, {"Y"}).set_domain("ai.onnx");
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.opset, 13);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].domain, "");
}

TEST(ImportTest, RawDataAndTypedFieldsGiveIdenticalTensors) {
  ModelBuilder m;
  const std::vector<float> f = {1.5f, -2.25f, 0.0f, 3e38f, -1e-30f, 7.0f};
  m.initializer(kora_test::float_tensor("f_raw", {2, 3}, f, true));
  m.initializer(kora_test::float_tensor("f_typed", {2, 3}, f, false));
  const std::vector<int64_t> l = {-(1LL << 62), -1, 0, 1LL << 40};
  m.initializer(kora_test::int64_tensor("l_raw", {4}, l, true));
  m.initializer(kora_test::int64_tensor("l_typed", {4}, l, false));
  const std::vector<int32_t> i = {-7, 2147483647};
  m.initializer(kora_test::int32_tensor("i_raw", {2, 1}, i, true));
  m.initializer(kora_test::int32_tensor("i_typed", {2, 1}, i, false));
  // double -> double_data
  const std::vector<double> d = {0.1, -1e300};
  m.initializer(
      kora_test::raw_tensor("d_raw", onnx::TensorProto::DOUBLE, {2}, kora_test::bytes_of(d)));
  auto dt = typed("d_typed", onnx::TensorProto::DOUBLE, {2});
  for (double v : d) dt.add_double_data(v);
  m.initializer(dt);
  // float16 -> bit patterns in int32_data (1.0, -2.0, 0.5)
  const std::vector<uint16_t> h = {0x3c00, 0xc000, 0x3800};
  m.initializer(
      kora_test::raw_tensor("h_raw", onnx::TensorProto::FLOAT16, {3}, kora_test::bytes_of(h)));
  auto ht = typed("h_typed", onnx::TensorProto::FLOAT16, {3});
  for (uint16_t v : h) ht.add_int32_data(v);
  m.initializer(ht);
  // uint8, int8 and bool -> int32_data
  const std::vector<uint8_t> u8 = {0, 200, 255};
  m.initializer(
      kora_test::raw_tensor("u8_raw", onnx::TensorProto::UINT8, {3}, kora_test::bytes_of(u8)));
  auto u8t = typed("u8_typed", onnx::TensorProto::UINT8, {3});
  for (uint8_t v : u8) u8t.add_int32_data(v);
  m.initializer(u8t);
  const std::vector<int8_t> i8 = {-128, 5};
  m.initializer(
      kora_test::raw_tensor("i8_raw", onnx::TensorProto::INT8, {2}, kora_test::bytes_of(i8)));
  auto i8t = typed("i8_typed", onnx::TensorProto::INT8, {2});
  for (int8_t v : i8) i8t.add_int32_data(v);
  m.initializer(i8t);
  const std::vector<uint8_t> b = {1, 0, 1};
  m.initializer(
      kora_test::raw_tensor("b_raw", onnx::TensorProto::BOOL, {3}, kora_test::bytes_of(b)));
  auto bt = typed("b_typed", onnx::TensorProto::BOOL, {3});
  for (uint8_t v : b) bt.add_int32_data(v);
  m.initializer(bt);
  // uint32 -> uint64_data
  const std::vector<uint32_t> u32 = {4000000000u, 3};
  m.initializer(
      kora_test::raw_tensor("u32_raw", onnx::TensorProto::UINT32, {2}, kora_test::bytes_of(u32)));
  auto u32t = typed("u32_typed", onnx::TensorProto::UINT32, {2});
  for (uint32_t v : u32) u32t.add_uint64_data(v);
  m.initializer(u32t);
  // bfloat16 -> bit patterns in int32_data (1.0, -1.5); int16/uint16 -> int32_data;
  // uint64 -> uint64_data
  const std::vector<uint16_t> bf = {0x3f80, 0xbfc0};
  m.initializer(
      kora_test::raw_tensor("bf_raw", onnx::TensorProto::BFLOAT16, {2}, kora_test::bytes_of(bf)));
  auto bft = typed("bf_typed", onnx::TensorProto::BFLOAT16, {2});
  for (uint16_t v : bf) bft.add_int32_data(v);
  m.initializer(bft);
  const std::vector<int16_t> i16 = {-32768, 1234};
  m.initializer(
      kora_test::raw_tensor("i16_raw", onnx::TensorProto::INT16, {2}, kora_test::bytes_of(i16)));
  auto i16t = typed("i16_typed", onnx::TensorProto::INT16, {2});
  for (int16_t v : i16) i16t.add_int32_data(v);
  m.initializer(i16t);
  const std::vector<uint16_t> u16 = {65535, 7};
  m.initializer(
      kora_test::raw_tensor("u16_raw", onnx::TensorProto::UINT16, {2}, kora_test::bytes_of(u16)));
  auto u16t = typed("u16_typed", onnx::TensorProto::UINT16, {2});
  for (uint16_t v : u16) u16t.add_int32_data(v);
  m.initializer(u16t);
  const std::vector<uint64_t> u64 = {1ULL << 63, 9};
  m.initializer(
      kora_test::raw_tensor("u64_raw", onnx::TensorProto::UINT64, {2}, kora_test::bytes_of(u64)));
  auto u64t = typed("u64_typed", onnx::TensorProto::UINT64, {2});
  for (uint64_t v : u64) u64t.add_uint64_data(v);
  m.initializer(u64t);
  const char* kinds[] = {"f", "l",   "i",  "d",   "h",   "u8", "i8",
                         "b", "u32", "bf", "i16", "u16", "u64"};
  for (const char* k : kinds) {
    m.output(std::string(k) + "_raw");
    m.output(std::string(k) + "_typed");
  }
  Graph g = kora_test::import_model(m);
  for (const char* k : kinds) {
    SCOPED_TRACE(k);
    expect_same_tensor(constant_of(g, std::string(k) + "_raw"),
                       constant_of(g, std::string(k) + "_typed"));
  }
  // The values themselves, read back independently of the encoding.
  const Tensor& ft = constant_of(g, "f_typed");
  EXPECT_EQ(ft.dtype(), DType::kFloat32);
  EXPECT_EQ(ft.shape(), (Shape{2, 3}));
  for (size_t k = 0; k < f.size(); ++k) EXPECT_EQ(ft.double_at(k), static_cast<double>(f[k]));
  EXPECT_EQ(constant_of(g, "l_typed").to_int64(), l);
  EXPECT_EQ(constant_of(g, "i_typed").shape(), (Shape{2, 1}));
  EXPECT_EQ(constant_of(g, "i_typed").to_int64(), (std::vector<int64_t>{-7, 2147483647}));
  EXPECT_EQ(constant_of(g, "d_typed").to_double(), d);
  EXPECT_EQ(constant_of(g, "h_typed").dtype(), DType::kFloat16);
  EXPECT_EQ(constant_of(g, "h_typed").to_double(), (std::vector<double>{1.0, -2.0, 0.5}));
  EXPECT_EQ(constant_of(g, "u8_typed").to_int64(), (std::vector<int64_t>{0, 200, 255}));
  EXPECT_EQ(constant_of(g, "i8_typed").to_int64(), (std::vector<int64_t>{-128, 5}));
  EXPECT_EQ(constant_of(g, "b_typed").dtype(), DType::kBool);
  EXPECT_EQ(constant_of(g, "b_typed").to_int64(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(constant_of(g, "u32_typed").to_int64(), (std::vector<int64_t>{4000000000LL, 3}));
  EXPECT_EQ(constant_of(g, "bf_typed").dtype(), DType::kBFloat16);
  EXPECT_EQ(constant_of(g, "bf_typed").to_double(), (std::vector<double>{1.0, -1.5}));
  EXPECT_EQ(constant_of(g, "i16_typed").to_int64(), (std::vector<int64_t>{-32768, 1234}));
  EXPECT_EQ(constant_of(g, "u16_typed").to_int64(), (std::vector<int64_t>{65535, 7}));
  EXPECT_EQ(constant_of(g, "u64_typed").dtype(), DType::kUInt64);
  EXPECT_EQ(constant_of(g, "u64_typed").to_double(),
            (std::vector<double>{9223372036854775808.0, 9}));
  EXPECT_TRUE(g.inputs.empty());
  EXPECT_TRUE(g.nodes.empty());
}

TEST(ImportTest, ExternalDataWithRelativePathOffsetAndLength) {
  kora_test::TempDir dir;
  const std::vector<float> w = {1, 2, 3, -4, 5.5f, 6};
  std::string blob = std::string(16, '\x7f') + kora_test::bytes_of(w) + std::string(8, '\x01');
  kora_test::write_file(dir.file("weights.bin"), blob);
  const std::vector<int64_t> l = {10, -20, 30};
  kora_test::write_file(dir.file("data/more.bin"), kora_test::bytes_of(l));  // no length key
  ModelBuilder m;
  m.initializer(
      kora_test::external_tensor("W", onnx::TensorProto::FLOAT, {2, 3}, "weights.bin", 16, 24));
  m.initializer(kora_test::external_tensor("L", onnx::TensorProto::INT64, {3}, "data/more.bin", 0));
  m.input("X", {2, 3}).output("Y").output("L");
  m.node("Add", {"X", "W"}, {"Y"});
  Graph g = kora::import_onnx(m.save(dir));
  const Tensor& wt = constant_of(g, "W");
  EXPECT_EQ(wt.dtype(), DType::kFloat32);
  EXPECT_EQ(wt.shape(), (Shape{2, 3}));
  EXPECT_EQ(wt.to_double(), (std::vector<double>{1, 2, 3, -4, 5.5, 6}));
  EXPECT_EQ(constant_of(g, "L").to_int64(), l);
  EXPECT_EQ(g.parameter_count, 6);
}

TEST(ImportTest, ConstantNodeTensorInExternalData) {
  // Exporters may move Constant attribute tensors to external data as well.
  kora_test::TempDir dir;
  const std::vector<int64_t> v = {3, 1, 4, 1, 5};
  kora_test::write_file(dir.file("const.bin"), std::string(8, '\0') + kora_test::bytes_of(v));
  ModelBuilder m;
  m.output("K", onnx::TensorProto::INT64);
  m.node("Constant", {}, {"K"},
         {kora_test::attr_t("value", kora_test::external_tensor("", onnx::TensorProto::INT64, {5},
                                                                "const.bin", 8, 40))});
  Graph g = kora::import_onnx(m.save(dir));
  EXPECT_EQ(constant_of(g, "K").shape(), (Shape{5}));
  EXPECT_EQ(constant_of(g, "K").to_int64(), v);
}

TEST(ImportTest, TraceReportsFrontendSteps) {
  ModelBuilder m;
  m.input("X", {2}).output("Y");
  m.node("Relu", {"X"}, {"Y"});
  std::ostringstream trace;
  kora::ImportOptions o;
  o.trace = &trace;
  kora_test::import_model(m, o);
  EXPECT_THAT(trace.str(), HasSubstr("[frontend]"));
  EXPECT_THAT(trace.str(), HasSubstr("opset 17"));
}

TEST(ImportTest, ConstantNodesBecomeConstants) {
  ModelBuilder m;
  m.node("Constant", {}, {"c_tensor"},
         {kora_test::attr_t("value", kora_test::int32_tensor("", {2, 2}, {1, 2, 3, 4}))});
  m.node("Constant", {}, {"c_float"}, {attr_f("value_float", 2.5f)});
  m.node("Constant", {}, {"c_floats"}, {kora_test::attr_fs("value_floats", {1.0f, -0.5f, 8.0f})});
  m.node("Constant", {}, {"c_int"}, {attr_i("value_int", -7)});
  m.node("Constant", {}, {"c_ints"}, {attr_is("value_ints", {4, 5})});
  // Sparse value: shape [3, 4] with 5 at linear index 1 and 6 at linear index 10.
  for (int coords = 0; coords < 2; ++coords) {
    onnx::AttributeProto sv;
    sv.set_name("sparse_value");
    sv.set_type(onnx::AttributeProto::SPARSE_TENSOR);
    auto* sp = sv.mutable_sparse_tensor();
    sp->add_dims(3);
    sp->add_dims(4);
    *sp->mutable_values() = kora_test::float_tensor("", {2}, {5.0f, 6.0f});
    *sp->mutable_indices() = coords ? kora_test::int64_tensor("", {2, 2}, {0, 1, 2, 2})
                                    : kora_test::int64_tensor("", {2}, {1, 10});
    m.node("Constant", {}, {coords ? "c_sparse2d" : "c_sparse"}, {sv});
  }
  for (const char* out :
       {"c_tensor", "c_float", "c_floats", "c_int", "c_ints", "c_sparse", "c_sparse2d"})
    m.output(out);
  Graph g = kora_test::import_model(m);
  EXPECT_TRUE(g.nodes.empty());

  const Tensor& t = constant_of(g, "c_tensor");
  EXPECT_EQ(t.dtype(), DType::kInt32);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{1, 2, 3, 4}));

  const Tensor& f = constant_of(g, "c_float");
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(f.shape(), Shape{});
  EXPECT_EQ(f.double_at(0), 2.5);

  const Tensor& fs = constant_of(g, "c_floats");
  EXPECT_EQ(fs.dtype(), DType::kFloat32);
  EXPECT_EQ(fs.shape(), Shape{3});
  EXPECT_EQ(fs.to_double(), (std::vector<double>{1.0, -0.5, 8.0}));

  const Tensor& i = constant_of(g, "c_int");
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_EQ(i.shape(), Shape{});
  EXPECT_EQ(i.int64_at(0), -7);

  const Tensor& is = constant_of(g, "c_ints");
  EXPECT_EQ(is.dtype(), DType::kInt64);
  EXPECT_EQ(is.shape(), Shape{2});
  EXPECT_EQ(is.to_int64(), (std::vector<int64_t>{4, 5}));

  std::vector<double> dense(12, 0.0);
  dense[1] = 5.0;
  dense[10] = 6.0;
  for (const char* name : {"c_sparse", "c_sparse2d"}) {
    SCOPED_TRACE(name);
    const Tensor& s = constant_of(g, name);
    EXPECT_EQ(s.dtype(), DType::kFloat32);
    EXPECT_EQ(s.shape(), (Shape{3, 4}));
    EXPECT_EQ(s.to_double(), dense);
  }
  EXPECT_EQ(g.value("c_ints").dtype, DType::kInt64);
  EXPECT_EQ(g.value("c_tensor").shape, (Shape{2, 2}));
}

TEST(ImportTest, EveryAttributeKindParses) {
  ModelBuilder m;
  m.input("X", {3}).output("Y");
  onnx::AttributeProto tensors;
  tensors.set_name("a_tensors");
  tensors.set_type(onnx::AttributeProto::TENSORS);
  *tensors.add_tensors() = kora_test::float_tensor("", {1}, {0.25f});
  *tensors.add_tensors() = kora_test::int64_tensor("", {2}, {3, 4}, false);
  onnx::AttributeProto untyped;  // very old models leave the type out
  untyped.set_name("a_untyped");
  untyped.set_i(99);
  m.node("Identity", {"X"}, {"Y"},
         {attr_f("a_float", 0.5f), attr_i("a_int", -3), kora_test::attr_s("a_string", "hello"),
          kora_test::attr_t("a_tensor", kora_test::int64_tensor("", {2}, {8, 9})),
          kora_test::attr_fs("a_floats", {1.5f, -2.0f}), attr_is("a_ints", {1, 2, 3}),
          kora_test::attr_ss("a_strings", {"a", "bc", ""}), tensors, untyped},
         "id");
  Graph g = kora_test::import_model(m);
  ASSERT_EQ(g.nodes.size(), 1u);
  const kora::Node& n = g.nodes[0];
  using K = kora::Attribute::Kind;
  EXPECT_EQ(n.attributes.at("a_float").kind, K::kFloat);
  EXPECT_EQ(n.attr_float("a_float", 0), 0.5);
  EXPECT_EQ(n.attributes.at("a_int").kind, K::kInt);
  EXPECT_EQ(n.attr_int("a_int", 0), -3);
  EXPECT_EQ(n.attributes.at("a_string").kind, K::kString);
  EXPECT_EQ(n.attr_string("a_string", ""), "hello");
  EXPECT_EQ(n.attributes.at("a_tensor").kind, K::kTensor);
  ASSERT_NE(n.attr_tensor("a_tensor"), nullptr);
  EXPECT_EQ(n.attr_tensor("a_tensor")->dtype(), DType::kInt64);
  EXPECT_EQ(n.attr_tensor("a_tensor")->to_int64(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(n.attributes.at("a_floats").kind, K::kFloats);
  EXPECT_EQ(n.attr_floats("a_floats"), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(n.attributes.at("a_ints").kind, K::kInts);
  EXPECT_EQ(n.attr_ints("a_ints"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(n.attributes.at("a_strings").kind, K::kStrings);
  EXPECT_THAT(n.attributes.at("a_strings").strings, ElementsAre("a", "bc", ""));
  const kora::Attribute& ts = n.attributes.at("a_tensors");
  EXPECT_EQ(ts.kind, K::kTensors);
  ASSERT_EQ(ts.tensors.size(), 2u);
  EXPECT_EQ(ts.tensors[0].to_double(), (std::vector<double>{0.25}));
  EXPECT_EQ(ts.tensors[1].to_int64(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(n.attributes.at("a_untyped").kind, K::kInt);
  EXPECT_EQ(n.attr_int("a_untyped", 0), 99);
  // Fallbacks for absent attributes, and an error naming the attribute on a kind mismatch.
  EXPECT_EQ(n.attr_int("absent", 42), 42);
  EXPECT_EQ(n.attr_ints("absent", {7}), (std::vector<int64_t>{7}));
  try {
    n.attr_int("a_float", 0);
    ADD_FAILURE() << "no kora::Error";
  } catch (const kora::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a_float"));
    EXPECT_THAT(e.what(), HasSubstr("'id'"));
  }
}

TEST(ImportTest, InputThatIsAlsoInitializerIsConstant) {
  ModelBuilder m;
  m.input("X", {2, 2}).input("W", {2, 2}).output("Y");
  m.init_f32("W", {2, 2}, {1, 2, 3, 4});
  m.node("Add", {"X", "W"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_THAT(g.inputs, ElementsAre("X"));
  ASSERT_TRUE(g.is_constant("W"));
  EXPECT_EQ(constant_of(g, "W").to_double(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(g.value("Y").shape, (Shape{2, 2}));
}

TEST(ImportTest, SymbolicDimsBoundByOptionsAndDefault) {
  ModelBuilder m;
  m.input("X", {"batch", 3, "seq", Dim{}}).input("Z", {"batch", 5}).output("Y").output("W");
  m.node("Relu", {"X"}, {"Y"});
  m.node("Relu", {"Z"}, {"W"});
  {
    Graph g = kora_test::import_model(m);
    EXPECT_EQ(g.value("X").shape, (Shape{1, 3, 1, 1}));
    EXPECT_EQ(g.value("Y").shape, (Shape{1, 3, 1, 1}));
    EXPECT_EQ(g.value("W").shape, (Shape{1, 5}));
  }
  {
    kora::ImportOptions o;
    o.dims = {{"batch", 4}, {"seq", 16}};
    Graph g = kora_test::import_model(m, o);
    EXPECT_EQ(g.value("X").shape, (Shape{4, 3, 16, 1}));
    EXPECT_EQ(g.value("Y").shape, (Shape{4, 3, 16, 1}));
    EXPECT_EQ(g.value("Z").shape, (Shape{4, 5}));
  }
  {
    kora::ImportOptions o;
    o.dims = {{"batch", 2}};
    o.default_dim = 7;
    Graph g = kora_test::import_model(m, o);
    EXPECT_EQ(g.value("X").shape, (Shape{2, 3, 7, 7}));
    EXPECT_EQ(g.value("W").shape, (Shape{2, 5}));
  }
}

void expect_topological(const Graph& g) {
  std::set<std::string> available(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.constants) available.insert(name);
  for (const kora::Node& n : g.nodes) {
    for (const std::string& in : n.inputs)
      EXPECT_TRUE(in.empty() || available.count(in))
          << n.name << " reads '" << in << "' before it is produced";
    for (const std::string& out : n.outputs) available.insert(out);
  }
}

TEST(ImportTest, NodesOutOfOrderGetSorted) {
  ModelBuilder m;
  m.input("X", {2}).output("Z").output("W");
  m.node("Neg", {"B"}, {"Z"}, {}, "c");
  m.node("Relu", {"A"}, {"B"}, {}, "b");
  m.node("Abs", {"X"}, {"W"}, {}, "d");
  m.node("Sigmoid", {"X"}, {"A"}, {}, "a");
  Graph g = kora_test::import_model(m);
  ASSERT_EQ(g.nodes.size(), 4u);
  expect_topological(g);
  std::vector<std::string> order;
  for (const kora::Node& n : g.nodes) order.push_back(n.name);
  auto pos = [&](const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
  };
  EXPECT_LT(pos("a"), pos("b"));
  EXPECT_LT(pos("b"), pos("c"));
  EXPECT_EQ(g.value("Z").shape, Shape{2});
}

TEST(ImportTest, OrderedFileKeepsItsOrder) {
  ModelBuilder m;
  m.input("X", {2}).output("Y");
  m.node("Relu", {"X"}, {"A"}, {}, "n0");
  m.node("Abs", {"X"}, {"B"}, {}, "n1");
  m.node("Add", {"A", "B"}, {"C"}, {}, "n2");
  m.node("Neg", {"C"}, {"Y"}, {}, "n3");
  Graph g = kora_test::import_model(m);
  std::vector<std::string> order;
  for (const kora::Node& n : g.nodes) order.push_back(n.name);
  EXPECT_THAT(order, ElementsAre("n0", "n1", "n2", "n3"));
}

TEST(ImportTest, ConstantInputsBindAnInput) {
  ModelBuilder m;
  m.input("X", {12}).input("shape", {2}, onnx::TensorProto::INT64).output("Y");
  m.node("Reshape", {"X", "shape"}, {"Y"});
  kora::ImportOptions o;
  o.constant_inputs.emplace("shape", Tensor::from_int64(DType::kInt64, {2}, {3, 4}));
  Graph g = kora_test::import_model(m, o);
  EXPECT_THAT(g.inputs, ElementsAre("X"));
  ASSERT_TRUE(g.is_constant("shape"));
  EXPECT_EQ(constant_of(g, "shape").to_int64(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(g.value("Y").shape, (Shape{3, 4}));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Reshape");
}

TEST(ImportTest, ParameterCountCountsFloatingWeights) {
  ModelBuilder m;
  m.input("X", {2, 3}).output("Y").output("H").output("I").output("C").output("D");
  m.init_f32("W", {2, 3}, {1, 2, 3, 4, 5, 6});  // 6
  m.initializer(
      kora_test::raw_tensor("H", onnx::TensorProto::FLOAT16, {4}, std::string(8, '\0')));  // 4
  m.init_i64("I", {5}, {1, 2, 3, 4, 5});                                                   // 0
  m.initializer(
      kora_test::raw_tensor("D", onnx::TensorProto::DOUBLE, {2}, std::string(16, '\0')));  // 2
  m.node("Constant", {}, {"C"}, {kora_test::attr_fs("value_floats", {1, 2, 3})});          // 3
  m.node("Add", {"X", "W"}, {"Y"});
  Graph g = kora_test::import_model(m);
  EXPECT_EQ(g.parameter_count, 6 + 4 + 2 + 3);
}

TEST(ImportTest, ConstantInputsRejectMismatchAndUnknownName) {
  ModelBuilder m;
  m.input("X", {12}).input("shape", {2}, onnx::TensorProto::INT64).output("Y");
  m.node("Reshape", {"X", "shape"}, {"Y"});
  kora::ImportOptions wrong_type;
  wrong_type.constant_inputs.emplace("shape", Tensor::from_int64(DType::kInt32, {2}, {3, 4}));
  try {
    kora_test::import_model(m, wrong_type);
    ADD_FAILURE() << "no kora::Error";
  } catch (const kora::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'shape'"));
  }
  kora::ImportOptions unknown;
  unknown.constant_inputs.emplace("nope", Tensor::from_int64(DType::kInt64, {1}, {1}));
  try {
    kora_test::import_model(m, unknown);
    ADD_FAILURE() << "no kora::Error";
  } catch (const kora::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'nope'"));
  }
}

TEST(ImportTest, SupportedOperatorList) {
  const std::vector<std::string> ops = kora::supported_operators();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const char* op : {"Conv", "MatMul", "Reshape", "Constant", "Einsum", "Resize"}) {
    EXPECT_TRUE(kora::is_supported_operator(op)) << op;
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_TRUE(kora::is_supported_operator("LSTM"));
  EXPECT_TRUE(kora::is_supported_operator("If"));
  EXPECT_TRUE(kora::is_supported_operator("TfIdfVectorizer"));
  EXPECT_TRUE(kora::is_supported_operator("Bernoulli"));
  EXPECT_FALSE(kora::is_supported_operator("SequenceConstruct"));
}

}  // namespace
