// Internal: a linear primitive and its epilogue read off a candidate, for the backends that
// hand such kernels to a library (oneDNN on the CPU: src/cpu/onednn_plan.h; cuBLASLt and
// cuDNN on CUDA: src/cuda/library_plan.cc). The primitive graph, its kernel DAG and a
// candidate in; a LinearPlan out (or the reason it does not fit): one matmul or
// convolution, which of the kernel's reads feed it (and through what strided view), an
// optional bias, and the epilogue as a list of ops, each in the linear output's
// coordinates. Which plans a library runs is the library's business: this only matches.
//
// Accepted: float32 throughout; exactly one linear member whose operands are kernel reads,
// possibly through reshape members (which move no data) and, for matmul, transposes (a
// strided view, read in place) and products with immediates (the product scaled instead,
// the first epilogue op); then a chain of members each reading the previous value
// once: elementwise ops with an immediate, a tensor read by the kernel of the same shape, or
// a broadcast member (of a read, possibly reshaped) as the other operand; reshapes that only
// add or drop dims of size 1 (LinearPlanOptions::reshaped_rows: more); and the activation
// patterns x*sigmoid(x), x*hardsigmoid(x) and x*(1+erf(x/sqrt 2)) (times a constant). Only
// the chain's last value may leave the kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

// Unary epilogue functions of the value x, with parameters alpha and beta where they have any.
enum class EpilogueEltwise {
  kRelu,       // max(x, 0) + alpha min(x, 0) (alpha 0 here)
  kTanh,       // tanh(x)
  kAbs,        // |x|
  kSqrt,       // sqrt(x)
  kExp,        // e^x
  kLog,        // ln(x)
  kLogistic,   // 1 / (1 + e^-x)
  kSoftRelu,   // ln(1 + e^x)
  kPow,        // alpha x^beta
  kRound,      // x rounded to the nearest integer, halves to even
  kSquare,     // x^2
  kSwish,      // x / (1 + e^(-alpha x))
  kHardswish,  // x min(max(x / 6 + 1/2, 0), 1)
  kGeluErf,    // x (1 + erf(x / sqrt 2)) / 2
  kClip        // min(max(x, alpha), beta)
};
// Binary epilogue functions: x (op) operand, the value always first.
enum class EpilogueBinary { kAdd, kSub, kMul, kDiv, kMax, kMin };

struct EpilogueOp {
  bool binary = false;
  EpilogueEltwise eltwise = EpilogueEltwise::kRelu;
  float alpha = 0, beta = 0;  // eltwise parameters (EpilogueEltwise)
  EpilogueBinary op = EpilogueBinary::kAdd;
  int operand = -1;    // binary: index into kernel_reads, or -1 for the immediate `scalar`
  float scalar = 0;    // binary with an immediate
  Shape operand_dims;  // binary with a tensor: its dims in the linear output's coordinates

  // A binary op with an immediate: `op` applied to the value and `v`.
  static EpilogueOp binary_scalar(EpilogueBinary op, float v) {
    EpilogueOp p;
    p.binary = true;
    p.op = op;
    p.scalar = v;
    return p;
  }
};

struct LinearPlan {
  bool conv = false;           // else matmul
  ConvAttrs conv_attrs;        // every per-dim list filled (strides, dilations, pads >= 0)
  int src = -1, weights = -1;  // indices into kernel_reads
  Shape src_dims, weights_dims, dst_dims;
  // Element strides of src and weights in their reads: row-major, or permuted by
  // transposes (matmul only).
  Shape src_strides, weights_strides;
  int bias = -1;  // index into kernel_reads, or -1: added first (per channel / per column)
  Shape bias_dims;
  std::vector<EpilogueOp> epilogue;  // after the bias, in order
  std::string weights_tensor;        // name of the weights tensor (constant or not)
};

struct LinearPlanOptions {
  // A matmul's epilogue may reshape its value in any way that keeps the last dim (a
  // library that writes the product contiguously, as cuBLAS does); an operand after such a
  // reshape must then vary along the last dim only, or be read in full.
  bool reshaped_rows = false;
};

// The plan, or nullopt with the reason in *why (when `why` is not null).
std::optional<LinearPlan> match_linear_epilogue(const PrimGraph& graph, const KernelDag& dag,
                                                const Candidate& c, std::string* why,
                                                LinearPlanOptions options = {});

}  // namespace kora
