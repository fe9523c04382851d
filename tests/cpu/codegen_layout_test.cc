// CPU code generation of layout and reduce primitives against the interpreter: random
// float32 graphs chaining every layout map (transpose, reshape, slice with negative
// steps, pad in each mode with strides and negative begins, concat, gather, tile,
// window), every reduce op over random axes, and elementwise/broadcast members between
// them; every candidate x schedule checked (tests/cpu/codegen_harness.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <regex>

#include "cpu/codegen_graphs.h"
#include "cpu/codegen_harness.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

// Every map kind and pad mode at least once, each read by an elementwise member: a graph
// of independent chains x -> layout -> exp.
TEST(CpuCodegenLayout, EachMapAndPadMode) {
  std::mt19937 rng(9);
  GraphBuilder b(rng);
  const std::string x = b.input(DType::kFloat32, {2, 3, 4, 5});
  std::vector<std::string> outs;
  auto chain = [&](const std::string& y) {
    outs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {y}, DType::kFloat32,
                          b.info(y).shape));
  };
  for (int kind = 0; kind < 8; ++kind) chain(kora_codegen_test::random_layout(b, x, rng, kind, x));
  for (auto mode :
       {layout::PadMode::kConstant, layout::PadMode::kReflect, layout::PadMode::kEdge}) {
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{2, 3}, {-1, 2}, {3, -1}}) {
      layout::Pad p;
      p.mode = mode;
      p.value = -0.5;
      p.begin = {0, begin, 1, begin};
      p.stride = {1, 1, 1, 1};
      Shape o = {2, 3 + begin + end, 4 + 1 + 1, 5 + begin + end};
      if (mode == layout::PadMode::kConstant && begin == 3) p.stride[3] = 2, o[3] += 4;
      chain(b.prim(LayoutAttrs{p}, {x}, DType::kFloat32, o));
    }
  }
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 2, rng, stats);
  EXPECT_GE(stats.kernels, 2 * 17);
}

// A dense block's concats: several inputs of other sizes along the channel axis (one of
// a single channel), then a per-channel scale and shift and a relu, as DenseNet's
// batch norm after each concat; and a concat along the last axis read through a
// transpose, so the pointwise loop's coordinate is not the concat's. Every candidate
// matches the interpreter, and the kernel of the whole channel concat and what follows
// reads each input in a loop of its own, with no test of the channel per element.
TEST(CpuCodegenLayout, ConcatsSplitTheirAxisIntoOneLoopPerInput) {
  std::mt19937 rng(5);
  GraphBuilder b(rng);
  const std::vector<int64_t> channels = {4, 1, 3, 8};
  std::vector<std::string> parts;
  layout::Concat cat;
  cat.axis = 1;
  int64_t total = 0;
  for (int64_t ch : channels) {
    parts.push_back(b.input(DType::kFloat32, {1, ch, 5, 6}));
    cat.offsets.push_back(total);
    total += ch;
  }
  const Shape cs = {1, total, 5, 6};
  const std::string joined = b.prim(LayoutAttrs{cat}, parts, DType::kFloat32, cs);
  const std::string scale = b.prim(
      BroadcastAttrs{}, {b.input(DType::kFloat32, {1, total, 1, 1}, true)}, DType::kFloat32, cs);
  const std::string scaled =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {joined, scale},
             DType::kFloat32, cs);
  const std::string y =
      b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {scaled}, DType::kFloat32, cs);
  layout::Concat last;
  last.axis = 2;
  last.offsets = {0, 3};
  const std::string a = b.input(DType::kFloat32, {2, 4, 3});
  const std::string c = b.input(DType::kFloat32, {2, 4, 2});
  const std::string wide = b.prim(LayoutAttrs{last}, {a, c}, DType::kFloat32, {2, 4, 5});
  layout::Transpose t;
  t.perm = {0, 2, 1};
  const std::string z = b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}},
                               {b.prim(LayoutAttrs{t}, {wide}, DType::kFloat32, {2, 5, 4})},
                               DType::kFloat32, {2, 5, 4});
  b.g.outputs = {y, z};
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 4, rng, stats);
  EXPECT_GT(stats.kernels, 8);

  const KernelDag dag = kernel_dag_of(b.g);
  std::vector<int> block;
  for (int v = 0; v < dag.size(); ++v)
    if (b.g.prims[dag.prim[v]].output() != wide && b.g.prims[dag.prim[v]].output() != z &&
        b.g.prims[dag.prim[v]].inputs.at(0) != wide)
      block.push_back(v);
  const Candidate whole = make_candidate(dag, block);
  ASSERT_EQ(kernel_writes(b.g, dag, whole), std::vector<std::string>{y});
  const std::string source = generate_cpu_kernel(b.g, dag, whole, "k", CpuSchedule{}).source;
  size_t loops = 0;
  for (size_t at = source.find("for (int64_t"); at != std::string::npos;
       at = source.find("for (int64_t", at + 1))
    ++loops;
  EXPECT_GE(loops, channels.size()) << source;  // a loop nest per input
  // No test of the channel per element choosing among the inputs' values.
  EXPECT_FALSE(std::regex_search(source, std::regex(R"(\) \? v[0-9]+ : )"))) << source;
}

// A concat read through slices: MixNet's mixed depthwise convolutions concatenate two
// groups of channels, scale them and apply SiLU, and split the result into three other
// groups (the middle one straddles the concat's boundary); GhostNet concatenates two
// halves and keeps fewer channels than both. Every candidate matches the interpreter, and
// the kernel of each whole pattern cuts its loop where the input read changes: no test
// of the channel per element, no clamped read.
TEST(CpuCodegenLayout, ConcatsReadThroughSlicesCutTheLoopWhereTheInputChanges) {
  std::mt19937 rng(13);
  GraphBuilder b(rng);
  const DType f = DType::kFloat32;
  const Shape half = {1, 6, 3, 4}, whole = {1, 12, 3, 4}, third = {1, 4, 3, 4};
  const std::string joined = b.prim(LayoutAttrs{layout::Concat{1, {0, 6}}},
                                    {b.input(f, half), b.input(f, half)}, f, whole);
  const std::string scale = b.prim(BroadcastAttrs{}, {b.input(f, {1, 12, 1, 1}, true)}, f, whole);
  const std::string scaled = b.prim(
      ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {joined, scale}, f, whole);
  const std::string gate =
      b.prim(ElementwiseAttrs{ScalarOp::kSigmoid, {Operand{0, 0}}}, {scaled}, f, whole);
  const std::string silu = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}},
                                  {scaled, gate}, f, whole);
  std::vector<std::string> groups;
  for (int64_t k = 0; k < 3; ++k)
    groups.push_back(
        b.prim(LayoutAttrs{layout::Slice{{0, 4 * k, 0, 0}, {1, 1, 1, 1}}}, {silu}, f, third));
  const std::string ghost =
      b.prim(LayoutAttrs{layout::Concat{1, {0, 3}}},
             {b.input(f, {1, 3, 5, 2}), b.input(f, {1, 3, 5, 2})}, f, {1, 6, 5, 2});
  const std::string kept =
      b.prim(LayoutAttrs{layout::Slice{{0, 0, 0, 0}, {1, 1, 1, 1}}}, {ghost}, f, {1, 5, 5, 2});
  const std::string relu =
      b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {kept}, f, {1, 5, 5, 2});
  b.g.outputs = groups;
  b.g.outputs.push_back(relu);
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 4, rng, stats);
  EXPECT_GT(stats.kernels, 8);

  const KernelDag dag = kernel_dag_of(b.g);
  std::vector<int> mixnet, ghostnet;
  for (int v = 0; v < dag.size(); ++v) {
    const Primitive& p = b.g.prims[dag.prim[v]];
    const bool ghost_part = p.output() == ghost || p.output() == kept || p.output() == relu;
    (ghost_part ? ghostnet : mixnet).push_back(v);
  }
  for (const auto& [members, writes] :
       {std::make_pair(mixnet, groups), std::make_pair(ghostnet, std::vector<std::string>{relu})}) {
    const Candidate c = make_candidate(dag, members);
    ASSERT_EQ(kernel_writes(b.g, dag, c), writes);
    const std::string source = generate_cpu_kernel(b.g, dag, c, "k", CpuSchedule{}).source;
    EXPECT_FALSE(std::regex_search(source, std::regex(R"(\) \? v[0-9]+ : )"))) << source;
    EXPECT_EQ(source.find("kora_clamp"), std::string::npos) << source;
  }
}

// A recurrent network's output: one input per time step and direction (300 here, of one
// to three rows each), concatenated and read by an elementwise member. The kernel of both
// splits the concat into a loop per input too (beyond 64 inputs it used to choose by a test
// per input, with every input's element loaded for each output element), and matches the
// interpreter.
TEST(CpuCodegenLayout, ConcatsOfHundredsOfInputsSplitTheirAxisToo) {
  std::mt19937 rng(11);
  GraphBuilder b(rng);
  std::vector<std::string> steps;
  layout::Concat cat;
  cat.axis = 0;
  int64_t total = 0;
  for (int i = 0; i < 300; ++i) {
    const int64_t rows = 1 + i % 3;
    steps.push_back(b.input(DType::kFloat32, {rows, 8}));
    cat.offsets.push_back(total);
    total += rows;
  }
  const Shape cs = {total, 8};
  const std::string joined = b.prim(LayoutAttrs{cat}, steps, DType::kFloat32, cs);
  const std::string y =
      b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {joined}, DType::kFloat32, cs);
  b.g.outputs = {y};
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 2, rng, stats);
  EXPECT_GE(stats.kernels, 3);

  const KernelDag dag = kernel_dag_of(b.g);
  std::vector<int> both(static_cast<size_t>(dag.size()));
  std::iota(both.begin(), both.end(), 0);
  const Candidate whole = make_candidate(dag, both);
  const std::string source = generate_cpu_kernel(b.g, dag, whole, "k", CpuSchedule{}).source;
  size_t loops = 0;
  for (size_t at = source.find("for (int64_t"); at != std::string::npos;
       at = source.find("for (int64_t", at + 1))
    ++loops;
  EXPECT_GE(loops, steps.size());
  EXPECT_FALSE(std::regex_search(source, std::regex(R"(\) \? v[0-9]+ : )")));
}

// A global average pool of a channel concat taken channels last ([N, H, W, C], the
// concat along C, the sum over H and W: Inception-v3's last block as a bf16 plan runs
// it): the row of accumulators over C is filled one part per input, each read in order,
// with no test of the channel per element; every candidate matches the interpreter.
TEST(CpuCodegenLayout, ReductionsOverAConcatAlongTheirRowReadEachInputInOrder) {
  std::mt19937 rng(15);
  GraphBuilder b(rng);
  const std::vector<int64_t> channels = {24, 40, 8};
  std::vector<std::string> parts;
  layout::Concat cat;
  cat.axis = 3;
  int64_t total = 0;
  for (int64_t ch : channels) {
    parts.push_back(b.input(DType::kFloat32, {1, 5, 5, ch}));
    cat.offsets.push_back(total);
    total += ch;
  }
  const std::string joined = b.prim(LayoutAttrs{cat}, parts, DType::kFloat32, {1, 5, 5, total});
  const std::string summed =
      b.prim(ReduceAttrs{ReduceOp::kSum, {1, 2}}, {joined}, DType::kFloat32, {1, 1, 1, total});
  const std::string mean =
      b.prim(ReduceAttrs{ReduceOp::kMean, {1, 2}}, {joined}, DType::kFloat32, {1, 1, 1, total});
  b.g.outputs = {summed, mean};
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 3, rng, stats);
  EXPECT_GE(stats.kernels, 4);

  const KernelDag dag = kernel_dag_of(b.g);
  const Candidate whole = make_candidate(dag, {0, 1, 2});  // the concat, the sum, the mean
  ASSERT_EQ(kernel_writes(b.g, dag, whole).size(), 2u);
  const std::string source = generate_cpu_kernel(b.g, dag, whole, "k", CpuSchedule{}).source;
  EXPECT_EQ(source.find("kora_clamp"), std::string::npos) << source;
  EXPECT_FALSE(std::regex_search(source, std::regex(R"(\) \? v[0-9]+ : )"))) << source;
}

TEST(CpuCodegenLayout, EveryCandidateMatchesTheInterpreter) {
  std::mt19937 rng(7);
  kora_codegen_test::CheckStats stats;
  for (int round = 0; round < 7; ++round) {
    const PrimGraph g = kora_codegen_test::random_layout_graph(rng, round);
    kora_codegen_test::check_graph(g, 4, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.kernels, 70);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

}  // namespace

namespace {

// An input of shape s, then sqrt(x + 1.9): NaN where x < -1.9 (a few percent of it).
std::string with_some_nan(GraphBuilder& b, const Shape& s) {
  const std::string x = b.input(DType::kFloat32, s);
  const std::string shifted = b.prim(
      ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{-1, 1.9}}}, {x}, DType::kFloat32, s);
  return b.prim(ElementwiseAttrs{ScalarOp::kSqrt, {Operand{0, 0}}}, {shifted}, DType::kFloat32, s);
}

// Max and min with NaN in some rows (sqrt of slightly negative values), over the last
// axis (one accumulator, vectorized) and over a middle one (a row of accumulators).
TEST(CpuCodegenLayout, MaxAndMinPropagateNaN) {
  std::mt19937 rng(4);
  GraphBuilder b(rng);
  const Shape s = {3, 4, 37};
  const std::string r = with_some_nan(b, s);
  std::vector<std::string> outs;
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin})
    for (int64_t axis : {1, 2}) {
      Shape o = s;
      o[axis] = 1;
      outs.push_back(b.prim(ReduceAttrs{op, {axis}}, {r}, DType::kFloat32, o));
    }
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 3, rng, stats);
  EXPECT_GE(stats.kernels, 8);
}

// Pooling as fission writes it: a window member over x (kernel k, stride, dilation and
// leading pads per spatial dim; with `overhang` the last window may run past the end, as
// ceil_mode makes it), then a reduce over the window axes: [N, C, O..., 1...].
std::string pooled(GraphBuilder& b, const std::string& x, ReduceOp op, std::vector<int64_t> k,
                   std::vector<int64_t> stride, std::vector<int64_t> dilation,
                   std::vector<int64_t> pad, double fill, bool overhang = false) {
  const Shape s = b.info(x).shape;
  const size_t n = s.size() - 2;
  layout::Window w{stride, dilation, pad, fill};
  Shape o = {s[0], s[1]};
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = s[2 + i] + 2 * pad[i] - dilation[i] * (k[i] - 1) - 1;
    o.push_back(span / stride[i] + 1 + (overhang && span % stride[i] != 0));
  }
  o.insert(o.end(), k.begin(), k.end());
  const std::string windows = b.prim(LayoutAttrs{w}, {x}, DType::kFloat32, o);
  Shape reduced = o;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < n; ++i) reduced[2 + n + i] = 1, axes.push_back(2 + n + i);
  return b.prim(ReduceAttrs{op, axes}, {windows}, DType::kFloat32, reduced);
}

// Max (-inf fill) and sum (zero fill) over pooling windows run as rows of accumulators
// (stride 2) or padded planes (stride 1; max folds the window's rows first, then its
// columns), each window position folding in the outputs whose input is inside; min
// (here, +inf fill) vectorizes over the row, each lane folding its own window. NaN in
// some inputs; strided, dilated and padded windows; all match the interpreter.
TEST(CpuCodegenLayout, PoolingWindowsFoldedPerLane) {
  std::mt19937 rng(12);
  GraphBuilder b(rng);
  const Shape s = {1, 3, 19, 37};
  const std::string r = with_some_nan(b, s);  // some windows hold a NaN
  std::vector<std::string> outs;
  struct Pool {
    ReduceOp op;
    int64_t k, stride, dilation, pad;
    double fill;
  };
  for (const Pool& p :
       {Pool{ReduceOp::kMax, 3, 2, 1, 1, -INFINITY}, Pool{ReduceOp::kSum, 3, 1, 1, 1, 0.0},
        Pool{ReduceOp::kMax, 2, 1, 2, 0, -INFINITY}, Pool{ReduceOp::kMin, 5, 1, 1, 2, INFINITY}}) {
    outs.push_back(pooled(b, r, p.op, {p.k, p.k}, {p.stride, p.stride}, {p.dilation, p.dilation},
                          {p.pad, p.pad}, p.fill));
    ASSERT_GE(b.info(outs.back()).shape[3], 8) << "the row must be long enough to vectorize";
  }
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 2, rng, stats);
  EXPECT_GE(stats.kernels, 8);
}

// The other shapes pooling takes: one spatial dim with a window that overhangs the end
// (ceil_mode) and one longer than 16 (its positions looped over tables, not unrolled);
// three spatial dims, strided, with a sum; a window whose fill is not the reduce's
// identity (max over zero fill: the per-lane path); and a max pool of a max pool in one
// kernel (the chain YOLO's SPPF block makes; padded planes).
TEST(CpuCodegenLayout, PoolingRowsOfAccumulators) {
  std::mt19937 rng(13);
  GraphBuilder b(rng);
  std::vector<std::string> outs;
  auto squeeze = [&](const std::string& pooled) {  // [N, C, O..., 1...] -> [N, C, O...]
    Shape s = b.info(pooled).shape;
    s.resize(2 + (s.size() - 2) / 2);
    return b.prim(LayoutAttrs{layout::Reshape{}}, {pooled}, DType::kFloat32, s);
  };
  const std::string line = with_some_nan(b, {2, 3, 41});
  outs.push_back(pooled(b, line, ReduceOp::kMax, {4}, {3}, {1}, {2}, -INFINITY, true));
  outs.push_back(pooled(b, line, ReduceOp::kSum, {17}, {1}, {1}, {8}, 0.0));
  const std::string volume = b.input(DType::kFloat32, {1, 2, 5, 9, 11});
  outs.push_back(
      pooled(b, volume, ReduceOp::kSum, {2, 3, 3}, {1, 2, 1}, {1, 1, 1}, {0, 1, 1}, 0.0, true));
  const std::string plane = with_some_nan(b, {1, 4, 20, 20});
  outs.push_back(pooled(b, plane, ReduceOp::kMax, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 0.0));
  const std::string first =
      squeeze(pooled(b, plane, ReduceOp::kMax, {5, 5}, {1, 1}, {1, 1}, {2, 2}, -INFINITY));
  outs.push_back(pooled(b, first, ReduceOp::kMax, {5, 5}, {1, 1}, {1, 1}, {2, 2}, -INFINITY));
  b.g.outputs = outs;
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 2, rng, stats);
  EXPECT_GE(stats.kernels, 8);
}

// Windows taken channels last (a pool on a layout view: [N, H, W, C] in, windows
// [N, O1, O2, K1, K2, C]): rows of accumulators over C, or for max pools the window's
// rows folded first and then its columns; NaN kept, strided, dilated, padded and
// overhanging windows, max and sum; all match the interpreter. Over 24 channels the
// scalar loops; over 32, pools reading memory take 16 lanes at a time (KORA_VEC16, on a
// machine with AVX-512).
TEST(CpuCodegenLayout, ChannelsLastPoolingRowsOverTheChannels) {
  for (const int64_t channels : {24, 32}) {
    std::mt19937 rng(14);
    GraphBuilder b(rng);
    const Shape s = {1, 11, 13, channels};  // N, H, W, C
    const std::string r = with_some_nan(b, s);
    std::vector<std::string> outs;
    struct Pool {
      ReduceOp op;
      int64_t k, stride, dilation, pad;
      double fill;
      bool overhang;
    };
    for (const Pool& p : {Pool{ReduceOp::kMax, 3, 2, 1, 1, -INFINITY, true},
                          Pool{ReduceOp::kMax, 3, 1, 1, 1, -INFINITY, false},
                          Pool{ReduceOp::kMax, 5, 1, 1, 2, -INFINITY, false},
                          Pool{ReduceOp::kMax, 3, 1, 2, 1, -INFINITY, false},
                          Pool{ReduceOp::kSum, 2, 1, 2, 0, 0.0, false},
                          Pool{ReduceOp::kMax, 2, 2, 1, 0, -INFINITY, false}}) {
      layout::Window w{
          {p.stride, p.stride}, {p.dilation, p.dilation}, {p.pad, p.pad}, p.fill, true};
      Shape o = {s[0]};
      for (size_t i = 0; i < 2; ++i) {
        const int64_t span = s[1 + i] + 2 * p.pad - p.dilation * (p.k - 1) - 1;
        o.push_back(span / p.stride + 1 + (p.overhang && span % p.stride != 0));
      }
      o.insert(o.end(), {p.k, p.k, s[3]});
      const std::string windows = b.prim(LayoutAttrs{w}, {r}, DType::kFloat32, o);
      Shape reduced = o;
      reduced[3] = reduced[4] = 1;
      const std::string pooled =
          b.prim(ReduceAttrs{p.op, {3, 4}}, {windows}, DType::kFloat32, reduced);
      outs.push_back(b.prim(LayoutAttrs{layout::Reshape{}}, {pooled}, DType::kFloat32,
                            {o[0], o[1], o[2], o[5]}));
    }
    b.g.outputs = outs;
    kora_codegen_test::CheckStats stats;
    kora_codegen_test::check_graph(b.g, 3, rng, stats);
    EXPECT_GE(stats.kernels, 8);

    // Each pool as one kernel (windows, reduce, reshape): the max pools fold rows then
    // columns (no more work than window by window for 3x3 at stride 2); the sum and the
    // 2x2 stride-2 max do not. Over 32 channels every pool has a 16-lane twin.
    const KernelDag dag = kernel_dag_of(b.g);
    std::vector<bool> separable, lanes;
    for (int v = 0; v < dag.size(); ++v) {
      const Primitive& p = b.g.prims[dag.prim[v]];
      if (!std::holds_alternative<ReduceAttrs>(p.attrs)) continue;
      const Candidate pool = make_candidate(dag, {v - 1, v, v + 1});
      const std::string source = generate_cpu_kernel(b.g, dag, pool, "k", CpuSchedule{}).source;
      separable.push_back(source.find("then its columns") != std::string::npos);
      lanes.push_back(source.find("16_fold(") != std::string::npos);
    }
    EXPECT_EQ(separable, (std::vector<bool>{true, true, true, true, false, false}));
    const bool v = channels == 32;
    EXPECT_EQ(lanes, (std::vector<bool>{v, v, v, v, v, v})) << channels << " channels";
  }
}

}  // namespace
