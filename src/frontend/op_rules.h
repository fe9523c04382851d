// The per-operator rules of the front end: output dtypes and static shapes from input
// types, shapes and (where an operator needs them) constant input values. One table,
// filled by one file per operator family (infer_*.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kora/error.h"
#include "kora/graph.h"

namespace kora {

// What a rule sees of one node: its attributes, the types of its inputs, and the values
// of those inputs that are constants.
class InferContext {
 public:
  InferContext(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return graph_.opset; }
  size_t num_inputs() const { return node_.inputs.size(); }
  bool has(size_t i) const { return node_.has_input(i); }
  const ValueInfo& in(size_t i) const;
  const Shape& shape(size_t i) const { return in(i).shape; }
  int64_t rank(size_t i) const { return static_cast<int64_t>(in(i).shape.size()); }
  DType dtype(size_t i) const { return in(i).dtype; }
  // The value of input i when it is a constant; nullptr when absent or computed.
  const Tensor* constant(size_t i) const;
  // The value of input i, which must be a constant: static shapes depend on it.
  // `role` names the input in the error ("shape", "pads").
  std::vector<int64_t> ints(size_t i, const char* role) const;
  std::vector<double> doubles(size_t i, const char* role) const;
  // A constant input that must hold exactly one element.
  double scalar(size_t i, const char* role) const;

  // Axis in [-rank, rank) -> [0, rank); anything else is an error naming the node.
  int64_t axis(int64_t a, int64_t rank) const;
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Tensor& require_constant(size_t i, const char* role) const;
  const Graph& graph_;
  const Node& node_;
};

using InferFn = std::vector<ValueInfo> (*)(const InferContext&);

struct OpRule {
  InferFn infer;
  int min_inputs;
  int max_inputs;  // -1: variadic
};

using RuleTable = std::map<std::string, OpRule>;

void add_elementwise_rules(RuleTable& table);
void add_linear_rules(RuleTable& table);
void add_normalization_rules(RuleTable& table);
void add_reduce_rules(RuleTable& table);
void add_layout_rules(RuleTable& table);
void add_misc_rules(RuleTable& table);
void add_indexing_rules(RuleTable& table);
void add_loss_rules(RuleTable& table);
void add_quantize_rules(RuleTable& table);
void add_sampling_rules(RuleTable& table);
void add_signal_rules(RuleTable& table);
void add_recurrent_rules(RuleTable& table);
void add_random_rules(RuleTable& table);

const RuleTable& op_rules();

// The node's `dtype` attribute (an ONNX element type) as a kora dtype, or `fallback` when
// absent; a type kora does not have fails naming the node.
DType dtype_attribute(const InferContext& ctx, DType fallback);

// Multidirectional (numpy) broadcast of two shapes; fails naming the node.
Shape broadcast_shapes(const InferContext& ctx, const Shape& a, const Shape& b);

}  // namespace kora
