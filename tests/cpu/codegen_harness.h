// Test harness for CPU code generation (tests/cpu/codegen_*_test.cc): a builder of random
// primitive graphs (inputs, constants, primitives with their output types) and the check
// every generated kernel goes through: each candidate of the graph the generator supports,
// with each schedule of cpu_schedule_space, generated and compiled together into one
// library, run twice on random inputs (scratch reused), each written tensor compared with
// run_primitive() applied member by member: exact for integers and bools; for float32 NaN
// and inf at the same places and relative L2 error below 1e-4 on the rest.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen.h"
#include "cpu/compile.h"
#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora_codegen_test {

using namespace kora;

inline Tensor random_tensor(DType t, const Shape& shape, std::mt19937& rng, double lo = -2,
                            double hi = 2) {
  Tensor x(t, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t == DType::kFloat32)
      set_element(x, i, u(rng));
    else if (t == DType::kBool)
      set_element_int(x, i, rng() % 2);
    else
      set_element_int(x, i, static_cast<int64_t>(std::floor(u(rng))));
  }
  return x;
}

class GraphBuilder {
 public:
  explicit GraphBuilder(std::mt19937& rng) : rng_(rng) { g.name = "random"; }

  // A runtime input (values drawn per run in [lo, hi)) or a constant drawn now.
  std::string input(DType t, const Shape& shape, bool constant = false, double lo = -2,
                    double hi = 2) {
    const std::string name = fresh(constant ? "w" : "x");
    g.values[name] = {t, shape};
    if (constant)
      g.constants[name] = random_tensor(t, shape, rng_, lo, hi);
    else
      g.inputs.push_back(name);
    return name;
  }
  std::string prim(PrimAttrs attrs, std::vector<std::string> inputs, DType t, const Shape& shape) {
    Primitive p;
    p.name = fresh("p");
    p.origin = p.name;
    p.attrs = std::move(attrs);
    p.inputs = std::move(inputs);
    p.outputs = {fresh("t")};
    g.values[p.outputs[0]] = {t, shape};
    g.prims.push_back(p);
    return p.outputs[0];
  }
  const ValueInfo& info(const std::string& t) const { return g.values.at(t); }

  PrimGraph g;

 private:
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  std::mt19937& rng_;
  int counter_ = 0;
};

struct CheckStats {
  int kernels = 0;         // (candidate, schedule) pairs generated, run and compared
  int candidates = 0;      // supported candidates
  int refused = 0;         // candidates the generator does not support
  int multi_output = 0;    // kernels writing several tensors
  int with_schedules = 0;  // candidates with more than one schedule
};

// Compares got with want; returns an empty string when they agree.
inline std::string compare(const Tensor& want, const void* got) {
  const int64_t n = want.numel();
  if (want.dtype() != DType::kFloat32) {
    if (std::memcmp(want.bytes(), got, want.nbytes()) == 0) return "";
    for (int64_t i = 0; i < n; ++i) {
      Tensor g(want.dtype(), {n}, got, want.nbytes());
      if (g.int64_at(i) != want.int64_at(i))
        return "element " + std::to_string(i) + ": " + std::to_string(g.int64_at(i)) + " vs " +
               std::to_string(want.int64_at(i));
    }
    return "bytes differ";
  }
  const float* w = reinterpret_cast<const float*>(want.bytes());
  const float* g = static_cast<const float*>(got);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      if (!(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]))
        return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " vs " +
               std::to_string(w[i]);
      continue;
    }
    err += (double(g[i]) - w[i]) * (double(g[i]) - w[i]);
    norm += double(w[i]) * w[i];
  }
  const double rel = std::sqrt(err) / std::max(std::sqrt(norm), 1e-6);
  if (rel < 1e-4) return "";
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(g[i] - w[i]) > 1e-3 * std::max(1.0f, std::fabs(w[i])))
      return "relative L2 " + std::to_string(rel) + ", first bad element " + std::to_string(i) +
             ": " + std::to_string(g[i]) + " vs " + std::to_string(w[i]);
  return "relative L2 " + std::to_string(rel);
}

// Compile options for many small test kernels: -O1 (compiling dominates the tests'
// time), the cache in `cache_dir`.
inline CxxCompileOptions quick_compile_options(const std::string& cache_dir) {
  CxxCompileOptions options;
  options.cache_dir = cache_dir;
  options.flags = default_compile_flags(options.compiler);
  for (std::string& f : options.flags)
    if (f.rfind("-O", 0) == 0) f = "-O1";
  return options;
}

// Every supported candidate (up to max_size members) x every schedule of `g`, checked.
// `expect_supported`: fail on a refused candidate (graphs of generated primitives only).
inline void check_graph(const PrimGraph& g, int max_size, std::mt19937& rng, CheckStats& stats,
                        bool expect_supported = true) {
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions co;
  co.max_size = max_size;
  const std::vector<Candidate> candidates = enumerate_candidates(dag, co);
  std::string source = cpu_codegen_prelude();
  std::vector<GeneratedKernel> generated;
  std::vector<const Candidate*> which;
  std::vector<std::string> keys;
  for (const Candidate& c : candidates) {
    if (!cpu_codegen_supports(g, dag, c)) {
      EXPECT_FALSE(expect_supported) << "candidate refused";
      ++stats.refused;
      continue;
    }
    ++stats.candidates;
    const std::vector<CpuSchedule> space = cpu_schedule_space(g, dag, c);
    EXPECT_FALSE(space.empty());
    EXPECT_EQ(space[0].key(), "default");
    stats.with_schedules += space.size() > 1;
    for (const CpuSchedule& s : space) {
      EXPECT_EQ(CpuSchedule::from_key(s.key()).key(), s.key());
      generated.push_back(
          generate_cpu_kernel(g, dag, c, "kernel" + std::to_string(generated.size()), s));
      source += generated.back().source;
      which.push_back(&c);
      keys.push_back(s.key());
    }
  }
  if (generated.empty()) return;
  kora_test::TempDir dir;
  const CompileResult lib = compile_shared(source, quick_compile_options(dir.file("kernels")));
  for (size_t k = 0; k < generated.size(); ++k) {
    const GeneratedKernel& gk = generated[k];
    std::map<std::string, Tensor> values;
    for (const std::string& r : gk.reads) {
      if (const Tensor* c = g.constant(r))
        values[r] = *c;
      else
        values[r] = random_tensor(g.value(r).dtype, g.value(r).shape, rng);
    }
    for (int v : which[k]->members) {
      const Primitive& p = g.prims[dag.prim[v]];
      std::vector<const Tensor*> in;
      for (const std::string& i : p.inputs) in.push_back(&values.at(i));
      values[p.output()] = run_primitive(g, p, in).at(0);
    }
    std::vector<const void*> in;
    for (const std::string& r : gk.reads) in.push_back(values.at(r).bytes());
    std::vector<std::vector<unsigned char>> buffers;
    std::vector<void*> out;
    for (const std::string& w : gk.writes)
      buffers.emplace_back(numel(g.value(w).shape) * dtype_size(g.value(w).dtype) + 1, 0xA5);
    for (auto& b : buffers) out.push_back(b.data());
    using Fn = void (*)(const void* const*, void* const*);
    const Fn fn = reinterpret_cast<Fn>(lib.library->symbol(gk.symbol));
    for (int run = 0; run < 2; ++run) {
      fn(in.data(), out.data());
      for (size_t w = 0; w < gk.writes.size(); ++w) {
        const std::string bad = compare(values.at(gk.writes[w]), out[w]);
        ASSERT_EQ(bad, "") << "kernel " << k << " (schedule " << keys[k] << ") output "
                           << gk.writes[w] << "\n"
                           << gk.source;
        ASSERT_EQ(buffers[w].back(), 0xA5) << "kernel " << k << " writes past " << gk.writes[w];
      }
    }
    ++stats.kernels;
    stats.multi_output += gk.writes.size() > 1;
  }
}

}  // namespace kora_codegen_test
