// The generated tensor-core GEMM (src/cuda/codegen_mma.cc) against a brute-force product:
// random CudaGemms (batches, sizes across tile edges, transposed and strided operands, a
// broadcast operand, alpha, bias, residual, ReLU), every tile, run in the emulator
// (tests/cuda/emulator.h: nvcuda::wmma emulated whole-fragment per lane) on inputs already
// rounded to TF32, so only the order of float32 accumulation differs from the reference;
// compiled by NVRTC for sm_80 and sm_90 (the toolkit's mma.h on its include path); and, on
// a GPU (skipped without one), run for real against the same reference. Then Tacker's pair:
// the GEMM beside CUDA-core kernels in one launch (generate_mma_pair), every pair the
// enumeration offers with TF32, against the interpreter in the emulator and through NVRTC.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cpu/codegen_harness.h"
#include "cpu/compile.h"
#include "cuda/compile_kernels.h"
#include "cuda/driver.h"
#include "cuda/emulator.h"
#include "cuda/library_plan.h"
#include "cuda/nvrtc_compile.h"
#include "frontend/model_builder.h"

namespace {

using namespace kora;

float tf32(float v) {  // to nearest, ties away (cvt.rna.tf32.f32)
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

struct Case {
  CudaGemm g;
  std::vector<std::string> reads;
  std::vector<float> a, b, bias, c;
  int64_t d_size = 0;
};

// A random GEMM reading a, b (and bias, c) from tensors sized for its strides.
Case random_case(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::uniform_real_distribution<float> u(-1, 1);
  Case k;
  CudaGemm& g = k.g;
  g.batch = pick(1, 3);
  g.m = pick(1, 80), g.n = pick(1, 80), g.k = pick(1, 70);
  g.trans_a = pick(0, 1), g.trans_b = pick(0, 1);
  g.ld_a = (g.trans_a ? g.m : g.k) + pick(0, 1) * pick(1, 5);
  g.ld_b = (g.trans_b ? g.k : g.n) + pick(0, 1) * pick(1, 5);
  const int64_t a_rows = g.trans_a ? g.k : g.m, b_rows = g.trans_b ? g.n : g.k;
  g.stride_a = pick(0, 3) == 0 ? 0 : a_rows * g.ld_a;  // sometimes one A for every batch
  g.stride_b = pick(0, 3) == 0 ? 0 : b_rows * g.ld_b;
  g.stride_c = g.m * g.n;
  g.alpha = pick(0, 1) ? 1.0f : u(rng);
  g.relu = pick(0, 1);
  k.reads = {"a", "b"};
  g.read_a = 0, g.read_b = 1;
  auto fill = [&](std::vector<float>& v, int64_t n) {
    v.resize(n);
    for (float& x : v) x = tf32(u(rng));
  };
  fill(k.a, a_rows * g.ld_a * (g.stride_a ? g.batch : 1));
  fill(k.b, b_rows * g.ld_b * (g.stride_b ? g.batch : 1));
  if (pick(0, 1))
    g.read_bias = static_cast<int>(k.reads.size()), k.reads.push_back("bias"), fill(k.bias, g.n);
  if (pick(0, 1))
    g.read_c = static_cast<int>(k.reads.size()), k.reads.push_back("c"),
    fill(k.c, g.batch * g.m * g.n);
  k.d_size = g.batch * g.m * g.n;
  return k;
}

std::vector<double> reference(const Case& k) {
  const CudaGemm& g = k.g;
  std::vector<double> d(k.d_size);
  for (int64_t p = 0; p < g.batch; ++p)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < g.k; ++l)
          s += double(k.a[p * g.stride_a + (g.trans_a ? l * g.lda() + i : i * g.lda() + l)]) *
               k.b[p * g.stride_b + (g.trans_b ? j * g.ldb() + l : l * g.ldb() + j)];
        double v = g.alpha * s;
        const int64_t at = p * g.stride_c + i * g.n + j;
        if (g.read_c >= 0) v += k.c[at];
        if (g.read_bias >= 0) v += k.bias[j];
        if (g.relu) v = std::max(v, 0.0);
        d[at] = v;
      }
  return d;
}

// D's relative L2 distance from the reference, and whether nothing was written past it.
void expect_product(const Case& c, const std::vector<float>& d, const std::string& what) {
  const std::vector<double> want = reference(c);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < c.d_size; ++i)
    err += (d[i] - want[i]) * (d[i] - want[i]), norm += want[i] * want[i];
  EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), 1e-5)
      << what << ": m " << c.g.m << " n " << c.g.n << " k " << c.g.k << " batch " << c.g.batch
      << " trans " << c.g.trans_a << c.g.trans_b;
  EXPECT_EQ(d[c.d_size], 12345.f) << what << " writes past D";
}

const float* read_data(const Case& c, const std::string& r) {
  return r == "a" ? c.a.data() : r == "b" ? c.b.data() : r == "bias" ? c.bias.data() : c.c.data();
}

// NVRTC compiles `source` for sm_80 and sm_90.
void expect_compiles_for_sm80_and_sm90(const std::string& source) {
  kora_test::TempDir dir;
  for (const char* arch : {"sm_80", "sm_90"}) {
    NvrtcOptions o;
    o.arch = arch;
    o.cache_dir = dir.file("cubins");
    EXPECT_FALSE(compile_cubin(source, o).cubin.empty()) << arch;
  }
}

PrimGraph value_graph() {  // the tensors' dtypes, as emulated_program reads them
  PrimGraph g;
  for (const char* t : {"a", "b", "bias", "c", "d"}) g.values[t] = {DType::kFloat32, {1}};
  return g;
}

TEST(CudaMmaGemm, MatchesABruteForceProductInTheEmulator) {
  std::mt19937 rng(1129);
  const PrimGraph graph = value_graph();
  std::vector<Case> cases;
  std::vector<CudaKernel> kernels;
  for (int t = 0; t < 24; ++t) {
    cases.push_back(random_case(rng));
    for (const CudaMmaTile& tile : cuda_mma_tiles())
      kernels.push_back(generate_mma_gemm(cases.back().g, cases.back().reads, {"d"},
                                          "gemm" + std::to_string(kernels.size()), tile));
  }
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  options.flags = {"-O1", "-fPIC", "-shared", "-std=c++17", "-w"};
  const CompileResult lib =
      compile_shared(kora_cuda_test::emulated_program(kernels, graph), options);
  using Entry = void (*)(long long, int, void**);
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Case& c = cases[k / cuda_mma_tiles().size()];
    std::vector<float> d(c.d_size + 1, 12345.f);  // one past the end, to catch overruns
    std::vector<void*> args;
    for (const std::string& r : c.reads) args.push_back(const_cast<float*>(read_data(c, r)));
    args.push_back(d.data());
    const CudaLaunch& l = kernels[k].launches.at(0);
    reinterpret_cast<Entry>(lib.library->symbol("kora_emu_" + l.function))(l.grid(), l.block,
                                                                           args.data());
    expect_product(c, d, kernels[k].symbol);
  }
}

TEST(CudaMmaGemm, MatchesABruteForceProductOnAGpu) {
  std::string why;
  const std::unique_ptr<CudaDevice> device = CudaDevice::open(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  std::mt19937 rng(1129);
  std::vector<Case> cases;
  std::vector<CudaKernel> kernels;
  std::string source = cuda_codegen_prelude();
  for (int t = 0; t < 24; ++t) {
    cases.push_back(random_case(rng));
    for (const CudaMmaTile& tile : cuda_mma_tiles()) {
      kernels.push_back(generate_mma_gemm(cases.back().g, cases.back().reads, {"d"},
                                          "gemm" + std::to_string(kernels.size()), tile));
      source += kernels.back().source;
    }
  }
  kora_test::TempDir dir;
  NvrtcOptions o;
  o.arch = device->arch();
  o.cache_dir = dir.file("cubins");
  const auto module = device->load(compile_cubin(source, o).cubin);
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Case& c = cases[k / cuda_mma_tiles().size()];
    std::vector<CudaDevice::Ptr> args;
    for (const std::string& r : c.reads) {
      const size_t bytes = (r == "a"      ? c.a.size()
                            : r == "b"    ? c.b.size()
                            : r == "bias" ? c.bias.size()
                                          : c.c.size()) *
                           sizeof(float);
      args.push_back(device->alloc(bytes));
      device->to_device(args.back(), read_data(c, r), bytes);
    }
    std::vector<float> d(c.d_size + 1, 12345.f);
    args.push_back(device->alloc(d.size() * sizeof(float)));
    device->to_device(args.back(), d.data(), d.size() * sizeof(float));
    const CudaLaunch& l = kernels[k].launches.at(0);
    device->launch(device->function(*module, l.function), l.grid(), l.block, args);
    device->synchronize();
    device->to_host(d.data(), args.back(), d.size() * sizeof(float));
    for (CudaDevice::Ptr p : args) device->free(p);
    expect_product(c, d, kernels[k].symbol + " on " + device->name());
  }
}

TEST(CudaMmaGemm, CompilesForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(7);
  std::string source = cuda_codegen_prelude();
  for (int t = 0; t < 3; ++t) {
    const Case c = random_case(rng);
    for (const CudaMmaTile& tile : cuda_mma_tiles())
      source += generate_mma_gemm(c.g, c.reads, {"d"},
                                  "g" + std::to_string(t) + "_" + std::to_string(tile.bm), tile)
                    .source;
  }
  expect_compiles_for_sm80_and_sm90(source);
}

// x [2, 24, 40] halved (a node both branches read), then a matrix product by a constant
// with a bias and a ReLU (a GEMM cuBLASLt's epilogue fuses), beside a tanh and a row sum of
// the same tensor (CUDA-core kernels) and another product (two GEMMs in one launch share
// the block's 48 KiB of static shared memory). Every float constant rounded to TF32.
PrimGraph gemm_beside_pointwise_graph(std::mt19937& rng) {
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {2, 24, 40}, o = {2, 24, 36};
  const std::string x = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 0.5}}},
                               {b.input(F, s)}, F, s);
  const std::string m =
      b.prim(LinearAttrs{MatMulAttrs{}}, {x, b.input(F, {1, 40, 36}, true)}, F, o);
  const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, {1, 1, 36}, true)}, F, o);
  const std::string mb =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {m, bias}, F, o);
  const std::string y = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {mb}, F, o);
  const std::string t = b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {x}, F, s);
  const std::string r = b.prim(ReduceAttrs{ReduceOp::kSum, {2}}, {x}, F, {2, 24, 1});
  const std::string m2 =
      b.prim(LinearAttrs{MatMulAttrs{}}, {x, b.input(F, {1, 40, 20}, true)}, F, {2, 24, 20});
  b.g.outputs = {y, t, r, m2};
  for (auto& [name, tensor] : b.g.constants) {
    float* v = reinterpret_cast<float*>(tensor.mutable_bytes());
    for (int64_t i = 0; i < tensor.numel(); ++i) v[i] = tf32(v[i]);
  }
  return b.g;
}

struct Pairs {
  KernelDag dag;
  std::vector<Candidate> candidates;  // the pairs with a GEMM
  std::vector<CudaKernel> kernels;    // each pair x each tile
};

Pairs mma_pairs(const PrimGraph& g) {
  Pairs p{kernel_dag_of(g), {}, {}};
  CandidateOptions co;
  co.max_size = 4;
  co.horizontal_pairs = 200;
  co = cuda_candidate_options(g, co, true);
  EXPECT_TRUE(co.horizontal_linear);
  for (const Candidate& c : enumerate_candidates(p.dag, co))
    if (cuda_mma_pair_supports(g, p.dag, c)) {
      EXPECT_FALSE(cuda_codegen_supports(g, p.dag, c));
      EXPECT_FALSE(cuda_gemm_plan(g, p.dag, c));
      p.candidates.push_back(c);
      for (const CudaMmaTile& tile : cuda_mma_tiles())
        p.kernels.push_back(
            generate_mma_pair(g, p.dag, c, "pair" + std::to_string(p.kernels.size()), tile));
    }
  return p;
}

TEST(CudaMmaGemm, PairsBesideCudaCoreKernelsMatchTheInterpreterInTheEmulator) {
  std::mt19937 rng(31);
  const PrimGraph g = gemm_beside_pointwise_graph(rng);
  const Pairs p = mma_pairs(g);
  ASSERT_GE(p.candidates.size(), 4u);
  int two_gemms = 0;
  for (const Candidate& c : p.candidates) {
    int gemms = 0;
    for (const Candidate& part : candidate_parts(p.dag, c))
      gemms += cuda_gemm_plan(g, p.dag, part).has_value();
    two_gemms += gemms == 2;
  }
  EXPECT_GT(two_gemms, 0);
  kora_test::TempDir dir;
  CxxCompileOptions options;
  options.cache_dir = dir.file("kernels");
  options.flags = {"-O1", "-fPIC", "-shared", "-std=c++17", "-w"};
  const CompileResult lib = compile_shared(kora_cuda_test::emulated_program(p.kernels, g), options);
  using Entry = void (*)(long long, int, void**);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const CudaKernel& ck = p.kernels[k];
    const Candidate& c = p.candidates[k / cuda_mma_tiles().size()];
    std::map<std::string, Tensor> values;
    for (const std::string& r : ck.reads) {
      if (const Tensor* t = g.constant(r)) {
        values[r] = *t;
        continue;
      }
      Tensor t = kora_codegen_test::random_tensor(DType::kFloat32, g.value(r).shape, rng);
      float* v = reinterpret_cast<float*>(t.mutable_bytes());
      for (int64_t i = 0; i < t.numel(); ++i) v[i] = tf32(v[i]);
      values[r] = t;
    }
    for (int v : c.members) {
      const Primitive& prim = g.prims[p.dag.prim[v]];
      std::vector<const Tensor*> in;
      for (const std::string& i : prim.inputs) in.push_back(&values.at(i));
      values[prim.output()] = run_primitive(g, prim, in).at(0);
    }
    std::vector<void*> args;
    for (const std::string& r : ck.reads)
      args.push_back(const_cast<std::byte*>(values.at(r).bytes()));
    std::vector<std::vector<float>> outs;
    for (const std::string& w : ck.writes) outs.emplace_back(numel(g.value(w).shape) + 1, 12345.f);
    for (auto& o : outs) args.push_back(o.data());
    for (const CudaLaunch& l : ck.launches) {
      EXPECT_EQ(l.block, k % 2 ? 32 : 128);  // the tile's warps, for every part
      reinterpret_cast<Entry>(lib.library->symbol("kora_emu_" + l.function))(l.grid(), l.block,
                                                                             args.data());
    }
    for (size_t w = 0; w < ck.writes.size(); ++w) {
      EXPECT_EQ(kora_codegen_test::compare(values.at(ck.writes[w]), outs[w].data()), "")
          << ck.symbol << " output " << ck.writes[w] << "\n"
          << ck.source;
      EXPECT_EQ(outs[w].back(), 12345.f) << ck.symbol << " writes past " << ck.writes[w];
    }
  }
  std::printf("[ info     ] %zu pairs of a tensor-core GEMM and CUDA-core kernels, %zu kernels\n",
              p.candidates.size(), p.kernels.size());
}

TEST(CudaMmaGemm, PairsCompileForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(31);
  const PrimGraph g = gemm_beside_pointwise_graph(rng);
  const Pairs p = mma_pairs(g);
  std::string source = cuda_codegen_prelude();
  for (const CudaKernel& k : p.kernels) source += k.source;
  expect_compiles_for_sm80_and_sm90(source);
}

}  // namespace
