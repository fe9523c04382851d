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
//
// The steps: build_program (the candidate columns, the production rows, the layout rows),
// then solve_with_cycle_cuts (solve_once with CBC, add_cycle_cuts while the solution
// cannot run), read_plan; greedy_fallback when the time limit stops CBC first. With
// SolveOptions::runner_up, the same program with the plan's kernel set cut off
// (sum_{k in plan} x_k <= |plan| - 1) is solved again for the runner-up.
#include <algorithm>
#include <atomic>
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
  bool infeasible = false;  // proven to have no solution (else not found: stopped by a limit)
  double objective = 0, bound = 0;
};

// CBC's objective per millisecond of cost (solve_once): microseconds.
constexpr double kObjectiveScale = 1000;
// What storing a node blocked costs in the program (ms): 0.1 us, so that a node blocking
// saves nothing for stays plain (a bfloat16 one would only lose precision: a transformer's
// residual stream between two generated kernels); taken off the plan's cost.
constexpr double kBlockedTieBreakMs = 1e-4;

// Columns 0 .. kernels-1 are the candidates; the rest are auxiliary (cost 0, or the
// layout terms of a LayoutProblem).
Outcome solve_once(const std::vector<double>& cost, int kernels, const std::vector<Row>& rows,
                   double seconds, int threads_wanted) {
  const int n = static_cast<int>(cost.size());
  // Row-ordered, built at once (appending row by row copies the matrix each time).
  std::vector<double> row_lower, row_upper, elements;
  std::vector<int> indices;
  std::vector<CoinBigIndex> starts{0};
  std::vector<int> lengths;
  for (const Row& r : rows) {
    indices.insert(indices.end(), r.index.begin(), r.index.end());
    elements.insert(elements.end(), r.value.begin(), r.value.end());
    starts.push_back(static_cast<CoinBigIndex>(indices.size()));
    lengths.push_back(static_cast<int>(r.index.size()));
    row_lower.push_back(r.lower);
    row_upper.push_back(r.upper);
  }
  const CoinPackedMatrix matrix(false, n, static_cast<int>(rows.size()),
                                static_cast<CoinBigIndex>(indices.size()), elements.data(),
                                indices.data(), starts.data(), lengths.data());
  std::vector<double> col_lower(n, 0.0), col_upper(n, 1.0);
  // The objective in microseconds (kObjectiveScale): CLP's dual tolerance (1e-7) is
  // absolute, and a segment of kernels under a microsecond each, in milliseconds, has
  // reduced costs near it, so that CBC branched for seconds on 500-column programs
  // (a BiLSTM's time steps, predicted costs: 8 s each, 0.5-0.7 s scaled).
  std::vector<double> scaled(cost);
  for (double& c : scaled) c *= kObjectiveScale;
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lower.data(), col_upper.data(), scaled.data(), row_lower.data(),
                     row_upper.data());
  for (int k = 0; k < n; ++k) solver.setInteger(k);
  solver.setObjSense(1.0);

  // Debugging aid: KORA_DUMP_MPS=PREFIX writes each program CBC gets, as it gets it (the
  // objective in microseconds), to PREFIX.N.mps.gz, N counting from 0 in each process.
  if (const char* dump = std::getenv("KORA_DUMP_MPS")) {
    static std::atomic<int> dumped{0};
    solver.writeMps((std::string(dump) + "." + std::to_string(dumped++)).c_str());
  }
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  CbcMain0(model);
  const std::string sec = std::to_string(std::max(0.5, seconds));
  // Threads in CBC's deterministic mode (100 + n): the same plan on every run.
  const std::string threads = std::to_string(100 + std::max(1, std::min(threads_wanted, 8)));
  // No zero-half cuts: on BiLSTM's time-step programs (483 columns) CBC spent 7 of 7.4 s
  // separating them (0.5 s without); over 468 programs dumped from seven models' compiles
  // CBC took 108 s without them against 337 s with (docs/benchmarks.md).
  const char* argv[] = {
      "kora", "-log",          "0",    "-sec",     sec.c_str(),     "-ratioGap",
      "0",    "-allowableGap", "1e-9", "-threads", threads.c_str(), "-zeroHalfCuts",
      "off",  "-solve",        "-quit"};
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
  // (CBC stopped by its time limit in preprocessing can report the problem infeasible.)
  out.infeasible = !out.found && model.isProvenInfeasible() && !model.isSecondsLimitReached();
  // Costs are >= 0, so 0 bounds the optimum when CBC proved nothing better.
  const double bound = model.getBestPossibleObjValue() / kObjectiveScale;
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

// ---- The program ----

// Costs, one per candidate, finite and >= 0.
void check_costs(const std::vector<Candidate>& candidates, const std::vector<double>& cost) {
  if (cost.size() != candidates.size())
    throw Error("orchestration: " + std::to_string(cost.size()) + " costs for " +
                std::to_string(candidates.size()) + " candidates");
  for (size_t k = 0; k < cost.size(); ++k)
    if (!(cost[k] >= 0) || !std::isfinite(cost[k]))
      throw Error("orchestration: candidate " + std::to_string(k) + " has cost " +
                  std::to_string(cost[k]) + " (costs must be finite and >= 0)");
}

// The layout choices, one per candidate; null when there are none.
const LayoutProblem* checked_layouts(const std::vector<Candidate>& candidates,
                                     const LayoutProblem* layouts) {
  if (layouts && layouts->native.empty()) return nullptr;
  if (layouts &&
      (layouts->native.size() != candidates.size() ||
       layouts->agnostic.size() != candidates.size() ||
       (!layouts->views.empty() && layouts->views.size() != candidates.size()) ||
       (!layouts->bfloat16_views.empty() && layouts->bfloat16_views.size() != candidates.size())))
    throw Error("orchestration: layout options for " + std::to_string(layouts->native.size()) +
                " of " + std::to_string(candidates.size()) + " candidates");
  return layouts;
}

// The binary linear program: its columns with their costs, its rows, and what maps them
// back to candidates and nodes. Columns: x_k per undominated candidate (column k is
// candidate active[k]), then the auxiliary ones in the order the rows first need them:
// y_u ("u is written to memory"), and with a LayoutProblem b_u, z_k and w_ks.
struct Program {
  std::vector<int> active;                  // per x column: its candidate
  std::vector<int> column_of;               // per candidate: its x column, -1 when dominated
  std::vector<std::vector<int>> producers;  // per node: the x columns writing it
  std::vector<int> layout_of;               // per node: the layout it may be blocked in, or -1
  std::vector<int> y_of, b_of;              // per node: its y, b column (-1: none)
  std::vector<int> z_of;                    // per x column: its z column (-1: none)
  std::vector<double> column_cost;
  std::vector<Row> rows;

  int kernels() const { return static_cast<int>(active.size()); }
  int column(double cost) {  // a new auxiliary column
    column_cost.push_back(cost);
    return static_cast<int>(column_cost.size()) - 1;
  }
  int y(int u) {  // y_u, made on first use
    if (y_of[u] < 0) y_of[u] = column(0.0);
    return y_of[u];
  }
};

// Nodes that may be stored blocked: each in the layout LayoutProblem::layout_of gives it
// where a native side takes it so or only views and agnostic kernels take it, else the
// first side wanting it names (-1: plain only).
std::vector<int> blockable_layouts(const KernelDag& dag, const std::vector<Candidate>& candidates,
                                   const LayoutProblem* layouts) {
  std::vector<int> layout_of(dag.size(), -1);
  if (!layouts) return layout_of;
  if (!layouts->layout_of.empty()) {  // as given, where some side takes it so
    for (const NativeOption& o : layouts->native)
      if (o.blocked_ms >= 0)
        for (size_t i = 0; i < o.nodes.size(); ++i)
          if (!dag.required[o.nodes[i]] && layouts->layout_of[o.nodes[i]] == o.layouts[i])
            layout_of[o.nodes[i]] = o.layouts[i];
    // Nodes only views or agnostic kernels take, in the layout given to them.
    auto give = [&](int u) {
      if (!dag.required[u] && layouts->layout_of[u] >= 0) layout_of[u] = layouts->layout_of[u];
    };
    for (size_t k = 0; k < layouts->views.size(); ++k)
      for (int u : layouts->views[k]) give(u);
    for (size_t k = 0; k < layouts->agnostic.size(); ++k)
      if (layouts->agnostic[k]) {
        for (int u : candidates[k].inputs) give(u);
        for (int u : candidates[k].outputs) give(u);
      }
    return layout_of;
  }
  for (const NativeOption& o : layouts->native)
    if (o.blocked_ms >= 0)
      for (size_t i = 0; i < o.nodes.size(); ++i)
        if (!dag.required[o.nodes[i]] && layout_of[o.nodes[i]] < 0)
          layout_of[o.nodes[i]] = o.layouts[i];
  return layout_of;
}

// What dominance needs to know of the layout choices (orchestrate/dominance.h).
LayoutFlexibility layout_flexibility(const KernelDag& dag, const std::vector<Candidate>& candidates,
                                     const LayoutProblem& layouts,
                                     const std::vector<int>& layout_of) {
  LayoutFlexibility flexibility;
  flexibility.blockable.assign(dag.size(), 0);
  for (int u = 0; u < dag.size(); ++u) flexibility.blockable[u] = layout_of[u] >= 0;
  flexibility.flexible.assign(candidates.size(), 0);
  flexibility.native.assign(candidates.size(), 0);
  flexibility.together.resize(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    const bool viewed = !layouts.views.empty() && !layouts.views[k].empty();
    const bool alone = !layouts.bfloat16_views.empty() && !layouts.bfloat16_views[k].empty();
    flexibility.native[k] = layouts.native[k].blocked_ms >= 0;
    if (!flexibility.native[k] && !layouts.agnostic[k] && !viewed && !alone) continue;
    for (const auto* nodes : {&candidates[k].inputs, &candidates[k].outputs})
      for (int u : *nodes) flexibility.flexible[k] |= layout_of[u] >= 0;
    // What the layout rows take blocked all at once (add_layout_rows).
    if (flexibility.native[k]) continue;
    std::vector<int>& together = flexibility.together[k];
    if (layouts.agnostic[k]) {
      together = candidates[k].inputs;
      together.insert(together.end(), candidates[k].outputs.begin(), candidates[k].outputs.end());
    } else if (viewed) {
      together = layouts.views[k];
    }
    if (alone) {
      flexibility.bfloat16.resize(candidates.size());
      flexibility.bfloat16[k] = layouts.bfloat16_views[k];
    }
  }
  return flexibility;
}

// The x columns: only undominated candidates enter the program.
Program kernel_columns(const KernelDag& dag, const std::vector<Candidate>& candidates,
                       const std::vector<double>& cost, const LayoutProblem* layouts) {
  Program program;
  program.layout_of = blockable_layouts(dag, candidates, layouts);
  LayoutFlexibility flexibility;
  if (layouts) flexibility = layout_flexibility(dag, candidates, *layouts, program.layout_of);
  const std::vector<char> keep =
      undominated(dag, candidates, cost, layouts ? &flexibility : nullptr);
  program.column_of.assign(candidates.size(), -1);
  for (size_t k = 0; k < candidates.size(); ++k)
    if (keep[k])
      program.column_of[k] = program.kernels(), program.active.push_back(static_cast<int>(k));
  program.producers.resize(dag.size());
  for (int k = 0; k < program.kernels(); ++k)
    for (int v : candidates[program.active[k]].outputs) program.producers[v].push_back(k);
  for (int k : program.active) program.column_cost.push_back(cost[k]);
  program.y_of.assign(dag.size(), -1);
  program.b_of.assign(dag.size(), -1);
  program.z_of.assign(program.active.size(), -1);
  return program;
}

// Every required node and every input of a chosen kernel is written by a chosen kernel:
// y_v = 1 when v is required, x_k <= y_u per input u of k, y_u <= sum of u's producers;
// and the valid inequalities. Same LP bound as x_k <= sum producers(u) directly, but CBC
// branches on the y far better: fixing one decides for every reader.
void add_production_rows(const KernelDag& dag, const std::vector<Candidate>& candidates,
                         Program& program) {
  std::vector<Row>& rows = program.rows;
  for (int v = 0; v < dag.size(); ++v) {
    if (!dag.required[v]) continue;
    if (program.producers[v].empty())
      throw Error("orchestration: no candidate produces required node " + std::to_string(v));
    rows.push_back({{program.y(v)}, {1.0}, 1.0, COIN_DBL_MAX});
  }
  for (int k = 0; k < program.kernels(); ++k)
    for (int u : candidates[program.active[k]].inputs)
      rows.push_back({{k, program.y(u)}, {1.0, -1.0}, -COIN_DBL_MAX, 0.0});
  add_valid_inequalities(
      dag, candidates, program.active, [&](int u) { return program.y(u); }, rows);
  for (int u = 0; u < dag.size(); ++u) {
    if (program.y_of[u] < 0) continue;
    const std::vector<int>& producers = program.producers[u];
    Row r{producers, std::vector<double>(producers.size(), -1.0), -COIN_DBL_MAX, 0.0};
    r.index.push_back(program.y_of[u]);
    r.value.push_back(1.0);
    rows.push_back(std::move(r));
  }
}

// Blocked layouts (LayoutProblem; the rows in orchestrate.h): b_u per node that may be
// blocked and that some kernel reads, z_k per candidate with a native implementation, w
// per side of it.
void add_layout_rows(const KernelDag& dag, const std::vector<Candidate>& candidates,
                     const std::vector<double>& cost, const LayoutProblem& layouts,
                     Program& program) {
  const std::vector<int>& active = program.active;
  const std::vector<int>& layout_of = program.layout_of;
  std::vector<int>& b_of = program.b_of;
  auto at_most = [&](std::vector<int> index, std::vector<double> value, double upper) {
    program.rows.push_back({std::move(index), std::move(value), -COIN_DBL_MAX, upper});
  };
  for (int u = 0; u < dag.size(); ++u) {
    if (layout_of[u] < 0 || program.y_of[u] < 0) continue;  // y_u: someone reads u
    b_of[u] = program.column(kBlockedTieBreakMs);
    at_most({b_of[u], program.y_of[u]}, {1.0, -1.0}, 0.0);
  }
  std::vector<std::map<int, int>> side_of(active.size());  // node -> w column
  // Whether the candidate's list in `per_candidate` (views, bfloat16_views) holds node u.
  auto listed = [](const std::vector<std::vector<int>>& per_candidate, int candidate, int u) {
    if (per_candidate.empty()) return false;
    const std::vector<int>& v = per_candidate[candidate];
    return std::find(v.begin(), v.end(), u) != v.end();
  };
  auto viewed = [&](int candidate, int u) { return listed(layouts.views, candidate, u); };
  auto bfloat16_viewed = [&](int candidate, int u) {
    return listed(layouts.bfloat16_views, candidate, u);
  };
  for (int k = 0; k < program.kernels(); ++k) {
    const NativeOption& o = layouts.native[active[k]];
    if (o.blocked_ms < 0) continue;
    const int z = program.z_of[k] = program.column(o.blocked_ms - cost[active[k]]);
    at_most({z, k}, {1.0, -1.0}, 0.0);
    for (size_t i = 0; i < o.nodes.size(); ++i) {
      const int u = o.nodes[i];
      if (b_of[u] < 0 || layout_of[u] != o.layouts[i] || side_of[k].count(u)) continue;
      const int w = program.column(-o.saved_ms[i]);
      at_most({w, z}, {1.0, -1.0}, 0.0);
      at_most({w, b_of[u]}, {1.0, -1.0}, 0.0);
      side_of[k][u] = w;
    }
  }
  // A valid inequality (not implied for fractional x): a blocked node's chosen writer
  // takes it natively or is agnostic, so b_u <= sum of those over u's writers.
  for (int u = 0; u < dag.size(); ++u) {
    if (b_of[u] < 0) continue;
    Row r{{b_of[u]}, {1.0}, -COIN_DBL_MAX, 0.0};
    for (int k : program.producers[u]) {
      auto side = side_of[k].find(u);
      if (side != side_of[k].end())
        r.index.push_back(side->second), r.value.push_back(-1.0);
      else if (layouts.agnostic[active[k]] || viewed(active[k], u) || bfloat16_viewed(active[k], u))
        r.index.push_back(k), r.value.push_back(-1.0);
    }
    program.rows.push_back(std::move(r));
  }
  for (int k = 0; k < program.kernels(); ++k) {
    const Candidate& c = candidates[active[k]];
    std::vector<int> touched = c.inputs;
    touched.insert(touched.end(), c.outputs.begin(), c.outputs.end());
    for (int u : touched) {
      if (b_of[u] < 0) continue;
      auto side = side_of[k].find(u);
      if (side != side_of[k].end()) {
        at_most({k, b_of[u], side->second}, {1.0, 1.0, -1.0}, 1.0);
      } else if (bfloat16_viewed(active[k], u)) {
        continue;  // taken on its own, whatever the other nodes' layouts
      } else if (layouts.agnostic[active[k]]) {
        for (int v : touched) {
          if (v == u) continue;
          if (b_of[v] >= 0 && layout_of[v] == layout_of[u])
            at_most({k, b_of[u], b_of[v]}, {1.0, 1.0, -1.0}, 1.0);
          else
            at_most({k, b_of[u]}, {1.0, 1.0}, 1.0);
        }
      } else if (viewed(active[k], u)) {
        for (int v : layouts.views[active[k]]) {
          if (v == u) continue;
          if (b_of[v] >= 0 && layout_of[v] == layout_of[u])
            at_most({k, b_of[u], b_of[v]}, {1.0, 1.0, -1.0}, 1.0);
          else
            at_most({k, b_of[u]}, {1.0, 1.0}, 1.0);
        }
      } else {
        at_most({k, b_of[u]}, {1.0, 1.0}, 1.0);
      }
    }
  }
}

// The whole program before any cycle cut.
Program build_program(const KernelDag& dag, const std::vector<Candidate>& candidates,
                      const std::vector<double>& cost, const LayoutProblem* layouts) {
  Program program = kernel_columns(dag, candidates, cost, layouts);
  add_production_rows(dag, candidates, program);
  if (layouts) add_layout_rows(dag, candidates, cost, *layouts, program);
  return program;
}

// ---- Lazy cycle cuts ----

// The sink strongly connected components of a graph (Tarjan): each as its vertices,
// ascending; components in the order Tarjan's algorithm completes them.
std::vector<std::vector<int>> sink_components(const std::vector<std::vector<int>>& edges) {
  const int m = static_cast<int>(edges.size());
  std::vector<int> index(m, -1), low(m, 0), comp(m, -1), stack;
  std::vector<char> on_stack(m, 0);
  int counter = 0, comps = 0;
  std::function<void(int)> tarjan = [&](int v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = 1;
    for (int w : edges[v]) {
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
    for (int w : edges[i])
      if (comp[w] != comp[i]) sink[comp[i]] = 0;
  std::vector<std::vector<int>> sinks;
  for (int cc = 0; cc < comps; ++cc) {
    if (!sink[cc]) continue;
    sinks.emplace_back();
    for (int i = 0; i < m; ++i)
      if (comp[i] == cc) sinks.back().push_back(i);
  }
  return sinks;
}

// Cuts off the stuck kernels of a solution (see the header comment): `order` holds the
// chosen candidates that ran, `stuck` those that did not. Cuts each sink strongly
// connected component of the wait graph among the stuck kernels (k -> j: chosen j outputs
// an input k waits for). Its kernels wait only on each other, so no chosen kernel outside
// it produces what they wait for; cutting the whole stuck set instead would also name
// kernels merely downstream of the cycle, and CBC would answer with the same cycle and
// another downstream kernel. Returns the number of cuts added.
int add_cycle_cuts(const KernelDag& dag, const std::vector<Candidate>& candidates,
                   const std::vector<int>& order, const std::vector<int>& stuck, Program& program) {
  std::vector<char> available(dag.size(), 0);
  for (int k : order)
    for (int v : candidates[k].outputs) available[v] = 1;
  const int m = static_cast<int>(stuck.size());
  std::vector<int> column(m), pos(program.active.size(), -1);
  for (int i = 0; i < m; ++i) column[i] = program.column_of[stuck[i]], pos[column[i]] = i;
  // What each stuck kernel waits for, among the stuck kernels.
  std::vector<std::vector<int>> waits(m);
  for (int i = 0; i < m; ++i)
    for (int u : candidates[stuck[i]].inputs)
      if (!available[u])
        for (int j : program.producers[u])
          if (pos[j] >= 0) waits[i].push_back(pos[j]);
  int cuts = 0;
  for (const std::vector<int>& component : sink_components(waits)) {
    std::set<int> in_set, outside;
    for (int i : component) in_set.insert(column[i]);
    for (int k : in_set)
      for (int u : candidates[program.active[k]].inputs)
        if (!available[u])
          for (int j : program.producers[u])
            if (!in_set.count(j)) outside.insert(j);
    Row cut{{}, {}, -COIN_DBL_MAX, static_cast<double>(in_set.size()) - 1.0};
    for (int k : in_set) cut.index.push_back(k), cut.value.push_back(1.0);
    for (int j : outside) cut.index.push_back(j), cut.value.push_back(-1.0);
    program.rows.push_back(std::move(cut));
    ++cuts;
  }
  return cuts;
}

// ---- Plans ----

// The plan of a schedulable solution: its kernels in `order`, the native kernels and
// blocked nodes it chose, and the gap to the bound CBC proved.
Plan read_plan(const KernelDag& dag, const Program& program, const Outcome& out,
               std::vector<int> order) {
  Plan plan;
  plan.kernels = std::move(order);
  plan.cost = out.objective;
  for (int k = 0; k < program.kernels(); ++k)
    if (program.z_of[k] >= 0 && out.set[program.z_of[k]]) plan.native.push_back(program.active[k]);
  for (int u = 0; u < dag.size(); ++u)
    if (program.b_of[u] >= 0 && out.set[program.b_of[u]]) {
      plan.blocked.emplace_back(u, program.layout_of[u]);
      plan.cost -= kBlockedTieBreakMs;
    }
  plan.gap = out.proven ? 0.0 : std::max(0.0, out.objective - out.bound);
  return plan;
}

// The greedy plan (plan_greedy), for when the time limit stops CBC short of a proven
// schedulable plan, with the gap to `bound`, the bound CBC proved.
Plan greedy_fallback(const KernelDag& dag, const std::vector<Candidate>& candidates,
                     const std::vector<double>& cost, double bound) {
  Plan greedy = plan_greedy(dag, candidates, cost);
  greedy.gap = std::max(0.0, greedy.cost - bound);
  return greedy;
}

// Solves, cuts off the stuck kernels of each solution, and solves again until a solution
// runs (or time is up: then the greedy plan, or the better of the two when CBC found a
// schedulable plan it could not prove). Counts the solves and cuts into the plan; the
// time limit and solve_seconds count from `start`.
Plan solve_with_cycle_cuts(const KernelDag& dag, const std::vector<Candidate>& candidates,
                           const std::vector<double>& cost, const SolveOptions& options,
                           Program& program, std::chrono::steady_clock::time_point start) {
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  int solves = 0, cycle_cuts = 0;
  Plan plan;
  while (true) {
    const double left = options.time_limit_seconds - elapsed();
    Outcome out = solve_once(program.column_cost, program.kernels(), program.rows, left, threads);
    ++solves;
    for (int& k : out.chosen) k = program.active[k];
    if (!out.found) {
      // Out of time without a plan (CBC's limit, which may come before this loop's). CBC
      // also reports a program infeasible when its limit stops it in preprocessing without
      // saying so (Inception-v3's 45,714 rows, sometimes, at the first solve): the program
      // always has a solution (every primitive alone, plain), so that claim is not trusted
      // either. The greedy plan is schedulable; its gap says it is not proven.
      plan = greedy_fallback(dag, candidates, cost, out.infeasible ? 0.0 : out.bound);
      break;
    }
    std::vector<int> stuck;
    std::vector<int> order = run_until_stuck(dag, candidates, out.chosen, &stuck);
    if (stuck.empty()) {
      plan = read_plan(dag, program, out, std::move(order));
      if (!out.proven) {
        // Stopped by the time limit: never return worse than the greedy plan.
        Plan greedy = greedy_fallback(dag, candidates, cost, out.bound);
        if (greedy.cost < plan.cost) plan = std::move(greedy);
      }
      break;
    }
    if (elapsed() >= options.time_limit_seconds) {
      plan = greedy_fallback(dag, candidates, cost, out.bound);
      break;
    }
    cycle_cuts += add_cycle_cuts(dag, candidates, order, stuck, program);
  }
  plan.solves = solves;
  plan.cycle_cuts = cycle_cuts;
  plan.solve_seconds = elapsed();
  return plan;
}

}  // namespace

Plan solve_optimal(const KernelDag& dag, const std::vector<Candidate>& candidates,
                   const std::vector<double>& cost, const SolveOptions& options,
                   const LayoutProblem* layouts) {
  const auto start = std::chrono::steady_clock::now();
  check_costs(candidates, cost);
  layouts = checked_layouts(candidates, layouts);
  Program program = build_program(dag, candidates, cost, layouts);
  Plan plan = solve_with_cycle_cuts(dag, candidates, cost, options, program, start);
  if (!options.runner_up || plan.gap != 0 || plan.kernels.empty()) return plan;
  // The runner-up: the proven plan's kernel set cut off (all of them are program columns:
  // a proven plan is CBC's, not the greedy fallback's).
  Row no_good{{}, {}, -COIN_DBL_MAX, static_cast<double>(plan.kernels.size()) - 1.0};
  for (int k : plan.kernels) {
    if (program.column_of[k] < 0) return plan;
    no_good.index.push_back(program.column_of[k]);
    no_good.value.push_back(1.0);
  }
  program.rows.push_back(std::move(no_good));
  try {
    Plan next = solve_with_cycle_cuts(dag, candidates, cost, options, program, start);
    // Proven, and another kernel set (no other plan: the greedy fallback, not proven).
    if (next.gap == 0 && next.kernels != plan.kernels) plan.runner_up.push_back(std::move(next));
  } catch (const Error&) {
    // No other plan: the first is the only one.
  }
  plan.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace kora
