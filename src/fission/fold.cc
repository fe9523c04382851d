// Primitive-level constant folding. In: a primitive graph. Out: the same graph with each
// primitive that computes only from constants replaced by its value (weights
// transposed, normalization coefficients computed, ...), unless that would grow data:
// a broadcast is never folded, nor a primitive whose outputs hold more elements than its
// inputs and more than 4096 (a tile, a large pad).
#include "fission/fold.h"

#include <algorithm>

#include "kora/interpreter.h"

namespace kora {

int fold_constant_primitives(PrimGraph& g) {
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
    int64_t out_elements = 0;
    for (const std::string& t : p.outputs) out_elements += numel(g.value(t).shape);
    const bool grows = out_elements > std::max<int64_t>(in_elements, 4096);
    if (!all_constant || grows || p.kind() == PrimKind::kBroadcast) {
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
