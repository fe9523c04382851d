// Kernel speed under two sets of compiler flags, on a real model's kernels: an ONNX model
// in; per kind of kernel the geometric mean and the total of B/A, and the kernels B slows
// most, out. The model's unique candidate kernels that code generation supports,
// enumerated as `kora profile` does, every KORA_AB_EVERY-th of them (default 3), default
// schedule, on KORA_AB_THREADS threads (default 1: with two, a busy machine's scheduler
// turns barrier waits into 4 ms stalls that swamp what the flags change); compiled with
// the kernel flags of src/cpu/compile.h without their optimization flags, plus
// KORA_AB_A (default -O3), and again plus KORA_AB_B (default: GCC's default optimization
// flags). Each kernel is then measured A, B, B, A, A, B (each variant: the least of its
// three medians, since load only adds time), so that load on a shared machine that comes
// and goes hits both variants alike. The kernels B slows most are listed by time, or by
// ratio with KORA_AB_BY_RATIO=1. Random inputs from the CPU tests' harness
// (tests/cpu/codegen_harness.h).
//
//   cmake --build build --target kora_bench_compile_flags
//   KORA_AB_A=-O3 KORA_AB_B=-O2 build/kora_bench_compile_flags models/zoo/mobilenet_v2.onnx
//   (the model may also come from KORA_AB_MODEL)
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "cpu/codegen_harness.h"
#include "cpu/measure.h"
#include "kora/fission.h"
#include "kora/frontend.h"
#include "kora/orchestration.h"

namespace {

using namespace kora;

// The optimization flags default_compile_flags() gives GCC.
const char* const kDefaultB = "-O2 -fvect-cost-model=dynamic -fpeel-loops";

std::vector<std::string> flags_with(const char* env, const char* fallback) {
  std::vector<std::string> flags;
  for (const std::string& f : default_compile_flags(CxxCompileOptions{}.compiler))
    if (f.rfind("-O", 0) != 0 && f.rfind("-fvect-cost-model", 0) != 0 && f != "-fpeel-loops")
      flags.push_back(f);
  std::istringstream in(std::getenv(env) ? std::getenv(env) : fallback);
  for (std::string f; in >> f;) flags.push_back(f);
  return flags;
}

struct Kernel {
  std::string name, kind;
  GeneratedKernel code;
  std::vector<Tensor> in, out;
  using Fn = void (*)(const void* const*, void* const*);
  Fn fn[2] = {nullptr, nullptr};
  std::shared_ptr<SharedLibrary> lib[2];
  double ms[2] = {0, 0};
  std::string rounds;  // every measurement, in order
};

void compare_flags(const char* model) {
  const int every = std::getenv("KORA_AB_EVERY") ? std::atoi(std::getenv("KORA_AB_EVERY")) : 3;
  const std::vector<std::string> flags[2] = {flags_with("KORA_AB_A", "-O3"),
                                             flags_with("KORA_AB_B", kDefaultB)};
  omp_set_num_threads(std::getenv("KORA_AB_THREADS") ? std::atoi(std::getenv("KORA_AB_THREADS"))
                                                     : 1);
  const PrimGraph g = fission(import_onnx(model));
  const KernelDag dag = kernel_dag_of(g);
  std::vector<SegmentCandidates> segments;
  for (const Segment& s : partition_dag(dag, PartitionOptions{}))
    segments.push_back(segment_candidates(g, dag, s, CandidateOptions{}));
  std::unordered_set<uint64_t> seen;
  std::vector<Kernel> kernels;
  std::mt19937 rng(1);
  int index = 0;
  for (const SegmentCandidates& s : segments)
    for (const Candidate& c : s.candidates) {
      if (!seen.insert(c.signature).second || !cpu_codegen_supports(g, s.sub, c)) continue;
      if (index++ % every != 0) continue;
      Kernel k;
      k.code = generate_cpu_kernel(g, s.sub, c, "k" + std::to_string(kernels.size()));
      k.kind = "pointwise/layout";
      for (int v : c.members) {
        const Primitive& p = g.prims[s.sub.prim[v]];
        if (p.kind() == PrimKind::kReduce && k.kind == "pointwise/layout") k.kind = "reduce";
        if (p.kind() == PrimKind::kLinear)
          k.kind = std::holds_alternative<MatMulAttrs>(std::get<LinearAttrs>(p.attrs)) ? "matmul"
                                                                                       : "conv";
        if (k.name.size() < 80) k.name += (k.name.empty() ? "" : ", ") + p.name;
      }
      for (const std::string& r : k.code.reads)
        k.in.push_back(g.constant(r) ? *g.constant(r)
                                     : kora_codegen_test::random_tensor(g.value(r).dtype,
                                                                        g.value(r).shape, rng));
      for (const std::string& w : k.code.writes)
        k.out.emplace_back(g.value(w).dtype, g.value(w).shape);
      kernels.push_back(std::move(k));
    }
  // Compile: units of 32 kernels, both variants, all cores.
  const size_t per_unit = 32, units = (kernels.size() + per_unit - 1) / per_unit;
  std::atomic<size_t> next{0};
  std::atomic<double> seconds[2] = {0.0, 0.0};
  auto worker = [&]() {
    for (size_t job; (job = next++) < 2 * units;) {
      const int v = static_cast<int>(job % 2);
      const size_t u = job / 2;
      std::string source = cpu_codegen_prelude();
      for (size_t i = u * per_unit; i < std::min(kernels.size(), (u + 1) * per_unit); ++i)
        source += kernels[i].code.source;
      CxxCompileOptions options;
      options.flags = flags[v];
      const CompileResult r = compile_shared(source, options);
      seconds[v].fetch_add(r.seconds);
      for (size_t i = u * per_unit; i < std::min(kernels.size(), (u + 1) * per_unit); ++i) {
        kernels[i].lib[v] = r.library;
        kernels[i].fn[v] = reinterpret_cast<Kernel::Fn>(r.library->symbol(kernels[i].code.symbol));
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i)
    threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  // Measure alternately.
  MeasureOptions mo;
  mo.warmup = 2, mo.min_samples = 5, mo.max_samples = 40, mo.max_seconds = 0.3;
  for (Kernel& k : kernels) {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (const Tensor& t : k.in) in.push_back(t.bytes());
    for (Tensor& t : k.out) out.push_back(t.mutable_bytes());
    std::vector<double> ms[2];
    for (int v : {0, 1, 1, 0, 0, 1}) {
      ms[v].push_back(measure([&](int) { k.fn[v](in.data(), out.data()); }, mo).median_ms);
      char buf[32];
      std::snprintf(buf, sizeof buf, " %c %.3f", "AB"[v], ms[v].back());
      k.rounds += buf;
    }
    for (int v : {0, 1}) k.ms[v] = *std::min_element(ms[v].begin(), ms[v].end());
  }
  std::map<std::string, std::vector<const Kernel*>> by_kind;
  for (const Kernel& k : kernels) {
    by_kind[k.kind].push_back(&k);
    by_kind["all"].push_back(&k);
  }
  std::printf("[ flags    ] %s, %zu kernels, %d threads; A: %s, B: %s\n", model, kernels.size(),
              omp_get_max_threads(), std::getenv("KORA_AB_A") ? std::getenv("KORA_AB_A") : "-O3",
              std::getenv("KORA_AB_B") ? std::getenv("KORA_AB_B") : kDefaultB);
  std::printf("[ flags    ] compile wall seconds (summed over units): A %.1f, B %.1f\n",
              seconds[0].load(), seconds[1].load());
  for (const auto& [kind, ks] : by_kind) {
    double log_sum = 0, a = 0, b = 0;
    int slower = 0, faster = 0;
    for (const Kernel* k : ks) {
      log_sum += std::log(k->ms[1] / k->ms[0]);
      a += k->ms[0], b += k->ms[1];
      slower += k->ms[1] > 1.1 * k->ms[0];
      faster += k->ms[1] < k->ms[0] / 1.1;
    }
    std::printf(
        "[ flags    ] %-17s %5zu kernels: B/A geomean %.3f, total %.3f (A %.2f ms, B %.2f ms); "
        "B slower by >10%%: %d, faster by >10%%: %d\n",
        kind.c_str(), ks.size(), std::exp(log_sum / static_cast<double>(ks.size())), b / a, a, b,
        slower, faster);
  }
  // The kernels B slows most: by time, or with KORA_AB_BY_RATIO, by ratio.
  const bool by_ratio = std::getenv("KORA_AB_BY_RATIO") != nullptr;
  std::vector<const Kernel*> worst;
  for (const Kernel& k : kernels) worst.push_back(&k);
  std::sort(worst.begin(), worst.end(), [&](const Kernel* x, const Kernel* y) {
    return by_ratio ? x->ms[1] / x->ms[0] > y->ms[1] / y->ms[0]
                    : x->ms[1] - x->ms[0] > y->ms[1] - y->ms[0];
  });
  for (size_t i = 0; i < std::min<size_t>(10, worst.size()); ++i)
    std::printf("[ flags    ] B loses %.3f ms: %s %s %.3f -> %.3f ms (%s;%s)\n",
                worst[i]->ms[1] - worst[i]->ms[0], worst[i]->code.symbol.c_str(),
                worst[i]->kind.c_str(), worst[i]->ms[0], worst[i]->ms[1], worst[i]->name.c_str(),
                worst[i]->rounds.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const char* model = argc > 1 ? argv[1] : std::getenv("KORA_AB_MODEL");
  if (!model || argc > 2) {
    std::fprintf(stderr,
                 "usage: kora_bench_compile_flags MODEL.onnx (or KORA_AB_MODEL=MODEL.onnx)\n"
                 "  KORA_AB_A, KORA_AB_B: the two flag sets (default -O3, and \"%s\")\n"
                 "  KORA_AB_EVERY (3), KORA_AB_THREADS (1), KORA_AB_BY_RATIO\n",
                 kDefaultB);
    return 2;
  }
  try {
    compare_flags(model);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kora_bench_compile_flags: %s\n", e.what());
    return 1;
  }
  return 0;
}
