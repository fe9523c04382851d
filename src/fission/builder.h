// FissionBuilder: what a fission rule uses to emit primitives for one ONNX node. It
// names new tensors, computes their types, makes broadcasting explicit, turns scalar
// constants into immediates, and binds the node's outputs to the tensors that hold them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kora/error.h"
#include "kora/graph.h"
#include "kora/primitive.h"

namespace kora {

// An elementwise operand: a tensor name or an immediate scalar.
struct Arg {
  Arg(std::string t) : tensor(std::move(t)) {}  // NOLINT: implicit by design
  Arg(const char* t) : tensor(t) {}             // NOLINT
  Arg(double v) : value(v), immediate(true) {}  // NOLINT
  std::string tensor;
  double value = 0;
  bool immediate = false;
};

class FissionBuilder {
 public:
  FissionBuilder(const Graph& source, PrimGraph& target, const Node& node,
                 std::map<std::string, std::string>& renames);

  const Node& node() const { return node_; }
  const Graph& source() const { return source_; }
  int64_t opset() const { return source_.opset; }
  [[noreturn]] void fail(const std::string& message) const;

  // The primitive-graph tensor holding the node's input i ("" when absent).
  std::string in(size_t i) const;
  bool has_in(size_t i) const { return node_.has_input(i); }
  const ValueInfo& info(const std::string& tensor) const { return target_.value(tensor); }
  const Shape& shape(const std::string& tensor) const { return info(tensor).shape; }
  DType dtype(const std::string& tensor) const { return info(tensor).dtype; }
  const Tensor* constant(const std::string& tensor) const { return target_.constant(tensor); }
  // The value of node input i, which must be a constant (error names the input and role).
  const Tensor& require_constant(size_t i, const char* role) const;
  // The front end's inferred type of the node's output i: what the rule must produce.
  const ValueInfo& out_info(size_t i) const { return source_.value(node_.outputs.at(i)); }
  bool wants_out(size_t i) const { return node_.has_output(i); }

  // Elementwise op; tensor operands are broadcast (numpy rules) to a common shape; a
  // constant single-element tensor becomes an immediate. The result has `dtype`, or the
  // first tensor operand's dtype (bool for comparisons and logic).
  std::string ew(ScalarOp op, std::vector<Arg> args, std::optional<DType> dtype = {});
  // Reduction keeping the rank (reduced dims become 1).
  std::string reduce(ReduceOp op, const std::string& x, std::vector<int64_t> axes);
  // Expand to `shape` (numpy rules: leading dims added by a reshape first). No-op if equal.
  std::string broadcast(const std::string& x, const Shape& shape);
  std::string reshape(const std::string& x, const Shape& shape);
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm);
  std::string layout(LayoutAttrs attrs, const std::vector<std::string>& inputs, Shape out_shape);
  std::string matmul(const std::string& a, const std::string& b);
  std::string conv(const std::string& x, const std::string& w, ConvAttrs attrs);
  // The node itself as an opaque primitive; binds all its outputs.
  void opaque();
  // An opaque primitive of an operator the rule composes (`node`: op type and attributes,
  // inputs already primitive-graph tensors); returns its outputs, typed `outs`.
  std::vector<std::string> opaque_node(Node node, const std::vector<ValueInfo>& outs);
  // Iota along `axis` of a tensor of `rank` dims (size `n` there, 1 elsewhere), int64.
  std::string iota(int64_t n, int64_t axis, size_t rank);
  std::string add_constant(Tensor value);

  // Node output i is held by `tensor` (checked against the inferred type).
  void bind(size_t i, const std::string& tensor);

 private:
  std::string fresh_name();
  std::string emit(PrimAttrs attrs, std::vector<std::string> inputs, ValueInfo out);

  const Graph& source_;
  PrimGraph& target_;
  const Node& node_;
  std::map<std::string, std::string>& renames_;
  int counter_ = 0;
};

// Batched matmul of A [..., M, K] and B [..., K, N] of any ranks (numpy matmul rules), as
// `result` (rules_linear.cc).
std::string matmul_nd(FissionBuilder& b, std::string a, std::string w, const Shape& result);

// A fission rule emits the primitives of one node through the builder.
using FissionRule = void (*)(FissionBuilder& b);
using FissionTable = std::map<std::string, FissionRule>;

void add_elementwise_fission(FissionTable& table);
void add_linear_fission(FissionTable& table);
void add_normalization_fission(FissionTable& table);
void add_reduce_fission(FissionTable& table);
void add_layout_fission(FissionTable& table);
void add_resize_fission(FissionTable& table);
void add_opaque_fission(FissionTable& table);
void add_indexing_fission(FissionTable& table);
void add_loss_fission(FissionTable& table);
void add_quantize_fission(FissionTable& table);
void add_sampling_fission(FissionTable& table);
void add_random_fission(FissionTable& table);
void add_signal_fission(FissionTable& table);
void add_recurrent_fission(FissionTable& table);

const FissionTable& fission_rules();

// Compositions more than one family of rules uses.
// Softmax (or LogSoftmax with `log`) of x over `axes`, the maximum subtracted first.
std::string stable_softmax(FissionBuilder& b, const std::string& x,
                           const std::vector<int64_t>& axes, bool log);

}  // namespace kora
