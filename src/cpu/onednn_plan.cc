// Reading a oneDNN plan off a candidate (src/cpu/onednn_plan.h): the linear member and its
// epilogue as matched for every library (src/codegen/linear_epilogue.cc), with the
// epilogue's repeated eltwise algorithms made safe for oneDNN.
#include "cpu/onednn_plan.h"

#include <utility>
#include <vector>

namespace kora::onednn {
namespace {

// oneDNN 2.6 gives every eltwise post-op of one algorithm the parameters of the first
// (measured: mul 2, tanh, mul 3 multiplies by 2 twice, in jit convolutions and gemm
// matmuls alike; the matcher makes immediates binary ops, which are not affected). A second
// clip with other bounds becomes max and min; a second pow with another exponent is
// refused (false, the reason in *why).
bool separate_repeats(std::vector<EpilogueOp>& epilogue, std::string* why) {
  std::vector<EpilogueOp> ops;
  for (const EpilogueOp& op : epilogue) {
    const EpilogueOp* first = nullptr;
    for (const EpilogueOp& o : ops)
      if (!o.binary && !op.binary && o.eltwise == op.eltwise) {
        first = &o;
        break;
      }
    if (!first || (first->alpha == op.alpha && first->beta == op.beta)) {
      ops.push_back(op);
    } else if (op.eltwise == EpilogueEltwise::kClip) {
      ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMax, op.alpha));
      ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMin, op.beta));
    } else {
      if (why) *why = "two oneDNN eltwise post-ops of one algorithm with different parameters";
      return false;
    }
  }
  epilogue = std::move(ops);
  return true;
}

}  // namespace

std::optional<LinearPlan> plan_kernel(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c, std::string* why) {
  std::optional<LinearPlan> plan = match_linear_epilogue(graph, dag, c, why);
  if (plan && !separate_repeats(plan->epilogue, why)) return std::nullopt;
  return plan;
}

}  // namespace kora::onednn
