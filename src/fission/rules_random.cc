// Fission of the random generators (RandomUniform, RandomNormal, their *Like forms,
// Bernoulli): each is one opaque primitive the interpreter runs (src/interpreter/random.cc);
// RandomUniform and RandomNormal, which have no input, read a constant placeholder so
// that every primitive has one. Dropout in training mode with a ratio above 0 is composed
// from them (rules_normalization.cc).
#include "fission/builder.h"

namespace kora {
namespace {

void random_from_attributes(FissionBuilder& b) {
  Node node = b.node();
  node.inputs = {b.add_constant(Tensor(DType::kFloat32, {}))};
  b.bind(0, b.opaque_node(node, {b.out_info(0)})[0]);
}

}  // namespace

void add_random_fission(FissionTable& t) {
  t["RandomUniform"] = random_from_attributes;
  t["RandomNormal"] = random_from_attributes;
  for (const char* op : {"RandomUniformLike", "RandomNormalLike", "Bernoulli"})
    t[op] = [](FissionBuilder& b) { b.opaque(); };
}

}  // namespace kora
