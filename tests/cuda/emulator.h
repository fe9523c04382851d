// A CPU emulation of the CUDA subset generated kernels use, for checking what they compute
// on machines without a GPU (tests/cuda/codegen_emulated_test.cc). emulated_program() turns
// generated kernels into C++ for the host compiler: the CUDA keywords become plain C++
// (__shared__ -> static thread_local, __device__ -> nothing; a launch's state is the host
// thread's, so sessions in several threads launch at once), and every thread of a block is a fiber
// (ucontext) run by a scheduler that switches only at __syncthreads() and warp shuffles,
// so barriers and shuffles have their CUDA meaning: __syncthreads() waits for every thread
// of the block, __shfl_down_sync / __shfl_sync exchange values among the 32 lanes of a warp
// (double-buffered, so a lane running ahead cannot overwrite a value not yet read). Blocks
// run one after another; threadIdx and blockIdx are set before a fiber resumes. Each
// launched function gets a host entry point kora_emu_<function>(grid, block, args).
// Tensor cores (nvcuda::wmma, the generated GEMM): every lane of a warp holds a whole
// fragment and computes it whole, so loads, stores and products give what the warp's
// collective operation gives whatever the hardware's split of a fragment among lanes
// (code that reads a fragment's elements one by one is not emulated); TF32 rounding is
// cvt.rna's (to nearest, ties away from zero).
#pragma once

#include <string>
#include <vector>

#include "codegen/scalar.h"
#include "cuda/codegen.h"
#include "kora/primitive.h"

namespace kora_cuda_test {

inline std::string emulator_runtime() {
  return R"(// CUDA emulation (tests/cuda/emulator.h)
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <functional>
#include <vector>
struct kora_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local kora_dim3 threadIdx, blockIdx, blockDim, gridDim;
namespace kora_emu {
enum State { kRunnable, kAtBlockBarrier, kAtWarpBarrier, kDone };
struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  State state = kRunnable;
  unsigned generation = 0;  // shuffles done, for the double buffer
};
struct Block {
  std::vector<Fiber> fibers;
  std::vector<unsigned long long> slots;  // [warp][parity][lane]
  ucontext_t scheduler;
  int current = 0, threads = 0;
  const std::function<void()>* body = nullptr;
};
static thread_local Block block;
static void entry(int i) {
  (*block.body)();
  block.fibers[i].state = kDone;
}
static void yield(State s) {
  Fiber& f = block.fibers[block.current];
  f.state = s;
  swapcontext(&f.context, &block.scheduler);
}
template <class T> static T exchange(T v, int src) {
  const int i = block.current, warp = i / 32, lane = i % 32;
  const unsigned parity = block.fibers[i].generation++ & 1;
  unsigned long long* slot = &block.slots[(warp * 2 + parity) * 32];
  memcpy(&slot[lane], &v, sizeof v);
  yield(kAtWarpBarrier);
  const int from = src >= 0 && src < 32 && warp * 32 + src < block.threads ? src : lane;
  T r;
  memcpy(&r, &slot[from], sizeof r);
  return r;
}
static void run_block(int threads, const std::function<void()>& body) {
  block.threads = threads;
  block.body = &body;
  block.fibers.resize(threads);
  block.slots.assign((threads + 31) / 32 * 64, 0);
  for (int i = 0; i < threads; ++i) {
    Fiber& f = block.fibers[i];
    f.stack.resize(1 << 16);
    f.state = kRunnable;
    f.generation = 0;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = &block.scheduler;
    makecontext(&f.context, (void (*)())entry, 1, i);
  }
  for (;;) {
    for (int i = 0; i < threads; ++i) {
      if (block.fibers[i].state != kRunnable) continue;
      block.current = i;
      threadIdx.x = i;
      swapcontext(&block.scheduler, &block.fibers[i].context);
    }
    bool all_done = true, all_at_block = true, released = false;
    for (const Fiber& f : block.fibers) {
      all_done = all_done && f.state == kDone;
      all_at_block = all_at_block && (f.state == kDone || f.state == kAtBlockBarrier);
    }
    if (all_done) return;
    if (all_at_block) {
      for (Fiber& f : block.fibers)
        if (f.state == kAtBlockBarrier) f.state = kRunnable;
      continue;
    }
    for (int w = 0; w * 32 < threads; ++w) {
      bool ready = true, any = false;
      for (int i = w * 32; i < threads && i < w * 32 + 32; ++i) {
        const State s = block.fibers[i].state;
        ready = ready && (s == kDone || s == kAtWarpBarrier);
        any = any || s == kAtWarpBarrier;
      }
      if (!ready || !any) continue;
      for (int i = w * 32; i < threads && i < w * 32 + 32; ++i)
        if (block.fibers[i].state == kAtWarpBarrier) block.fibers[i].state = kRunnable;
      released = true;
    }
    if (!released) {
      fprintf(stderr, "kora_emu: deadlock (threads wait at different barriers)\n");
      abort();
    }
  }
}
static void launch(long long grid, int threads, const std::function<void()>& body) {
  gridDim.x = (unsigned)grid;
  blockDim.x = threads;
  for (long long b = 0; b < grid; ++b) {
    blockIdx.x = (unsigned)b;
    run_block(threads, body);
  }
}
}  // namespace kora_emu
static inline void __syncthreads() { kora_emu::yield(kora_emu::kAtBlockBarrier); }
template <class T> static inline T __shfl_down_sync(unsigned, T v, int delta) {
  return kora_emu::exchange(v, kora_emu::block.current % 32 + delta);
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src) {
  return kora_emu::exchange(v, src);
}
static inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, sizeof f);
  return f;
}
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr bool kA = __is_same(Use, matrix_a), kB = __is_same(Use, matrix_b);
  static constexpr int rows = kB ? K : M, cols = kA ? K : N;
  static constexpr bool col_stored = __is_same(Layout, col_major);
  float x[rows * cols];  // the whole fragment, row-major
};
template <class F> static inline void fill_fragment(F& f, float v) {
  for (float& e : f.x) e = v;
}
template <class F> static inline void load_matrix_sync(F& f, const float* p, unsigned ldm) {
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = F::col_stored ? p[c * ldm + r] : p[r * ldm + c];
}
template <class F>
static inline void store_matrix_sync(float* p, const F& f, unsigned ldm, layout_t l) {
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      (l == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * F::cols + c];
}
template <class D, class A, class B>
static inline void mma_sync(D& d, const A& a, const B& b, const D& c) {
  D out;
  for (int i = 0; i < D::rows; ++i)
    for (int j = 0; j < D::cols; ++j) {
      float v = c.x[i * D::cols + j];
      for (int l = 0; l < A::cols; ++l) v += a.x[i * A::cols + l] * b.x[l * B::cols + j];
      out.x[i * D::cols + j] = v;
    }
  d = out;
}
static inline float __float_to_tf32(float v) {
  unsigned u;
  memcpy(&u, &v, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // finite values
  memcpy(&v, &u, sizeof v);
  return v;
}
}  // namespace wmma
}  // namespace nvcuda
#define __align__(n) __attribute__((aligned(n)))
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(n)
)";
}

// The generated kernels as one host C++ translation unit, with an entry point per launched
// function: extern "C" void kora_emu_F(long long grid, int block, void** args), and its
// number of pointer arguments, extern "C" const int kora_emu_F_arity.
inline std::string emulated_program(const std::vector<kora::CudaKernel>& kernels,
                                    const kora::PrimGraph& graph) {
  std::string prelude = kora::cuda_codegen_prelude();
  // The host has its own fixed-width types and limits (<stdint.h> above).
  for (const char* line :
       {"typedef long long int64_t;\n", "typedef unsigned long long uint64_t;\n",
        "typedef int int32_t;\n", "typedef unsigned char uint8_t;\n",
        "#define INT64_MAX 9223372036854775807LL\n", "#define INT64_MIN (-INT64_MAX - 1)\n",
        "#define INT32_MAX 2147483647\n", "#define INT32_MIN (-INT32_MAX - 1)\n"}) {
    const size_t at = prelude.find(line);
    if (at != std::string::npos) prelude.erase(at, std::string(line).size());
  }
  std::string source = emulator_runtime() + prelude;
  for (const kora::CudaKernel& k : kernels) {
    std::string code = k.source;  // the emulation stands for the toolkit's mma.h
    for (size_t at; (at = code.find("#include <mma.h>\n")) != std::string::npos;)
      code.erase(at, std::string("#include <mma.h>\n").size());
    source += code;
    std::string args;
    for (size_t i = 0; i < k.reads.size(); ++i)
      args += std::string(i ? ", " : "") + "(const " +
              kora::codegen::ctype(graph.value(k.reads[i]).dtype) + "*)a[" + std::to_string(i) +
              "]";
    for (size_t i = 0; i < k.writes.size(); ++i)
      args += std::string(args.empty() ? "" : ", ") + "(" +
              kora::codegen::ctype(graph.value(k.writes[i]).dtype) + "*)a[" +
              std::to_string(k.reads.size() + i) + "]";
    for (const kora::CudaLaunch& l : k.launches)
      source += "extern \"C\" const int kora_emu_" + l.function +
                "_arity = " + std::to_string(k.reads.size() + k.writes.size()) + ";\n" +
                "extern \"C\" void kora_emu_" + l.function +
                "(long long grid, int block, void** a) {\n  kora_emu::launch(grid, block, [&] { " +
                l.function + "(" + args + "); });\n}\n";
  }
  return source;
}

}  // namespace kora_cuda_test
