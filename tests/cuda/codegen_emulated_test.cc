// Generated CUDA kernels against the reference interpreter without a GPU: the kernels of
// codegen_test.cc's graphs (every candidate x schedule: pointwise launches, reductions a
// thread, warp, block or several blocks per row, row-fused launches) compiled by the host
// compiler through tests/cuda/emulator.h (threads as fibers, real barriers and warp
// shuffles) and run launch by launch, twice (scratch reused); every written tensor is
// compared with run_primitive() member by member as on the GPU (tests/cuda/cuda_harness.h).
// What this cannot see: the hardware (memory model, occupancy, NVRTC's code); the GPU
// tests run the same kernels for real.
#include <gtest/gtest.h>

#include <cstdio>

#include "cpu/codegen_graphs.h"
#include "cpu/compile.h"
#include "cuda/cuda_harness.h"
#include "cuda/emulator.h"
#include "cuda/reduce_graphs.h"

namespace {

using namespace kora;
using kora_cuda_test::Stats;

void run_emulated(const PrimGraph& g, int max_size, std::mt19937& rng, Stats& stats,
                  int horizontal = 0) {
  const kora_cuda_test::Generated gen =
      kora_cuda_test::generate_all(g, max_size, stats, true, horizontal);
  if (gen.kernels.empty()) return;
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  options.flags = {"-O0", "-fPIC", "-shared", "-std=c++17", "-w"};  // big, run once
  const CompileResult lib =
      compile_shared(kora_cuda_test::emulated_program(gen.kernels, g), options);
  using Entry = void (*)(long long, int, void**);
  for (size_t k = 0; k < gen.kernels.size(); ++k) {
    const CudaKernel& ck = gen.kernels[k];
    const Candidate& c = gen.candidates[gen.candidate_of[k]];
    std::map<std::string, Tensor> values;
    for (const std::string& r : ck.reads) {
      if (const Tensor* t = g.constant(r))
        values[r] = *t;
      else
        values[r] = kora_codegen_test::random_tensor(g.value(r).dtype, g.value(r).shape, rng);
    }
    for (int v : c.members) {
      const Primitive& p = g.prims[gen.dag.prim[v]];
      std::vector<const Tensor*> in;
      for (const std::string& i : p.inputs) in.push_back(&values.at(i));
      values[p.output()] = run_primitive(g, p, in).at(0);
    }
    std::vector<void*> args;
    for (const std::string& r : ck.reads)
      args.push_back(const_cast<std::byte*>(values.at(r).bytes()));
    std::vector<std::vector<unsigned char>> outs;
    for (const std::string& w : ck.writes)
      outs.emplace_back(numel(g.value(w).shape) * dtype_size(g.value(w).dtype) + 1, 0xA5);
    for (auto& o : outs) args.push_back(o.data());
    for (int run = 0; run < 2; ++run) {
      for (const CudaLaunch& l : ck.launches)
        reinterpret_cast<Entry>(lib.library->symbol("kora_emu_" + l.function))(l.grid(), l.block,
                                                                               args.data());
      for (size_t w = 0; w < ck.writes.size(); ++w) {
        const std::string bad = kora_codegen_test::compare(values.at(ck.writes[w]), outs[w].data());
        ASSERT_EQ(bad, "") << "kernel " << k << " (schedule " << gen.keys[k] << ") output "
                           << ck.writes[w] << "\n"
                           << ck.source;
        ASSERT_EQ(outs[w].back(), 0xA5) << "kernel " << k << " writes past " << ck.writes[w];
      }
    }
    ++stats.checked;
  }
}

void report(const char* what, const Stats& s) {
  std::printf(
      "[ info     ] %s: %d kernels (candidate x schedule; %d launches) match the "
      "interpreter, emulated\n",
      what, s.checked, s.launches);
}

TEST(CudaCodegenEmulated, ElementwiseGraphsMatchTheInterpreter) {
  std::mt19937 rng(2026);
  Stats stats;
  for (int t = 0; t < 3 && !HasFatalFailure(); ++t)
    run_emulated(kora_codegen_test::random_elementwise_graph(rng), 4, rng, stats);
  EXPECT_GT(stats.checked, 100);
  report("elementwise", stats);
}

TEST(CudaCodegenEmulated, LayoutAndReduceGraphsMatchTheInterpreter) {
  std::mt19937 rng(7);
  Stats stats;
  for (int round = 0; round < 8 && !HasFatalFailure(); ++round)
    run_emulated(kora_codegen_test::random_layout_graph(rng, round), 3, rng, stats);
  EXPECT_GT(stats.checked, 200);
  report("layout and reduce", stats);
}

TEST(CudaCodegenEmulated, MixedDtypeGraphsMatchTheInterpreter) {
  std::mt19937 rng(5);
  Stats stats;
  run_emulated(kora_codegen_test::bert_mask_graph(rng), 5, rng, stats);
  for (int round = 0; round < 4 && !HasFatalFailure(); ++round)
    run_emulated(kora_codegen_test::random_mask_graph(rng), 3, rng, stats);
  EXPECT_GT(stats.checked, 200);
  report("mixed dtypes", stats);
}

TEST(CudaCodegenEmulated, ReductionGraphsMatchTheInterpreter) {
  std::mt19937 rng(11);
  Stats stats;
  run_emulated(kora_cuda_test::softmax_graph(rng, 3, 2500), 7, rng, stats);
  if (HasFatalFailure()) return;
  run_emulated(kora_cuda_test::layer_norm_graph(rng, 8, 768), 3, rng, stats);
  if (HasFatalFailure()) return;
  run_emulated(kora_cuda_test::strided_reductions_graph(rng), 2, rng, stats);
  EXPECT_GT(stats.checked, 100);
  report("reductions", stats);
}

// Horizontal pairs (codegen_horizontal.cc): two independent parts in one launch, each on
// its own blocks, of every kind the generator writes: pointwise, reductions of every
// strategy (several launches for multi-block), row-fused softmax beside a transpose.
TEST(CudaCodegenEmulated, HorizontalPairsMatchTheInterpreter) {
  std::mt19937 rng(1129);
  Stats stats;
  for (int round = 0; round < 4 && !HasFatalFailure(); ++round)
    run_emulated(kora_codegen_test::random_layout_graph(rng, round), 2, rng, stats, 12);
  if (HasFatalFailure()) return;
  run_emulated(kora_cuda_test::two_branch_reduce_graph(rng), 4, rng, stats, 40);
  EXPECT_GT(stats.checked, 60);
  EXPECT_EQ(stats.horizontal, stats.candidates);
  EXPECT_GT(stats.multi_launch, 0);
  report("horizontal pairs", stats);
}

TEST(CudaCodegenEmulated, ArgExtremesMatchTheInterpreter) {
  std::mt19937 rng(21);
  Stats stats;
  run_emulated(kora_cuda_test::arg_extreme_graph(rng), 1, rng, stats);
  EXPECT_GE(stats.checked, 24);
  report("argmax and argmin", stats);
}

}  // namespace
