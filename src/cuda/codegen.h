// CUDA code generation for a candidate kernel: the primitive graph, its kernel DAG and a
// candidate in; CUDA C++ source of one or a few `extern "C" __global__` functions out,
// launched in order on one stream, that together compute every output of the kernel.
// Elementwise, broadcast, layout and reduce members of dtypes float32, int64, int32 and
// bool (1 byte, 0/1); linear members go to cuBLAS/cuDNN (src/cuda/library_plan.h); of
// opaque ones, only a Gather of computed indices (an embedding lookup) and ArgMax / ArgMin,
// each alone in its kernel.
//
// The model is the CPU backend's (src/cpu/codegen.h), from the same shared value
// expansion (src/codegen/): a member's value is computed where it is used (elementwise,
// broadcast and layout members are index maps and scalar functions composed per element).
// A kernel whose reduce members share their rows is one row-fused launch (see CudaReduce):
// softmax and layer normalization are one launch reading their input from memory once per
// pass. Otherwise each reduce member gets a launch of its own (two for multi-block) writing
// its output or, when only members of the kernel read it, module-scope scratch (__device__
// arrays sized at generation time: one run at a time per loaded module), then one launch
// per shape of the remaining outputs.
// Results follow the reference interpreter's arithmetic (float32 sums in double); float32
// exp, tanh, erf, ... are CUDA's math functions (a few ulp).
//
// Every function of a kernel takes the same parameters: one device pointer per tensor of
// kernel_reads() (const), then one per tensor of kernel_writes() (include/kora/candidates.h),
// each to its elements (float, int64_t, int32_t, uint8_t for bool). Launch geometry is 1-D
// and known at generation time (shapes are static): CudaLaunch says it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernel_spec.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// The revision of the generated CUDA code, part of the GPU fingerprint: bump it whenever a
// change makes some generated kernel faster or slower.
//   2: x^n for a small integer immediate n as products, not powf (src/codegen/scalar.cc).
//   3: x / c for a constant c as x * (1 / c) (src/codegen/scalar.cc); a reshape's flat
//      index multiplies a coordinate that is a sum in parentheses (value_writer.cc).
//   4: a division by a broadcast along the last dim (softmax's sum, a norm) multiplies by
//      its reciprocal (src/codegen/scalar.cc).
constexpr int kCudaCodegenRevision = 4;
// "kora-cuda-gen 3": the revision as fingerprints and jobs record it; with `tf32`,
// "kora-cuda-gen 3 tf32": measurements with TF32 library math are another device's.
inline std::string cuda_codegen_revision(bool tf32 = false) {
  return "kora-cuda-gen " + std::to_string(kCudaCodegenRevision) + (tf32 ? " tf32" : "");
}

// Whether generate_cuda_kernel can compute this candidate.
bool cuda_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// How a reduce member's output elements (rows) map to threads: one thread, one warp or
// one block per row, a launch per reduce member; or several blocks per row (kMultiBlock:
// each block folds a chunk of the row into a partial, a second launch combines a row's
// partials; for few long rows); kAuto picks per reduce from its sizes
// (cuda_reduce_strategy_for). The row-fused strategies take a warp or a block per row for
// the whole kernel, in one launch: every reduce member of the row in turn (each result
// shared by the row's threads), then the row's outputs; they apply to kernels whose reduce
// members all reduce the same shape over the same axes and whose outputs read the reduce
// results only at their own row (cuda_row_fusible), and fall back to kWarp / kBlock
// elsewhere. The default schedule (kAuto) fuses rows when the kernel allows it and its
// rows have 32 elements or more (a warp per row, a block from 1,024), unless there are
// few long rows (multi-block's case); else it picks per reduce member.
enum class CudaReduce { kAuto, kThread, kWarp, kBlock, kMultiBlock, kRowWarp, kRowBlock };

// The hyperparameters of a generated CUDA kernel. key() is the stable text the profile
// database stores as the schedule ("default" for the default schedule).
struct CudaSchedule {
  int block = 256;  // threads per block: 128, 256, 512 (a multiple of 32, at most 1024)
  int items = 1;    // elements (pointwise) or rows (thread per row) per thread, unrolled;
                    // warp and block reductions load `items` elements per thread and step
  CudaReduce reduce = CudaReduce::kAuto;
  // "default" for the default values, else all fields, e.g. "block=128;items=4;reduce=warp".
  std::string key() const;
  // The schedule of a key(); throws kora::Error on a text key() cannot give.
  static CudaSchedule from_key(const std::string& key);
  bool operator==(const CudaSchedule& o) const {
    return block == o.block && items == o.items && reduce == o.reduce;
  }
};

// "auto", "thread", "warp", "block", "multi_block", "row_warp", "row_block"
const char* cuda_reduce_name(CudaReduce r);

// Whether the row-fused strategies apply to this candidate (see CudaReduce).
bool cuda_row_fusible(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// The strategy kAuto takes for a reduce of `rows` output elements of `count` inputs each,
// whose reduced elements are contiguous (`inner_reduced`: the last dim of size > 1 is
// reduced) or not: thread per row for short rows (16 elements or fewer) or strided ones
// (2,048 rows or more), several blocks per row for few long rows (128 rows or fewer of
// 8,192+ elements), else block for long rows (2,048+ elements, fewer than 65,536 rows),
// else warp.
CudaReduce cuda_reduce_strategy_for(int64_t rows, int64_t count, bool inner_reduced);

// The schedules worth measuring for this candidate, the default first: block sizes x
// elements per thread; for kernels with a reduce member each reduce strategy at each block
// size and, for the separate-launch ones when the kernel is not row-fusible, 2 and 4 items;
// where it is, the row-fused ones at each block size and 2 and 4 items. That is 9
// schedules without a reduce (block 128/256/512 x items 1/2/4), 21 with one, 23 where
// row-fusible.
std::vector<CudaSchedule> cuda_schedule_space(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c);

// The symbol a generated kernel's functions are named after, the same in a measuring job
// and in every artifact: kora_<instance signature>_<its index in cuda_schedule_space> (a
// schedule outside the space: kora_<instance signature>_s<hash of its key>). Equal symbols
// are equal code (instance_signature: kernels of one signature slicing at other offsets
// differ).
std::string cuda_kernel_symbol(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                               const std::string& schedule_key);
std::string cuda_kernel_symbol(uint64_t signature, size_t schedule_index);

// One launch of a generated kernel: `function`, `block` threads per block and grid() blocks
// covering `work` items (output elements or reduce rows), `per_block` per block. A launch
// with no work (empty tensors) is skipped.
struct CudaLaunch {
  std::string function;
  int64_t work = 0;
  int64_t per_block = 1;
  int block = 256;
  int64_t grid() const { return (work + per_block - 1) / per_block; }
};

struct CudaKernel {
  std::string symbol;
  std::string source;  // module-scope tables and scratch, then the functions; prepend
                       // cuda_codegen_prelude() once per compiled program
  std::vector<std::string> reads, writes;
  std::vector<CudaLaunch> launches;  // in order
};

// Throws kora::Error naming the primitive it cannot generate. `symbol` prefixes every
// module-scope name of the kernel (functions SYMBOL_0, SYMBOL_1, ...), so many kernels can
// share one program.
CudaKernel generate_cuda_kernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                                const std::string& symbol, const CudaSchedule& schedule = {});

// A tensor-core GEMM kora generates (TF32 WMMA, src/cuda/codegen_mma.cc): a block computes
// a bm x bn tile of D with bm/32 x bn/32 warps. key(): its schedule, "mma:64x64".
struct CudaMmaTile {
  int bm = 64, bn = 64;
  std::string key() const;
};
// The symbol of a kernel's tensor-core GEMM of `tile`: kora_<signature>_mma64x64.
std::string cuda_mma_symbol(uint64_t signature, const CudaMmaTile& tile);
// The tiles measured: 64 x 64 (4 warps), 32 x 32 (1 warp, for small products).
std::vector<CudaMmaTile> cuda_mma_tiles();
// The tile of a schedule key (nullopt: not an mma schedule).
std::optional<CudaMmaTile> cuda_mma_tile(const std::string& key);
// The GEMM `g` (kernel_spec.h: batch, strides, transposes, alpha, bias, residual, ReLU) as
// one generated launch (SYMBOL_0) taking the kernel's float32 `reads` (g's read_* index
// them) and its one written D; TF32 multiplies, float32 accumulation (an explicit option,
// --tf32). Needs mma.h: nvrtc_compile adds the toolkit's include directory.
// `device_body`: a __device__ function taking its block index first, a horizontal part.
CudaKernel generate_mma_gemm(const CudaGemm& g, const std::vector<std::string>& reads,
                             const std::vector<std::string>& writes, const std::string& symbol,
                             const CudaMmaTile& tile = {}, bool device_body = false);

// Horizontal pairs with a GEMM (Tacker's fusion of a Tensor-core kernel and a CUDA-core
// kernel): a candidate of independent parts (candidate_parts), each generated code or a
// GEMM that cuda_gemm_plan computes, at least one a GEMM. Only with TF32 (--tf32): each GEMM
// part is kora's tensor-core GEMM of `tile`, the other parts are generated at its block
// size, every part on its own blocks of one launch (codegen_horizontal.cc). Schedules:
// cuda_mma_tiles()' keys.
bool cuda_mma_pair_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
CudaKernel generate_mma_pair(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                             const std::string& symbol, const CudaMmaTile& tile);
// Whether kora's tensor-core GEMM implements candidate c (with --tf32): a GEMM
// (cuda_gemm_plan) or a horizontal pair holding one; and that implementation at `tile`
// (generate_mma_gemm or generate_mma_pair), named `symbol` (cuda_mma_symbol).
bool cuda_mma_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
CudaKernel generate_mma_kernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                               const std::string& symbol, const CudaMmaTile& tile);

// Types, limits and helpers the generated functions use (no headers: NVRTC needs none).
std::string cuda_codegen_prelude();

}  // namespace kora
