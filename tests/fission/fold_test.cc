// Tests of fold.cc, primitive-level constant folding: a weight standardization (timm's
// StdConv2d: the weight minus its per-filter mean, over its standard deviation, as torch
// exports it) folds into the convolution's weight, checked against the standardization
// computed here in double; a bias broadcast to an activation's shape stays an index map.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/model_builder.h"
#include "kora/fission.h"
#include "kora/frontend.h"

namespace {

using kora::PrimKind;
using kora_test::attr_i;
using kora_test::attr_is;
using kora_test::ModelBuilder;

constexpr int kFilters = 3, kInputs = 2, kTaps = 9;  // weight [3, 2, 3, 3]

std::vector<float> weight_values() {
  std::vector<float> w;
  for (int i = 0; i < kFilters * kInputs * kTaps; ++i)
    w.push_back(std::sin(0.37f * static_cast<float>(i)) + 0.1f * static_cast<float>(i % 5));
  return w;
}

// y = Conv(x, (w - mean) / sqrt(var + eps)) + bias, mean and var per filter.
ModelBuilder standardized_conv() {
  ModelBuilder m(17);
  m.input("x", {1, kInputs, 6, 6}).output("y");
  m.init_f32("w", {kFilters, kInputs, 3, 3}, weight_values());
  m.init_f32("eps", {}, {1e-5f});
  m.init_f32("bias", {1, kFilters, 1, 1}, {0.5f, -0.5f, 1.0f});
  m.node("ReduceMean", {"w"}, {"mean"}, {attr_is("axes", {1, 2, 3}), attr_i("keepdims", 1)});
  m.node("Sub", {"w", "mean"}, {"centred"});
  m.node("Mul", {"centred", "centred"}, {"squares"});
  m.node("ReduceMean", {"squares"}, {"var"}, {attr_is("axes", {1, 2, 3}), attr_i("keepdims", 1)});
  m.node("Add", {"var", "eps"}, {"var_eps"});
  m.node("Sqrt", {"var_eps"}, {"std"});
  m.node("Div", {"centred", "std"}, {"ws"});
  m.node("Conv", {"x", "ws"}, {"conv"}, {attr_is("pads", {1, 1, 1, 1})});
  m.node("Add", {"conv", "bias"}, {"y"});
  return m;
}

TEST(FoldConstantPrimitives, AWeightStandardizationFoldsIntoTheWeight) {
  const kora::PrimGraph p = kora::fission(kora_test::import_model(standardized_conv()));
  const kora::Primitive* conv = nullptr;
  for (const kora::Primitive& prim : p.prims) {
    EXPECT_NE(prim.kind(), PrimKind::kReduce) << "the standardization was not folded";
    if (prim.kind() == PrimKind::kLinear) conv = &prim;
  }
  ASSERT_NE(conv, nullptr);
  const kora::Tensor* w = p.constant(conv->inputs.at(1));
  ASSERT_NE(w, nullptr) << "the convolution's weight is computed at run time";
  ASSERT_EQ(w->numel(), kFilters * kInputs * kTaps);
  const std::vector<float> raw = weight_values();
  for (int f = 0; f < kFilters; ++f) {
    double mean = 0, var = 0;
    for (int i = 0; i < kInputs * kTaps; ++i) mean += raw[f * kInputs * kTaps + i];
    mean /= kInputs * kTaps;
    for (int i = 0; i < kInputs * kTaps; ++i)
      var += std::pow(raw[f * kInputs * kTaps + i] - mean, 2);
    var /= kInputs * kTaps;
    for (int i = 0; i < kInputs * kTaps; ++i) {
      const int k = f * kInputs * kTaps + i;
      EXPECT_NEAR(w->double_at(k), (raw[k] - mean) / std::sqrt(var + 1e-5), 1e-5) << k;
    }
  }
  // the bias, broadcast to the convolution's output, is read by run-time work: not folded
  bool bias_broadcast = false;
  for (const kora::Primitive& prim : p.prims)
    bias_broadcast = bias_broadcast || prim.kind() == PrimKind::kBroadcast;
  EXPECT_TRUE(bias_broadcast);
}

}  // namespace
