// CPU code generation (include/kora/cpu_codegen.h) against the reference interpreter: on
// 15 random float32 graphs of elementwise and broadcast primitives (shapes [2, 3, 5] and
// ones like [1, 3, 1], computed on and broadcast up; immediate operands, shared values),
// every candidate kernel the generator supports is generated, all compiled into one
// library, run on random inputs, and each written tensor compared with run_primitive()
// applied member by member. Candidates with other primitives are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/cpu_codegen.h"
#include "kora/cpu_compile.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;

const Shape kFull = {2, 3, 5};

PrimGraph random_graph(std::mt19937& rng) {
  PrimGraph g;
  g.name = "random";
  std::map<Shape, std::vector<std::string>> pool;  // tensors by shape
  int counter = 0;
  auto fresh = [&](const std::string& prefix) { return prefix + std::to_string(counter++); };
  auto add_input = [&](const Shape& shape, bool constant) {
    const std::string name = fresh(constant ? "w" : "x");
    g.values[name] = {DType::kFloat32, shape};
    if (constant) {
      Tensor t(DType::kFloat32, shape);
      std::uniform_real_distribution<double> u(-2, 2);
      for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, u(rng));
      g.constants[name] = t;
    } else {
      g.inputs.push_back(name);
    }
    pool[shape].push_back(name);
    return name;
  };
  auto add_prim = [&](PrimAttrs attrs, std::vector<std::string> inputs, const Shape& shape) {
    Primitive p;
    p.name = fresh("p");
    p.origin = p.name;
    p.attrs = std::move(attrs);
    p.inputs = std::move(inputs);
    p.outputs = {fresh("t")};
    g.values[p.outputs[0]] = {DType::kFloat32, shape};
    g.prims.push_back(p);
    pool[shape].push_back(p.outputs[0]);
  };
  auto any_of_shape = [&](const Shape& shape) {
    const std::vector<std::string>& v = pool[shape];
    return v[rng() % v.size()];
  };
  add_input(kFull, false);
  // Every float scalar function the generator writes (NaN and inf results included:
  // both sides must agree on them too).
  const ScalarOp unary[] = {
      ScalarOp::kNeg,     ScalarOp::kAbs,   ScalarOp::kTanh,       ScalarOp::kErf,
      ScalarOp::kSigmoid, ScalarOp::kRelu,  ScalarOp::kExp,        ScalarOp::kSoftplus,
      ScalarOp::kFloor,   ScalarOp::kSign,  ScalarOp::kIdentity,   ScalarOp::kLog,
      ScalarOp::kSqrt,    ScalarOp::kRsqrt, ScalarOp::kReciprocal, ScalarOp::kCeil,
      ScalarOp::kRound,   ScalarOp::kSin,   ScalarOp::kCos,        ScalarOp::kCast};
  const ScalarOp binary[] = {ScalarOp::kAdd, ScalarOp::kSub,  ScalarOp::kMul,
                             ScalarOp::kDiv, ScalarOp::kMax,  ScalarOp::kMin,
                             ScalarOp::kMod, ScalarOp::kFmod, ScalarOp::kPow};
  const int prims = 4 + rng() % 9;
  while (static_cast<int>(g.prims.size()) < prims) {
    const int r = rng() % 10;
    // Elementwise work happens on the full shape mostly, sometimes on a small shape
    // (then broadcast up, so members of a kernel have different shapes).
    std::vector<Shape> small;
    for (const auto& [shape, names] : pool)
      if (shape != kFull) small.push_back(shape);
    if (r < 2 || (r < 3 && small.empty())) {
      Shape shape = kFull;
      for (int64_t& d : shape)
        if (rng() % 2) d = 1;
      add_input(shape, rng() % 2);
      continue;
    }
    if (r < 4 && !small.empty()) {
      add_prim(BroadcastAttrs{}, {any_of_shape(small[rng() % small.size()])}, kFull);
      continue;
    }
    const Shape shape = !small.empty() && rng() % 4 == 0 ? small[rng() % small.size()] : kFull;
    if (r < 6) {
      add_prim(ElementwiseAttrs{unary[rng() % std::size(unary)], {Operand{0, 0}}},
               {any_of_shape(shape)}, shape);
    } else {
      ElementwiseAttrs e{binary[rng() % std::size(binary)], {Operand{0, 0}, Operand{1, 0}}};
      if (rng() % 4 == 0) {
        e.operands[1] = Operand{-1, 0.75};  // immediate
        add_prim(e, {any_of_shape(shape)}, shape);
      } else {
        add_prim(e, {any_of_shape(shape), any_of_shape(shape)}, shape);
      }
    }
  }
  g.outputs = {g.prims.back().output()};
  if (g.prims.size() > 3) g.outputs.push_back(g.prims[g.prims.size() / 2].output());
  return g;
}

bool close(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want));
}

TEST(CpuCodegen, EveryCandidateMatchesTheInterpreter) {
  std::mt19937 rng(2026);
  kora_test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.file("kernels");
  int kernels = 0, multi_output = 0;
  for (int t = 0; t < 15; ++t) {
    const PrimGraph g = random_graph(rng);
    const KernelDag dag = kernel_dag_of(g);
    CandidateOptions co;
    co.max_size = 6;
    const std::vector<Candidate> candidates = enumerate_candidates(dag, co);
    std::string source = cpu_codegen_prelude();
    std::vector<GeneratedKernel> generated;
    std::vector<const Candidate*> which;
    for (const Candidate& c : candidates) {
      ASSERT_TRUE(cpu_codegen_supports(g, dag, c));
      generated.push_back(
          generate_cpu_kernel(g, dag, c, "kernel" + std::to_string(generated.size())));
      source += generated.back().source;
      which.push_back(&c);
    }
    const CompileResult lib = compile_shared(source, options);
    for (size_t k = 0; k < generated.size(); ++k) {
      const GeneratedKernel& gk = generated[k];
      // Random inputs (constants as they are), then the reference member by member.
      std::map<std::string, Tensor> values;
      std::uniform_real_distribution<double> u(-3, 3);
      for (const std::string& r : gk.reads) {
        if (const Tensor* c = g.constant(r)) {
          values[r] = *c;
          continue;
        }
        Tensor x(DType::kFloat32, g.value(r).shape);
        for (int64_t i = 0; i < x.numel(); ++i) set_element(x, i, u(rng));
        values[r] = x;
      }
      for (int v : which[k]->members) {
        const Primitive& p = g.prims[dag.prim[v]];
        std::vector<const Tensor*> in;
        for (const std::string& i : p.inputs) in.push_back(&values.at(i));
        values[p.output()] = run_primitive(g, p, in).at(0);
      }
      std::vector<const float*> in;
      for (const std::string& r : gk.reads)
        in.push_back(reinterpret_cast<const float*>(values.at(r).bytes()));
      std::vector<std::vector<float>> out_buffers;
      std::vector<float*> out;
      for (const std::string& w : gk.writes)
        out_buffers.emplace_back(numel(g.value(w).shape), -7.0f);
      for (auto& b : out_buffers) out.push_back(b.data());
      using Fn = void (*)(const float* const*, float* const*);
      reinterpret_cast<Fn>(lib.library->symbol(gk.symbol))(in.data(), out.data());
      for (size_t w = 0; w < gk.writes.size(); ++w) {
        const Tensor& want = values.at(gk.writes[w]);
        const float* ref = reinterpret_cast<const float*>(want.bytes());
        for (int64_t i = 0; i < want.numel(); ++i)
          ASSERT_TRUE(close(out_buffers[w][i], ref[i]))
              << "graph " << t << " kernel " << k << " output " << gk.writes[w] << " element " << i
              << ": " << out_buffers[w][i] << " vs " << ref[i] << "\n"
              << gk.source;
      }
      ++kernels;
      multi_output += gk.writes.size() > 1;
    }
  }
  EXPECT_GT(kernels, 200);
  EXPECT_GT(multi_output, 20);
  std::printf("[ info     ] %d kernels (%d with several outputs) match the interpreter\n", kernels,
              multi_output);
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
  g.prims = {mm, relu, less};
  g.outputs = {"y", "m"};
  const KernelDag dag = kernel_dag_of(g);
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {0, 1})));  // linear
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {1})));
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {2})));  // bool output
  EXPECT_THROW(generate_cpu_kernel(g, dag, make_candidate(dag, {0, 1}), "k"), Error);
}

}  // namespace
