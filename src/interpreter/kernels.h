// Internal to the reference interpreter: the kernels run_primitive dispatches to (one per
// primitive kind, taking the primitive's input tensors and returning its output tensors,
// typed as graph.values says) and the few helpers they share (int_pow with import's
// constant folding, src/frontend/constant_fold.cc, so that both compute Pow alike).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kora/error.h"
#include "kora/primitive.h"
#include "kora/tensor.h"

namespace kora::interp {

// NaN test that is false for integer types (max/min propagate NaN like ONNX).
template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

// base^exp on integers as ONNX Pow computes it: wrapping, 1 / base^-exp truncated for
// exp < 0 (the interpreter's; constant folding's too).
int64_t int_pow(int64_t base, int64_t exp);

using Inputs = std::vector<const Tensor*>;

// Throws kora::Error "<prim.describe()>: <message>".
[[noreturn]] void fail(const Primitive& prim, const std::string& message);

// "float32 [2, 3]"
std::string type_str(DType dtype, const Shape& shape);

Tensor run_elementwise(const Primitive& prim, const ElementwiseAttrs& attrs, const Inputs& in,
                       const ValueInfo& out);
Tensor run_reduce(const Primitive& prim, const ReduceAttrs& attrs, const Inputs& in,
                  const ValueInfo& out);
Tensor run_broadcast(const Primitive& prim, const Inputs& in, const ValueInfo& out);
Tensor run_layout(const Primitive& prim, const LayoutAttrs& attrs, const Inputs& in,
                  const ValueInfo& out);
Tensor run_linear(const Primitive& prim, const LinearAttrs& attrs, const Inputs& in,
                  const ValueInfo& out);
std::vector<Tensor> run_opaque(const PrimGraph& graph, const Primitive& prim, const Inputs& in);

// C[M, N] = A[M, K] x B[K, N] in float32 (row-major, leading dimensions lda, ldb, ldc);
// C is overwritten.
void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc);

// An opaque primitive's ONNX node with its inputs found by node slot.
class OpaqueCall {
 public:
  OpaqueCall(const PrimGraph& graph, const Primitive& prim, const Inputs& in);

  const Node& node() const { return node_; }
  // The tensor given for node input `slot`, or nullptr when the node omits it.
  const Tensor* input(size_t slot) const;
  const Tensor& required(size_t slot) const;
  // Whether output i is wanted, and its type from graph.values.
  bool wants(size_t i) const;
  const ValueInfo& out(size_t i) const;
  size_t num_outputs() const { return prim_.outputs.size(); }
  [[noreturn]] void fail(const std::string& message) const { interp::fail(prim_, message); }
  // Normalizes an axis attribute against `rank` (negative counts from the end).
  int64_t axis(const std::string& key, int64_t fallback, int64_t rank) const;
  // A computed index into a dim of `size`: negative ones wrap, out-of-range ones fail.
  int64_t index(int64_t index, int64_t size) const;

 private:
  const PrimGraph& graph_;
  const Primitive& prim_;
  const Node& node_;
  const Inputs& in_;
};

std::vector<Tensor> run_non_max_suppression(const OpaqueCall& call);
std::vector<Tensor> run_max_pool(const OpaqueCall& call);
std::vector<Tensor> run_scatter_gather_nd(const OpaqueCall& call);
std::vector<Tensor> run_grid_sample(const OpaqueCall& call);
std::vector<Tensor> run_roi_align(const OpaqueCall& call);
std::vector<Tensor> run_deform_conv(const OpaqueCall& call);
std::vector<Tensor> run_image_scatter(const OpaqueCall& call);  // Col2Im, MaxUnpool
std::vector<Tensor> run_det(const OpaqueCall& call);
std::vector<Tensor> run_random(const OpaqueCall& call);  // random.cc
std::vector<Tensor> run_dft(const OpaqueCall& call);
std::vector<Tensor> run_tfidf_vectorizer(const OpaqueCall& call);

}  // namespace kora::interp
