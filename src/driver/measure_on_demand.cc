// Measure on demand (include/kora/compile.h, solve_on_demand): the graph, the target and
// its profile database in; a plan with every kernel measured, and how far from the optimum
// of the full measured table it can be at most, out.
//   1. Guided: kernels not measured cost what similar kernels of the graph measured so far
//      predict (PredictedCost: their measured / bound ratios; before any is measured, the
//      kind's typical cost, Target::typical_cost); the plan's kernels not measured are
//      measured, all in one target.profile (compiled together), and the plan solved
//      again until none is left. The prediction is lowered by options.on_demand_caution
//      spreads of the similar kernels' ratios, so that kernels that may beat their
//      prediction are measured too. Out of solves (options.on_demand_rounds), the last
//      plan's kernels are measured all the same and the best plan of measured kernels
//      solved once more.
//      Measuring a kernel measures its default implementations; what a full profile
//      measures beyond them (the CPU's schedule search) is deferred: such a kernel costs
//      what the rest may give (Target::unexplored_costs, optimistic) and, when a plan
//      takes it, is measured further in the same round as the plan's other kernels.
//   2. Proved: kernels not measured cost their lower bound (Target::lower_bound: no
//      implementation of them is faster), so that solve's cost bounds every plan's cost
//      from below (measuring only raises a bound to the kernel's cost). If it is within
//      the gap option of the guided plan's cost, that plan is that close to the optimum
//      (and is the optimum when the bound solve's plan is all measured); else the bound
//      solve's kernels not measured are measured too, and both steps run again.
// Kernels whose bound alone makes every plan through them worse than the incumbent are
// never chosen, so never compiled or measured.
// A target that measures through a job for a machine elsewhere (Target::measures_elsewhere)
// runs one round: its job holds what the predicted and the lower-bound plans lack, and the
// loop stops there; the next call, with the job's results stored, runs the next round.
// A recompile (options.on_demand_recompile) starts with the solve that excludes the kernels
// not measured, and measures nothing when that plan computes the graph.
// Settling: step 1 stops early when what its plan promises is within
// options.on_demand_tolerance of the best plan of measured kernels only (solved with the
// kernels not measured excluded). That solve runs when the last round's plan, costed at
// the database's costs now, is within the tolerance too, and on the first solve where the
// database holds kernels of the graph (a model that shares them). A prediction that close
// cannot be told from the noise of measurements. Patience: it also stops after
// options.on_demand_patience rounds in a row whose measured plans were no cheaper (by the
// tolerance) than the cheapest measured round plan so far, and takes the best plan of
// measured kernels: predictions that stay a little optimistic, round after round, for the
// next few kernels of dozens of similar shapes (recurrent cells) promise gains the
// measurements never give.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <utility>

#include "base/text.h"
#include "driver/stages.h"
#include "kora/compile.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

// The solver's time per segment in a solve that needs no proof.
constexpr double kQuickSeconds = 1;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ModelCandidates plan_kernels_outside(const PrimGraph& graph, const OrchestrationResult& plan,
                                     const std::set<uint64_t>& wanted,
                                     const ModelCandidates& enumerated) {
  std::set<uint64_t> known;
  for (const UniqueCandidate& u : enumerated.unique) known.insert(u.candidate->signature);
  ModelCandidates outside;
  SegmentCandidates whole;
  whole.sub = kernel_dag_of(graph);
  std::map<int, int> node_of;  // prim -> node of the whole graph's DAG
  for (int v = 0; v < whole.sub.size(); ++v) node_of[whole.sub.prim[v]] = v;
  for (const ChosenKernel& k : plan.kernels) {
    if (!wanted.count(k.signature) || known.count(k.signature)) continue;
    std::vector<int> nodes;
    for (int prim : k.prims) nodes.push_back(node_of.at(prim));
    Candidate c = make_candidate(whole.sub, nodes);
    c.signature = k.signature;
    whole.candidates.push_back(std::move(c));
    known.insert(k.signature);
  }
  if (whole.candidates.empty()) return outside;
  outside.segments.push_back(std::move(whole));
  const SegmentCandidates& segment = outside.segments.front();
  for (const Candidate& c : segment.candidates)
    outside.unique.push_back(UniqueCandidate{0, &segment.sub, &c});
  return outside;
}

SolvedPlan solve_on_demand(const PrimGraph& graph, Target& target, std::shared_ptr<ProfileDb> db,
                           const CompileOptions& options, OnDemandReport& report) {
  check_compilable(graph);
  const std::string device = target.device(*db);
  std::unique_ptr<CostModel> probe = target.lower_bound(*db, device);
  if (!probe)
    throw Error("target " + target.name() +
                " has no lower bounds of kernel costs: measure every candidate (kora profile "
                "without --on-demand)");
  report = OnDemandReport();
  report.used = true;
  report.bound = probe->describe();
  auto line = [&](const std::string& text) {
    if (options.progress) *options.progress << "kora compile: " << text << std::endl;
  };
  // The graph's candidates as the solver sees them: what the predictor learns from.
  // Every solve takes the segments' candidates enumerated here, again when a solve cut
  // segments it could not prove in halves (PartitionOptions::hard): the next solves cut
  // them at once, and the kernels of the halves are candidates the rounds can measure.
  CompileOptions solve_options = options;
  PartitionOptions& partition = solve_options.orchestration.partition;
  const CandidateOptions candidate_options =
      target.candidates(graph, options.orchestration.candidates);
  ModelCandidates candidates;
  std::map<uint64_t, const UniqueCandidate*> by_signature;
  auto enumerate = [&] {
    candidates = unique_candidates(graph, partition, candidate_options);
    by_signature.clear();
    for (const UniqueCandidate& u : candidates.unique) by_signature[u.candidate->signature] = &u;
  };
  enumerate();
  solve_options.orchestration.enumerated = &candidates;
  // Kernels not measured at what the measured ones predict; what implements each kernel
  // asked once per signature, not once per solve. The cache lives as long as the costs
  // that ask it: the returned plan's costs (SolvedPlan::costs) outlive this function.
  const auto implemented_by = std::make_shared<std::map<uint64_t, std::string>>();
  auto predicted = [&]() -> std::unique_ptr<CostModel> {
    std::unique_ptr<CostModel> typical = target.typical_cost(*db, device);
    if (!typical) return target.lower_bound(*db, device);
    auto p = std::make_unique<PredictedCost>(
        target.lower_bound(*db, device), std::move(typical), options.on_demand_caution,
        [&target, implemented_by](const PrimGraph& g, const KernelDag& d, const Candidate& c) {
          if (c.signature == 0) return target.implemented_by(g, d, c);  // not computed yet
          auto it = implemented_by->find(c.signature);
          if (it == implemented_by->end())
            it = implemented_by->emplace(c.signature, target.implemented_by(g, d, c)).first;
          return it->second;
        });
    // From the costs the solve compares the prediction with: a kernel's time inside running
    // plans where the check on the clock measured one, else alone.
    std::map<uint64_t, double> measured = db->fastest(device);
    for (const auto& [signature, schedules] : db->in_plan(device)) {
      const auto it = measured.find(signature);
      if (it == measured.end() || schedules.empty()) continue;
      it->second = schedules.begin()->second;  // the least of its schedules' in-plan times
      for (const auto& [schedule, ms] : schedules) it->second = std::min(it->second, ms);
    }
    p->learn(graph, candidates.unique, measured);
    return p;
  };
  // Kernels of the graph measured before (a recompile, or a model sharing them).
  const bool measured_before = [&] {
    const std::unique_ptr<ProfileDbCost> costs = target_costs(target, db);
    return std::any_of(
        candidates.unique.begin(), candidates.unique.end(),
        [&](const UniqueCandidate& u) { return costs->measured(u.candidate->signature); });
  }();
  // One solve, kernels not measured at their predicted cost or at their bound; the plan's
  // kernels not measured out.
  enum class Fallback { kPredicted, kBound, kExcluded };
  auto solve = [&](Fallback kind, std::set<uint64_t>& missing) {
    const auto start = std::chrono::steady_clock::now();
    const bool bound = kind == Fallback::kBound;
    std::unique_ptr<CostModel> fallback = bound ? target.lower_bound(*db, device)
                                          : kind == Fallback::kPredicted
                                              ? predicted()
                                              : std::make_unique<ExcludedCost>();
    SolvedPlan s;
    s.costs = target_costs(target, db, nullptr, std::move(fallback));
    std::map<uint64_t, double> unexplored;
    if (kind != Fallback::kExcluded)
      unexplored = target.unexplored_costs(graph, candidates, *db, device);
    if (bound) {  // what the rest may give is an estimate; the kernel's bound bounds it
      const std::unique_ptr<CostModel> lower = target.lower_bound(*db, device);
      for (auto& [signature, ms] : unexplored)
        if (const auto u = by_signature.find(signature); u != by_signature.end())
          ms = lower->cost_ms(graph, *u->second->sub, *u->second->candidate);
    }
    s.costs->offer_unexplored(unexplored);
    // Two solves need no proof: the first of a graph nothing of which is measured yet
    // (every kernel at its kind's typical cost, which ties many plans, so that CBC may need
    // seconds to prove a first guess of what to measure), and the bound solve when the
    // bound is only reported (the solver's own bound, plan cost less gap, bounds the
    // optimum as well). They get kQuickSeconds per segment, take their best plan unproven
    // and cut no segment; the other solves, at costs that tell kernels apart, decide which
    // segments are hard (and the next solves cut those at once).
    const bool quick = (kind == Fallback::kPredicted && report.rounds == 0 && !measured_before) ||
                       (bound && options.on_demand_gap < 0);
    CompileOptions quick_options;
    if (quick) {
      quick_options = solve_options;
      quick_options.orchestration.partition.split_after_seconds = 0;
      quick_options.orchestration.solve.time_limit_seconds =
          std::min(kQuickSeconds, quick_options.orchestration.solve.time_limit_seconds);
    }
    s.plan = orchestrate_for(graph, target, *s.costs, quick ? quick_options : solve_options);
    if (!bound && !s.plan.hard_segments.empty()) {
      partition.hard.insert(partition.hard.end(), s.plan.hard_segments.begin(),
                            s.plan.hard_segments.end());
      enumerate();
    }
    missing.clear();
    for (const ChosenKernel& k : s.plan.kernels)
      if (!s.costs->measured(k.signature) || unexplored.count(k.signature))
        missing.insert(k.signature);
    report.solve_seconds += seconds_since(start);
    ++report.rounds;
    return s;
  };
  // What the target computes once for the graph (the CPU's reference values), kept for
  // the next rounds.
  const auto scratch = std::make_shared<ProfileScratch>();
  // A job for a machine elsewhere is one round a user carries there and back: it holds
  // the kernels the lower-bound solve lacks too (those the proof would ask for next).
  const bool elsewhere = !target.measures_here() && target.measures_elsewhere();
  auto measure = [&](const std::set<uint64_t>& missing, const SolvedPlan& s, const char* what) {
    line("measure on demand, solve " + std::to_string(report.rounds) + ": " + what + " plan of " +
         std::to_string(s.plan.kernels.size()) + " kernels, " + fixed(s.plan.total_cost_ms, 3) +
         " ms with " + std::to_string(missing.size()) + " not measured (or not yet searched): " +
         (elsewhere ? "a job for them" : "measuring them"));
    const auto start = std::chrono::steady_clock::now();
    ProfileReport r = measure_candidates(graph, target, *db, solve_options, &missing,
                                         ScheduleSearch::kDeferred, scratch, &candidates);
    // Kernels no segment enumerates (a reshape the whole-graph pass moved): else asked for
    // in every round and never measured, the plan left with a typical cost.
    const ModelCandidates outside = plan_kernels_outside(graph, s.plan, missing, candidates);
    if (!outside.unique.empty() && !elsewhere) {
      const ProfileReport o = measure_candidates(graph, target, *db, solve_options, &missing,
                                                 ScheduleSearch::kDeferred, scratch, &outside);
      r.measured += o.measured;
      r.searched += o.searched;
      r.failed += o.failed;
    }
    report.profile_seconds += seconds_since(start);
    // Verbose (kora -v): each kernel the round measured, its predicted and measured cost.
    if (options.orchestration.progress && options.progress) {
      const std::unique_ptr<ProfileDbCost> now = target_costs(target, db);
      std::set<uint64_t> seen;
      for (const ChosenKernel& k : s.plan.kernels) {
        const auto u = by_signature.find(k.signature);
        if (!missing.count(k.signature) || !seen.insert(k.signature).second ||
            u == by_signature.end() || !now->measured(k.signature))
          continue;
        const double ms = now->cost_ms(graph, *u->second->sub, *u->second->candidate);
        std::string prims;
        for (int p : k.prims) prims += (prims.empty() ? "" : ", ") + graph.prims[p].name;
        line("  " + target.implemented_by(graph, *u->second->sub, *u->second->candidate) +
             " kernel predicted " + fixed(k.cost_ms, 4) + " ms, measured " + fixed(ms, 4) +
             " ms: " + (prims.size() > 160 ? prims.substr(0, 157) + "..." : prims));
      }
    }
    report.candidates = r.kernels;
    report.measured += r.measured;
    report.searched += r.searched;
    report.failed += r.failed;
    return r.measured + r.searched > 0;  // none of them can be measured here: stop, not loop
  };
  auto rounds_left = [&] { return report.rounds < options.on_demand_rounds; };

  // A plan's cost at the database's costs now, its layout reorders left out; < 0 when a
  // kernel of it is not measured (or not a candidate of these options).
  auto measured_cost = [&](const OrchestrationResult& plan) {
    const std::unique_ptr<ProfileDbCost> costs = target_costs(target, db);
    double ms = 0;
    for (const ChosenKernel& k : plan.kernels) {
      const auto u = by_signature.find(k.signature);
      if (u == by_signature.end() || !costs->measured(k.signature)) return -1.0;
      double c = -1;
      if (k.native) {  // in oneDNN's own layouts, or in the channels-last alternative
        const LayoutCost l = costs->layout_cost(graph, *u->second->sub, *u->second->candidate);
        bool channels_last = l.channels_last_ms >= 0;
        for (const auto& [t, layout] : l.channels_last_sides) {
          const auto stored = plan.layouts.find(t);
          channels_last = channels_last && stored != plan.layouts.end() && stored->second == layout;
        }
        c = channels_last ? l.channels_last_ms : l.native_ms;
      } else {
        c = costs->cost_ms(graph, *u->second->sub, *u->second->candidate);
      }
      if (c < 0) return -1.0;
      ms += c;
    }
    return ms;
  };
  const double tolerance = std::max(0.0, options.on_demand_tolerance);
  // The best plan whose kernels are all measured: solved at predicted costs, its kernels
  // measured, solved again, until it needs no more measuring or promises too little more
  // than the incumbent (then the best plan of measured kernels only).
  std::set<uint64_t> missing;
  // Kernels of the graph measured before (a recompile, or a model sharing them): the first
  // solve is compared with the plan of them whatever it promises.
  bool compared_anyway = measured_before;
  double incumbent_ms = -1;  // the last round's plan at the database's costs now
  auto settled = [&](const SolvedPlan& s) -> std::optional<SolvedPlan> {
    const bool close = incumbent_ms > 0 && s.plan.total_cost_ms >= (1 - tolerance) * incumbent_ms;
    if (!(close || std::exchange(compared_anyway, false)) || !rounds_left()) return std::nullopt;
    std::set<uint64_t> none;
    SolvedPlan m = solve(Fallback::kExcluded, none);
    if (!none.empty() || m.plan.total_cost_ms > s.plan.total_cost_ms / (1 - tolerance))
      return std::nullopt;
    ++report.settled;
    line("measure on demand, solve " + std::to_string(report.rounds) + ": the plan of measured " +
         "kernels costs " + fixed(m.plan.total_cost_ms, 3) + " ms, the predicted one " +
         fixed(s.plan.total_cost_ms, 3) + " ms: within " + fixed(100 * tolerance, 1) +
         "%, nothing more to measure");
    return m;
  };
  // Patience: the rounds in a row whose plan, once measured, cost no less than the
  // cheapest measured round plan so far by the tolerance. Each such round measured kernels
  // the predictions favoured and found them no better; after on_demand_patience of them
  // the best plan of measured kernels (no worse than any of those plans) is taken.
  double cheapest_ms = -1;
  int rounds_without_gain = 0;
  auto out_of_patience = [&]() -> std::optional<SolvedPlan> {
    if (incumbent_ms <= 0) return std::nullopt;  // a kernel of it could not be measured
    const bool gain = cheapest_ms < 0 || incumbent_ms < (1 - tolerance) * cheapest_ms;
    cheapest_ms = cheapest_ms < 0 ? incumbent_ms : std::min(cheapest_ms, incumbent_ms);
    rounds_without_gain = gain ? 0 : rounds_without_gain + 1;
    if (options.on_demand_patience <= 0 || rounds_without_gain < options.on_demand_patience ||
        !rounds_left())
      return std::nullopt;
    std::set<uint64_t> none;
    SolvedPlan m = solve(Fallback::kExcluded, none);
    if (!none.empty()) return std::nullopt;
    ++report.patience;
    line("measure on demand, solve " + std::to_string(report.rounds) + ": " +
         std::to_string(rounds_without_gain) + " rounds measured nothing that made the plan " +
         fixed(100 * tolerance, 1) + "% cheaper: the plan of measured kernels (" +
         fixed(m.plan.total_cost_ms, 3) + " ms) taken");
    return m;
  };
  auto measured_plan = [&]() {
    SolvedPlan s = solve(Fallback::kPredicted, missing);
    cheapest_ms = -1;
    rounds_without_gain = 0;
    while (!missing.empty() && rounds_left()) {
      if (std::optional<SolvedPlan> m = settled(s)) {
        missing.clear();
        return std::move(*m);
      }
      std::set<uint64_t> job = missing;
      if (elsewhere) {
        std::set<uint64_t> bound_lacks;
        solve(Fallback::kBound, bound_lacks);
        job.insert(bound_lacks.begin(), bound_lacks.end());
      }
      if (!measure(job, s, elsewhere ? "predicted and lower-bound" : "predicted")) return s;
      incumbent_ms = measured_cost(s.plan);
      if (std::optional<SolvedPlan> m = out_of_patience()) {
        missing.clear();
        return std::move(*m);
      }
      s = solve(Fallback::kPredicted, missing);
    }
    // Out of solves: the plan's kernels are measured all the same, and the best plan of
    // measured kernels (no worse than that plan) taken instead of it.
    if (!missing.empty() && measure(missing, s, "the last predicted"))
      s = solve(Fallback::kExcluded, missing);
    return s;
  };
  // A recompile: the best plan of the kernels measured, when they compute the graph.
  SolvedPlan best;
  if (options.on_demand_recompile) best = solve(Fallback::kExcluded, missing);
  if (!options.on_demand_recompile || !missing.empty()) best = measured_plan();
  report.at_bound = static_cast<int64_t>(missing.size());
  report.hard_segments = partition.hard;
  // The bound solve proves how close the optimal strategy's plan is; the baselines' plans
  // are what they are.
  while (report.at_bound == 0 && options.strategy == "optimal" && rounds_left()) {
    // The lower bound of every plan: the solve with kernels not measured at their bounds
    // (the solver's own lower bound where it stopped short of proving its plan optimal).
    SolvedPlan lower = solve(Fallback::kBound, missing);
    report.cost_ms = best.plan.total_cost_ms;
    report.bound_ms = std::min(report.cost_ms, lower.plan.total_cost_ms - lower.plan.gap_ms);
    report.gap = report.cost_ms > 0 ? (report.cost_ms - report.bound_ms) / report.cost_ms : 0;
    if (missing.empty()) {  // the optimum of the full table: every kernel of it measured
      if (lower.plan.total_cost_ms <= best.plan.total_cost_ms) best = std::move(lower);
      report.cost_ms = best.plan.total_cost_ms;
      report.gap = report.cost_ms > 0 ? (report.cost_ms - report.bound_ms) / report.cost_ms : 0;
      break;
    }
    // A negative gap option: the bound solve says how close the plan is, nothing more.
    if (options.on_demand_gap < 0 || report.gap <= options.on_demand_gap || !rounds_left()) break;
    if (!measure(missing, lower, "lower-bound")) break;
    SolvedPlan again = measured_plan();
    report.at_bound = static_cast<int64_t>(missing.size());
    if (report.at_bound == 0 && again.plan.total_cost_ms < best.plan.total_cost_ms)
      best = std::move(again);
    report.at_bound = 0;
  }
  report.complete =
      report.at_bound == 0 && (options.on_demand_gap < 0 || report.gap <= options.on_demand_gap);
  line("measure on demand: " + std::to_string(report.rounds) + " solves, " +
       std::to_string(report.measured) + " kernels measured now" +
       (report.candidates ? " of " + std::to_string(report.candidates) + " candidates" : "") +
       (report.at_bound > 0
            ? "; " + std::to_string(report.at_bound) + " kernels of the plan not measured"
        : report.bound_ms <= 0
            ? "; the plan costs " + fixed(best.plan.total_cost_ms, 3) + " ms"
            : "; the plan costs " + fixed(report.cost_ms, 3) + " ms, every plan at least " +
                  fixed(report.bound_ms, 3) + " ms (within " + fixed(100 * report.gap, 1) +
                  "% of the optimum)"));
  return best;
}

}  // namespace kora
