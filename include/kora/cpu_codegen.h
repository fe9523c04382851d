// CPU code generation for a candidate kernel: the primitive graph, its kernel DAG and a
// candidate in; C++ source of one function computing every output of the kernel out.
// So far: float32 kernels of elementwise and broadcast primitives. Each output is one
// loop over its elements; a member's value is computed where it is used (no
// intermediate buffers), a value used twice at the same coordinates once.
//
// The function: extern "C" void SYMBOL(const void* const* in, void* const* out), with
// `in` in kernel_reads() order and `out` in kernel_writes() order (include/kora/candidates.h),
// each pointer to its tensor's elements (float, int64_t, ... as the tensor's dtype).
// Parallel loops use OpenMP (the library is compiled with -fopenmp); the caller sets the
// thread count with omp_set_num_threads() (the process shares one OpenMP runtime).
#pragma once

#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// Whether generate_cpu_kernel can compute this candidate.
bool cpu_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// The hyperparameters of a generated kernel. key() is the stable text the profile database
// stores as the schedule ("default" for the default schedule).
struct CpuSchedule {
  bool parallel = true;  // OpenMP over the outer loops
  std::string key() const;
};

// The schedules worth measuring for this candidate, the default first; a handful.
std::vector<CpuSchedule> cpu_schedule_space(const PrimGraph& graph, const KernelDag& dag,
                                            const Candidate& c);

struct GeneratedKernel {
  std::string symbol;
  std::string source;  // one function; prepend cpu_codegen_prelude() once per file
  std::vector<std::string> reads, writes;
};

// Throws kora::Error naming the primitive it cannot generate.
GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol,
                                    const CpuSchedule& schedule = {});

// Includes and helpers the generated functions use.
std::string cpu_codegen_prelude();

}  // namespace kora
