// The optimization's stages as `kora` subcommands (tools/commands.h): orchestrate (choose
// kernels at roofline, tabled or measured costs) and profile (measure the candidate kernels
// on a target into the profile database).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "kora/compile.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace kora::cli {
namespace {

class OrchestrateCommand : public Command {
 public:
  explicit OrchestrateCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "orchestrate", "choose the kernels that compute the model's primitive graph at least cost");
    add_model_options(cmd_, model_);
    cmd_->add_option("--strategy", strategy_,
                     "optimal (binary linear program, CBC), greedy (rule-based fusion) or "
                     "unfused (one kernel per primitive); default optimal")
        ->check(CLI::IsMember({"optimal", "greedy", "unfused"}));
    cmd_->add_option("--costs", costs_,
                     "measured kernel costs (JSON, by signature); kernels it lacks use the "
                     "roofline model");
    cmd_->add_option("--device", device_,
                     "device of the roofline cost model: cpu, a100, h100 (default cpu)");
    cmd_->add_option("--target", target_,
                     "cpu: costs measured on this machine, from the profile database (kernels "
                     "not measured yet use the roofline model); cuda: costs measured on a GPU "
                     "(kora profile --target cuda), among the kernels the cuda target computes")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    add_device_options(cmd_, target_options_);
    cmd_->add_option("--db", db_,
                     "profile database (default $KORA_PROFILE_DB, else "
                     "~/.cache/kora/profiles.db); implies --target cpu");
    add_candidate_options(cmd_, orchestration_, true);
    cmd_->add_flag("--json", json_, "print the result as JSON");
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool verbose) override {
    const PrimGraph g = load_primitives(model_, verbose);
    if (!costs_.empty() && (!target_.empty() || !db_.empty()))
      throw Error("--costs and --target/--db exclude each other");
    CompileOptions options;
    options.strategy = strategy_;
    options.orchestration = orchestration_;
    options.orchestration.progress = verbose;
    options.orchestration.progress_line = !verbose && ::isatty(2);  // one updating line
    OrchestrationResult result;
    if (!target_.empty() || !db_.empty()) {  // the target's measured costs
      const std::unique_ptr<Target> target =
          make_target(target_.empty() ? "cpu" : target_, target_options_);
      auto db = std::make_shared<const ProfileDb>(db_.empty() ? default_profile_db_path() : db_);
      const std::unique_ptr<ProfileDbCost> costs = target_costs(*target, db);
      result = orchestrate_for(g, *target, *costs, options);
    } else {
      std::unique_ptr<CostModel> costs = std::make_unique<RooflineCost>(device_params(device_));
      if (!costs_.empty()) costs = std::make_unique<MeasuredCostTable>(costs_, std::move(costs));
      OrchestrationOptions o = options.orchestration;
      o.strategy = strategy_;
      result = orchestrate(g, *costs, o);
    }
    std::cout << (json_ ? orchestration_json(g, result) : format_orchestration(g, result));
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  std::string costs_, strategy_ = "optimal", device_ = "cpu", target_, db_;
  TargetOptions target_options_;
  OrchestrationOptions orchestration_;
  bool json_ = false;
};

class ProfileCommand : public Command {
 public:
  explicit ProfileCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "profile",
        "generate, check and measure every candidate kernel of the model on this machine, "
        "storing the results in the profile database");
    add_model_options(cmd_, model_);
    cmd_->add_option("--target", target_,
                     "cpu (default) or cuda (generates and compiles the CUDA kernels with "
                     "NVRTC, no GPU needed; measuring them needs one)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    add_device_options(cmd_, t_);
    cmd_->add_option("--arch", t_.arch,
                     "GPU architecture of --target cuda (default: the GPU's here, else sm_80)")
        ->check(CLI::IsMember({"sm_80", "sm_86", "sm_89", "sm_90"}));
    cmd_->add_option("--job", t_.job_dir,
                     "--target cuda: the measuring job's directory (default: cuda-jobs/"
                     "MODEL-ARCH next to the database); without a GPU here, copy it to one, "
                     "run kora-cuda-worker DIR there and bring DIR/results.jsonl back");
    cmd_->add_flag("--no-measure", no_measure_,
                   "--target cuda: write the job only, even when a GPU is here");
    cmd_->add_option("--schedules", t_.schedules,
                     "--target cuda: measure the first N schedules of each generated kernel "
                     "(the default first); 0: all. Default: with a GPU here, every kernel's "
                     "default schedule, then all schedules of the kernels slower than "
                     "--tune-ms; without one, all")
        ->check(CLI::NonNegativeNumber);
    cmd_->add_option("--tune-ms", t_.tune_ms,
                     "--target cuda: the default schedule's time from which a kernel gets all "
                     "its schedules measured (default 0.01 ms)")
        ->check(CLI::NonNegativeNumber);
    add_db_option(cmd_, db_);
    add_candidate_options(cmd_, orchestration_, false);
    cmd_->add_flag("--exhaustive", t_.exhaustive,
                   "measure every schedule of every kernel (default: the default schedule of "
                   "each, then the others for kernels where the generated code is competitive)");
    cmd_->add_option("--search-seconds", t_.search_seconds,
                     "stop the schedule search after this many seconds of measuring (default "
                     "300; 0: no limit)");
    cmd_->add_flag("--suspect", t_.remeasure_suspect,
                   "measure again the kernels measured while other processes used the CPU "
                   "(stored as suspect)");
    add_on_demand_options(cmd_, all_, on_demand_options_);
    cmd_->add_flag("--json", json_, "print the summary as JSON");
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool verbose) override {
    const PrimGraph g = load_primitives(model_, verbose);
    t_.run_worker = !no_measure_;
    t_.new_gpu = true;  // --gpu TEXT --arch ARCH: the first job for a GPU not measured yet
    const std::unique_ptr<Target> target = make_target(target_, t_);
    auto db = std::make_shared<ProfileDb>(db_.empty() ? default_profile_db_path() : db_);
    CompileOptions options = on_demand_options_;
    options.orchestration = orchestration_;
    options.orchestration.progress = options.orchestration.progress || verbose;
    options.model_path = model_.model;
    options.progress = &std::cerr;
    options.terminal = ::isatty(2);
    // Measure on demand where the target measures here and has lower bounds (cpu; cuda
    // with the GPU here); for a GPU elsewhere (cuda --gpu), one round per job: the last
    // job's results brought back are stored, and the next job holds what the plan lacks.
    const bool elsewhere = !target->measures_here() && target->measures_elsewhere();
    const bool on_demand = !all_ && !t_.remeasure_suspect && (target->measures_here() || elsewhere);
    if (on_demand && elsewhere) {
      TargetProfileOptions m;
      m.candidates = orchestration_.candidates;
      m.partition = orchestration_.partition;
      m.model_path = model_.model;
      m.progress = &std::cerr;
      target->merge_results(g, *db, m);
    }
    if (on_demand && target->lower_bound(*db, target->device(*db))) {
      // kora profile measures on, past rounds that gave nothing (compile's patience): what
      // it leaves, a compile of the model does not measure again.
      options.on_demand_patience = 0;
      OnDemandReport r;
      const SolvedPlan solved = solve_on_demand(g, *target, db, options, r);
      if (json_) {
        std::cout << on_demand_json(r, solved.plan) << "\n";
      } else {
        std::cout << "database " << db->path() << "\n" << format_on_demand(r, solved.plan);
      }
      return 0;
    }
    const ProfileReport report = profile_for(g, *target, *db, options);
    if (json_)
      std::cout << report.json << "\n";
    else
      std::cout << "database " << db->path() << "\n" << report.text;
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  std::string target_ = "cpu", db_;
  TargetOptions t_;
  OrchestrationOptions orchestration_;
  bool no_measure_ = false, json_ = false, all_ = false;
  CompileOptions on_demand_options_;  // its on_demand_gap
};

}  // namespace

void add_pipeline_commands(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<OrchestrateCommand>(app));
  commands.push_back(std::make_unique<ProfileCommand>(app));
}

}  // namespace kora::cli
