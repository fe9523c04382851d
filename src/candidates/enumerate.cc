// Candidate enumeration: a KernelDag in, its candidate kernels out (connected, convex
// node sets within the rules of include/kora/candidates.h, with outputs and inputs).
//
// Connected sets are grown from each seed node s, adding only nodes numbered above s,
// so each set is found exactly once, from its smallest node (the ESU scheme: a set
// grows by one node of its extension list; a new node adds to the list its neighbours
// above s that are not already members or neighbours of members). Growth is iterated
// by size (all sets of 1 node, then 2, ...), so when a seed reaches its bound
// (max_sets_per_seed connected sets examined) the smaller sets around it are complete
// and only larger ones are missed. Each connected set is then tested for convexity
// with ancestor/descendant bitsets. A found set becomes a Candidate by make_candidate
// (candidate.cc).
//
// The bound makes the work linear in the graph size (per seed at most max_size rounds,
// each over at most max_sets_per_seed sets: 16 x 4000 by default) instead of exponential
// in its width. What it can miss: the larger sets around a seed in a very wide region (a
// node with 60 elementwise consumers: every subset of them is connected). The smaller
// sets there, and every set elsewhere, are complete. CandidateStats::seeds_capped counts
// the seeds that hit the bound, and kora orchestrate reports it. An opaque seed is its
// own candidate only; a linear primitive joins a set only when the set holds no other.
#include <algorithm>
#include <cstdint>
#include <iterator>

#include "candidates/reach.h"
#include "kora/candidates.h"
#include "kora/error.h"

namespace kora {
namespace {
using namespace candidates_internal;

class Enumerator {
 public:
  Enumerator(const KernelDag& dag, const CandidateOptions& options, CandidateStats& stats)
      : dag_(dag),
        options_(options),
        stats_(stats),
        reach_(reachability(dag)),
        state_(dag.size(), 0) {}

  void run(std::vector<Candidate>& out) {
    out_ = &out;
    for (int s = 0; s < dag_.size(); ++s) {
      seed_ = s;
      examined_ = 0;
      capped_ = false;
      emit({s});
      if (dag_.kind[s] == PrimKind::kOpaque) continue;
      for (target_ = 2; target_ <= options_.max_size && !capped_; ++target_) {
        found_at_target_ = false;
        std::vector<int> members{s}, ext;
        mark_member(s, +1);
        for (int u : neighbours(s))
          if (admissible(u)) ext.push_back(u);
        for (int u : ext) ++state_[u];
        extend(members, ext, dag_.kind[s] == PrimKind::kLinear ? 1 : 0);
        for (int u : ext) --state_[u];
        mark_member(s, -1);
        if (!found_at_target_) break;  // no connected set of this size: none larger
      }
      if (capped_) ++stats_.seeds_capped;
    }
  }

 private:
  // state_[v]: > 0 when v is a member or in the current extension/neighbourhood.
  void mark_member(int v, int delta) { state_[v] += delta; }

  std::vector<int> neighbours(int v) const {
    std::vector<int> n = dag_.pred[v];
    n.insert(n.end(), dag_.succ[v].begin(), dag_.succ[v].end());
    return n;
  }

  bool admissible(int u) const {
    return u > seed_ && state_[u] == 0 && dag_.kind[u] != PrimKind::kOpaque;
  }

  void extend(std::vector<int>& members, std::vector<int> ext, int linear) {
    if (capped_) return;
    if (static_cast<int>(members.size()) == target_) {
      found_at_target_ = true;
      emit(members);
      return;
    }
    while (!ext.empty() && !capped_) {
      const int w = ext.back();
      ext.pop_back();
      const int w_linear = dag_.kind[w] == PrimKind::kLinear ? 1 : 0;
      if (linear + w_linear > 1) continue;
      // Exclusive neighbours of w: above the seed, not members, not already listed.
      std::vector<int> added;
      for (int u : neighbours(w))
        if (admissible(u) && std::find(added.begin(), added.end(), u) == added.end())
          added.push_back(u);
      std::vector<int> next = ext;
      next.insert(next.end(), added.begin(), added.end());
      for (int u : added) ++state_[u];
      members.push_back(w);
      extend(members, next, linear + w_linear);
      members.pop_back();
      for (int u : added) --state_[u];
    }
  }

  void emit(std::vector<int> members) {
    ++stats_.connected_sets;
    if (++examined_ >= options_.max_sets_per_seed) capped_ = true;
    std::sort(members.begin(), members.end());
    if (members.size() > 1) {
      if (!convex_with(reach_, members)) return;
      if (options_.capable && !options_.capable(dag_, members)) return;
    }
    ++stats_.convex;
    out_->push_back(make_candidate(dag_, std::move(members)));
  }

  const KernelDag& dag_;
  const CandidateOptions& options_;
  CandidateStats& stats_;
  Reach reach_;
  std::vector<int> state_;
  std::vector<Candidate>* out_ = nullptr;
  int seed_ = 0, target_ = 0;
  int64_t examined_ = 0;
  bool capped_ = false, found_at_target_ = false;
};

}  // namespace

bool is_convex(const KernelDag& dag, const std::vector<int>& members) {
  return convex_with(reachability(dag), members);
}

std::vector<Candidate> enumerate_candidates(const KernelDag& dag, const CandidateOptions& options,
                                            CandidateStats* stats) {
  if (options.max_size < 1) throw Error("candidate size bound must be at least 1");
  CandidateStats local;
  std::vector<Candidate> out;
  CandidateStats& counted = stats ? *stats : local;
  Enumerator(dag, options, counted).run(out);
  std::vector<Candidate> pairs = horizontal_candidates(dag, out, options);
  counted.horizontal = static_cast<int64_t>(pairs.size());
  out.insert(out.end(), std::make_move_iterator(pairs.begin()),
             std::make_move_iterator(pairs.end()));
  return out;
}

}  // namespace kora
