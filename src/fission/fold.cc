// Primitive-level constant folding. In: a primitive graph. Out: the same graph with each
// primitive that computes only from constants replaced by its value (weights
// transposed, normalization coefficients computed, weights standardized, ...), unless
// that would grow data: a primitive whose outputs hold more elements than its inputs and
// more than 4096 (a tile, a large pad) is not folded, nor a broadcast, unless every
// primitive reading it computes from constants only and does not grow either (the
// broadcast of a weight's mean that a weight standardization subtracts: folded, so the
// whole standardization is; a bias broadcast to an activation's shape stays an index
// map).
#include "fission/fold.h"

#include <algorithm>
#include <map>
#include <set>

#include "kora/interpreter.h"

namespace kora {
namespace {

int64_t elements(const PrimGraph& g, const std::vector<std::string>& tensors) {
  int64_t n = 0;
  for (const std::string& t : tensors) n += numel(g.value(t).shape);
  return n;
}

bool grows(int64_t out_elements, int64_t in_elements) {
  return out_elements > std::max<int64_t>(in_elements, 4096);
}

// The tensors computable from constants alone, and the broadcasts of constants that only
// such non-growing primitives read: those may be folded too.
std::set<std::string> broadcasts_read_by_constant_work(const PrimGraph& g) {
  std::set<std::string> computable;
  std::map<std::string, std::vector<const Primitive*>> readers;
  for (const Primitive& p : g.prims) {
    bool all = !p.inputs.empty();
    for (const std::string& t : p.inputs) {
      all = all && (g.constant(t) || computable.count(t));
      readers[t].push_back(&p);
    }
    if (all)
      for (const std::string& t : p.outputs) computable.insert(t);
  }
  std::set<std::string> foldable;
  for (const Primitive& p : g.prims) {
    if (p.kind() != PrimKind::kBroadcast || !computable.count(p.output())) continue;
    const auto r = readers.find(p.output());
    if (r == readers.end()) continue;  // a graph output: an index map is enough
    bool ok = true;
    for (const Primitive* q : r->second)
      ok = ok && q->kind() != PrimKind::kBroadcast && computable.count(q->output()) &&
           !grows(elements(g, q->outputs), elements(g, q->inputs));
    if (ok) foldable.insert(p.output());
  }
  return foldable;
}

}  // namespace

int fold_constant_primitives(PrimGraph& g) {
  const std::set<std::string> broadcasts = broadcasts_read_by_constant_work(g);
  int folded = 0;
  std::vector<Primitive> kept;
  for (Primitive& p : g.prims) {
    bool all_constant = !p.inputs.empty();
    int64_t in_elements = 0;
    std::vector<const Tensor*> inputs;
    for (const std::string& t : p.inputs) {
      const Tensor* c = g.constant(t);
      all_constant = all_constant && c;
      if (c) in_elements += c->numel();
      inputs.push_back(c);
    }
    const bool broadcast = p.kind() == PrimKind::kBroadcast;
    if (!all_constant || (broadcast && !broadcasts.count(p.output())) ||
        (!broadcast && grows(elements(g, p.outputs), in_elements))) {
      kept.push_back(std::move(p));
      continue;
    }
    std::vector<Tensor> values = run_primitive(g, p, inputs);
    for (size_t i = 0; i < p.outputs.size(); ++i) g.constants[p.outputs[i]] = std::move(values[i]);
    ++folded;
  }
  g.prims = std::move(kept);
  return folded;
}

}  // namespace kora
