// kora compile's check of the plan against the clock (src/driver/plan_check.h): the
// solver's plan and its rivals written, run in turn and timed; in-plan kernel times fed
// back as costs; re-solved while that changes the plan; the fastest on the clock emitted.
#include "driver/plan_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <tuple>

#include "base/interrupt.h"
#include "base/layout_map.h"
#include "base/text.h"
#include "driver/previous_plan.h"
#include "driver/stages.h"
#include "emit/artifact_backend.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/runtime.h"
#include "orchestrate/parallel_schedule.h"
#include "runtime/manifest.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

// The solves a re-solve of the check measures on demand with, at most.
constexpr int kCheckOnDemandRounds = 4;
// A plan of at least this many milliseconds is timed in fewer, shorter rounds.
constexpr double kLongPlanMs = 20;
// A plan this many times slower than the fastest when warmed up is not timed further.
constexpr double kFarSlower = 1.5;
// How much faster than the fastest so far a re-solved plan has to run for another round.
constexpr double kClearlyFaster = 0.02;
// The solution pool: the next-best plans considered (each the optimum with one segment's
// plan replaced by its runner-up), and how far above the optimum's cost one may be.
constexpr int kPoolSearch = 64;
constexpr double kPoolLeast = 0.01, kPoolMost = 0.10;

// A plan's identity: its kernels (primitive sets, native or not, step and threads of a
// parallel schedule), in any order.
std::vector<std::tuple<std::vector<int>, bool, int, int>> plan_key(
    const OrchestrationResult& plan) {
  std::vector<std::tuple<std::vector<int>, bool, int, int>> key;
  for (const ChosenKernel& k : plan.kernels) key.emplace_back(k.prims, k.native, k.step, k.threads);
  std::sort(key.begin(), key.end());
  return key;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One plan under check: its artifact, its session and what was measured.
struct Entry {
  PlanCheck check;
  OrchestrationResult plan;
  std::string dir;
  ArtifactSummary artifact;
  std::unique_ptr<Session> session;
  std::vector<double> kernel_ms;  // per kernel of the session, inside the running plan
  // Its latency over the fastest's when it was last timed in turn with others: comparable
  // across rounds, unlike the latencies themselves (the machine drifts between rounds).
  double relative = 0;
};

// The kernel of e's plan that ran most above its cost when the plan was chosen (at least
// 4x it), into e->check.outlier.
void find_outlier(Entry& e) {
  const std::vector<KernelInfo>& infos = e.session->kernel_infos();
  e.check.outlier.clear();
  e.check.outlier_ms = 0;
  size_t worst = infos.size();
  for (size_t i = 0; i < infos.size() && i < e.kernel_ms.size(); ++i) {
    const double cost = infos[i].predicted_ms, excess = e.kernel_ms[i] - cost;
    if (cost > 0 && e.kernel_ms[i] >= 4 * cost && excess > e.check.outlier_ms)
      worst = i, e.check.outlier_ms = excess;
  }
  if (worst == infos.size()) return;
  const KernelInfo& k = infos[worst];
  std::string prims = k.primitives;
  if (prims.size() > 60) prims = prims.substr(0, 57) + "...";
  e.check.outlier = "kernel " + std::to_string(worst) + " (" + k.impl + ": " + prims +
                    "): " + fixed(e.kernel_ms[worst], 3) + " ms in the plan against its cost of " +
                    fixed(k.predicted_ms, 3) + " ms (" +
                    fixed(e.kernel_ms[worst] / k.predicted_ms, 0) + "x)";
}

// Binds the check's random inputs (seeded: every plan sees the same) and runs once.
void run_on_random_inputs(Session& session) {
  std::mt19937_64 rng(0x636c6f636bull);
  std::map<std::string, Tensor> feeds;
  for (const TensorInfo& t : session.inputs())
    feeds[t.name] = random_tensor(t.dtype, t.shape, rng, 1);
  session.run(feeds);
}

// Writes the entry's artifact and loads it with random inputs bound (seeded: every plan
// sees the same), running it once. A failure is the entry's error.
void prepare(const PrimGraph& graph, Target& target, const ProfileDb& db, const std::string& device,
             const CompileOptions& options, Entry& e) {
  throw_if_interrupted("checking plans on the clock");
  e.artifact = target.write_artifact(graph, e.plan, &db, device, e.dir,
                                     TargetEmitOptions{nullptr, options.terminal});
  e.check.kernels = e.artifact.kernels;
  try {
    e.session = std::make_unique<Session>(e.dir);
    run_on_random_inputs(*e.session);
  } catch (const Error& err) {
    e.check.error = err.what();
    e.session.reset();
  }
}

// prepare() for a plan the check compares with the solver's: one that cannot be written or
// run here is left out with its error, not fatal to the compile.
void prepare_rival(const PrimGraph& graph, Target& target, const ProfileDb& db,
                   const std::string& device, const CompileOptions& options, Entry& e) {
  try {
    prepare(graph, target, db, device, options, e);
  } catch (const Error& err) {
    e.check.error = err.what();
  }
}

// The entries' latencies, measured in turn: warm-up, then rounds in which every plan runs
// a burst (about two seconds in all; a plan far slower than the fastest at warm-up keeps
// its warm-up time); then each kernel's time inside its plan.
void time_in_turn(const std::vector<Entry*>& entries, double budget_ms = 2000,
                  bool kernels = true) {
  std::vector<Entry*> live;
  for (Entry* e : entries)
    if (e->session) live.push_back(e);
  if (live.empty()) return;
  std::map<Entry*, std::vector<double>> samples;
  std::map<Entry*, double> warm_ms;
  for (Entry* e : live) {
    std::vector<double> warm;
    try {
      for (int i = 0; i < 3; ++i) warm.push_back(e->session->plan_ms());
    } catch (const Error& err) {
      e->check.error = err.what();
      e->session.reset();
      continue;
    }
    warm_ms[e] = median(warm);
  }
  live.erase(std::remove_if(live.begin(), live.end(), [](Entry* e) { return !e->session; }),
             live.end());
  if (live.empty()) return;
  // A plan that warmed up far slower than the fastest cannot win: its warm-up is its time.
  double least_ms = warm_ms[live[0]];
  for (Entry* e : live) least_ms = std::min(least_ms, warm_ms[e]);
  std::vector<Entry*> timed;
  double round_ms = 0;
  for (Entry* e : live)
    if (warm_ms[e] > kFarSlower * least_ms) {
      samples[e] = {warm_ms[e]};
    } else {
      timed.push_back(e);
      round_ms += warm_ms[e];
    }
  // Each round runs a plan in a burst, its first run untimed, so that it finds its own data
  // in the caches as a deployed model does, not the previous plan's. Plans of tens of
  // milliseconds stream their data from memory whatever ran before: two runs, both timed,
  // and three rounds at least.
  const bool long_plans = least_ms >= kLongPlanMs;
  const int burst = long_plans ? 2 : 4, untimed = long_plans ? 0 : 1;
  const int rounds = std::clamp(static_cast<int>(budget_ms / std::max(burst * round_ms, 1e-3)),
                                long_plans ? 3 : 5, 100);
  for (int r = 0; r < rounds; ++r, throw_if_interrupted("checking plans on the clock"))
    for (Entry* e : timed)
      for (int i = 0; i < burst; ++i) {
        const double ms = e->session->plan_ms();
        if (i >= untimed) samples[e].push_back(ms);
      }
  double fastest_ms = 0;
  for (Entry* e : live) {
    e->check.measured_ms = median(samples[e]);
    if (e->check.measured_ms > 0 && (fastest_ms == 0 || e->check.measured_ms < fastest_ms))
      fastest_ms = e->check.measured_ms;
  }
  for (Entry* e : live) {
    if (fastest_ms > 0) e->relative = e->check.measured_ms / fastest_ms;
    if (!kernels) continue;
    const int iters = std::clamp(static_cast<int>(500 / std::max(e->check.measured_ms, 1e-3)),
                                 e->check.measured_ms >= kLongPlanMs ? 3 : 5, 30);
    e->kernel_ms = e->session->profile_kernels(iters);
    e->check.in_plan_ms = 0;
    for (double ms : e->kernel_ms) e->check.in_plan_ms += ms;
    find_outlier(*e);
  }
}

// Each kernel's time inside the plans measured (the mean where several ran it) into the
// database: on plain tensors, or run natively in blocked layouts (the native cost). A
// generated kernel on blocked tensors (which may be padded) is left out.
void feed_back(const std::vector<Entry*>& entries, ProfileDb& db, const std::string& device) {
  // (native, signature, schedule) -> (sum, count)
  std::map<std::tuple<bool, uint64_t, std::string>, std::pair<double, int>> sums;
  for (const Entry* e : entries) {
    if (!e->session || e->kernel_ms.empty()) continue;
    const std::vector<KernelInfo>& infos = e->session->kernel_infos();
    for (size_t i = 0; i < infos.size() && i < e->kernel_ms.size(); ++i) {
      if (infos[i].signature.empty() || (infos[i].blocked && !infos[i].native)) continue;
      const uint64_t signature = std::strtoull(infos[i].signature.c_str(), nullptr, 16);
      // The schedule as the database names it (a bf16 kernel's without its suffix).
      std::string schedule = infos[i].schedule;
      if (has_bf16_suffix(schedule)) schedule.resize(schedule.size() - (sizeof(kBf16) - 1));
      // A schedule never measured alone ran as whatever the writer chose without
      // measurements (a baseline's kernel, measured on demand): its in-plan time is not
      // what the kernel costs at best, and the cost model would not take it.
      const std::vector<ProfileRecord> records = db.records(device, signature);
      if (std::none_of(records.begin(), records.end(),
                       [&](const ProfileRecord& r) { return !r.failed && r.schedule == schedule; }))
        continue;
      auto& [sum, n] = sums[{infos[i].native, signature, schedule}];
      sum += e->kernel_ms[i];
      ++n;
    }
  }
  for (const bool native : {false, true}) {
    ProfileDb::ScheduleTimes ms;
    for (const auto& [key, s] : sums)
      if (std::get<0>(key) == native) ms[std::get<1>(key)][std::get<2>(key)] = s.first / s.second;
    if (!ms.empty()) db.put_in_plan(device, ms, static_cast<int64_t>(entries.size()), native);
  }
  // The time a running plan spends between its kernels, per kernel.
  std::vector<double> overheads;
  for (const Entry* e : entries)
    if (e->session && e->check.measured_ms > 0 && e->check.kernels > 0)
      overheads.push_back(std::max(0.0, e->check.measured_ms - e->check.in_plan_ms) /
                          static_cast<double>(e->check.kernels));
  // The least over the plans: where the time between kernels is not per kernel (a plan of
  // few large kernels), a larger value would overcharge plans of many small ones.
  if (!overheads.empty())
    db.put_kernel_overhead(device, *std::min_element(overheads.begin(), overheads.end()));
}

void report(const CompileOptions& options, const std::string& what,
            const std::vector<Entry*>& entries) {
  if (!options.progress) return;
  std::string line;
  for (const Entry* e : entries) {
    line += (line.empty() ? "" : ", ") + e->check.label + " ";
    line += e->check.error.empty() ? fixed(e->check.measured_ms, 3) + " ms" : "not run";
  }
  *options.progress << "kora compile: " << what << ": " << line << std::endl;
  for (const Entry* e : entries)
    if (!e->check.error.empty())
      *options.progress << "kora compile: note: " << e->check.label
                        << " could not be run here: " << e->check.error << std::endl;
}

// What pairing the entry's kernels needs: each kernel's in-plan time on all threads (from
// time_in_turn) and on half of them (measured here), and the generated function it calls.
// threads 0: nothing to pair (one thread, or the kernels not timed).
PairCosts pair_costs(const Entry& e) {
  PairCosts costs;
  costs.threads = e.session->threads();
  if (costs.threads < 2 || e.kernel_ms.size() != e.plan.kernels.size()) {
    costs.threads = 0;
    return costs;
  }
  costs.all_ms = e.kernel_ms;
  Session half(e.dir, SessionOptions{costs.threads / 2});
  run_on_random_inputs(half);
  costs.half_ms = half.profile_kernels(20);
  const Manifest m = read_artifact_manifest(e.dir);
  for (const ManifestKernel& k : m.kernels)
    costs.function.push_back(k.impl == "generated" ? std::to_string(k.library) + ":" + k.symbol
                                                   : "");
  return costs;
}

// The pairs of a timed parallel schedule that ran slower together than one after the
// other (the slower of the two inside the running plan against both on all threads).
std::set<std::pair<size_t, size_t>> lost_pairs(const ParallelSchedule& s, const Entry& e,
                                               const PairCosts& costs) {
  std::set<std::pair<size_t, size_t>> lost;
  const auto& k = s.plan.kernels;
  if (e.kernel_ms.size() != k.size()) return lost;
  for (size_t i = 0; i + 1 < k.size(); ++i)
    if (k[i].step == k[i + 1].step) {
      const size_t a = std::min(s.from[i], s.from[i + 1]), b = std::max(s.from[i], s.from[i + 1]);
      if (std::max(e.kernel_ms[i], e.kernel_ms[i + 1]) >= costs.all_ms[a] + costs.all_ms[b])
        lost.insert({a, b});
    }
  return lost;
}

}  // namespace

PlanCheckResult check_plans_on_the_clock(const PrimGraph& graph, Target& target,
                                         std::shared_ptr<ProfileDb> db, const std::string& device,
                                         const OrchestrationResult& first, const std::string& dir,
                                         const CompileOptions& options) {
  std::vector<std::unique_ptr<Entry>> entries;
  auto add = [&](const std::string& label, OrchestrationResult plan) -> Entry* {
    for (const auto& e : entries)
      if (plan_key(e->plan) == plan_key(plan)) return nullptr;
    auto e = std::make_unique<Entry>();
    e->check.label = label;
    e->check.predicted_ms = plan.total_cost_ms;
    e->plan = std::move(plan);
    e->dir = dir + ".plan-" + std::to_string(entries.size());
    entries.push_back(std::move(e));
    return entries.back().get();
  };
  auto cleanup = [&](const Entry* keep) {
    std::error_code ec;
    for (const auto& e : entries)
      if (e.get() != keep) fs::remove_all(e->dir, ec);
  };
  // The optimal plan at the costs the database holds now: measured on demand where the
  // first was (its kernels measured first), else at the target's costs.
  // Measuring on demand here takes a few solves at most: the clock judges the plan, and
  // kernels it holds that are still not measured run as the writer chooses them.
  auto solve_again = [&](CompileOptions o) {
    if (o.on_demand && target.lower_bound(*db, device)) {
      OnDemandReport again;
      o.on_demand_rounds = std::min(o.on_demand_rounds, kCheckOnDemandRounds);
      return solve_on_demand(graph, target, db, o, again).plan;
    }
    const std::unique_ptr<ProfileDbCost> costs = target_costs(target, db);
    return orchestrate_for(graph, target, *costs, o);
  };
  try {
    // Round 1: the solver's plan and, for the optimal strategy, the baselines.
    std::vector<Entry*> batch{add(first.strategy, first)};
    prepare(graph, target, *db, device, options, *batch[0]);  // its failure is compile's
    if (first.strategy == "optimal") {
      for (const char* baseline : {"greedy", "unfused"}) {
        CompileOptions o = options;
        o.strategy = baseline;
        const std::unique_ptr<ProfileDbCost> costs = target_costs(target, db);
        Entry* e = add(baseline, orchestrate_for(graph, target, *costs, o));
        if (!e) continue;  // the same plan as one measured
        prepare_rival(graph, target, *db, device, options, *e);
        batch.push_back(e);
      }
      // The solution pool: the next-best plans at the same costs (of kernels measured, when
      // measuring on demand: the others run as whatever the writer picks), timed with the
      // rest, so that a plan the costs rank second can win on the clock. Only those the
      // costs put between kPoolLeast and kPoolMost above the optimum: closer ones (a kernel
      // swapped for its near twin) cannot be told apart on the clock, farther ones are
      // beyond the cost model's usual error.
      if (options.pool > 1) {
        CompileOptions o = options;
        o.orchestration.pool = kPoolSearch;
        const bool on_demand = o.on_demand && target.lower_bound(*db, device);
        const std::unique_ptr<ProfileDbCost> costs =
            on_demand ? target_costs(target, db, nullptr, std::make_unique<ExcludedCost>())
                      : target_costs(target, db);
        OrchestrationResult pool = orchestrate_for(graph, target, *costs, o);
        int added = 0;
        for (OrchestrationResult& next : pool.next_best) {
          const double above = next.total_cost_ms / std::max(pool.total_cost_ms, 1e-9) - 1;
          if (above > kPoolMost || added + 1 >= options.pool) break;
          if (above < kPoolLeast) continue;
          Entry* e = add("next best (+" + fixed(100 * above, 1) + "%)", std::move(next));
          if (!e) continue;
          ++added;
          prepare_rival(graph, target, *db, device, options, *e);
          batch.push_back(e);
        }
        if (added == 0 && options.progress)
          *options.progress << "kora compile: the solver's next-best plans (" +
                                   std::to_string(pool.next_best.size()) + ") are all within " +
                                   fixed(100 * kPoolLeast, 0) + "% of the optimum or beyond " +
                                   fixed(100 * kPoolMost, 0) + "%: none timed"
                            << std::endl;
      }
      // The plan the last compile of this graph emitted: timed with the rest, so that a
      // recompile is never slower on the clock than it (driver/previous_plan.h).
      if (std::optional<OrchestrationResult> previous = previous_emitted_plan(*db, device, graph))
        if (Entry* e = add("previous compile", std::move(*previous))) {
          prepare_rival(graph, target, *db, device, options, *e);
          batch.push_back(e);
        }
    }
    time_in_turn(batch);
    report(options, "check on the clock", batch);
    feed_back(batch, *db, device);

    // Later rounds: re-solved at the in-plan costs, timed in turn with the fastest so far.
    // After the final window only its plans are compared: the others' times are older,
    // from before the machine may have slowed down or sped up.
    std::vector<Entry*> finalists;
    auto fastest = [&]() -> Entry* {
      Entry* best = nullptr;
      for (const auto& e : entries)
        if (e->session && e->check.error.empty() && e->check.measured_ms > 0 &&
            (finalists.empty() ||
             std::find(finalists.begin(), finalists.end(), e.get()) != finalists.end()) &&
            (!best || e->check.measured_ms < best->check.measured_ms))
          best = e.get();
      return best;
    };
    for (int round = 2;
         first.strategy == "optimal" && fastest() && round <= options.verify_rounds + 1; ++round) {
      Entry* incumbent = fastest();
      CompileOptions o = options;
      o.strategy = "optimal";
      Entry* e = add("optimal (round " + std::to_string(round) + ")", solve_again(o));
      if (!e) break;  // the solver's answer is a plan already measured
      prepare_rival(graph, target, *db, device, options, *e);
      std::vector<Entry*> pair{incumbent, e};
      time_in_turn(pair);
      report(options, "check on the clock, round " + std::to_string(round), pair);
      feed_back(pair, *db, device);
      // A re-solved plan not clearly faster than the incumbent (by more than the noise of
      // two plans timed in turn): the costs fed back did not find a better one, and another
      // round is unlikely to (each costs a solve and an artifact).
      if (!e->session ||
          e->check.measured_ms >= (1 - kClearlyFaster) * incumbent->check.measured_ms)
        break;
    }

    // The parallel schedule of the fastest plan (options.schedule, cpu): its kernels timed
    // inside the running plan on half the threads too, paired where that saves time
    // (orchestrate/parallel_schedule.h), timed in turn with the serial plan. Its kernels'
    // times are not fed back: side by side they are not what each costs alone.
    // A second schedule follows without the pairs that ran slower together than apart.
    if (options.schedule == "parallel" && target.name() == "cpu")
      if (Entry* leader = fastest(); leader && leader->plan.kernels.front().step < 0) {
        PairCosts costs = pair_costs(*leader);
        for (int round = 1; round <= 2 && costs.threads >= 2; ++round) {
          const ParallelSchedule schedule = schedule_pairs(graph, leader->plan, costs);
          if (schedule.pairs == 0) break;
          Entry* e =
              add(round == 1 ? "parallel schedule" : "parallel schedule (round 2)", schedule.plan);
          if (!e) break;
          e->check.predicted_ms = schedule.predicted_ms;
          prepare_rival(graph, target, *db, device, options, *e);
          std::vector<Entry*> pair{leader, e};
          time_in_turn(pair);
          report(options,
                 "check on the clock, " + e->check.label + " (" + std::to_string(schedule.pairs) +
                     " pairs)",
                 pair);
          const auto lost = lost_pairs(schedule, *e, costs);
          if (lost.empty()) break;
          costs.forbidden.insert(lost.begin(), lost.end());
        }
      }

    // The decision: the plans within 10% of the fastest they were last timed with, timed in
    // turn once more in one window, so that drift between rounds does not decide.
    std::vector<Entry*> close;
    for (const auto& e : entries)
      if (e->session && e->check.error.empty() && e->check.measured_ms > 0 && e->relative <= 1.1)
        close.push_back(e.get());
    if (close.size() > 1) {
      time_in_turn(close, 3000, false);
      report(options, "check on the clock, final", close);
    }
    for (Entry* e : close) e->check.finalist = true;
    if (!close.empty()) finalists = std::move(close);

    PlanCheckResult result;
    Entry* best = fastest();
    if (!best) best = entries[0].get();  // nothing ran here: the solver's plan, unchecked
    for (size_t i = 0; i < entries.size(); ++i) {
      result.plans.push_back(entries[i]->check);
      if (entries[i].get() == best && best->session) result.emitted = static_cast<int>(i);
    }
    result.artifact = best->artifact;
    result.plan = best->plan;
    if (first.strategy == "optimal" && result.emitted >= 0)
      remember_emitted_plan(*db, device, graph, best->plan, best->check.measured_ms);
    for (auto& e : entries) e->session.reset();  // unload before moving
    cleanup(best);
    move_artifact_into_place(best->dir, dir);
    return result;
  } catch (...) {
    for (auto& e : entries) e->session.reset();
    cleanup(nullptr);
    throw;
  }
}

}  // namespace kora
