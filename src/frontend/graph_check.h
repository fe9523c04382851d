// Structural checks of a freshly imported operator graph.
#pragma once

#include "kora/graph.h"

namespace kora {

// Puts graph.nodes in topological order. Throws kora::Error, naming the node and tensor,
// for a tensor produced twice, an input nothing produces (a dangling name), a graph
// output nothing produces, or a cycle.
void sort_and_check(Graph& graph);

}  // namespace kora
