// The orchestration problem (DESIGN.md): a KernelDag, its candidate kernels and a cost
// per candidate in; the chosen kernels, in an order they can run in, out.
//   solve_optimal  the binary linear program, solved with CBC; schedulability enforced by
//                  lazily cutting the dependence cycles of the solutions found;
//   plan_unfused   one kernel per primitive (operator by operator);
//   plan_greedy    rule-based fusion as conventional compilers do it.
// All three choose among the same candidates, so their costs compare directly.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"

namespace kora {

// Blocked layouts as a choice of the program (solve_optimal, optional). A candidate with
// a native implementation (a oneDNN convolution) can run it on some of the nodes it reads
// or writes (its sides) stored in a blocked layout, saving the reorder of each such side;
// a candidate that is layout-agnostic (elementwise) computes on any layout when all the
// nodes it touches share it; generated code of elementwise, reduce, broadcast, concat and
// slice members reads and writes its viewed nodes through layout views when all share one
// (src/cpu/layout_view.h: a squeeze-excitation's pool and scale between channels-last
// convolutions); every other candidate needs its nodes plain. A node stored blocked is so
// for every chosen kernel that reads or writes it, in one layout for all of them.
//
// Why: oneDNN's convolutions run on blocked activations (channels last, acdb, with
// AVX-512; aBcd8b with AVX2, ...). On plain NCHW each pays a reorder in and out, which on
// MobileNetV2 cost more than its depthwise convolutions (docs/benchmarks.md: 28 reorders
// 0.40 ms, 13 depthwise convolutions 0.20 ms). The cost model says what a native kernel
// costs (CostModel::layout_cost; ProfileDbCost from the onednn:native and onednn:blocked
// records), and the program chooses layouts together with the kernels (optimal only).
// Required nodes stay plain: model outputs, and tensors crossing a segment cut.
// Candidates that can take a blocked node are exempt from dominance
// (src/orchestrate/dominance.h), and one more valid inequality keeps the relaxation tight
// (src/orchestrate/blp.cc, add_layout_rows). The plan carries the blocked tensors and the
// native kernels to the emitter.
struct NativeOption {
  double blocked_ms = -1;        // the native implementation, every side reordered; < 0: none
  std::vector<int> nodes;        // its sides: nodes it reads or writes
  std::vector<int> layouts;      // per side: the layout (an id) it takes the node in
  std::vector<double> saved_ms;  // per side: the reorder saved when the node is blocked
};
struct LayoutProblem {
  std::vector<NativeOption> native;  // per candidate (empty: no layout choices at all)
  std::vector<char> agnostic;        // per candidate
  // Per candidate (or empty: none): the nodes generated code takes through layout views
  // (src/cpu/layout_view.h), all blocked in one layout or all plain (a kernel between two
  // layouts would transpose, at a cost no one measured); the other nodes it touches plain.
  std::vector<std::vector<int>> views;
  // Per candidate (or empty: none): the nodes generated code reads or writes stored as
  // bfloat16 in their own order (a bf16 matmul's source), each on its own: no other node
  // it touches need share that layout.
  std::vector<std::vector<int>> bfloat16_views;
  // Per node (or empty: the layout the first side naming it names): the layout it may be
  // stored in, -1 for none.
  std::vector<int> layout_of;
};

struct Plan {
  std::vector<int> kernels;  // candidate indices, in an order they can run in
  double cost = 0;           // sum of the chosen candidates' costs
  // Proven bound: the optimum is at least cost - gap. 0 when proven optimal; for the
  // baselines, not computed (-1).
  double gap = -1;
  double solve_seconds = 0;
  int cycle_cuts = 0;  // schedulability cuts added (optimal only)
  int solves = 0;      // CBC runs (optimal only)
  // With a LayoutProblem: the chosen kernels that run their native implementation, and
  // the nodes stored blocked with their layouts (ids).
  std::vector<int> native;
  std::vector<std::pair<int, int>> blocked;
  // SolveOptions::runner_up: the best plan with another set of kernels (none where no
  // other plan exists or CBC did not prove the first), at most one.
  std::vector<Plan> runner_up;
};

struct SolveOptions {
  double time_limit_seconds = 60;  // over all CBC runs of one problem
  // CBC's threads (at most 8), in its deterministic mode; 0: the machine's cores.
  int threads = 0;
  // Also solve for the runner-up (Plan::runner_up): the same program with the proven
  // plan's kernel set cut off (sum of its x_k <= its size - 1, which removes every plan
  // holding all of them), its cycle cuts kept; within what is left of the time limit.
  bool runner_up = false;
};

// With `layouts`, cost[k] is the candidate's cost on plain tensors, and the program also
// chooses which nodes are blocked and which kernels run native (LayoutProblem above):
//   z_k <= x_k (k runs native), w_ks <= z_k, w_ks <= b_u (side s on node u read or
//   written blocked), b_u <= y_u, and for each candidate j touching a node u that may be
//   blocked: x_j + b_u - w_ju <= 1 (j takes u natively), x_j + b_u - b_v <= 1 for the
//   other nodes v of an agnostic j (of j's views, when u is one), nothing where j takes u
//   among its bfloat16_views, x_j + b_u <= 1 otherwise; cost adds
//   (blocked_ms - cost_k) z_k - saved_ks w_ks, and 0.1 us per b_u (a node stays plain
//   where blocking it saves nothing; not in Plan::cost).
Plan solve_optimal(const KernelDag& dag, const std::vector<Candidate>& candidates,
                   const std::vector<double>& cost, const SolveOptions& options = {},
                   const LayoutProblem* layouts = nullptr);
Plan plan_unfused(const KernelDag& dag, const std::vector<Candidate>& candidates,
                  const std::vector<double>& cost);
Plan plan_greedy(const KernelDag& dag, const std::vector<Candidate>& candidates,
                 const std::vector<double>& cost);

// Checks that `chosen` (candidate indices, any order) produces every required node and
// every input of every chosen kernel, and can run in some order. Returns that order (a
// permutation of `chosen`); throws kora::Error saying what is wrong otherwise.
std::vector<int> schedule(const KernelDag& dag, const std::vector<Candidate>& candidates,
                          const std::vector<int>& chosen);

}  // namespace kora
