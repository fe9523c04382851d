// Benchmark of the CPU kernels for linear primitives: representative matmul and
// convolution shapes in; a table of GFLOP/s out, for oneDNN kernels (plain and blocked
// convolution layouts, src/cpu/onednn_kernel.h) and generated kernels
// (src/cpu/codegen.h; "n/a" where the generator does not take the primitive),
// at 1 and 2 threads, timed with kora::measure (warm-up, median), and what building the
// default oneDNN kernel costs (onednn_supports + make_onednn_kernel). Also prints the
// machine's memcpy bandwidth for reference.
//
//   build/kora_bench_linear            all shapes
//   build/kora_bench_linear conv       shapes whose name contains "conv"
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen.h"
#include "cpu/compile.h"
#include "cpu/library.h"
#include "cpu/measure.h"
#include "cpu/onednn_kernel.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;

struct Case {
  std::string name;
  PrimGraph graph;
};

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> u(-1, 1);
  float* p = reinterpret_cast<float*>(t.mutable_bytes());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  return t;
}

// One linear primitive: input "x" (runtime), weights "w" (constant), output "y".
PrimGraph one_linear(const Shape& x, const Shape& w, const Shape& y, LinearAttrs attrs,
                     std::mt19937& rng) {
  PrimGraph g;
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.values["x"] = {DType::kFloat32, x};
  g.values["w"] = {DType::kFloat32, w};
  g.values["y"] = {DType::kFloat32, y};
  g.constants["w"] = random_tensor(w, rng);
  Primitive p;
  p.name = p.origin = "linear";
  p.attrs = std::move(attrs);
  p.inputs = {"x", "w"};
  p.outputs = {"y"};
  g.prims.push_back(p);
  return g;
}

PrimGraph matmul(int64_t m, int64_t k, int64_t n, std::mt19937& rng) {
  return one_linear({m, k}, {k, n}, {m, n}, MatMulAttrs{}, rng);
}

PrimGraph conv(int64_t c, int64_t m, int64_t hw, int64_t kernel, int64_t stride, int64_t group,
               std::mt19937& rng) {
  const int64_t pad = kernel / 2, out = (hw + 2 * pad - kernel) / stride + 1;
  ConvAttrs a{group, {stride, stride}, {1, 1}, {pad, pad}, {pad, pad}};
  return one_linear({1, c, hw, hw}, {m, c / group, kernel, kernel}, {1, m, out, out}, a, rng);
}

double copy_bandwidth() {
  const size_t bytes = size_t{256} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  const Measurement t = measure([&](int) { std::memcpy(b.data(), a.data(), bytes); });
  return static_cast<double>(bytes) / (t.median_ms * 1e-3) / 1e9;
}

std::string gflops(double flops, double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", flops / (ms * 1e-3) / 1e9);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  std::mt19937 rng(1);
  std::vector<Case> cases = {
      {"matmul 512x512x512", matmul(512, 512, 512, rng)},
      {"bert matmul 128x768x768", matmul(128, 768, 768, rng)},
      {"bert matmul 128x768x3072", matmul(128, 768, 3072, rng)},
      {"vit matmul 197x768x768", matmul(197, 768, 768, rng)},
      {"resnet conv 3x3 64->64 56", conv(64, 64, 56, 3, 1, 1, rng)},
      {"resnet conv 1x1 256->64 56", conv(256, 64, 56, 1, 1, 1, rng)},
      {"resnet conv 7x7/2 3->64 224", conv(3, 64, 224, 7, 2, 1, rng)},
      {"mbv2 conv dw 3x3 32 112", conv(32, 32, 112, 3, 1, 32, rng)},
      // More shapes behind the layout policy (onednn::blocked_is_faster).
      {"resnet conv 1x1 64->256 56", conv(64, 256, 56, 1, 1, 1, rng)},
      {"resnet conv 1x1 1024->256 14", conv(1024, 256, 14, 1, 1, 1, rng)},
      {"resnet conv 3x3 256->256 14", conv(256, 256, 14, 3, 1, 1, rng)},
      {"resnet conv 1x1/2 256->512 56", conv(256, 512, 56, 1, 2, 1, rng)},
      {"mbv2 conv dw 3x3/2 96 112", conv(96, 96, 112, 3, 2, 96, rng)},
      // Grouped pointwise convolutions: G GEMMs on plain tensors.
      {"squeezebert conv 1x1 g4 768 12", conv(768, 768, 12, 1, 1, 4, rng)},
      {"squeezebert conv 1x1 g4 768->3072 12", conv(768, 3072, 12, 1, 1, 4, rng)},
      {"shufflenet conv 1x1 g3 240 28", conv(240, 240, 28, 1, 1, 3, rng)},
      {"conv 1x1 g8 64 56", conv(64, 64, 56, 1, 1, 8, rng)},
      {"conv 1x1 g32 128 56", conv(128, 128, 56, 1, 1, 32, rng)},
  };
  std::printf("memcpy 256 MiB: %.1f GB/s copied (read + write traffic is twice that)\n",
              copy_bandwidth());
  std::printf("%-30s %6s %3s %9s %9s %9s %8s  %s\n", "shape", "GFLOP", "thr", "dnn-plain",
              "dnn-block", "generated", "build ms", "oneDNN implementation (plain / blocked)");
  for (const Case& c : cases) {
    if (c.name.find(filter) == std::string::npos) continue;
    const PrimGraph& g = c.graph;
    const KernelDag dag = kernel_dag_of(g);
    const Candidate cand = make_candidate(dag, {0});
    const double flops = static_cast<double>(prim_flops(g, g.prims[0]));
    const bool is_conv = std::holds_alternative<ConvAttrs>(std::get<LinearAttrs>(g.prims[0].attrs));
    const std::vector<std::string> reads = kernel_reads(g, dag, cand);
    std::vector<Tensor> inputs;
    std::vector<const void*> in;
    for (const std::string& r : reads) {
      const Tensor* k = g.constant(r);
      inputs.push_back(k ? *k : random_tensor(g.value(r).shape, rng));
      in.push_back(inputs.back().bytes());
    }
    std::vector<float> y(numel(g.value("y").shape));
    void* out[] = {y.data()};
    // The generated kernel, if the generator takes a linear primitive.
    using Fn = void (*)(const void* const*, void* const*);
    Fn generated = nullptr;
    CompileResult lib;
    try {
      const GeneratedKernel gk = generate_cpu_kernel(g, dag, cand, "bench_kernel");
      lib = compile_shared(cpu_codegen_prelude() + gk.source);
      generated = reinterpret_cast<Fn>(lib.library->symbol(gk.symbol));
    } catch (const Error&) {
    }
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);  // before building: oneDNN partitions work then
      std::string cols[3], impls[2];
      // What the profiler pays before measuring: the capability check and construction
      // (primitive creation, weights reorder) of the default kernel; oneDNN's primitive
      // cache is cold for the first thread count.
      const auto t0 = std::chrono::steady_clock::now();
      if (!onednn_supports(g, dag, cand)) throw Error(c.name + ": not supported");
      make_onednn_kernel(g, dag, cand);
      const double build_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const onednn::ConvLayout layouts[] = {onednn::ConvLayout::kPlain,
                                            onednn::ConvLayout::kBlocked};
      for (int l = 0; l < (is_conv ? 2 : 1); ++l) {
        auto kernel = onednn::make_kernel(g, dag, cand, layouts[l], &impls[l]);
        const Measurement t = measure([&](int) { kernel->run(in.data(), out); });
        cols[l] = gflops(flops, t.median_ms);
      }
      if (!is_conv) cols[1] = "-";
      if (generated) {
        const Measurement t = measure([&](int) { generated(in.data(), out); });
        cols[2] = gflops(flops, t.median_ms);
      } else {
        cols[2] = "n/a";
      }
      std::printf("%-30s %6.3f %3d %9s %9s %9s %8.2f  %s%s%s\n", c.name.c_str(), flops / 1e9,
                  threads, cols[0].c_str(), cols[1].c_str(), cols[2].c_str(), build_ms,
                  impls[0].c_str(), is_conv ? " / " : "", impls[1].c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
