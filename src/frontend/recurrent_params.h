// Resolved attributes and sizes of the recurrent operators RNN, GRU and LSTM: what their
// shape rules (infer_recurrent.cc) check and their fission (fission/rules_recurrent.cc)
// unrolls. In: the node (its inputs' shapes and its attributes). Out: the sizes, the
// direction, the layout, the activation functions of each direction with their alpha and
// beta, and the clip threshold; anything the ONNX specification does not allow is an
// error naming the node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/op_rules.h"

namespace kora {

// One activation function of the ONNX recurrent operators: Relu, Tanh, Sigmoid, Affine,
// LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus, with
// its alpha and beta (those it does not use are 0).
struct RecurrentActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

struct RecurrentParams {
  int64_t gates = 1;  // weight blocks per direction: RNN 1 (i), GRU 3 (z r h), LSTM 4 (i o f c)
  int64_t seq_length = 0, batch_size = 0, input_size = 0, hidden_size = 0;
  int64_t num_directions = 1;  // 2 for direction "bidirectional"
  bool reverse = false;        // direction "reverse"
  int64_t layout = 0;          // 0: X [seq, batch, input]; 1: X [batch, seq, input]
  // activations[d]: direction d's functions in the specification's order: RNN (f),
  // GRU (f, g), LSTM (f, g, h).
  std::vector<std::vector<RecurrentActivation>> activations;
  std::optional<double> clip;  // pre-activation values are clipped to [-clip, clip]
};

// Index of the optional inputs common to the three operators, and LSTM's own.
constexpr size_t kRecurrentB = 3, kRecurrentSequenceLens = 4, kRecurrentInitialH = 5,
                 kLstmInitialC = 6, kLstmP = 7;

RecurrentParams resolve_recurrent(const InferContext& c);

}  // namespace kora
