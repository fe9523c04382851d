// Library-backed CPU kernels: a candidate in, an object that computes it by calling a
// library out. Two kinds:
//   oneDNN      matmul and convolution primitives, with the candidate's epilogue as
//               post-ops where it fits (src/cpu/onednn_kernel.cc);
//   interpreter the reference interpreter run member by member: opaque primitives, and
//               any kernel no faster implementation accepts (src/cpu/interpreter_kernel.cc).
// Same calling convention as generated kernels (include/kora/cpu_codegen.h): `in` in
// kernel_reads() order, `out` in kernel_writes() order, each pointer to its tensor's
// elements; but a library kernel may take graph constants from the graph when built and
// ignore their `in` pointers (oneDNN: the weights; the interpreter: every constant).
// Threads: the process's OpenMP runtime (omp_set_num_threads).
#pragma once

#include <memory>
#include <string>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

class CpuLibraryKernel {
 public:
  virtual ~CpuLibraryKernel() = default;
  virtual void run(const void* const* in, void* const* out) = 0;
  // The schedule name stored in the profile database ("onednn", "interpreter").
  virtual std::string schedule() const = 0;
};

// Whether make_onednn_kernel accepts the candidate.
bool onednn_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// Throws kora::Error naming the candidate's primitives when it is not supported.
std::unique_ptr<CpuLibraryKernel> make_onednn_kernel(const PrimGraph& graph, const KernelDag& dag,
                                                     const Candidate& c);

// Every candidate; slow, but always available.
std::unique_ptr<CpuLibraryKernel> make_interpreter_kernel(const PrimGraph& graph,
                                                          const KernelDag& dag, const Candidate& c);

}  // namespace kora
