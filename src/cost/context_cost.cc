// Costs in context for kernels never timed inside a running plan (include/kora/cost.h,
// ProfileDbCost::learn_context): the graph's candidates and the database's times alone and
// in plan in; every kernel with a time alone but none in plan re-costed at what a running
// plan will likely make of it, out.
// A kernel measured alone reads its inputs and weights from memory (rotated through copies
// larger than the last-level cache, src/cpu/profile.cc). Inside a running plan its inputs
// were mostly just written by the kernel before, and a small model's weights stay in the
// cache between runs. So alone is pessimistic for small elementwise kernels (ResNet-50: a
// 1 MB elementwise kernel 0.6x in plan) and for the weights of small models, by ratios
// that depend on the model (and was optimistic for large weights while they were measured
// warm: ResNet-50's 9 MB convolution 1.6x slower in plan). The kernels the check on the
// clock timed in plan give those ratios for this graph. A kernel timed in plan in one variant lends
// its own ratio to its other variants (a oneDNN convolution on plain tensors, natively, or natively
// with its sides reordered: the last runs in a plan as the plain one does, and costed alone it let
// the solver pick it as a cheaper twin of the plain kernel timed in plan); on plain tensors,
// another schedule of a kernel timed in plan keeps its time alone (ProfileDbCost: the check tries
// it next, as a Winograd convolution's ratio says nothing of a direct one's). A kernel not timed
// takes the distance-weighted mean log ratio of the kContextNeighbours nearest of the same kind (by
// weight bytes and other bytes), and a ratio of 1 counts as one more sample kPriorDistance away, so
// that a kernel far from every timed one keeps its time alone.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cost/tensor_bytes.h"
#include "kora/candidates.h"
#include "kora/cost.h"
#include "kora/orchestration.h"

namespace kora {
namespace {

constexpr int kContextNeighbours = 6;
constexpr double kNear = 0.25;          // a sample's weight: 1 / (distance + kNear)
constexpr double kPriorDistance = 2.0;  // where the ratio 1 (the time alone) counts

// What a kernel's cache state in a running plan depends on: its kind, the bytes of
// constants it reads (weights) and of the other tensors it reads and writes.
struct ContextFeatures {
  std::string kind;
  double log_weights = 0, log_other = 0;
};

ContextFeatures context_features(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  double weights = 0, other = 0;
  for (const std::string& t : kernel_reads(graph, dag, c))
    (graph.constant(t) ? weights : other) += tensor_bytes(graph, t);
  for (const std::string& t : kernel_writes(graph, dag, c)) other += tensor_bytes(graph, t);
  return {kernel_work(graph, dag, c).kind, std::log1p(weights), std::log1p(other)};
}

double distance(const ContextFeatures& a, const ContextFeatures& b) {
  return std::abs(a.log_weights - b.log_weights) + std::abs(a.log_other - b.log_other);
}

}  // namespace

void ProfileDbCost::learn_context(const PrimGraph& graph,
                                  const std::vector<UniqueCandidate>& candidates) {
  if (context_learned_) return;  // the ratios scale the costs once
  context_learned_ = true;
  // A kernel's own ratio, where it was timed both ways: on plain tensors (the schedule
  // timed in plan against its own time alone), else natively.
  auto own_ratio = [&](uint64_t sig) -> double {
    for (const auto* ratios : {&in_plan_plain_, &in_plan_native_})
      if (const auto r = ratios->find(sig); r != ratios->end() && r->second > 0) return r->second;
    return 0;
  };
  struct Sample {
    ContextFeatures f;
    double log_ratio;
  };
  std::vector<Sample> samples;
  // Kernels with a variant costed alone (on plain tensors, natively, or natively with its
  // sides reordered): those the ratios apply to.
  std::vector<const UniqueCandidate*> alone;
  for (const UniqueCandidate& u : candidates) {
    const uint64_t sig = u.candidate->signature;
    if (const double r = own_ratio(sig); r > 0)
      samples.push_back({context_features(graph, *u.sub, *u.candidate), std::log(r)});
    if (alone_.count(sig) || alone_native_.count(sig) || blocked_.count(sig)) alone.push_back(&u);
  }
  context_samples_ = static_cast<int64_t>(samples.size());
  if (samples.empty()) return;
  std::vector<std::pair<double, double>> near;  // distance, log ratio
  for (const UniqueCandidate* u : alone) {
    const uint64_t sig = u->candidate->signature;
    double ratio = own_ratio(sig);
    if (ratio == 0) {
      const ContextFeatures f = context_features(graph, *u->sub, *u->candidate);
      near.clear();
      for (const Sample& s : samples)
        if (s.f.kind == f.kind) near.push_back({distance(f, s.f), s.log_ratio});
      if (near.empty()) continue;
      near.push_back({kPriorDistance, 0.0});
      const size_t k = std::min<size_t>(kContextNeighbours, near.size());
      std::partial_sort(near.begin(), near.begin() + static_cast<long>(k), near.end());
      double weights = 0, mean = 0;
      for (size_t i = 0; i < k; ++i) {
        const double w = 1 / (near[i].first + kNear);
        weights += w;
        mean += w * near[i].second;
      }
      ratio = std::exp(mean / weights);
    }
    // Each variant not timed in plan itself: its cost without the overhead between kernels
    // (the time alone, or what the kernel's deferred schedules may give: offer_unexplored)
    // times the ratio. A native kernel with its sides reordered (blocked_) runs in a plan as
    // the plain one does: it takes the same ratio.
    bool adjusted = false;
    auto scale = [&](std::map<uint64_t, double>& costs, const std::map<uint64_t, double>* timed) {
      const auto it = costs.find(sig);
      if (it == costs.end() || (timed && timed->count(sig))) return;
      it->second = std::max(0.0, it->second - overhead_) * ratio + overhead_;
      adjusted = true;
    };
    scale(table_, &in_plan_plain_);
    scale(native_, &in_plan_native_);
    scale(channels_last_, &in_plan_native_);
    scale(blocked_, nullptr);
    context_adjusted_ += adjusted;
  }
}

}  // namespace kora
