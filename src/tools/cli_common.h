// Pieces the `kora` subcommands share: NAME=VALUE bindings, the model options (file,
// --dim, --constant) and loading a model with them, .npy file names for tensors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kora/graph.h"

namespace CLI {
class App;
}

namespace kora::cli {

// "name=value" -> (name, value); the value must be present.
std::pair<std::string, std::string> split_binding(const std::string& s, const char* option);

struct ModelOptions {
  std::string model;
  std::vector<std::string> dims, constants;
};

void add_model_options(CLI::App* cmd, ModelOptions& m);
Graph load_model(const ModelOptions& m, bool verbose);

// Output file name: characters outside [A-Za-z0-9_.-] become '_'.
std::string npy_file_name(const std::string& tensor);

}  // namespace kora::cli
