// Canonical kernel signatures: a candidate (with its primitive graph and DAG) in, a
// 64-bit hash out that two kernels share exactly when they compute the same thing on
// the same shapes, up to where they slice -- e.g. the same block in each of 12
// transformer layers, or each time step of a recurrent cell; and the instance signature,
// which tells those slices apart too (one symbol per generated code).
//
// Each member gets a bottom-up hash: its kind, attributes, output types, and per input
// position either the hash of the member producing it or the type of the external tensor
// (and whether it is a constant: weights' values are ignored, their shapes are not).
// A slice's starts are ignored too: kernels that differ only in where they slice cost the
// same, like the time steps of an unrolled recurrent cell.
// The signature hashes the sorted multisets of (member hash, is output) and, per external
// tensor, the sorted (consumer hash, position) pairs that read it, so how external
// tensors are shared counts, while names and the members' order do not.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/fnv_hash.h"
#include "kora/candidates.h"

namespace kora {
namespace {

struct Hasher : FnvHash {
  void type(const ValueInfo& t) {
    i64(static_cast<int64_t>(t.dtype));
    ints(t.shape);
  }
};

void hash_layout(Hasher& h, const LayoutAttrs& attrs, bool starts) {
  h.u64(attrs.index());
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, layout::Transpose>) {
          h.ints(a.perm);
        } else if constexpr (std::is_same_v<T, layout::Slice>) {
          // Not the starts: the same slice at another offset (a recurrent cell's time
          // step, the other direction's half of a weight) does the same work, so kernels
          // that differ only there are one kernel to measure (each is still generated
          // from its own members).
          if (starts)
            h.ints(a.starts), h.ints(a.steps);
          else
            h.u64(a.starts.size()), h.ints(a.steps);
        } else if constexpr (std::is_same_v<T, layout::Pad>) {
          h.ints(a.begin), h.ints(a.stride), h.i64(static_cast<int64_t>(a.mode)), h.f64(a.value);
        } else if constexpr (std::is_same_v<T, layout::Concat>) {
          h.i64(a.axis), h.ints(a.offsets);
        } else if constexpr (std::is_same_v<T, layout::Gather>) {
          h.i64(a.axis), h.ints(a.indices);
        } else if constexpr (std::is_same_v<T, layout::Window>) {
          h.ints(a.strides), h.ints(a.dilations), h.ints(a.pads_begin), h.f64(a.fill);
          if (a.channels_last) h.u64(1);  // (signatures of the default form unchanged)
        }
      },
      attrs);
}

void hash_attrs(Hasher& h, const Primitive& p, bool starts) {
  h.u64(p.attrs.index());
  switch (p.kind()) {
    case PrimKind::kElementwise: {
      const auto& a = std::get<ElementwiseAttrs>(p.attrs);
      h.i64(static_cast<int64_t>(a.op));
      for (const Operand& o : a.operands) h.i64(o.input), h.f64(o.input < 0 ? o.value : 0.0);
      break;
    }
    case PrimKind::kReduce: {
      const auto& a = std::get<ReduceAttrs>(p.attrs);
      h.i64(static_cast<int64_t>(a.op));
      h.ints(a.axes);
      break;
    }
    case PrimKind::kBroadcast:
      break;
    case PrimKind::kLayout:
      hash_layout(h, std::get<LayoutAttrs>(p.attrs), starts);
      break;
    case PrimKind::kLinear: {
      const auto& a = std::get<LinearAttrs>(p.attrs);
      h.u64(a.index());
      if (const auto* c = std::get_if<ConvAttrs>(&a))
        h.i64(c->group), h.ints(c->strides), h.ints(c->dilations), h.ints(c->pads_begin),
            h.ints(c->pads_end);
      break;
    }
    case PrimKind::kOpaque: {
      const Node& n = std::get<OpaqueAttrs>(p.attrs).node;
      h.str(n.op_type);
      for (const auto& [key, attr] : n.attributes) {
        h.str(key);
        h.i64(static_cast<int64_t>(attr.kind));
        h.f64(attr.f), h.i64(attr.i), h.str(attr.s), h.ints(attr.ints);
        for (double f : attr.floats) h.f64(f);
        for (const std::string& s : attr.strings) h.str(s);
      }
      break;
    }
  }
}

uint64_t signature_of(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                      bool starts) {
  std::map<std::string, size_t> produced_by;  // tensor -> index into c.members
  for (size_t m = 0; m < c.members.size(); ++m)
    for (const std::string& t : graph.prims[dag.prim[c.members[m]]].outputs) produced_by[t] = m;

  std::vector<uint64_t> member_hash(c.members.size());
  std::map<std::string, std::vector<std::pair<uint64_t, size_t>>> external_reads;
  for (size_t m = 0; m < c.members.size(); ++m) {  // members ascend: producers come first
    const Primitive& p = graph.prims[dag.prim[c.members[m]]];
    Hasher h;
    hash_attrs(h, p, starts);
    for (const std::string& t : p.outputs) h.type(graph.value(t));
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      auto it = produced_by.find(p.inputs[i]);
      if (it != produced_by.end() && it->second < m) {
        h.u64(1), h.u64(member_hash[it->second]);
        // which output of a multi-output producer
        const auto& outs = graph.prims[dag.prim[c.members[it->second]]].outputs;
        h.u64(std::find(outs.begin(), outs.end(), p.inputs[i]) - outs.begin());
      } else {
        h.u64(2), h.type(graph.value(p.inputs[i]));
        h.u64(graph.constant(p.inputs[i]) != nullptr);
      }
    }
    member_hash[m] = h.h;
  }
  for (size_t m = 0; m < c.members.size(); ++m) {
    const Primitive& p = graph.prims[dag.prim[c.members[m]]];
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (!produced_by.count(p.inputs[i]))
        external_reads[p.inputs[i]].emplace_back(member_hash[m], i);
  }

  std::vector<std::pair<uint64_t, bool>> members;
  for (size_t m = 0; m < c.members.size(); ++m)
    members.emplace_back(member_hash[m],
                         std::binary_search(c.outputs.begin(), c.outputs.end(), c.members[m]));
  std::sort(members.begin(), members.end());
  std::vector<uint64_t> externals;
  for (auto& [tensor, reads] : external_reads) {
    std::sort(reads.begin(), reads.end());
    Hasher h;
    for (const auto& [consumer, position] : reads) h.u64(consumer), h.u64(position);
    externals.push_back(h.h);
  }
  std::sort(externals.begin(), externals.end());

  Hasher h;
  for (const auto& [hash, is_output] : members) h.u64(hash), h.u64(is_output);
  h.u64(0xfeed);
  for (uint64_t e : externals) h.u64(e);
  return h.h == 0 ? 1 : h.h;  // 0 means "not computed"
}

}  // namespace

uint64_t canonical_signature(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return signature_of(graph, dag, c, false);
}

uint64_t instance_signature(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return signature_of(graph, dag, c, true);
}

std::string signature_hex(uint64_t signature) { return hex64(signature); }

std::string kernel_name(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  std::string s;
  for (size_t i = 0; i < c.members.size() && i < 4; ++i)
    s += (i ? ", " : "") + graph.prims[dag.prim[c.members[i]]].name;
  if (c.members.size() > 4) s += ", ... (" + std::to_string(c.members.size()) + " primitives)";
  return s;
}

}  // namespace kora
