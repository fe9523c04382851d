// Internals of CPU code generation (include/kora/cpu_codegen.h), shared by the
// src/cpu/codegen_*.cc files:
//   codegen_scalar.cc  dtypes as C types, literals, elementwise functions and casts as C
//                      expressions (semantics of src/interpreter/elementwise.cc), the prelude;
//   codegen_value.cc   KernelWriter::value: a tensor's value at coordinate expressions,
//                      expanded through elementwise, broadcast and layout members;
//   codegen_phases.cc  loop nests: pointwise, reduce and linear phases;
//   codegen.cc         planning (which members get a phase and a buffer), schedules, API.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/cpu_codegen.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora::cpu_gen {

using Coords = std::vector<std::string>;

// ---- codegen_scalar.cc ----
bool dtype_supported(DType t);           // float32, int64, int32, bool
const char* ctype(DType t);              // "float", "int64_t", "int32_t", "uint8_t"
std::string literal(double v, DType t);  // `v` converted to dtype t as set_element() does
// Elementwise primitive `p` as a C expression of its output dtype; args[i] is the C
// expression of input i (in that input's dtype). Throws kora::Error when not generated.
std::string elementwise_expr(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e,
                             const std::vector<std::string>& args);
bool elementwise_supported(const PrimGraph& g, const Primitive& p, const ElementwiseAttrs& e);
std::string prelude_text();
// ---- codegen_gemm.cc ----
std::string gemm_prelude();  // the micro-kernel
// Whether the default schedule computes an m x n x k product as packed GEMM.
bool gemm_by_default(int64_t m, int64_t n, int64_t k);

// A GEMM C = A x B (m x k times k x n) repeated over `outer` loops (batch dims; image and
// group of a convolution); a/b give an operand's value (a C expression, statements
// emitted) at outer coordinates and row/column expressions, c the coordinates of the
// linear member's output.
struct GemmSpec {
  int64_t m = 0, n = 0, k = 0;
  Shape outer;
  bool b_k_inner = false;  // pack B with k in the inner loop (else its columns)
  std::function<std::string(const Coords&, const std::string&, const std::string&)> a, b;
  std::function<Coords(const Coords&, const std::string&, const std::string&)> c;
};

// Thrown while expanding an epilogue when a tensor bound to an accumulator is wanted at
// other coordinates than the accumulator's.
struct NotAtBoundCoords {};

// Writes one kernel function. Members are computed where they are used (value()), except
// the materialized ones (reduce and linear members), which get a phase of their own writing
// a buffer (the output when the tensor is written, else function-static scratch).
class KernelWriter {
 public:
  KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
               const CpuSchedule& schedule);
  GeneratedKernel run(const std::string& symbol);

 private:
  friend struct PhaseWriter;
  // codegen_value.cc
  std::string value(const std::string& tensor, const Coords& coords);
  std::string layout_value(const Primitive& p, const LayoutAttrs& attrs, const Coords& coords);
  std::string emit_local(DType t, const std::string& expr);
  std::string offset(const Shape& shape, const Coords& coords) const;
  // The materialized tensors `tensor` reads through fused members (itself when it is one).
  const std::set<std::string>& deps(const std::string& tensor);

  // codegen_phases.cc
  void pointwise_phase(const std::vector<std::string>& writes);
  void reduce_phase(const Primitive& p, const ReduceAttrs& r);
  void matmul_phase(const Primitive& p);
  void conv_phase(const Primitive& p, const ConvAttrs& a);
  // Stores of the linear member `p`'s value `acc` at `coords`: its buffer (when it has one)
  // and its epilogue writes.
  // codegen_gemm.cc
  bool use_gemm(int64_t m, int64_t n, int64_t k) const;
  void gemm_phase(const Primitive& p, const GemmSpec& g);
  void matmul_gemm(const Primitive& p);
  void conv_gemm(const Primitive& p, const ConvAttrs& a);
  void epilogue(const Primitive& p, const Coords& coords, const std::string& acc);
  void plan_epilogue(const Primitive& p);

  // Scopes: the statements and memoized locals of the loop body being written.
  struct Scope {
    std::ostringstream os;
    std::string indent;
    std::map<std::string, std::string> memo;
  };
  Scope& scope() { return scopes_.back(); }
  void line(const std::string& text) { scope().os << scope().indent << text << "\n"; }
  // `header {`, then a nested scope for the body; close_block() writes it and `}`.
  void open_block(const std::string& header);
  void close_block();
  // Loops over the dims of `shape` of size > 1 (coordinate "0" for the others), the
  // outer ones collapsed into one OpenMP loop when `parallel`, the innermost `omp simd`
  // when `simd`; returns the coordinates.
  // close_loops() closes them.
  Coords open_loops(const Shape& shape, bool parallel, size_t first = 0, size_t end = SIZE_MAX,
                    bool simd = false);
  void close_loops(const Shape& shape, size_t first = 0, size_t end = SIZE_MAX);
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  std::string scratch(DType t, int64_t n);  // a function-static buffer
  bool parallel_for(int64_t work) const;    // whether a loop nest of `work` goes parallel

  const PrimGraph& graph_;
  const KernelDag& dag_;
  const Candidate& c_;
  CpuSchedule schedule_;
  std::vector<std::string> reads_, writes_;
  std::map<std::string, const Primitive*> producer_;  // members by output tensor
  // tensor -> pointer name: inputs, outputs, materialized members' buffers
  std::map<std::string, std::string> in_ptr_, out_ptr_, buffer_;
  std::map<std::string, std::set<std::string>> deps_;
  std::set<std::string> done_;                                   // written tensors stored already
  std::map<std::string, std::pair<Coords, std::string>> bound_;  // epilogue accumulators
  std::vector<std::string> epilogue_writes_;  // of the linear member being generated
  bool linear_needs_buffer_ = true;
  std::vector<Scope> scopes_;
  std::ostringstream statics_;
  int counter_ = 0;
};

}  // namespace kora::cpu_gen
