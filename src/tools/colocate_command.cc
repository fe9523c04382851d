// `kora colocate`: a latency-critical artifact under a request stream beside best-effort
// artifacts in a loop (include/kora/colocate.h); prints the four runs' latencies and
// throughputs as a table, or as JSON.
#include <CLI/CLI.hpp>
#include <iostream>

#include "kora/colocate.h"
#include "tools/commands.h"

namespace kora::cli {
namespace {

class ColocateCommand : public Command {
 public:
  explicit ColocateCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "colocate",
        "serve a latency-critical artifact (Poisson requests) beside best-effort artifacts in a "
        "loop: its p50/p99 latency and their throughput alone, naively together, and scheduled "
        "by kora (best-effort kernels admitted only while the request keeps its target)");
    cmd_->add_option("--lc", lc_, "the latency-critical artifact directory")->required();
    cmd_->add_option("--be", be_, "a best-effort artifact directory (repeat for several)")
        ->required();
    cmd_->add_option("--qps", o_.qps, "latency-critical requests per second (Poisson)")->required();
    cmd_->add_option("--target-ms", o_.target_ms, "the latency-critical p99 target in ms")
        ->required();
    cmd_->add_option("--seconds", o_.seconds, "length of each of the four runs (default 10)");
    cmd_->add_option("--seed", o_.seed, "seed of the arrivals and the inputs (default 1)");
    cmd_->add_option("--headroom", o_.headroom,
                     "the request's kernels left are predicted to take this times their cost "
                     "(default 1.2)");
    cmd_->add_option("--slowdown", o_.slowdown,
                     "how many times slower the latency-critical model runs beside best-effort "
                     "work, for the scheduler's rule (default: measured before the runs)");
    cmd_->add_option("--threads", o_.threads,
                     "threads of every session (default: each artifact's own)");
    cmd_->add_flag("--json", json_, "print the report as JSON");
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool) override {
    if (!json_) o_.progress = &std::cerr;
    const ColocateReport r = colocate(lc_, be_, o_);
    std::cout << (json_ ? colocate_report_json(r) + "\n" : format_colocate_report(r));
    return 0;
  }

 private:
  CLI::App* cmd_;
  std::string lc_;
  std::vector<std::string> be_;
  ColocateOptions o_;
  bool json_ = false;
};

}  // namespace

void add_colocate_command(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<ColocateCommand>(app));
}

}  // namespace kora::cli
