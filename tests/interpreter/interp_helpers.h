// Test helpers for the interpreter tests: hand-built primitive graphs of one primitive
// (run through kora::interpret), deterministic pseudo-random data, and ONNX nodes for the
// opaque operators.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kora/interpreter.h"
#include "kora/primitive.h"

namespace kora_interp_test {

using kora::DType;
using kora::Shape;
using kora::Tensor;

// Deterministic values in [lo, hi) (a fixed linear congruential generator).
// Row-major coordinates of flat index i in `shape`, and back.
inline std::vector<int64_t> coords(int64_t i, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) c[d] = i % shape[d], i /= shape[d];
  return c;
}

inline int64_t flat(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d) f = f * shape[d] + c[d];
  return f;
}

inline std::vector<double> random_values(int64_t n, double lo, double hi, uint32_t seed = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<double>(s >> 11) / 9007199254740992.0;
  }
  return v;
}

inline Tensor random_tensor(DType dtype, Shape shape, double lo = -1, double hi = 1,
                            uint32_t seed = 1) {
  return Tensor::from_double(dtype, shape, random_values(kora::numel(shape), lo, hi, seed));
}

inline Tensor f32(Shape shape, const std::vector<double>& v) {
  return Tensor::from_double(DType::kFloat32, std::move(shape), v);
}
inline Tensor i64(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::from_int64(DType::kInt64, std::move(shape), v);
}

// A graph whose inputs x0, x1, ... are the given tensors, one primitive `p` producing the
// outputs y0, y1, ... of the given types, all of them graph outputs.
inline kora::PrimGraph one_prim_graph(kora::PrimAttrs attrs, const std::vector<Tensor>& inputs,
                                      const std::vector<kora::ValueInfo>& outputs) {
  kora::PrimGraph g;
  g.name = "test";
  kora::Primitive p;
  p.name = "p";
  p.origin = "node";
  p.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    g.inputs.push_back(name);
    g.values[name] = {inputs[i].dtype(), inputs[i].shape()};
    p.inputs.push_back(name);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = "y" + std::to_string(i);
    g.outputs.push_back(name);
    g.values[name] = outputs[i];
    p.outputs.push_back(name);
  }
  g.prims.push_back(std::move(p));
  return g;
}

inline std::map<std::string, Tensor> input_map(const std::vector<Tensor>& inputs) {
  std::map<std::string, Tensor> m;
  for (size_t i = 0; i < inputs.size(); ++i) m["x" + std::to_string(i)] = inputs[i];
  return m;
}

// Runs one primitive through kora::interpret and returns its outputs.
inline std::vector<Tensor> run_prim(kora::PrimAttrs attrs, const std::vector<Tensor>& inputs,
                                    const std::vector<kora::ValueInfo>& outputs) {
  const kora::PrimGraph g = one_prim_graph(std::move(attrs), inputs, outputs);
  std::map<std::string, Tensor> result = kora::interpret(g, input_map(inputs));
  std::vector<Tensor> out;
  for (size_t i = 0; i < outputs.size(); ++i) out.push_back(result.at("y" + std::to_string(i)));
  return out;
}

inline Tensor run1(kora::PrimAttrs attrs, const std::vector<Tensor>& inputs, DType dtype,
                   Shape shape) {
  return run_prim(std::move(attrs), inputs, {{dtype, std::move(shape)}}).at(0);
}

// An ONNX node for an opaque primitive: inputs x0, x1, ... (an empty name is an omitted
// input), outputs y0, y1, ...
inline kora::Node onnx_node(const std::string& op_type, const std::vector<std::string>& inputs,
                            size_t outputs) {
  kora::Node n;
  n.name = op_type + "_0";
  n.op_type = op_type;
  n.inputs = inputs;
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back("y" + std::to_string(i));
  return n;
}

inline void set_int(kora::Node& n, const std::string& key, int64_t v) {
  kora::Attribute a;
  a.kind = kora::Attribute::Kind::kInt;
  a.i = v;
  n.attributes[key] = a;
}
inline void set_ints(kora::Node& n, const std::string& key, const std::vector<int64_t>& v) {
  kora::Attribute a;
  a.kind = kora::Attribute::Kind::kInts;
  a.ints = v;
  n.attributes[key] = a;
}
inline void set_floats(kora::Node& n, const std::string& key, const std::vector<double>& v) {
  kora::Attribute a;
  a.kind = kora::Attribute::Kind::kFloats;
  a.floats = v;
  n.attributes[key] = a;
}
inline void set_string(kora::Node& n, const std::string& key, const std::string& v) {
  kora::Attribute a;
  a.kind = kora::Attribute::Kind::kString;
  a.s = v;
  n.attributes[key] = a;
}

// Expects `t` to hold `expected` within abs + rel * |expected| (NaN matches NaN).
inline void expect_near(const Tensor& t, const std::vector<double>& expected, double abs = 1e-6,
                        double rel = 1e-6) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double got = t.double_at(i), want = expected[static_cast<size_t>(i)];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << ": got " << got << ", want NaN";
    } else if (std::isinf(want)) {
      EXPECT_EQ(got, want) << "element " << i;
    } else {
      EXPECT_NEAR(got, want, abs + rel * std::fabs(want)) << "element " << i;
    }
  }
}

}  // namespace kora_interp_test
