// The artifact subcommands of `kora`: compile (model -> artifact directory), run (an
// artifact on .npy or random inputs, optionally timed) and check (an artifact against
// onnxruntime). Each registers its options on the CLI11 app; run() executes the one
// parsed and returns the exit status.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace kora::cli {

class ArtifactCommands {
 public:
  explicit ArtifactCommands(CLI::App& app);
  ~ArtifactCommands();
  bool parsed() const;
  int run(bool verbose);

  struct Options;  // defined in artifact_commands.cc

 private:
  std::unique_ptr<Options> o_;
};

}  // namespace kora::cli
