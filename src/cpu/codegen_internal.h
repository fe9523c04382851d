// Internals of CPU code generation (src/cpu/codegen.h), shared by the
// src/cpu/codegen_*.cc files:
//   codegen_prelude.cc the prelude: math builtins, float exp/tanh, the GEMM micro-kernel;
//   codegen_phases.cc  loop nests: pointwise, reduce and linear phases;
//   codegen_gemm.cc    packed GEMM phases;
//   codegen.cc         planning (which members get a phase and a buffer), schedules, API.
// Scalars (dtypes as C types, literals, elementwise functions as C expressions) and a
// tensor's value at coordinate expressions (expanded through elementwise, broadcast and
// layout members) are shared with the CUDA backend: src/codegen/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/scalar.h"
#include "codegen/value_writer.h"
#include "cpu/codegen.h"
#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora::cpu_gen {

using codegen::Coords;
using codegen::ctype;
using codegen::dtype_supported;
using codegen::elementwise_supported;
using codegen::literal;
using codegen::NotAtBoundCoords;

// ---- codegen_prelude.cc ----
std::string prelude_text();
// ---- codegen_gemm.cc ----
std::string gemm_prelude();  // the micro-kernel
// Whether the default schedule computes an m x n x k product as packed GEMM.
bool gemm_by_default(int64_t m, int64_t n, int64_t k);

// A GEMM C = A x B (m x k times k x n) repeated over `outer` loops (batch dims; image and
// group of a convolution); a/b give an operand's value (a C expression, statements
// emitted) at outer coordinates and row/column expressions, c the coordinates of the
// linear member's output.
struct GemmSpec {
  int64_t m = 0, n = 0, k = 0;
  Shape outer;
  bool b_k_inner = false;  // pack B with k in the inner loop (else its columns)
  std::function<std::string(const Coords&, const std::string&, const std::string&)> a, b;
  std::function<Coords(const Coords&, const std::string&, const std::string&)> c;
};

// Writes one kernel function. Members are computed where they are used (value()), except
// the materialized ones (reduce and linear members), which get a phase of their own writing
// a buffer (the output when the tensor is written, else function-static scratch).
class KernelWriter : public codegen::ValueWriter {
 public:
  KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
               const CpuSchedule& schedule, const std::set<std::string>& bfloat16 = {});
  GeneratedKernel run(const std::string& symbol);

 private:
  // A function-static table (codegen.cc).
  std::string index_table(const std::vector<int64_t>& values) override;

  // codegen_phases.cc
  void pointwise_phase(const std::vector<std::string>& writes);
  // The loop nest of a pointwise phase (or of one part of it, part_ set) over `loops`
  // (`shape`, or coalesced) storing `writes` of `shape`. A bfloat16 write is computed per
  // chunk of the innermost loop into a float row, stored after it by kora_bf16_row.
  // Whether a loop's text reads an input stored as bfloat16 (g++ then vectorizes it at
  // the 16-bit width, so its float stores are narrower: see the prelude), and the row
  // store that reads a row back at the width such a loop stored it.
  bool reads_bfloat16(const std::string& loop_text) const;
  static std::string row_store(bool reads_bfloat16);
  // With `split`, the innermost loop of `loops` runs as loops over its factors
  // (innermost_split).
  void pointwise_loops(const Shape& shape, const Shape& loops, bool parallel,
                       const std::vector<std::string>& writes, const Shape& split = {});
  // The factors to loop over the innermost dim of `loops` by, or none: where the values of
  // `writes` read through a reshape that merges dims into that loop's ([6, 197, 64]
  // transposed and reshaped to [197, 384]), the loop over 384 divides its coordinate by 64
  // for every element (scalar gathers, 15x the time of a copy); as 6 loops of 64 it reads
  // runs. Chosen among the kernel's reshapes' trailing dims by a dry run that counts the
  // divisions each leaves (index_divisions_): the first with the fewest, if fewer.
  Shape innermost_split(const Shape& loops, const std::vector<std::string>& writes);
  int dry_run_divisions(const Shape& loops, const Shape& split,
                        const std::vector<std::string>& writes);
  // Runs `body` (values on placeholder coordinates), then drops its statements, locals,
  // tables and digits: what the dry runs of read_concat_parts and innermost_split share.
  void dry_run(const std::function<void()>& body);
  // `loops` with dim `dim` replaced by the factors `split`; coordinates of such loops back
  // in `loops`' dims, the split one a composite of the factors' (known_digits_).
  static Shape split_shape(const Shape& loops, size_t dim, const Shape& split);
  Coords split_coords(const Coords& loop_coords, size_t dim, const Shape& split);
  void reduce_phase(const Primitive& p, const ReduceAttrs& r);
  bool window_reduce_phase(const Primitive& p, const ReduceAttrs& r);  // false: not pooling
  // Whether the reduced dims (red: xs with kept dims 1) are one run among xs's dims above 1.
  static bool reduced_dims_adjacent(const Shape& xs, const Shape& red);
  // Whether `t`, read at coordinates of xs inside the reduction, reaches every tensor it
  // loads at the same coordinates in a tensor of shape xs, or at "0" in each reduced dim
  // (through elementwise and broadcast members only): then the reduced dims can be one
  // loop whose offset in xs is known.
  bool reads_reduced_dims_in_order(const std::string& t, const Shape& xs, const Shape& red);
  // The loop shape of a pointwise phase over `shape` storing `writes`: `shape` with its
  // trailing dims from the first whose every written tensor reads them in order
  // (reads_run_in_order) coalesced into the last of them (the others 1): one loop whose
  // coordinate is the offset within the run. [C, 7, 7] as one loop of 49 instead of 7
  // of 7, each too short for a vector.
  Shape coalesced_loops(const Shape& shape, const std::vector<std::string>& writes);
  // Whether `t`, read at coordinates whose dims marked in `run` (of t's rank) are one
  // offset, reaches every tensor it loads the same way: through elementwise members,
  // broadcasts and reshapes of unit dims only, each tensor on the way above 1 in every
  // dim of the run or 1 in all of them (then read at "0" there, through a broadcast).
  // reads_reduced_dims_in_order asks more (every tensor of the reduced input's shape):
  // there a tensor of another shape is read at coordinates divided out of the flat index.
  bool reads_run_in_order(const std::string& t, const std::vector<bool>& run);
  friend class WindowReduceWriter;  // window_reduce_phase's steps
  void matmul_phase(const Primitive& p);
  void conv_phase(const Primitive& p, const ConvAttrs& a);
  // Stores of the linear member `p`'s value `acc` at `coords`: its buffer (when it has one)
  // and its epilogue writes.
  // codegen_gemm.cc
  bool use_gemm(int64_t m, int64_t n, int64_t k) const;
  void gemm_phase(const Primitive& p, const GemmSpec& g);
  void matmul_gemm(const Primitive& p);
  void conv_gemm(const Primitive& p, const ConvAttrs& a);
  void epilogue(const Primitive& p, const Coords& coords, const std::string& acc);
  void plan_epilogue(const Primitive& p);

  // Loops over the dims of `shape` of size > 1 (coordinate "0" for the others), the
  // outer ones collapsed into one OpenMP loop when `parallel`, the innermost `omp simd`
  // when `simd`; returns the coordinates. With part_ set, its dim runs over
  // [part_.lo, part_.hi) only (a literal coordinate when that is one index).
  // close_loops() closes them.
  // With `chunk`, the innermost loop steps by kRowChunk (a scope of its own when one
  // chunk covers it) and `chunk` names its first coordinate and count; the caller opens the
  // loop over the chunk, whose coordinate chunk->at is in the coordinates returned, and
  // closes it before close_loops(). chunk->first stays empty without a loop.
  struct RowChunk {
    std::string first, count, at;
    int64_t extent = 0;  // the count when one chunk covers the loop (else 0)
  };
  static constexpr int64_t kRowChunk = 256;
  Coords open_loops(const Shape& shape, bool parallel, size_t first = 0, size_t end = SIZE_MAX,
                    bool simd = false, RowChunk* chunk = nullptr);
  void close_loops(const Shape& shape, size_t first = 0, size_t end = SIZE_MAX);
  std::string scratch(DType t, int64_t n);  // a function-static buffer
  bool parallel_for(int64_t work) const;    // whether a loop nest of `work` goes parallel

  // The ranges a pointwise phase splits its concat axis into (concat_parts): the
  // boundaries of the kernel's concat members of that shape, so that each part reads one
  // input of each (ValueWriter::known_ranges_). Empty when there is nothing to split.
  struct Part {
    size_t dim = SIZE_MAX;
    int64_t lo = 0, hi = 0;
  };
  std::vector<Part> concat_parts(const Shape& shape) const;
  // Else the parts of one dim where the concat members the phase's values read through
  // other maps (a slice: a split after a concat, MixNet's mixed depthwise convolutions;
  // GhostNet's concat cut to its channels) each read one input: a dry run of the values
  // on placeholder coordinates collects where (ValueWriter::concat_cuts_).
  std::vector<Part> read_concat_parts(const Shape& shape, const std::vector<std::string>& writes);
  int64_t loop_extent(const Shape& shape, size_t d) const {
    return d == part_.dim ? part_.hi - part_.lo : shape[d];
  }

  // Phases that share their outer loops (codegen.cc): the leading dims every phase of the
  // kernel loops over alike and no reduce member reduces, when the phases can run one
  // after another per outer index (elementwise, broadcast and reduce members of one rank
  // only, two phases at least, 16 outer indices at least); empty otherwise.
  Shape shared_outer_loops() const;
  // Inside shared outer loops: whether reduce member `p`'s input is worth keeping in a row
  // buffer for the phases after it (an elementwise value with a transcendental function
  // that a later phase reads again: softmax's exp).
  bool keep_reduced_row(const Primitive& p) const;
  // Whether `from`'s value, expanded through the kernel's elementwise and broadcast
  // members, reads `t`; whether it computes a transcendental function.
  bool reads(const std::string& from, const std::string& t) const;
  bool transcendental(const std::string& t) const;
  // Whether `t`'s value is never negative by how it is computed (exp, a square, ...): a
  // float sum of such values cancels nothing, so its rounding stays relative to it.
  bool nonnegative(const std::string& t) const;

  CpuSchedule schedule_;
  // Inside the shared outer loops: their coordinates, which open_loops() uses for those
  // dims instead of opening loops (and it opens none in parallel).
  Coords shared_;
  std::set<std::string> bfloat16_;  // sides stored as bfloat16
  Part part_;                       // open_loops' restricted dim, if any
  std::set<std::string> done_;      // written tensors stored already
  // The tensor member v's only reader writes when it is a reshape of unit dims in the
  // kernel ("" otherwise): v's value can be stored there directly.
  std::string unit_dims_reshape_written(int v) const;
  std::vector<std::string> epilogue_writes_;  // of the linear member being generated
  bool linear_needs_buffer_ = true;
  std::ostringstream statics_;
};

}  // namespace kora::cpu_gen
