// The `kora` command-line program. In: a subcommand and its options (tools/commands.h).
// Out: the stage's result on stdout; any kora::Error as one line on stderr with exit
// status 1 (2 for an internal error).
#include <CLI/CLI.hpp>
#include <iostream>

#include "kora/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kora: optimal kernel orchestration for ONNX models"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "trace each pipeline stage on stderr");
  kora::cli::Commands commands;
  kora::cli::add_model_commands(app, commands);
  kora::cli::add_pipeline_commands(app, commands);
  kora::cli::add_artifact_commands(app, commands);
  kora::cli::add_colocate_command(app, commands);
  CLI11_PARSE(app, argc, argv);
  try {
    for (const auto& command : commands)
      if (command->parsed()) return command->run(verbose);
  } catch (const kora::Error& e) {
    std::cerr << "kora: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kora: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
