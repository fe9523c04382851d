// Speed of generated CPU kernels: matmuls 512x512x512 and 128x768x3072 (with a bias +
// GELU-like epilogue variant), ResNet-50 convolutions (3x3 64->64 at 56x56, 1x1 256->64
// at 56x56), a depthwise 3x3 at 112x112x32, a softmax over 128x768 and a SiLU over 1M floats
// in; each schedule of cpu_schedule_space at 1 and 2 threads, the median of timed runs
// reported as GFLOP/s (GB/s for the softmax and the SiLU), out. Graphs built with the CPU tests'
// GraphBuilder (tests/cpu/codegen_harness.h).
//
//   cmake --build build --target kora_bench_codegen && build/kora_bench_codegen
//   KORA_BENCH_DUMP=DIR build/kora_bench_codegen     also writes each generated source
//                                                    into DIR, to read
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cpu/codegen_harness.h"
#include "kora/error.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

const DType F = DType::kFloat32;

void bench(const std::string& name, const PrimGraph& g, const std::vector<int>& members,
           double work, const char* unit) {
  std::mt19937 rng(1);
  const KernelDag dag = kernel_dag_of(g);
  const Candidate c = make_candidate(dag, members);
  if (!cpu_codegen_supports(g, dag, c)) throw Error(name + ": code generation refuses the kernel");
  const std::vector<CpuSchedule> space = cpu_schedule_space(g, dag, c);
  std::string source = cpu_codegen_prelude() +
                       "#include <omp.h>\nextern \"C\" void bench_threads(int n) { "
                       "omp_set_num_threads(n); }\n";
  std::vector<GeneratedKernel> kernels;
  for (size_t i = 0; i < space.size(); ++i) {
    kernels.push_back(generate_cpu_kernel(g, dag, c, "bench" + std::to_string(i), space[i]));
    source += kernels.back().source;
  }
  if (const char* dump = std::getenv("KORA_BENCH_DUMP")) {  // the generated source, to read
    FILE* f = std::fopen((std::string(dump) + "/" + name.substr(0, name.find(' ')) + "_" +
                          std::to_string(kernels[0].source.size()) + ".cc")
                             .c_str(),
                         "w");
    if (f) std::fputs(source.c_str(), f), std::fclose(f);
  }
  const CompileResult lib = compile_shared(source);
  using Fn = void (*)(const void* const*, void* const*);
  auto threads = reinterpret_cast<void (*)(int)>(lib.library->symbol("bench_threads"));
  std::vector<Tensor> inputs;
  std::vector<const void*> in;
  for (const std::string& r : kernels[0].reads)
    inputs.push_back(
        g.constant(r) ? *g.constant(r)
                      : kora_codegen_test::random_tensor(g.value(r).dtype, g.value(r).shape, rng));
  for (const Tensor& t : inputs) in.push_back(t.bytes());
  std::vector<std::vector<float>> outs;
  std::vector<void*> out;
  for (const std::string& w : kernels[0].writes) outs.emplace_back(numel(g.value(w).shape));
  for (auto& o : outs) out.push_back(o.data());
  for (int t : {1, 2}) {
    threads(t);
    for (size_t i = 0; i < space.size(); ++i) {
      const Fn fn = reinterpret_cast<Fn>(lib.library->symbol(kernels[i].symbol));
      fn(in.data(), out.data());
      std::vector<double> times;
      const auto start = std::chrono::steady_clock::now();
      while (
          times.size() < 5 ||
          (times.size() < 50 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0)) {
        const auto t0 = std::chrono::steady_clock::now();
        fn(in.data(), out.data());
        times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      std::printf("[ bench    ] %-34s threads=%d %-52s %8.3f ms %7.1f %s\n", name.c_str(), t,
                  space[i].key().c_str(), med * 1e3, work / med / 1e9, unit);
    }
  }
}

PrimGraph matmul(int64_t m, int64_t k, int64_t n, bool epilogue) {
  std::mt19937 rng(2);
  GraphBuilder b(rng);
  const std::string a = b.input(F, {m, k});
  const std::string w = b.input(F, {k, n}, true);
  const std::string c = b.prim(LinearAttrs{MatMulAttrs{}}, {a, w}, F, {m, n});
  if (epilogue) {
    const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, {1, n}, true)}, F, {m, n});
    const std::string y = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {c, bias}, F, {m, n});
    b.prim(ElementwiseAttrs{ScalarOp::kErf, {Operand{0, 0}}}, {y}, F, {m, n});
  }
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

PrimGraph conv(int64_t c, int64_t m, int64_t hw, int64_t k, int64_t group) {
  std::mt19937 rng(2);
  GraphBuilder b(rng);
  const std::string x = b.input(F, {1, c, hw, hw});
  const std::string w = b.input(F, {m, c / group, k, k}, true);
  ConvAttrs a;
  a.group = group;
  a.strides = {1, 1}, a.dilations = {1, 1}, a.pads_begin = {k / 2, k / 2},
  a.pads_end = {k / 2, k / 2};
  b.prim(LinearAttrs{a}, {x, w}, F, {1, m, hw, hw});
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

void bench_all() {
  bench("matmul 512x512x512", matmul(512, 512, 512, false), {0}, 2.0 * 512 * 512 * 512, "GFLOP/s");
  bench("matmul 128x768x3072", matmul(128, 768, 3072, false), {0}, 2.0 * 128 * 768 * 3072,
        "GFLOP/s");
  bench("matmul 128x768x3072 +bias+erf", matmul(128, 768, 3072, true), {0, 1, 2, 3},
        2.0 * 128 * 768 * 3072, "GFLOP/s");
  bench("conv 3x3 64->64 56x56", conv(64, 64, 56, 3, 1), {0}, 2.0 * 64 * 64 * 9 * 56 * 56,
        "GFLOP/s");
  bench("conv 1x1 256->64 56x56", conv(256, 64, 56, 1, 1), {0}, 2.0 * 256 * 64 * 56 * 56,
        "GFLOP/s");
  bench("depthwise 3x3 32ch 112x112", conv(32, 32, 112, 3, 32), {0}, 2.0 * 32 * 9 * 112 * 112,
        "GFLOP/s");
  // softmax over rows of 768: bytes read + written once
  std::mt19937 rng(2);
  GraphBuilder b(rng);
  const Shape s = {128, 768}, r = {128, 1};
  const std::string x = b.input(F, s);
  const std::string mx = b.prim(ReduceAttrs{ReduceOp::kMax, {1}}, {x}, F, r);
  const std::string d = b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}},
                               {x, b.prim(BroadcastAttrs{}, {mx}, F, s)}, F, s);
  const std::string e = b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {d}, F, s);
  const std::string sum = b.prim(ReduceAttrs{ReduceOp::kSum, {1}}, {e}, F, r);
  b.prim(ElementwiseAttrs{ScalarOp::kDiv, {Operand{0, 0}, Operand{1, 0}}},
         {e, b.prim(BroadcastAttrs{}, {sum}, F, s)}, F, s);
  b.g.outputs = {b.g.prims.back().output()};
  bench("softmax 128x768", b.g, {0, 1, 2, 3, 4, 5, 6}, 2.0 * 4 * 128 * 768, "GB/s");
  // SiLU x * sigmoid(x) over [1, 64, 128, 128] (EfficientNet's, YOLO's activation)
  GraphBuilder sb(rng);
  const Shape a = {1, 64, 128, 128};
  const std::string in = sb.input(F, a);
  const std::string sig =
      sb.prim(ElementwiseAttrs{ScalarOp::kSigmoid, {Operand{0, 0}}}, {in}, F, a);
  sb.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {in, sig}, F, a);
  sb.g.outputs = {sb.g.prims.back().output()};
  bench("silu 64x128x128", sb.g, {0, 1}, 2.0 * 4 * numel(a), "GB/s");
}

}  // namespace

int main() {
  try {
    bench_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kora_bench_codegen: %s\n", e.what());
    return 1;
  }
  return 0;
}
