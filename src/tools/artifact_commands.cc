// `kora compile`, `kora run`, `kora check` (tools/commands.h). compile runs every stage
// (import, fission, profile, orchestrate, emit) with a progress line per stage on stderr
// and a summary on stdout; run and check load the artifact with the runtime only.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "cpu/backend.h"
#include "cpu/profile.h"
#include "cuda/artifact.h"
#include "cuda/compile_kernels.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/profile_cuda.h"
#include "kora/artifact.h"
#include "kora/check.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/npy.h"
#include "kora/profile_db.h"
#include "kora/runtime.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace kora::cli {

struct ArtifactCommands::Options {
  CLI::App *compile = nullptr, *run = nullptr, *check = nullptr;
  // compile
  ModelOptions model;
  std::string target = "cpu", out, strategy = "optimal", db, compiler, gpu;
  int threads = 0, schedules = -1;
  bool no_measure = false, json = false, tf32 = false;
  OrchestrationOptions orch;
  // run and check
  std::string dir, check_model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int iters = 0, run_threads = 0, profile = -1;
  uint64_t seed = 0;
  double tolerance = 1e-4;
};

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

std::string megabytes(int64_t bytes) { return fixed(static_cast<double>(bytes) / 1e6, 1) + " MB"; }

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

int compile_command(ArtifactCommands::Options& o, bool verbose) {
  const auto start = std::chrono::steady_clock::now();
  const bool terminal = ::isatty(2);
  auto stage = std::chrono::steady_clock::now();
  FissionOptions fission_options;
  if (verbose) fission_options.trace = &std::cerr;
  const PrimGraph graph = fission(load_model(o.model, verbose), fission_options);
  const double import_seconds = seconds_since(stage);
  std::cerr << "kora compile: import and fission: " << graph.prims.size() << " primitives ("
            << fixed(import_seconds, 1) << " s)" << std::endl;

  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  const bool cuda = o.target == "cuda";
  if (cuda && !cuda_built()) throw Error("--target cuda: kora was built without CUDA");
  auto db = std::make_shared<ProfileDb>(o.db.empty() ? default_profile_db_path() : o.db);
  o.orch.partition.min_size = std::min(o.orch.partition.min_size, o.orch.partition.max_size);

  double profile_seconds = 0;
  if (cuda && !o.no_measure && o.gpu.empty() && cuda_device_unavailable().empty()) {
    stage = std::chrono::steady_clock::now();  // the GPU is here: measure what is missing
    CudaProfileOptions prof;
    prof.kernels.arch = CudaDevice::open(0, nullptr)->arch();
    prof.kernels.candidates = o.orch.candidates;
    prof.kernels.partition = o.orch.partition;
    prof.kernels.progress = &std::cerr;
    prof.kernels.tf32 = o.tf32;
    prof.kernels.max_schedules = o.schedules;
    prof.kernels.job_dir = default_cuda_job_dir(db->path(), o.model.model, prof.kernels.arch);
    const CudaProfileSummary s = profile_model_cuda(graph, *db, prof);
    profile_seconds = seconds_since(stage);
    std::cerr << "kora compile: profile: " << s.merge.stored << " implementations measured now, "
              << s.merge.failures.size() << " failed (" << fixed(profile_seconds, 1) << " s)"
              << std::endl;
  }
  std::string arch;
  const std::string device = cuda ? cuda_target_device(*db, o.gpu, &arch, o.tf32)
                                  : cpu_backend_fingerprint(threads, o.compiler);
  if (cuda) {
    std::cerr << "kora compile: target cuda, " << arch << ", costs of " << device << std::endl;
    o.orch.candidates = cuda_candidate_options(graph, o.orch.candidates);
  }
  if (!o.no_measure && !cuda) {
    stage = std::chrono::steady_clock::now();
    ProfileOptions prof;
    prof.threads = threads;
    prof.candidates = o.orch.candidates;
    prof.partition = o.orch.partition;
    if (!o.compiler.empty()) prof.compile.compiler = o.compiler;
    prof.progress = &std::cerr;
    prof.terminal = terminal;
    const ProfileSummary s = profile_model(graph, *db, prof);
    profile_seconds = seconds_since(stage);
    std::cerr << "kora compile: profile: " << s.kernels << " kernels, " << s.measured
              << " measured now, " << s.from_db << " from the database " << db->path() << ", "
              << s.failures.size() << " implementations failed (" << fixed(profile_seconds, 1)
              << " s)" << std::endl;
  }

  stage = std::chrono::steady_clock::now();
  ProfileDbCost costs(db, device,
                      std::make_unique<RooflineCost>(device_params(cuda ? "h100" : "cpu")));
  if (cuda) costs.penalize_failed(kCudaFailedKernelMs);
  o.orch.strategy = o.strategy;
  o.orch.progress = verbose;
  o.orch.progress_line = !verbose && terminal;
  const OrchestrationResult plan = orchestrate(graph, costs, o.orch);
  const double orchestrate_seconds = seconds_since(stage);
  std::cerr << "kora compile: orchestrate: " << plan.strategy << ", " << plan.kernels.size()
            << " kernels, predicted " << fixed(plan.total_cost_ms, 3) << " ms"
            << (plan.strategy != "optimal" ? ""
                : plan.proven_optimal      ? " (proven optimal)"
                                           : " (gap " + fixed(plan.gap_ms, 3) + " ms)")
            << "; " << costs.hits() << " kernel costs measured, " << costs.misses()
            << " from the roofline model (" << fixed(orchestrate_seconds, 1) << " s)" << std::endl;
  int64_t estimated = 0;  // chosen at the roofline model's estimate
  std::string host;       // cuda: kernels the GPU cannot compute (the interpreter runs them)
  const KernelDag dag = kernel_dag_of(graph);
  for (const ChosenKernel& k : plan.kernels) {
    if (cuda && cuda_runs_on_host(graph, dag, make_candidate(dag, k.prims))) {
      host += (host.empty() ? "" : ", ") + graph.prims[k.prims[0]].name;
      continue;
    }
    estimated += !costs.measured(k.signature);
  }
  if (!host.empty())
    std::cerr << "kora compile: note: no CUDA implementation, run on the host by the "
                 "interpreter (copies in and out): "
              << host << std::endl;
  if (estimated > 0)
    std::cerr << "kora compile: note: " << estimated << " of the " << plan.kernels.size()
              << " chosen kernels were never measured on " << device
              << ": their costs are roofline estimates"
              << (cuda ? " (measure them: kora profile MODEL --target cuda, on that GPU or "
                         "with --gpu here)"
                       : "")
              << std::endl;

  stage = std::chrono::steady_clock::now();
  ArtifactSummary a;
  if (cuda) {
    CudaArtifactOptions co;
    co.device = device;
    co.arch = arch;
    co.tf32 = o.tf32;
    co.progress = &std::cerr;
    a = write_cuda_artifact(graph, plan, db.get(), o.out, co);
  } else {
    ArtifactOptions ao;
    ao.device = device;
    ao.threads = threads;
    if (!o.compiler.empty()) ao.compile.compiler = o.compiler;
    ao.progress = &std::cerr;
    ao.terminal = terminal;
    a = write_artifact(graph, plan, db.get(), o.out, ao);
  }
  const double emit_seconds = seconds_since(stage);
  const double total = seconds_since(start);
  if (o.json) {
    std::cout << "{\"artifact\": \"" << o.out << "\", \"strategy\": \"" << plan.strategy
              << "\", \"kernels\": " << a.kernels << ", \"generated\": " << a.generated
              << ", \"onednn\": " << a.onednn << ", \"interpreter\": " << a.interpreter
              << ", \"cublas\": " << a.cublas << ", \"cudnn\": " << a.cudnn << ", \"target\": \""
              << o.target << "\""
              << ", \"predicted_ms\": " << a.predicted_ms
              << ", \"proven_optimal\": " << (plan.proven_optimal ? "true" : "false")
              << ", \"measured_costs\": " << costs.hits()
              << ", \"roofline_costs\": " << costs.misses()
              << ", \"blocked_tensors\": " << a.blocked_tensors
              << ", \"arena_bytes\": " << a.arena_bytes
              << ", \"intermediate_bytes\": " << a.intermediate_bytes
              << ", \"weights_bytes\": " << a.weights_bytes
              << ", \"seconds\": {\"import\": " << import_seconds
              << ", \"profile\": " << profile_seconds
              << ", \"orchestrate\": " << orchestrate_seconds << ", \"emit\": " << emit_seconds
              << ", \"total\": " << total << "}}\n";
    return 0;
  }
  if (cuda)
    std::cout << "kora compile: " << o.out << ": " << a.kernels << " CUDA kernels (" << a.generated
              << " generated, " << a.cublas << " cuBLAS, " << a.cudnn << " cuDNN"
              << (a.interpreter ? ", " + std::to_string(a.interpreter) + " on the host" : "")
              << ") in " << a.libraries << " cubins for " << arch << "; strategy " << plan.strategy
              << ", predicted " << fixed(a.predicted_ms, 3) << " ms\n";
  else
    std::cout << "kora compile: " << o.out << ": " << a.kernels << " kernels (" << a.generated
              << " generated, " << a.onednn << " oneDNN, " << a.interpreter << " interpreter) in "
              << a.libraries << " libraries; strategy " << plan.strategy << ", predicted "
              << fixed(a.predicted_ms, 3) << " ms\n"
              << "layouts: " << a.blocked_tensors
              << " tensors kept blocked between oneDNN convolutions\n";
  std::cout << "memory: activations " << megabytes(a.arena_bytes) << " in one arena (sum of "
            << "intermediates " << megabytes(a.intermediate_bytes) << "), weights "
            << megabytes(a.weights_bytes) << "\n"
            << "time: import " << fixed(import_seconds, 1) << " s, profile "
            << fixed(profile_seconds, 1) << " s, orchestrate " << fixed(orchestrate_seconds, 1)
            << " s, emit " << fixed(emit_seconds, 1) << " s, total " << fixed(total, 1) << " s\n";
  return 0;
}

// Per kernel: time inside the running plan vs the cost measured alone when profiled.
void print_kernel_profile(Session& session, int iters, int show) {
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
    std::snprintf(line, sizeof line, "%5zu  %-11s %11.4f %13.4f  ", i, infos[i].impl.c_str(), ms[i],
                  infos[i].predicted_ms);
    std::string names = infos[i].primitives;
    if (names.size() > 70) names = names.substr(0, 67) + "...";
    std::cout << line << names << "\n";
  }
}

int run_command(ArtifactCommands::Options& o) {
  Session session(o.dir, SessionOptions{o.run_threads});
  const std::map<std::string, Tensor> feeds = session_inputs(session, o.inputs, o.seed);
  const std::map<std::string, Tensor> outputs = session.run(feeds);
  if (!o.output_dir.empty()) std::filesystem::create_directories(o.output_dir);
  for (const TensorInfo& t : session.outputs()) {
    std::cout << t.name << " " << dtype_name(t.dtype) << " " << shape_str(t.shape);
    if (!o.output_dir.empty()) {
      const std::string path =
          (std::filesystem::path(o.output_dir) / npy_file_name(t.name)).string();
      write_npy(path, outputs.at(t.name));
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
  if (o.iters > 0) {
    const int warmup = std::max(3, o.iters / 10);
    for (int i = 0; i < warmup; ++i) session.run();
    std::vector<double> ms;
    for (int i = 0; i < o.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run();
      ms.push_back(seconds_since(t0) * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    const double median =
        ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    const double p90 = ms[std::min(ms.size() - 1, static_cast<size_t>(0.9 * ms.size()))];
    std::cout << "runs " << o.iters << " (after " << warmup << " warm-up), " << session.device()
              << "\n"
              << "median " << fixed(median, 3) << " ms"
              << (session.target() == "cuda" ? " (with copies to and from the GPU)" : "") << "\n"
              << "p90 " << fixed(p90, 3) << " ms\n";
    if (session.target() == "cuda") {  // the plan alone, timed by CUDA events
      std::vector<double> gpu;
      for (int i = 0; i < o.iters; ++i) gpu.push_back(session.plan_ms());
      std::sort(gpu.begin(), gpu.end());
      std::cout << "gpu median " << fixed(gpu[gpu.size() / 2], 3)
                << " ms (CUDA events, inputs on the GPU)\n"
                << "gpu p90 "
                << fixed(gpu[std::min(gpu.size() - 1, static_cast<size_t>(0.9 * gpu.size()))], 3)
                << " ms\n";
    }
  }
  if (o.profile >= 0) print_kernel_profile(session, o.iters > 0 ? o.iters : 20, o.profile);
  return 0;
}

int check_command(ArtifactCommands::Options& o) {
  Session session(o.dir, SessionOptions{o.run_threads});
  const std::map<std::string, Tensor> feeds = session_inputs(session, o.inputs, o.seed);
  const std::map<std::string, Tensor> ours = session.run(feeds);
  const std::map<std::string, Tensor> reference =
      run_onnxruntime(o.check_model, feeds,
                      session.target() == "cuda" ? 0 : session.threads());  // 0: all cores
  double worst = 0;
  for (const TensorInfo& t : session.outputs()) {
    auto it = reference.find(t.name);
    if (it == reference.end())
      throw Error("onnxruntime gives no output '" + t.name + "' for '" + o.check_model +
                  "' (is it the model the artifact was compiled from?)");
    const double err = relative_l2(ours.at(t.name), it->second);
    worst = std::max(worst, err);
    char line[64];
    std::snprintf(line, sizeof line, "%.3g", err);
    std::cout << t.name << " " << dtype_name(t.dtype) << " " << shape_str(t.shape) << " rel_l2 "
              << line;
    if (it->second.shape() != t.shape)
      std::cout << " (onnxruntime's shape " << shape_str(it->second.shape()) << ")";
    std::cout << "\n";
  }
  char line[64];
  std::snprintf(line, sizeof line, "%.3g", worst);
  std::cout << "max_rel_l2 " << line << std::endl;
  double tolerance = o.tolerance;
  if (o.check->count("--tolerance") == 0 &&
      session.compiled_for().find(" tf32") != std::string::npos) {
    tolerance = std::max(tolerance, kCudaTf32Tolerance);
    std::cout << "tolerance " << tolerance << " (TF32 library math)" << std::endl;
  }
  return worst <= tolerance ? 0 : 1;
}

}  // namespace

ArtifactCommands::ArtifactCommands(CLI::App& app) : o_(std::make_unique<Options>()) {
  Options& o = *o_;
  o.compile = app.add_subcommand(
      "compile",
      "optimize the model for this machine and write a runnable artifact directory "
      "(profile, orchestrate, generate and compile kernels, plan memory)");
  add_model_options(o.compile, o.model);
  o.compile
      ->add_option(
          "--target", o.target,
          "cpu (default) or cuda (cubins, cuBLAS, cuBLASLt and cuDNN, replayed as a CUDA Graph; "
          "costs measured on the GPU here, else taken from the database: see --gpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  o.compile->add_option("--gpu", o.gpu,
                        "--target cuda: compile for the GPU whose fingerprint in the database "
                        "contains TEXT (default: the GPU here, else the database's only one)");
  o.compile
      ->add_option("--schedules", o.schedules,
                   "--target cuda with a GPU here: measure the first N schedules of each "
                   "generated kernel; 0: all (default: every default schedule, then all "
                   "schedules of the kernels slower than 10 us)")
      ->check(CLI::NonNegativeNumber);
  o.compile->add_flag(
      "--tf32", o.tf32,
      "--target cuda: cuBLAS, cuBLASLt and cuDNN with TF32 tensor-core math (an explicit "
      "option: about 1e-3 relative error; default full float32)");
  o.compile->add_option("-o,--output", o.out, "artifact directory to write")->required();
  o.compile
      ->add_option("--strategy", o.strategy,
                   "optimal (binary linear program), greedy (rule-based fusion) or unfused "
                   "(one kernel per primitive); default optimal")
      ->check(CLI::IsMember({"optimal", "greedy", "unfused"}));
  o.compile->add_option("--threads", o.threads, "threads per kernel (default: all cores)")
      ->check(CLI::PositiveNumber);
  o.compile->add_option("--db", o.db,
                        "profile database (default $KORA_PROFILE_DB, else "
                        "~/.cache/kora/profiles.db)");
  o.compile->add_option("--compiler", o.compiler, "C++ compiler for the kernels (default g++)");
  o.compile->add_flag("--no-measure", o.no_measure,
                      "measure nothing: kernels the database lacks are costed by the roofline "
                      "model (fast, plans less good)");
  o.compile->add_option("--time-limit", o.orch.solve.time_limit_seconds,
                        "solver time limit per segment in seconds (default 60)");
  o.compile->add_option("--max-kernel-size", o.orch.candidates.max_size,
                        "most primitives in one candidate kernel (default 16)");
  o.compile->add_option("--max-segment", o.orch.partition.max_size,
                        "most primitives in one segment of the partition (default 100)");
  o.compile->add_flag("--json", o.json, "print the summary as JSON");

  o.run = app.add_subcommand("run", "run a compiled artifact (random inputs unless given)");
  o.run->add_option("artifact", o.dir, "artifact directory (kora compile -o)")->required();
  o.run->add_option("--input", o.inputs,
                    "an input's value, NAME=FILE.npy (just FILE.npy for a one-input model)");
  o.run->add_option("--output-dir", o.output_dir, "write one NAME.npy per output there");
  o.run
      ->add_option("--iters", o.iters,
                   "time this many runs after a warm-up; prints median and p90 latency")
      ->check(CLI::NonNegativeNumber);
  o.run
      ->add_option("--profile", o.profile,
                   "time each kernel inside the running plan (over --iters runs, default 20) "
                   "and print the N slowest (0: all) next to their predicted cost")
      ->check(CLI::NonNegativeNumber);
  o.run->add_option("--threads", o.run_threads, "threads (default: as compiled)")
      ->check(CLI::PositiveNumber);
  o.run->add_option("--seed", o.seed, "seed of the random inputs (default 0)");

  o.check = app.add_subcommand(
      "check", "run an artifact and onnxruntime on the same random inputs and compare");
  o.check->add_option("artifact", o.dir, "artifact directory (kora compile -o)")->required();
  o.check->add_option("model", o.check_model, "the ONNX model it was compiled from")->required();
  o.check->add_option("--input", o.inputs, "an input's value, NAME=FILE.npy");
  o.check->add_option("--threads", o.run_threads, "threads (default: as compiled)")
      ->check(CLI::PositiveNumber);
  o.check->add_option("--seed", o.seed, "seed of the random inputs (default 0)");
  o.check->add_option("--tolerance", o.tolerance,
                      "largest relative L2 error accepted (default 1e-4)");
}

ArtifactCommands::~ArtifactCommands() = default;

bool ArtifactCommands::parsed() const {
  return o_->compile->parsed() || o_->run->parsed() || o_->check->parsed();
}

int ArtifactCommands::run(bool verbose) {
  if (o_->compile->parsed()) return compile_command(*o_, verbose);
  if (o_->run->parsed()) return run_command(*o_);
  return check_command(*o_);
}

}  // namespace kora::cli
