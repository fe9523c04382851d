// Shared pieces of the `kora` subcommands (tools/cli_common.h).
#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>

#include "kora/compile.h"
#include "kora/error.h"
#include "kora/npy.h"
#include "kora/orchestration.h"

namespace kora::cli {

std::pair<std::string, std::string> split_binding(const std::string& s, const char* option) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw Error(std::string(option) + " expects NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

void add_model_options(CLI::App* cmd, ModelOptions& m) {
  cmd->add_option("model", m.model, "ONNX model file")->required();
  cmd->add_option("--dim", m.dims, "bind a symbolic dimension, NAME=VALUE (default 1)");
  cmd->add_option("--constant", m.constants,
                  "bind a graph input to a constant value, NAME=FILE.npy");
}

ImportOptions import_options(const ModelOptions& m, bool verbose) {
  ImportOptions options;
  for (const std::string& d : m.dims) {
    auto [name, value] = split_binding(d, "--dim");
    try {
      options.dims[name] = std::stoll(value);
    } catch (const std::exception&) {
      throw Error("--dim " + d + ": the value is not an integer");
    }
  }
  for (const std::string& c : m.constants) {
    auto [name, file] = split_binding(c, "--constant");
    options.constant_inputs[name] = read_npy(file);
  }
  if (verbose) options.trace = &std::cerr;
  return options;
}

Graph load_model(const ModelOptions& m, bool verbose) {
  return import_onnx(m.model, import_options(m, verbose));
}

PrimGraph load_primitives(const ModelOptions& m, bool verbose) {
  return import_model(m.model, import_options(m, verbose));
}

void add_device_options(CLI::App* cmd, TargetOptions& t) {
  cmd->add_option("--threads", t.threads,
                  "threads per kernel, part of the device fingerprint (default: all cores)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--compiler", t.compiler,
                  "C++ compiler of the generated kernels, part of the device fingerprint "
                  "(default g++)");
  cmd->add_option("--gpu", t.gpu,
                  "--target cuda: the GPU whose fingerprint in the database contains TEXT "
                  "(default: the GPU here, else the database's only one); without a GPU here "
                  "kora profile writes the job for it (its architecture, what it lacks)");
  cmd->add_flag("--tf32", t.tf32,
                "--target cuda: cuBLAS, cuBLASLt and cuDNN with TF32 tensor-core math (an "
                "explicit option: about 1e-3 relative error; measured and stored apart from "
                "full float32)");
  cmd->add_option("--horizontal", t.horizontal,
                  "--target cuda: horizontal fusion, up to N pairs of independent generated "
                  "kernels per segment offered as one launch each (the solver takes a pair "
                  "where it measured faster than its two kernels; default 0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--bf16", t.bf16,
                "--target cpu: oneDNN convolutions and matmuls read bfloat16 source and "
                "weights and accumulate in float32 (an explicit option: up to about 1e-2 "
                "relative error, checked to 3e-2; about 2x faster where the CPU has "
                "AVX512-BF16; measured and stored apart from full float32)");
}

void add_on_demand_options(CLI::App* cmd, bool& all, CompileOptions& options) {
  CLI::Option* every =
      cmd->add_flag("--all", all,
                    "measure every candidate kernel the database lacks, first: the full cost "
                    "table (default: measure on demand, only the kernels of the plans the "
                    "solver chooses at costs predicted from the kernels measured so far, until "
                    "the plan holds measured kernels only; --target cuda without the GPU here "
                    "measures every candidate)");
  cmd->add_flag("--on-demand")->description("measure on demand (the default)")->excludes(every);
  cmd->add_option("--on-demand-gap", options.on_demand_gap,
                  "measuring on demand: also measure what the lower bounds need until the plan "
                  "is proven within this fraction of the optimum (0.02: 2%; default: measure "
                  "nothing for the proof)")
      ->check(CLI::Range(0.0, 10.0))
      ->excludes(every);
}

void add_candidate_options(CLI::App* cmd, OrchestrationOptions& o, bool solve) {
  if (solve)
    cmd->add_option("--time-limit", o.solve.time_limit_seconds,
                    "solver time limit per segment in seconds (default 60); when hit, the "
                    "remaining gap is reported");
  cmd->add_option("--max-kernel-size", o.candidates.max_size,
                  "most primitives in one candidate kernel (default 16)");
  cmd->add_option_function<int>(
      "--max-segment",
      [&o](const int& n) {
        o.partition.max_size = n;
        o.partition.min_size = std::min(o.partition.min_size, n);  // short segments allowed
      },
      "most primitives in one segment of the partition (default 100)");
}

void add_db_option(CLI::App* cmd, std::string& db) {
  cmd->add_option("--db", db,
                  "profile database (default $KORA_PROFILE_DB, else ~/.cache/kora/profiles.db)");
}

std::string npy_file_name(const std::string& tensor) {
  std::string s;
  for (char c : tensor)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  return s + ".npy";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kora::cli
