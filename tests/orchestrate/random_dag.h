// Random KernelDags for the candidate, orchestration and partition tests (seeded
// std::mt19937, so every failure reproduces): nodes numbered topologically, random kinds
// (mostly elementwise, broadcast, layout and reduce, some linear, occasional opaque),
// random fan-in and fan-out (random_dag: sometimes a hub feeding many later nodes;
// dense_random_dag: more edges, no hub), sinks always required and a few other nodes
// too. Trap DAGs embed a "multi-output cycle trap": k pairs {x_i, y_i} with edges
// x_i -> y_i and x_i -> y_{i+1 mod k}, so each pair is a connected, convex kernel that
// needs the previous pair's x; the pairs are made very cheap, and a solver that ignores
// schedulability picks them all (for k = 2 this is a->b, c->d, a->d, c->b with the
// kernels {a, d} and {b, c}).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora_test {

struct TestDag {
  kora::KernelDag dag;
  // Member sets (ascending) of the trap kernels, to be made cheap by random_costs; and
  // the trap's nodes (every other candidate touching them is made expensive).
  std::vector<std::vector<int>> attractive;
  std::vector<int> trap_nodes;
};

inline double uniform01(std::mt19937& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

inline int uniform_int(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A random kind: ~40% elementwise, 13% broadcast, 15% layout, 14% reduce, 13% linear,
// 5% opaque (linear and opaque only when allowed).
inline kora::PrimKind random_kind(std::mt19937& rng, bool allow_linear = true,
                                  bool allow_opaque = true) {
  using kora::PrimKind;
  while (true) {
    const int r = uniform_int(rng, 0, 99);
    if (r < 40) return PrimKind::kElementwise;
    if (r < 53) return PrimKind::kBroadcast;
    if (r < 68) return PrimKind::kLayout;
    if (r < 82) return PrimKind::kReduce;
    if (r < 95) {
      if (allow_linear) return PrimKind::kLinear;
    } else if (allow_opaque) {
      return PrimKind::kOpaque;
    }
  }
}

// Random predecessors for node v among [lo, v): 0 to 3 of them, mostly recent nodes.
inline void add_random_preds(std::mt19937& rng, kora::KernelDag& dag, int v, int lo) {
  if (v <= lo) return;
  const double r = uniform01(rng);
  const int fan_in = r < 0.1 ? 0 : r < 0.6 ? 1 : r < 0.9 ? 2 : 3;
  for (int i = 0; i < fan_in; ++i) {
    const int u = uniform01(rng) < 0.6 ? uniform_int(rng, std::max(lo, v - 3), v - 1)
                                       : uniform_int(rng, lo, v - 1);
    dag.add_edge(u, v);  // duplicates are ignored
  }
}

// Sinks required, every other node with probability p.
inline void mark_required(std::mt19937& rng, kora::KernelDag& dag, double p = 0.15) {
  for (int v = 0; v < dag.size(); ++v)
    if (dag.succ[v].empty() || uniform01(rng) < p) dag.required[v] = true;
}

// A random DAG of n nodes.
inline TestDag random_dag(std::mt19937& rng, int n) {
  TestDag t;
  kora::KernelDag& dag = t.dag;
  for (int v = 0; v < n; ++v) dag.add_node(random_kind(rng));
  for (int v = 1; v < n; ++v) add_random_preds(rng, dag, v, 0);
  // Sometimes a hub: one node feeding many later ones (wide fan-out, later fan-in).
  if (n > 3 && uniform01(rng) < 0.3) {
    const int hub = uniform_int(rng, 0, n / 2);
    for (int v = hub + 1; v < n; ++v)
      if (uniform01(rng) < 0.5) dag.add_edge(hub, v);
  }
  mark_required(rng, dag);
  return t;
}

// A random DAG of n nodes with denser edges and no hub (the candidate, orchestration and
// partition tests): kinds 40% elementwise, 10% broadcast, 15% layout, 10% reduce, 20%
// linear, 5% opaque; each node after the first reads one of the three before it (so the
// DAG is mostly connected) and each earlier node with probability 0.12; sinks required
// and every other node with probability 0.1.
inline kora::KernelDag dense_random_dag(std::mt19937& rng, int n) {
  using kora::PrimKind;
  kora::KernelDag dag;
  std::uniform_int_distribution<int> kind(0, 19);
  for (int v = 0; v < n; ++v) {
    const int k = kind(rng);
    dag.add_node(k < 8    ? PrimKind::kElementwise
                 : k < 10 ? PrimKind::kBroadcast
                 : k < 13 ? PrimKind::kLayout
                 : k < 15 ? PrimKind::kReduce
                 : k < 19 ? PrimKind::kLinear
                          : PrimKind::kOpaque);
  }
  std::uniform_real_distribution<double> u(0, 1);
  for (int v = 1; v < n; ++v) {
    dag.add_edge(std::max(0, v - 1 - static_cast<int>(u(rng) * 3)), v);
    for (int p = 0; p < v; ++p)
      if (u(rng) < 0.12) dag.add_edge(p, v);
  }
  for (int v = 0; v < n; ++v)
    if (dag.succ[v].empty() || u(rng) < 0.1) dag.required[v] = true;
  return dag;
}

// `before` random nodes, then a cycle trap of k pairs (2k nodes: x_0..x_{k-1}, then
// y_0..y_{k-1}), then `after` random nodes. Edges only enter the trap from earlier nodes
// and leave it to later ones, so no path leaves a pair and comes back: every pair stays
// convex. Each y_i is required or read by a later node, so the pairs must be produced.
inline TestDag trap_dag(std::mt19937& rng, int before, int k, int after) {
  using kora::PrimKind;
  TestDag t;
  kora::KernelDag& dag = t.dag;
  const int x0 = before, y0 = before + k, end = before + 2 * k, n = end + after;
  for (int v = 0; v < n; ++v) {
    const bool in_trap = v >= x0 && v < end;
    dag.add_node(in_trap ? random_kind(rng, false, false) : random_kind(rng));
  }
  for (int v = 1; v < before; ++v) add_random_preds(rng, dag, v, 0);
  for (int i = 0; i < k; ++i) {
    dag.add_edge(x0 + i, y0 + i);
    dag.add_edge(x0 + i, y0 + (i + 1) % k);
    if (before > 0 && uniform01(rng) < 0.7) dag.add_edge(uniform_int(rng, 0, before - 1), x0 + i);
    if (before > 0 && uniform01(rng) < 0.2) dag.add_edge(uniform_int(rng, 0, before - 1), y0 + i);
  }
  for (int v = end; v < n; ++v) {
    add_random_preds(rng, dag, v, 0);
    if (uniform01(rng) < 0.5) dag.add_edge(uniform_int(rng, x0, end - 1), v);
  }
  mark_required(rng, dag);
  for (int i = 0; i < k; ++i) {
    const int y = y0 + i;
    if (dag.succ[y].empty() || uniform01(rng) < 0.5) dag.required[y] = true;
    t.attractive.push_back({x0 + i, y});
  }
  for (int v = x0; v < end; ++v) t.trap_nodes.push_back(v);
  return t;
}

// Integer costs (exact in double): with probability 1/2 independent in 1..100, else a
// fused-kernel model (a launch overhead plus the members' weights, discounted by a random
// factor, so fusion and recomputation pay). Trap kernels cost 1; every other candidate
// touching a trap node costs 30..100.
inline std::vector<double> random_costs(std::mt19937& rng, const TestDag& t,
                                        const std::vector<kora::Candidate>& candidates) {
  const int n = t.dag.size();
  const bool independent = uniform01(rng) < 0.5;
  std::vector<int> weight(n);
  for (int& w : weight) w = uniform_int(rng, 1, 20);
  std::vector<char> trap(n, 0);
  for (int v : t.trap_nodes) trap[v] = 1;
  std::vector<double> cost(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    const std::vector<int>& m = candidates[k].members;
    if (independent) {
      cost[k] = uniform_int(rng, 1, 100);
    } else {
      int sum = 0;
      for (int v : m) sum += weight[v];
      cost[k] = 5 + static_cast<int>(sum * (0.4 + 0.6 * uniform01(rng)));
    }
    if (std::find(t.attractive.begin(), t.attractive.end(), m) != t.attractive.end())
      cost[k] = 1;
    else if (std::any_of(m.begin(), m.end(), [&](int v) { return trap[v] != 0; }))
      cost[k] = uniform_int(rng, 30, 100);
  }
  return cost;
}

// Integer costs shaped like the roofline model's: a launch overhead, plus per value a
// kernel reads from outside or writes, that value's size (1..20, fixed per node), plus a
// small compute term per member. Structure decides the cost, so many candidates are
// dominated (another writes all they write, reads no more and costs no more).
inline std::vector<double> io_costs(std::mt19937& rng, const kora::KernelDag& dag,
                                    const std::vector<kora::Candidate>& candidates) {
  std::vector<int> size(dag.size()), work(dag.size());
  for (int& s : size) s = uniform_int(rng, 1, 20);
  for (int& w : work) w = uniform_int(rng, 0, 3);
  std::vector<double> cost;
  for (const kora::Candidate& c : candidates) {
    int total = 10;
    for (int u : c.inputs) total += size[u];
    for (int v : c.outputs) total += size[v];
    for (int v : c.members) total += work[v];
    cost.push_back(total);
  }
  return cost;
}

}  // namespace kora_test
