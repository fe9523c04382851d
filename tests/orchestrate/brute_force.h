// Independent references for the candidate and orchestration tests: small problems in,
// what an exhaustive search says out. Nothing here calls the code under test except
// layout_brute_force, which asks kora::schedule() whether a kernel set runs (schedule()
// is checked on its own in solver_test.cc).
//   connected, convex_brute  a node set's connectivity and convexity from their
//                            definitions (reachability sets, no bitsets);
//   ExactSearch              the cheapest set of candidates producing every required node
//                            and every input of a chosen kernel, optionally also able to
//                            run in some order (schedulable), by branch and bound;
//   runs_in_order            whether kernels in a given order each find their inputs
//                            produced and produce every required node;
//   layout_brute_force       the cheapest plan with blocked layouts (LayoutProblem), over
//                            every kernel set and every choice of blocked nodes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "kora/candidates.h"
#include "kora/error.h"
#include "kora/kernel_dag.h"
#include "kora/orchestrate.h"

namespace kora_test {

// Whether the nodes `s` (not empty) are connected through edges among them, either way.
inline bool connected(const kora::KernelDag& dag, const std::vector<int>& s) {
  std::set<int> in(s.begin(), s.end()), seen{s[0]};
  std::vector<int> stack{s[0]};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    for (const auto* list : {&dag.succ[v], &dag.pred[v]})
      for (int w : *list)
        if (in.count(w) && seen.insert(w).second) stack.push_back(w);
  }
  return seen.size() == s.size();
}

// Whether `s` is convex: no node outside s is reachable from s and reaches s.
inline bool convex_brute(const kora::KernelDag& dag, const std::vector<int>& s) {
  const int n = dag.size();
  std::vector<std::set<int>> reach(n);
  for (int v = n - 1; v >= 0; --v)
    for (int w : dag.succ[v]) reach[v].insert(w), reach[v].insert(reach[w].begin(), reach[w].end());
  std::set<int> in(s.begin(), s.end());
  for (int x = 0; x < n; ++x) {
    if (in.count(x)) continue;
    bool from = false, to = false;
    for (int v : s) from |= reach[v].count(x) > 0, to |= reach[x].count(v) > 0;
    if (from && to) return false;
  }
  return true;
}

// Branch and bound over subsets of candidates. A node of the search is a chosen set;
// it branches on an unmet requirement (a required node, or an input of a chosen kernel,
// that no chosen kernel outputs) over every candidate outputting it; when all are met
// but the chosen kernels cannot all run (simulated: run any kernel whose inputs earlier
// kernels produced), over every candidate not chosen that outputs an input a stuck
// kernel waits for: a schedulable superset runs some stuck kernel first, and that
// kernel's missing input must come from a kernel not chosen yet. Branch i also forbids
// the options before it, so each subset is reached once. With `schedulable` false the
// search solves the relaxation without the ordering requirement. solve() returns the
// optimum (above the total cost of all candidates when nothing is feasible).
class ExactSearch {
 public:
  static constexpr double kTolerance = 1e-6;

  ExactSearch(const kora::KernelDag& dag, const std::vector<kora::Candidate>& c,
              const std::vector<double>& cost, bool schedulable)
      : dag_(dag),
        c_(c),
        cost_(cost),
        schedulable_(schedulable),
        producers_(dag.size()),
        chosen_(c.size(), 0),
        forbidden_(c.size(), 0) {
    for (size_t k = 0; k < c.size(); ++k)
      for (int v : c[k].outputs) producers_[v].push_back(static_cast<int>(k));
    for (std::vector<int>& p : producers_)
      std::stable_sort(p.begin(), p.end(), [&](int a, int b) { return cost[a] < cost[b]; });
    // Any plan is a subset of the candidates: start just above their total cost.
    best_ = 1;
    for (double k_cost : cost) best_ += k_cost;
  }

  double solve() {
    search(0);
    return best_;
  }
  const std::vector<int>& best_set() const { return best_set_; }
  long visited() const { return visited_; }

 private:
  bool allowed(int k) const { return !chosen_[k] && !forbidden_[k]; }

  void search(double spent) {
    if (spent >= best_ - kTolerance) return;
    ++visited_;
    const int n = dag_.size();
    std::vector<char> produced(n, 0);
    for (int k : chosen_list_)
      for (int v : c_[k].outputs) produced[v] = 1;

    // Unmet requirements; branch on the one with the fewest options. Lower bound: each
    // unmet node needs one of its allowed producers.
    int pick = -1;
    size_t pick_options = std::numeric_limits<size_t>::max();
    double bound = spent;
    std::vector<char> seen(n, 0);
    auto consider = [&](int u) {
      if (produced[u] || seen[u]) return true;
      seen[u] = 1;
      size_t options = 0;
      double cheapest = std::numeric_limits<double>::infinity();
      for (int k : producers_[u])
        if (allowed(k)) ++options, cheapest = std::min(cheapest, cost_[k]);
      if (options == 0) return false;
      bound = std::max(bound, spent + cheapest);
      if (options < pick_options) pick = u, pick_options = options;
      return true;
    };
    for (int v = 0; v < n; ++v)
      if (dag_.required[v] && !consider(v)) return;
    for (int k : chosen_list_)
      for (int u : c_[k].inputs)
        if (!consider(u)) return;
    if (bound >= best_ - kTolerance) return;
    if (pick >= 0) {
      std::vector<int> options;
      for (int k : producers_[pick])
        if (allowed(k)) options.push_back(k);
      branch(options, spent);
      return;
    }
    if (!schedulable_) return record(spent);

    std::vector<char> available(n, 0), ran(c_.size(), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int k : chosen_list_) {
        if (ran[k]) continue;
        const std::vector<int>& in = c_[k].inputs;
        if (!std::all_of(in.begin(), in.end(), [&](int u) { return available[u] != 0; })) continue;
        ran[k] = 1;
        for (int v : c_[k].outputs) available[v] = 1;
        progress = true;
      }
    }
    std::set<int> blocking;
    for (int k : chosen_list_)
      if (!ran[k])
        for (int u : c_[k].inputs)
          if (!available[u])
            for (int j : producers_[u])
              if (allowed(j)) blocking.insert(j);
    if (std::all_of(chosen_list_.begin(), chosen_list_.end(), [&](int k) { return ran[k]; }))
      return record(spent);
    std::vector<int> options(blocking.begin(), blocking.end());
    std::stable_sort(options.begin(), options.end(),
                     [&](int a, int b) { return cost_[a] < cost_[b]; });
    branch(options, spent);
  }

  void branch(const std::vector<int>& options, double spent) {
    std::vector<int> forbade;
    for (int k : options) {
      chosen_[k] = 1;
      chosen_list_.push_back(k);
      search(spent + cost_[k]);
      chosen_list_.pop_back();
      chosen_[k] = 0;
      forbidden_[k] = 1;
      forbade.push_back(k);
    }
    for (int k : forbade) forbidden_[k] = 0;
  }

  void record(double spent) {
    best_ = spent;
    best_set_ = chosen_list_;
  }

  const kora::KernelDag& dag_;
  const std::vector<kora::Candidate>& c_;
  const std::vector<double>& cost_;
  const bool schedulable_;
  std::vector<std::vector<int>> producers_;
  std::vector<char> chosen_, forbidden_;
  std::vector<int> chosen_list_, best_set_;
  double best_ = 0;
  long visited_ = 0;
};

// Whether `order` runs: each kernel's inputs produced by kernels before it, and every
// required node produced.
inline bool runs_in_order(const kora::KernelDag& dag, const std::vector<kora::Candidate>& c,
                          const std::vector<int>& order) {
  std::vector<char> available(dag.size(), 0);
  for (int k : order) {
    for (int u : c[k].inputs)
      if (!available[u]) return false;
    for (int v : c[k].outputs) available[v] = 1;
  }
  for (int v = 0; v < dag.size(); ++v)
    if (dag.required[v] && !available[v]) return false;
  return true;
}

// The cheapest plan with layouts by brute force: every kernel set that can run, every
// choice of blocked nodes among the nodes a native side may take (not required) that the
// set writes, each chosen kernel then native where it must be (it touches a blocked side)
// or where that is cheaper, agnostic kernels only with all their nodes of that layout
// blocked alike (kernels on views: all their viewed nodes; bfloat16 views: each node on its
// own), others with none; a node's
// layout as LayoutProblem::layout_of gives it where a side takes it so. Savings are only on read
// sides in the layout tests, so blocking a node nobody reads gains nothing (the program and this
// search agree on such nodes only up to that). Exponential in the candidates: up to about 10.
inline double layout_brute_force(const kora::KernelDag& dag, const std::vector<kora::Candidate>& c,
                                 const std::vector<double>& cost,
                                 const kora::LayoutProblem& layouts) {
  std::vector<int> layout_of(dag.size(), -1);
  for (const kora::NativeOption& o : layouts.native)
    if (o.blocked_ms >= 0)
      for (size_t i = 0; i < o.nodes.size(); ++i)
        if (!dag.required[o.nodes[i]] &&
            (layouts.layout_of.empty() ? layout_of[o.nodes[i]] < 0
                                       : layouts.layout_of[o.nodes[i]] == o.layouts[i]))
          layout_of[o.nodes[i]] = o.layouts[i];
  auto viewed = [&](int k, int u) {
    return !layouts.views.empty() &&
           std::find(layouts.views[k].begin(), layouts.views[k].end(), u) != layouts.views[k].end();
  };
  auto bfloat16_viewed = [&](int k, int u) {
    return !layouts.bfloat16_views.empty() &&
           std::find(layouts.bfloat16_views[k].begin(), layouts.bfloat16_views[k].end(), u) !=
               layouts.bfloat16_views[k].end();
  };
  double best = INFINITY;
  for (uint32_t set = 1; set < (1u << c.size()); ++set) {
    std::vector<int> chosen;
    for (size_t k = 0; k < c.size(); ++k)
      if (set >> k & 1) chosen.push_back(static_cast<int>(k));
    try {
      kora::schedule(dag, c, chosen);
    } catch (const kora::Error&) {
      continue;
    }
    std::vector<int> candidates_nodes;  // blockable nodes the set writes
    for (int k : chosen)
      for (int v : c[k].outputs)
        if (layout_of[v] >= 0 && std::find(candidates_nodes.begin(), candidates_nodes.end(), v) ==
                                     candidates_nodes.end())
          candidates_nodes.push_back(v);
    for (uint32_t bits = 0; bits < (1u << candidates_nodes.size()); ++bits) {
      std::vector<char> blocked(dag.size(), 0);
      for (size_t i = 0; i < candidates_nodes.size(); ++i)
        blocked[candidates_nodes[i]] = bits >> i & 1;
      double total = 0;
      bool ok = true;
      for (int k : chosen) {
        std::vector<int> touched = c[k].inputs;
        touched.insert(touched.end(), c[k].outputs.begin(), c[k].outputs.end());
        const kora::NativeOption& o = layouts.native[k];
        bool needs_native = false, plain_only = false;
        double saved = 0;
        for (int u : touched) {
          if (!blocked[u]) continue;
          size_t side = o.nodes.size();
          if (o.blocked_ms >= 0)
            for (size_t i = 0; i < o.nodes.size(); ++i)
              if (o.nodes[i] == u && o.layouts[i] == layout_of[u]) side = std::min(side, i);
          if (side < o.nodes.size()) {
            needs_native = true;
            saved += o.saved_ms[side];
          } else if (bfloat16_viewed(k, u)) {
            continue;
          } else if (layouts.agnostic[k]) {
            for (int v : touched)
              if (v != u && (layout_of[v] != layout_of[u] || !blocked[v])) plain_only = true;
          } else if (viewed(k, u)) {
            for (int v : layouts.views[k])
              if (v != u && (layout_of[v] != layout_of[u] || !blocked[v])) plain_only = true;
          } else {
            plain_only = true;
          }
        }
        if (plain_only || (needs_native && layouts.agnostic[k])) {
          ok = false;
          break;
        }
        double k_cost = cost[k];
        if (o.blocked_ms >= 0 && (needs_native || o.blocked_ms < cost[k]))
          k_cost = o.blocked_ms - saved;
        total += k_cost;
      }
      if (ok) best = std::min(best, total);
    }
  }
  return best;
}

}  // namespace kora_test
