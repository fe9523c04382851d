// The random generators, run whole: RandomUniform, RandomNormal, RandomUniformLike,
// RandomNormalLike and Bernoulli. In: the node (attributes low/high, mean/scale, seed)
// and, for the *Like forms and Bernoulli, the input. Out: the drawn tensor.
//
// Draws come from a 64-bit Mersenne Twister seeded with the `seed` attribute (its float
// bits), or, without one, with a hash of the primitive's name: every run of a model draws
// the same values, and two generators of one model draw different ones. onnxruntime and
// numpy draw other values; what is checked is their distribution (uniform in [low, high),
// normal, Bernoulli 0/1 with the input's probability). A uniform is the top 53 bits of a
// draw over 2^53; a normal is Box-Muller's cosine branch.
#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

class Draws {
 public:
  explicit Draws(const Node& node) {
    uint64_t seed = std::hash<std::string>{}(node.name);
    if (node.has_attr("seed"))
      seed = 0x9E3779B97F4A7C15ull ^
             std::bit_cast<uint32_t>(static_cast<float>(node.attr_float("seed", 0)));
    engine_.seed(seed);
  }
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

std::vector<Tensor> run_random(const OpaqueCall& call) {
  const Node& node = call.node();
  const ValueInfo& out = call.out(0);
  Tensor y(out.dtype, out.shape);
  Draws draws(node);
  const std::string& op = node.op_type;
  if (op == "Bernoulli") {
    const Tensor& p = call.required(0);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double prob = p.double_at(i);
      if (!(prob >= 0 && prob <= 1))
        call.fail("probability " + std::to_string(prob) + " outside [0, 1]");
      set_element(y, i, draws.uniform() < prob ? 1.0 : 0.0);
    }
    return {y};
  }
  const bool normal = op == "RandomNormal" || op == "RandomNormalLike";
  const double a = normal ? node.attr_float("mean", 0) : node.attr_float("low", 0);
  const double b = normal ? node.attr_float("scale", 1) : node.attr_float("high", 1);
  if (!normal && !(a < b)) call.fail("low must be below high");
  for (int64_t i = 0; i < y.numel(); ++i)
    set_element(y, i, normal ? a + b * draws.normal() : a + (b - a) * draws.uniform());
  return {y};
}

}  // namespace kora::interp
