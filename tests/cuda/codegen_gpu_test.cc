// Generated CUDA kernels on a GPU against the reference interpreter: the graphs of
// codegen_test.cc (smaller sets of them), every candidate x schedule compiled for the
// device's architecture, run twice and compared output by output
// (tests/cuda/cuda_harness.h). Skipped, saying why, where no CUDA device can be used.
#include <gtest/gtest.h>

#include <cstdio>

#include "cpu/codegen_graphs.h"
#include "cuda/cuda_harness.h"
#include "cuda/reduce_graphs.h"

namespace {

using namespace kora;
using kora_cuda_test::Stats;

class CudaCodegenGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    device_ = CudaDevice::open(0, &why);
    if (!device_) GTEST_SKIP() << "no CUDA device: " << why;
  }
  void report(const char* what, const Stats& s) {
    std::printf("[ info     ] %s on %s (%s): %d kernels (%d launches) match the interpreter\n",
                what, device_->name().c_str(), device_->arch().c_str(), s.checked, s.launches);
  }
  std::unique_ptr<CudaDevice> device_;
};

TEST_F(CudaCodegenGpu, ElementwiseGraphsMatchTheInterpreter) {
  std::mt19937 rng(2026);
  Stats stats;
  for (int t = 0; t < 3 && !HasFatalFailure(); ++t)
    kora_cuda_test::run_graph(*device_, kora_codegen_test::random_elementwise_graph(rng), 4, rng,
                              stats);
  EXPECT_GT(stats.checked, 100);
  report("elementwise", stats);
}

TEST_F(CudaCodegenGpu, LayoutAndReduceGraphsMatchTheInterpreter) {
  std::mt19937 rng(7);
  Stats stats;
  for (int round = 0; round < 8 && !HasFatalFailure(); ++round)
    kora_cuda_test::run_graph(*device_, kora_codegen_test::random_layout_graph(rng, round), 3, rng,
                              stats);
  EXPECT_GT(stats.checked, 200);
  report("layout and reduce", stats);
}

TEST_F(CudaCodegenGpu, MixedDtypeGraphsMatchTheInterpreter) {
  std::mt19937 rng(5);
  Stats stats;
  kora_cuda_test::run_graph(*device_, kora_codegen_test::bert_mask_graph(rng), 5, rng, stats);
  for (int round = 0; round < 4 && !HasFatalFailure(); ++round)
    kora_cuda_test::run_graph(*device_, kora_codegen_test::random_mask_graph(rng), 3, rng, stats);
  EXPECT_GT(stats.checked, 200);
  report("mixed dtypes", stats);
}

TEST_F(CudaCodegenGpu, ReductionGraphsMatchTheInterpreter) {
  std::mt19937 rng(11);
  Stats stats;
  kora_cuda_test::run_graph(*device_, kora_cuda_test::softmax_graph(rng, 3, 2500), 7, rng, stats);
  if (HasFatalFailure()) return;
  kora_cuda_test::run_graph(*device_, kora_cuda_test::layer_norm_graph(rng, 8, 768), 5, rng, stats);
  if (HasFatalFailure()) return;
  kora_cuda_test::run_graph(*device_, kora_cuda_test::strided_reductions_graph(rng), 2, rng, stats);
  EXPECT_GT(stats.checked, 100);
  report("reductions", stats);
}

TEST_F(CudaCodegenGpu, HorizontalPairsMatchTheInterpreter) {
  std::mt19937 rng(1129);
  Stats stats;
  for (int round = 0; round < 4 && !HasFatalFailure(); ++round)
    kora_cuda_test::run_graph(*device_, kora_codegen_test::random_layout_graph(rng, round), 2, rng,
                              stats, true, 12);
  if (HasFatalFailure()) return;
  kora_cuda_test::run_graph(*device_, kora_cuda_test::two_branch_reduce_graph(rng), 4, rng, stats,
                            true, 40);
  EXPECT_GT(stats.checked, 60);
  report("horizontal pairs", stats);
}

TEST_F(CudaCodegenGpu, ArgExtremesMatchTheInterpreter) {
  std::mt19937 rng(21);
  Stats stats;
  kora_cuda_test::run_graph(*device_, kora_cuda_test::arg_extreme_graph(rng), 1, rng, stats);
  EXPECT_GE(stats.checked, 24);
  report("argmax and argmin", stats);
}

}  // namespace
