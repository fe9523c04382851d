// Matching a linear member and its epilogue (src/codegen/linear_epilogue.h): walks from the
// linear member along the epilogue chain, turning each member into the bias, an epilogue op
// or nothing (identity, reshape), and checks that every member was used and only the last
// value is written.
#include "codegen/linear_epilogue.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace kora {
namespace {

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

Shape squeeze(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

// Operand dims `sp` given in coordinates `tp` (each dim 1 or tp's), re-expressed in
// coordinates `t`, which has the same dims other than 1 as `tp`.
Shape map_dims(const Shape& sp, const Shape& tp, const Shape& t) {
  std::vector<int64_t> kept;
  for (size_t i = 0; i < tp.size(); ++i)
    if (tp[i] != 1) kept.push_back(sp[i]);
  Shape s(t.size(), 1);
  size_t next = 0;
  for (size_t j = 0; j < t.size(); ++j)
    if (t[j] != 1) s[j] = kept.at(next++);
  return s;
}

EpilogueOp eltwise(EpilogueEltwise alg, float alpha = 0, float beta = 0) {
  EpilogueOp p;
  p.eltwise = alg;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

// One step of an activation branch: op and its immediate (if any).
struct Step {
  ScalarOp op;
  bool has_imm = false;
  double imm = 0;
  bool value_first = true;  // the branch value is operand 0
};

class Analyzer {
 public:
  Analyzer(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
           LinearPlanOptions options)
      : g_(graph),
        options_(options),
        reads_(kernel_reads(graph, dag, c)),
        writes_(kernel_writes(graph, dag, c)) {
    for (int v : c.members) members_.push_back(&graph.prims[dag.prim[v]]);
    used_.assign(members_.size(), false);
    for (size_t m = 0; m < members_.size(); ++m) {
      for (const std::string& t : members_[m]->outputs) producer_[t] = static_cast<int>(m);
      for (const std::string& t : members_[m]->inputs) {
        std::vector<int>& cs = consumers_[t];
        if (std::find(cs.begin(), cs.end(), static_cast<int>(m)) == cs.end())
          cs.push_back(static_cast<int>(m));
      }
    }
  }

  std::optional<LinearPlan> run(std::string* why) {
    if (!analyze()) {
      if (why) *why = why_;
      return std::nullopt;
    }
    return plan_;
  }

 private:
  bool fail(const std::string& m) {
    why_ = m;
    return false;
  }
  bool external(const std::string& t) const { return !producer_.count(t); }
  const Shape& shape(const std::string& t) const { return g_.value(t).shape; }
  int read_index(const std::string& t) const {
    auto it = std::find(reads_.begin(), reads_.end(), t);
    return it == reads_.end() ? -1 : static_cast<int>(it - reads_.begin());
  }
  bool only_consumer(const std::string& t, int m) const {
    auto it = consumers_.find(t);
    return t != writes_[0] && it != consumers_.end() && it->second == std::vector<int>{m};
  }
  static bool is_reshape(const Primitive& p) {
    const auto* l = std::get_if<LayoutAttrs>(&p.attrs);
    return l && std::holds_alternative<layout::Reshape>(*l);
  }
  static const ElementwiseAttrs* ew(const Primitive& p) {
    return std::get_if<ElementwiseAttrs>(&p.attrs);
  }
  // Tensor name of operand k of an elementwise member, "" for an immediate.
  static std::string operand_tensor(const Primitive& p, int k) {
    const Operand& o = ew(p)->operands[k];
    return o.input < 0 ? std::string() : p.inputs[o.input];
  }

  // The kernel read holding tensor `t` read by member `reader`: `t` itself, or a view of
  // a read through unused reshape and transpose members, each read only by the next (a
  // reshape only of contiguous data). Sets *strides to the element strides of `t` in
  // that read; -1 when `t` is no such view. With `scale`, the chain may also multiply (or
  // divide) by immediates, which *scale takes (a matmul operand scaled on its way, as
  // exporters write scaled dot-product attention: q and k^T each times d^-1/4).
  int view_of(const std::string& t, int reader, Shape* strides, double* scale = nullptr) {
    std::vector<int> chain;  // from t back to the read
    std::string at = t;
    int next = reader;
    double factor = 1;
    while (!external(at)) {
      const int m = producer_.at(at);
      const Primitive& p = *members_[m];
      const auto* l = std::get_if<LayoutAttrs>(&p.attrs);
      if (used_[m] || !only_consumer(at, next)) return -1;
      if (const double f = scale ? immediate_factor(p) : 0; f != 0) {
        factor *= f;
        chain.push_back(m);
        next = m;
        at = operand_tensor(p, ew(p)->operands[0].input < 0 ? 1 : 0);
        continue;
      }
      if (!l || !(std::holds_alternative<layout::Reshape>(*l) ||
                  std::holds_alternative<layout::Transpose>(*l)))
        return -1;
      chain.push_back(m);
      next = m;
      at = p.inputs[0];
    }
    Shape shape = this->shape(at);
    Shape st = row_major_strides(shape);
    for (size_t i = chain.size(); i-- > 0;) {
      const Primitive& p = *members_[chain[i]];
      const auto* l = std::get_if<LayoutAttrs>(&p.attrs);
      if (!l) continue;  // a scaling: the same coordinates
      const Shape& out = this->shape(p.output());
      if (const auto* tr = std::get_if<layout::Transpose>(l)) {
        Shape moved(out.size());
        for (size_t d = 0; d < out.size(); ++d) moved[d] = st.at(tr->perm[d]);
        st = moved;
      } else {
        if (st != row_major_strides(shape)) return -1;
        st = row_major_strides(out);
      }
      shape = out;
    }
    for (int m : chain) used_[m] = true;
    *strides = st;
    if (scale) *scale *= factor;
    return read_index(at);
  }
  // x * c, c * x or x / c for an immediate c (float32 throughout): c, or 1 / c; else 0.
  static double immediate_factor(const Primitive& p) {
    const ElementwiseAttrs* a = ew(p);
    if (!a || a->operands.size() != 2 || (a->operands[0].input < 0) == (a->operands[1].input < 0))
      return 0;
    const bool first = a->operands[0].input >= 0;
    const double c = a->operands[first ? 1 : 0].value;
    if (a->op == ScalarOp::kMul && std::isfinite(c)) return c;
    if (a->op == ScalarOp::kDiv && first && std::isfinite(c) && c != 0) return 1 / c;
    return 0;
  }
  // A view that moves no data: `t` in row-major order in the read.
  int plain_view_of(const std::string& t, int reader) {
    Shape st;
    const int index = view_of(t, reader, &st);
    return index >= 0 && st == row_major_strides(shape(t)) ? index : -1;
  }

  bool analyze() {
    if (writes_.size() != 1) return fail("writes " + std::to_string(writes_.size()) + " tensors");
    for (const std::string& t : reads_)
      if (g_.value(t).dtype != DType::kFloat32) return fail("reads non-float32 '" + t + "'");
    int linear = -1;
    for (size_t m = 0; m < members_.size(); ++m) {
      const Primitive& p = *members_[m];
      if (p.outputs.size() != 1 || g_.value(p.output()).dtype != DType::kFloat32)
        return fail(p.describe() + " is not a float32 value");
      if (p.kind() == PrimKind::kLinear) {
        if (linear >= 0) return fail("more than one linear member");
        linear = static_cast<int>(m);
      }
    }
    if (linear < 0) return fail("no linear member");
    const Primitive& lp = *members_[linear];
    used_[linear] = true;
    const LinearAttrs& la = std::get<LinearAttrs>(lp.attrs);
    if (lp.inputs.size() != 2) return fail(lp.describe() + " does not have two inputs");
    double scale = 1;  // of the operands, on their way (matmul)
    const bool matmul = std::holds_alternative<MatMulAttrs>(la);
    plan_.src = view_of(lp.inputs[0], linear, &plan_.src_strides, matmul ? &scale : nullptr);
    plan_.weights =
        view_of(lp.inputs[1], linear, &plan_.weights_strides, matmul ? &scale : nullptr);
    if (plan_.src < 0 || plan_.weights < 0)
      return fail(lp.describe() + " has an operand computed in the kernel (prologue)");
    // (a s) (b t) = (a b) s t: the product scaled first, before any bias (which is then an
    // epilogue add).
    if (scale != 1)
      plan_.epilogue.push_back(
          EpilogueOp::binary_scalar(EpilogueBinary::kMul, static_cast<float>(scale)));
    plan_.src_dims = shape(lp.inputs[0]);
    plan_.weights_dims = shape(lp.inputs[1]);
    plan_.dst_dims = shape(lp.output());
    plan_.weights_tensor = reads_[plan_.weights];
    if (const auto* conv = std::get_if<ConvAttrs>(&la)) {
      plan_.conv = true;
      if (plan_.src_strides != row_major_strides(plan_.src_dims) ||
          plan_.weights_strides != row_major_strides(plan_.weights_dims))
        return fail(lp.describe() + " reads a transposed view");
      const size_t n = plan_.src_dims.size() - 2;
      if (n < 1 || n > 3) return fail("convolution with " + std::to_string(n) + " spatial dims");
      ConvAttrs a = *conv;
      if (a.strides.empty()) a.strides.assign(n, 1);
      if (a.dilations.empty()) a.dilations.assign(n, 1);
      if (a.pads_begin.empty()) a.pads_begin.assign(n, 0);
      if (a.pads_end.empty()) a.pads_end.assign(n, 0);
      for (size_t i = 0; i < n; ++i)
        if (a.pads_begin[i] < 0 || a.pads_end[i] < 0) return fail("negative convolution pads");
      plan_.conv_attrs = a;
    } else if (plan_.src_dims.size() < 2 || plan_.src_dims.size() > 12) {
      return fail("matmul of rank " + std::to_string(plan_.src_dims.size()));
    }
    cur_ = lp.output();
    cur_shape_ = plan_.dst_dims;
    while (cur_ != writes_[0]) {
      const std::vector<int>& cs = consumers_[cur_];
      if (cs.size() == 2) {
        if (!activation(cs[0], cs[1]) && !activation(cs[1], cs[0]))
          return fail("'" + cur_ + "' is read by two members that form no known activation");
        continue;
      }
      if (cs.size() != 1)
        return fail("'" + cur_ + "' is read by " + std::to_string(cs.size()) + " members");
      const int m = cs[0];
      const Primitive& p = *members_[m];
      if (used_[m]) return fail(p.describe() + " reads the epilogue value twice");
      if (is_reshape(p)) {
        const Shape& out = shape(p.output());
        const bool rows = options_.reshaped_rows && !plan_.conv && !out.empty() &&
                          out.back() == plan_.dst_dims.back();
        if (squeeze(out) != squeeze(plan_.dst_dims) && !rows)
          return fail(p.describe() + " reshapes beyond dims of size 1");
        used_[m] = true;
        cur_ = p.output();
        cur_shape_ = shape(cur_);
        continue;
      }
      if (!ew(p)) return fail(p.describe() + " cannot be an epilogue op");
      if (!step(m)) return false;
    }
    for (size_t m = 0; m < members_.size(); ++m)
      if (!used_[m]) return fail(members_[m]->describe() + " is not on the epilogue chain");
    return true;
  }

  // The other operand `t` of epilogue member `reader`: a read of the full shape, or a
  // broadcast member (of a read, possibly through a reshape). Sets index and dims.
  bool side_operand(const std::string& t, int reader, int* index, Shape* dims) {
    if (external(t)) {
      *index = read_index(t);
      *dims = plan_.dst_dims;
      return *index >= 0;
    }
    const int m = producer_.at(t);
    const Primitive& p = *members_[m];
    if (used_[m] || p.kind() != PrimKind::kBroadcast || !only_consumer(t, reader))
      return fail("operand '" + t + "' of " + members_[reader]->describe() +
                  " is computed in the kernel");
    const std::string& s = p.inputs[0];
    *index = plain_view_of(s, m);
    if (*index < 0) return fail("broadcast operand '" + s + "' is computed in the kernel");
    used_[m] = true;
    const Shape& sp = shape(s);
    if (squeeze(cur_shape_) == squeeze(plan_.dst_dims)) {
      *dims = map_dims(sp, cur_shape_, plan_.dst_dims);
      return true;
    }
    // Rows reshaped (LinearPlanOptions::reshaped_rows): only an operand along the last dim maps.
    if (!sp.empty() && numel(sp) != sp.back())
      return fail("operand '" + s + "' is broadcast across reshaped rows");
    *dims = Shape(plan_.dst_dims.size(), 1);
    if (!sp.empty()) dims->back() = sp.back();
    return true;
  }

  bool step(int m) {
    const Primitive& p = *members_[m];
    const ElementwiseAttrs& a = *ew(p);
    std::vector<int> at;  // operands that are the chain value
    for (int k = 0; k < static_cast<int>(a.operands.size()); ++k)
      if (operand_tensor(p, k) == cur_) at.push_back(k);
    auto unsupported = [&]() { return fail(p.describe() + " has no epilogue op form"); };
    std::vector<EpilogueOp>& ops = plan_.epilogue;
    if (a.operands.size() == 1) {
      switch (a.op) {
        case ScalarOp::kIdentity:
        case ScalarOp::kCast:
          break;
        case ScalarOp::kRelu:
          ops.push_back(eltwise(EpilogueEltwise::kRelu));
          break;
        case ScalarOp::kTanh:
          ops.push_back(eltwise(EpilogueEltwise::kTanh));
          break;
        case ScalarOp::kAbs:
          ops.push_back(eltwise(EpilogueEltwise::kAbs));
          break;
        case ScalarOp::kSqrt:
          ops.push_back(eltwise(EpilogueEltwise::kSqrt));
          break;
        case ScalarOp::kExp:
          ops.push_back(eltwise(EpilogueEltwise::kExp));
          break;
        case ScalarOp::kLog:
          ops.push_back(eltwise(EpilogueEltwise::kLog));
          break;
        case ScalarOp::kSigmoid:
          ops.push_back(eltwise(EpilogueEltwise::kLogistic));
          break;
        case ScalarOp::kSoftplus:
          ops.push_back(eltwise(EpilogueEltwise::kSoftRelu));
          break;
        case ScalarOp::kNeg:
          ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMul, -1));
          break;
        case ScalarOp::kReciprocal:
          ops.push_back(eltwise(EpilogueEltwise::kPow, 1, -1));
          break;
        case ScalarOp::kRsqrt:
          ops.push_back(eltwise(EpilogueEltwise::kPow, 1, -0.5f));
          break;
        case ScalarOp::kRound:
          ops.push_back(eltwise(EpilogueEltwise::kRound));
          break;
        default:
          return unsupported();
      }
    } else if (a.operands.size() == 2 && at.size() == 2) {
      if (a.op != ScalarOp::kMul) return unsupported();
      ops.push_back(eltwise(EpilogueEltwise::kSquare));
    } else if (a.operands.size() == 2 && at.size() == 1) {
      const int k = at[0];
      const Operand& other = a.operands[1 - k];
      if (other.input < 0) {
        const float v = static_cast<float>(other.value);
        switch (a.op) {
          case ScalarOp::kAdd:
            ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kAdd, v));
            break;
          case ScalarOp::kSub:
            ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kSub, v));
            // v - x = -(x - v), exactly.
            if (k == 1) ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMul, -1));
            break;
          case ScalarOp::kMul:
            ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMul, v));
            break;
          case ScalarOp::kDiv:
            if (k != 0) return unsupported();
            ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kDiv, v));
            break;
          case ScalarOp::kMax:
            if (v == 0)
              ops.push_back(eltwise(EpilogueEltwise::kRelu));
            else
              ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMax, v));
            break;
          case ScalarOp::kMin:
            // max(x, lo) then min(x, hi): one clip (Relu6, Clip).
            if (!ops.empty() && ops.back().binary && ops.back().op == EpilogueBinary::kMax &&
                ops.back().operand < 0 && ops.back().scalar <= v)
              ops.back() = eltwise(EpilogueEltwise::kClip, ops.back().scalar, v);
            else if (!ops.empty() && !ops.back().binary &&
                     ops.back().eltwise == EpilogueEltwise::kRelu && ops.back().alpha == 0 &&
                     v >= 0)
              ops.back() = eltwise(EpilogueEltwise::kClip, 0, v);
            else
              ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMin, v));
            break;
          case ScalarOp::kPow:
            if (k != 0) return unsupported();
            ops.push_back(eltwise(EpilogueEltwise::kPow, 1, v));
            break;
          default:
            return unsupported();
        }
      } else {
        EpilogueOp b;
        b.binary = true;
        if (!side_operand(p.inputs[other.input], m, &b.operand, &b.operand_dims)) return false;
        const bool first = ops.empty() && plan_.bias < 0;
        const Shape& d = b.operand_dims;
        bool per_channel = plan_.conv && d[1] == plan_.dst_dims[1];
        bool per_column = !plan_.conv;
        for (size_t i = 0; i < d.size(); ++i) {
          if (i != 1 && d[i] != 1) per_channel = false;
          if (i + 1 != d.size() && d[i] != 1) per_column = false;
        }
        if (a.op == ScalarOp::kAdd && first && (per_channel || per_column)) {
          plan_.bias = b.operand;
          plan_.bias_dims = per_channel ? Shape{d[1]} : d;
        } else {
          switch (a.op) {
            case ScalarOp::kAdd:
              b.op = EpilogueBinary::kAdd;
              break;
            case ScalarOp::kMul:
              b.op = EpilogueBinary::kMul;
              break;
            case ScalarOp::kMax:
              b.op = EpilogueBinary::kMax;
              break;
            case ScalarOp::kMin:
              b.op = EpilogueBinary::kMin;
              break;
            case ScalarOp::kSub:
              b.op = EpilogueBinary::kSub;
              break;
            case ScalarOp::kDiv:
              if (k != 0) return unsupported();
              b.op = EpilogueBinary::kDiv;
              break;
            default:
              return unsupported();
          }
          ops.push_back(b);
          // other - x = -(x - other), exactly.
          if (a.op == ScalarOp::kSub && k == 1)
            ops.push_back(EpilogueOp::binary_scalar(EpilogueBinary::kMul, -1));
        }
      }
    } else {
      return unsupported();
    }
    used_[m] = true;
    cur_ = p.output();
    return true;
  }

  // x * f(x) with f one of sigmoid, hardsigmoid (1/6, 0.5) or 1 + erf(x / sqrt 2), where
  // the branch computing f(x) starts at member `branch` and `other` is the product member
  // or a scaling x * c feeding it.
  bool activation(int branch, int other) {
    if (used_[branch] || used_[other]) return false;
    std::vector<Step> steps;
    std::vector<int> chain;
    int m = branch;
    std::string value = cur_;
    // Follow single-operand elementwise members from x until a product.
    for (;;) {
      const Primitive& p = *members_[m];
      const ElementwiseAttrs* a = ew(p);
      if (!a || a->operands.size() > 2) return false;
      Step s{a->op};
      int tensors = 0, value_at = -1;
      for (int k = 0; k < static_cast<int>(a->operands.size()); ++k) {
        const std::string t = operand_tensor(p, k);
        if (t.empty()) {
          s.has_imm = true;
          s.imm = a->operands[k].value;
        } else {
          ++tensors;
          if (t == value) value_at = k;
        }
      }
      if (value_at < 0) return false;
      s.value_first = value_at == 0;
      if (tensors == 2) break;  // the product: m is the candidate product member
      steps.push_back(s);
      chain.push_back(m);
      const std::vector<int>& cs = consumers_[p.output()];
      if (cs.size() != 1 || !only_consumer(p.output(), cs[0]) || used_[cs[0]]) return false;
      value = p.output();
      m = cs[0];
    }
    // Member m multiplies `value` (the branch) with x or x * c.
    const Primitive& prod = *members_[m];
    if (prod.kind() != PrimKind::kElementwise || ew(prod)->op != ScalarOp::kMul) return false;
    const int value_k = operand_tensor(prod, 0) == value ? 0 : 1;
    const std::string factor = operand_tensor(prod, 1 - value_k);
    if (factor == value) return false;
    double scale = 1;
    bool scaled = false;
    if (factor == cur_) {
      if (m != other) return false;
    } else {
      // `other` computes x * c and only the product reads it.
      const Primitive& q = *members_[other];
      const ElementwiseAttrs* qa = ew(q);
      if (!qa || qa->op != ScalarOp::kMul || q.output() != factor || !only_consumer(factor, m))
        return false;
      const int xk = operand_tensor(q, 0) == cur_ ? 0 : 1;
      if (operand_tensor(q, xk) != cur_ || qa->operands[1 - xk].input >= 0) return false;
      scale = qa->operands[1 - xk].value;
      scaled = true;
    }
    auto is = [&](size_t i, ScalarOp op, double imm) {
      return i < steps.size() && steps[i].op == op && steps[i].has_imm && near(steps[i].imm, imm) &&
             (steps[i].value_first || op == ScalarOp::kAdd || op == ScalarOp::kMul ||
              op == ScalarOp::kMin || op == ScalarOp::kMax);
    };
    EpilogueEltwise alg;
    double factor_of_alg = 1;  // x * f(x) = factor_of_alg * alg(x)
    if (steps.size() == 1 && steps[0].op == ScalarOp::kSigmoid) {
      alg = EpilogueEltwise::kSwish;
    } else if (steps.size() == 4 && (is(0, ScalarOp::kMul, 1.0 / 6) || is(0, ScalarOp::kDiv, 6)) &&
               is(1, ScalarOp::kAdd, 0.5) && is(2, ScalarOp::kMin, 1) && is(3, ScalarOp::kMax, 0)) {
      alg = EpilogueEltwise::kHardswish;
    } else if (steps.size() == 3 &&
               (is(0, ScalarOp::kMul, M_SQRT1_2) || is(0, ScalarOp::kDiv, M_SQRT2)) &&
               steps[1].op == ScalarOp::kErf && is(2, ScalarOp::kAdd, 1)) {
      alg = EpilogueEltwise::kGeluErf;
      factor_of_alg = 2;
    } else {
      return false;
    }
    plan_.epilogue.push_back(eltwise(alg, alg == EpilogueEltwise::kSwish ? 1.0f : 0.0f));
    const double total = scale * factor_of_alg;
    if (total != 1)
      plan_.epilogue.push_back(
          EpilogueOp::binary_scalar(EpilogueBinary::kMul, static_cast<float>(total)));
    for (int k : chain) used_[k] = true;
    used_[m] = true;
    if (scaled) used_[other] = true;
    cur_ = prod.output();
    return true;
  }

  const PrimGraph& g_;
  const LinearPlanOptions options_;
  std::vector<std::string> reads_, writes_;
  std::vector<const Primitive*> members_;
  std::vector<bool> used_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  LinearPlan plan_;
  std::string cur_;
  Shape cur_shape_;
  std::string why_;
};

}  // namespace

std::optional<LinearPlan> match_linear_epilogue(const PrimGraph& graph, const KernelDag& dag,
                                                const Candidate& c, std::string* why,
                                                LinearPlanOptions options) {
  return Analyzer(graph, dag, c, options).run(why);
}

}  // namespace kora
