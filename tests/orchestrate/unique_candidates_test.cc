// unique_candidates() (include/kora/orchestration.h), the distinct kernels both profilers
// measure, on a model of identical layers cut into several segments: its segments are
// segment_candidates() of partition_dag()'s segments; its unique candidates are, in order,
// the first candidate of each signature met walking those segments, so repeated layers
// give fewer unique candidates than candidates; each points into its own segment, also
// after the result is moved; the candidate options (a capability filter) apply.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/model_builder.h"
#include "kora/fission.h"
#include "kora/orchestration.h"

namespace {

using namespace kora;

PartitionOptions sizes(int min_size, int max_size) {
  PartitionOptions o;
  o.min_size = min_size;
  o.max_size = max_size;
  return o;
}

// x -> 6 x (MatMul by its own 8x8 weights, + bias, Relu): the layers' weights differ, but
// signatures ignore weight values, so every layer repeats the first one's kernels.
PrimGraph layers() {
  kora_test::ModelBuilder m;
  m.input("x", {4, 8});
  std::string h = "x";
  for (int l = 0; l < 6; ++l) {
    const std::string n = std::to_string(l);
    std::vector<float> w(64), b(8);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7 + l) % 11) / 11 - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(l) - 0.2f;
    m.init_f32("w" + n, {8, 8}, w).init_f32("b" + n, {8}, b);
    m.node("MatMul", {h, "w" + n}, {"m" + n}, {}, "matmul" + n);
    m.node("Add", {"m" + n, "b" + n}, {"a" + n}, {}, "add" + n);
    m.node("Relu", {"a" + n}, {"r" + n}, {}, "relu" + n);
    h = "r" + n;
  }
  m.output(h);
  return fission(kora_test::import_model(m));
}

TEST(UniqueCandidates, FirstOfEachSignatureOverTheSegmentsOrchestrateSees) {
  const PrimGraph g = layers();
  const PartitionOptions partition = sizes(3, 4);
  const CandidateOptions options;
  ModelCandidates model = unique_candidates(g, partition, options);

  // The segments: as orchestrate() enumerates them.
  const KernelDag dag = kernel_dag_of(g);
  const std::vector<Segment> segments = partition_dag(dag, partition);
  ASSERT_GT(segments.size(), 2u);
  ASSERT_EQ(model.segments.size(), segments.size());
  size_t total = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const SegmentCandidates expected = segment_candidates(g, dag, segments[s], options);
    EXPECT_EQ(model.segments[s].sub.prim, expected.sub.prim);
    ASSERT_EQ(model.segments[s].candidates.size(), expected.candidates.size());
    for (size_t k = 0; k < expected.candidates.size(); ++k) {
      EXPECT_EQ(model.segments[s].candidates[k].members, expected.candidates[k].members);
      EXPECT_EQ(model.segments[s].candidates[k].signature, expected.candidates[k].signature);
    }
    total += expected.candidates.size();
  }

  // The unique candidates: the first of each signature, in segment then candidate order.
  std::vector<std::pair<int, int>> firsts;  // (segment, candidate index)
  std::set<uint64_t> seen;
  for (size_t s = 0; s < model.segments.size(); ++s)
    for (size_t k = 0; k < model.segments[s].candidates.size(); ++k)
      if (seen.insert(model.segments[s].candidates[k].signature).second)
        firsts.emplace_back(static_cast<int>(s), static_cast<int>(k));
  EXPECT_LT(firsts.size(), total);  // the layers repeat
  ASSERT_EQ(model.unique.size(), firsts.size());
  for (size_t u = 0; u < firsts.size(); ++u) {
    const auto [s, k] = firsts[u];
    EXPECT_EQ(model.unique[u].segment, s);
    EXPECT_EQ(model.unique[u].sub, &model.segments[s].sub);
    EXPECT_EQ(model.unique[u].candidate, &model.segments[s].candidates[k]);
  }

  // Moved, the pointers still point into the segments.
  const ModelCandidates moved = std::move(model);
  ASSERT_EQ(moved.unique.size(), firsts.size());
  for (size_t u = 0; u < firsts.size(); ++u) {
    const auto [s, k] = firsts[u];
    EXPECT_EQ(moved.unique[u].sub, &moved.segments[s].sub);
    EXPECT_EQ(moved.unique[u].candidate, &moved.segments[s].candidates[k]);
  }
}

TEST(UniqueCandidates, TheCandidateOptionsApply) {
  const PrimGraph g = layers();
  CandidateOptions lone;
  lone.capable = [](const KernelDag&, const std::vector<int>& members) {
    return members.size() == 1;
  };
  // One primitive a kernel: the distinct kernels are the distinct primitives (a MatMul, an
  // Add of the bias, a Relu, whatever fission made of them), far fewer than 6 layers' worth.
  const ModelCandidates model = unique_candidates(g, sizes(3, 4), lone);
  size_t total = 0;
  for (const SegmentCandidates& s : model.segments) {
    total += s.candidates.size();
    for (const Candidate& c : s.candidates) EXPECT_EQ(c.members.size(), 1u);
  }
  EXPECT_EQ(total, g.prims.size());
  EXPECT_LT(model.unique.size(), total);
  std::set<uint64_t> signatures;
  for (const UniqueCandidate& u : model.unique) {
    EXPECT_EQ(u.candidate->members.size(), 1u);
    EXPECT_TRUE(signatures.insert(u.candidate->signature).second);
  }
}

}  // namespace
