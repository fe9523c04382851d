// Internals of CUDA code generation (include/kora/cuda_codegen.h), shared by the
// src/cuda/codegen*.cc files:
//   codegen.cc          planning (a launch per reduce member, then per output shape),
//                       what is supported, schedules and their keys, the API;
//   codegen_launches.cc the __global__ functions: pointwise (elements per thread, flat
//                       index unflattened into coordinates) and reduce (a row per thread,
//                       warp or block, shuffles and shared memory combining partials);
//   codegen_prelude.cc  the prelude.
// A tensor's value at coordinate expressions comes from the shared ValueWriter
// (src/codegen/value_writer.h), as on the CPU.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "codegen/value_writer.h"
#include "kora/cuda_codegen.h"

namespace kora::cuda_gen {

using codegen::Coords;

class KernelWriter : public codegen::ValueWriter {
 public:
  KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
               const CudaSchedule& schedule, const std::string& symbol);
  CudaKernel run();

 private:
  // A module-scope __device__ table.
  std::string index_table(const std::vector<int64_t>& values) override;
  // A module-scope __device__ array of n elements (one run at a time per module).
  std::string scratch(DType t, int64_t n);

  // codegen_launches.cc
  // A launch storing the written tensors of one shape, their values expanded per element.
  void pointwise_launch(const std::vector<std::string>& writes);
  // A launch computing the reduce member `p` into its buffer.
  void reduce_launch(const Primitive& p, const ReduceAttrs& r);
  // Starts a __global__ function (its parameters are every launch's); end_function()
  // appends it to the source and records the launch.
  void begin_function(const std::string& comment);
  void end_function(int64_t work, int64_t per_block);
  // Locals holding the coordinates of the row-major flat index `flat` in `shape` ("0" for
  // dims of size 1); the flat index is below numel(shape).
  Coords unflatten(const std::string& flat, const Shape& shape);

  CudaSchedule schedule_;
  std::string symbol_;
  std::string params_;            // the parameter list
  std::ostringstream statics_;    // module-scope tables and scratch
  std::ostringstream functions_;  // the __global__ functions
  std::vector<CudaLaunch> launches_;
  std::string function_;  // the function being written
};

}  // namespace kora::cuda_gen
