// What a oneDNN kernel computes, read off a candidate: the primitive graph, its kernel DAG
// and a candidate in; the LinearPlan oneDNN runs out (or the reason it does not fit): the
// backend-neutral match of src/codegen/linear_epilogue.h (what is accepted is said there),
// its epilogue ops then oneDNN's post-ops, adjusted to what oneDNN computes correctly. No
// oneDNN objects here; src/cpu/onednn_kernel.cc builds them from the plan.
#pragma once

#include <optional>
#include <string>

#include "codegen/linear_epilogue.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora::onednn {

// The plan, or nullopt with the reason in *why (when `why` is not null).
std::optional<LinearPlan> plan_kernel(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c, std::string* why);

}  // namespace kora::onednn
