// The `kora` command-line program. In: a subcommand and its options. Out: the stage's
// result on stdout; any kora::Error as one line on stderr with exit status 1.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "cpu/backend.h"
#include "cpu/profile.h"
#include "cuda/compile_kernels.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/profile_cuda.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/frontend.h"
#include "kora/inspect.h"
#include "kora/interpreter.h"
#include "kora/npy.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace cli = kora::cli;

int main(int argc, char** argv) {
  CLI::App app{"kora: optimal kernel orchestration for ONNX models"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "trace each pipeline stage on stderr");

  cli::ModelOptions inspect_model;
  bool inspect_json = false;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "print opset, inputs, outputs, operator histogram, parameters and FLOPs");
  cli::add_model_options(inspect, inspect_model);
  inspect->add_flag("--json", inspect_json, "print the report as JSON");

  cli::ModelOptions fission_model;
  bool fission_json = false, fission_dot = false;
  CLI::App* fission =
      app.add_subcommand("fission", "print the primitive graph the model's operators split into");
  cli::add_model_options(fission, fission_model);
  fission->add_flag("--json", fission_json, "print the primitive graph as JSON");
  fission->add_flag("--dot", fission_dot, "print the primitive graph as Graphviz dot");

  cli::ModelOptions interpret_model;
  std::vector<std::string> interpret_inputs;
  std::string interpret_out = ".";
  uint64_t interpret_seed = 0;
  CLI::App* interpret = app.add_subcommand(
      "interpret", "run the model's primitive graph with the reference interpreter");
  cli::add_model_options(interpret, interpret_model);
  interpret->add_option("--input", interpret_inputs,
                        "an input's value, NAME=FILE.npy (inputs not given are random)");
  interpret->add_option("--output-dir", interpret_out,
                        "where to write one NAME.npy per output (default: .)");
  interpret->add_option("--seed", interpret_seed, "seed of the random inputs (default 0)");

  cli::ModelOptions orch_model;
  std::string orch_costs, orch_strategy = "optimal", orch_device = "cpu", orch_target, orch_db,
                          orch_gpu;
  bool orch_tf32 = false;
  int orch_threads = 0;
  std::string orch_compiler;
  bool orch_json = false;
  kora::OrchestrationOptions orch;
  CLI::App* orchestrate = app.add_subcommand(
      "orchestrate", "choose the kernels that compute the model's primitive graph at least cost");
  cli::add_model_options(orchestrate, orch_model);
  orchestrate
      ->add_option("--strategy", orch_strategy,
                   "optimal (binary linear program, CBC), greedy (rule-based fusion) or "
                   "unfused (one kernel per primitive); default optimal")
      ->check(CLI::IsMember({"optimal", "greedy", "unfused"}));
  orchestrate->add_option("--costs", orch_costs,
                          "measured kernel costs (JSON, by signature); kernels it lacks use "
                          "the roofline model");
  orchestrate->add_option("--device", orch_device,
                          "device of the roofline cost model: cpu, a100, h100 (default cpu)");
  orchestrate
      ->add_option("--target", orch_target,
                   "cpu: costs measured on this machine, from the profile database (kernels "
                   "not measured yet use the roofline model); cuda: costs measured on a GPU "
                   "(kora profile --target cuda), among the kernels the cuda target computes")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  orchestrate->add_option("--gpu", orch_gpu,
                          "--target cuda: the GPU whose fingerprint in the database contains "
                          "TEXT (default: the GPU here, else the database's only one)");
  orchestrate->add_flag("--tf32", orch_tf32,
                        "--target cuda: costs measured with TF32 library math (kora profile "
                        "--tf32)");
  orchestrate->add_option("--db", orch_db,
                          "profile database (default $KORA_PROFILE_DB, else "
                          "~/.cache/kora/profiles.db); implies --target cpu");
  orchestrate->add_option("--threads", orch_threads,
                          "thread count the measurements were taken with (default: all cores)");
  orchestrate->add_option("--compiler", orch_compiler,
                          "compiler the measurements were taken with (default g++)");
  orchestrate->add_option("--time-limit", orch.solve.time_limit_seconds,
                          "solver time limit per segment in seconds (default 60); when hit, "
                          "the remaining gap is reported");
  orchestrate->add_option("--max-kernel-size", orch.candidates.max_size,
                          "most primitives in one candidate kernel (default 16)");
  orchestrate->add_option("--max-segment", orch.partition.max_size,
                          "most primitives in one segment of the partition (default 100)");
  orchestrate->add_flag("--json", orch_json, "print the result as JSON");

  cli::ModelOptions prof_model;
  std::string prof_target = "cpu", prof_db, prof_arch, prof_job;
  bool prof_no_measure = false;
  int prof_schedules = -1;
  double prof_tune_ms = kora::CudaProfileOptions().tune_ms;
  bool prof_tf32 = false;
  std::string prof_gpu;
  kora::ProfileOptions prof;
  bool prof_json = false;
  CLI::App* profile = app.add_subcommand(
      "profile",
      "generate, check and measure every candidate kernel of the model on this machine, "
      "storing the results in the profile database");
  cli::add_model_options(profile, prof_model);
  profile
      ->add_option("--target", prof_target,
                   "cpu (default) or cuda (generates and compiles the CUDA kernels with NVRTC, "
                   "no GPU needed; measuring them needs one)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  profile
      ->add_option("--arch", prof_arch,
                   "GPU architecture of --target cuda (default: the GPU's here, else sm_80)")
      ->check(CLI::IsMember({"sm_80", "sm_86", "sm_89", "sm_90"}));
  profile->add_option("--job", prof_job,
                      "--target cuda: the measuring job's directory (default: cuda-jobs/"
                      "MODEL-ARCH next to the database); without a GPU here, copy it to one, "
                      "run kora-cuda-worker DIR there and bring DIR/results.jsonl back");
  profile->add_flag("--no-measure", prof_no_measure,
                    "--target cuda: write the job only, even when a GPU is here");
  profile
      ->add_option("--schedules", prof_schedules,
                   "--target cuda: measure the first N schedules of each generated kernel (the "
                   "default first); 0: all. Default: with a GPU here, every kernel's default "
                   "schedule, then all schedules of the kernels slower than --tune-ms; without "
                   "one, all")
      ->check(CLI::NonNegativeNumber);
  profile
      ->add_option("--tune-ms", prof_tune_ms,
                   "--target cuda: the default schedule's time from which a kernel gets all "
                   "its schedules measured (default 0.01 ms)")
      ->check(CLI::NonNegativeNumber);
  profile->add_option("--gpu", prof_gpu,
                      "--target cuda without a GPU here: the job is for the GPU whose "
                      "fingerprint in the database contains TEXT (its architecture; kernels "
                      "measured on it left out)");
  profile->add_flag(
      "--tf32", prof_tf32,
      "--target cuda: cuBLAS, cuBLASLt and cuDNN with TF32 tensor-core math (faster, about "
      "1e-3 relative error; stored apart from full float32 measurements)");
  profile->add_option("--db", prof_db,
                      "profile database (default $KORA_PROFILE_DB, else "
                      "~/.cache/kora/profiles.db)");
  profile->add_option("--threads", prof.threads, "threads per kernel (default: all cores)")
      ->check(CLI::PositiveNumber);
  profile->add_option("--max-kernel-size", prof.candidates.max_size,
                      "most primitives in one candidate kernel (default 16; as orchestrate)");
  profile->add_option("--max-segment", prof.partition.max_size,
                      "most primitives in one segment (default 100; as orchestrate)");
  profile->add_option("--compiler", prof.compile.compiler,
                      "C++ compiler of the generated kernels (default g++); part of the "
                      "device fingerprint");
  profile->add_flag("--exhaustive", prof.exhaustive,
                    "measure every schedule of every kernel (default: the default schedule "
                    "of each, then the others for kernels where the generated code is "
                    "competitive)");
  profile->add_option("--search-seconds", prof.search_max_seconds,
                      "stop the schedule search after this many seconds of measuring (default "
                      "300; 0: no limit)");
  profile->add_flag("--json", prof_json, "print the summary as JSON");

  CLI::App* operators =
      app.add_subcommand("operators", "list the ONNX operators kora supports, one per line");

  cli::ArtifactCommands artifact_commands(app);

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect->parsed()) {
      const kora::Graph g = cli::load_model(inspect_model, verbose);
      const kora::InspectReport report = kora::inspect_graph(g);
      std::cout << (inspect_json ? kora::report_json(report) + "\n" : kora::format_report(report));
    } else if (fission->parsed()) {
      kora::FissionOptions options;
      if (verbose) options.trace = &std::cerr;
      const kora::PrimGraph g = kora::fission(cli::load_model(fission_model, verbose), options);
      std::cout << (fission_json  ? kora::prim_graph_json(g) + "\n"
                    : fission_dot ? kora::prim_graph_dot(g)
                                  : kora::format_prim_graph(g));
    } else if (interpret->parsed()) {
      kora::FissionOptions options;
      if (verbose) options.trace = &std::cerr;
      const kora::PrimGraph g = kora::fission(cli::load_model(interpret_model, verbose), options);
      std::map<std::string, kora::Tensor> feeds;
      for (const std::string& in : interpret_inputs) {
        auto [name, file] = cli::split_binding(in, "--input");
        feeds[name] = kora::read_npy(file);
      }
      std::mt19937_64 rng(interpret_seed);
      for (const std::string& name : g.inputs)
        if (!feeds.count(name))
          feeds[name] = kora::random_tensor(g.value(name).dtype, g.value(name).shape, rng);
      const std::map<std::string, kora::Tensor> outputs = kora::interpret(g, feeds);
      std::filesystem::create_directories(interpret_out);
      for (const std::string& name : g.outputs) {
        const std::string path =
            (std::filesystem::path(interpret_out) / cli::npy_file_name(name)).string();
        kora::write_npy(path, outputs.at(name));
        std::cout << name << " " << kora::dtype_name(outputs.at(name).dtype()) << " "
                  << kora::shape_str(outputs.at(name).shape()) << " -> " << path << "\n";
      }
    } else if (orchestrate->parsed()) {
      kora::FissionOptions options;
      if (verbose) options.trace = &std::cerr;
      const kora::PrimGraph g = kora::fission(cli::load_model(orch_model, verbose), options);
      if (!orch_costs.empty() && (!orch_target.empty() || !orch_db.empty()))
        throw kora::Error("--costs and --target/--db exclude each other");
      std::unique_ptr<kora::CostModel> costs =
          std::make_unique<kora::RooflineCost>(kora::device_params(orch_device));
      if (!orch_costs.empty())
        costs = std::make_unique<kora::MeasuredCostTable>(orch_costs, std::move(costs));
      if (!orch_target.empty() || !orch_db.empty()) {
        const int threads =
            orch_threads > 0 ? orch_threads : static_cast<int>(std::thread::hardware_concurrency());
        auto db = std::make_shared<const kora::ProfileDb>(
            orch_db.empty() ? kora::default_profile_db_path() : orch_db);
        if (orch_target == "cuda") {
          orch.candidates = kora::cuda_candidate_options(g, orch.candidates);
          auto cuda = std::make_unique<kora::ProfileDbCost>(
              db, kora::cuda_target_device(*db, orch_gpu, nullptr, orch_tf32),
              std::make_unique<kora::RooflineCost>(kora::device_params("h100")));
          cuda->penalize_failed(kora::kCudaFailedKernelMs);
          costs = std::move(cuda);
        } else {
          costs = std::make_unique<kora::ProfileDbCost>(
              db, kora::cpu_backend_fingerprint(threads, orch_compiler), std::move(costs));
        }
      }
      orch.strategy = orch_strategy;
      orch.partition.min_size = std::min(orch.partition.min_size, orch.partition.max_size);
      orch.progress = verbose;
      orch.progress_line = !verbose && ::isatty(2);  // a terminal: one updating line
      const kora::OrchestrationResult result = kora::orchestrate(g, *costs, orch);
      std::cout << (orch_json ? kora::orchestration_json(g, result)
                              : kora::format_orchestration(g, result));
    } else if (profile->parsed()) {
      kora::FissionOptions options;
      if (verbose) options.trace = &std::cerr;
      const kora::PrimGraph g = kora::fission(cli::load_model(prof_model, verbose), options);
      kora::ProfileDb db(prof_db.empty() ? kora::default_profile_db_path() : prof_db);
      if (prof_target == "cuda") {
        kora::CudaProfileOptions cuda;
        cuda.kernels.arch = prof_arch;
        if (!prof_gpu.empty()) {  // a GPU elsewhere, measured before: what it lacks
          std::string arch;
          cuda.remote_device = kora::cuda_target_device(db, prof_gpu, &arch, prof_tf32);
          if (prof_arch.empty()) cuda.kernels.arch = arch;
          std::cerr << "kora profile: for " << cuda.remote_device << std::endl;
        } else if (prof_arch.empty()) {
          std::string why;
          const auto device = kora::CudaDevice::open(0, &why);
          cuda.kernels.arch = device ? device->arch() : "sm_80";
        }
        cuda.kernels.candidates = prof.candidates;
        cuda.kernels.partition = prof.partition;
        cuda.kernels.partition.min_size =
            std::min(cuda.kernels.partition.min_size, cuda.kernels.partition.max_size);
        cuda.kernels.progress = &std::cerr;
        cuda.kernels.job_dir =
            !prof_job.empty()
                ? prof_job
                : kora::default_cuda_job_dir(db.path(), prof_model.model, cuda.kernels.arch);
        cuda.run_worker = !prof_no_measure;
        cuda.kernels.max_schedules = prof_schedules;
        cuda.tune_ms = prof_tune_ms;
        cuda.kernels.tf32 = prof_tf32;
        std::cout << "database " << db.path() << "\n"
                  << kora::format_cuda_profile_summary(kora::profile_model_cuda(g, db, cuda));
        return 0;
      }
      prof.partition.min_size = std::min(prof.partition.min_size, prof.partition.max_size);
      prof.progress = &std::cerr;
      prof.terminal = ::isatty(2);
      const kora::ProfileSummary summary = kora::profile_model(g, db, prof);
      if (prof_json)
        std::cout << kora::profile_summary_json(summary) << "\n";
      else
        std::cout << "database " << db.path() << "\n" << kora::format_profile_summary(summary);
    } else if (artifact_commands.parsed()) {
      return artifact_commands.run(verbose);
    } else if (operators->parsed()) {
      for (const std::string& op : kora::supported_operators()) std::cout << op << "\n";
    }
  } catch (const kora::Error& e) {
    std::cerr << "kora: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kora: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
