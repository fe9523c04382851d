// What a oneDNN kernel computes, read off a candidate: the primitive graph, its kernel DAG
// and a candidate in; an OnednnPlan out (or the reason it does not fit). The plan names one
// matmul or convolution, which of the kernel's reads feed it, an optional bias, and the
// epilogue as a list of post-ops, each in the linear output's coordinates. No oneDNN
// objects here; src/cpu/onednn_kernel.cc builds them from the plan.
//
// Accepted: float32 throughout; exactly one linear member whose operands are kernel reads,
// possibly through reshape members (which move no data) and, for matmul, transposes (a
// strided view; oneDNN reads it in place); then a chain of members each
// reading the previous value once: elementwise ops with an immediate, a tensor read by the
// kernel of the same shape, or a broadcast member (of a read, possibly reshaped) as the
// other operand; reshapes that only add or drop dims of size 1; and the activation
// patterns x*sigmoid(x), x*hardsigmoid(x) and x*(1+erf(x/sqrt 2)) (times a constant).
// Only the chain's last value may leave the kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora::onednn {

// Post-op algorithms (mapped to dnnl::algorithm by the kernel).
enum class Eltwise {
  kRelu,
  kTanh,
  kAbs,
  kSqrt,
  kExp,
  kLog,
  kLogistic,
  kSoftRelu,
  kPow,
  kRound,
  kSquare,
  kSwish,
  kHardswish,
  kGeluErf,
  kClip
};
enum class Binary { kAdd, kSub, kMul, kDiv, kMax, kMin };

struct PostOp {
  bool binary = false;
  Eltwise eltwise = Eltwise::kRelu;
  float alpha = 0, beta = 0;  // eltwise parameters (oneDNN's meaning)
  Binary op = Binary::kAdd;
  int operand = -1;    // binary: index into kernel_reads, or -1 for the immediate `scalar`
  float scalar = 0;    // binary with an immediate
  Shape operand_dims;  // binary with a tensor: its dims in the linear output's coordinates
};

struct Plan {
  bool conv = false;  // else matmul
  ConvAttrs conv_attrs;
  int src = -1, weights = -1;  // indices into kernel_reads
  Shape src_dims, weights_dims, dst_dims;
  // Element strides of src and weights in their reads: row-major, or permuted by
  // transposes (matmul only).
  Shape src_strides, weights_strides;
  int bias = -1;  // index into kernel_reads, or -1
  Shape bias_dims;
  std::vector<PostOp> post_ops;
  std::string weights_tensor;  // name of the weights tensor (constant or not)
};

struct PlanOptions {
  // A matmul's epilogue may reshape its value in any way that keeps the last dim (a
  // library that writes the product contiguously, as cuBLAS does); an operand after such a
  // reshape must then vary along the last dim only, or be read in full.
  bool reshaped_rows = false;
};

// The plan, or nullopt with the reason in *why.
std::optional<Plan> plan_kernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                                std::string* why, PlanOptions options = {});

}  // namespace kora::onednn
