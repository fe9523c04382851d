// Internal: the part of code generation every backend shares (CPU: src/cpu/codegen*.cc,
// CUDA: src/cuda/codegen*.cc). A candidate kernel in; statements out that compute a
// tensor's value at given coordinate expressions, expanded through the kernel's
// elementwise, broadcast and layout members (index maps composed, no intermediate
// buffers), loading external tensors and materialized members (reduce, linear) from the
// buffers the backend names. Backends derive from ValueWriter, write their loop nests
// or thread mappings around value() and say where constant index tables live.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/scalar.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora::codegen {

// C expressions of a tensor's coordinates, one per dim ("0" for dims of size 1).
using Coords = std::vector<std::string>;

// Thrown while expanding an epilogue when a tensor bound to an accumulator is wanted at
// other coordinates than the accumulator's.
struct NotAtBoundCoords {};

class ValueWriter {
 public:
  ValueWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
  virtual ~ValueWriter() = default;

 protected:
  // The name of a local holding `tensor`'s element at `coords` (statements emitted into
  // the current scope; one local per (tensor, coordinates) and scope chain, so shared
  // subexpressions are computed once).
  std::string value(const std::string& tensor, const Coords& coords);
  std::string layout_value(const Primitive& p, const LayoutAttrs& attrs, const Coords& coords);
  // A reshape's input coordinates at its output's `coords` (value_writer.cc).
  Coords reshape_coords(const Shape& out, const Shape& in, const Coords& coords);
  std::string emit_local(DType t, const std::string& expr);
  // The row-major element offset of `coords` in a tensor of `shape`.
  std::string offset(const Shape& shape, const Coords& coords) const;
  // The materialized tensors `tensor` reads through fused members (itself when it is one).
  const std::set<std::string>& deps(const std::string& tensor);
  // A constant int64 table (a gather's indices) in the generated code; returns its name.
  virtual std::string index_table(const std::vector<int64_t>& values) = 0;

  // Scopes: the statements and memoized locals of the block being written.
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
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

  const PrimGraph& graph_;
  const KernelDag& dag_;
  const Candidate& c_;
  std::vector<std::string> reads_, writes_;           // kernel_reads(), kernel_writes()
  std::map<std::string, const Primitive*> producer_;  // members by output tensor
  // tensor -> pointer name: inputs, outputs, materialized members' buffers
  std::map<std::string, std::string> in_ptr_, out_ptr_, buffer_;
  // A buffer holding only part of its tensor (a row): the offset of that part's first
  // element, subtracted from every read's offset.
  std::map<std::string, std::string> buffer_base_;
  std::map<std::string, std::set<std::string>> deps_;
  std::map<std::string, std::pair<Coords, std::string>> bound_;  // epilogue accumulators
  // Coordinates whose offset in a tensor of a shape is a known expression (a flat index
  // the backend already has): {coords, shape} -> expression.
  std::map<std::pair<Coords, Shape>, std::string> known_offsets_;
  // Coordinate expressions known to lie in [first, second) (a loop variable over part of
  // a dim): a concat member read at such a coordinate within one input reads that input
  // alone, with no test per element.
  // A coordinate that is such a variable plus a constant ("(i2 + 160)": a slice of the
  // concat) lies in that range moved by the constant.
  std::map<std::string, std::pair<int64_t, int64_t>> known_ranges_;
  // While collecting_cuts_ (a dry run of a phase's values on placeholder coordinates): for
  // each concat member read at a variable plus a constant that no known range resolves,
  // the values of the variable where the input read changes, by variable; the phase then
  // splits its loop there so that each part reads one input.
  bool collecting_cuts_ = false;
  std::map<std::string, std::set<int64_t>> concat_cuts_;
  // Coordinates that are mixed-radix numbers of other coordinates ("(i4 * 64 + i5)": i4 over
  // 6, i5 over 64, a loop split where a reshape merges dims), most significant digit first:
  // a reshape that splits such a coordinate again takes its digits as they are.
  using Digits = std::vector<std::pair<std::string, int64_t>>;
  std::map<std::string, Digits> known_digits_;
  // Reshapes whose coordinates took a division and a remainder of a flat index (a loop
  // that cannot vectorize along such a coordinate): a phase's dry run compares splits by it.
  int index_divisions_ = 0;
  std::vector<Scope> scopes_;
  int counter_ = 0;

 private:
  // reshape_coords within one group of dims (od[i, i1) of `out`, id[j, j1) of `in`) by
  // digits, when the output coordinates' digits fill each input dim exactly.
  bool compose_digits(const Shape& out, const Shape& in, const Coords& coords,
                      const std::vector<size_t>& od, const std::vector<size_t>& id, size_t i,
                      size_t i1, size_t j, size_t j1, Coords& result);
};

}  // namespace kora::codegen
