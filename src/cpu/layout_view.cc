// A candidate's kernel over sides stored in blocked or permuted layouts
// (src/cpu/layout_view.h): the members relabelled into the stored order where that is a
// relabelling, else copied with each such side joined to them by a transpose (and a
// reshape where the layout splits a dim into blocks).
#include "cpu/layout_view.h"

#include <algorithm>
#include <optional>
#include <set>

#include "cpu/codegen.h"
#include "kora/error.h"

namespace kora {

namespace {

int wide_dims(const Shape& shape) {
  int wide = 0;
  for (int64_t d : shape) wide += d > 1;
  return wide;
}

// The graph's kernel and its candidate once its primitives are in `g`.
void finish(const std::vector<std::string>& reads, const std::vector<std::string>& writes,
            const PrimGraph& graph, LayoutView& view) {
  for (const std::string& t : reads)
    if (!graph.constant(t)) view.graph.inputs.push_back(t);
  view.graph.outputs = writes;
  view.dag = kernel_dag_of(view.graph);
  std::vector<int> all(view.dag.size());
  for (int v = 0; v < view.dag.size(); ++v) all[v] = v;
  view.candidate = make_candidate(view.dag, all);
}

// Whether every tensor the kernel reads or writes other than the stored sides has at most
// one dim above 1 (its bytes are the same in any order of its dims).
bool others_narrow(const PrimGraph& graph, const std::vector<std::string>& reads,
                   const std::vector<std::string>& writes,
                   const std::map<std::string, LayoutMap>& map) {
  for (const auto* list : {&reads, &writes})
    for (const std::string& t : *list)
      if (!map.count(t) && wide_dims(graph.value(t).shape) > 1) return false;
  return true;
}

// Member `p`'s tensors into `g` with the shapes `relabel` gives them; constants keep
// their bytes.
template <typename Relabel>
void add_relabelled_tensors(const PrimGraph& graph, const Primitive& p, PrimGraph& g,
                            const Relabel& relabel) {
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const std::string& t : *list) {
      const ValueInfo info{graph.value(t).dtype, relabel(graph.value(t).shape)};
      g.values[t] = info;
      if (const Tensor* constant = graph.constant(t))
        g.constants[t] =
            Tensor(constant->dtype(), info.shape, constant->bytes(), constant->nbytes());
    }
}

// The kernel relabelled into the stored order, where that is all it takes
// (relabels_in_stored_order): every tensor gets its stored shape (channel blocks split
// off), reduce, concat, slice and gather axes are renumbered (a blocked dim's two; a concat or
// slice of it in whole blocks only), constants keep their bytes. A
// reduction over a channels-last tensor then keeps the channels innermost (a row of
// accumulators) instead of reading them with a stride of C.
std::optional<LayoutView> relabelled(const PrimGraph& graph, const KernelDag& dag,
                                     const Candidate& c, const std::vector<std::string>& reads,
                                     const std::vector<std::string>& writes,
                                     const std::map<std::string, LayoutMap>& map) {
  if (map.empty()) return std::nullopt;
  const LayoutMap& m = map.begin()->second;
  for (const auto& [t, other] : map)
    if (other.split != m.split || other.block != m.block || other.perm != m.perm)
      return std::nullopt;
  if (!relabels_in_stored_order(graph, dag, c)) return std::nullopt;
  for (int v : c.members)
    for (const auto* list : {&graph.prims[dag.prim[v]].inputs, &graph.prims[dag.prim[v]].outputs})
      for (const std::string& t : *list)
        if (m.split >= 0 && graph.value(t).shape[m.split] % m.block != 0) return std::nullopt;
  if (!others_narrow(graph, reads, writes, map)) return std::nullopt;
  std::vector<int64_t> stored_dim(m.perm.size());  // split dim -> stored dim
  for (size_t d = 0; d < m.perm.size(); ++d) stored_dim[m.perm[d]] = static_cast<int64_t>(d);
  LayoutView view;
  PrimGraph& g = view.graph;
  g.name = graph.name;
  for (int v : c.members) {
    Primitive p = graph.prims[dag.prim[v]];
    add_relabelled_tensors(graph, p, g, [&](const Shape& s) { return m.stored_shape(s); });
    // A logical dim's place in the split shape (a blocked dim: its outer part there, its
    // block next) and in the stored one.
    auto at = [&](int64_t a) { return m.split >= 0 && a > m.split ? a + 1 : a; };
    if (auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
      std::vector<int64_t> axes;
      for (int64_t a : r->axes) {
        axes.push_back(stored_dim[at(a)]);
        if (a == m.split) axes.push_back(stored_dim[at(a) + 1]);
      }
      std::sort(axes.begin(), axes.end());
      r->axes = axes;
    } else if (auto* layout = std::get_if<LayoutAttrs>(&p.attrs)) {
      if (auto* concat = std::get_if<layout::Concat>(layout)) {
        if (concat->axis == m.split)  // whole blocks (every tensor's dim is)
          for (int64_t& o : concat->offsets) o /= m.block;
        concat->axis = stored_dim[at(concat->axis)];
      } else if (auto* slice = std::get_if<layout::Slice>(layout)) {
        std::vector<int64_t> starts(m.perm.size(), 0), steps(m.perm.size(), 1);
        for (size_t a = 0; a < slice->starts.size(); ++a) {
          const bool blocked = static_cast<int64_t>(a) == m.split;
          if (blocked && (slice->steps[a] != 1 || slice->starts[a] % m.block != 0))
            return std::nullopt;  // not whole blocks
          starts[stored_dim[at(a)]] = blocked ? slice->starts[a] / m.block : slice->starts[a];
          steps[stored_dim[at(a)]] = slice->steps[a];
        }
        slice->starts = starts;
        slice->steps = steps;
      } else if (auto* gather = std::get_if<layout::Gather>(layout)) {
        if (gather->axis == m.split) return std::nullopt;  // elements of blocks
        gather->axis = stored_dim[at(gather->axis)];
      }
    }
    g.prims.push_back(std::move(p));
  }
  finish(reads, writes, graph, view);
  return view;
}

// Whether the map moves the channel dim (1) last and keeps the others in order: channels
// last, in which a view of a window relabels at any rank.
bool moves_channels_last(const LayoutMap& m) {
  if (m.split >= 0 || m.perm.size() < 3 || m.perm.back() != 1 || m.perm[0] != 0) return false;
  for (size_t d = 1; d + 1 < m.perm.size(); ++d)
    if (m.perm[d] != static_cast<int64_t>(d) + 1) return false;
  return true;
}

// A shape with its channel dim (1) moved last.
Shape channels_moved_last(const Shape& s) {
  if (s.size() < 2) return s;
  Shape r = s;
  r.erase(r.begin() + 1);
  r.push_back(s[1]);
  return r;
}

// The dims of a shape from `from` on, those of size 1 left out.
Shape squeezed_from(const Shape& s, size_t from) {
  Shape r;
  for (size_t d = from; d < s.size(); ++d)
    if (s[d] != 1) r.push_back(s[d]);
  return r;
}

// A pooling kernel (relabels_channels_last) relabelled so that its windows are taken
// channels last: every tensor's shape by `relabel` (constants keep their bytes), each
// reduce axis a of an input of rank r by `axis(a, r)`, windows channels last.
template <typename Relabel, typename Axis>
LayoutView relabelled_pool(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                           const std::vector<std::string>& reads,
                           const std::vector<std::string>& writes, const Relabel& relabel,
                           const Axis& axis) {
  LayoutView view;
  PrimGraph& g = view.graph;
  g.name = graph.name;
  for (int v : c.members) {
    Primitive p = graph.prims[dag.prim[v]];
    add_relabelled_tensors(graph, p, g, relabel);
    if (auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
      const int64_t rank = static_cast<int64_t>(graph.value(p.inputs.at(0)).shape.size());
      for (int64_t& a : r->axes) a = axis(a, rank);
      std::sort(r->axes.begin(), r->axes.end());
    } else if (auto* layout = std::get_if<LayoutAttrs>(&p.attrs)) {
      if (auto* w = std::get_if<layout::Window>(layout)) w->channels_last = true;
    }
    g.prims.push_back(std::move(p));
  }
  finish(reads, writes, graph, view);
  return view;
}

// The kernel relabelled channels last when it pools (relabels_channels_last): every tensor
// with its channel dim (1) moved last, the windows taken channels last ([N, O.., K.., C]),
// reduce axes renumbered; reshapes (which drop or add dims of size 1) and constants (of
// at most one wide dim) keep their bytes.
std::optional<LayoutView> relabelled_channels_last(const PrimGraph& graph, const KernelDag& dag,
                                                   const Candidate& c,
                                                   const std::vector<std::string>& reads,
                                                   const std::vector<std::string>& writes,
                                                   const std::map<std::string, LayoutMap>& map) {
  if (map.empty() || !relabels_channels_last(graph, dag, c)) return std::nullopt;
  for (const auto& [t, m] : map)
    if (!moves_channels_last(m)) return std::nullopt;
  if (!others_narrow(graph, reads, writes, map)) return std::nullopt;
  return relabelled_pool(graph, dag, c, reads, writes, channels_moved_last,
                         [](int64_t a, int64_t rank) {
                           return a == 1 ? rank - 1 : a > 1 ? a - 1 : a;
                         });
}

// [1, C, S1..] as a pool in channel blocks of `block` sees it: [C / block, S1.., block]
// (the blocks a batch, the block the channels), or [1, S1.., 1] for one channel (it
// broadcasts over both); none for another batch or C not in whole blocks.
std::optional<Shape> channel_blocks_last(const Shape& s, int64_t block) {
  if (s.size() < 3 || s[0] != 1 || (s[1] != 1 && s[1] % block != 0)) return std::nullopt;
  Shape r{s[1] == 1 ? 1 : s[1] / block};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1] == 1 ? 1 : block);
  return r;
}

// Whether every tensor of the pooling kernel (relabels_channels_last) has batch 1 and its
// channels in whole blocks of `block` (or one channel), and no reduce is over the batch or
// the channels.
bool pools_in_channel_blocks(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                             int64_t block) {
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    for (const auto* list : {&p.inputs, &p.outputs})
      for (const std::string& t : *list)
        if (!channel_blocks_last(graph.value(t).shape, block)) return false;
    if (const auto* r = std::get_if<ReduceAttrs>(&p.attrs))
      for (int64_t a : r->axes)
        if (a < 2) return false;
  }
  return true;
}

// The pooling kernel relabelled for sides all in channel blocks of one size (aBcd16b):
// every tensor [1, C, S..] as [C / block, S.., block] (channel_blocks_last), so the
// blocks are a batch and the block the channels of a channels-last pool (windows
// layout::Window::channels_last over [C / block, S.., block]); the sides' bytes are
// their stored ones.
std::optional<LayoutView> relabelled_channel_blocks(const PrimGraph& graph, const KernelDag& dag,
                                                    const Candidate& c,
                                                    const std::vector<std::string>& reads,
                                                    const std::vector<std::string>& writes,
                                                    const std::map<std::string, LayoutMap>& map) {
  if (map.empty() || !relabels_channels_last(graph, dag, c)) return std::nullopt;
  const int64_t block = channel_block(map.begin()->second);
  if (block == 0) return std::nullopt;
  for (const auto& [t, m] : map)
    if (channel_block(m) != block) return std::nullopt;
  if (!others_narrow(graph, reads, writes, map) || !pools_in_channel_blocks(graph, dag, c, block))
    return std::nullopt;
  return relabelled_pool(
      graph, dag, c, reads, writes, [&](const Shape& s) { return *channel_blocks_last(s, block); },
      [](int64_t a, int64_t) { return a - 1; });  // the batch dim gone (axes past N and C)
}

// The permutation undoing `perm` (a transpose by it, then by this, is the identity).
std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[perm[d]] = static_cast<int64_t>(d);
  return inverse;
}

const layout::Transpose* transpose_of(const Primitive& p) {
  const auto* layout = std::get_if<LayoutAttrs>(&p.attrs);
  return layout ? std::get_if<layout::Transpose>(layout) : nullptr;
}

}  // namespace

bool relabels_channels_last(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  bool window = false;
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    const auto* layout = std::get_if<LayoutAttrs>(&p.attrs);
    const Shape& out = graph.value(p.output()).shape;
    if (out.size() < 3) return false;
    if (layout && std::holds_alternative<layout::Window>(*layout)) {
      if (std::get<layout::Window>(*layout).channels_last) return false;
      window = true;
      continue;
    }
    if (layout && std::holds_alternative<layout::Reshape>(*layout)) {
      // Only dims of size 1 dropped or added after N and C: the same bytes either way.
      const Shape& in = graph.value(p.inputs.at(0)).shape;
      if (in.size() < 3 || in[0] != out[0] || in[1] != out[1] ||
          squeezed_from(in, 2) != squeezed_from(out, 2))
        return false;
      continue;
    }
    if (p.kind() != PrimKind::kElementwise && p.kind() != PrimKind::kReduce &&
        p.kind() != PrimKind::kBroadcast)
      return false;
    for (const std::string& t : p.inputs)
      if (graph.value(t).shape.size() != out.size()) return false;
  }
  if (!window) return false;
  // Every activation it reads or writes that is wide can be stored (rank 3 to 5).
  for (const auto& list : {kernel_reads(graph, dag, c), kernel_writes(graph, dag, c)})
    for (const std::string& t : list) {
      const size_t rank = graph.value(t).shape.size();
      if (!graph.constant(t) && wide_dims(graph.value(t).shape) > 1 && (rank < 3 || rank > 5))
        return false;
    }
  return true;
}

std::vector<std::string> channels_last_transposed_sides(const PrimGraph& graph,
                                                        const KernelDag& dag, const Candidate& c) {
  std::vector<std::string> sides;
  bool transposes = false;
  for (int v : c.members) transposes = transposes || transpose_of(graph.prims[dag.prim[v]]);
  if (!transposes) return sides;
  // The order a tensor of this shape is stored in channels last (its map's permutation).
  auto stored_order = [&](const std::string& t) {
    const Shape& shape = graph.value(t).shape;
    const std::optional<LayoutMap> m = layout_map(channels_last_layout(shape.size()), shape);
    return m ? m->perm : std::vector<int64_t>{};
  };
  for (const std::string& t : kernel_reads(graph, dag, c)) {
    const std::vector<int64_t> order = stored_order(t);
    bool only_moved_last = !order.empty(), read = false;
    for (int v : c.members) {
      const Primitive& p = graph.prims[dag.prim[v]];
      if (std::find(p.inputs.begin(), p.inputs.end(), t) == p.inputs.end()) continue;
      const layout::Transpose* transpose = transpose_of(p);
      read = true;
      only_moved_last = only_moved_last && transpose && transpose->perm == order;
    }
    if (read && only_moved_last) sides.push_back(t);
  }
  for (const std::string& t : kernel_writes(graph, dag, c)) {
    const std::vector<int64_t> order = stored_order(t);
    for (int v : c.members) {
      const Primitive& p = graph.prims[dag.prim[v]];
      const layout::Transpose* transpose = transpose_of(p);
      if (!order.empty() && p.output() == t && transpose && transpose->perm == inverse_perm(order))
        sides.push_back(t);
    }
  }
  return sides;
}

std::vector<int64_t> pool_view_channel_blocks(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c) {
  std::vector<int64_t> blocks;
  if (relabels_in_stored_order(graph, dag, c) || !relabels_channels_last(graph, dag, c))
    return blocks;
  for (int64_t block : {8, 16})
    if (pools_in_channel_blocks(graph, dag, c, block)) blocks.push_back(block);
  return blocks;
}

bool views_channels_last_only(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return !relabels_in_stored_order(graph, dag, c) &&
         (relabels_channels_last(graph, dag, c) ||
          !channels_last_transposed_sides(graph, dag, c).empty());
}

LayoutView layout_view(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                       const TensorLayouts& layouts) {
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  const std::vector<std::string> writes = kernel_writes(graph, dag, c);
  std::map<std::string, LayoutMap> map;  // side -> how it is stored
  std::set<std::string> bfloat16;
  for (const auto& [t, layout] : layouts) {
    if (std::find(reads.begin(), reads.end(), t) == reads.end() &&
        std::find(writes.begin(), writes.end(), t) == writes.end())
      throw Error("layout view of kernel " + kernel_name(graph, dag, c) + ": '" + t +
                  "' is not one of its tensors");
    const std::optional<LayoutMap> m = layout_map(layout, graph.value(t).shape);
    if (!m)
      throw Error("layout view of kernel " + kernel_name(graph, dag, c) + ": '" + t + "' (" +
                  shape_str(graph.value(t).shape) + ") in layout '" + layout +
                  "', which generated code cannot read (a permutation of its dims, or one "
                  "dim in whole blocks)");
    if (!m->identity()) map.emplace(t, *m);  // bfloat16 in its own order: no map
    if (has_bf16_suffix(layout)) {
      if (graph.value(t).dtype != DType::kFloat32)
        throw Error("layout view of kernel " + kernel_name(graph, dag, c) + ": '" + t + "' is " +
                    dtype_name(graph.value(t).dtype) + ", stored in layout '" + layout +
                    "' (bfloat16 stores float32 tensors only)");
      bfloat16.insert(t);
    }
  }
  auto with_bfloat16 = [&bfloat16](LayoutView view) {
    view.bfloat16 = bfloat16;
    return view;
  };
  if (std::optional<LayoutView> view = relabelled(graph, dag, c, reads, writes, map))
    return with_bfloat16(*std::move(view));
  if (std::optional<LayoutView> view = relabelled_channels_last(graph, dag, c, reads, writes, map))
    return with_bfloat16(*std::move(view));
  if (std::optional<LayoutView> view = relabelled_channel_blocks(graph, dag, c, reads, writes, map))
    return with_bfloat16(*std::move(view));
  LayoutView view;
  view.bfloat16 = bfloat16;
  PrimGraph& g = view.graph;
  g.name = graph.name;
  auto add = [&](LayoutAttrs attrs, const std::string& from, const std::string& to,
                 const Shape& to_shape, DType dtype) {
    Primitive p;
    p.name = to + "@view";
    p.origin = "layout view";
    p.inputs = {from};
    p.outputs = {to};
    p.attrs = std::move(attrs);
    g.values[to] = ValueInfo{dtype, to_shape};
    g.prims.push_back(std::move(p));
  };
  // The logical value of a side inside the view, and the split one between the two maps.
  auto logical = [](const std::string& t) { return t + "@logical"; };
  auto split = [](const std::string& t) { return t + "@split"; };
  std::set<std::string> viewed;  // read sides whose maps are in place
  for (int v : c.members) {
    Primitive p = graph.prims[dag.prim[v]];
    for (std::string& t : p.inputs) {
      const auto it = map.find(t);
      if (it == map.end()) {
        if (const Tensor* constant = graph.constant(t)) g.constants[t] = *constant;
        g.values[t] = graph.value(t);
        continue;
      }
      const bool read_side = std::find(reads.begin(), reads.end(), t) != reads.end();
      if (read_side && viewed.insert(t).second) {
        const LayoutMap& m = it->second;
        const Shape& shape = graph.value(t).shape;
        const DType dtype = graph.value(t).dtype;
        g.values[t] = ValueInfo{graph.value(t).dtype, m.stored_shape(shape)};
        const std::vector<int64_t> inverse = inverse_perm(m.perm);
        if (m.split < 0) {
          add(LayoutAttrs{layout::Transpose{inverse}}, t, logical(t), shape, dtype);
        } else {
          add(LayoutAttrs{layout::Transpose{inverse}}, t, split(t), m.split_shape(shape), dtype);
          add(LayoutAttrs{layout::Reshape{}}, split(t), logical(t), shape, dtype);
        }
      }
      t = logical(t);  // a read side, or a written side that members read too
    }
    std::vector<std::string> mapped_outputs;
    for (std::string& t : p.outputs) {
      const ValueInfo info = graph.value(t);
      if (map.count(t)) {
        mapped_outputs.push_back(t);
        t = logical(t);
      }
      g.values[t] = info;
    }
    g.prims.push_back(std::move(p));
    for (const std::string& t : mapped_outputs) {
      const LayoutMap& m = map.at(t);
      const Shape& shape = graph.value(t).shape;
      const DType dtype = graph.value(t).dtype;
      if (m.split < 0) {
        add(LayoutAttrs{layout::Transpose{m.perm}}, logical(t), t, m.stored_shape(shape), dtype);
      } else {
        add(LayoutAttrs{layout::Reshape{}}, logical(t), split(t), m.split_shape(shape), dtype);
        add(LayoutAttrs{layout::Transpose{m.perm}}, split(t), t, m.stored_shape(shape), dtype);
      }
    }
  }
  finish(reads, writes, graph, view);
  return view;
}

std::vector<std::string> bfloat16_sides(const PrimGraph& graph, const KernelDag& dag,
                                        const Candidate& c) {
  // A oneDNN candidate's sides are its native ones (a convolution takes no such layout);
  // only one with a linear member can be one.
  bool linear = false;
  for (int v : c.members) linear = linear || graph.prims[dag.prim[v]].kind() == PrimKind::kLinear;
  if ((linear && onednn_supports(graph, dag, c)) || !cpu_codegen_supports(graph, dag, c)) return {};
  std::vector<std::string> sides = kernel_reads(graph, dag, c);
  for (const std::string& t : kernel_writes(graph, dag, c)) sides.push_back(t);
  std::vector<std::string> kept;
  for (const std::string& t : sides) {
    const ValueInfo& info = graph.value(t);
    if (!graph.constant(t) && info.dtype == DType::kFloat32 && info.shape.size() >= 2 &&
        std::find(kept.begin(), kept.end(), t) == kept.end())
      kept.push_back(t);
  }
  return kept;
}

bool relabels_in_stored_order(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  size_t rank = 0;
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    const auto* layout = std::get_if<LayoutAttrs>(&p.attrs);
    if (p.kind() != PrimKind::kElementwise && p.kind() != PrimKind::kReduce &&
        p.kind() != PrimKind::kBroadcast &&
        !(layout && (std::holds_alternative<layout::Concat>(*layout) ||
                     std::holds_alternative<layout::Slice>(*layout) ||
                     std::holds_alternative<layout::Gather>(*layout))))
      return false;
    for (const auto* list : {&p.inputs, &p.outputs})
      for (const std::string& t : *list) {
        if (rank == 0) rank = graph.value(t).shape.size();
        if (graph.value(t).shape.size() != rank) return false;
      }
  }
  return rank > 0;
}

std::vector<std::string> layout_view_sides(const PrimGraph& graph, const KernelDag& dag,
                                           const Candidate& c, bool bf16) {
  if ((!bf16 && layout_agnostic(graph, dag, c)) || !cpu_codegen_supports(graph, dag, c)) return {};
  const bool relabels =
      relabels_in_stored_order(graph, dag, c) || relabels_channels_last(graph, dag, c);
  std::vector<std::string> offered;  // every side, or those transposes move
  if (relabels) {
    offered = kernel_reads(graph, dag, c);
    for (const std::string& t : kernel_writes(graph, dag, c)) offered.push_back(t);
  } else {
    offered = channels_last_transposed_sides(graph, dag, c);
  }
  std::vector<std::string> sides;
  for (const std::string& t : offered) {
    const ValueInfo& info = graph.value(t);
    if (graph.constant(t) || info.dtype != DType::kFloat32 || info.shape.size() < 3 ||
        info.shape.size() > 5)
      continue;
    if (wide_dims(info.shape) > 1) sides.push_back(t);
  }
  return sides;
}

}  // namespace kora
