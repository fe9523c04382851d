// Orchestration of a whole primitive graph: partition it into segments, enumerate each
// segment's candidate kernels, cost each distinct kernel once (by canonical signature),
// and choose kernels with one strategy (optimal, greedy or unfused). The driver behind
// `kora orchestrate`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/orchestrate.h"
#include "kora/partition.h"

namespace kora {

struct ModelCandidates;

struct OrchestrationOptions {
  std::string strategy = "optimal";  // optimal | greedy | unfused
  CandidateOptions candidates;
  PartitionOptions partition;
  SolveOptions solve;          // time limit per segment
  bool progress = false;       // one line per segment on stderr
  bool progress_line = false;  // one line on stderr, rewritten per segment (terminals)
  // The graph's segments already enumerated with these partition and candidate options
  // (unique_candidates): taken from there instead of enumerated again (measure on demand
  // solves one graph many times). Null: enumerated here.
  const ModelCandidates* enumerated = nullptr;
  // The solution pool (optimal only): besides the optimum, up to pool - 1 next-best plans
  // (OrchestrationResult::next_best). 1: the optimum alone.
  int pool = 1;
};

struct ChosenKernel {
  std::vector<int> prims;    // indices into PrimGraph::prims, ascending
  std::vector<int> outputs;  // the members whose values leave the kernel
  double cost_ms = 0;
  uint64_t signature = 0;
  int segment = 0;
  bool native = false;  // runs its native implementation (blocked layouts, optimal only)
  // A parallel schedule (src/orchestrate/parallel_schedule.cc): kernels of one step run at
  // the same time, each on `threads` threads; steps run in order. -1: no schedule, the
  // kernels one after another on every thread.
  int step = -1;
  int threads = 0;
};

struct OrchestrationResult {
  std::string strategy;
  std::string cost_model;
  std::vector<ChosenKernel> kernels;  // in an order they can run in
  double total_cost_ms = 0;
  double gap_ms = 0;  // proven: the optimum is at least total - gap; 0 = optimal
  bool proven_optimal = false;
  double enumerate_seconds = 0, cost_seconds = 0, solve_seconds = 0;
  int64_t primitives = 0, candidates = 0, unique_signatures = 0, segments = 0;
  int64_t seeds_capped = 0, cycle_cuts = 0;
  // Horizontal pairs (two independent kernels in one launch) among the candidates, and
  // among the chosen kernels.
  int64_t horizontal_pairs = 0, horizontal_chosen = 0;
  int64_t segments_reused = 0;  // segments whose problem equalled an earlier one's
  // Segments over the candidate budget (CandidateOptions::max_per_segment), and the
  // smallest kernel size bound that kept one within it.
  int64_t segments_over_budget = 0;
  int budget_max_size = 0;
  // Segments not proven within PartitionOptions::split_after_seconds, cut in halves.
  int64_t segments_split = 0;
  // Their node ranges: given back as PartitionOptions::hard, a solve of the same graph cuts
  // them at once.
  std::vector<std::pair<int, int>> hard_segments;
  // Optimal with a cost model that knows layouts (CostModel::layout_cost): the solver
  // chose which tensors are stored blocked (tensor -> layout); the emitter follows it.
  bool layouts_decided = false;
  std::map<std::string, std::string> layouts;
  // After the segments, one program over the whole graph with the chosen kernels fixed
  // decides where tensors are stored (src/orchestrate/whole_graph_layouts.h): what it saved
  // of the predicted cost, and the tensors crossing segment cuts it stores blocked.
  double whole_graph_layouts_saved_ms = 0;
  int64_t cut_tensors_blocked = 0;
  // OrchestrationOptions::pool > 1: the next-best distinct plans, cheapest first, each the
  // optimum with one segment's plan replaced by that segment's runner-up (the best plan of
  // it with another set of kernels, SolveOptions::runner_up). The second best plan of the
  // graph is the first of them: segments are independent, so it differs in one segment.
  std::vector<OrchestrationResult> next_best;
};

// One segment's sub-DAG and its candidates, signatures computed: what orchestrate() solves
// over and profile_model() measures.
struct SegmentCandidates {
  KernelDag sub;
  std::vector<Candidate> candidates;
  CandidateStats stats;
};
SegmentCandidates segment_candidates(const PrimGraph& graph, const KernelDag& dag,
                                     const Segment& segment, const CandidateOptions& options);

// One distinct kernel: the first candidate of its signature, with its segment's sub-DAG.
struct UniqueCandidate {
  int segment = 0;                       // index into ModelCandidates::segments
  const KernelDag* sub = nullptr;        // &segments[segment].sub
  const Candidate* candidate = nullptr;  // in segments[segment].candidates
};
// The candidates orchestrate() will see for a whole graph (the same partition and
// candidate options): every segment's, and the distinct kernels among them, which is what
// a profiler measures. The pointers point into `segments`: moving keeps them, copying
// would not (so there is no copy).
struct ModelCandidates {
  std::vector<SegmentCandidates> segments;
  std::vector<UniqueCandidate> unique;  // by segment, then by candidate: one per signature
  ModelCandidates() = default;
  ModelCandidates(ModelCandidates&&) = default;
  ModelCandidates& operator=(ModelCandidates&&) = default;
  ModelCandidates(const ModelCandidates&) = delete;
  ModelCandidates& operator=(const ModelCandidates&) = delete;
};
ModelCandidates unique_candidates(const PrimGraph& graph, const PartitionOptions& partition,
                                  const CandidateOptions& candidates);

OrchestrationResult orchestrate(const PrimGraph& graph, CostModel& costs,
                                const OrchestrationOptions& options = {});

// Text report (one line per kernel, then totals) and JSON.
std::string format_orchestration(const PrimGraph& graph, const OrchestrationResult& result);
std::string orchestration_json(const PrimGraph& graph, const OrchestrationResult& result);

}  // namespace kora
