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
// usage: kora_bench_bounds --db FULL.db [--threads N] MODEL.onnx [MODEL.onnx ...]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
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
  ProfileReport profile(const PrimGraph&, ProfileDb& db, const TargetProfileOptions& o) override {
    ProfileReport r;
    for (uint64_t signature : *o.only) {
      const std::vector<ProfileRecord> records = full_.records(device_, signature);
      if (records.empty()) continue;
      db.put(records);
      ++r.measured;
    }
    measured_ += r.measured;
    return r;
  }
  int64_t measured_ = 0;

 private:
  const ProfileDb& full_;
  std::string device_;
  MachinePeaks peaks_;
};

int run(int argc, char** argv) {
  std::string db_path, csv_path;
  bool replay = true;
  double gap = -1;
  int threads = 2;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--db" && i + 1 < argc)
      db_path = argv[++i];
    else if (a == "--csv" && i + 1 < argc)
      csv_path = argv[++i];
    else if (a == "--gap" && i + 1 < argc)
      gap = std::stod(argv[++i]);
    else if (a == "--no-replay")
      replay = false;
    else if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else
      models.push_back(a);
  }
  if (db_path.empty() || models.empty()) {
    std::cerr << "usage: kora_bench_bounds --db FULL.db [--threads N] MODEL.onnx ...\n";
    return 2;
  }
  TargetOptions t;
  t.threads = threads;
  ProfileDb full(db_path);
  CpuTarget cpu(t);
  const std::string device = cpu.device(full);
  const MachinePeaks peaks = cpu_peaks(full, device, threads);
  LowerBoundCost bound(peaks);
  std::cout << "device " << device << "\n" << bound.describe() << "\n";
  const std::map<uint64_t, double> measured = full.fastest(device);
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "model,signature,class,members,flops,bytes,measured_ms,bound_ms\n";
  }
  std::cout << "| model | candidates | measured | below bound | least measured/bound | median | "
               "solves | measured on demand | on demand / full | plan / optimum | proven gap |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n";
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
            << "," << b << "\n";
      }
      below += it->second < b;
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
    CompileOptions o;
    if (gap >= 0) o.on_demand_gap = gap;
    OnDemandReport r;
    const SolvedPlan on_demand = solve_on_demand(g, oracle, oracle_db, o, r);
    auto all_db = std::make_shared<ProfileDb>((tmp / "all.db").string());
    for (const UniqueCandidate& u : cands.unique) {
      const std::vector<ProfileRecord> records = full.records(device, u.candidate->signature);
      if (!records.empty()) all_db->put(records);
    }
    const std::unique_ptr<ProfileDbCost> all_costs = target_costs(cpu, all_db);
    const OrchestrationResult optimum = orchestrate_for(g, cpu, *all_costs, o);
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %s | %zu | %lld | %lld | %.3f | %.2f | %d | %lld | %.3f | %.4f | %.2f%%%s |\n",
                  std::filesystem::path(path).stem().c_str(), cands.unique.size(),
                  static_cast<long long>(have), static_cast<long long>(below),
                  ratios.empty() ? 0.0 : ratios.front().first,
                  ratios.empty() ? 0.0 : ratios[ratios.size() / 2].first, r.rounds,
                  static_cast<long long>(oracle.measured_),
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
