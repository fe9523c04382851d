// The lower bounds of measure on demand, checked and simulated on profile databases that
// hold a full profile (`kora profile --all`): per model,
//   1. every unique candidate measured in the database against its lower bound
//      (LowerBoundCost at the database's machine peaks; src/cpu/machine_peaks.h): how many
//      fall below it (an invalid bound), the least and the median of measured / bound, the
//      worst kernels;
//   2. measure on demand replayed with the database as the oracle (a "measurement" copies
//      the kernel's records into an empty database): solves, kernels measured, and the
//      plan's cost against the optimum of the full table (equal when the bounds hold).
// Nothing is measured (but the machine's peaks, once, when the database lacks them).
// A kernel measured by the replay gets its records but generated code's other schedules,
// which come when a plan takes it at what they may give (the deferred schedule search;
// --no-defer: all at once, as when the search ran with the kernel).
// usage: kora_bench_bounds --db FULL.db [--threads N] [--bf16] [--device FINGERPRINT]
//          [--no-defer] [--caution C]
//          [--tolerance T] [--rounds N] [--gap G] [--explain] MODEL.onnx [MODEL.onnx ...]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cpu/machine_peaks.h"
#include "cpu/target.h"
#include "kora/compile.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

// The CPU target whose measurements are the full database's records.
class OracleTarget : public CpuTarget {
 public:
  OracleTarget(const TargetOptions& options, const ProfileDb& full, std::string device,
               MachinePeaks peaks)
      : CpuTarget(options), full_(full), device_(std::move(device)), peaks_(peaks) {}
  std::string device(const ProfileDb&) override { return device_; }
  std::unique_ptr<CostModel> lower_bound(ProfileDb&, const std::string&) override {
    return std::make_unique<LowerBoundCost>(peaks_);
  }
  std::unique_ptr<CostModel> typical_cost(ProfileDb&, const std::string&) override {
    return std::make_unique<LowerBoundCost>(peaks_, true);
  }
  // A kernel's records copied; with the search deferred, a kernel not known yet gets its
  // records but those of generated code's other schedules, which a later call copies (its
  // deferred search). The CPU target's unexplored_costs then sees what measuring saw.
  ProfileReport profile(const PrimGraph&, ProfileDb& db, const TargetProfileOptions& o) override {
    ProfileReport r;
    for (uint64_t signature : *o.only) {
      std::vector<ProfileRecord> records = full_.records(device_, signature);
      if (records.empty()) continue;
      const std::vector<ProfileRecord> had = db.records(device_, signature);
      records.erase(std::remove_if(records.begin(), records.end(),
                                   [&](const ProfileRecord& x) {
                                     if (o.defer_search && defer_ && had.empty())
                                       return x.schedule.rfind("gen:", 0) == 0 &&
                                              x.schedule != "gen:default";
                                     for (const ProfileRecord& y : had)
                                       if (y.schedule == x.schedule) return true;
                                     return false;
                                   }),
                    records.end());
      if (records.empty() && !had.empty()) {
        // The full profile did not search it (its search takes the slowest kernels only):
        // a failed record of another schedule says the search ran and found nothing.
        ProfileRecord none = had.front();
        none.schedule = "gen:oracle-unsearched";
        none.failed = true;
        none.error = "the full profile did not search this kernel";
        records.push_back(none);
      }
      if (records.empty()) continue;
      db.put(records);
      ++(had.empty() ? r.measured : r.searched);
    }
    measured_ += r.measured;
    searched_ += r.searched;
    return r;
  }
  int64_t measured_ = 0, searched_ = 0;
  bool defer_ = true;  // false: a kernel's every record at once (its search with it)

 private:
  const ProfileDb& full_;
  std::string device_;
  MachinePeaks peaks_;
};

// Prototype: a linear kernel costs at least `factor` times the sum of its linear members
// measured alone; else the roofline bound.
class ComponentBound : public CostModel {
 public:
  ComponentBound(std::map<uint64_t, double> singles, MachinePeaks peaks, double factor)
      : singles_(std::move(singles)), roof_(peaks), factor_(factor) {}
  double cost_ms(const PrimGraph& g, const KernelDag& dag, const Candidate& c) override {
    double b = roof_.cost_ms(g, dag, c), lin = 0;
    if (c.members.size() > 1)
      for (int v : c.members) {
        if (g.prims[dag.prim[v]].kind() != PrimKind::kLinear) continue;
        const auto it = singles_.find(canonical_signature(g, dag, make_candidate(dag, {v})));
        if (it != singles_.end()) lin += it->second;
      }
    return std::max(b, factor_ * lin);
  }
  std::string describe() const override { return "component bound"; }

 private:
  std::map<uint64_t, double> singles_;
  LowerBoundCost roof_;
  double factor_;
};

int run(int argc, char** argv) {
  std::string db_path, csv_path, components_path;
  bool replay = true, explain = false, defer = true;
  double gap = -1, component_factor = 0, caution = -1, tolerance = -1;
  int rounds = -1;
  int threads = 2;
  bool bf16 = false;
  std::string device_override;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--db" && i + 1 < argc)
      db_path = argv[++i];
    else if (a == "--csv" && i + 1 < argc)
      csv_path = argv[++i];
    else if (a == "--gap" && i + 1 < argc)
      gap = std::stod(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::stoi(argv[++i]);
    else if (a == "--caution" && i + 1 < argc)
      caution = std::stod(argv[++i]);
    else if (a == "--tolerance" && i + 1 < argc)
      tolerance = std::stod(argv[++i]);
    else if (a == "--components" && i + 1 < argc)
      components_path = argv[++i];
    else if (a == "--component-loop" && i + 1 < argc)
      component_factor = std::stod(argv[++i]);
    else if (a == "--no-defer")
      defer = false;
    else if (a == "--explain")
      explain = true;
    else if (a == "--no-replay")
      replay = false;
    else if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else if (a == "--bf16")
      bf16 = true;
    else if (a == "--device" && i + 1 < argc)
      device_override = argv[++i];
    else
      models.push_back(a);
  }
  if (db_path.empty() || models.empty()) {
    std::cerr << "usage: kora_bench_bounds --db FULL.db [--threads N] MODEL.onnx ...\n";
    return 2;
  }
  TargetOptions t;
  t.threads = threads;
  t.bf16 = bf16;
  ProfileDb full(db_path);
  CpuTarget cpu(t);
  // --device: the database's fingerprint to replay (one of an earlier kora's codegen: the
  // replay compares orchestrations on one table, whichever revision measured it).
  const std::string device = device_override.empty() ? cpu.device(full) : device_override;
  const MachinePeaks peaks = cpu_peaks(full, device, threads, bf16);
  LowerBoundCost bound(peaks);
  std::cout << "device " << device << "\n" << bound.describe() << "\n";
  const std::map<uint64_t, double> measured = full.fastest(device);
  // What the CSV's ops column names (the predictor's classes).
  const PredictedCost ops(std::make_unique<LowerBoundCost>(peaks),
                          std::make_unique<LowerBoundCost>(peaks, true));
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "model,signature,class,members,flops,bytes,measured_ms,bound_ms,ops\n";
  }
  std::cout << "| model | candidates | measured | below bound | least measured/bound | median | "
               "solves | measured on demand | searched | on demand / full | plan / optimum | "
               "proven gap |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "kora_bench_bounds";
  for (const std::string& path : models) {
    const PrimGraph g = import_model(path);
    const ModelCandidates cands = unique_candidates(g, {}, {});
    std::vector<std::pair<double, std::string>> ratios;  // measured / bound, kernel
    int64_t have = 0, below = 0;
    for (const UniqueCandidate& u : cands.unique) {
      const auto it = measured.find(u.candidate->signature);
      if (it == measured.end()) continue;
      ++have;
      const double b = bound.cost_ms(g, *u.sub, *u.candidate);
      std::string members;
      for (int v : u.candidate->members)
        members += (members.empty() ? "" : " ") + g.prims[u.sub->prim[v]].name;
      ratios.push_back({it->second / b, members});
      if (csv.is_open()) {
        const KernelWork w = kernel_work(g, *u.sub, *u.candidate);
        csv << std::filesystem::path(path).stem().string() << ","
            << signature_hex(u.candidate->signature) << "," << w.kind << ","
            << u.candidate->members.size() << "," << w.flops << "," << w.bytes << "," << it->second
            << "," << b << "," << ops.features(g, *u.sub, *u.candidate).ops << "\n";
      }
      below += it->second < b;
    }
    if (!components_path.empty()) {
      // Each measured kernel against its members measured alone.
      std::ofstream out(components_path, std::ios::app);
      int64_t singles = 0;
      for (const UniqueCandidate& u : cands.unique) singles += u.candidate->members.size() == 1;
      std::cerr << std::filesystem::path(path).stem().string() << ": " << cands.unique.size()
                << " unique candidates, " << singles << " single primitives\n";
      for (const UniqueCandidate& u : cands.unique) {
        const Candidate& c = *u.candidate;
        const auto it = measured.find(c.signature);
        if (it == measured.end() || c.members.size() < 2) continue;
        std::set<std::string> writes;
        for (const std::string& t : kernel_writes(g, *u.sub, c)) writes.insert(t);
        double max_single = 0, max_written = 0, sum_linear = 0, sum_all = 0;
        int missing = 0;
        bool linear = false;
        for (int v : c.members) {
          const Primitive& p = g.prims[u.sub->prim[v]];
          const auto s = measured.find(canonical_signature(g, *u.sub, make_candidate(*u.sub, {v})));
          if (s == measured.end()) {
            ++missing;
            continue;
          }
          bool written = false;
          for (const std::string& t : p.outputs) written = written || writes.count(t);
          max_single = std::max(max_single, s->second);
          if (written) max_written = std::max(max_written, s->second);
          sum_all += s->second;
          if (p.kind() == PrimKind::kLinear) sum_linear += s->second, linear = true;
        }
        const KernelWork w = kernel_work(g, *u.sub, c);
        out << std::filesystem::path(path).stem().string() << "," << signature_hex(c.signature)
            << "," << w.kind << "," << c.members.size() << "," << linear << "," << it->second << ","
            << bound.cost_ms(g, *u.sub, c) << "," << max_single << "," << max_written << ","
            << sum_linear << "," << sum_all << "," << missing << "\n";
      }
    }
    if (component_factor > 0) {
      std::filesystem::remove_all(tmp);
      std::filesystem::create_directories(tmp);
      auto db = std::make_shared<ProfileDb>((tmp / "oracle.db").string());
      OracleTarget oracle(t, full, device, peaks);
      CompileOptions o;
      std::set<uint64_t> singles;
      for (const UniqueCandidate& u : cands.unique)
        if (u.candidate->members.size() == 1) singles.insert(u.candidate->signature);
      TargetProfileOptions po;
      po.only = singles;
      oracle.profile(g, *db, po);
      int solves = 0;
      double cost = 0;
      for (; solves < 200; ++solves) {
        auto costs = target_costs(
            oracle, db, nullptr,
            std::make_unique<ComponentBound>(db->fastest(device), peaks, component_factor));
        const OrchestrationResult plan = orchestrate_for(g, oracle, *costs, o);
        std::set<uint64_t> missing;
        for (const ChosenKernel& k : plan.kernels)
          if (!costs->measured(k.signature)) missing.insert(k.signature);
        cost = plan.total_cost_ms;
        if (missing.empty()) break;
        po.only = missing;
        oracle.profile(g, *db, po);
      }
      auto all_db = std::make_shared<ProfileDb>((tmp / "all.db").string());
      for (const UniqueCandidate& u : cands.unique) {
        const std::vector<ProfileRecord> records = full.records(device, u.candidate->signature);
        if (!records.empty()) all_db->put(records);
      }
      const OrchestrationResult optimum =
          orchestrate_for(g, oracle, *target_costs(oracle, all_db), o);
      std::cout << std::filesystem::path(path).stem().string() << ": component bound "
                << component_factor << ": " << solves + 1 << " solves, " << oracle.measured_
                << " of " << have << " measured (" << singles.size() << " single), plan " << cost
                << " ms, optimum " << optimum.total_cost_ms << " ms" << std::endl;
      continue;
    }
    std::sort(ratios.begin(), ratios.end());
    if (!replay) {
      std::cout << std::filesystem::path(path).stem().string() << ": " << have << " measured, "
                << below << " below bound, least ratio "
                << (ratios.empty() ? 0.0 : ratios.front().first) << std::endl;
      continue;
    }
    // Measure on demand with the full database as the oracle, and the full table's optimum.
    std::filesystem::remove_all(tmp);
    std::filesystem::create_directories(tmp);
    auto oracle_db = std::make_shared<ProfileDb>((tmp / "oracle.db").string());
    OracleTarget oracle(t, full, device, peaks);
    oracle.defer_ = defer;
    CompileOptions o;
    if (gap >= 0) o.on_demand_gap = gap;
    if (caution >= 0) o.on_demand_caution = caution;
    if (tolerance >= 0) o.on_demand_tolerance = tolerance;
    if (rounds > 0) o.on_demand_rounds = rounds;
    OnDemandReport r;
    const SolvedPlan on_demand = solve_on_demand(g, oracle, oracle_db, o, r);
    auto all_db = std::make_shared<ProfileDb>((tmp / "all.db").string());
    for (const UniqueCandidate& u : cands.unique) {
      const std::vector<ProfileRecord> records = full.records(device, u.candidate->signature);
      if (!records.empty()) all_db->put(records);
    }
    const std::unique_ptr<ProfileDbCost> all_costs = target_costs(oracle, all_db);
    const OrchestrationResult optimum = orchestrate_for(g, oracle, *all_costs, o);
    if (explain) {
      // The optimum's kernels the loop never measured: what the predictor said of them.
      PredictedCost p(std::make_unique<LowerBoundCost>(peaks),
                      std::make_unique<LowerBoundCost>(peaks, true), o.on_demand_caution,
                      [&oracle](const PrimGraph& g, const KernelDag& d, const Candidate& c) {
                        return oracle.implemented_by(g, d, c);
                      });
      const std::map<uint64_t, double> known = oracle_db->fastest(device);
      p.learn(g, cands.unique, known);
      std::map<uint64_t, const UniqueCandidate*> by_signature;
      for (const UniqueCandidate& u : cands.unique) by_signature[u.candidate->signature] = &u;
      double lost = 0;
      for (const ChosenKernel& k : optimum.kernels) {
        if (known.count(k.signature) || !by_signature.count(k.signature)) continue;
        const UniqueCandidate& u = *by_signature[k.signature];
        const PredictedCost::Features f = p.features(g, *u.sub, *u.candidate);
        const double predicted = p.cost_ms(g, *u.sub, *u.candidate);
        lost += measured.at(k.signature);
        std::cerr << "  not measured: " << measured.at(k.signature) << " ms, predicted "
                  << predicted << ", bound " << f.bound_ms << ": " << f.ops << " ("
                  << u.candidate->members.size() << " members, " << f.implemented_by << ")\n";
      }
      std::cerr << "  optimum's kernels never measured: " << lost << " ms of "
                << optimum.total_cost_ms << "; optimum gap " << optimum.gap_ms << " ms, split "
                << optimum.segments_split << "; on demand's plan gap " << on_demand.plan.gap_ms
                << " ms, split " << on_demand.plan.segments_split << "\n";
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %s | %zu | %lld | %lld | %.3f | %.2f | %d | %lld | %lld | %.3f | %.4f | "
                  "%.2f%%%s |\n",
                  std::filesystem::path(path).stem().c_str(), cands.unique.size(),
                  static_cast<long long>(have), static_cast<long long>(below),
                  ratios.empty() ? 0.0 : ratios.front().first,
                  ratios.empty() ? 0.0 : ratios[ratios.size() / 2].first, r.rounds,
                  static_cast<long long>(oracle.measured_),
                  static_cast<long long>(oracle.searched_),
                  static_cast<double>(oracle.measured_) / static_cast<double>(have),
                  on_demand.plan.total_cost_ms / optimum.total_cost_ms, 100 * r.gap,
                  r.complete ? "" : " (incomplete)");
    std::cout << line;
    for (size_t i = 0; i < ratios.size() && i < 3 && ratios[i].first < 1.2; ++i)
      std::cerr << "  " << std::filesystem::path(path).stem().string() << ": measured/bound "
                << ratios[i].first << ": " << ratios[i].second.substr(0, 200) << "\n";
  }
  std::filesystem::remove_all(tmp);
  return 0;
}

}  // namespace
}  // namespace kora

int main(int argc, char** argv) {
  try {
    return kora::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kora_bench_bounds: " << e.what() << "\n";
    return 1;
  }
}
