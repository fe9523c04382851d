// The orchestration problem as a binary linear program, solved with CBC to a proven
// optimum (DESIGN.md, "The orchestration problem"). In: the DAG, candidates, a cost per
// candidate. Out: the cheapest set of kernels that produces every required node and
// every input of every chosen kernel, in an order it can run in.
//
//   minimize   sum_k c_k x_k,  x_k binary
//   subject to sum_{k outputs v} x_k >= 1           for each required node v
//              sum_{k' outputs u} x_k' - x_k >= 0    for each candidate k, input u of k
//
// A primitive may be in several chosen kernels (recomputation). Schedulability is
// enforced lazily: when the chosen kernels cannot all run (simulated: run any kernel
// whose inputs are ready), each set S of stuck kernels that wait only on each other
// (a sink component of their wait graph) is cut off with
//
//   sum_{k in S} x_k - sum_{j in P} x_j <= |S| - 1
//
// where P holds every candidate outside S that outputs an input some kernel of S waits
// for. Any schedulable plan containing all of S runs one kernel of S first, whose inputs
// then come from outside S, i.e. from P: so the cut removes no schedulable plan, and it
// removes the current one (no kernel of P is chosen, or S's kernels would not wait).
//
// With a LayoutProblem the program also chooses blocked layouts (the rows are in
// include/kora/orchestrate.h): which nodes are stored blocked and which kernels run
// their native implementation on them.
//
// Two things make CBC prove optimality in well under a second on most segments:
// dominated candidates are left out (orchestrate/dominance.h), and the cover and edge
// inequalities below (add_valid_inequalities) keep the linear relaxation from
// decaying with depth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <coin/CbcModel.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/CoinPackedVector.hpp>
#include <coin/OsiClpSolverInterface.hpp>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "kora/error.h"
#include "kora/orchestrate.h"
#include "orchestrate/dominance.h"
#include "orchestrate/stuck.h"

namespace kora {
namespace {

struct Row {
  std::vector<int> index;
  std::vector<double> value;
  double lower, upper;
};

struct Outcome {
  std::vector<int> chosen;
  std::vector<char> set;  // every column's value (auxiliary ones included)
  bool found = false, proven = false;
  double objective = 0, bound = 0;
};

// Columns 0 .. kernels-1 are the candidates; the rest are auxiliary (cost 0, or the
// layout terms of a LayoutProblem).
Outcome solve_once(const std::vector<double>& cost, int kernels, const std::vector<Row>& rows,
                   double seconds, int threads_wanted) {
  const int n = static_cast<int>(cost.size());
  CoinPackedMatrix matrix(false, 0, 0);
  matrix.setDimensions(0, n);
  std::vector<double> row_lower, row_upper;
  for (const Row& r : rows) {
    matrix.appendRow(static_cast<int>(r.index.size()), r.index.data(), r.value.data());
    row_lower.push_back(r.lower);
    row_upper.push_back(r.upper);
  }
  std::vector<double> col_lower(n, 0.0), col_upper(n, 1.0);
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lower.data(), col_upper.data(), cost.data(), row_lower.data(),
                     row_upper.data());
  for (int k = 0; k < n; ++k) solver.setInteger(k);
  solver.setObjSense(1.0);

  // Debugging aid: KORA_DUMP_MPS=FILE writes the problem (FILE.mps.gz) for other solvers.
  if (const char* dump = std::getenv("KORA_DUMP_MPS")) solver.writeMps(dump);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  CbcMain0(model);
  const std::string sec = std::to_string(std::max(0.5, seconds));
  // Threads in CBC's deterministic mode (100 + n): the same plan on every run.
  const std::string threads = std::to_string(100 + std::max(1, std::min(threads_wanted, 8)));
  const char* argv[] = {"kora", "-log",          "0",    "-sec",     sec.c_str(),     "-ratioGap",
                        "0",    "-allowableGap", "1e-9", "-threads", threads.c_str(), "-solve",
                        "-quit"};
  CbcMain1(static_cast<int>(sizeof argv / sizeof argv[0]), argv, model);

  Outcome out;
  const double* x = model.bestSolution();
  if (x) {
    out.found = true;
    for (int k = 0; k < kernels; ++k)
      if (x[k] > 0.5) out.chosen.push_back(k);
    out.objective = 0;
    for (int c = 0; c < n; ++c) {
      out.set.push_back(x[c] > 0.5);
      if (x[c] > 0.5) out.objective += cost[c];
    }
  }
  out.proven = out.found && model.isProvenOptimal();
  // Costs are >= 0, so 0 bounds the optimum when CBC proved nothing better.
  const double bound = model.getBestPossibleObjValue();
  out.bound = std::isfinite(bound) && bound > 0 && bound < 1e30 ? bound : 0.0;
  if (out.proven) out.bound = out.objective;
  return out;
}

// Inequalities every feasible plan satisfies, which the rows above imply for integer
// x but not for fractional x. Without them the relaxation lets a required value be
// produced by m alternative kernels at 1/m each, each needing its inputs only at 1/m:
// the bound decays geometrically with depth (an LP bound of 187 against an optimum near
// 7,400 on a MobileNetV2 segment). A node is needed when it is required or an ancestor
// of a required node; in any plan
//   (cover) a needed node p is a member of some chosen kernel:   sum_{k owns p} x_k >= 1
//   (edge)  for an edge p -> r with r needed, the chosen kernel computing r either
//           computes p too or reads it, so p is written:  sum_{k owns p, r} x_k + y_p >= 1
// (by induction from the required nodes: a chosen kernel's inputs are produced by chosen
// kernels, which contain them).
// `active` lists the candidates in the program, column k being candidate active[k].
template <typename YColumn>
void add_valid_inequalities(const KernelDag& dag, const std::vector<Candidate>& candidates,
                            const std::vector<int>& active, YColumn&& y, std::vector<Row>& rows) {
  const int n = dag.size();
  std::vector<char> needed(n, 0);
  for (int v = n - 1; v >= 0; --v) {
    needed[v] = dag.required[v];
    for (int s : dag.succ[v]) needed[v] |= needed[s];
  }
  std::vector<std::vector<int>> owners(n);
  for (size_t k = 0; k < active.size(); ++k)
    for (int v : candidates[active[k]].members) owners[v].push_back(static_cast<int>(k));
  for (int p = 0; p < n; ++p) {
    if (!needed[p]) continue;
    if (owners[p].empty())
      throw Error("orchestration: no candidate computes needed node " + std::to_string(p));
    rows.push_back({owners[p], std::vector<double>(owners[p].size(), 1.0), 1.0, COIN_DBL_MAX});
    for (int r : dag.succ[p]) {
      if (!needed[r]) continue;
      Row edge{{}, {}, 1.0, COIN_DBL_MAX};
      for (int k : owners[p])
        if (std::binary_search(candidates[active[k]].members.begin(),
                               candidates[active[k]].members.end(), r))
          edge.index.push_back(k), edge.value.push_back(1.0);
      edge.index.push_back(y(p));
      edge.value.push_back(1.0);
      rows.push_back(std::move(edge));
    }
  }
}

}  // namespace

Plan solve_optimal(const KernelDag& dag, const std::vector<Candidate>& candidates,
                   const std::vector<double>& cost, const SolveOptions& options,
                   const LayoutProblem* layouts) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (cost.size() != candidates.size())
    throw Error("orchestration: " + std::to_string(cost.size()) + " costs for " +
                std::to_string(candidates.size()) + " candidates");
  for (size_t k = 0; k < cost.size(); ++k)
    if (!(cost[k] >= 0) || !std::isfinite(cost[k]))
      throw Error("orchestration: candidate " + std::to_string(k) + " has cost " +
                  std::to_string(cost[k]) + " (costs must be finite and >= 0)");

  if (layouts && layouts->native.empty()) layouts = nullptr;
  if (layouts && (layouts->native.size() != candidates.size() ||
                  layouts->agnostic.size() != candidates.size()))
    throw Error("orchestration: layout options for " + std::to_string(layouts->native.size()) +
                " of " + std::to_string(candidates.size()) + " candidates");
  // Nodes that may be stored blocked: each in the layout the first side wanting it names.
  std::vector<int> layout_of(dag.size(), -1);
  LayoutFlexibility flexibility;  // for dominance
  if (layouts) {
    for (const NativeOption& o : layouts->native)
      if (o.blocked_ms >= 0)
        for (size_t i = 0; i < o.nodes.size(); ++i)
          if (!dag.required[o.nodes[i]] && layout_of[o.nodes[i]] < 0)
            layout_of[o.nodes[i]] = o.layouts[i];
    flexibility.blockable.assign(dag.size(), 0);
    for (int u = 0; u < dag.size(); ++u) flexibility.blockable[u] = layout_of[u] >= 0;
    flexibility.flexible.assign(candidates.size(), 0);
    for (size_t k = 0; k < candidates.size(); ++k) {
      if (layouts->native[k].blocked_ms < 0 && !layouts->agnostic[k]) continue;
      for (const auto* nodes : {&candidates[k].inputs, &candidates[k].outputs})
        for (int u : *nodes) flexibility.flexible[k] |= layout_of[u] >= 0;
    }
  }

  // Only undominated candidates enter the program: column k is candidate active[k].
  const std::vector<char> keep =
      undominated(dag, candidates, cost, layouts ? &flexibility : nullptr);
  std::vector<int> active, column_of(candidates.size(), -1);
  for (size_t k = 0; k < candidates.size(); ++k)
    if (keep[k]) column_of[k] = static_cast<int>(active.size()), active.push_back(k);
  std::vector<std::vector<int>> producers(dag.size());  // columns writing each node
  for (size_t k = 0; k < active.size(); ++k)
    for (int v : candidates[active[k]].outputs) producers[v].push_back(static_cast<int>(k));

  // Columns: x_k per candidate, then y_u per node some candidate reads or the model
  // requires ("u is written to memory"). x_k <= y_u per input u of k, y_u <= sum of u's
  // producers, y_v = 1 when v is required. Same LP bound as x_k <= sum producers(u)
  // directly, but CBC branches on the y far better: fixing one decides for every reader.
  std::vector<int> y_of(dag.size(), -1);
  std::vector<double> column_cost;
  for (int k : active) column_cost.push_back(cost[k]);
  auto y = [&](int u) {
    if (y_of[u] < 0) {
      y_of[u] = static_cast<int>(column_cost.size());
      column_cost.push_back(0.0);
    }
    return y_of[u];
  };
  std::vector<Row> rows;
  for (int v = 0; v < dag.size(); ++v) {
    if (!dag.required[v]) continue;
    if (producers[v].empty())
      throw Error("orchestration: no candidate produces required node " + std::to_string(v));
    rows.push_back({{y(v)}, {1.0}, 1.0, COIN_DBL_MAX});
  }
  for (size_t k = 0; k < active.size(); ++k)
    for (int u : candidates[active[k]].inputs)
      rows.push_back({{static_cast<int>(k), y(u)}, {1.0, -1.0}, -COIN_DBL_MAX, 0.0});
  add_valid_inequalities(dag, candidates, active, y, rows);
  for (int u = 0; u < dag.size(); ++u) {
    if (y_of[u] < 0) continue;
    Row r{producers[u], std::vector<double>(producers[u].size(), -1.0), -COIN_DBL_MAX, 0.0};
    r.index.push_back(y_of[u]);
    r.value.push_back(1.0);
    rows.push_back(std::move(r));
  }

  // Blocked layouts (LayoutProblem; the rows in orchestrate.h): b_u per node that may be
  // blocked, z_k per candidate with a native implementation, w per side of it.
  std::vector<int> b_of(dag.size(), -1), z_of(active.size(), -1);
  if (layouts) {
    auto column = [&](double c) {
      column_cost.push_back(c);
      return static_cast<int>(column_cost.size()) - 1;
    };
    auto at_most = [&](std::vector<int> index, std::vector<double> value, double upper) {
      rows.push_back({std::move(index), std::move(value), -COIN_DBL_MAX, upper});
    };
    for (int u = 0; u < dag.size(); ++u) {
      if (layout_of[u] < 0 || y_of[u] < 0) continue;  // y_u: someone reads u
      b_of[u] = column(0.0);
      at_most({b_of[u], y_of[u]}, {1.0, -1.0}, 0.0);
    }
    std::vector<std::map<int, int>> side_of(active.size());  // node -> w column
    for (size_t k = 0; k < active.size(); ++k) {
      const NativeOption& o = layouts->native[active[k]];
      if (o.blocked_ms < 0) continue;
      const int x = static_cast<int>(k);
      z_of[k] = column(o.blocked_ms - cost[active[k]]);
      at_most({z_of[k], x}, {1.0, -1.0}, 0.0);
      for (size_t i = 0; i < o.nodes.size(); ++i) {
        const int u = o.nodes[i];
        if (b_of[u] < 0 || layout_of[u] != o.layouts[i] || side_of[k].count(u)) continue;
        const int w = column(-o.saved_ms[i]);
        at_most({w, z_of[k]}, {1.0, -1.0}, 0.0);
        at_most({w, b_of[u]}, {1.0, -1.0}, 0.0);
        side_of[k][u] = w;
      }
    }
    // A valid inequality (not implied for fractional x): a blocked node's chosen writer
    // takes it natively or is agnostic, so b_u <= sum of those over u's writers.
    for (int u = 0; u < dag.size(); ++u) {
      if (b_of[u] < 0) continue;
      Row r{{b_of[u]}, {1.0}, -COIN_DBL_MAX, 0.0};
      for (int k : producers[u]) {
        auto side = side_of[k].find(u);
        if (side != side_of[k].end())
          r.index.push_back(side->second), r.value.push_back(-1.0);
        else if (layouts->agnostic[active[k]])
          r.index.push_back(k), r.value.push_back(-1.0);
      }
      rows.push_back(std::move(r));
    }
    for (size_t k = 0; k < active.size(); ++k) {
      const Candidate& c = candidates[active[k]];
      std::vector<int> touched = c.inputs;
      touched.insert(touched.end(), c.outputs.begin(), c.outputs.end());
      const int x = static_cast<int>(k);
      for (int u : touched) {
        if (b_of[u] < 0) continue;
        auto side = side_of[k].find(u);
        if (side != side_of[k].end()) {
          at_most({x, b_of[u], side->second}, {1.0, 1.0, -1.0}, 1.0);
        } else if (layouts->agnostic[active[k]]) {
          for (int v : touched) {
            if (v == u) continue;
            if (b_of[v] >= 0 && layout_of[v] == layout_of[u])
              at_most({x, b_of[u], b_of[v]}, {1.0, 1.0, -1.0}, 1.0);
            else
              at_most({x, b_of[u]}, {1.0, 1.0}, 1.0);
          }
        } else {
          at_most({x, b_of[u]}, {1.0, 1.0}, 1.0);
        }
      }
    }
  }

  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  Plan plan;
  while (true) {
    const double left = options.time_limit_seconds - elapsed();
    Outcome out = solve_once(column_cost, static_cast<int>(active.size()), rows, left, threads);
    ++plan.solves;
    for (int& k : out.chosen) k = active[k];
    if (!out.found) {
      if (left <= 0.5 || elapsed() >= options.time_limit_seconds) {
        // Out of time without a plan: fall back to greedy, with the proven bound.
        Plan fallback = plan_greedy(dag, candidates, cost);
        fallback.gap = std::max(0.0, fallback.cost - std::min(out.bound, fallback.cost));
        fallback.solves = plan.solves;
        fallback.cycle_cuts = plan.cycle_cuts;
        fallback.solve_seconds = elapsed();
        return fallback;
      }
      throw Error("orchestration: the binary linear program has no solution");
    }
    std::vector<int> stuck;
    std::vector<int> order = run_until_stuck(dag, candidates, out.chosen, &stuck);
    if (stuck.empty()) {
      plan.kernels = std::move(order);
      plan.cost = out.objective;
      for (size_t k = 0; k < active.size(); ++k)
        if (z_of[k] >= 0 && out.set[z_of[k]]) plan.native.push_back(active[k]);
      for (int u = 0; u < dag.size(); ++u)
        if (b_of[u] >= 0 && out.set[b_of[u]]) plan.blocked.emplace_back(u, layout_of[u]);
      plan.gap = out.proven ? 0.0 : std::max(0.0, out.objective - out.bound);
      if (!out.proven) {
        // Stopped by the time limit: never return worse than the greedy plan.
        Plan greedy = plan_greedy(dag, candidates, cost);
        if (greedy.cost < plan.cost) {
          plan.kernels = std::move(greedy.kernels);
          plan.cost = greedy.cost;
          plan.gap = std::max(0.0, greedy.cost - out.bound);
          plan.native.clear();
          plan.blocked.clear();
        }
      }
      break;
    }
    if (elapsed() >= options.time_limit_seconds) {
      Plan fallback = plan_greedy(dag, candidates, cost);
      fallback.gap = std::max(0.0, fallback.cost - out.bound);
      fallback.solves = plan.solves;
      fallback.cycle_cuts = plan.cycle_cuts;
      fallback.solve_seconds = elapsed();
      return fallback;
    }
    // Cut off the stuck set (see the header comment).
    std::vector<char> available(dag.size(), 0);
    for (int k : order)
      for (int v : candidates[k].outputs) available[v] = 1;
    // Cut each sink strongly connected component of the wait graph among the stuck
    // kernels (k -> j: chosen j outputs an input k waits for). Its kernels wait only on
    // each other, so no chosen kernel outside it produces what they wait for; cutting
    // the whole stuck set instead would also name kernels merely downstream of the
    // cycle, and CBC would answer with the same cycle and another downstream kernel.
    for (int& k : stuck) k = column_of[k];  // from here on, columns
    const int m = static_cast<int>(stuck.size());
    std::vector<int> pos(active.size(), -1);
    for (int i = 0; i < m; ++i) pos[stuck[i]] = i;
    std::vector<std::vector<int>> waits(m);
    for (int i = 0; i < m; ++i)
      for (int u : candidates[active[stuck[i]]].inputs)
        if (!available[u])
          for (int j : producers[u])
            if (pos[j] >= 0) waits[i].push_back(pos[j]);
    std::vector<int> index(m, -1), low(m, 0), comp(m, -1), stack;
    std::vector<char> on_stack(m, 0);
    int counter = 0, comps = 0;
    std::function<void(int)> tarjan = [&](int v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = 1;
      for (int w : waits[v]) {
        if (index[w] < 0) {
          tarjan(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] != index[v]) return;
      for (int w = -1; w != v;) {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = 0;
        comp[w] = comps;
      }
      ++comps;
    };
    for (int i = 0; i < m; ++i)
      if (index[i] < 0) tarjan(i);
    std::vector<char> sink(comps, 1);
    for (int i = 0; i < m; ++i)
      for (int w : waits[i])
        if (comp[w] != comp[i]) sink[comp[i]] = 0;
    for (int cc = 0; cc < comps; ++cc) {
      if (!sink[cc]) continue;
      std::set<int> in_set, outside;
      for (int i = 0; i < m; ++i)
        if (comp[i] == cc) in_set.insert(stuck[i]);
      for (int k : in_set)
        for (int u : candidates[active[k]].inputs)
          if (!available[u])
            for (int j : producers[u])
              if (!in_set.count(j)) outside.insert(j);
      Row cut{{}, {}, -COIN_DBL_MAX, static_cast<double>(in_set.size()) - 1.0};
      for (int k : in_set) cut.index.push_back(k), cut.value.push_back(1.0);
      for (int j : outside) cut.index.push_back(j), cut.value.push_back(-1.0);
      rows.push_back(std::move(cut));
      ++plan.cycle_cuts;
    }
  }
  plan.solve_seconds = elapsed();
  return plan;
}

}  // namespace kora
