// The primitive IR's JSON form (src/runtime/prim_json.h): every kind, attribute and
// field of hand-built primitives survives text and back exactly (doubles bit for bit,
// NaN, infinities and -0.0 included); fission output of real operator graphs round-trips
// and the interpreter gives bit-identical outputs on it; malformed JSON always ends in
// kora::Error, never another exception or a crash.
#include "runtime/prim_json.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/interpreter.h"

namespace kora {
namespace {

using kora_test::attr_f;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::attr_s;
using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Through text and back, as an artifact's manifest goes.
json reparse(const json& j) { return json::parse(j.dump()); }

// ---- Exact equality of IR values (doubles by bits) -------------------------------------

bool same(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
bool same(const Operand& a, const Operand& b) {
  return a.input == b.input && same(a.value, b.value);
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.nbytes() != b.nbytes()) return false;
  return a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0;
}

template <typename T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

bool same(const Attribute& a, const Attribute& b) {
  return a.kind == b.kind && same(a.f, b.f) && a.i == b.i && a.s == b.s &&
         same(a.floats, b.floats) && a.ints == b.ints && a.strings == b.strings &&
         same(a.tensors, b.tensors) && a.num_graphs == b.num_graphs;
}

bool same(const Node& a, const Node& b) {
  if (a.name != b.name || a.op_type != b.op_type || a.domain != b.domain || a.inputs != b.inputs ||
      a.outputs != b.outputs || a.attributes.size() != b.attributes.size())
    return false;
  for (const auto& [key, attr] : a.attributes) {
    auto it = b.attributes.find(key);
    if (it == b.attributes.end() || !same(attr, it->second)) return false;
  }
  return true;
}
bool same(const ElementwiseAttrs& a, const ElementwiseAttrs& b) {
  return a.op == b.op && same(a.operands, b.operands);
}
bool same(const ReduceAttrs& a, const ReduceAttrs& b) { return a.op == b.op && a.axes == b.axes; }
bool same(const BroadcastAttrs&, const BroadcastAttrs&) { return true; }
bool same(const layout::Transpose& a, const layout::Transpose& b) { return a.perm == b.perm; }
bool same(const layout::Reshape&, const layout::Reshape&) { return true; }
bool same(const layout::Slice& a, const layout::Slice& b) {
  return a.starts == b.starts && a.steps == b.steps;
}
bool same(const layout::Pad& a, const layout::Pad& b) {
  return a.begin == b.begin && a.stride == b.stride && a.mode == b.mode && same(a.value, b.value);
}
bool same(const layout::Concat& a, const layout::Concat& b) {
  return a.axis == b.axis && a.offsets == b.offsets;
}
bool same(const layout::Gather& a, const layout::Gather& b) {
  return a.axis == b.axis && a.indices == b.indices;
}
bool same(const layout::Tile&, const layout::Tile&) { return true; }
bool same(const layout::Window& a, const layout::Window& b) {
  return a.strides == b.strides && a.dilations == b.dilations && a.pads_begin == b.pads_begin &&
         same(a.fill, b.fill) && a.channels_last == b.channels_last;
}
bool same(const MatMulAttrs&, const MatMulAttrs&) { return true; }
bool same(const ConvAttrs& a, const ConvAttrs& b) {
  return a.group == b.group && a.strides == b.strides && a.dilations == b.dilations &&
         a.pads_begin == b.pads_begin && a.pads_end == b.pads_end;
}
bool same(const OpaqueAttrs& a, const OpaqueAttrs& b) { return same(a.node, b.node); }

template <typename... Ts>
bool same(const std::variant<Ts...>& a, const std::variant<Ts...>& b) {
  if (a.index() != b.index()) return false;
  return std::visit([&](const auto& x) { return same(x, std::get<std::decay_t<decltype(x)>>(b)); },
                    a);
}

bool same(const Primitive& a, const Primitive& b) {
  return a.name == b.name && a.origin == b.origin && a.inputs == b.inputs &&
         a.outputs == b.outputs && same(a.attrs, b.attrs);
}

void expect_same_graph(const PrimGraph& a, const PrimGraph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (const auto& [name, v] : a.values) {
    ASSERT_TRUE(b.values.count(name)) << name;
    EXPECT_EQ(v.dtype, b.values.at(name).dtype) << name;
    EXPECT_EQ(v.shape, b.values.at(name).shape) << name;
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (const auto& [name, t] : a.constants) {
    ASSERT_TRUE(b.constants.count(name)) << name;
    EXPECT_TRUE(same(t, b.constants.at(name))) << name;
  }
  ASSERT_EQ(a.prims.size(), b.prims.size());
  for (size_t i = 0; i < a.prims.size(); ++i)
    EXPECT_TRUE(same(a.prims[i], b.prims[i])) << a.prims[i].describe() << "\n"
                                              << primitive_to_json(a.prims[i]).dump() << "\n"
                                              << primitive_to_json(b.prims[i]).dump();
}

// Serializes, goes through text, reads back; checks field by field and that writing the
// result again gives the same JSON.
Primitive round_trip(const Primitive& p) {
  const json j = reparse(primitive_to_json(p));
  Primitive q = primitive_from_json(j);
  EXPECT_TRUE(same(p, q)) << p.describe() << "\n" << j.dump();
  EXPECT_EQ(primitive_to_json(q), j);
  return q;
}

PrimGraph round_trip(const PrimGraph& g) {
  const json j = reparse(prim_graph_to_json(g));
  PrimGraph h = prim_graph_from_json(j, g.constants);
  expect_same_graph(g, h);
  EXPECT_EQ(prim_graph_to_json(h), j);
  return h;
}

// Runs both graphs on the same random inputs; outputs must be identical bit for bit.
void expect_same_outputs(const PrimGraph& a, const PrimGraph& b, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> inputs;
  for (const std::string& t : a.inputs)
    inputs[t] = random_tensor(a.value(t).dtype, a.value(t).shape, rng);
  const auto out_a = interpret(a, inputs);
  const auto out_b = interpret(b, inputs);
  ASSERT_EQ(out_a.size(), a.outputs.size());
  ASSERT_EQ(out_b.size(), out_a.size());
  for (const auto& [name, t] : out_a) {
    ASSERT_TRUE(out_b.count(name)) << name;
    EXPECT_TRUE(same(t, out_b.at(name))) << "output '" << name << "' differs";
  }
}

// ---- Hand-built primitives -------------------------------------------------------------

Primitive prim(const std::string& name, PrimAttrs attrs, std::vector<std::string> inputs,
               std::vector<std::string> outputs = {"y"}) {
  Primitive p;
  p.name = name;
  p.origin = "node_" + name;
  p.inputs = std::move(inputs);
  p.outputs = std::move(outputs);
  p.attrs = std::move(attrs);
  return p;
}

Attribute attribute(Attribute::Kind kind) {
  Attribute a;
  a.kind = kind;
  return a;
}

// A node with an attribute of every kind, odd values included.
Node node_with_every_attribute() {
  using K = Attribute::Kind;
  Node n;
  n.name = "weird/node:0";
  n.op_type = "TopK";
  n.domain = "com.example";
  n.inputs = {"a", "", "c", ""};
  n.outputs = {"v", "", "i"};
  Attribute a = attribute(K::kFloat);
  a.f = -0.0;
  n.attributes["f_neg_zero"] = a;
  a.f = 0.1;
  n.attributes["f_tenth"] = a;
  a.f = kNaN;
  n.attributes["f_nan"] = a;
  a = attribute(K::kFloat);  // f == +0.0: only the kind's field is written
  n.attributes["f_zero"] = a;
  a = attribute(K::kInt);
  a.i = std::numeric_limits<int64_t>::min();
  n.attributes["i_min"] = a;
  a.i = std::numeric_limits<int64_t>::max();
  n.attributes["i_max"] = a;
  a = attribute(K::kString);
  a.s = "caf\xc3\xa9 \"quoted\"\n\t";
  n.attributes["s_utf8"] = a;
  a.s = std::string("bin\xff\xfe\0x", 7);  // not UTF-8, embedded NUL
  n.attributes["s_bytes"] = a;
  a = attribute(K::kTensor);
  a.tensors = {Tensor::from_double(DType::kFloat16, {2, 2}, {1.5, -0.0, kInf, kNaN})};
  n.attributes["t"] = a;
  a = attribute(K::kSparseTensor);
  a.tensors = {Tensor::from_int64(DType::kInt64, {3}, {0, -1, 7})};
  n.attributes["sparse"] = a;
  a = attribute(K::kGraph);
  a.num_graphs = 1;
  n.attributes["g"] = a;
  n.attributes["type"] = attribute(K::kTypeProto);
  a = attribute(K::kFloats);
  a.floats = {1.0, -0.0, kInf, -kInf, kNaN, 5e-324, std::numeric_limits<double>::max(), 1.0 / 3};
  n.attributes["floats"] = a;
  n.attributes["floats_empty"] = attribute(K::kFloats);
  a = attribute(K::kInts);
  a.ints = {-3, 0, 1LL << 60};
  n.attributes["ints"] = a;
  a = attribute(K::kStrings);
  a.strings = {"", "x", "\x80"};
  n.attributes["strings"] = a;
  a = attribute(K::kTensors);
  a.tensors = {Tensor::from_double(DType::kFloat32, {}, {2.5}), Tensor(DType::kBool, {0, 3}),
               Tensor()};
  n.attributes["tensors"] = a;
  a = attribute(K::kGraphs);
  a.num_graphs = 3;
  n.attributes["graphs"] = a;
  a = attribute(K::kSparseTensors);
  n.attributes["sparse_tensors"] = a;
  n.attributes["type_protos"] = attribute(K::kTypeProtos);
  // A kind with stray fields of other kinds: kept too.
  a = attribute(K::kInt);
  a.i = 4;
  a.f = 2.0;
  a.ints = {1};
  a.s = "stray";
  n.attributes["stray"] = a;
  return n;
}

TEST(PrimJson, EveryPrimitiveKindAndField) {
  std::vector<Primitive> prims;
  // Every scalar op with tensor operands; immediates in different positions.
  for (int i = 0; i <= static_cast<int>(kora::kLastScalarOp); ++i) {
    const auto op = static_cast<ScalarOp>(i);
    ElementwiseAttrs e{op, {}};
    std::vector<std::string> inputs;
    for (int k = 0; k < scalar_op_arity(op); ++k) {
      inputs.push_back("x" + std::to_string(k));
      e.operands.push_back({k, 0});
    }
    prims.push_back(prim(std::string("ew_") + scalar_op_name(op), e, inputs));
    if (scalar_op_arity(op) >= 2) {
      e.operands[1] = {-1, -2.75};
      prims.push_back(prim(std::string("ew_imm_") + scalar_op_name(op), e, inputs));
    }
  }
  // Operands with both fields set (not produced by fission, but exact all the same).
  prims.push_back(
      prim("ew_odd", ElementwiseAttrs{ScalarOp::kAdd, {{1, 3.5}, {-7, 0.0}}}, {"a", "b"}));
  for (int i = 0; i <= static_cast<int>(ReduceOp::kMean); ++i)
    prims.push_back(prim(std::string("red_") + reduce_op_name(static_cast<ReduceOp>(i)),
                         ReduceAttrs{static_cast<ReduceOp>(i), {0, 2, 3}}, {"x"}));
  prims.push_back(prim("red_no_axes", ReduceAttrs{ReduceOp::kSum, {}}, {"x"}));
  prims.push_back(prim("bcast", BroadcastAttrs{}, {"x"}));
  prims.push_back(prim("transpose", LayoutAttrs{layout::Transpose{{0, 3, 1, 2}}}, {"x"}));
  prims.push_back(prim("reshape", LayoutAttrs{layout::Reshape{}}, {"x"}));
  prims.push_back(prim("slice", LayoutAttrs{layout::Slice{{5, 0, -1}, {-1, 2, 3}}}, {"x"}));
  for (auto mode : {layout::PadMode::kConstant, layout::PadMode::kReflect, layout::PadMode::kEdge})
    for (double value : {0.0, -0.0, 1.25, -kInf, kNaN})
      prims.push_back(prim("pad_" + std::to_string(static_cast<int>(mode)),
                           LayoutAttrs{layout::Pad{{1, -2, 0}, {1, 1, 2}, mode, value}}, {"x"}));
  prims.push_back(
      prim("concat", LayoutAttrs{layout::Concat{2, {0, 3, 3, 10}}}, {"a", "b", "c", "d"}));
  prims.push_back(prim("gather", LayoutAttrs{layout::Gather{1, {4, 0, 0, 2}}}, {"x"}));
  prims.push_back(prim("gather_empty", LayoutAttrs{layout::Gather{0, {}}}, {"x"}));
  prims.push_back(prim("tile", LayoutAttrs{layout::Tile{}}, {"x"}));
  prims.push_back(
      prim("window", LayoutAttrs{layout::Window{{2, 1}, {1, 3}, {0, 1}, -kInf}}, {"x"}));
  prims.push_back(prim("window_nan", LayoutAttrs{layout::Window{{1}, {1}, {0}, kNaN}}, {"x"}));
  prims.push_back(
      prim("window_cl", LayoutAttrs{layout::Window{{1, 2}, {1, 1}, {1, 0}, -kInf, true}}, {"x"}));
  prims.push_back(prim("matmul", LinearAttrs{MatMulAttrs{}}, {"a", "b"}));
  prims.push_back(
      prim("conv", LinearAttrs{ConvAttrs{4, {1, 2}, {3, 1}, {0, 1}, {2, 0}}}, {"x", "w"}));
  prims.push_back(prim("conv1d", LinearAttrs{ConvAttrs{1, {1}, {1}, {0}, {0}}}, {"x", "w"}));
  prims.push_back(prim("opaque", OpaqueAttrs{node_with_every_attribute()}, {"a", "c"}, {"v", "i"}));
  prims.push_back(prim("", OpaqueAttrs{Node{}}, {}, {"out"}));  // empty everything

  for (const Primitive& p : prims) round_trip(p);
  EXPECT_GT(prims.size(), 70u);
}

TEST(PrimJson, SpecialImmediatesAreExact) {
  const double quiet_neg_nan = -kNaN;
  const double payload_nan = std::bit_cast<double>(uint64_t{0x7ff0000000000123});  // signaling
  const double neg_payload = std::bit_cast<double>(uint64_t{0xfff800000000beef});
  const std::vector<double> values = {kNaN,
                                      quiet_neg_nan,
                                      payload_nan,
                                      neg_payload,
                                      kInf,
                                      -kInf,
                                      -0.0,
                                      0.0,
                                      5e-324,
                                      -2.2250738585072014e-308,
                                      std::numeric_limits<double>::max(),
                                      0.1,
                                      1e23,
                                      -123456789012345678.0,
                                      static_cast<double>(1.1f)};
  for (double v : values) {
    const Primitive p = prim("imm", ElementwiseAttrs{ScalarOp::kMul, {{0, 0}, {-1, v}}}, {"x"});
    const Primitive q = round_trip(p);
    const double got = std::get<ElementwiseAttrs>(q.attrs).operands[1].value;
    EXPECT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(v)) << v;
  }
  // How they read in the text.
  const json j = primitive_to_json(
      prim("imm", ElementwiseAttrs{ScalarOp::kWhere, {{0, 0}, {-1, kNaN}, {-1, -kInf}}}, {"c"}));
  EXPECT_EQ(j["operands"][1]["value"], "nan");
  EXPECT_EQ(j["operands"][2]["value"], "-inf");
  EXPECT_EQ(j["operands"][0], (json{{"input", 0}}));
  EXPECT_EQ(reparse(primitive_to_json(prim(
                "z", ElementwiseAttrs{ScalarOp::kAdd, {{0, 0}, {-1, -0.0}}}, {"x"})))["operands"][1]
                .dump(),
            "{\"value\":-0.0}");
  EXPECT_EQ(primitive_to_json(prim("n", ElementwiseAttrs{ScalarOp::kNeg, {{-1, payload_nan}}},
                                   {}))["operands"][0]["value"],
            "nan:0x7ff0000000000123");
}

TEST(PrimJson, ValueInfoAndTensors) {
  const ValueInfo v{DType::kBFloat16, {1, 0, 7}};
  const json j = reparse(value_info_to_json(v));
  EXPECT_EQ(j, (json{{"dtype", "bfloat16"}, {"shape", {1, 0, 7}}}));
  const ValueInfo w = value_info_from_json(j);
  EXPECT_EQ(w.dtype, v.dtype);
  EXPECT_EQ(w.shape, v.shape);

  std::mt19937_64 rng(5);
  for (int d = 0; d <= static_cast<int>(DType::kBool); ++d) {
    const auto dtype = static_cast<DType>(d);
    for (const Shape& shape : {Shape{}, Shape{1}, Shape{2}, Shape{3, 5}, Shape{0, 4}, Shape{7}}) {
      const Tensor t = random_tensor(dtype, shape, rng);
      const Tensor u = tensor_from_json(reparse(tensor_to_json(t)));
      EXPECT_TRUE(same(t, u)) << dtype_name(dtype) << " " << shape_str(shape);
    }
  }
  EXPECT_TRUE(same(Tensor(), tensor_from_json(reparse(tensor_to_json(Tensor())))));
  // Raw bytes: base64 of the little-endian bytes.
  EXPECT_EQ(tensor_to_json(Tensor::from_int64(DType::kUInt8, {3}, {0x66, 0x6f, 0x6f}))["data"],
            "Zm9v");
  EXPECT_EQ(tensor_to_json(Tensor::from_int64(DType::kUInt8, {1}, {0x66}))["data"], "Zg==");
}

// ---- A hand-built graph of every kind, run by the interpreter -------------------------

PrimGraph every_kind_graph() {
  PrimGraph g;
  g.name = "every_kind";
  g.inputs = {"x"};
  auto type = [&](const std::string& t, DType dtype, Shape shape) {
    g.values[t] = {dtype, std::move(shape)};
  };
  auto add = [&](const std::string& out, PrimAttrs attrs, std::vector<std::string> inputs,
                 DType dtype, Shape shape, bool is_output = true) {
    g.prims.push_back(prim(out + "_p", std::move(attrs), std::move(inputs), {out}));
    type(out, dtype, std::move(shape));
    if (is_output) g.outputs.push_back(out);
  };
  const DType f32 = DType::kFloat32;
  type("x", f32, {2, 3, 4, 4});
  g.constants["w"] = Tensor::from_double(f32, {6, 1, 3, 3}, std::vector<double>(54, 0.125));
  type("w", f32, {6, 1, 3, 3});
  std::vector<double> b(60);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::sin(static_cast<double>(i));
  g.constants["b"] = Tensor::from_double(f32, {12, 5}, b);
  type("b", f32, {12, 5});
  g.constants["k"] = Tensor::from_int64(DType::kInt64, {1}, {3});
  type("k", DType::kInt64, {1});

  const Shape xs = {2, 3, 4, 4};
  add("e1", ElementwiseAttrs{ScalarOp::kAdd, {{0, 0}, {-1, 0.5}}}, {"x"}, f32, xs);
  add("cmp", ElementwiseAttrs{ScalarOp::kGreater, {{0, 0}, {-1, -0.0}}}, {"x"}, DType::kBool, xs);
  add("sel", ElementwiseAttrs{ScalarOp::kWhere, {{0, 0}, {1, 0}, {-1, -kInf}}}, {"cmp", "e1"}, f32,
      xs);
  add("nan", ElementwiseAttrs{ScalarOp::kMax, {{0, 0}, {-1, kNaN}}}, {"x"}, f32, xs);
  add("cast", ElementwiseAttrs{ScalarOp::kCast, {{0, 0}}}, {"e1"}, DType::kInt32, xs);
  add("fma", ElementwiseAttrs{ScalarOp::kMul, {{0, 0}, {1, 0}}}, {"e1", "x"}, f32, xs);
  add("red", ReduceAttrs{ReduceOp::kMax, {3}}, {"fma"}, f32, {2, 3, 4, 1});
  add("mean", ReduceAttrs{ReduceOp::kMean, {0, 2}}, {"x"}, f32, {1, 3, 1, 4});
  add("bc", BroadcastAttrs{}, {"red"}, f32, xs);
  add("tr", LayoutAttrs{layout::Transpose{{0, 2, 3, 1}}}, {"bc"}, f32, {2, 4, 4, 3}, false);
  add("rs", LayoutAttrs{layout::Reshape{}}, {"tr"}, f32, {8, 12});
  add("sl", LayoutAttrs{layout::Slice{{1, 11}, {2, -1}}}, {"rs"}, f32, {3, 12});
  add("padc", LayoutAttrs{layout::Pad{{1, -2}, {1, 1}, layout::PadMode::kConstant, 1.5}}, {"sl"},
      f32, {5, 10});
  add("pade", LayoutAttrs{layout::Pad{{1, -2}, {1, 1}, layout::PadMode::kEdge, 0}}, {"sl"}, f32,
      {5, 10});
  add("padr", LayoutAttrs{layout::Pad{{1, 1}, {1, 1}, layout::PadMode::kReflect, 0}}, {"sl"}, f32,
      {5, 14});
  add("pads", LayoutAttrs{layout::Pad{{0, 1}, {1, 2}, layout::PadMode::kConstant, -0.0}}, {"sl"},
      f32, {3, 25});
  add("cat", LayoutAttrs{layout::Concat{0, {0, 5}}}, {"padc", "pade"}, f32, {10, 10});
  add("gat", LayoutAttrs{layout::Gather{1, {9, 0, 3, 3}}}, {"cat"}, f32, {10, 4});
  add("tile", LayoutAttrs{layout::Tile{}}, {"gat"}, f32, {20, 8});
  add("win", LayoutAttrs{layout::Window{{2, 2}, {1, 1}, {1, 1}, -kInf}}, {"x"}, f32,
      {2, 3, 2, 2, 3, 3});
  add("mm", LinearAttrs{MatMulAttrs{}}, {"rs", "b"}, f32, {8, 5});
  add("conv", LinearAttrs{ConvAttrs{3, {1, 1}, {2, 1}, {2, 1}, {2, 1}}}, {"x", "w"}, f32,
      {2, 6, 4, 4});
  Node topk;
  topk.name = "topk";
  topk.op_type = "TopK";
  topk.inputs = {"rs", "k"};
  topk.outputs = {"tv", "ti"};
  Attribute axis;
  axis.kind = Attribute::Kind::kInt;
  axis.i = 1;
  topk.attributes["axis"] = axis;
  g.prims.push_back(prim("topk_p", OpaqueAttrs{topk}, {"rs", "k"}, {"tv", "ti"}));
  type("tv", f32, {8, 3});
  type("ti", DType::kInt64, {8, 3});
  g.outputs.push_back("tv");
  g.outputs.push_back("ti");
  return g;
}

TEST(PrimJson, HandBuiltGraphRunsIdentically) {
  const PrimGraph g = every_kind_graph();
  const PrimGraph h = round_trip(g);
  for (uint64_t seed : {1, 2, 3}) expect_same_outputs(g, h, seed);
}

// ---- Fission output of real operator graphs --------------------------------------------

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 37) % 23) - scale * 11;
  return v;
}

// "layout window", "linear conv", "opaque TopK", "elementwise exp", ...
std::string label(const Primitive& p) {
  std::string sub;
  if (const auto* e = std::get_if<ElementwiseAttrs>(&p.attrs)) sub = scalar_op_name(e->op);
  if (const auto* r = std::get_if<ReduceAttrs>(&p.attrs)) sub = reduce_op_name(r->op);
  if (const auto* l = std::get_if<LayoutAttrs>(&p.attrs)) {
    sub = layout_name(*l);
    if (const auto* pad = std::get_if<layout::Pad>(l))
      sub +=
          std::string(" ") + std::array{"constant", "reflect", "edge"}[static_cast<int>(pad->mode)];
  }
  if (const auto* l = std::get_if<LinearAttrs>(&p.attrs))
    sub = std::holds_alternative<MatMulAttrs>(*l) ? "matmul" : "conv";
  if (const auto* o = std::get_if<OpaqueAttrs>(&p.attrs)) sub = o->node.op_type;
  return std::string(prim_kind_name(p.kind())) + (sub.empty() ? "" : " " + sub);
}

// Fission of the model must contain every primitive in `expected` (by label); the graph
// round-trips exactly and runs identically.
void check_fission_round_trip(const kora_test::ModelBuilder& m,
                              const std::set<std::string>& expected) {
  const PrimGraph g = fission(kora_test::import_model(m));
  std::set<std::string> labels;
  for (const Primitive& p : g.prims) labels.insert(label(p));
  for (const std::string& l : expected) EXPECT_TRUE(labels.count(l)) << "no " << l;
  const PrimGraph h = round_trip(g);
  expect_same_outputs(g, h);
}

TEST(PrimJson, FissionConvPoolGraph) {
  kora_test::ModelBuilder m;
  m.input("x", {1, 4, 9, 9})
      .init_f32("w", {8, 2, 3, 3}, ramp(8 * 2 * 9, 0.05f))
      .init_f32("b", {8}, ramp(8, 0.1f))
      .init_f32("dw", {8, 1, 3, 3}, ramp(72, 0.03f));
  m.node("Conv", {"x", "w", "b"}, {"c"},
         {attr_is("pads", {1, 2, 1, 0}), attr_is("strides", {1, 2}), attr_i("group", 2),
          attr_is("dilations", {2, 1})},
         "conv");
  m.node("Conv", {"c", "dw"}, {"d"}, {attr_i("group", 8), attr_is("pads", {1, 1, 1, 1})}, "dw");
  m.node("Relu", {"d"}, {"r"}, {}, "relu");
  m.node(
      "MaxPool", {"r"}, {"mp"},
      {attr_is("kernel_shape", {2, 2}), attr_is("strides", {2, 2}), attr_is("pads", {0, 0, 1, 1})},
      "maxpool");
  m.node("AveragePool", {"r"}, {"ap"},
         {attr_is("kernel_shape", {3, 3}), attr_is("pads", {1, 1, 1, 1}),
          attr_i("count_include_pad", 0)},
         "avgpool");
  m.node("MaxPool", {"r"}, {"mpv", "mpi"}, {attr_is("kernel_shape", {2, 2})}, "maxpool_idx");
  m.node("GlobalAveragePool", {"mp"}, {"g"}, {}, "gap");
  m.output("g").output("ap").output("mpv").output("mpi", onnx::TensorProto::INT64);
  check_fission_round_trip(
      m, {"linear conv", "elementwise relu", "layout window", "reduce max", "reduce sum",
          "elementwise div", "opaque MaxPool", "reduce mean", "broadcast"});
}

TEST(PrimJson, FissionTransformerGraph) {
  kora_test::ModelBuilder m(20);  // Gelu
  m.input("x", {2, 5, 8})
      .init_f32("wq", {8, 8}, ramp(64, 0.02f))
      .init_f32("bq", {8}, ramp(8, 0.01f))
      .init_f32("gamma", {8}, ramp(8, 0.1f))
      .init_f32("beta", {8}, ramp(8, 0.07f))
      .init_i64("perm_shape", {4}, {2, 5, 2, 4});
  m.node("MatMul", {"x", "wq"}, {"q0"}, {}, "matmul");
  m.node("Add", {"q0", "bq"}, {"q"}, {}, "bias");
  m.node("Reshape", {"q", "perm_shape"}, {"q4"}, {}, "reshape");
  m.node("Transpose", {"q4"}, {"qt"}, {attr_is("perm", {0, 2, 1, 3})}, "transpose");
  m.node("Transpose", {"q4"}, {"kt"}, {attr_is("perm", {0, 2, 3, 1})}, "transpose_k");
  m.node("MatMul", {"qt", "kt"}, {"s"}, {}, "scores");
  m.node("Softmax", {"s"}, {"p"}, {attr_i("axis", -1)}, "softmax");
  m.node("MatMul", {"p", "qt"}, {"o"}, {}, "context");
  m.node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"},
         {attr_i("axis", -1), attr_f("epsilon", 1e-5f)}, "layernorm");
  m.node("Gelu", {"ln"}, {"ge"}, {attr_s("approximate", "tanh")}, "gelu");
  m.node("Erf", {"ln"}, {"er"}, {}, "erf");
  m.output("o").output("ge").output("er");
  check_fission_round_trip(
      m, {"linear matmul", "layout reshape", "layout transpose", "reduce max", "elementwise exp",
          "reduce sum", "elementwise div", "reduce mean", "elementwise rsqrt", "elementwise tanh",
          "elementwise erf", "broadcast"});
}

TEST(PrimJson, FissionLayoutAndOpaqueGraph) {
  kora_test::ModelBuilder m(13);
  m.input("x", {1, 2, 4, 6})
      .init_f32("roi", {0}, {})
      .init_f32("scales", {4}, {1, 1, 2, 1.5f})
      .init_i64("pads", {8}, {0, 0, 1, 2, 0, 0, 2, 1})
      .init_f32("padv", {}, {-0.5f})
      .init_i64("k", {1}, {3})
      .init_i64("starts", {2}, {1, 5})
      .init_i64("ends", {2}, {4, 0})
      .init_i64("axes", {2}, {2, 3})
      .init_i64("steps", {2}, {1, -2})
      .init_i64("idx", {3}, {2, 0, 1})
      .init_i64("reps", {4}, {1, 2, 1, 2});
  m.node("Resize", {"x", "roi", "scales"}, {"rn"}, {attr_s("mode", "nearest")}, "resize_nearest");
  m.node("Resize", {"x", "roi", "scales"}, {"rl"},
         {attr_s("mode", "linear"), attr_s("coordinate_transformation_mode", "half_pixel")},
         "resize_linear");
  m.node("Pad", {"x", "pads", "padv"}, {"pc"}, {attr_s("mode", "constant")}, "pad_constant");
  m.node("Pad", {"x", "pads"}, {"pr"}, {attr_s("mode", "reflect")}, "pad_reflect");
  m.node("Pad", {"x", "pads"}, {"pe"}, {attr_s("mode", "edge")}, "pad_edge");
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"sl"}, {}, "slice");
  m.node("Gather", {"x", "idx"}, {"ga"}, {attr_i("axis", 3)}, "gather");
  m.node("Tile", {"x", "reps"}, {"ti"}, {}, "tile");
  m.node("Concat", {"pc", "pr", "pe"}, {"cat"}, {attr_i("axis", 1)}, "concat");
  m.node("TopK", {"rl", "k"}, {"tv", "tix"}, {attr_i("axis", 3), attr_i("largest", 0)}, "topk");
  m.node("ArgMax", {"x"}, {"am"}, {attr_i("axis", 2), attr_i("keepdims", 0)}, "argmax");
  m.node("ReduceMean", {"cat"}, {"rm"}, {attr_is("axes", {1, 3})}, "reduce_mean");
  m.node("Clip", {"rn"}, {"cl"}, {}, "clip");
  m.output("rl").output("cl").output("rm").output("sl").output("ga").output("ti").output("tv");
  m.output("tix", onnx::TensorProto::INT64).output("am", onnx::TensorProto::INT64);
  check_fission_round_trip(
      m, {"layout gather", "layout pad constant", "layout pad reflect", "layout pad edge",
          "layout slice", "layout tile", "layout concat", "opaque TopK", "opaque ArgMax",
          "reduce mean", "elementwise mul", "elementwise add"});
}

// ---- Malformed input -------------------------------------------------------------------

// Expects kora::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << parts.at(0) << "'";
  } catch (const Error& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' does not mention '" << part << "'";
  }
}

TEST(PrimJson, CorruptPrimitivesThrowKoraError) {
  const json conv = primitive_to_json(
      prim("c1", LinearAttrs{ConvAttrs{1, {1, 1}, {1, 1}, {0, 0}, {0, 0}}}, {"x", "w"}));
  const json add =
      primitive_to_json(prim("a1", ElementwiseAttrs{ScalarOp::kAdd, {{0, 0}, {1, 0}}}, {"x", "y"}));
  const json tr = primitive_to_json(prim("t1", LayoutAttrs{layout::Transpose{{1, 0}}}, {"x"}));
  auto with = [](json j, const std::string& key, json v) {
    j[key] = std::move(v);
    return j;
  };
  auto without = [](json j, const std::string& key) {
    j.erase(key);
    return j;
  };
  auto from = [](const json& j) { return [j] { primitive_from_json(j); }; };

  expect_error(from(without(conv, "pads_end")), {"primitive 'c1'", "pads_end", "missing"});
  expect_error(from(without(tr, "name")), {"primitive", "name"});
  expect_error(from(with(tr, "perm", "0,1")), {"primitive 't1'", "perm", "string"});
  expect_error(from(with(tr, "perm", {0, 1.5})), {"perm", "integer"});
  expect_error(from(with(tr, "perm", {0, "1"})), {"perm"});
  expect_error(from(with(tr, "perm", {0, 18446744073709551615ull})), {"perm"});
  expect_error(from(with(tr, "op", "frobnicate")), {"primitive 't1'", "frobnicate"});
  expect_error(from(with(add, "op", "addd")), {"primitive 'a1'", "scalar op", "addd"});
  expect_error(from(with(add, "kind", "elementwize")), {"kind", "elementwize"});
  expect_error(from(with(add, "op", "where")), {"operands", "3"});
  expect_error(from(with(add, "operands", {json{{"input", 5}}, json{{"input", 0}}})),
               {"operands[0]", "input", "5"});
  expect_error(from(with(add, "operands", {json::object(), json{{"input", 0}}})), {"operands[0]"});
  expect_error(from(with(add, "operands", {json{{"value", "nope"}}, json{{"input", 0}}})),
               {"value", "nope"});
  expect_error(
      from(with(add, "operands", {json{{"value", "nan:0x0000000000000001"}}, json{{"input", 0}}})),
      {"value"});  // those bits are not a NaN
  expect_error(from(with(add, "outputs", {"a", "b"})), {"one output"});
  expect_error(from(with(add, "outputs", json::array())), {"outputs"});
  expect_error(from(with(conv, "group", 0)), {"group"});
  expect_error(from(with(conv, "op", "gemm")), {"gemm"});
  expect_error(
      from(with(primitive_to_json(prim("pd", LayoutAttrs{layout::Pad{{0}, {1}, {}, 0}}, {"x"})),
                "mode", "wrap")),
      {"primitive 'pd'", "mode", "wrap"});
  for (const json& bad : {json(nullptr), json(3), json("primitive"), json::array()})
    expect_error(from(bad), {"primitive"});

  // Opaque nodes and their attributes.
  const json op = primitive_to_json(prim("o1", OpaqueAttrs{node_with_every_attribute()}, {"a"}));
  json j = op;
  j["node"]["attributes"]["ints"]["kind"] = "intz";
  expect_error(from(j), {"primitive 'o1'", "attribute 'ints'", "intz"});
  j = op;
  j["node"]["attributes"]["t"].erase("tensors");
  expect_error(from(j), {"attribute 't'", "tensors"});
  j = op;
  j["node"]["attributes"]["t"]["tensors"][0]["data"] = "AAA";
  expect_error(from(j), {"attribute 't'", "base64"});
  j = op;
  j["node"]["attributes"]["t"]["tensors"][0]["data"] = "AAAA";
  expect_error(from(j), {"attribute 't'", "bytes"});
  j = op;
  j["node"]["attributes"]["s_bytes"]["s"] = json{{"base64", "!!!!"}};
  expect_error(from(j), {"attribute 's_bytes'", "s"});
  j = op;
  j["node"].erase("op_type");
  expect_error(from(j), {"primitive 'o1'", "node", "op_type"});
}

TEST(PrimJson, CorruptTypesAndTensorsThrowKoraError) {
  expect_error(
      [] {
        value_info_from_json(json{{"dtype", "float32"}, {"shape", {2, -1}}});
      },
      {"shape", "negative"});
  expect_error(
      [] {
        value_info_from_json(json{{"dtype", "float33"}, {"shape", {2}}});
      },
      {"float33"});
  expect_error([] { value_info_from_json(json{{"dtype", "float32"}, {"shape", 2}}); }, {"shape"});
  expect_error(
      [] {
        value_info_from_json(
            json{{"dtype", "float32"}, {"shape", {1LL << 40, 1LL << 40, 1LL << 40}}});
      },
      {"overflows"});
  expect_error([] { value_info_from_json(json{{"shape", {2}}}); }, {"dtype"});
  const json t = tensor_to_json(Tensor::from_double(DType::kFloat32, {2, 2}, {1, 2, 3, 4}));
  json bad = t;
  bad["shape"] = {2, 3};
  expect_error([&] { tensor_from_json(bad); }, {"data", "16 bytes", "[2, 3]"});
  bad = t;
  bad["data"] = "AAAAAAAAAAAAAAAAAAAAAA=";  // length not a multiple of 4
  expect_error([&] { tensor_from_json(bad); }, {"base64"});
  bad = t;
  bad["data"] = 12;
  expect_error([&] { tensor_from_json(bad); }, {"data"});
  bad = t;
  bad["shape"] = {1LL << 40, 4};  // far more than the data: no huge allocation, an error
  expect_error([&] { tensor_from_json(bad); }, {"data"});
  bad["shape"] = {1LL << 62, 4};  // element count overflows
  expect_error([&] { tensor_from_json(bad); }, {"shape", "overflows"});
}

TEST(PrimJson, InconsistentGraphsThrowKoraError) {
  const PrimGraph g = every_kind_graph();
  const json j = prim_graph_to_json(g);
  std::map<std::string, Tensor> weights = g.constants;

  auto missing = weights;
  missing.erase("w");
  expect_error([&] { prim_graph_from_json(j, missing); }, {"constant 'w'", "missing"});
  auto wrong = weights;
  wrong["b"] = Tensor::from_double(DType::kFloat32, {5, 12}, std::vector<double>(60, 0));
  expect_error([&] { prim_graph_from_json(j, wrong); }, {"constant 'b'", "[5, 12]"});
  auto extra = weights;
  extra["unused"] = Tensor(DType::kInt8, {3});
  EXPECT_EQ(prim_graph_from_json(j, extra).constants.size(), g.constants.size());

  json k = j;
  k["version"] = 2;
  expect_error([&] { prim_graph_from_json(k, weights); }, {"every_kind", "version"});
  k = j;
  std::swap(k["primitives"][0], k["primitives"][5]);
  expect_error([&] { prim_graph_from_json(k, weights); }, {"before"});
  k = j;
  k["values"].erase("sel");
  expect_error([&] { prim_graph_from_json(k, weights); }, {"'sel'", "type"});
  k = j;
  k["outputs"].push_back("nowhere");
  expect_error([&] { prim_graph_from_json(k, weights); }, {"'nowhere'", "never produced"});
  k = j;
  k["primitives"].push_back(k["primitives"][0]);
  expect_error([&] { prim_graph_from_json(k, weights); }, {"twice"});
  k = j;
  k["primitives"][3]["outputs"] = {"e1"};
  k["primitives"][3]["name"] = "dup";
  expect_error([&] { prim_graph_from_json(k, weights); }, {"'e1'", "already"});
  k = j;
  k["primitives"][2].erase("kind");
  expect_error([&] { prim_graph_from_json(k, weights); }, {"sel_p", "kind"});
  k = j;
  k["primitives"][2] = 7;
  expect_error([&] { prim_graph_from_json(k, weights); }, {"primitives[2]"});
}

// Every value anywhere in a graph's JSON replaced by values of other types, and every
// object key removed: each result is read either successfully or with kora::Error.
TEST(PrimJson, MutatedJsonNeverEscapesAsAnotherException) {
  const PrimGraph g = every_kind_graph();
  const json original = prim_graph_to_json(g);
  const json flat = original.flatten();
  const std::vector<json> replacements = {json(nullptr), json(-1),       json(1.5),
                                          json("x"),     json::array(),  json::object(),
                                          json(true),    json(1LL << 62)};
  int mutations = 0, errors = 0;
  auto attempt = [&](const json& mutated) {
    ++mutations;
    try {
      prim_graph_from_json(mutated, g.constants);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-kora exception: " << e.what();
    }
  };
  for (const auto& item : flat.items()) {
    const json::json_pointer ptr(item.key());
    for (const json& r : replacements) {
      json mutated = original;
      mutated[ptr] = r;
      attempt(mutated);
    }
    // Remove the innermost key (or truncate the array) holding this leaf.
    json mutated = original;
    json& parent = mutated[ptr.parent_pointer()];
    if (parent.is_object())
      parent.erase(ptr.back());
    else if (parent.is_array())
      parent.erase(parent.size() - 1);
    attempt(mutated);
  }
  EXPECT_GT(mutations, 1000);
  EXPECT_GT(errors, mutations / 2);
}

}  // namespace
}  // namespace kora
