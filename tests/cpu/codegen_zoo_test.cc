// Manual check of CPU code generation on real models (not run by default: DISABLED_; run
// with  KORA_ZOO=/path/to/models/zoo build/tests/kora_tests --gtest_also_run_disabled_tests
// --gtest_filter='*CpuCodegenZoo*'): each *.onnx there imported, split into primitives,
// partitioned as `kora orchestrate` does, candidates (up to 8 members) enumerated per
// segment; prints the share of distinct candidates (by signature) cpu_codegen_supports,
// generates every supported one (generation errors are failures) and compiles a sample of
// 150 of them with their default schedule.
#include <cstdlib>
#include <filesystem>
#include <set>

#include "cpu/codegen_harness.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/frontend.h"
#include "kora/partition.h"

namespace {

using namespace kora;

TEST(DISABLED_CpuCodegenZoo, ModelsGenerateAndCompile) {
  const char* env = std::getenv("KORA_ZOO");
  const std::string dir = env ? env : "models/zoo";
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
          ADD_FAILURE() << path << ": " << e.what();
          continue;
        }
        if (sampled < 150 && supported % 7 == 0) source += k.source, ++sampled;
      }
    }
    kora_test::TempDir tmp;
    CxxCompileOptions options;
    options.cache_dir = tmp.file("kernels");
    EXPECT_NO_THROW(compile_shared(source, options)) << path;
    std::printf("[ zoo      ] %-60s %6d distinct candidates, %5.1f%% supported, %d compiled\n",
                path.c_str(), distinct, 100.0 * supported / std::max(distinct, 1), sampled);
    int shown = 0;
    for (const auto& [what, n] : refused_kinds)
      if (shown++ < 6) std::printf("[ zoo      ]     refused member: %s (%d)\n", what.c_str(), n);
  }
}

}  // namespace
