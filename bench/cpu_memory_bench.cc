// Memory-bound kernels of the CPU backend against the machine's copy bandwidth. Each
// pattern is a small primitive graph (bias + ReLU, LayerNorm, softmax, a transpose)
// generated as one fused kernel (best schedule of cpu_schedule_space) and as one kernel
// per primitive; the table gives the fused kernel's effective bandwidth (bytes it must
// read and write / median time), the same for memcpy of a buffer as large as the
// pattern's input, and the unfused kernels' summed time.
//
// usage: kora_bench_memory [THREADS]     (default: all cores)
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cpu/codegen.h"
#include "cpu/compile.h"
#include "cpu/measure.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;

// Builds a primitive graph one primitive at a time.
struct GraphBuilder {
  PrimGraph g;
  int counter = 0;

  std::string input(const Shape& shape) {
    const std::string name = "x" + std::to_string(counter++);
    g.values[name] = {DType::kFloat32, shape};
    g.inputs.push_back(name);
    return name;
  }
  std::string add(PrimAttrs attrs, std::vector<std::string> inputs, const Shape& shape) {
    Primitive p;
    p.name = "p" + std::to_string(counter++);
    p.origin = p.name;
    p.attrs = std::move(attrs);
    p.inputs = std::move(inputs);
    p.outputs = {"t" + std::to_string(counter++)};
    g.values[p.outputs[0]] = {DType::kFloat32, shape};
    g.prims.push_back(p);
    return p.outputs[0];
  }
  std::string unary(ScalarOp op, const std::string& a) {
    return add(ElementwiseAttrs{op, {Operand{0, 0}}}, {a}, g.value(a).shape);
  }
  std::string binary(ScalarOp op, const std::string& a, const std::string& b) {
    return add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {a, b}, g.value(a).shape);
  }
  std::string immediate(ScalarOp op, const std::string& a, double v) {
    return add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{-1, v}}}, {a}, g.value(a).shape);
  }
  std::string broadcast(const std::string& a, const Shape& shape) {
    return add(BroadcastAttrs{}, {a}, shape);
  }
  std::string reduce(ReduceOp op, const std::string& a, int64_t axis) {
    Shape shape = g.value(a).shape;
    shape[axis] = 1;
    return add(ReduceAttrs{op, {axis}}, {a}, shape);
  }
  PrimGraph done(const std::string& out) {
    g.outputs = {out};
    return g;
  }
};

PrimGraph bias_relu() {
  GraphBuilder b;
  const Shape shape = {1, 64, 112, 112};
  const std::string x = b.input(shape), bias = b.input({1, 64, 1, 1});
  return b.done(b.unary(ScalarOp::kRelu, b.binary(ScalarOp::kAdd, x, b.broadcast(bias, shape))));
}

PrimGraph layer_norm() {
  GraphBuilder b;
  const Shape shape = {4096, 768};
  const std::string x = b.input(shape);
  const std::string d =
      b.binary(ScalarOp::kSub, x, b.broadcast(b.reduce(ReduceOp::kMean, x, 1), shape));
  const std::string var = b.reduce(ReduceOp::kMean, b.binary(ScalarOp::kMul, d, d), 1);
  const std::string r = b.unary(ScalarOp::kRsqrt, b.immediate(ScalarOp::kAdd, var, 1e-5));
  return b.done(b.binary(ScalarOp::kMul, d, b.broadcast(r, shape)));
}

PrimGraph softmax() {
  GraphBuilder b;
  const Shape shape = {16384, 256};
  const std::string x = b.input(shape);
  const std::string e =
      b.unary(ScalarOp::kExp,
              b.binary(ScalarOp::kSub, x, b.broadcast(b.reduce(ReduceOp::kMax, x, 1), shape)));
  return b.done(b.binary(ScalarOp::kDiv, e, b.broadcast(b.reduce(ReduceOp::kSum, e, 1), shape)));
}

PrimGraph transpose() {
  GraphBuilder b;
  const std::string x = b.input({16, 512, 512});
  return b.done(b.add(LayoutAttrs{layout::Transpose{{0, 2, 1}}}, {x}, {16, 512, 512}));
}

int64_t bytes_of(const PrimGraph& g, const std::string& t) { return numel(g.value(t).shape) * 4; }

// Median milliseconds of the fastest schedule of candidate `c`; negative when the
// generator refuses it.
double time_kernel(const PrimGraph& g, const KernelDag& dag, const Candidate& c) {
  if (!cpu_codegen_supports(g, dag, c)) return -1;
  std::string source = cpu_codegen_prelude();
  std::vector<GeneratedKernel> kernels;
  for (const CpuSchedule& s : cpu_schedule_space(g, dag, c)) {
    kernels.push_back(generate_cpu_kernel(g, dag, c, "k" + std::to_string(kernels.size()), s));
    source += kernels.back().source;
  }
  const CompileResult lib = compile_shared(source);
  std::vector<std::vector<float>> in, out;
  for (const std::string& r : kernels[0].reads)
    in.emplace_back(static_cast<size_t>(numel(g.value(r).shape)), 0.5f);
  for (const std::string& w : kernels[0].writes)
    out.emplace_back(static_cast<size_t>(numel(g.value(w).shape)), 0.0f);
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (auto& v : in) in_ptrs.push_back(v.data());
  for (auto& v : out) out_ptrs.push_back(v.data());
  double best = 1e30;
  for (const GeneratedKernel& k : kernels) {
    using Fn = void (*)(const void* const*, void* const*);
    Fn fn = reinterpret_cast<Fn>(lib.library->symbol(k.symbol));
    best = std::min(best, measure([&](int) { fn(in_ptrs.data(), out_ptrs.data()); }).median_ms);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads =
      argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(threads);
  std::printf("threads %d\n", threads);
  std::printf(
      "| pattern | bytes MB | fused ms | fused GB/s | memcpy GB/s | fused / memcpy "
      "| unfused ms |\n|---|---|---|---|---|---|---|\n");
  const std::pair<const char*, PrimGraph> patterns[] = {{"bias + relu [1,64,112,112]", bias_relu()},
                                                        {"layernorm [4096,768]", layer_norm()},
                                                        {"softmax [16384,256]", softmax()},
                                                        {"transpose [16,512,512]", transpose()}};
  for (const auto& [name, g] : patterns) {
    const KernelDag dag = kernel_dag_of(g);
    std::vector<int> all;
    for (int v = 0; v < dag.size(); ++v) all.push_back(v);
    const Candidate fused = make_candidate(dag, all);
    int64_t bytes = 0;
    for (const std::string& r : kernel_reads(g, dag, fused)) bytes += bytes_of(g, r);
    for (const std::string& w : kernel_writes(g, dag, fused)) bytes += bytes_of(g, w);
    const double fused_ms = time_kernel(g, dag, fused);
    double unfused_ms = 0;
    for (int v = 0; v < dag.size() && unfused_ms >= 0; ++v) {
      const double ms = time_kernel(g, dag, make_candidate(dag, {v}));
      unfused_ms = ms < 0 ? -1 : unfused_ms + ms;
    }
    // memcpy moving as many bytes (half read, half written).
    std::vector<char> src(static_cast<size_t>(bytes / 2), 1), dst(static_cast<size_t>(bytes / 2));
    const double copy_ms =
        measure([&](int) { std::memcpy(dst.data(), src.data(), src.size()); }).median_ms;
    const double copy_gbps = bytes / copy_ms / 1e6;
    if (fused_ms < 0) {
      std::printf("| %s | %.1f | n/a | n/a | %.1f | n/a | n/a |\n", name, bytes / 1e6, copy_gbps);
      continue;
    }
    const double gbps = bytes / fused_ms / 1e6;
    std::printf("| %s | %.1f | %.3f | %.1f | %.1f | %.2f | %.3f |\n", name, bytes / 1e6, fused_ms,
                gbps, copy_gbps, gbps / copy_gbps, unfused_ms);
  }
  return 0;
}
