// The `kora` subcommands, in three groups: the model's stages (inspect, fission,
// interpret, operators), the optimization's (orchestrate, profile) and the artifact's
// (compile, run, check, report), and co-location (colocate). Each command registers its options on
// the CLI11 app when made; run() executes it once parsed and returns the exit status. Commands
// parse options and print: the work is the library's (include/kora/compile.h and the stage
// headers).
#pragma once

#include <memory>
#include <vector>

namespace CLI {
class App;
}

namespace kora::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual bool parsed() const = 0;  // given on the command line
  virtual int run(bool verbose) = 0;
};

using Commands = std::vector<std::unique_ptr<Command>>;

void add_model_commands(CLI::App& app, Commands& commands);     // model_commands.cc
void add_pipeline_commands(CLI::App& app, Commands& commands);  // pipeline_commands.cc
void add_artifact_commands(CLI::App& app, Commands& commands);  // artifact_commands.cc
void add_colocate_command(CLI::App& app, Commands& commands);   // colocate_command.cc

}  // namespace kora::cli
