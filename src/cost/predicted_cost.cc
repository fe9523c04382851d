// The predicted cost of a kernel not measured yet (include/kora/cost.h, PredictedCost):
// measured kernels of the graph in (learn), a candidate kernel in, the milliseconds it
// will likely measure out. A kernel's measured / lower-bound ratio says how well its kind
// of implementation reaches the machine's peaks; kernels with the same member ops and of
// similar size reach them alike. The estimate: the ratio of the k nearest measured kernels
// with the same ops (weighed by nearness), shrunk toward the ratio of the same heaviest
// kind and implementation (the target's: a library's call or generated code, whose ratios
// differ by 2x on the same matmul; where none is known, the kernel's bound, so that one is
// measured) where few or only far ones are known, lowered by
// `caution` times the spread of those ratios, times the kernel's own bound. The kind's
// typical cost counts as one more kernel at a fixed distance: where few measured kernels
// are nearer, it keeps a kernel from taking the ratio of kernels of other sizes. Ops are told apart
// by side: what the first linear member reads from inside the kernel (a prologue, generated code)
// and the rest (an epilogue a library may fuse).
#include <algorithm>
#include <cmath>
#include <set>

#include "base/text.h"
#include "kora/cost.h"
#include "kora/orchestration.h"

namespace kora {
namespace {

constexpr int kNeighbours = 6;        // nearest measured kernels an estimate averages
constexpr double kShrink = 0.5;       // pseudo-samples of the kind's ratio added to the ops'
constexpr double kNear = 0.25;        // a sample's weight: 1 / (distance + kNear)
constexpr double kSpreadFloor = 0.1;  // least spread of log ratios an estimate is given
constexpr double kPriorDistance = 2;  // how far the typical cost counts as a sample

double distance(const PredictedCost::Features& a, const PredictedCost::Features& b) {
  return std::abs(a.log_bytes - b.log_bytes) + 0.5 * std::abs(a.log_flops - b.log_flops) +
         std::abs(a.log_members - b.log_members);
}

}  // namespace

PredictedCost::PredictedCost(std::unique_ptr<CostModel> bound, std::unique_ptr<CostModel> typical,
                             double caution, ImplementedBy implemented_by)
    : bound_(std::move(bound)),
      typical_(std::move(typical)),
      caution_(caution),
      implemented_by_(std::move(implemented_by)) {}

PredictedCost::Features PredictedCost::features(const PrimGraph& graph, const KernelDag& dag,
                                                const Candidate& c) const {
  const KernelWork w = kernel_work(graph, dag, c);
  // The ops around the first linear member: those it reads from inside the kernel (a
  // prologue: generated code) apart from the rest (an epilogue, which a library may fuse).
  std::set<int> before;
  for (int v : c.members)
    if (dag.kind[v] == PrimKind::kLinear) {
      const std::set<int> inside(c.members.begin(), c.members.end());
      std::vector<int> stack = {v};
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int p : dag.pred[u])
          if (inside.count(p) && before.insert(p).second) stack.push_back(p);
      }
      break;
    }
  std::set<std::string> pre, ops;
  for (int v : c.members) (before.count(v) ? pre : ops).insert(graph.prims[dag.prim[v]].op_label());
  auto joined = [](const std::set<std::string>& labels) {
    std::string s;
    for (const std::string& l : labels) s += (s.empty() ? "" : "+") + l;
    return s;
  };
  Features f;
  f.kind = w.kind;
  f.ops = (pre.empty() ? "" : joined(pre) + " > ") + joined(ops);
  f.log_flops = std::log1p(w.flops);
  f.log_bytes = std::log1p(w.bytes);
  f.log_members = std::log(static_cast<double>(c.members.size()));
  f.bound_ms = bound_->cost_ms(graph, dag, c);
  if (implemented_by_) f.implemented_by = implemented_by_(graph, dag, c);
  return f;
}

void PredictedCost::learn(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                          double measured_ms) {
  Sample s;
  s.f = features(graph, dag, c);
  if (!(measured_ms > 0) || !(s.f.bound_ms > 0)) return;
  s.log_ratio = std::log(measured_ms / s.f.bound_ms);
  samples_.push_back(std::move(s));
}

void PredictedCost::learn(const PrimGraph& graph, const std::vector<UniqueCandidate>& candidates,
                          const std::map<uint64_t, double>& measured) {
  for (const UniqueCandidate& u : candidates) {
    const auto it = measured.find(u.candidate->signature);
    if (it != measured.end()) learn(graph, *u.sub, *u.candidate, it->second);
  }
}

double PredictedCost::cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const Features f = features(graph, dag, c);
  // The distance-weighted mean and spread of the log ratios of the nearest samples that
  // `same` accepts, and how many there were (capped at kNeighbours).
  struct Estimate {
    double n = 0, mean = 0, spread = 0;
    double weight = 0;  // the samples' (not the prior's): 1 for each at distance 0
  };
  // The typical cost as one more sample kPriorDistance away (where it is a ratio), one of
  // the nearest where fewer than kNeighbours samples are nearer: samples far from the kernel
  // (gathers of 100 bytes for a transpose of 1 MB) then count less than what such a kernel
  // typically costs.
  const double typical_ms = typical_->cost_ms(graph, dag, c);
  const bool prior = typical_ms > 0 && f.bound_ms > 0;
  auto nearest = [&](auto same, bool with_prior) {
    struct Near {
      double distance, log_ratio;
      bool sample;
      bool operator<(const Near& o) const { return distance < o.distance; }
    };
    std::vector<Near> near;
    for (const Sample& s : samples_)
      if (same(s.f)) near.push_back({distance(f, s.f), s.log_ratio, true});
    if (!near.empty() && with_prior && prior)
      near.push_back({kPriorDistance, std::log(typical_ms / f.bound_ms), false});
    const size_t k = std::min<size_t>(kNeighbours, near.size());
    std::partial_sort(near.begin(), near.begin() + static_cast<long>(k), near.end());
    Estimate e;
    double weights = 0, squares = 0;
    for (size_t i = 0; i < k; ++i) {
      const double w = 1 / (near[i].distance + kNear);
      e.mean += w * near[i].log_ratio;
      squares += w * near[i].log_ratio * near[i].log_ratio;
      weights += w;
      if (near[i].sample) {
        e.n += 1;
        e.weight += w * kNear;
      }
    }
    if (weights > 0) {
      e.mean /= weights;
      e.spread = std::sqrt(std::max(0.0, squares / weights - e.mean * e.mean));
    }
    return e;
  };
  // The kind's kernels implemented alike; none of them measured, below.
  Estimate kind = nearest(
      [&](const Features& s) { return s.kind == f.kind && s.implemented_by == f.implemented_by; },
      true);
  if (kind.n == 0) {
    const Estimate any = nearest([&](const Features& s) { return s.kind == f.kind; }, true);
    if (any.n == 0) return typical_ms;
    // Kernels of its kind measured, none implemented alike: their ratio says nothing of
    // this implementation's (a library's matmul runs twice as fast as generated code's), so
    // it costs its bound until one is measured: a plan that can use it takes it and
    // measures it, instead of every plan keeping to the other implementation's kernels.
    if (!f.implemented_by.empty() && f.bound_ms > 0) return f.bound_ms;
    kind = any;
  }
  const Estimate ops = nearest(
      [&](const Features& s) {
        return s.kind == f.kind && s.implemented_by == f.implemented_by && s.ops == f.ops;
      },
      false);
  // Few samples of the same ops, or far ones: toward the kind's ratio, and as uncertain as
  // the kind.
  const double log_ratio = (ops.weight * ops.mean + kShrink * kind.mean) / (ops.weight + kShrink);
  const double spread = std::max(ops.n >= 2 ? ops.spread : kind.spread, kSpreadFloor);
  return f.bound_ms * std::exp(log_ratio - caution_ * spread);
}

std::string PredictedCost::describe() const {
  return "predicted costs (" + std::to_string(samples_.size()) + " kernels measured, caution " +
         fixed(caution_, 2) + "; " + bound_->describe() + ")";
}

}  // namespace kora
