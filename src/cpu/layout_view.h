// Generated kernels on tensors stored in oneDNN's layouts (channels last "acdb", channel
// blocks "aBcd8b": src/base/layout_map.h): a candidate and the layouts of some of the
// tensors it reads or writes in; the same kernel as a graph of its own out, whose sides
// are the stored tensors. A read side T stored so becomes a graph input T of the stored
// shape ([N, H, W, C] for acdb, [N, C/8, H, W, 8] for aBcd8b), followed by a Transpose
// (and a Reshape joining the blocks) back to the logical shape that the members read; a
// written side becomes the members' value followed by the inverse maps. A kernel of
// elementwise, reduce, broadcast, concat, slice and gather members (a nearest resize) on sides all
// in one layout is instead relabelled into the stored order (reduce axes renumbered), so that a
// reduction over a channels-last tensor keeps the channels innermost, and so is a pool on sides all
// channels last or all in channel blocks of one size; only such kernels are offered views. The code
// generator composes those index maps with the members' (no data moves twice), so a
// squeeze-excitation's pooling and scaling, a global pool or any kernel with reductions, broadcasts
// or layout members reads and writes the channels-last activations of the oneDNN convolutions
// around it: the reorders at their boundaries disappear. A side stored as bfloat16 in its
// own order ("abc+bf16", what a bf16 matmul reads and writes) needs no map: it is only
// marked bfloat16, whatever the other sides' layouts. The view keeps the candidate's tensor
// names and their order (kernel_reads, kernel_writes), so it takes the same arguments as the
// candidate.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/layout_map.h"
#include "cpu/library.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

struct LayoutView {
  PrimGraph graph;  // the members and the transposes; inputs and outputs: the sides
  KernelDag dag;
  Candidate candidate;  // every node of `dag`
  // The sides stored as bfloat16 (a layout ending in "+bf16", --bf16): float32 in the
  // graph, bfloat16 in memory (generate_cpu_kernel's `bfloat16`).
  std::set<std::string> bfloat16;
};

// Throws kora::Error when a named tensor is not a side of the candidate or its layout has
// no map (layout_map) for the tensor's shape.
LayoutView layout_view(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                       const TensorLayouts& layouts);

// Whether the candidate's members are elementwise, reduce, broadcast, concat, slice and gather
// only, on tensors of one rank: then its kernel on sides all in one stored layout is the same
// kernel relabelled into the stored order (every other tensor it reads or writes with at most one
// dim above 1), which costs what the plain kernel costs. Other kernels read stored sides through
// transposes: correct, but a window or a reduction read that way can cost several times more
// (ResNet-50's max pool over channels last: 1.0 ms against 0.13).
bool relabels_in_stored_order(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// Whether the candidate pools (a window member) with elementwise, reduce and broadcast
// members of one rank each and reshapes that only drop or add dims of size 1, every wide
// activation it reads or writes of rank 3 to 5: then its kernel on sides all stored
// channels last is the same kernel relabelled with the channel dim last in every tensor
// (the windows [N, O1..On, K1..Kn, C], layout::Window::channels_last), so that a max pool
// between channels-last convolutions reads and writes their tensors with the channels
// innermost. In channel blocks, see pool_view_channel_blocks.
bool relabels_channels_last(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// The sides of a candidate that only transpose members moving the channels last read
// (timm's LayerNorm2d, a Swin block's permutes), or that a transpose moving them back to
// dim 1 writes: stored channels last, the view's transpose and the member's cancel, and
// the kernel reads or writes them in order, faster than on plain tensors. Other sides of
// such a kernel stay plain.
std::vector<std::string> channels_last_transposed_sides(const PrimGraph& graph,
                                                        const KernelDag& dag, const Candidate& c);
// A candidate offered views in channels last only (relabels_channels_last, or sides that
// transposes move channels last; and not relabels_in_stored_order).
bool views_channels_last_only(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// The channel blocks (of 8, 16) a pooling kernel (relabels_channels_last) also takes on
// sides all in blocks of one size, where every tensor has batch 1 and its channels in
// whole blocks (or one channel): relabelled [C / block, S.., block], the blocks a batch
// and the block the channels of a channels-last pool (a max pool between convolutions in
// oneDNN's float32 blocked layouts reads and writes them in place). Empty for others.
std::vector<int64_t> pool_view_channel_blocks(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c);

// The sides of a candidate that generated code can take in a stored layout: the
// float32 activations (not constants) of rank 3 to 5 with more than one dim above 1 (a
// [1, C, 1, 1] gate is a few bytes: it stays plain). Empty where the
// candidate is not generated code's, is not relabelled in the stored order
// (relabels_in_stored_order, or relabels_channels_last for pools: linear, opaque,
// transpose, pad, gather or tile members; where transposes move the channels last, the
// sides they read or write: channels_last_transposed_sides), or is
// layout-agnostic (layout_agnostic: it computes on any one float32 layout as it is, so
// it needs no view) unless `bf16`: the layouts are then bfloat16 ones, which an
// agnostic kernel reads through a view as any other.
std::vector<std::string> layout_view_sides(const PrimGraph& graph, const KernelDag& dag,
                                           const Candidate& c, bool bf16 = false);
// The sides of a candidate generated code can store as bfloat16 in their own order
// (plain_layout + kBf16, the identity map: the same kernel, its loads of them widened and
// its stores rounded), each on its own whatever the other sides' layouts: the float32
// activations (not constants) of rank 2 or more of a kernel generated code computes and
// oneDNN does not (oneDNN's take their native layouts only). What
// a bf16 matmul reads natively (onednn_native_layouts; LayoutCost::bfloat16_sides).
std::vector<std::string> bfloat16_sides(const PrimGraph& graph, const KernelDag& dag,
                                        const Candidate& c);

}  // namespace kora
