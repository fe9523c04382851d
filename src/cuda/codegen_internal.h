// Internals of CUDA code generation (src/cuda/codegen.h), shared by the
// src/cuda/codegen*.cc files:
//   codegen.cc          planning (a launch per reduce member, then per output shape, or
//                       one row-fused launch), what is supported, schedules and their
//                       keys, the API;
//   codegen_launches.cc the __global__ functions: pointwise (elements per thread, flat
//                       index unflattened into coordinates), reduce (a row per thread,
//                       warp or block, shuffles and shared memory combining partials) and
//                       row-fused (every reduce and output of a row in one launch);
//   codegen_prelude.cc  the prelude;
//   codegen_gather.cc   a Gather of computed indices (opaque), alone in its kernel;
//   codegen_arg_extreme.cc  ArgMax / ArgMin (opaque), alone in its kernel.
// A tensor's value at coordinate expressions comes from the shared ValueWriter
// (src/codegen/value_writer.h), as on the CPU.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/reduce.h"
#include "codegen/value_writer.h"
#include "cuda/codegen.h"

namespace kora::cuda_gen {

using codegen::Coords;

// A Gather of computed indices (an opaque primitive) that gather_kernel generates: data of
// a supported dtype, int64 or int32 indices.
bool gather_supported(const PrimGraph& graph, const Primitive& p);
// Its one function (SYMBOL_0): reads and writes as kernel_reads / kernel_writes give them.
CudaKernel gather_kernel(const PrimGraph& graph, const Primitive& p,
                         const std::vector<std::string>& reads,
                         const std::vector<std::string>& writes, const CudaSchedule& schedule,
                         const std::string& symbol);

// A kernel of one function (SYMBOL_0) over `total` outputs, for opaque primitives generated
// alone: the head of its per-output loop (each thread schedule.items outputs, a block
// apart; the body sees `o`, the output's flat index; close it with "  }\n}\n"), and the
// kernel of that source.
inline std::string per_output_loop(const CudaSchedule& s, int64_t total) {
  std::ostringstream os;
  os << "  const int64_t first = (int64_t)blockIdx.x * " << int64_t(s.block) * s.items
     << " + threadIdx.x;\n"
     << "  for (int k = 0; k < " << s.items << "; ++k) {\n"
     << "    const int64_t o = first + (int64_t)k * " << s.block << ";\n"
     << "    if (o >= " << total << "LL) return;\n";
  return os.str();
}
inline CudaKernel one_launch_kernel(const std::string& symbol,
                                    const std::vector<std::string>& reads,
                                    const std::vector<std::string>& writes, std::string source,
                                    const CudaSchedule& s, int64_t total) {
  CudaKernel k;
  k.symbol = symbol;
  k.reads = reads;
  k.writes = writes;
  k.source = std::move(source);
  CudaLaunch l;
  l.function = symbol + "_0";
  l.work = total;
  l.per_block = int64_t(s.block) * s.items;
  l.block = s.block;
  k.launches.push_back(l);
  return k;
}

// ArgMax / ArgMin (opaque) that arg_extreme_kernel generates: a non-bool input of a
// supported dtype, a non-empty axis, int64 indices out.
bool arg_extreme_supported(const PrimGraph& graph, const Primitive& p);
// Its one function (SYMBOL_0), a thread per output element: reads and writes as
// kernel_reads / kernel_writes give them.
CudaKernel arg_extreme_kernel(const PrimGraph& graph, const Primitive& p,
                              const std::vector<std::string>& reads,
                              const std::vector<std::string>& writes, const CudaSchedule& schedule,
                              const std::string& symbol);

class KernelWriter : public codegen::ValueWriter {
 public:
  KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
               const CudaSchedule& schedule, const std::string& symbol);
  CudaKernel run();
  // Writes __device__ functions instead of __global__ ones, each taking the block index as
  // its first parameter (kora_block_index blockIdx, which the body reads in place of the
  // built-in): the parts of a horizontal kernel (codegen_horizontal.cc).
  void as_device_body() { device_body_ = true; }
  // Whether one launch can compute the whole kernel a row at a time (CudaReduce::kRowWarp,
  // kRowBlock): its reduce members reduce one shape over the same axes, every written
  // tensor has that shape or the reduced one, and values read the reduce results only at
  // their own row (a dry run of every value with the results bound to the row's
  // coordinates).
  bool row_fusible();

 private:
  // A module-scope __device__ table.
  std::string index_table(const std::vector<int64_t>& values) override;
  // A module-scope __device__ array of n elements (one run at a time per module).
  std::string scratch(DType t, int64_t n);
  std::string scratch(const std::string& ctype, int64_t n);

  // codegen_launches.cc
  // A launch storing the written tensors of one shape, their values expanded per element.
  void pointwise_launch(const std::vector<std::string>& writes);
  // A launch computing the reduce member `p` into its buffer.
  void reduce_launch(const Primitive& p, const ReduceAttrs& r);
  // One launch computing every reduce member and written tensor a row at a time, a warp
  // (kRowWarp) or a block (kRowBlock) per row.
  void fused_row_launch(CudaReduce group);
  // The reduce members in topological order.
  std::vector<const Primitive*> reduces() const;
  // Starts a __global__ function (its parameters are every launch's); end_function()
  // appends it to the source and records the launch.
  void begin_function(const std::string& comment);
  void end_function(int64_t work, int64_t per_block);
  // A loop of the row's threads over the `red` elements of a row (flattened), each
  // thread from `first` on, `stride` apart, schedule.items per step (unrolled), up to
  // `end` (an expression; empty: the row's end); body gets the coordinates of one element
  // in `red` (dims of size 1: "0").
  void row_loop(const std::string& first, int64_t stride, const Shape& red,
                const std::function<void(const Coords&)>& body, const std::string& end = "");
  // Combine the accumulators `acc` of a warp (into lane 0) or of a block (into thread 0,
  // or every thread when `to_all`), through shuffles and shared memory.
  void combine_warp(const codegen::ReduceCode& code, const std::string& acc);
  void combine_block(const codegen::ReduceCode& code, const std::string& acc, bool to_all);
  // Locals holding the coordinates of the row-major flat index `flat` in `shape` ("0" for
  // dims of size 1); the flat index is below numel(shape).
  Coords unflatten(const std::string& flat, const Shape& shape);

  CudaSchedule schedule_;
  CudaReduce reduce_ = CudaReduce::kAuto;  // the separate-launch strategy (or kAuto)
  int row_fusible_ = -1;                   // row_fusible(), once known
  // The type of flat indices and coordinates: "int" when every tensor of the kernel has
  // fewer than 2^30 elements (32-bit division by constants is a multiply and a shift;
  // 64-bit is several), else "int64_t".
  std::string index_ = "int64_t";
  std::string symbol_;
  std::string params_;            // the parameter list
  std::ostringstream statics_;    // module-scope tables and scratch
  std::ostringstream functions_;  // the __global__ functions
  std::vector<CudaLaunch> launches_;
  std::string function_;  // the function being written
  bool device_body_ = false;
};

// Parts generated as device functions (KernelWriter::as_device_body, generate_mma_gemm's
// device_body), all launching `block` threads, as one kernel: launch rank j runs each part's
// launch j on its own range of blocks, the parts in order.
CudaKernel horizontal_launches(const PrimGraph& graph, const std::vector<CudaKernel>& generated,
                               const std::vector<std::string>& reads,
                               const std::vector<std::string>& writes, int block,
                               const std::string& symbol);
// A candidate of several independent parts (candidate_parts) as one kernel: each launch
// runs the parts' launches of that rank, each part on its own range of blocks, all at the
// schedule's block size (codegen_horizontal.cc).
CudaKernel horizontal_kernel(const PrimGraph& graph, const KernelDag& dag,
                             const std::vector<Candidate>& parts,
                             const std::vector<std::string>& reads,
                             const std::vector<std::string>& writes, const CudaSchedule& schedule,
                             const std::string& symbol);

}  // namespace kora::cuda_gen
