// Generating and compiling a model's CUDA candidate kernels (src/cuda/compile_kernels.h)
// without a GPU: a softmax followed by a matmul, partitioned and enumerated as kora profile
// does; every distinct candidate without the matmul is generated with each schedule and
// compiled by NVRTC (several programs, on two threads); the matmul's candidates are left
// to libraries; a second run finds every program in the cache.
#include "cuda/compile_kernels.h"

#include <gtest/gtest.h>

#include "cuda/nvrtc_compile.h"
#include "cuda/reduce_graphs.h"
#include "frontend/model_builder.h"

namespace {

using namespace kora;

TEST(CudaKernels, GeneratesAndCompilesEveryCandidate) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(3);
  PrimGraph g = kora_cuda_test::softmax_graph(rng, 4, 64);
  // y = softmax(x) @ w
  const std::string s = g.prims.back().output();
  g.values["w"] = {DType::kFloat32, {64, 8}};
  g.constants["w"] = kora_codegen_test::random_tensor(DType::kFloat32, {64, 8}, rng);
  g.values["y"] = {DType::kFloat32, {4, 8}};
  Primitive mm;
  mm.name = "mm";
  mm.attrs = LinearAttrs{MatMulAttrs{}};
  mm.inputs = {s, "w"};
  mm.outputs = {"y"};
  g.prims.push_back(mm);
  g.outputs = {"y"};

  kora_test::TempDir dir;
  CudaKernelsOptions options;
  options.cache_dir = dir.file("cubins");
  options.kernels_per_program = 40;
  options.threads = 2;
  const CudaKernelsSummary a = compile_cuda_kernels(g, options);
  EXPECT_EQ(a.arch, "sm_80");
  EXPECT_GT(a.kernels, 20);
  EXPECT_GT(a.supported, 10);
  EXPECT_LT(a.supported, a.kernels);  // candidates with the matmul
  EXPECT_GT(a.implementations, 9 * a.supported);
  EXPECT_EQ(a.programs, (a.implementations + 39) / 40);
  EXPECT_EQ(a.cached, 0);
  EXPECT_TRUE(a.failures.empty()) << a.failures.front().error;
  const CudaKernelsSummary b = compile_cuda_kernels(g, options);
  EXPECT_EQ(b.implementations, a.implementations);
  EXPECT_EQ(b.cached, b.programs);
  const std::string text = format_cuda_kernels_summary(a);
  EXPECT_NE(text.find("target cuda (sm_80)"), std::string::npos) << text;
  std::printf("[ info     ] %s", text.c_str());
}

}  // namespace
