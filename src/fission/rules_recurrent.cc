// Fission of the recurrent operators RNN, GRU and LSTM: the recurrence is unrolled at the
// model's static sequence length into linear, elementwise and layout primitives. In: the
// node and its parameters (resolve_recurrent, frontend/recurrent_params.h). Out: Y, Y_h
// and LSTM's Y_c as the ONNX specification defines them, for every direction, layout,
// activation function, clip, initial state, bias, peephole, GRU linear_before_reset and
// LSTM input_forget.
//
// The input projection X·Wᵀ plus the biases, for all time steps and both directions, is
// one matmul [seq*batch, input] x [input, dirs*gates*hidden]; each step slices its rows
// and adds one recurrent matmul H·Rᵀ (GRU with linear_before_reset 0: two, since the
// reset gate scales H before Rh) and the gates' elementwise functions. A constant
// sequence_lens shorter than the sequence masks the steps past each batch row's length:
// their Y rows are 0 and the state is held, so Y_h (Y_c) is the state after the row's
// last valid step (0 for a row of length 0); the reverse direction starts at that step.
// A sequence_lens computed at runtime is an error.
#include <string>
#include <vector>

#include "fission/builder.h"
#include "frontend/recurrent_params.h"

namespace kora {
namespace {

using S = ScalarOp;

// alpha * x + beta, leaving out the identities.
std::string affine(FissionBuilder& b, const std::string& x, double alpha, double beta) {
  std::string y = alpha == 1.0 ? x : b.ew(S::kMul, {x, alpha});
  return beta == 0.0 ? y : b.ew(S::kAdd, {y, beta});
}

// The activation functions of the recurrent operators, as the specification lists them.
std::string activate(FissionBuilder& b, const RecurrentActivation& f, const std::string& x) {
  const double alpha = f.alpha, beta = f.beta;
  if (f.name == "Relu") return b.ew(S::kRelu, {x});
  if (f.name == "Tanh") return b.ew(S::kTanh, {x});
  if (f.name == "Sigmoid") return b.ew(S::kSigmoid, {x});
  if (f.name == "Softplus") return b.ew(S::kSoftplus, {x});
  if (f.name == "Affine") return affine(b, x, alpha, beta);
  if (f.name == "LeakyRelu")
    return b.ew(S::kWhere, {b.ew(S::kLess, {x, 0.0}), b.ew(S::kMul, {x, alpha}), x});
  if (f.name == "ThresholdedRelu")
    return b.ew(S::kWhere, {b.ew(S::kGreaterEqual, {x, alpha}), x, 0.0});
  if (f.name == "ScaledTanh")
    return affine(b, b.ew(S::kTanh, {affine(b, x, beta, 0.0)}), alpha, 0.0);
  if (f.name == "HardSigmoid")
    return b.ew(S::kMax, {b.ew(S::kMin, {affine(b, x, alpha, beta), 1.0}), 0.0});
  if (f.name == "Elu") {
    const std::string neg = b.ew(S::kMul, {b.ew(S::kSub, {b.ew(S::kExp, {x}), 1.0}), alpha});
    return b.ew(S::kWhere, {b.ew(S::kLess, {x, 0.0}), neg, x});
  }
  if (f.name == "Softsign") return b.ew(S::kDiv, {x, b.ew(S::kAdd, {b.ew(S::kAbs, {x}), 1.0})});
  b.fail("internal error: activation function '" + f.name + "'");
}

// The state of one direction: H, and C for LSTM. An empty name is a state of zeros (no
// initial state given, before the first step).
struct State {
  std::string h, c;
};

class Unrolled {
 public:
  explicit Unrolled(FissionBuilder& b)
      : b_(b), p_(resolve_recurrent(InferContext(b.source(), b.node()))) {}

  void run() {
    const int64_t steps = p_.seq_length, n = p_.batch_size, dirs = p_.num_directions;
    if (steps == 0 || n == 0) b_.fail("an empty sequence or batch is not supported");
    resolve_lengths();
    project_input();
    std::vector<std::vector<std::string>> y(steps, std::vector<std::string>(dirs));
    std::vector<State> last(dirs);
    for (int64_t d = 0; d < dirs; ++d) {
      prepare_direction(d);
      State s{initial(kRecurrentInitialH, d), initial(kLstmInitialC, d)};
      const bool backwards = p_.reverse || d == 1;
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = backwards ? steps - 1 - k : k;
        State next = step(d, t, s);
        if (masked_) {
          const std::string valid = mask(t);
          y[t][d] = b_.ew(S::kWhere, {valid, next.h, 0.0});
          next.h = hold(valid, next.h, s.h);
          if (!next.c.empty()) next.c = hold(valid, next.c, s.c);
        } else {
          y[t][d] = next.h;
        }
        s = next;
      }
      last[d] = s;
      if (empty_rows_) {
        // A row of length 0 ends in state 0, whatever the initial state (as onnxruntime).
        const std::string started = mask(0);
        last[d].h = b_.ew(S::kWhere, {started, s.h, 0.0});
        if (!s.c.empty()) last[d].c = b_.ew(S::kWhere, {started, s.c, 0.0});
      }
    }
    bind_outputs(y, last);
  }

 private:
  std::string slice(const std::string& x, const std::vector<int64_t>& starts, Shape out) {
    return b_.layout(layout::Slice{starts, std::vector<int64_t>(starts.size(), 1)}, {x},
                     std::move(out));
  }

  std::string clip(const std::string& x) {
    if (!p_.clip) return x;
    return b_.ew(S::kMin, {b_.ew(S::kMax, {x, -*p_.clip}), *p_.clip});
  }

  std::string gate(const RecurrentActivation& f, const std::string& x) {
    return activate(b_, f, clip(x));
  }

  // Column block k ([batch, hidden]) of a [batch, gates*hidden] tensor.
  std::string block(const std::string& x, int64_t k, int64_t width = 1) {
    return slice(x, {0, k * p_.hidden_size}, {p_.batch_size, width * p_.hidden_size});
  }

  // where(valid, now, before); a zero state before stays zero where not valid.
  std::string hold(const std::string& valid, const std::string& now, const std::string& before) {
    if (before.empty()) return b_.ew(S::kWhere, {valid, now, 0.0});
    return b_.ew(S::kWhere, {valid, now, before});
  }

  void resolve_lengths() {
    lengths_.assign(p_.batch_size, p_.seq_length);
    if (!b_.has_in(kRecurrentSequenceLens)) return;
    const Tensor* t = b_.constant(b_.in(kRecurrentSequenceLens));
    if (!t)
      b_.fail("input '" + b_.node().inputs[kRecurrentSequenceLens] +
              "' (sequence_lens) must be a constant: kora unrolls the recurrence at compile "
              "time, at the model's sequence length");
    lengths_ = t->to_int64();
    for (int64_t len : lengths_) {
      if (len < 0 || len > p_.seq_length)
        b_.fail("sequence_lens holds " + std::to_string(len) + ", outside [0, " +
                std::to_string(p_.seq_length) + "]");
      masked_ = masked_ || len < p_.seq_length;
      empty_rows_ = empty_rows_ || len == 0;
    }
  }

  // Bool [batch, hidden]: which batch rows step t is valid for.
  std::string mask(int64_t t) {
    if (masks_.empty()) masks_.resize(p_.seq_length);
    if (masks_[t].empty()) {
      std::vector<int64_t> valid;
      for (int64_t len : lengths_) valid.insert(valid.end(), p_.hidden_size, t < len ? 1 : 0);
      masks_[t] =
          b_.add_constant(Tensor::from_int64(DType::kBool, {p_.batch_size, p_.hidden_size}, valid));
    }
    return masks_[t];
  }

  // xw_ [seq*batch, dirs*gates*hidden] = X·Wᵀ + the biases that do not depend on the state.
  void project_input() {
    const int64_t steps = p_.seq_length, n = p_.batch_size, dirs = p_.num_directions;
    const int64_t width = p_.gates * p_.hidden_size;
    std::string x = b_.in(0);
    if (p_.layout == 1) x = b_.transpose(x, {1, 0, 2});
    x = b_.reshape(x, {steps * n, p_.input_size});
    const std::string wt =
        b_.reshape(b_.transpose(b_.in(1), {2, 0, 1}), {p_.input_size, dirs * width});
    xw_ = b_.matmul(x, wt);
    if (!b_.has_in(kRecurrentB)) return;
    const std::string bias = b_.in(kRecurrentB);
    const std::string wb = slice(bias, {0, 0}, {dirs, width});
    std::string rb = slice(bias, {0, width}, {dirs, width});
    if (linear_before_reset()) {
      // Rbh is added to H·Rhᵀ inside the reset gate's product: not here.
      const int64_t zr = 2 * p_.hidden_size;
      layout::Pad pad{{0, 0}, {1, 1}, layout::PadMode::kConstant, 0.0};
      rb = b_.layout(pad, {slice(rb, {0, 0}, {dirs, zr})}, {dirs, width});
    }
    xw_ = b_.ew(S::kAdd, {xw_, b_.reshape(b_.ew(S::kAdd, {wb, rb}), {1, dirs * width})});
  }

  bool linear_before_reset() const {
    return b_.node().op_type == "GRU" && b_.node().attr_int("linear_before_reset", 0) != 0;
  }

  // Direction d's recurrent weights (transposed) and, where the operator has them, its
  // peepholes and GRU's recurrent h-gate bias.
  void prepare_direction(int64_t d) {
    const int64_t n = p_.batch_size, h = p_.hidden_size, width = p_.gates * h;
    const std::string r = b_.reshape(slice(b_.in(2), {d, 0, 0}, {1, width, h}), {width, h});
    rt_ = b_.transpose(r, {1, 0});
    peepholes_.clear();
    if (b_.node().op_type == "LSTM" && b_.has_in(kLstmP))
      for (int64_t k = 0; k < 3; ++k)
        peepholes_.push_back(b_.broadcast(slice(b_.in(kLstmP), {d, k * h}, {1, h}), {n, h}));
    rbh_.clear();
    if (linear_before_reset() && b_.has_in(kRecurrentB))
      rbh_ = b_.broadcast(slice(b_.in(kRecurrentB), {d, 5 * h}, {1, h}), {n, h});
  }

  // Direction d's slice [batch, hidden] of initial_h or initial_c; "" when absent.
  std::string initial(size_t input, int64_t d) {
    if (!b_.has_in(input)) return "";
    const int64_t n = p_.batch_size, h = p_.hidden_size;
    const std::string s = p_.layout == 0 ? slice(b_.in(input), {d, 0, 0}, {1, n, h})
                                         : slice(b_.in(input), {0, d, 0}, {n, 1, h});
    return b_.reshape(s, {n, h});
  }

  // X·Wᵀ + biases of step t, direction d: [batch, gates*hidden].
  std::string input_part(int64_t d, int64_t t) {
    const int64_t n = p_.batch_size, width = p_.gates * p_.hidden_size;
    return slice(xw_, {t * n, d * width}, {n, width});
  }

  State step(int64_t d, int64_t t, const State& s) {
    const std::string& op = b_.node().op_type;
    const std::vector<RecurrentActivation>& f = p_.activations[d];
    std::string pre = input_part(d, t);
    if (op == "RNN") {
      if (!s.h.empty()) pre = b_.ew(S::kAdd, {pre, b_.matmul(s.h, rt_)});
      return {gate(f[0], pre), ""};
    }
    if (op == "GRU") return gru_step(f, pre, s);
    return lstm_step(f, pre, s);
  }

  // z = f(Xz + H·Rzᵀ), r = f(Xr + H·Rrᵀ), h~ = g(Xh + (r*H)·Rhᵀ) or, with
  // linear_before_reset, g(Xh + r*(H·Rhᵀ + Rbh)); H' = (1 - z)*h~ + z*H.
  State gru_step(const std::vector<RecurrentActivation>& f, const std::string& pre,
                 const State& s) {
    const int64_t h = p_.hidden_size;
    std::string zr = block(pre, 0, 2), xh = block(pre, 2);
    std::string candidate;
    if (linear_before_reset()) {
      std::string hr;  // H·Rhᵀ + Rbh
      if (!s.h.empty()) {
        const std::string all = b_.matmul(s.h, rt_);
        zr = b_.ew(S::kAdd, {zr, block(all, 0, 2)});
        hr = block(all, 2);
      }
      if (!rbh_.empty()) hr = hr.empty() ? rbh_ : b_.ew(S::kAdd, {hr, rbh_});
      const std::string z = gate(f[0], block(zr, 0)), r = gate(f[0], block(zr, 1));
      if (!hr.empty()) xh = b_.ew(S::kAdd, {xh, b_.ew(S::kMul, {r, hr})});
      candidate = gate(f[1], xh);
      return {blend(z, candidate, s.h), ""};
    }
    if (!s.h.empty()) {
      const std::string rzr = slice(rt_, {0, 0}, {h, 2 * h});
      zr = b_.ew(S::kAdd, {zr, b_.matmul(s.h, rzr)});
    }
    const std::string z = gate(f[0], block(zr, 0)), r = gate(f[0], block(zr, 1));
    if (!s.h.empty()) {
      const std::string rh = slice(rt_, {0, 2 * h}, {h, h});
      xh = b_.ew(S::kAdd, {xh, b_.matmul(b_.ew(S::kMul, {r, s.h}), rh)});
    }
    candidate = gate(f[1], xh);
    return {blend(z, candidate, s.h), ""};
  }

  // (1 - z) * candidate + z * h
  std::string blend(const std::string& z, const std::string& candidate, const std::string& h) {
    const std::string keep = b_.ew(S::kMul, {b_.ew(S::kSub, {1.0, z}), candidate});
    return h.empty() ? keep : b_.ew(S::kAdd, {keep, b_.ew(S::kMul, {z, h})});
  }

  // i = f(Xi + H·Riᵀ + Pi*C), f = f(Xf + H·Rfᵀ + Pf*C) (input_forget: 1 - i),
  // c = g(Xc + H·Rcᵀ), C' = f*C + i*c, o = f(Xo + H·Roᵀ + Po*C'), H' = o*h(C').
  State lstm_step(const std::vector<RecurrentActivation>& f, std::string pre, const State& s) {
    if (!s.h.empty()) pre = b_.ew(S::kAdd, {pre, b_.matmul(s.h, rt_)});
    std::string gi = block(pre, 0), go = block(pre, 1), gf = block(pre, 2), gc = block(pre, 3);
    const bool peep = !peepholes_.empty();
    if (peep && !s.c.empty()) {
      gi = b_.ew(S::kAdd, {gi, b_.ew(S::kMul, {peepholes_[0], s.c})});
      gf = b_.ew(S::kAdd, {gf, b_.ew(S::kMul, {peepholes_[2], s.c})});
    }
    const std::string i = gate(f[0], gi);
    const std::string forget =
        b_.node().attr_int("input_forget", 0) != 0 ? b_.ew(S::kSub, {1.0, i}) : gate(f[0], gf);
    const std::string cell = gate(f[1], gc);
    std::string c = b_.ew(S::kMul, {i, cell});
    if (!s.c.empty()) c = b_.ew(S::kAdd, {b_.ew(S::kMul, {forget, s.c}), c});
    if (peep) go = b_.ew(S::kAdd, {go, b_.ew(S::kMul, {peepholes_[1], c})});
    const std::string o = gate(f[0], go);
    return {b_.ew(S::kMul, {o, activate(b_, f[2], c)}), c};
  }

  // [d][batch, hidden] states -> [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  std::string stack_states(const std::vector<std::string>& per_direction) {
    const int64_t n = p_.batch_size, h = p_.hidden_size, dirs = p_.num_directions;
    std::string s = b_.reshape(concat_rows(per_direction), {dirs, n, h});
    return p_.layout == 0 ? s : b_.transpose(s, {1, 0, 2});
  }

  std::string concat_rows(const std::vector<std::string>& parts) {
    if (parts.size() == 1) return parts[0];
    layout::Concat attrs{0, {}};
    int64_t offset = 0;
    for (const std::string& part : parts) {
      attrs.offsets.push_back(offset);
      offset += b_.shape(part)[0];
    }
    return b_.layout(attrs, parts, {offset, p_.hidden_size});
  }

  void bind_outputs(const std::vector<std::vector<std::string>>& y,
                    const std::vector<State>& last) {
    const int64_t steps = p_.seq_length, n = p_.batch_size, h = p_.hidden_size;
    const int64_t dirs = p_.num_directions;
    if (b_.wants_out(0)) {
      std::vector<std::string> rows;  // in [seq, dirs] order
      for (const std::vector<std::string>& at_t : y)
        rows.insert(rows.end(), at_t.begin(), at_t.end());
      std::string out = b_.reshape(concat_rows(rows), {steps, dirs, n, h});
      if (p_.layout == 1) out = b_.transpose(out, {2, 0, 1, 3});
      b_.bind(0, out);
    }
    std::vector<std::string> hs, cs;
    for (const State& s : last) {
      hs.push_back(s.h);
      cs.push_back(s.c);
    }
    if (b_.wants_out(1)) b_.bind(1, stack_states(hs));
    if (b_.node().op_type == "LSTM" && b_.wants_out(2)) b_.bind(2, stack_states(cs));
  }

  FissionBuilder& b_;
  const RecurrentParams p_;
  std::vector<int64_t> lengths_;        // valid steps per batch row
  bool masked_ = false;                 // some row is shorter than the sequence
  bool empty_rows_ = false;             // some row has length 0
  std::vector<std::string> masks_;      // per step, made on first use
  std::string xw_;                      // [seq*batch, dirs*gates*hidden]
  std::string rt_;                      // this direction's Rᵀ [hidden, gates*hidden]
  std::vector<std::string> peepholes_;  // LSTM Pi, Po, Pf [batch, hidden]
  std::string rbh_;                     // GRU with linear_before_reset: Rbh [batch, hidden]
};

void recurrent(FissionBuilder& b) { Unrolled(b).run(); }

}  // namespace

void add_recurrent_fission(FissionTable& t) {
  t["RNN"] = recurrent;
  t["GRU"] = recurrent;
  t["LSTM"] = recurrent;
}

}  // namespace kora
