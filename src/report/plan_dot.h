// Internal: the plan report's graph as Graphviz DOT, laid out top to bottom. In: the
// report's data (src/report/plan_data.h); out: DOT text whose SVG (dot -Tsvg) the page
// embeds. Two views:
//   primitive graph  every kernel a cluster (subgraph cluster_K, SVG group id "kernel_K",
//                    class "kernel impl_IMPL") holding its primitives (ids "kK_pP"); a
//                    primitive computed by several kernels is drawn in each; an edge
//                    enters a kernel from the kernel that wrote the tensor before it ran;
//   kernel graph     one node per kernel (id "kernel_K", the same classes), edges from the
//                    manifest's reads and writes: for an artifact without plan.json, and
//                    above kMaxPrimitiveNodes, where dot takes too long.
// Graph inputs and outputs are ellipses (class "io"); constants are not drawn.
#pragma once

#include <string>

#include "report/plan_data.h"

namespace kora {

// Primitive nodes (copies included) above which the report draws the kernel graph. dot's
// time grows much faster than the graph (Graphviz 2.43, one core of an EPYC): swinv2_tiny,
// 1,544 nodes in 132 kernels, 0.5 s; a synthetic stack of 100 transformer-like blocks,
// 3,600 nodes in 500 kernels, 8 s; of 150 blocks, 5,400 nodes in 750 kernels, 32 s.
constexpr int kMaxPrimitiveNodes = 4000;

// Primitive nodes the primitive graph would have (each kernel's primitives).
int primitive_node_count(const PlanReportData& data);

// Requires data.plan.
std::string primitive_graph_dot(const PlanReportData& data);
std::string kernel_graph_dot(const PlanReportData& data);

// A kernel implementation's colours: the group's fill and its border (CSS colours).
struct ImplColour {
  const char* fill;
  const char* stroke;
};
ImplColour impl_colour(const std::string& impl);

}  // namespace kora
