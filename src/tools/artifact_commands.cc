// The artifact's `kora` subcommands (tools/commands.h): compile (model -> artifact
// directory, through the library's compile(): a progress line per stage on stderr and the
// summary on stdout), run (an artifact on .npy or random inputs, optionally timed and
// profiled kernel by kernel), check (an artifact against onnxruntime) and report (an
// artifact's plan as one HTML page, through the library's write_plan_report). run and
// check load the artifact with the runtime only.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>

#include "base/text.h"
#include "frontend/qdq_fold.h"
#include "kora/check.h"
#include "kora/compile.h"
#include "kora/error.h"
#include "kora/frontend.h"
#include "kora/npy.h"
#include "kora/report.h"
#include "kora/runtime.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace kora::cli {
namespace {

// The session's inputs: those given as NAME=FILE.npy, the rest random (seeded): floats
// standard normal, integers and bools 0 or 1 (valid indices and masks for any model).
std::map<std::string, Tensor> session_inputs(const Session& session,
                                             const std::vector<std::string>& given, uint64_t seed) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& in : given) {
    // A bare FILE.npy binds the only input of a one-input model.
    if (in.find('=') == std::string::npos && session.inputs().size() == 1) {
      feeds[session.inputs()[0].name] = read_npy(in);
      continue;
    }
    auto [name, file] = split_binding(in, "--input");
    feeds[name] = read_npy(file);
  }
  std::mt19937_64 rng(seed);
  for (const TensorInfo& t : session.inputs())
    if (!feeds.count(t.name)) feeds[t.name] = random_tensor(t.dtype, t.shape, rng, 1);
  return feeds;
}

// `feeds` with every floating-point element negated (its sign bit flipped, in any float
// format); integers and bools as they are (indices stay valid).
std::map<std::string, Tensor> negated_floats(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : feeds) {
    Tensor t(value.dtype(), value.shape(), value.bytes(), value.nbytes());
    if (is_floating(t.dtype())) {
      const size_t size = dtype_size(t.dtype());
      for (size_t at = size - 1; at < t.nbytes(); at += size)
        t.mutable_bytes()[at] ^= std::byte{0x80};
    }
    out.emplace(name, std::move(t));
  }
  return out;
}

// The sorted samples' median and 90th percentile.
std::pair<double, double> median_p90(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  return {median, ms[std::min(n - 1, static_cast<size_t>(0.9 * static_cast<double>(n)))]};
}

class CompileCommand : public Command {
 public:
  explicit CompileCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "compile",
        "optimize the model for this machine and write a runnable artifact directory "
        "(profile, orchestrate, generate and compile kernels, plan memory)");
    add_model_options(cmd_, model_);
    cmd_->add_option("--target", target_,
                     "cpu (default) or cuda (cubins, cuBLAS, cuBLASLt and cuDNN, replayed as a "
                     "CUDA Graph; costs measured on the GPU here, else taken from the database: "
                     "see --gpu)")
        ->check(CLI::IsMember(target_names()));
    add_device_options(cmd_, t_);
    cmd_->add_option("--schedules", t_.schedules,
                     "--target cuda with a GPU here: measure the first N schedules of each "
                     "generated kernel; 0: all (default: every default schedule, then all "
                     "schedules of the kernels slower than 10 us)")
        ->check(CLI::NonNegativeNumber);
    cmd_->add_option("-o,--output", out_, "artifact directory to write")->required();
    cmd_->add_option("--strategy", options_.strategy,
                     "optimal (binary linear program), greedy (rule-based fusion) or unfused "
                     "(one kernel per primitive); default optimal")
        ->check(CLI::IsMember({"optimal", "greedy", "unfused"}));
    add_db_option(cmd_, options_.db);
    cmd_->add_flag("--no-measure", no_measure_,
                   "measure nothing: kernels the database lacks are costed by the roofline "
                   "model (fast, plans less good); the plan's kernels are still run once "
                   "against the interpreter, and what fails is not emitted (not with "
                   "--no-verify)");
    cmd_->add_flag("--no-verify", no_verify_,
                   "emit the solver's plan without checking it against the clock (default: the "
                   "optimal plan, the greedy and the unfused plans and re-solves at their "
                   "in-plan kernel times run end to end, and the fastest is emitted); with "
                   "--no-measure, without running its kernels against the interpreter either");
    cmd_->add_option("--schedule", options_.schedule,
                     "serial (default): one kernel after another, each on every thread; "
                     "parallel (cpu): independent kernels also tried in pairs, each on half "
                     "the threads, and that schedule emitted where it is faster on the clock")
        ->check(CLI::IsMember({"serial", "parallel"}));
    cmd_->add_option("--pool", options_.pool,
                     "the check on the clock also times the next-best plans the solver offers "
                     "(each the optimum with one segment's plan replaced by its runner-up), "
                     "pool - 1 of those 1-10% above the optimum's cost (default 1: none)")
        ->check(CLI::Range(1, 8));
    add_candidate_options(cmd_, options_.orchestration, true);
    add_on_demand_options(cmd_, all_, options_);
    cmd_->add_flag("--json", json_, "print the summary as JSON");
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool verbose) override {
    const std::unique_ptr<Target> target = make_target(target_, t_);
    options_.measure = !no_measure_;
    options_.verify = !no_verify_;
    options_.on_demand = !all_;
    options_.progress = &std::cerr;
    options_.terminal = ::isatty(2);
    options_.orchestration.progress = verbose;
    options_.orchestration.progress_line = !verbose && options_.terminal;
    const CompiledArtifact a =
        compile(model_.model, *target, out_, options_, import_options(model_, verbose));
    std::cout << (json_ ? compile_summary_json(a.summary) + "\n"
                        : format_compile_summary(a.summary));
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  std::string target_ = "cpu", out_;
  TargetOptions t_;
  CompileOptions options_;
  bool no_measure_ = false, no_verify_ = false, all_ = false, json_ = false;
};

// Options of run and check: the artifact, its inputs and threads.
struct SessionArgs {
  std::string dir;
  std::vector<std::string> inputs;
  int threads = 0;
  uint64_t seed = 0;

  void add(CLI::App* cmd, const char* input_help) {
    cmd->add_option("artifact", dir, "artifact directory (kora compile -o)")->required();
    cmd->add_option("--input", inputs, input_help);
    cmd->add_option("--threads", threads, "threads (default: as compiled)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--seed", seed, "seed of the random inputs (default 0)");
  }
  // Says on stderr when --threads asked for more threads than the machine has.
  void note_clamped(const Session& session) const {
    if (threads > session.threads())
      std::cerr << "kora: note: --threads " << threads << " is more than this machine's "
                << session.threads() << " hardware threads; using " << session.threads()
                << std::endl;
  }
};

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("run", "run a compiled artifact (random inputs unless given)");
    args_.add(cmd_, "an input's value, NAME=FILE.npy (just FILE.npy for a one-input model)");
    cmd_->add_option("--output-dir", output_dir_, "write one NAME.npy per output there");
    cmd_->add_option("--iters", iters_,
                     "time this many runs after a warm-up; prints median and p90 latency")
        ->check(CLI::NonNegativeNumber);
    cmd_->add_option("--profile", profile_,
                     "time each kernel inside the running plan (over --iters runs, default 20) "
                     "and print the N slowest (0: all) next to their predicted cost")
        ->check(CLI::NonNegativeNumber);
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool) override {
    Session session(args_.dir, SessionOptions{args_.threads});
    args_.note_clamped(session);
    const std::map<std::string, Tensor> outputs =
        session.run(session_inputs(session, args_.inputs, args_.seed));
    write_outputs(session, outputs);
    if (iters_ > 0) time_runs(session);
    if (profile_ >= 0) print_kernel_profile(session, iters_ > 0 ? iters_ : 20, profile_);
    return 0;
  }

 private:
  void write_outputs(const Session& session, const std::map<std::string, Tensor>& outputs) const {
    if (!output_dir_.empty()) std::filesystem::create_directories(output_dir_);
    for (const TensorInfo& t : session.outputs()) {
      std::cout << t.name << " " << dtype_name(t.dtype) << " " << shape_str(t.shape);
      if (!output_dir_.empty()) {
        const std::string path =
            (std::filesystem::path(output_dir_) / npy_file_name(t.name)).string();
        write_npy(path, outputs.at(t.name));
        std::cout << " -> " << path;
      }
      std::cout << "\n";
    }
  }

  // Median and p90 of --iters runs after a warm-up; on a GPU also the plan's own time.
  void time_runs(Session& session) const {
    const int warmup = std::max(3, iters_ / 10);
    for (int i = 0; i < warmup; ++i) session.run();
    std::vector<double> ms;
    for (int i = 0; i < iters_; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run();
      ms.push_back(seconds_since(t0) * 1e3);
    }
    const bool cuda = session.target() == "cuda";
    const auto [median, p90] = median_p90(ms);
    std::cout << "runs " << iters_ << " (after " << warmup << " warm-up), " << session.device()
              << "\n"
              << "median " << fixed(median, 3) << " ms"
              << (cuda ? " (with copies to and from the GPU)" : "") << "\n"
              << "p90 " << fixed(p90, 3) << " ms\n";
    if (!cuda) return;
    std::vector<double> gpu;  // the plan alone, timed by CUDA events
    for (int i = 0; i < iters_; ++i) gpu.push_back(session.plan_ms());
    const auto [gpu_median, gpu_p90] = median_p90(gpu);
    std::cout << "gpu median " << fixed(gpu_median, 3) << " ms (CUDA events, inputs on the GPU)\n"
              << "gpu p90 " << fixed(gpu_p90, 3) << " ms\n";
  }

  // Per kernel: time inside the running plan vs the cost measured alone when profiled.
  static void print_kernel_profile(Session& session, int iters, int show) {
    const std::vector<double> ms = session.profile_kernels(iters);
    const std::vector<KernelInfo>& infos = session.kernel_infos();
    std::vector<size_t> order(ms.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
    double in_plan = 0, predicted = 0;
    for (size_t i = 0; i < ms.size(); ++i) in_plan += ms[i], predicted += infos[i].predicted_ms;
    std::cout << "kernel profile (median of " << iters << " runs): in plan " << fixed(in_plan, 3)
              << " ms, predicted " << fixed(predicted, 3) << " ms" << std::endl;
    std::cout << "    #  impl         in plan ms  predicted ms  primitives" << std::endl;
    const size_t n = show > 0 ? std::min<size_t>(static_cast<size_t>(show), ms.size()) : ms.size();
    for (size_t r = 0; r < n; ++r) {
      const size_t i = order[r];
      char line[128];
      std::snprintf(line, sizeof line, "%5zu  %-11s %11.4f %13.4f  ", i, infos[i].impl.c_str(),
                    ms[i], infos[i].predicted_ms);
      std::string names = infos[i].primitives;
      if (names.size() > 70) names = names.substr(0, 67) + "...";
      std::cout << line << names << "\n";
    }
  }

  CLI::App* cmd_;
  SessionArgs args_;
  std::string output_dir_;
  int iters_ = 0, profile_ = -1;
};

class CheckCommand : public Command {
 public:
  explicit CheckCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "check", "run an artifact and onnxruntime on the same random inputs and compare");
    args_.add(cmd_, "an input's value, NAME=FILE.npy");
    cmd_->add_option("model", model_, "the ONNX model it was compiled from")->required();
    cmd_->add_option("--tolerance", tolerance_,
                     "largest relative L2 error of a float output accepted (default 1e-4; 2e-3 "
                     "for TF32 artifacts); integer and bool outputs must be equal");
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool) override {
    Session session(args_.dir, SessionOptions{args_.threads});
    args_.note_clamped(session);
    const std::map<std::string, Tensor> feeds = session_inputs(session, args_.inputs, args_.seed);
    // The run checked is the second, as a deployed artifact runs: a first on other inputs
    // leaves its values in the intermediates (a kernel reading one before it is written is
    // caught), and on a GPU the second is the CUDA graph's replay.
    session.run(negated_floats(feeds));
    const std::map<std::string, Tensor> ours = session.run(feeds);
    std::cout << "checked the second run (the first on other inputs), on " << session.device()
              << std::endl;
    const std::map<std::string, Tensor> reference =
        run_onnxruntime(model_, feeds, session.target() == "cuda" ? 0 : session.threads());
    double worst = 0;
    bool mismatched = false;
    for (const TensorInfo& t : session.outputs()) {
      auto it = reference.find(t.name);
      if (it == reference.end())
        throw Error("onnxruntime gives no output '" + t.name + "' for '" + model_ +
                    "' (is it the model the artifact was compiled from?)");
      std::cout << t.name << " " << dtype_name(t.dtype) << " " << shape_str(t.shape);
      if (is_floating(t.dtype)) {
        const double err = relative_l2(ours.at(t.name), it->second);
        worst = std::max(worst, err);
        std::cout << " rel_l2 " << general(err);
      } else {  // integers (a quantized model's) and bools: exactly
        const int64_t differ = count_mismatches(ours.at(t.name), it->second);
        mismatched = mismatched || differ > 0;
        std::cout << (differ ? " " + std::to_string(differ) + " of " +
                                   std::to_string(numel(t.shape)) + " elements differ"
                             : std::string(" exact"));
      }
      if (it->second.shape() != t.shape)
        std::cout << " (onnxruntime's shape " << shape_str(it->second.shape()) << ")";
      std::cout << "\n";
    }
    std::cout << "max_rel_l2 " << general(worst) << std::endl;
    double tolerance = tolerance_;
    if (cmd_->count("--tolerance") == 0 && tolerance_for(session.compiled_for()) > tolerance) {
      tolerance = tolerance_for(session.compiled_for());
      const bool bf16 = session.compiled_for().find(" bf16") != std::string::npos;
      std::cout << "tolerance " << tolerance
                << (bf16 ? " (bf16 library math)" : " (TF32 library math)") << std::endl;
    }
    if (cmd_->count("--tolerance") == 0 && kQdqTolerance > tolerance) {
      const std::string groups = float_groups();
      if (!groups.empty()) {
        tolerance = kQdqTolerance;
        std::cout << "tolerance " << tolerance << " (quantized " << groups
                  << " computed in float32, where onnxruntime runs its own integer kernels)"
                  << std::endl;
      }
    }
    return worst <= tolerance && !mismatched ? 0 : 1;
  }

 private:
  // The model's QDQ groups kora computes in float32, as "3 Mul, 3 Sigmoid"; empty when
  // there are none (or the model does not import as given).
  std::string float_groups() const {
    std::map<std::string, int> groups;
    try {
      groups = float_qdq_groups(import_onnx(model_, ImportOptions{}));
    } catch (const Error&) {
      return "";
    }
    std::string text;
    for (const auto& [op, n] : groups)
      text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + op;
    return text;
  }

  static std::string general(double v) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3g", v);
    return text;
  }

  CLI::App* cmd_;
  SessionArgs args_;
  std::string model_;
  double tolerance_ = 1e-4;
};

class ReportCommand : public Command {
 public:
  explicit ReportCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "report",
        "write an artifact's plan as one self-contained HTML page: the primitive graph with "
        "each kernel a group (laid out by Graphviz's dot), the totals next to greedy and "
        "unfused, where the time goes");
    cmd_->add_option("artifact", dir_, "artifact directory (kora compile -o)")->required();
    cmd_->add_option("-o,--output", out_, "HTML file to write (default: ARTIFACT.html)");
    cmd_->add_flag("--no-measure", no_measure_,
                   "do not run the artifact: show predicted kernel times only (default: each "
                   "kernel timed inside the running plan, random inputs)");
    cmd_->add_option("--iters", options_.iters, "runs for each kernel's median (default 20)")
        ->check(CLI::PositiveNumber);
    cmd_->add_option("--threads", options_.threads, "threads (default: as compiled)")
        ->check(CLI::PositiveNumber);
  }
  bool parsed() const override { return cmd_->parsed(); }

  int run(bool) override {
    options_.measure = !no_measure_;
    std::string out = out_;
    if (out.empty()) {
      std::string dir = dir_;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      out = dir + ".html";
    }
    write_plan_report(dir_, out, options_);
    std::cout << "kora report: " << out << std::endl;
    return 0;
  }

 private:
  CLI::App* cmd_;
  std::string dir_, out_;
  PlanReportOptions options_;
  bool no_measure_ = false;
};

}  // namespace

void add_artifact_commands(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<CompileCommand>(app));
  commands.push_back(std::make_unique<RunCommand>(app));
  commands.push_back(std::make_unique<CheckCommand>(app));
  commands.push_back(std::make_unique<ReportCommand>(app));
}

}  // namespace kora::cli
