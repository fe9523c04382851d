// CUDA code generation (src/cuda/codegen.h) without a GPU: every candidate x
// schedule of the CPU tests' random graphs (elementwise, layout and reduce, mixed dtypes,
// BERT mask; tests/cpu/codegen_graphs.h) and of reduction graphs with long, short and
// strided rows (tests/cuda/reduce_graphs.h) is generated into one NVRTC program per graph
// and compiled to cubins for sm_80 and sm_90 (tests/cuda/cuda_harness.h: NVRTC silent,
// every launched function in the cubin, grids covering the work). Also: schedule keys,
// the schedule space, launch geometry of a softmax, refusals. Kernels run on a GPU in
// codegen_gpu_test.cc.
#include <gtest/gtest.h>

#include <cstdio>

#include "cpu/codegen_graphs.h"
#include "cuda/cuda_harness.h"
#include "cuda/reduce_graphs.h"
#include "kora/error.h"

namespace {

using namespace kora;
using kora_cuda_test::Stats;

const std::vector<std::string> kArchs = {"sm_80", "sm_90"};

void report(const char* what, const Stats& s) {
  std::printf(
      "[ info     ] %s: %d candidates, %d kernels (candidate x schedule; %d launches, %d with "
      "several), %d cubins' worth compiled by NVRTC in %.1f s\n",
      what, s.candidates, s.kernels, s.launches, s.multi_launch, s.compiled, s.nvrtc_seconds);
}

TEST(CudaCodegen, ElementwiseGraphsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(2026);
  Stats stats;
  for (int t = 0; t < 3; ++t)
    kora_cuda_test::compile_graph(kora_codegen_test::random_elementwise_graph(rng), 4, kArchs,
                                  stats);
  EXPECT_GT(stats.kernels, 100);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("elementwise", stats);
}

TEST(CudaCodegen, LayoutAndReduceGraphsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(7);
  Stats stats;
  for (int round = 0; round < 8; ++round)
    kora_cuda_test::compile_graph(kora_codegen_test::random_layout_graph(rng, round), 3, kArchs,
                                  stats);
  EXPECT_GT(stats.kernels, 200);
  EXPECT_GT(stats.multi_launch, 20);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("layout and reduce", stats);
}

// Horizontal pairs: each part a __device__ function taking its block index (a parameter
// named blockIdx, shadowing the built-in), called from one __global__ per launch rank.
TEST(CudaCodegen, HorizontalPairsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(1129);
  Stats stats;
  for (int round = 0; round < 4; ++round)
    kora_cuda_test::compile_graph(kora_codegen_test::random_layout_graph(rng, round), 2, kArchs,
                                  stats, true, 12);
  kora_cuda_test::compile_graph(kora_cuda_test::two_branch_reduce_graph(rng), 4, kArchs, stats,
                                true, 40);
  EXPECT_GT(stats.kernels, 60);
  EXPECT_EQ(stats.horizontal, stats.candidates);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("horizontal pairs", stats);
}

TEST(CudaCodegen, MixedDtypeGraphsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(5);
  Stats stats;
  kora_cuda_test::compile_graph(kora_codegen_test::bert_mask_graph(rng), 5, kArchs, stats);
  for (int round = 0; round < 4; ++round)
    kora_cuda_test::compile_graph(kora_codegen_test::random_mask_graph(rng), 3, kArchs, stats);
  EXPECT_GT(stats.kernels, 200);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("mixed dtypes", stats);
}

TEST(CudaCodegen, ReductionGraphsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(11);
  Stats stats;
  kora_cuda_test::compile_graph(kora_cuda_test::softmax_graph(rng, 3, 2500), 7, kArchs, stats);
  kora_cuda_test::compile_graph(kora_cuda_test::layer_norm_graph(rng, 8, 768), 3, kArchs, stats);
  kora_cuda_test::compile_graph(kora_cuda_test::strided_reductions_graph(rng), 2, kArchs, stats);
  EXPECT_GT(stats.multi_launch, 50);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("reductions", stats);
}

TEST(CudaCodegen, ArgExtremesCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(21);
  Stats stats;
  kora_cuda_test::compile_graph(kora_cuda_test::arg_extreme_graph(rng), 1, kArchs, stats);
  EXPECT_GE(stats.kernels, 24);
  EXPECT_EQ(stats.compiled, 2 * stats.kernels);
  report("argmax and argmin", stats);
}

TEST(CudaCodegen, ScheduleKeys) {
  EXPECT_EQ(CudaSchedule{}.key(), "default");
  const CudaSchedule s{128, 4, CudaReduce::kWarp};
  EXPECT_EQ(s.key(), "block=128;items=4;reduce=warp");
  EXPECT_EQ(CudaSchedule::from_key(s.key()), s);
  EXPECT_EQ(CudaSchedule::from_key("block=128;items=1;reduce=multi_block").reduce,
            CudaReduce::kMultiBlock);
  const CudaSchedule fused{512, 2, CudaReduce::kRowBlock};
  EXPECT_EQ(fused.key(), "block=512;items=2;reduce=row_block");
  EXPECT_EQ(CudaSchedule::from_key(fused.key()), fused);
  EXPECT_EQ(CudaSchedule::from_key("default"), CudaSchedule{});
  for (const char* bad :
       {"", "block=100;items=1;reduce=warp", "block=256;items=0;reduce=auto",
        "block=256;items=1;reduce=grid", "block=256;items=1;reduce=auto",
        "block=256;items=1;reduce=row", "par=1;minpar=32768;rows=4;cols=256;gemm=-1;mc=96;nc=128"})
    EXPECT_THROW(CudaSchedule::from_key(bad), Error) << bad;
}

// Softmax over [4, 1000]: by default one row-fused launch, a warp per row (rows of 1000
// contiguous elements); with separate-launch strategies reduce max, reduce sum, then the
// division; grids from the sizes and the schedule.
TEST(CudaCodegen, LaunchGeometryOfASoftmax) {
  std::mt19937 rng(1);
  const PrimGraph g = kora_cuda_test::softmax_graph(rng, 4, 1000);
  const KernelDag dag = kernel_dag_of(g);
  const Candidate all = make_candidate(dag, {0, 1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(cuda_codegen_supports(g, dag, all));
  EXPECT_TRUE(cuda_row_fusible(g, dag, all));
  const std::vector<CudaSchedule> space = cuda_schedule_space(g, dag, all);
  // default + 4 separate strategies x 3 block sizes + 2 row-fused x (3 block sizes + 2 items)
  EXPECT_EQ(space.size(), 23u);
  CudaKernel k = generate_cuda_kernel(g, dag, all, "softmax");
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_EQ(k.writes.size(), 1u);
  EXPECT_EQ(k.launches[0].function, "softmax_0");
  EXPECT_EQ(k.launches[0].work, 4);
  EXPECT_EQ(k.launches[0].per_block, 8);  // 256 threads = 8 warps, a row each
  EXPECT_EQ(k.launches[0].grid(), 1);
  EXPECT_NE(k.source.find("a warp per row"), std::string::npos);
  EXPECT_EQ(k.source.find("scratch"), std::string::npos);  // max and sum stay in registers
  k = generate_cuda_kernel(g, dag, all, "softmax", {512, 1, CudaReduce::kRowBlock});
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_EQ(k.launches[0].per_block, 1);
  EXPECT_EQ(k.launches[0].grid(), 4);
  EXPECT_NE(k.source.find("__syncthreads"), std::string::npos);
  k = generate_cuda_kernel(g, dag, all, "softmax", {256, 1, CudaReduce::kWarp});
  ASSERT_EQ(k.launches.size(), 3u);
  EXPECT_EQ(k.launches[0].work, 4);
  EXPECT_EQ(k.launches[0].per_block, 8);
  EXPECT_NE(k.source.find("(warp per row)"), std::string::npos);
  EXPECT_EQ(k.launches[2].work, 4000);
  EXPECT_EQ(k.launches[2].per_block, 256);
  EXPECT_EQ(k.launches[2].grid(), 16);
  // Two scratch rows (max and sum are read only inside the kernel).
  EXPECT_NE(k.source.find("__device__ float softmax_scratch"), std::string::npos);
  k = generate_cuda_kernel(g, dag, all, "softmax", {128, 4, CudaReduce::kBlock});
  ASSERT_EQ(k.launches.size(), 3u);
  EXPECT_EQ(k.launches[0].per_block, 1);
  EXPECT_EQ(k.launches[0].grid(), 4);
  EXPECT_EQ(k.launches[2].per_block, 512);
  EXPECT_EQ(k.launches[2].grid(), 8);
  EXPECT_NE(k.source.find("__shared__ double acc_partial[4]"), std::string::npos);
  k = generate_cuda_kernel(g, dag, all, "softmax", {512, 2, CudaReduce::kThread});
  EXPECT_EQ(k.launches[0].per_block, 1024);
  EXPECT_EQ(k.launches[0].grid(), 1);
  // An elementwise-only candidate: nine schedules, one launch.
  const Candidate tail = make_candidate(dag, {2, 3});
  EXPECT_FALSE(cuda_row_fusible(g, dag, tail));
  EXPECT_EQ(cuda_schedule_space(g, dag, tail).size(), 9u);
  EXPECT_EQ(generate_cuda_kernel(g, dag, tail, "t").launches.size(), 1u);
}

// Row fusion needs every reduce over the same shape and axes: sums over both axes of one
// tensor are two launches whatever the schedule asks. The two sums alone (reading a graph
// input, so not connected) are a horizontal pair: one launch, each part on its own blocks.
TEST(CudaCodegen, RowFusionNeedsOneRowShape) {
  std::mt19937 rng(2);
  kora_codegen_test::GraphBuilder b(rng);
  const std::string in = b.input(DType::kFloat32, {40, 60});
  const std::string x =
      b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {in}, DType::kFloat32, {40, 60});
  const std::string rows = b.prim(ReduceAttrs{ReduceOp::kSum, {1}}, {x}, DType::kFloat32, {40, 1});
  const std::string cols = b.prim(ReduceAttrs{ReduceOp::kSum, {0}}, {x}, DType::kFloat32, {1, 60});
  b.g.outputs = {rows, cols};
  const KernelDag dag = kernel_dag_of(b.g);
  const Candidate all = make_candidate(dag, {0, 1, 2});
  EXPECT_FALSE(cuda_row_fusible(b.g, dag, all));
  EXPECT_TRUE(cuda_row_fusible(b.g, dag, make_candidate(dag, {0, 1})));
  EXPECT_EQ(
      generate_cuda_kernel(b.g, dag, all, "k", {256, 1, CudaReduce::kRowBlock}).launches.size(),
      2u);
  const Candidate sums = make_candidate(dag, {1, 2});
  ASSERT_EQ(candidate_parts(dag, sums).size(), 2u);
  EXPECT_FALSE(cuda_row_fusible(b.g, dag, sums));
  EXPECT_EQ(cuda_schedule_space(b.g, dag, sums).size(), 3u);
  const CudaKernel pair =
      generate_cuda_kernel(b.g, dag, sums, "k", {256, 1, CudaReduce::kRowBlock});
  ASSERT_EQ(pair.launches.size(), 1u);
  EXPECT_EQ(pair.launches[0].grid(), 40 + 60);  // a block per row of each sum
}

// A global mean of 15,000 elements: one row, so several blocks fold chunks of it into
// partials and a second launch combines them.
TEST(CudaCodegen, MultiBlockReduction) {
  std::mt19937 rng(3);
  kora_codegen_test::GraphBuilder b(rng);
  const std::string x = b.input(DType::kFloat32, {2, 3, 50, 50});
  b.prim(ReduceAttrs{ReduceOp::kMean, {0, 1, 2, 3}}, {x}, DType::kFloat32, {1, 1, 1, 1});
  b.g.outputs = {b.g.prims.back().output()};
  const KernelDag dag = kernel_dag_of(b.g);
  const Candidate c = make_candidate(dag, {0});
  // One reduce is row-fusible too (default + 4 x 3 separate + 2 x 5 row-fused), but the
  // default does not fuse one row: it would be one block.
  EXPECT_EQ(cuda_schedule_space(b.g, dag, c).size(), 23u);
  const CudaKernel k = generate_cuda_kernel(b.g, dag, c, "mean");
  ASSERT_EQ(k.launches.size(), 2u);
  EXPECT_EQ(k.launches[0].work, 15);  // 15 chunks of 1,000 (256 threads x 4 steps each)
  EXPECT_EQ(k.launches[0].per_block, 1);
  EXPECT_EQ(k.launches[1].work, 1);
  EXPECT_NE(k.source.find("__device__ double mean_scratch"), std::string::npos);
  EXPECT_NE(k.source.find("(15 per row)"), std::string::npos);
}

TEST(CudaCodegen, AutoStrategy) {
  EXPECT_EQ(cuda_reduce_strategy_for(1, 15000, true), CudaReduce::kMultiBlock);
  EXPECT_EQ(cuda_reduce_strategy_for(512, 15000, true), CudaReduce::kBlock);
  EXPECT_EQ(cuda_reduce_strategy_for(1000, 8, true), CudaReduce::kThread);
  EXPECT_EQ(cuda_reduce_strategy_for(4096, 300, false), CudaReduce::kThread);
  EXPECT_EQ(cuda_reduce_strategy_for(64, 768, true), CudaReduce::kWarp);
  EXPECT_EQ(cuda_reduce_strategy_for(64, 50000, true), CudaReduce::kMultiBlock);
}

TEST(CudaCodegen, RefusesLinearOpaqueAndFloat64) {
  PrimGraph g;
  g.inputs = {"a", "b"};
  g.values["a"] = {DType::kFloat32, {4, 4}};
  g.values["b"] = {DType::kFloat32, {4, 4}};
  g.values["t"] = {DType::kFloat32, {4, 4}};
  g.values["y"] = {DType::kFloat32, {4, 4}};
  g.values["d"] = {DType::kFloat64, {4, 4}};
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
  Primitive cast;
  cast.name = "cast";
  cast.attrs = ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}};
  cast.inputs = {"a"};
  cast.outputs = {"d"};
  g.prims = {mm, relu, cast};
  g.outputs = {"y", "d"};
  const KernelDag dag = kernel_dag_of(g);
  EXPECT_FALSE(cuda_codegen_supports(g, dag, make_candidate(dag, {0})));     // linear
  EXPECT_FALSE(cuda_codegen_supports(g, dag, make_candidate(dag, {0, 1})));  // linear + epilogue
  EXPECT_TRUE(cuda_codegen_supports(g, dag, make_candidate(dag, {1})));
  EXPECT_FALSE(cuda_codegen_supports(g, dag, make_candidate(dag, {2})));  // float64
  try {
    generate_cuda_kernel(g, dag, make_candidate(dag, {0, 1}), "k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mm'"), std::string::npos) << e.what();
  }
}

}  // namespace
