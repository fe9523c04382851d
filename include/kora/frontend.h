// The front end: ONNX model file in, operator graph out (include/kora/graph.h), with
// kora's own static shape and dtype inference and the shape arithmetic folded away.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "kora/graph.h"

namespace kora {

// Lowest and highest version of the default ONNX domain kora reads. Opset 22 only added
// element types (bfloat16, ...) to operators kora already supports.
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 22;

struct ImportOptions {
  // Values for symbolic dimensions ("batch" -> 1); unnamed or unbound ones get default_dim.
  std::map<std::string, int64_t> dims;
  int64_t default_dim = 1;
  // Graph inputs bound to a value: they become constants (e.g. a shape-like input).
  std::map<std::string, Tensor> constant_inputs;
  // Evaluate shape arithmetic and other small constant subgraphs at import time.
  bool fold_constants = true;
  // When set, each step writes a line of trace here (the CLI's --verbose).
  std::ostream* trace = nullptr;
};

// Reads, validates and shape-infers an ONNX model. Throws kora::Error naming the file,
// node or tensor at fault for anything it cannot read or does not support.
Graph import_onnx(const std::string& path, const ImportOptions& options = {});

// Fills graph.values for every tensor, folds constant shape arithmetic into
// graph.constants and removes the nodes that no longer feed an output.
void infer_shapes(Graph& graph, const ImportOptions& options);

// Operators the front end accepts (default ONNX domain), sorted.
std::vector<std::string> supported_operators();
bool is_supported_operator(const std::string& op_type);

}  // namespace kora
