// CPU code generation (src/cpu/codegen.h) against the reference interpreter: on
// 6 random float32 graphs of elementwise and broadcast primitives (shapes [2, 3, 5] and
// ones like [1, 3, 1], computed on and broadcast up; immediate operands, shared values,
// NaN and inf results), every candidate kernel x schedule goes through
// tests/cpu/codegen_harness.h's check. Opaque primitives and float16 are refused.
#include "cpu/codegen.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "cpu/codegen_graphs.h"
#include "cpu/codegen_harness.h"
#include "cpu/compile.h"
#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;

// Every candidate of g of at most `checked` members checked against the interpreter (at
// least `kernels` of them generated), then every candidate of any size, for a look at its
// code.
std::vector<Candidate> checked_candidates(const PrimGraph& g, const KernelDag& dag,
                                          std::mt19937& rng, int kernels, int checked = 4) {
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(g, checked, rng, stats);
  EXPECT_GE(stats.kernels, kernels);
  return enumerate_candidates(dag, CandidateOptions{});
}

TEST(CpuCodegen, EveryCandidateMatchesTheInterpreter) {
  std::mt19937 rng(2026);
  kora_codegen_test::CheckStats stats;
  for (int t = 0; t < 6; ++t) {
    const PrimGraph g = kora_codegen_test::random_elementwise_graph(rng);
    kora_codegen_test::check_graph(g, 6, rng, stats);
  }
  EXPECT_GT(stats.kernels, 90);
  EXPECT_GT(stats.multi_output, 10);
  std::printf("[ info     ] %d kernels (%d with several outputs) match the interpreter\n",
              stats.kernels, stats.multi_output);
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
  g.values["d"] = {DType::kFloat16, {4, 4}};
  Primitive cast;
  cast.name = "cast";
  cast.attrs = ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}};
  cast.inputs = {"a"};
  cast.outputs = {"d"};
  g.values["v"] = {DType::kFloat32, {4, 2}};
  g.values["ix"] = {DType::kInt64, {4, 2}};
  Primitive top;
  top.name = "top";
  OpaqueAttrs op;
  op.node.op_type = "TopK";
  top.attrs = op;
  top.inputs = {"b"};
  top.outputs = {"v", "ix"};
  g.prims = {mm, relu, less, cast, top};
  g.outputs = {"y", "m", "d", "v"};
  const KernelDag dag = kernel_dag_of(g);
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {0, 1})));
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {1})));
  EXPECT_TRUE(cpu_codegen_supports(g, dag, make_candidate(dag, {2})));   // bool output
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {3})));  // float16
  EXPECT_FALSE(cpu_codegen_supports(g, dag, make_candidate(dag, {4})));  // opaque
  try {
    generate_cpu_kernel(g, dag, make_candidate(dag, {4}), "k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'top'"), std::string::npos) << e.what();
  }
}

}  // namespace

// x^n with an immediate integer exponent is written as products (a reciprocal for n < 0),
// not as a pow call, and matches the interpreter's pow on negative, zero, NaN and inf
// inputs; a fractional exponent still calls pow.
TEST(CpuCodegen, SmallIntegerPowersAreProductsThatMatchTheInterpreter) {
  std::mt19937 rng(7);
  kora_codegen_test::GraphBuilder b(rng);
  const Shape s = {4, 33};
  const std::string x = b.input(DType::kFloat32, s, false, -3, 3);
  // Bases: x, sqrt(x) (NaN where x < 0), x - x (zeros) and 1 / (x - x) (inf).
  const std::string nan =
      b.prim(ElementwiseAttrs{ScalarOp::kSqrt, {Operand{0, 0}}}, {x}, DType::kFloat32, s);
  const std::string zero = b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{0, 0}}},
                                  {x}, DType::kFloat32, s);
  const std::string inf =
      b.prim(ElementwiseAttrs{ScalarOp::kReciprocal, {Operand{0, 0}}}, {zero}, DType::kFloat32, s);
  std::vector<std::string> outs;
  const double exponents[] = {-2, -1, 0, 1, 2, 3, 4, 2.5};
  for (const std::string& base : {x, nan, zero, inf})
    for (double n : exponents)
      outs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kPow, {Operand{0, 0}, Operand{-1, n}}},
                            {base}, DType::kFloat32, s));
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 1, rng, stats);
  EXPECT_GE(stats.kernels, static_cast<int>(outs.size()));

  const KernelDag dag = kernel_dag_of(b.g);
  int products = 0;
  for (const Candidate& c : enumerate_candidates(dag, CandidateOptions{})) {
    if (c.members.size() != 1) continue;
    const Primitive& p = b.g.prims[dag.prim[c.members[0]]];
    const auto* e = std::get_if<ElementwiseAttrs>(&p.attrs);
    if (!e || e->op != ScalarOp::kPow) continue;
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k").source;
    const bool integer = e->operands[1].value == std::round(e->operands[1].value);
    EXPECT_EQ(source.find("kora_pow(") == std::string::npos, integer) << source;
    products += integer;
  }
  EXPECT_EQ(products, 28);
}

// Reduced dims next to one another, read in order (directly, through elementwise members
// and broadcasts of per-row values), are one loop over their elements (x [2, 6, 5, 7]
// reduced over its 5x7 planes: a loop of 35); a reduction reading x through a transpose in
// the same kernel keeps a loop per dim. Every kernel, fused or not, against the interpreter: sums,
// means, max and min (NaN kept), and reductions over the channels and planes at once.
TEST(CpuCodegen, AdjacentReducedDimsAreOneLoopThatMatchesTheInterpreter) {
  std::mt19937 rng(11);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {2, 6, 5, 7}, per_row = {2, 6, 1, 1};
  const std::string x = b.input(F, s), m = b.input(F, per_row);
  const std::string mb = b.prim(BroadcastAttrs{}, {m}, F, s);
  const std::string d =
      b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}}, {x, mb}, F, s);
  const std::string sq =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{0, 0}}}, {d}, F, s);
  const std::string nan =
      b.prim(ElementwiseAttrs{ScalarOp::kSqrt, {Operand{0, 0}}}, {x}, F, s);  // NaN where x < 0
  std::vector<std::string> outs;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin})
    outs.push_back(b.prim(ReduceAttrs{op, {2, 3}}, {sq}, F, per_row));
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kMax, {2, 3}}, {nan}, F, per_row));
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kMean, {1, 2, 3}}, {x}, F, {2, 1, 1, 1}));
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kSum, {1, 2}}, {x}, F, {2, 1, 1, 7}));
  const std::string xt = b.prim(LayoutAttrs{layout::Transpose{{0, 1, 3, 2}}}, {x}, F, {2, 6, 7, 5});
  outs.push_back(b.prim(ReduceAttrs{ReduceOp::kSum, {2, 3}}, {xt}, F, per_row));
  b.g.outputs = outs;
  const KernelDag dag = kernel_dag_of(b.g);
  int flat = 0, nested = 0;
  for (const Candidate& c : checked_candidates(b.g, dag, rng, 20)) {
    const Primitive& last = b.g.prims[dag.prim[c.members.back()]];
    const auto* r = std::get_if<ReduceAttrs>(&last.attrs);
    if (!r || r->axes != std::vector<int64_t>{2, 3} || !cpu_codegen_supports(b.g, dag, c)) continue;
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k").source;
    const bool transposed = c.members.size() > 1 && last.inputs[0] == xt;  // reads x through it
    EXPECT_EQ(source.find(" < 35; ++") != std::string::npos, !transposed) << source;
    (transposed ? nested : flat)++;
  }
  EXPECT_GE(flat, 5);
  EXPECT_GE(nested, 1);
}

// A reduction over a leading dim whose kept dims after it hold more than a row of 4096
// accumulators (a split attention: x [2, 3, 40, 70] weighted per channel and summed over
// its radix of 2, then pooled): a row of the trailing 40 x 70 accumulators per channel,
// the channels an outer loop, not a reduction of 2 values per output element. Every
// kernel against the interpreter; the sum's kernels keep the row.
TEST(CpuCodegen, ReductionsOverALeadingDimOfLongRowsKeepARowOfAccumulators) {
  std::mt19937 rng(21);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {2, 3, 40, 70}, per_channel = {2, 3, 1, 1}, summed = {1, 3, 40, 70};
  const std::string x = b.input(F, s), a = b.input(F, per_channel);
  const std::string ab = b.prim(BroadcastAttrs{}, {a}, F, s);
  const std::string w =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {x, ab}, F, s);
  const std::string sum = b.prim(ReduceAttrs{ReduceOp::kSum, {0}}, {w}, F, summed);
  const std::string pooled = b.prim(ReduceAttrs{ReduceOp::kMean, {2, 3}}, {sum}, F, {1, 3, 1, 1});
  const std::string most = b.prim(ReduceAttrs{ReduceOp::kMax, {0}}, {x}, F, summed);
  b.g.outputs = {sum, pooled, most};
  const KernelDag dag = kernel_dag_of(b.g);
  int rows = 0;
  for (const Candidate& c : checked_candidates(b.g, dag, rng, 6)) {
    bool radix = false;
    for (int m : c.members) {
      const auto* r = std::get_if<ReduceAttrs>(&b.g.prims[dag.prim[m]].attrs);
      radix = radix || (r && r->axes == std::vector<int64_t>{0});
    }
    if (!radix || !cpu_codegen_supports(b.g, dag, c)) continue;
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k").source;
    EXPECT_NE(source.find("[2800];"), std::string::npos) << source;  // the row
    ++rows;
  }
  EXPECT_GE(rows, 3);
}

// Phases that loop alike over leading dims that no member reduces share those loops:
// a softmax over rows of 33 ([2, 8, 33]: 16 rows) is one parallel loop over the rows, each
// row's max, sum of exponentials and quotients computed in turn (each along the row in
// vectors), the exponentials kept in a row buffer for the quotients, which multiply by the
// sum's reciprocal; their sum in float. Not
// shared: a reduction over the middle dim, or rows read through a transpose. Every kernel against
// the interpreter.
TEST(CpuCodegen, PhasesOverTheSameRowsShareTheirLoopsAndMatchTheInterpreter) {
  std::mt19937 rng(17);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {2, 8, 33}, rows = {2, 8, 1};
  const std::string x = b.input(F, s);
  auto op = [&](ScalarOp o, std::vector<std::string> in) {
    std::vector<Operand> operands;
    for (size_t k = 0; k < in.size(); ++k) operands.push_back(Operand{static_cast<int>(k), 0});
    return b.prim(ElementwiseAttrs{o, operands}, in, F, s);
  };
  const std::string m = b.prim(ReduceAttrs{ReduceOp::kMax, {2}}, {x}, F, rows);
  const std::string e =
      op(ScalarOp::kExp, {op(ScalarOp::kSub, {x, b.prim(BroadcastAttrs{}, {m}, F, s)})});
  const std::string sum = b.prim(ReduceAttrs{ReduceOp::kSum, {2}}, {e}, F, rows);
  const std::string y = op(ScalarOp::kDiv, {e, b.prim(BroadcastAttrs{}, {sum}, F, s)});
  // a sum over the middle dim, and one of rows read through a transpose
  const std::string cols = b.prim(ReduceAttrs{ReduceOp::kSum, {1}}, {e}, F, {2, 1, 33});
  const std::string xt = b.prim(LayoutAttrs{layout::Transpose{{1, 0, 2}}}, {x}, F, {8, 2, 33});
  const std::string tm = b.prim(ReduceAttrs{ReduceOp::kMax, {2}}, {xt}, F, {8, 2, 1});
  const std::string ty = b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}},
                                {xt, b.prim(BroadcastAttrs{}, {tm}, F, {8, 2, 33})}, F, {8, 2, 33});
  b.g.outputs = {y, cols, ty};
  const KernelDag dag = kernel_dag_of(b.g);
  int shared = 0, whole_softmax = 0, alone = 0;
  for (const Candidate& c : checked_candidates(b.g, dag, rng, 40, 7)) {
    if (!cpu_codegen_supports(b.g, dag, c)) continue;
    std::set<std::string> outs;
    for (int v : c.members) outs.insert(b.g.prims[dag.prim[v]].output());
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k").source;
    const bool shares = source.find("shared outer loops over [2, 8]") != std::string::npos;
    if (outs.count(cols) || outs.count(xt)) {
      EXPECT_FALSE(shares) << source;
      ++alone;
      continue;
    }
    shared += shares;
    if (outs.count(m) && outs.count(sum) && outs.count(y)) {
      ++whole_softmax;
      EXPECT_TRUE(shares) << source;
      EXPECT_NE(source.find("float row"), std::string::npos) << source;  // the exponentials
      EXPECT_EQ(source.find("double acc"), std::string::npos) << source;
      // each row's max and sum vectorized along the row (not across rows: those are shared)
      EXPECT_NE(source.find("#pragma omp simd reduction(max:"), std::string::npos) << source;
      EXPECT_NE(source.find("#pragma omp simd reduction(+:"), std::string::npos) << source;
      EXPECT_EQ(source.find("#pragma omp parallel"), source.rfind("#pragma omp parallel"))
          << source;  // one parallel region
      // the quotients multiply by the sum's reciprocal (once per row), dividing nothing else
      EXPECT_NE(source.find(" * (1.0f / "), std::string::npos) << source;
      EXPECT_FALSE(std::regex_search(source, std::regex(R"(v[0-9]+ / v[0-9]+\))"))) << source;
    }
  }
  EXPECT_GE(whole_softmax, 1);
  EXPECT_GE(shared, 3);
  EXPECT_GE(alone, 3);
}

// A pointwise kernel's trailing dims read in order (directly, or through broadcasts of
// per-channel values) are one loop: x [2, 6, 7, 7] + a channel bias, then ReLU and GELU's
// x / sqrt(2), loops over 49 elements per channel (588 without the bias), not 7 of 7; a
// kernel computing a row
// [1, 1, 1, 7] broadcast over the plane, or reading x through a transpose, keeps a loop
// per dim. Division by a
// constant is a multiply by its reciprocal (by a power of two, left to the compiler).
// Every kernel, fused or not, against the interpreter.
TEST(CpuCodegen, TrailingDimsReadInOrderAreOneLoopThatMatchesTheInterpreter) {
  std::mt19937 rng(13);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {2, 6, 7, 7};
  const std::string x = b.input(F, s), bias = b.input(F, {1, 6, 1, 1}),
                    row = b.input(F, {1, 1, 1, 7});
  const std::string bb = b.prim(BroadcastAttrs{}, {bias}, F, s);
  const std::string rb = b.prim(BroadcastAttrs{}, {row}, F, s);
  const std::string y =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {x, bb}, F, s);
  const std::string relu = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {y}, F, s);
  const std::string scaled = b.prim(
      ElementwiseAttrs{ScalarOp::kDiv, {Operand{0, 0}, Operand{-1, std::sqrt(2.0)}}}, {y}, F, s);
  const std::string halved =
      b.prim(ElementwiseAttrs{ScalarOp::kDiv, {Operand{0, 0}, Operand{-1, 2.0}}}, {y}, F, s);
  const std::string mixed =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {y, rb}, F, s);
  const std::string xt = b.prim(LayoutAttrs{layout::Transpose{{0, 1, 3, 2}}}, {x}, F, s);
  const std::string turned =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {xt, bb}, F, s);
  b.g.outputs = {relu, scaled, halved, mixed, turned};
  const KernelDag dag = kernel_dag_of(b.g);
  int one_loop = 0, nested = 0;
  for (const Candidate& c : checked_candidates(b.g, dag, rng, 10)) {
    if (!cpu_codegen_supports(b.g, dag, c)) continue;
    std::set<std::string> outs;
    for (int v : c.members) outs.insert(b.g.prims[dag.prim[v]].output());
    // computes through the transpose or the row's broadcast (not reads their results)
    const bool per_dim = outs.count(xt) || outs.count(rb);
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k").source;
    if (outs.count(scaled)) {
      EXPECT_EQ(source.find(" / (1.414"), std::string::npos) << source;
      EXPECT_NE(source.find(" * (7.071067"), std::string::npos) << source;
    }
    if (outs.count(halved)) {
      EXPECT_NE(source.find(" / (2.0"), std::string::npos) << source;
    }
    if (outs.count(bb) && !outs.count(y)) continue;  // the broadcast alone: rows of 7
    EXPECT_EQ(source.find(" < 7; ++") != std::string::npos, per_dim) << source;
    (per_dim ? nested : one_loop)++;
  }
  EXPECT_GE(one_loop, 4);
  EXPECT_GE(nested, 2);
}
