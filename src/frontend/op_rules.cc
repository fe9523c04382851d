// The operator rule table and the InferContext helpers every rule uses.
#include "frontend/op_rules.h"

#include <algorithm>

#include "frontend/control_flow.h"
#include "kora/frontend.h"

namespace kora {

const ValueInfo& InferContext::in(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required");
  return graph_.value(node_.inputs[i]);
}

const Tensor* InferContext::constant(size_t i) const {
  return has(i) ? graph_.constant(node_.inputs[i]) : nullptr;
}

const Tensor& InferContext::require_constant(size_t i, const char* role) const {
  const Tensor* t = constant(i);
  if (!t)
    fail(std::string("input '") + (has(i) ? node_.inputs[i] : "") + "' (" + role +
         ") must be a constant: kora compiles static shapes");
  return *t;
}

std::vector<int64_t> InferContext::ints(size_t i, const char* role) const {
  return require_constant(i, role).to_int64();
}

std::vector<double> InferContext::doubles(size_t i, const char* role) const {
  return require_constant(i, role).to_double();
}

double InferContext::scalar(size_t i, const char* role) const {
  const Tensor& t = require_constant(i, role);
  if (t.numel() != 1)
    fail(std::string(role) + " must hold one value, it has shape " + shape_str(t.shape()));
  return t.double_at(0);
}

int64_t InferContext::axis(int64_t a, int64_t rank) const {
  if (a < -rank || a >= rank)
    fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a < 0 ? a + rank : a;
}

void InferContext::fail(const std::string& message) const {
  throw Error(node_.describe() + ": " + message);
}

DType dtype_attribute(const InferContext& ctx, DType fallback) {
  if (!ctx.node().has_attr("dtype")) return fallback;
  const int to = static_cast<int>(ctx.node().attr_int("dtype", 0));
  const std::optional<DType> d = dtype_from_onnx(to);
  if (!d) ctx.fail("dtype " + onnx_dtype_name(to) + " is not supported");
  return *d;
}

Shape broadcast_shapes(const InferContext& ctx, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

const RuleTable& op_rules() {
  static const RuleTable table = [] {
    RuleTable t;
    add_elementwise_rules(t);
    add_linear_rules(t);
    add_normalization_rules(t);
    add_reduce_rules(t);
    add_layout_rules(t);
    add_misc_rules(t);
    add_indexing_rules(t);
    add_loss_rules(t);
    add_quantize_rules(t);
    add_sampling_rules(t);
    add_signal_rules(t);
    add_recurrent_rules(t);
    add_random_rules(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supported_operators() {
  std::vector<std::string> ops;
  for (const auto& [name, rule] : op_rules()) ops.push_back(name);
  ops.push_back("Constant");
  for (const char* op : {"If", "Loop", "Scan"}) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

bool is_supported_operator(const std::string& op_type) {
  return op_type == "Constant" || is_control_flow_operator(op_type) ||
         op_rules().count(op_type) != 0;
}

}  // namespace kora
