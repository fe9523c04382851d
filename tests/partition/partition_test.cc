// Automatic partitioning (include/kora/partition.h) against its definition and the
// orchestrator: on random DAGs with random size bounds, the segments cover the nodes in
// order, each within the bounds (the last may be short), each segment's live_in counts
// the values produced before it and read in or after it, and each cut sits where the
// fewest values cross among the positions the bounds allow (the latest on ties), all
// counted edge by edge; bad bounds are a kora::Error. On blocks of random DAGs joined
// through opaque nodes, cutting right after each opaque node loses no fusion: the
// segments' optima add up to the whole graph's (solve_optimal).
#include "kora/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/orchestrate.h"
#include "orchestrate/random_dag.h"

namespace {

using kora::Candidate;
using kora::KernelDag;
using kora::PrimKind;

kora::PartitionOptions sizes(int min_size, int max_size) {
  kora::PartitionOptions o;
  o.min_size = min_size;
  o.max_size = max_size;
  return o;
}

// Values crossing position i: nodes before i with a successor at or after i.
int crossing(const KernelDag& dag, int i) {
  int live = 0;
  for (int v = 0; v < i; ++v) {
    bool read_later = false;
    for (int s : dag.succ[v]) read_later |= s >= i;
    live += read_later;
  }
  return live;
}

TEST(Partition, CutsWhereFewestValuesCrossWithinTheBounds) {
  std::mt19937 rng(17);
  int cuts = 0;
  for (int t = 0; t < 200; ++t) {
    const KernelDag dag = t % 2 ? kora_test::dense_random_dag(rng, 1 + t % 60)
                                : kora_test::random_dag(rng, 1 + t % 60).dag;
    kora::PartitionOptions options;
    options.min_size = 1 + static_cast<int>(rng() % 8);
    options.max_size = options.min_size + static_cast<int>(rng() % 12);
    const std::vector<kora::Segment> segments = kora::partition_dag(dag, options);
    ASSERT_FALSE(segments.empty()) << "DAG " << t;
    EXPECT_EQ(segments.front().begin, 0) << "DAG " << t;
    EXPECT_EQ(segments.back().end, dag.size()) << "DAG " << t;
    for (size_t s = 0; s < segments.size(); ++s) {
      const kora::Segment& seg = segments[s];
      if (s > 0) {
        EXPECT_EQ(seg.begin, segments[s - 1].end) << "DAG " << t;
      }
      EXPECT_EQ(seg.live_in, crossing(dag, seg.begin)) << "DAG " << t << " segment " << s;
      EXPECT_LE(seg.end - seg.begin, options.max_size) << "DAG " << t << " segment " << s;
      if (s + 1 == segments.size()) continue;
      // A cut: the segment is at least min_size long, and no allowed position has fewer
      // values crossing; none after it as few.
      ++cuts;
      EXPECT_GE(seg.end - seg.begin, options.min_size) << "DAG " << t << " segment " << s;
      const int lo = seg.begin + options.min_size;
      const int hi = std::min(dag.size() - 1, seg.begin + options.max_size);
      for (int i = lo; i <= hi; ++i) {
        if (i < seg.end) {
          EXPECT_GE(crossing(dag, i), crossing(dag, seg.end)) << "DAG " << t << " at " << i;
        } else if (i > seg.end) {
          EXPECT_GT(crossing(dag, i), crossing(dag, seg.end)) << "DAG " << t << " at " << i;
        }
      }
    }
  }
  EXPECT_GT(cuts, 100) << "the bounds hardly ever cut";
  KernelDag dag;
  dag.add_node(PrimKind::kElementwise, true);
  EXPECT_THROW(kora::partition_dag(dag, sizes(0, 4)), kora::Error);
  EXPECT_THROW(kora::partition_dag(dag, sizes(5, 4)), kora::Error);
}

TEST(Partition, SegmentsCoverInOrderAndOpaqueCutsLoseNothing) {
  // Blocks of random DAGs joined through an opaque node each: cutting right after the
  // opaque node (a kernel of its own) cannot lose a fusion.
  std::mt19937 rng(5);
  for (int t = 0; t < 20; ++t) {
    KernelDag dag;
    int prev = -1;
    for (int b = 0; b < 3; ++b) {
      const KernelDag block = kora_test::dense_random_dag(rng, 6);
      const int base = dag.size();
      for (int v = 0; v < block.size(); ++v)
        dag.add_node(block.kind[v] == PrimKind::kOpaque ? PrimKind::kElementwise : block.kind[v]);
      for (int v = 0; v < block.size(); ++v)
        for (int s : block.succ[v]) dag.add_edge(base + v, base + s);
      if (prev >= 0) dag.add_edge(prev, base);
      dag.add_node(PrimKind::kOpaque);
      prev = dag.size() - 1;
      for (int v = base; v < prev; ++v)
        if (dag.succ[v].empty()) dag.add_edge(v, prev);
    }
    dag.required[prev] = true;
    const kora::PartitionOptions po = sizes(7, 7);
    const auto segments = kora::partition_dag(dag, po);
    ASSERT_EQ(segments.front().begin, 0);
    for (size_t s = 1; s < segments.size(); ++s) EXPECT_EQ(segments[s].begin, segments[s - 1].end);
    ASSERT_EQ(segments.back().end, dag.size());
    for (const auto& s : segments) EXPECT_LE(s.live_in, 1) << "cut at " << s.begin;

    kora::CandidateOptions co;
    co.max_size = 4;
    // A kernel's cost depends on its members in the whole DAG (as tensor sizes would).
    auto cost_of = [&](std::vector<int> global) {
      const Candidate k = kora::make_candidate(dag, std::move(global));
      return 5.0 + k.inputs.size() + k.outputs.size() + 0.5 * k.members.size();
    };
    const auto whole_c = kora::enumerate_candidates(dag, co);
    std::vector<double> whole_cost;
    for (const auto& k : whole_c) whole_cost.push_back(cost_of(k.members));
    const double whole = kora::solve_optimal(dag, whole_c, whole_cost).cost;
    double parts = 0;
    for (const auto& s : segments) {
      const KernelDag sub = kora::sub_dag(dag, s.begin, s.end);
      const auto c = kora::enumerate_candidates(sub, co);
      std::vector<double> cost;
      for (const auto& k : c) {
        std::vector<int> global;
        for (int v : k.members) global.push_back(sub.prim[v]);
        cost.push_back(cost_of(global));
      }
      parts += kora::solve_optimal(sub, c, cost).cost;
    }
    EXPECT_NEAR(parts, whole, 1e-6) << "DAG " << t;
  }
}

}  // namespace

TEST(Partition, KnownHardSegmentsAreCutInHalvesAtOnceAndTheirHardHalvesAgain) {
  std::mt19937 rng(11);
  const KernelDag dag = kora_test::dense_random_dag(rng, 150);
  kora::PartitionOptions o = sizes(8, 60);
  const std::vector<kora::Segment> plain = kora::partition_dag(dag, o);
  ASSERT_GE(plain.size(), 2u);
  // The largest segment is hard: it comes out as split_in_halves makes it, the rest as before.
  size_t i = 0;
  for (size_t s = 1; s < plain.size(); ++s)
    if (plain[s].end - plain[s].begin > plain[i].end - plain[i].begin) i = s;
  const kora::Segment hard = plain[i];
  ASSERT_GE(hard.end - hard.begin, 4 * o.min_size);
  const std::vector<kora::Segment> halves = kora::split_in_halves(dag, hard, o);
  ASSERT_GE(halves.size(), 2u);
  o.hard = {{hard.begin, hard.end}};
  auto with = [&](const std::vector<kora::Segment>& pieces) {
    std::vector<kora::Segment> r(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(i));
    r.insert(r.end(), pieces.begin(), pieces.end());
    r.insert(r.end(), plain.begin() + static_cast<std::ptrdiff_t>(i) + 1, plain.end());
    return r;
  };
  auto ranges = [](const std::vector<kora::Segment>& s) {
    std::vector<std::pair<int, int>> r;
    for (const kora::Segment& x : s) r.emplace_back(x.begin, x.end);
    return r;
  };
  const std::vector<kora::Segment> cut = kora::partition_dag(dag, o);
  EXPECT_EQ(ranges(cut), ranges(with(halves)));
  for (const kora::Segment& s : cut) EXPECT_EQ(s.live_in, crossing(dag, s.begin));
  // The largest half hard too: it is cut again, in place.
  size_t h = 0;
  for (size_t s = 1; s < halves.size(); ++s)
    if (halves[s].end - halves[s].begin > halves[h].end - halves[h].begin) h = s;
  ASSERT_GE(halves[h].end - halves[h].begin, 2 * o.min_size);
  o.hard.emplace_back(halves[h].begin, halves[h].end);
  const std::vector<kora::Segment> quarters = kora::split_in_halves(dag, halves[h], o);
  ASSERT_GE(quarters.size(), 2u);
  std::vector<kora::Segment> again(halves.begin(), halves.begin() + static_cast<std::ptrdiff_t>(h));
  again.insert(again.end(), quarters.begin(), quarters.end());
  again.insert(again.end(), halves.begin() + static_cast<std::ptrdiff_t>(h) + 1, halves.end());
  EXPECT_EQ(ranges(kora::partition_dag(dag, o)), ranges(with(again)));
  // A range that is no segment of the partition changes nothing.
  o.hard = {{hard.begin, hard.end - 1}};
  EXPECT_EQ(ranges(kora::partition_dag(dag, o)), ranges(plain));
}
