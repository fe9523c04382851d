// The `kora` command-line program. In: a subcommand and its options. Out: the stage's
// result on stdout; any kora::Error as one line on stderr with exit status 1.
#include <CLI/CLI.hpp>
#include <iostream>

#include "kora/error.h"
#include "kora/frontend.h"
#include "kora/inspect.h"
#include "kora/npy.h"

namespace {

// "name=value" -> (name, value); the value must be present.
std::pair<std::string, std::string> split_binding(const std::string& s, const char* option) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw kora::Error(std::string(option) + " expects NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

struct ModelOptions {
  std::string model;
  std::vector<std::string> dims, constants;
};

void add_model_options(CLI::App* cmd, ModelOptions& m) {
  cmd->add_option("model", m.model, "ONNX model file")->required();
  cmd->add_option("--dim", m.dims, "bind a symbolic dimension, NAME=VALUE (default 1)");
  cmd->add_option("--constant", m.constants,
                  "bind a graph input to a constant value, NAME=FILE.npy");
}

kora::Graph load_model(const ModelOptions& m, bool verbose) {
  kora::ImportOptions options;
  for (const std::string& d : m.dims) {
    auto [name, value] = split_binding(d, "--dim");
    try {
      options.dims[name] = std::stoll(value);
    } catch (const std::exception&) {
      throw kora::Error("--dim " + d + ": the value is not an integer");
    }
  }
  for (const std::string& c : m.constants) {
    auto [name, file] = split_binding(c, "--constant");
    options.constant_inputs[name] = kora::read_npy(file);
  }
  if (verbose) options.trace = &std::cerr;
  return kora::import_onnx(m.model, options);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kora: optimal kernel orchestration for ONNX models"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "trace each pipeline stage on stderr");

  ModelOptions inspect_model;
  bool inspect_json = false;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "print opset, inputs, outputs, operator histogram, parameters and FLOPs");
  add_model_options(inspect, inspect_model);
  inspect->add_flag("--json", inspect_json, "print the report as JSON");

  CLI::App* operators =
      app.add_subcommand("operators", "list the ONNX operators kora supports, one per line");

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect->parsed()) {
      const kora::Graph g = load_model(inspect_model, verbose);
      const kora::InspectReport report = kora::inspect_graph(g);
      std::cout << (inspect_json ? kora::report_json(report) + "\n" : kora::format_report(report));
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
