// Shape rules of the recurrent operators RNN, GRU and LSTM, and the resolution of their
// attributes (recurrent_params.h). In: X [seq, batch, input] (layout 1: [batch, seq,
// input]), W [dirs, gates*hidden, input], R [dirs, gates*hidden, hidden] and the optional
// B [dirs, 2*gates*hidden], sequence_lens [batch], initial_h (LSTM also initial_c)
// [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]) and LSTM's P [dirs, 3*hidden].
// Out, in X's dtype: Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]),
// Y_h and LSTM's Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
#include <algorithm>
#include <cctype>
#include <map>

#include "frontend/recurrent_params.h"

namespace kora {
namespace {

struct ActivationSpec {
  const char* name;  // as the specification spells it
  bool uses_alpha, uses_beta;
  double alpha, beta;  // defaults: those of the ONNX operator of the same name
};

constexpr ActivationSpec kActivations[] = {
    {"Relu", false, false, 0, 0},         {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},      {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0},  {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},         {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The node's activation functions, one list per direction. activation_alpha and
// activation_beta are consumed in order by the functions that take them; a function
// finding them used up takes its default.
std::vector<std::vector<RecurrentActivation>> resolve_activations(const InferContext& c,
                                                                  int64_t directions) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  std::vector<std::string> defaults = op == "RNN" ? std::vector<std::string>{"Tanh"}
                                      : op == "GRU"
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const size_t per_direction = defaults.size();
  std::vector<std::string> names;
  if (n.has_attr("activations")) {
    names = n.attributes.at("activations").strings;
    if (names.size() != per_direction * static_cast<size_t>(directions))
      c.fail("activations lists " + std::to_string(names.size()) + " functions, " + op + " with " +
             std::to_string(directions) + " direction(s) takes " +
             std::to_string(per_direction * directions));
  } else {
    for (int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  const std::vector<double> alphas = n.attr_floats("activation_alpha");
  const std::vector<double> betas = n.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<RecurrentActivation>> out(directions);
  for (size_t k = 0; k < names.size(); ++k) {
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& s : kActivations)
      if (lower(s.name) == lower(names[k])) spec = &s;
    if (!spec)
      c.fail("activation function '" + names[k] +
             "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
             "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus");
    RecurrentActivation a{spec->name, 0, 0};
    if (spec->uses_alpha) a.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : spec->alpha;
    if (spec->uses_beta) a.beta = next_beta < betas.size() ? betas[next_beta++] : spec->beta;
    out[k / per_direction].push_back(a);
  }
  return out;
}

void expect_shape(const InferContext& c, size_t i, const char* role, const Shape& want) {
  if (c.shape(i) != want)
    c.fail(std::string(role) + " has shape " + shape_str(c.shape(i)) + ", expected " +
           shape_str(want));
}

std::vector<ValueInfo> recurrent(const InferContext& c) {
  const RecurrentParams p = resolve_recurrent(c);
  const int64_t s = p.seq_length, n = p.batch_size, d = p.num_directions, h = p.hidden_size;
  const DType t = c.dtype(0);
  const Shape y = p.layout == 0 ? Shape{s, d, n, h} : Shape{n, s, d, h};
  const Shape state = p.layout == 0 ? Shape{d, n, h} : Shape{n, d, h};
  std::vector<ValueInfo> outs{ValueInfo{t, y}, ValueInfo{t, state}};
  if (c.node().op_type == "LSTM") outs.push_back(ValueInfo{t, state});
  return outs;
}

}  // namespace

RecurrentParams resolve_recurrent(const InferContext& c) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  RecurrentParams p;
  p.gates = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  const std::string direction = n.attr_string("direction", "forward");
  if (direction == "bidirectional")
    p.num_directions = 2;
  else if (direction == "reverse")
    p.reverse = true;
  else if (direction != "forward")
    c.fail("direction '" + direction + "' is not forward, reverse or bidirectional");
  p.layout = n.attr_int("layout", 0);
  if (p.layout != 0 && p.layout != 1)
    c.fail("layout " + std::to_string(p.layout) + " is not 0 or 1");

  if (!is_floating(c.dtype(0)))
    c.fail(std::string("X has dtype ") + dtype_name(c.dtype(0)) +
           ", expected a floating-point type");
  const Shape& x = c.shape(0);
  if (x.size() != 3) c.fail("X must have rank 3, it has shape " + shape_str(x));
  p.seq_length = x[p.layout == 0 ? 0 : 1];
  p.batch_size = x[p.layout == 0 ? 1 : 0];
  p.input_size = x[2];
  const Shape& r = c.shape(2);
  if (r.size() != 3) c.fail("R must have rank 3, it has shape " + shape_str(r));
  p.hidden_size = n.attr_int("hidden_size", r[2]);
  if (p.hidden_size <= 0 || p.hidden_size != r[2])
    c.fail("hidden_size " + std::to_string(p.hidden_size) + " does not match R " + shape_str(r));
  const int64_t d = p.num_directions, h = p.hidden_size, g = p.gates;
  expect_shape(c, 1, "W", {d, g * h, p.input_size});
  expect_shape(c, 2, "R", {d, g * h, h});
  if (c.has(kRecurrentB)) expect_shape(c, kRecurrentB, "B", {d, 2 * g * h});
  if (c.has(kRecurrentSequenceLens)) {
    expect_shape(c, kRecurrentSequenceLens, "sequence_lens", {p.batch_size});
    if (is_floating(c.dtype(kRecurrentSequenceLens)))
      c.fail("sequence_lens must hold integers (int32)");
  }
  const Shape state = p.layout == 0 ? Shape{d, p.batch_size, h} : Shape{p.batch_size, d, h};
  if (c.has(kRecurrentInitialH)) expect_shape(c, kRecurrentInitialH, "initial_h", state);
  if (op == "LSTM") {
    if (c.has(kLstmInitialC)) expect_shape(c, kLstmInitialC, "initial_c", state);
    if (c.has(kLstmP)) expect_shape(c, kLstmP, "P", {d, 3 * h});
  }
  for (size_t i : {size_t{1}, size_t{2}, kRecurrentB, kRecurrentInitialH, kLstmInitialC, kLstmP})
    if (i < c.num_inputs() && c.has(i) && c.dtype(i) != c.dtype(0))
      c.fail("input " + std::to_string(i) + " has dtype " + dtype_name(c.dtype(i)) + ", X has " +
             dtype_name(c.dtype(0)));

  p.activations = resolve_activations(c, d);
  if (n.has_attr("clip")) {
    p.clip = n.attr_float("clip", 0);
    if (!(*p.clip > 0)) c.fail("clip must be positive, it is " + std::to_string(*p.clip));
  }
  return p;
}

void add_recurrent_rules(RuleTable& t) {
  t["RNN"] = {recurrent, 3, 6};
  t["GRU"] = {recurrent, 3, 6};
  t["LSTM"] = {recurrent, 3, 8};
}

}  // namespace kora
