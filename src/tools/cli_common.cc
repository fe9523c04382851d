// Shared pieces of the `kora` subcommands (tools/cli_common.h).
#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <iostream>

#include "kora/error.h"
#include "kora/frontend.h"
#include "kora/npy.h"

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

Graph load_model(const ModelOptions& m, bool verbose) {
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
  return import_onnx(m.model, options);
}

std::string npy_file_name(const std::string& tensor) {
  std::string s;
  for (char c : tensor)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  return s + ".npy";
}

}  // namespace kora::cli
