// CPU code generation for a candidate kernel: the primitive graph, its kernel DAG and a
// candidate in; C++ source of one function computing every output of the kernel out.
// So far: float32 kernels of elementwise and broadcast primitives. Each output is one
// loop over its elements; a member's value is computed where it is used (no
// intermediate buffers), a value used twice at the same coordinates once.
//
// The function: extern "C" void SYMBOL(const float* const* in, float* const* out), with
// `in` in kernel_reads() order and `out` in kernel_writes() order (include/kora/candidates.h).
#pragma once

#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// Whether generate_cpu_kernel can compute this candidate.
bool cpu_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

struct GeneratedKernel {
  std::string symbol;
  std::string source;  // one function; prepend cpu_codegen_prelude() once per file
  std::vector<std::string> reads, writes;
};

// Throws kora::Error naming the primitive it cannot generate.
GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol);

// Includes and helpers the generated functions use.
std::string cpu_codegen_prelude();

}  // namespace kora
