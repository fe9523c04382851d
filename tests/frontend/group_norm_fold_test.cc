// Tests of group_norm_fold.h: PyTorch's GroupNorm export (Reshape to [N, G, -1],
// InstanceNormalization, Reshape back) becomes one GroupNormalization, and its fission
// keeps every large tensor in x's shape; a group whose intermediate is read elsewhere stays
// as written. Values against onnxruntime: test_synthetic.py (test_torch_group_norm_export).
#include <gtest/gtest.h>

#include "frontend/model_builder.h"
#include "kora/fission.h"
#include "kora/frontend.h"

namespace {

using kora::Shape;
using kora_test::attr_f;
using kora_test::ModelBuilder;

// x [2, 8, 4, 4] -> Reshape [0, groups, -1] -> InstanceNormalization -> Reshape [2, 8, 4, 4]
// -> y; `grouped_out`: the reshaped x is a graph output too.
ModelBuilder torch_group_norm(int64_t groups, bool grouped_out = false) {
  ModelBuilder m(17);
  m.input("x", {2, 8, 4, 4}).output("y");
  if (grouped_out) m.output("grouped");
  m.init_i64("split", {3}, {0, groups, -1});
  m.init_i64("back", {4}, {2, 8, 4, 4});
  m.init_f32("scale", {groups}, std::vector<float>(static_cast<size_t>(groups), 1.5f));
  m.init_f32("bias", {groups}, std::vector<float>(static_cast<size_t>(groups), 0.25f));
  m.node("Reshape", {"x", "split"}, {"grouped"});
  m.node("InstanceNormalization", {"grouped", "scale", "bias"}, {"normed"},
         {attr_f("epsilon", 1e-3f)}, "gn");
  m.node("Reshape", {"normed", "back"}, {"y"});
  return m;
}

TEST(GroupNormFold, TorchExportBecomesOneGroupNormalization) {
  for (int64_t groups : {1, 4, 8}) {
    const kora::Graph g = kora_test::import_model(torch_group_norm(groups));
    ASSERT_EQ(g.nodes.size(), 1u) << groups;
    const kora::Node& n = g.nodes[0];
    EXPECT_EQ(n.op_type, "GroupNormalization");
    EXPECT_EQ(n.name, "gn");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "scale", "bias"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(n.attr_int("num_groups", 0), groups);
    EXPECT_FLOAT_EQ(static_cast<float>(n.attr_float("epsilon", 0)), 1e-3f);
  }
}

TEST(GroupNormFold, AnIntermediateReadElsewhereIsNotFolded) {
  const kora::Graph g = kora_test::import_model(torch_group_norm(4, true));
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[1].op_type, "InstanceNormalization");
}

// The large tensors of the normalization (x's element count) all have x's shape: no
// reshape merges the channels with the spatial dims, so layout views apply to them.
TEST(GroupNormFold, FissionKeepsLargeTensorsInTheInputsShape) {
  for (int64_t groups : {1, 4, 8}) {
    const kora::PrimGraph p = kora::fission(kora_test::import_model(torch_group_norm(groups)));
    int large = 0;
    for (const kora::Primitive& prim : p.prims)
      for (const std::string& t : prim.outputs) {
        const Shape& s = p.value(t).shape;
        if (kora::numel(s) < 2 * 8 * 4 * 4) continue;
        ++large;
        EXPECT_EQ(s, (Shape{2, 8, 4, 4}))
            << groups << ": " << t << " of a " << kora::prim_kind_name(prim.kind());
      }
    EXPECT_GE(large, 3) << groups;  // centred, its square, the normalized value, ...
  }
}

}  // namespace
