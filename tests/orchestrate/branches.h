// Test helper: four chains of `depth` activations (Relu, Sigmoid, Tanh, Abs in turn) on one
// input x [1, 4, 8, 8], concatenated: a wide fan-out and fan-in, as in an Inception module,
// whose candidates multiply across the branches.
#pragma once

#include <string>
#include <vector>

#include "frontend/model_builder.h"
#include "kora/fission.h"

namespace kora_test {

inline kora::PrimGraph four_branches(int depth) {
  ModelBuilder m;
  m.input("x", {1, 4, 8, 8});
  const char* ops[] = {"Relu", "Sigmoid", "Tanh", "Abs"};
  std::vector<std::string> tails;
  for (int b = 0; b < 4; ++b) {
    std::string in = "x";
    for (int i = 0; i < depth; ++i) {
      const std::string out = "b" + std::to_string(b) + "_" + std::to_string(i);
      m.node(ops[(b + i) % 4], {in}, {out}, {}, out);
      in = out;
    }
    tails.push_back(in);
  }
  m.node("Concat", tails, {"y"}, {attr_i("axis", 1)}, "concat");
  m.output("y");
  return kora::fission(import_model(m));
}

}  // namespace kora_test
