// Canonical kernel signatures (include/kora/candidates.h) on slices: kernels that read one
// tensor through the same slice at other offsets (an unrolled recurrent cell's time steps)
// share their canonical signature, so they are one kernel to measure, while their instance
// signatures, which name generated code, differ; a slice of another shape or step, or
// other work after it, is another kernel under both.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "frontend/model_builder.h"
#include "kora/candidates.h"
#include "kora/fission.h"
#include "kora/kernel_dag.h"

namespace kora_test {
namespace {

using namespace kora;

// x [6, 8] -> Slice rows [t, t + 1) -> Tanh -> y_t for t < 6; rows [0, 2) -> Tanh;
// rows 0, 2, 4 (step 2) -> Tanh; rows [1, 2) -> Relu.
PrimGraph sliced_rows() {
  ModelBuilder m;
  m.input("x", {6, 8}).init_i64("axis", {1}, {0});
  auto slice = [&](const std::string& name, int64_t start, int64_t end, int64_t step,
                   const std::string& op) {
    m.init_i64(name + "_s", {1}, {start}).init_i64(name + "_e", {1}, {end});
    m.init_i64(name + "_p", {1}, {step});
    m.node("Slice", {"x", name + "_s", name + "_e", "axis", name + "_p"}, {name + "_r"}, {},
           name + "_slice");
    m.node(op, {name + "_r"}, {name}, {}, name + "_op");
    m.output(name);
  };
  for (int t = 0; t < 6; ++t) slice("y" + std::to_string(t), t, t + 1, 1, "Tanh");
  slice("two", 0, 2, 1, "Tanh");
  slice("even", 0, 6, 2, "Tanh");
  slice("relu", 1, 2, 1, "Relu");
  return fission(import_model(m));
}

// The candidate of the slice and the operator after it named `name` (`name`_slice,
// `name`_op).
Candidate slice_kernel(const PrimGraph& g, const KernelDag& dag, const std::string& name) {
  std::vector<int> members;
  for (int v = 0; v < dag.size(); ++v) {
    const std::string& p = g.prims[dag.prim[v]].name;
    if (p.rfind(name + "_slice#", 0) == 0 || p.rfind(name + "_op#", 0) == 0) members.push_back(v);
  }
  EXPECT_EQ(members.size(), 2u) << name;
  return make_candidate(dag, members);
}

TEST(Signature, SlicesAtOtherOffsetsAreOneKernelToMeasureAndOtherCode) {
  const PrimGraph g = sliced_rows();
  const KernelDag dag = kernel_dag_of(g);
  std::set<uint64_t> canonical, instance;
  for (int t = 0; t < 6; ++t) {
    const Candidate c = slice_kernel(g, dag, "y" + std::to_string(t));
    canonical.insert(canonical_signature(g, dag, c));
    instance.insert(instance_signature(g, dag, c));
  }
  EXPECT_EQ(canonical.size(), 1u);  // one kernel to measure for the six rows
  EXPECT_EQ(instance.size(), 6u);   // six functions to generate
  const uint64_t row = *canonical.begin();
  for (const char* other : {"two", "even", "relu"}) {
    const Candidate c = slice_kernel(g, dag, other);
    EXPECT_NE(canonical_signature(g, dag, c), row) << other;
    EXPECT_FALSE(instance.count(instance_signature(g, dag, c))) << other;
  }
  // The first row's kernel: the same instance as itself, another from the second row's.
  const Candidate first = slice_kernel(g, dag, "y0");
  EXPECT_EQ(instance_signature(g, dag, first), instance_signature(g, dag, first));
  EXPECT_NE(instance_signature(g, dag, first), canonical_signature(g, dag, first));
}

}  // namespace
}  // namespace kora_test
