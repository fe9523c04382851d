// oneDNN kernels with their knobs exposed (for the benchmark and tests): the candidate
// and a convolution layout policy in, the kernel and the name of the oneDNN
// implementation it runs out. make_onednn_kernel() (src/cpu/library.h) is
// make_kernel(..., ConvLayout::kAuto).
#pragma once

#include <memory>
#include <string>

#include "cpu/library.h"
#include "cpu/onednn_plan.h"

namespace kora::onednn {

// Convolution src/dst at the primitive: plain NCHW (kPlain), oneDNN's blocked layouts
// with reorders at the kernel boundary (kBlocked), or whichever is faster for the shape
// (kAuto, by blocked_is_faster). kWinograd: oneDNN's Winograd algorithm, in the blocked
// layouts it picks, reorders at the boundary (only where oneDNN offers it: 3x3, stride 1,
// one group, eltwise post-ops; float32). Matmuls always run on plain tensors.
enum class ConvLayout { kAuto, kPlain, kBlocked, kWinograd };

bool blocked_is_faster(const LinearPlan& plan);

std::unique_ptr<CpuLibraryKernel> make_kernel(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c, ConvLayout layout,
                                              std::string* implementation = nullptr,
                                              const TensorLayouts& layouts = {}, bool bf16 = false);

}  // namespace kora::onednn
