// CPU code generation for a candidate kernel: the primitive graph, its kernel DAG and a
// candidate in; C++ source of one function computing every output of the kernel out.
// Dtypes float32, int64, int32 and bool (1 byte, 0/1); every primitive kind but opaque
// (linear: float32). A member's value is computed where it is used (elementwise,
// broadcast and layout members are index maps and scalar functions composed per element,
// no intermediate buffers); reduce and linear members get a loop nest (phase) of their own
// whose result goes to the output or, when only members of the kernel read it, to
// function-static scratch; elementwise members consuming a linear result at its own
// coordinates are applied to the accumulators before they are stored (epilogue).
//
// The function: extern "C" void SYMBOL(const void* const* in, void* const* out), with
// `in` in kernel_reads() order and `out` in kernel_writes() order (include/kora/candidates.h),
// each pointer to its tensor's elements (float, int64_t, int32_t, uint8_t for bool).
// Results match the reference interpreter's arithmetic (reductions of float32 in double,
// matmul/conv in float with another summation order), except that float32 exp, tanh and
// sigmoid are branch-free polynomials (about 1 ulp from the C library) so loops vectorize.
// Kernels with scratch are not reentrant: one call at a time per kernel (the scratch is
// function-static, sized at generation time; a packed GEMM holds its packed operands
// there, 4 * (M * K + K * N) bytes rounded up to 6 x 16 tiles). Parallel loops use OpenMP (the
// library is compiled with -fopenmp); the caller sets the thread count with omp_set_num_threads()
// (the process shares one OpenMP runtime).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// The revision of the generated code. It is part of the CPU fingerprint
// (src/cpu/backend.h), so a profile database measured with other generated code
// is not reused: bump it whenever a change makes some generated kernel faster or slower.
//   2: pooling windows (max, sum) as rows of accumulators, or padded planes for 2-D
//      windows of stride 1.
//   3: pointwise phases through a concat split its axis, one loop nest per input.
//   4: a reduction read only by a reshape of unit dims that the kernel writes is stored
//      there directly (a pool's [N, C, H, W, 1, 1]: no scratch, no copy).
//   5: a concat of up to 1024 parts splits into loops (64 before; an LSTM's output has
//      one part per step and direction).
//   6: float erf branch-free in the prelude (vectorizes; was the C library's erff), the
//      prelude's functions always inlined, x^n for a small integer immediate n as
//      products (was powf).
//   7: reduced dims next to one another, read in order, are one loop (a 28x28 plane was
//      28 loops of 28, each ending in a horizontal sum).
//   8: channels-last max pools fold the window's rows once per output row, then its
//      columns, where that is not much more work (3x3: 1.6x faster at stride 1, 1.2x at 2);
//      max pools on padded planes fold their rows first too (1.35x).
//   9: channels-last pools over a multiple of 16 channels read from memory fold 16 lanes
//      in registers over the window (AVX-512: max 2x faster alone; sums in float); a
//      reduction whose row runs along a concat's axis reads one input per loop.
//  10: a pointwise phase's trailing dims read in order are one loop (a GELU over
//      [256, 56, 56] was 256 x 56 loops of 56); x / c for a constant c as x * (1 / c);
//      a reshape's flat index multiplies a coordinate that is a sum in parentheses
//      (matmul rows read through a reshape were wrong; such kernels failed their check).
//  11: phases that loop alike over leading dims no member reduces (softmax, layer norm:
//      the rows) share those loops, one parallel region for the kernel: each row is
//      reduced and used while it is in cache (was one parallel pass per phase).
//  12: float exp rounds by a magic addend and scales by a shift, a degree-6 polynomial, no
//      clamp (1.7x faster, within 1.5 ulp); sigmoid is 1 / (1 + e^-x) (a SiLU 1.9x faster).
//  13: a pointwise phase that reads a concat through a slice (a split after a concat) is
//      cut where the input read changes, as one of the concat's shape was (MixNet's
//      concat + SiLU + split on bf16 channels-last views was 3x its float32 time).
//  14: a pointwise phase computes its bfloat16 writes per chunk of 256 of the innermost
//      loop into float rows, stored by vcvtneps2bf16 where AVX512-BF16 is (g++'s
//      vectorized rounding and packing took BN + SiLU rows to 1.6-2.7x their float32 time).
//  15: that loop, one chunk of E % 16 != 0 elements, runs over E rounded down to 16 and
//      then over the last 16 (bfloat16 reads made g++ vectorize by 32 and leave the rest
//      of a row to scalar code: BN + SiLU rows of 120 channels 1.75x slower).
//  16: kora_bf16_row's loads each within one store of the row (16 floats at a time over
//      the row's first multiple of 32, then 8; a chunk's last 16, or 8, in a row of their
//      own): a 512-bit load across two 256-bit stores missed store forwarding (a bf16
//      concat of 24-channel rows 6x slower).
//  17: a row whose loop reads bfloat16 is read back as g++ stores it at the 16-bit width
//      (kora_bf16_row_h: a loop of 8 in 4s), a loop of floats only 16 at a time, then 8.
//  18: a global pool taken channels last (one row of outputs) reduces its rows in 16
//      parts in parallel (it was serial), and stores the reduced input where the kernel
//      writes it as it reduces (a SiLU and its SE mean: one pass, the sigmoid once;
//      stored as bfloat16 through a float row where the row is whole vectors of 16).
//  19: a pointwise loop over dims a reshape merged ([6, 197, 64] transposed to [197, 384])
//      runs as loops over the merged dims (6 of 64), reading runs instead of dividing its
//      coordinate per element (a head merge's bf16 copy 15x slower); a reshape composes
//      coordinates that fill its input dims exactly.
//  20: a division by a broadcast along the last dim (softmax's sum, a layer norm's deviation)
//      multiplies by its reciprocal, once per row (a DeiT softmax 17% faster alone).
//  21: a reduce whose kept dims after the reduced ones exceed a row of 4096 accumulators
//      (a split attention's sum over its radix, [2, 128, 56, 56] over the 2) keeps a row of
//      the trailing dims that fit, the others outer loops, instead of reducing 2 values per
//      output; a row of several dims vectorizes its innermost loop.
constexpr int kCpuCodegenRevision = 21;

// Whether generate_cpu_kernel can compute this candidate.
bool cpu_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// The hyperparameters of a generated kernel. key() is the stable text the profile database
// stores as the schedule ("default" for the default schedule).
struct CpuSchedule {
  bool parallel = true;  // OpenMP over the outer loops (when the work reaches min_parallel_work)
  int64_t min_parallel_work = 1 << 15;  // elements (or flops / 8) of a loop nest
  // Direct loops (small matmuls, depthwise convolutions):
  int64_t rows = 4;    // matmul: rows of C per register block; conv: output channels per block
  int64_t cols = 256;  // matmul: columns of C per block
  // Packed GEMM (matmul, convolution as implicit GEMM): 0 never, 1 always, -1 when large.
  int64_t gemm = -1;
  int64_t mc = 48, nc = 256;  // rows and columns of C per parallel block (of 6 x 16 tiles)
  // "default" for the default values, else all fields, e.g.
  // "par=1;minpar=32768;rows=4;cols=256;gemm=-1;mc=96;nc=128".
  std::string key() const;
  // The schedule of a key(); throws kora::Error on a text key() cannot give.
  static CpuSchedule from_key(const std::string& key);
  bool operator==(const CpuSchedule& o) const {
    return parallel == o.parallel && min_parallel_work == o.min_parallel_work && rows == o.rows &&
           cols == o.cols && gemm == o.gemm && mc == o.mc && nc == o.nc;
  }
};

// The schedules worth measuring for this candidate, the default first; a handful.
std::vector<CpuSchedule> cpu_schedule_space(const PrimGraph& graph, const KernelDag& dag,
                                            const Candidate& c);

struct GeneratedKernel {
  std::string symbol;
  std::string source;  // one function; prepend cpu_codegen_prelude() once per file
  std::vector<std::string> reads, writes;
};

// Throws kora::Error naming the primitive it cannot generate. `bfloat16`: float32 sides
// (kernel reads or writes) stored as bfloat16 (--bf16's layouts, src/cpu/layout_view.h):
// their pointers are kora_bf16, each element widened to float when read and rounded to
// the nearest bfloat16 (ties to even, NaN kept) when written; the arithmetic stays float.
GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol,
                                    const CpuSchedule& schedule = {},
                                    const std::set<std::string>& bfloat16 = {});

// Includes and helpers the generated functions use.
std::string cpu_codegen_prelude();

}  // namespace kora
