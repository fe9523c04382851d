// Test harness for CUDA code generation (tests/cuda/*_test.cc), over the CPU tests' random
// graphs (tests/cpu/codegen_graphs.h): every candidate of a graph the CUDA generator
// supports, with every schedule of cuda_schedule_space, generated into one NVRTC program.
//   compile_graph  (no GPU needed) compiles the program to a cubin for each architecture
//                  and checks that NVRTC is silent and every launched function is in it;
//   run_graph      (a GPU) loads the cubin, runs each kernel's launches twice on random
//                  inputs (scratch reused) and compares every written tensor with
//                  run_primitive() applied member by member (tests/cpu/codegen_harness.h's
//                  compare: exact for integers, NaN/inf placed and relative L2 < 1e-4 for
//                  float32); outputs start as 0xA5 bytes with one guard byte past the end.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cpu/codegen_harness.h"
#include "cuda/codegen.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compile.h"
#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"

namespace kora_cuda_test {

using namespace kora;

struct Stats {
  int candidates = 0;    // supported candidates
  int refused = 0;       // candidates the generator does not support
  int kernels = 0;       // (candidate, schedule) pairs generated
  int launches = 0;      // their launches
  int multi_launch = 0;  // kernels of several launches (reduce members)
  int horizontal = 0;    // kernels of two independent parts (horizontal pairs)
  int compiled = 0;      // kernels compiled to a cubin, summed over architectures
  int checked = 0;       // kernels run on a GPU and compared with the interpreter
  double nvrtc_seconds = 0;
};

struct Generated {
  KernelDag dag;
  std::vector<Candidate> candidates;
  std::vector<CudaKernel> kernels;
  std::vector<size_t> candidate_of;  // per kernel, its index in `candidates`
  std::vector<std::string> keys;     // per kernel, its schedule key
  std::string source;                // the prelude and every kernel
};

// Every supported candidate (up to max_size members) x every schedule of `g`; with
// `horizontal`, only the horizontal pairs (up to that many, CandidateOptions).
inline Generated generate_all(const PrimGraph& g, int max_size, Stats& stats,
                              bool expect_supported = true, int horizontal = 0) {
  Generated gen{kernel_dag_of(g), {}, {}, {}, {}, cuda_codegen_prelude()};
  CandidateOptions co;
  co.max_size = max_size;
  co.horizontal_pairs = horizontal;
  gen.candidates = enumerate_candidates(gen.dag, co);
  for (size_t i = 0; i < gen.candidates.size(); ++i) {
    const Candidate& c = gen.candidates[i];
    const bool pair = candidate_parts(gen.dag, c).size() > 1;
    if (horizontal > 0 && !pair) continue;
    stats.horizontal += pair;
    if (!cuda_codegen_supports(g, gen.dag, c)) {
      EXPECT_FALSE(expect_supported) << "candidate refused";
      ++stats.refused;
      continue;
    }
    ++stats.candidates;
    const std::vector<CudaSchedule> space = cuda_schedule_space(g, gen.dag, c);
    EXPECT_FALSE(space.empty());
    EXPECT_EQ(space[0].key(), "default");
    for (const CudaSchedule& s : space) {
      EXPECT_EQ(CudaSchedule::from_key(s.key()).key(), s.key());
      CudaKernel k =
          generate_cuda_kernel(g, gen.dag, c, "kernel" + std::to_string(gen.kernels.size()), s);
      EXPECT_EQ(k.launches.empty(), k.writes.empty());  // (dead members write nothing)
      for (const CudaLaunch& l : k.launches) {
        EXPECT_EQ(l.block, s.block);
        EXPECT_GE(l.per_block, 1);
        EXPECT_GE(l.grid() * l.per_block, l.work);  // the grid covers the work
      }
      stats.launches += static_cast<int>(k.launches.size());
      stats.multi_launch += k.launches.size() > 1;
      ++stats.kernels;
      gen.source += k.source;
      gen.kernels.push_back(std::move(k));
      gen.candidate_of.push_back(i);
      gen.keys.push_back(s.key());
    }
  }
  return gen;
}

// Compiles `gen` for each architecture; returns the cubins by architecture.
inline std::map<std::string, std::string> compile_all(const Generated& gen,
                                                      const std::vector<std::string>& archs,
                                                      const std::string& cache_dir, Stats& stats) {
  std::map<std::string, std::string> cubins;
  if (gen.kernels.empty()) return cubins;
  for (const std::string& arch : archs) {
    NvrtcOptions options;
    options.arch = arch;
    options.cache_dir = cache_dir;
    CubinResult r;
    try {
      r = compile_cubin(gen.source, options);
    } catch (const Error& e) {
      ADD_FAILURE() << arch << ": " << e.what();
      continue;
    }
    EXPECT_EQ(r.log, "") << arch << ": NVRTC is not silent";
    EXPECT_GT(r.cubin.size(), 0u);
    // ELF cubin: the symbol table names every launched function.
    for (const CudaKernel& k : gen.kernels)
      for (const CudaLaunch& l : k.launches)
        EXPECT_NE(r.cubin.find(l.function + '\0'), std::string::npos)
            << arch << ": no " << l.function << " in the cubin";
    stats.compiled += static_cast<int>(gen.kernels.size());
    stats.nvrtc_seconds += r.seconds;
    cubins[arch] = std::move(r.cubin);
  }
  return cubins;
}

inline void compile_graph(const PrimGraph& g, int max_size, const std::vector<std::string>& archs,
                          Stats& stats, bool expect_supported = true, int horizontal = 0) {
  const Generated gen = generate_all(g, max_size, stats, expect_supported, horizontal);
  kora_test::TempDir dir;
  compile_all(gen, archs, dir.file("cubins"), stats);
}

// Runs every kernel of `g` on `device` and compares it with the interpreter.
inline void run_graph(CudaDevice& device, const PrimGraph& g, int max_size, std::mt19937& rng,
                      Stats& stats, bool expect_supported = true, int horizontal = 0) {
  const Generated gen = generate_all(g, max_size, stats, expect_supported, horizontal);
  if (gen.kernels.empty()) return;
  kora_test::TempDir dir;
  const auto cubins = compile_all(gen, {device.arch()}, dir.file("cubins"), stats);
  ASSERT_EQ(cubins.count(device.arch()), 1u);
  const auto module = device.load(cubins.at(device.arch()));
  for (size_t k = 0; k < gen.kernels.size(); ++k) {
    const CudaKernel& ck = gen.kernels[k];
    const Candidate& c = gen.candidates[gen.candidate_of[k]];
    std::map<std::string, Tensor> values;
    for (const std::string& r : ck.reads) {
      if (const Tensor* t = g.constant(r))
        values[r] = *t;
      else
        values[r] = kora_codegen_test::random_tensor(g.value(r).dtype, g.value(r).shape, rng);
    }
    for (int v : c.members) {
      const Primitive& p = g.prims[gen.dag.prim[v]];
      std::vector<const Tensor*> in;
      for (const std::string& i : p.inputs) in.push_back(&values.at(i));
      values[p.output()] = run_primitive(g, p, in).at(0);
    }
    std::vector<CudaDevice::Ptr> args;
    for (const std::string& r : ck.reads) {
      const Tensor& t = values.at(r);
      args.push_back(device.alloc(t.nbytes()));
      device.to_device(args.back(), t.bytes(), t.nbytes());
    }
    std::vector<size_t> sizes;
    for (const std::string& w : ck.writes) {
      sizes.push_back(numel(g.value(w).shape) * dtype_size(g.value(w).dtype));
      args.push_back(device.alloc(sizes.back() + 1));
      std::vector<unsigned char> init(sizes.back() + 1, 0xA5);
      device.to_device(args.back(), init.data(), init.size());
    }
    std::string failure;
    for (int run = 0; run < 2 && failure.empty(); ++run) {
      for (const CudaLaunch& l : ck.launches)
        device.launch(device.function(*module, l.function), l.grid(), l.block, args);
      device.synchronize();
      for (size_t w = 0; w < ck.writes.size() && failure.empty(); ++w) {
        std::vector<unsigned char> got(sizes[w] + 1);
        device.to_host(got.data(), args[ck.reads.size() + w], got.size());
        const std::string bad = kora_codegen_test::compare(values.at(ck.writes[w]), got.data());
        if (!bad.empty())
          failure = "output " + ck.writes[w] + ": " + bad;
        else if (got.back() != 0xA5)
          failure = "writes past " + ck.writes[w];
      }
    }
    for (CudaDevice::Ptr p : args) device.free(p);
    ASSERT_EQ(failure, "") << "kernel " << k << " (schedule " << gen.keys[k] << ")\n" << ck.source;
    ++stats.checked;
  }
}

}  // namespace kora_cuda_test
