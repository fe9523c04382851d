// Pieces the `kora` subcommands share: NAME=VALUE bindings, the model options (file,
// --dim, --constant) and loading a model with them, the target options of the commands
// that optimize, .npy file names for tensors, the seconds since a moment.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "kora/compile.h"
#include "kora/frontend.h"
#include "kora/graph.h"
#include "kora/primitive.h"
#include "kora/target.h"

namespace CLI {
class App;
}

namespace kora {
struct OrchestrationOptions;
}

namespace kora::cli {

// "name=value" -> (name, value); the value must be present.
std::pair<std::string, std::string> split_binding(const std::string& s, const char* option);

struct ModelOptions {
  std::string model;
  std::vector<std::string> dims, constants;
};

void add_model_options(CLI::App* cmd, ModelOptions& m);
ImportOptions import_options(const ModelOptions& m, bool verbose);
Graph load_model(const ModelOptions& m, bool verbose);
// load_model, then fission (traced when verbose).
PrimGraph load_primitives(const ModelOptions& m, bool verbose);

// --threads, --compiler (cpu) and --gpu, --tf32 (cuda): what the device fingerprint says.
void add_device_options(CLI::App* cmd, TargetOptions& t);
// --max-kernel-size, --max-segment, and for commands that solve --time-limit.
void add_candidate_options(CLI::App* cmd, OrchestrationOptions& o, bool solve);
// --all (measure every candidate, not on demand), --on-demand (the default) and
// --on-demand-gap (kora profile, kora compile): into `all` and options.
void add_on_demand_options(CLI::App* cmd, bool& all, CompileOptions& options);
// --db: the profile database (empty: the default).
void add_db_option(CLI::App* cmd, std::string& db);

// Output file name: characters outside [A-Za-z0-9_.-] become '_'.
std::string npy_file_name(const std::string& tensor);

double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace kora::cli
