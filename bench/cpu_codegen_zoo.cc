// Manual check of CPU code generation on real models: a directory of ONNX models in; per
// model the share of distinct candidates (by signature) cpu_codegen_supports and the
// member kinds it refuses most, out. Each *.onnx there imported, split into primitives,
// partitioned as `kora orchestrate` does, candidates (up to 8 members) enumerated per
// segment; every supported one generated (generation errors are failures) and a sample
// of 150 of them compiled with their default schedule (into a temporary kernel cache,
// kora_test::TempDir of tests/frontend/model_builder.h). Exits 1 on any failure.
//
//   cmake --build build --target kora_bench_codegen_zoo
//   build/kora_bench_codegen_zoo [DIR]     DIR: the models (default $KORA_ZOO, else models/zoo)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cpu/codegen_harness.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/frontend.h"
#include "kora/partition.h"

namespace {

using namespace kora;

// Returns the number of failures.
int check_zoo(const std::string& dir) {
  int failures = 0;
  std::vector<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".onnx") models.push_back(e.path().string());
  std::sort(models.begin(), models.end());
  for (const std::string& path : models) {
    const PrimGraph g = fission(import_onnx(path));
    const KernelDag dag = kernel_dag_of(g);
    std::set<uint64_t> seen;
    int distinct = 0, supported = 0;
    std::map<std::string, int> refused_kinds;
    std::string source = cpu_codegen_prelude();
    int sampled = 0;
    for (const Segment& seg : partition_dag(dag)) {
      const KernelDag sub = sub_dag(dag, seg.begin, seg.end);
      CandidateOptions co;
      co.max_size = 8;
      for (const Candidate& c : enumerate_candidates(sub, co)) {
        if (!seen.insert(canonical_signature(g, sub, c)).second) continue;
        ++distinct;
        if (!cpu_codegen_supports(g, sub, c)) {
          for (int v : c.members) {
            const Primitive& p = g.prims[sub.prim[v]];
            std::string what = prim_kind_name(p.kind());
            for (const std::string& t : p.inputs)
              what += std::string(" ") + dtype_name(g.value(t).dtype);
            refused_kinds[what]++;
          }
          continue;
        }
        ++supported;
        GeneratedKernel k;
        try {
          k = generate_cpu_kernel(g, sub, c, "k" + std::to_string(supported));
        } catch (const Error& e) {
          std::fprintf(stderr, "FAILED %s: %s\n", path.c_str(), e.what());
          ++failures;
          continue;
        }
        if (sampled < 150 && supported % 7 == 0) source += k.source, ++sampled;
      }
    }
    kora_test::TempDir tmp;
    CxxCompileOptions options;
    options.cache_dir = tmp.file("kernels");
    try {
      compile_shared(source, options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FAILED %s: compiling the sample: %s\n", path.c_str(), e.what());
      ++failures;
    }
    std::printf("[ zoo      ] %-60s %6d distinct candidates, %5.1f%% supported, %d compiled\n",
                path.c_str(), distinct, 100.0 * supported / std::max(distinct, 1), sampled);
    int shown = 0;
    for (const auto& [what, n] : refused_kinds)
      if (shown++ < 6) std::printf("[ zoo      ]     refused member: %s (%d)\n", what.c_str(), n);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("KORA_ZOO");
  const std::string dir = argc > 1 ? argv[1] : env ? env : "models/zoo";
  if (argc > 2) {
    std::fprintf(stderr,
                 "usage: kora_bench_codegen_zoo [DIR]  (default $KORA_ZOO, else models/zoo)\n");
    return 2;
  }
  try {
    const int failures = check_zoo(dir);
    if (failures > 0) std::fprintf(stderr, "%d failures\n", failures);
    return failures > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kora_bench_codegen_zoo: %s\n", e.what());
    return 1;
  }
}
