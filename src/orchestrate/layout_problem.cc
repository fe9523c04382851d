// The layout terms of one orchestration problem (layout_problem.h): tensors take the
// layout of the native implementations that store them, passed along kernels that take
// any layout or their views; candidates get their native options and views.
#include "orchestrate/layout_problem.h"

#include <algorithm>
#include <unordered_map>

#include "base/layout_map.h"

namespace kora {
namespace {

// Whether a candidate's views (LayoutCost::views) take a side stored in `layout`: any
// layout generated code can view, except that a pool's take channels last, or channel
// blocks of the sizes it lists.
bool view_takes(const LayoutCost& l, const std::string& layout, const Shape& shape) {
  if (!l.views_channels_last || is_channels_last(layout, shape.size())) return true;
  const int64_t block = channel_block(layout, shape);
  return block > 0 && std::find(l.views_channel_blocks.begin(), l.views_channel_blocks.end(),
                                block) != l.views_channel_blocks.end();
}

// Tensors no native implementation stores, but which a kernel taking any layout (an
// agnostic one: every side of one shape) or its layout views shares with a tensor that
// one does, may be stored in that tensor's layout too: a max pool's output between a
// convolution and the views of a concatenation, the input of a dense block. Repeated to
// a fixed point, so layouts pass along chains of such kernels; a tensor whose shape the
// layout cannot map (padded blocks) or that a pool's views do not take (view_takes)
// stays without; bfloat16 in a tensor's own order is not passed on. `native_layout` gains
// the tensors so reached.
void propagate_layouts(const PrimGraph& graph, const KernelDag& sub,
                       const std::vector<Candidate>& candidates,
                       const std::vector<LayoutCost>& costs_of, const std::vector<char>& agnostic,
                       const std::unordered_map<std::string, int>& node_of,
                       std::unordered_map<std::string, std::string>& native_layout) {
  std::vector<std::vector<std::string>> shared(candidates.size());  // sides in one layout
  for (size_t k = 0; k < candidates.size(); ++k) {
    const LayoutCost& l = costs_of[k];
    if (!l.views.empty() && !(l.blocked_ms >= 0 && !l.sides.empty())) {
      shared[k] = l.views;
    } else if (agnostic[k]) {
      std::vector<std::string> sides = kernel_reads(graph, sub, candidates[k]);
      for (const std::string& t : kernel_writes(graph, sub, candidates[k])) sides.push_back(t);
      bool one_shape = true;
      for (const std::string& t : sides)
        one_shape = one_shape && graph.value(t).shape == graph.value(sides[0]).shape;
      if (one_shape) shared[k] = std::move(sides);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < candidates.size(); ++k) {
      // Not bfloat16 in a tensor's own order: a kernel takes such a side on its own
      // (LayoutCost::bfloat16_sides), and another side stored so would only lose precision.
      std::string layout;
      for (const std::string& t : shared[k])
        if (const auto it = native_layout.find(t);
            it != native_layout.end() && layout.empty() &&
            !is_plain_bfloat16(it->second, graph.value(t).shape.size()))
          layout = it->second;
      if (layout.empty()) continue;
      for (const std::string& t : shared[k]) {
        const Shape& shape = graph.value(t).shape;
        if (native_layout.count(t) || !node_of.count(t) || !layout_map(layout, shape) ||
            !view_takes(costs_of[k], layout, shape))
          continue;
        native_layout.emplace(t, layout);
        changed = true;
      }
    }
  }
}

}  // namespace

// The segment's LayoutProblem from the cost model's layout costs: each native side's
// tensor mapped to the node writing it (a tensor from outside the segment stays plain),
// the reorders the native implementation pays (blocked - native) shared among its sides
// by bytes; agnostic only when every tensor it reads comes from inside. A candidate's
// views (generated code on sides in oneDNN's layouts, src/cpu/layout_view.h) are offered
// when a native implementation would store every one of those sides, inside the segment,
// in a layout generated code can view (layout_map); with `propagate`, also tensors that
// only views and agnostic kernels touch, in a native neighbour's layout
// (propagate_layouts). Sides generated code stores as bfloat16 in their own order
// (LayoutCost::bfloat16_sides) are offered each on its own where a native implementation
// (a bf16 matmul) stores them so. Layout names get ids in `names`. Empty when no candidate
// has a native implementation.
LayoutProblem layout_problem(const PrimGraph& graph, const SegmentCandidates& segment,
                             CostModel& costs, std::vector<std::string>& names, bool propagate) {
  const KernelDag& sub = segment.sub;
  const std::vector<Candidate>& candidates = segment.candidates;
  std::unordered_map<std::string, int> node_of;
  for (int v = 0; v < sub.size(); ++v) node_of[graph.prims[sub.prim[v]].outputs.at(0)] = v;
  auto id = [&](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<int>(it - names.begin());
    names.push_back(name);
    return static_cast<int>(names.size()) - 1;
  };
  LayoutProblem p;
  p.native.resize(candidates.size());
  p.agnostic.resize(candidates.size());
  std::vector<LayoutCost> costs_of(candidates.size());
  // Each tensor's one layout: channels last where some native implementation takes it so
  // (the layout most kernels share), else the first named.
  std::unordered_map<std::string, std::string> native_layout;
  for (size_t k = 0; k < candidates.size(); ++k) {
    LayoutCost& l = costs_of[k] = costs.layout_cost(graph, sub, candidates[k]);
    if (l.agnostic) {
      bool inside = true;
      for (const std::string& t : kernel_reads(graph, sub, candidates[k]))
        inside = inside && node_of.count(t);
      p.agnostic[k] = inside;
    }
    if (l.blocked_ms < 0) continue;
    for (const auto& [t, layout] : l.sides) native_layout.emplace(t, layout);
    for (const auto& [t, layout] : l.channels_last_sides) native_layout[t] = layout;
  }
  if (propagate)
    propagate_layouts(graph, sub, candidates, costs_of, p.agnostic, node_of, native_layout);
  bool any = false;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const LayoutCost& l = costs_of[k];
    if (l.blocked_ms < 0 || l.sides.empty()) continue;
    double bytes = 0;
    for (const auto& [t, layout] : l.sides)
      bytes += static_cast<double>(numel(graph.value(t).shape));
    const double reorders = std::max(0.0, l.blocked_ms - l.native_ms);
    // The implementation whose layouts the tensors take more often: oneDNN's own choice,
    // or channels last (the same reorders at its boundary).
    auto agree = [&](const std::map<std::string, std::string>& sides) {
      int n = 0;
      for (const auto& [t, layout] : sides) n += native_layout.at(t) == layout;
      return n;
    };
    const bool channels_last =
        l.channels_last_ms >= 0 && agree(l.channels_last_sides) > agree(l.sides);
    NativeOption& o = p.native[k];
    o.blocked_ms = channels_last ? l.channels_last_ms + reorders : l.blocked_ms;
    for (const auto& [t, layout] : channels_last ? l.channels_last_sides : l.sides) {
      auto node = node_of.find(t);
      if (node == node_of.end()) continue;
      o.nodes.push_back(node->second);
      o.layouts.push_back(id(layout));
      o.saved_ms.push_back(reorders * static_cast<double>(numel(graph.value(t).shape)) / bytes);
    }
    any = true;
  }
  if (!any) return {};
  p.layout_of.assign(sub.size(), -1);
  for (const auto& [t, layout] : native_layout)
    if (const auto node = node_of.find(t); node != node_of.end())
      p.layout_of[node->second] = id(layout);
  // The node of a tensor a native implementation stores as bfloat16 in its own order (a
  // bf16 matmul's source), or -1.
  auto bfloat16_node = [&](const std::string& t) {
    const auto node = node_of.find(t);
    const auto layout = native_layout.find(t);
    return node != node_of.end() && layout != native_layout.end() &&
                   is_plain_bfloat16(layout->second, graph.value(t).shape.size())
               ? node->second
               : -1;
  };
  p.views.resize(candidates.size());
  p.bfloat16_views.resize(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    const LayoutCost& l = costs_of[k];
    if (l.blocked_ms >= 0 && !l.sides.empty()) continue;
    for (const std::string& t : l.bfloat16_sides)
      if (const int node = bfloat16_node(t); node >= 0) p.bfloat16_views[k].push_back(node);
    std::vector<int> nodes;
    size_t wanted = 0;  // the views' sides that are not bfloat16 ones in their own order
    for (const std::string& t : l.views) {
      if (bfloat16_node(t) >= 0) continue;
      ++wanted;
      const auto node = node_of.find(t);
      const auto layout = native_layout.find(t);
      if (node == node_of.end() || layout == native_layout.end() ||
          !layout_map(layout->second, graph.value(t).shape) ||
          !view_takes(l, layout->second, graph.value(t).shape))
        break;  // a side that stays plain: all stay plain
      nodes.push_back(node->second);
    }
    if (nodes.size() == wanted) p.views[k] = std::move(nodes);
  }
  return p;
}

}  // namespace kora
