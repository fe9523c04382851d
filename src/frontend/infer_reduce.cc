// Shape rules of reductions and pooling: Reduce* (axes as attribute or input, keepdims,
// noop_with_empty_axes), ArgMax/ArgMin, global and windowed pooling.
#include <set>

#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

Shape reduced_shape(const InferContext& c, const Shape& x, std::vector<int64_t> axes,
                    bool keepdims) {
  const int64_t r = static_cast<int64_t>(x.size());
  std::set<int64_t> reduce;
  for (int64_t a : axes) reduce.insert(c.axis(a, r));
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (!reduce.count(i))
      out.push_back(x[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

std::vector<ValueInfo> reduce(const InferContext& c) {
  const Node& n = c.node();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (c.has(1)) axes = c.ints(1, "axes");
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return {c.in(0)};
    for (int64_t i = 0; i < c.rank(0); ++i) axes.push_back(i);
  }
  return {
      ValueInfo{c.dtype(0), reduced_shape(c, c.shape(0), axes, n.attr_int("keepdims", 1) != 0)}};
}

std::vector<ValueInfo> arg_reduce(const InferContext& c) {
  const Node& n = c.node();
  if (c.rank(0) == 0) c.fail("input must have rank >= 1");
  return {ValueInfo{DType::kInt64, reduced_shape(c, c.shape(0), {n.attr_int("axis", 0)},
                                                 n.attr_int("keepdims", 1) != 0)}};
}

std::vector<ValueInfo> global_pool(const InferContext& c) {
  if (c.rank(0) < 3) c.fail("input must have rank >= 3");
  Shape out = c.shape(0);
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> pool(const InferContext& c) {
  const Shape& x = c.shape(0);
  if (x.size() < 3) c.fail("input must have rank >= 3");
  if (!c.node().has_attr("kernel_shape")) c.fail("kernel_shape is required");
  Window w = resolve_window(c, Shape(x.begin() + 2, x.end()), {}, true);
  Shape out{x[0], x[1]};
  out.insert(out.end(), w.output.begin(), w.output.end());
  return {ValueInfo{c.dtype(0), out}, ValueInfo{DType::kInt64, out}};
}

}  // namespace

void add_reduce_rules(RuleTable& t) {
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    t[op] = {reduce, 1, 2};
  t["ArgMax"] = {arg_reduce, 1, 1};
  t["ArgMin"] = {arg_reduce, 1, 1};
  t["GlobalAveragePool"] = {global_pool, 1, 1};
  t["GlobalMaxPool"] = {global_pool, 1, 1};
  t["AveragePool"] = {pool, 1, 1};
  t["MaxPool"] = {pool, 1, 1};
  t["LpPool"] = {pool, 1, 1};
  t["GlobalLpPool"] = {global_pool, 1, 1};
}

}  // namespace kora
