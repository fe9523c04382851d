// Operator fission: the operator graph (include/kora/graph.h) in, the primitive graph
// (include/kora/primitive.h) out. Every supported operator has a rule (src/fission/);
// the results are checked against the front end's inferred types, constant primitives
// are folded, and primitives that feed no output are removed.
#pragma once

#include <iosfwd>
#include <map>
#include <string>

#include "kora/graph.h"
#include "kora/primitive.h"

namespace kora {

struct FissionOptions {
  // Evaluate primitives whose inputs are all constants (folded weights transposes,
  // normalization coefficients, ...) at compile time.
  bool fold_constants = true;
  std::ostream* trace = nullptr;
};

PrimGraph fission(const Graph& graph, const FissionOptions& options = {});

// Primitive count per kind ("elementwise" -> 40, ...).
std::map<std::string, int> count_by_kind(const PrimGraph& graph);

// The primitive graph as readable text, as JSON, and as Graphviz dot.
std::string format_prim_graph(const PrimGraph& graph);
std::string prim_graph_json(const PrimGraph& graph);
std::string prim_graph_dot(const PrimGraph& graph);

}  // namespace kora
