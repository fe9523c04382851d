// The model's stages as `kora` subcommands (tools/commands.h): inspect (the operator graph's
// report), fission (the primitive graph), interpret (the reference interpreter on .npy or
// random inputs) and operators (what the front end accepts).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <random>

#include "kora/fission.h"
#include "kora/inspect.h"
#include "kora/interpreter.h"
#include "kora/npy.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace kora::cli {
namespace {

class InspectCommand : public Command {
 public:
  explicit InspectCommand(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "inspect", "print opset, inputs, outputs, operator histogram, parameters and FLOPs");
    add_model_options(cmd_, model_);
    cmd_->add_flag("--json", json_, "print the report as JSON");
  }
  bool parsed() const override { return cmd_->parsed(); }
  int run(bool verbose) override {
    const InspectReport report = inspect_graph(load_model(model_, verbose));
    std::cout << (json_ ? report_json(report) + "\n" : format_report(report));
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  bool json_ = false;
};

class FissionCommand : public Command {
 public:
  explicit FissionCommand(CLI::App& app) {
    cmd_ =
        app.add_subcommand("fission", "print the primitive graph the model's operators split into");
    add_model_options(cmd_, model_);
    cmd_->add_flag("--json", json_, "print the primitive graph as JSON");
    cmd_->add_flag("--dot", dot_, "print the primitive graph as Graphviz dot");
  }
  bool parsed() const override { return cmd_->parsed(); }
  int run(bool verbose) override {
    const PrimGraph g = load_primitives(model_, verbose);
    std::cout << (json_  ? prim_graph_json(g) + "\n"
                  : dot_ ? prim_graph_dot(g)
                         : format_prim_graph(g));
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  bool json_ = false, dot_ = false;
};

class InterpretCommand : public Command {
 public:
  explicit InterpretCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("interpret",
                              "run the model's primitive graph with the reference interpreter");
    add_model_options(cmd_, model_);
    cmd_->add_option("--input", inputs_,
                     "an input's value, NAME=FILE.npy (inputs not given are random)");
    cmd_->add_option("--output-dir", out_, "where to write one NAME.npy per output (default: .)");
    cmd_->add_option("--seed", seed_, "seed of the random inputs (default 0)");
  }
  bool parsed() const override { return cmd_->parsed(); }
  int run(bool verbose) override {
    const PrimGraph g = load_primitives(model_, verbose);
    std::map<std::string, Tensor> feeds;
    for (const std::string& in : inputs_) {
      auto [name, file] = split_binding(in, "--input");
      feeds[name] = read_npy(file);
    }
    std::mt19937_64 rng(seed_);
    for (const std::string& name : g.inputs)
      if (!feeds.count(name))
        feeds[name] = random_tensor(g.value(name).dtype, g.value(name).shape, rng);
    const std::map<std::string, Tensor> outputs = interpret(g, feeds);
    std::filesystem::create_directories(out_);
    for (const std::string& name : g.outputs) {
      const std::string path = (std::filesystem::path(out_) / npy_file_name(name)).string();
      write_npy(path, outputs.at(name));
      std::cout << name << " " << dtype_name(outputs.at(name).dtype()) << " "
                << shape_str(outputs.at(name).shape()) << " -> " << path << "\n";
    }
    return 0;
  }

 private:
  CLI::App* cmd_;
  ModelOptions model_;
  std::vector<std::string> inputs_;
  std::string out_ = ".";
  uint64_t seed_ = 0;
};

class OperatorsCommand : public Command {
 public:
  explicit OperatorsCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("operators", "list the ONNX operators kora supports, one per line");
  }
  bool parsed() const override { return cmd_->parsed(); }
  int run(bool) override {
    for (const std::string& op : supported_operators()) std::cout << op << "\n";
    return 0;
  }

 private:
  CLI::App* cmd_;
};

}  // namespace

void add_model_commands(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<InspectCommand>(app));
  commands.push_back(std::make_unique<FissionCommand>(app));
  commands.push_back(std::make_unique<InterpretCommand>(app));
  commands.push_back(std::make_unique<OperatorsCommand>(app));
}

}  // namespace kora::cli
