// Costs in context (src/cost/context_cost.cc, ProfileDbCost::learn_context): a two-
// convolution graph built through fission, every candidate measured alone at 1 ms, a few
// timed inside running plans; the costs of the kernels never timed in plan checked
// against the ratios of the ones that were, worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "candidates/hand_built_graphs.h"
#include "cpu/library.h"
#include "frontend/model_builder.h"
#include "kora/cost.h"
#include "kora/fission.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

using kora_test::TempDir;

// x -> conv (64x32x3x3) -> relu -> conv (64x64x3x3) -> + the first conv's output -> y (not
// the second conv's own input: that sum would merge into it, parallel_conv_merge.h).
PrimGraph two_convolutions() {
  kora_test::ModelBuilder mb;
  mb.input("x", {1, 32, 14, 14})
      .init_f32("w1", {64, 32, 3, 3}, std::vector<float>(64 * 32 * 9, 0.1f))
      .init_f32("w2", {64, 64, 3, 3}, std::vector<float>(64 * 64 * 9, 0.1f));
  mb.node("Conv", {"x", "w1"}, {"c1"}, {kora_test::attr_is("pads", {1, 1, 1, 1})});
  mb.node("Relu", {"c1"}, {"r1"});
  mb.node("Conv", {"r1", "w2"}, {"c2"}, {kora_test::attr_is("pads", {1, 1, 1, 1})});
  mb.node("Add", {"c2", "c1"}, {"y"});
  mb.output("y");
  return fission(kora_test::import_model(mb));
}

struct Fixture {
  PrimGraph g = two_convolutions();
  ModelCandidates candidates = unique_candidates(g, PartitionOptions{}, CandidateOptions{});
  TempDir dir;
  std::shared_ptr<ProfileDb> db = std::make_shared<ProfileDb>(dir.file("profiles.db"));

  // The kernel of primitive `prim` alone.
  const UniqueCandidate& single(int prim) const {
    for (const UniqueCandidate& u : candidates.unique)
      if (u.candidate->members.size() == 1 && u.sub->prim[u.candidate->members[0]] == prim)
        return u;
    throw std::runtime_error("no single-primitive kernel of primitive " + std::to_string(prim));
  }
  double cost(ProfileDbCost& costs, int prim) const {
    const UniqueCandidate& u = single(prim);
    return costs.cost_ms(g, *u.sub, *u.candidate);
  }
  uint64_t sig(int prim) const { return single(prim).candidate->signature; }
};

ProfileRecord record(uint64_t signature, const std::string& schedule, double ms) {
  ProfileRecord r;
  r.device = "dev", r.signature = signature, r.schedule = schedule, r.median_ms = ms;
  return r;
}

TEST(ContextCost, KernelsNeverTimedInPlanTakeTheRatioOfSimilarKernelsThatWere) {
  Fixture f;
  ASSERT_EQ(f.g.prims.size(), 4u);  // conv, relu, conv, add
  std::vector<ProfileRecord> alone;
  for (const UniqueCandidate& u : f.candidates.unique)
    alone.push_back(record(u.candidate->signature, "generated", 1.0));
  f.db->put(alone);
  // Inside a running plan the first convolution took twice its time alone (its weights
  // came from memory), the relu half of it (its input was still in the cache).
  f.db->put_in_plan("dev", {{f.sig(0), {{"generated", 2.0}}}, {f.sig(1), {{"generated", 0.5}}}}, 1);
  f.db->put_kernel_overhead("dev", 0.01);

  ProfileDbCost before(f.db, "dev", nullptr);
  EXPECT_DOUBLE_EQ(f.cost(before, 2), 1.0 + 0.01);  // without the graph: its time alone

  ProfileDbCost costs(f.db, "dev", nullptr);
  costs.learn_context(f.g, f.candidates.unique);
  EXPECT_EQ(costs.context_samples(), 2);
  EXPECT_DOUBLE_EQ(f.cost(costs, 0), 2.0 + 0.01);  // timed in plan: that time
  EXPECT_DOUBLE_EQ(f.cost(costs, 1), 0.5 + 0.01);
  // The second convolution: the only other linear kernel timed, 0.86 away in log bytes
  // (twice the weights, the same other bytes), against the ratio 1 at distance 2:
  // exp((ln 2 / (d + 0.25) + 0) / (1 / (d + 0.25) + 1 / 2.25)).
  const double d = std::log1p(64.0 * 64 * 9 * 4) - std::log1p(64.0 * 32 * 9 * 4) +
                   std::abs(std::log1p(2 * 64.0 * 14 * 14 * 4) -
                            std::log1p(32.0 * 14 * 14 * 4 + 64.0 * 14 * 14 * 4));
  const double w = 1 / (d + 0.25), prior = 1 / 2.25;
  EXPECT_NEAR(f.cost(costs, 2), 1.0 * std::exp(w * std::log(2.0) / (w + prior)) + 0.01, 1e-9);
  EXPECT_GT(f.cost(costs, 2), 1.3);
  // The add: an elementwise kernel like the relu, cheaper in plan than alone.
  EXPECT_LT(f.cost(costs, 3), 0.85);
  // Once per object: learning again changes nothing.
  const double add_ms = f.cost(costs, 3);
  costs.learn_context(f.g, f.candidates.unique);
  EXPECT_DOUBLE_EQ(f.cost(costs, 3), add_ms);
}

TEST(ContextCost, NothingTimedInPlanLeavesTheTimesAlone) {
  Fixture f;
  std::vector<ProfileRecord> alone;
  for (const UniqueCandidate& u : f.candidates.unique)
    alone.push_back(record(u.candidate->signature, "generated", 0.7));
  f.db->put(alone);
  ProfileDbCost costs(f.db, "dev", nullptr);
  costs.learn_context(f.g, f.candidates.unique);
  EXPECT_EQ(costs.context_samples(), 0);
  EXPECT_EQ(costs.context_adjusted(), 0);
  for (int prim = 0; prim < 4; ++prim) EXPECT_DOUBLE_EQ(f.cost(costs, prim), 0.7);
}

TEST(ContextCost, AConvolutionTimedInPlanLendsItsRatioToItsNativeVariants) {
  // The plain kernel ran 1.5x its time alone inside a plan. Its native implementation with
  // its sides reordered (onednn:blocked) runs in a plan as the plain one does; costed alone
  // it looked cheaper than the plain kernel's in-plan time and the solver took it.
  Fixture f;
  const uint64_t conv = f.sig(0);
  f.db->put({record(conv, "onednn", 0.4), record(conv, kOnednnNative, 0.2),
             record(conv, kOnednnBlocked, 0.42)});
  f.db->put_in_plan("dev", {{conv, {{"onednn", 0.6}}}}, 1);
  ProfileDbCost costs(f.db, "dev", nullptr);
  const UniqueCandidate& u = f.single(0);
  const LayoutCost alone = costs.layout_cost(f.g, *u.sub, *u.candidate);
  if (alone.sides.empty()) GTEST_SKIP() << "oneDNN has no native layouts for it here";
  EXPECT_DOUBLE_EQ(alone.blocked_ms, 0.42);
  costs.learn_context(f.g, f.candidates.unique);
  const LayoutCost l = costs.layout_cost(f.g, *u.sub, *u.candidate);
  EXPECT_NEAR(l.blocked_ms, 0.42 * 1.5, 1e-12);
  EXPECT_NEAR(l.native_ms, 0.2 * 1.5, 1e-12);
  // On plain tensors it costs its cheapest schedule: onednn:blocked, which no plan timed,
  // at its time alone (the next check on the clock times it in turn).
  EXPECT_DOUBLE_EQ(f.cost(costs, 0), 0.42);
}

}  // namespace
}  // namespace kora
