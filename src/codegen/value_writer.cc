// ValueWriter (codegen/value_writer.h), shared by the CPU and CUDA generators: a tensor
// and C expressions of its coordinates in, the name of a local holding its element there
// out (statements emitted into the current scope, one local per (tensor, coordinates), so
// shared subexpressions are computed once). An external tensor or a materialized member
// is a load; an elementwise member applies its function to its operands at the same
// coordinates; broadcast and layout members map the coordinates to their input's (index
// maps compose, no copies). Where a map has no input element (pad, window, concat ranges)
// the coordinate is clamped so the load is always safe, and the fill value is selected.
#include "codegen/value_writer.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>

#include "kora/error.h"

namespace kora::codegen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

bool is_int(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// c * k + b with trivial cases folded.
std::string affine(const std::string& c, int64_t k, int64_t b) {
  if (is_int(c)) return num(std::stoll(c) * k + b);
  std::string s = k == 1 ? c : "(" + c + ") * " + num(k);
  if (b == 0) return k == 1 ? c : "(" + s + ")";
  return "(" + s + (b > 0 ? " + " : " - ") + num(b > 0 ? b : -b) + ")";
}

// `e` where an operator of higher precedence than + applies to it: in parentheses unless
// it is a number or a name (a phase's coordinate may be a sum: "(i2 * 4) + 1").
std::string operand(const std::string& e) {
  const bool simple = !e.empty() && e.find_first_of(" +-*/%?:<>=&|") == std::string::npos;
  return simple || is_int(e) ? e : "(" + e + ")";
}

// `e` as a variable plus a constant, if it is one: "i2" (0), "(i2 + 160)", "(i2 - 3)", as
// affine() writes a slice's coordinate.
std::optional<std::pair<std::string, int64_t>> variable_plus(const std::string& e) {
  auto name = [](const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    });
  };
  if (name(e)) return std::make_pair(e, int64_t{0});
  if (e.size() < 7 || e.front() != '(' || e.back() != ')') return std::nullopt;
  const std::string inner = e.substr(1, e.size() - 2);
  const size_t at = inner.find(' ');
  if (at == std::string::npos || at + 3 > inner.size() || inner[at + 2] != ' ') return std::nullopt;
  const char sign = inner[at + 1];
  const std::string var = inner.substr(0, at), constant = inner.substr(at + 3);
  if ((sign != '+' && sign != '-') || !name(var) || !is_int(constant) || constant[0] == '-')
    return std::nullopt;
  const int64_t b = std::stoll(constant);
  return std::make_pair(var, sign == '+' ? b : -b);
}

std::string clamp(const std::string& c, int64_t lo, int64_t hi) {
  if (lo == hi) return num(lo);
  if (is_int(c)) return num(std::min<int64_t>(std::max<int64_t>(std::stoll(c), lo), hi));
  return "kora_clamp(" + c + ", " + num(lo) + ", " + num(hi) + ")";
}

}  // namespace

ValueWriter::ValueWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c)
    : graph_(graph),
      dag_(dag),
      c_(c),
      reads_(kernel_reads(graph, dag, c)),
      writes_(kernel_writes(graph, dag, c)) {
  for (int v : c.members) producer_[graph.prims[dag.prim[v]].output()] = &graph.prims[dag.prim[v]];
}

void ValueWriter::open_block(const std::string& header) {
  line(header + " {");
  const std::string indent = scope().indent + "  ";
  scopes_.emplace_back();
  scope().indent = indent;
}

void ValueWriter::close_block() {
  const std::string text = scope().os.str();
  scopes_.pop_back();
  scope().os << text;
  line("}");
}

std::string ValueWriter::offset(const Shape& shape, const Coords& coords) const {
  if (!known_offsets_.empty())
    if (auto k = known_offsets_.find({coords, shape}); k != known_offsets_.end()) return k->second;
  const std::vector<int64_t> strides = row_major_strides(shape);
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1 || coords[d] == "0") continue;
    s += (s.empty() ? "" : " + ") +
         (strides[d] == 1 ? coords[d] : "(" + coords[d] + ") * " + num(strides[d]));
  }
  return s.empty() ? "0" : s;
}

std::string ValueWriter::emit_local(DType t, const std::string& expr) {
  const std::string name = fresh("v");
  scope().os << scope().indent << "const " << ctype(t) << " " << name << " = " << expr << ";\n";
  return name;
}

std::string ValueWriter::value(const std::string& tensor, const Coords& coords) {
  std::string key = tensor;
  for (const std::string& c : coords) key += "|" + c;
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    if (auto it = s->memo.find(key); it != s->memo.end()) return it->second;
  if (auto b = bound_.find(tensor); b != bound_.end()) {
    if (b->second.first != coords) throw NotAtBoundCoords{};
    return b->second.second;
  }
  const ValueInfo& info = graph_.value(tensor);
  std::string expr;
  if (auto b = buffer_.find(tensor); b != buffer_.end()) {
    const auto base = buffer_base_.find(tensor);
    expr = b->second + "[" + offset(info.shape, coords) +
           (base == buffer_base_.end() ? "" : " - (" + base->second + ")") + "]";
  } else if (auto p = producer_.find(tensor); p != producer_.end()) {
    const Primitive& prim = *p->second;
    if (const auto* e = std::get_if<ElementwiseAttrs>(&prim.attrs)) {
      std::vector<std::string> args(prim.inputs.size());
      for (const Operand& o : e->operands)
        if (o.input >= 0 && args[o.input].empty())
          args[o.input] = value(prim.inputs[o.input], coords);
      // The divisor a broadcast along the last dim (a row's value): see elementwise_expr.
      bool row_divisor = false;
      if (e->op == ScalarOp::kDiv && e->operands.size() == 2 && e->operands[1].input >= 0) {
        const auto d = producer_.find(prim.inputs[e->operands[1].input]);
        if (d != producer_.end() && std::holds_alternative<BroadcastAttrs>(d->second->attrs)) {
          const Shape& from = graph_.value(d->second->inputs[0]).shape;
          row_divisor = !from.empty() && from.back() == 1 && info.shape.back() > 1;
        }
      }
      expr = elementwise_expr(graph_, prim, *e, args, row_divisor);
    } else if (std::holds_alternative<BroadcastAttrs>(prim.attrs)) {
      const Shape& in = graph_.value(prim.inputs[0]).shape;
      Coords c = coords;
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d] == 1) c[d] = "0";
      return scope().memo[key] = value(prim.inputs[0], c);
    } else if (const auto* l = std::get_if<LayoutAttrs>(&prim.attrs)) {
      expr = layout_value(prim, *l, coords);
      if (expr.rfind("v", 0) == 0 && expr.find_first_of(" ()[") == std::string::npos)
        return scope().memo[key] = expr;  // a plain local: no new one
    } else {
      throw Error("codegen: " + prim.describe() + " is not computed before its use");
    }
  } else if (auto r = in_ptr_.find(tensor); r != in_ptr_.end()) {
    expr = r->second + "[" + offset(info.shape, coords) + "]";
  } else {
    throw Error("codegen: tensor '" + tensor + "' is neither read nor computed");
  }
  return scope().memo[key] = emit_local(info.dtype, expr);
}

// Reshape: groups of non-1 dims of the output and input with equal products; within a
// group, the input coordinates come from the group's row-major linear index. Where the
// group's output coordinates are digits (a dim's own, or a composite's known_digits_) whose
// extents multiply to each input dim in turn, each input coordinate is its digits composed
// (no division: a head merge [6, 197, 64] -> [197, 384] looped as 6 x 64); else the flat
// index is divided and reduced modulo (counted in index_divisions_).
Coords ValueWriter::reshape_coords(const Shape& out, const Shape& in, const Coords& coords) {
  Coords result(in.size(), "0");
  std::vector<size_t> od, id;
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] != 1) od.push_back(d);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) id.push_back(d);
  size_t i = 0, j = 0;
  while (i < od.size() && j < id.size()) {
    size_t i1 = i + 1, j1 = j + 1;
    int64_t po = out[od[i]], pi = in[id[j]];
    while (po != pi) {
      if (po < pi)
        po *= out[od[i1++]];
      else
        pi *= in[id[j1++]];
    }
    if (i1 - i == 1 && j1 - j == 1) {
      result[id[j]] = coords[od[i]];
    } else if (!compose_digits(out, in, coords, od, id, i, i1, j, j1, result)) {
      std::string flat;
      for (size_t a = i; a < i1; ++a) {
        int64_t stride = 1;
        for (size_t b = a + 1; b < i1; ++b) stride *= out[od[b]];
        const std::string term =
            stride == 1 ? operand(coords[od[a]]) : operand(coords[od[a]]) + " * " + num(stride);
        flat += (flat.empty() ? "" : " + ") + term;
      }
      flat = "(" + flat + ")";
      for (size_t b = j; b < j1; ++b) {
        int64_t stride = 1;
        for (size_t e = b + 1; e < j1; ++e) stride *= in[id[e]];
        std::string c = stride == 1 ? flat : "(" + flat + " / " + num(stride) + ")";
        if (b != j) c = "(" + c + " % " + num(in[id[b]]) + ")";
        result[id[b]] = c;
      }
      if (!is_int(flat.substr(1, flat.size() - 2))) ++index_divisions_;
    }
    i = i1, j = j1;
  }
  return result;
}

bool ValueWriter::compose_digits(const Shape& out, const Shape& in, const Coords& coords,
                                 const std::vector<size_t>& od, const std::vector<size_t>& id,
                                 size_t i, size_t i1, size_t j, size_t j1, Coords& result) {
  Digits digits;  // the group's flat index, most significant first
  for (size_t a = i; a < i1; ++a) {
    const auto known = known_digits_.find(coords[od[a]]);
    if (known != known_digits_.end())
      digits.insert(digits.end(), known->second.begin(), known->second.end());
    else
      digits.push_back({coords[od[a]], out[od[a]]});
  }
  std::vector<std::string> composed;
  size_t k = 0;
  for (size_t b = j; b < j1; ++b) {
    Digits own;
    int64_t extent = 1;
    while (k < digits.size() && extent < in[id[b]]) {
      own.push_back(digits[k]);
      extent *= digits[k++].second;
    }
    if (extent != in[id[b]]) return false;
    std::string c;
    int64_t stride = extent;
    for (const auto& [e, n] : own) {
      stride /= n;
      if (e == "0") continue;
      const std::string term = stride == 1 ? operand(e) : operand(e) + " * " + num(stride);
      c += (c.empty() ? "" : " + ") + term;
    }
    if (c.empty()) c = "0";
    if (own.size() > 1 && c.find(' ') != std::string::npos) {
      c = "(" + c + ")";
      known_digits_[c] = own;
    }
    composed.push_back(c);
  }
  for (size_t b = j; b < j1; ++b) result[id[b]] = composed[b - j];
  return true;
}

std::string ValueWriter::layout_value(const Primitive& p, const LayoutAttrs& attrs,
                                      const Coords& coords) {
  const ValueInfo& out = graph_.value(p.output());
  const Shape& in = graph_.value(p.inputs[0]).shape;
  const size_t rank = out.shape.size();
  if (const auto* t = std::get_if<layout::Transpose>(&attrs)) {
    Coords c(in.size());
    for (size_t d = 0; d < rank; ++d) c[t->perm[d]] = coords[d];
    return value(p.inputs[0], c);
  }
  if (std::holds_alternative<layout::Reshape>(attrs))
    return value(p.inputs[0], reshape_coords(out.shape, in, coords));
  if (const auto* s = std::get_if<layout::Slice>(&attrs)) {
    Coords c(rank);
    for (size_t d = 0; d < rank; ++d)
      c[d] = in[d] == 1 ? "0" : affine(coords[d], s->steps[d], s->starts[d]);
    return value(p.inputs[0], c);
  }
  if (const auto* t = std::get_if<layout::Tile>(&attrs)) {
    (void)t;
    Coords c(rank);
    for (size_t d = 0; d < rank; ++d)
      c[d] = in[d] == 1              ? "0"
             : in[d] == out.shape[d] ? coords[d]
                                     : "(" + operand(coords[d]) + " % " + num(in[d]) + ")";
    return value(p.inputs[0], c);
  }
  if (const auto* g = std::get_if<layout::Gather>(&attrs)) {
    const std::string table = index_table(g->indices);
    Coords c = coords;
    c[g->axis] = in[g->axis] == 1 ? "0" : table + "[" + coords[g->axis] + "]";
    return value(p.inputs[0], c);
  }
  std::string fill, cond;
  auto add_cond = [&](const std::string& x) { cond += (cond.empty() ? "" : " && ") + x; };
  std::string inner;
  if (const auto* pad = std::get_if<layout::Pad>(&attrs)) {
    Coords c(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = in[d], b = pad->begin[d];
      const int64_t st = pad->stride.empty() ? 1 : pad->stride[d];
      if (b == 0 && st == 1 && n == out.shape[d]) {
        c[d] = coords[d];
        continue;
      }
      const std::string q = affine(coords[d], 1, -b);
      if (pad->mode == layout::PadMode::kEdge) {
        c[d] = clamp(q, 0, n - 1);
      } else if (pad->mode == layout::PadMode::kReflect) {
        c[d] = "kora_reflect(" + q + ", " + num(n) + ")";
      } else if (st == 1) {
        c[d] = clamp(q, 0, n - 1);
        if (b > 0) add_cond(q + " >= 0");
        if (out.shape[d] - b > n) add_cond(q + " < " + num(n));
      } else {
        c[d] = clamp("(" + q + ") / " + num(st), 0, n - 1);
        add_cond("(" + q + ") >= 0 && (" + q + ") % " + num(st) + " == 0 && (" + q + ") / " +
                 num(st) + " < " + num(n));
      }
    }
    inner = value(p.inputs[0], c);
    fill = literal(pad->value, out.dtype);
  } else if (const auto* w = std::get_if<layout::Window>(&attrs)) {
    const size_t n = in.size() - 2;
    // The first spatial dim of the input and of the output (after N, C; after N when the
    // channels are last).
    const size_t s0 = w->channels_last ? 1 : 2;
    Coords c = w->channels_last ? Coords{coords[0]} : Coords{coords[0], coords[1]};
    for (size_t i = 0; i < n; ++i) {
      std::string e = affine(coords[s0 + i], w->strides[i], -w->pads_begin[i]);
      if (w->dilations[i] != 0 && coords[s0 + n + i] != "0")
        e = "(" + e + " + " + affine(coords[s0 + n + i], w->dilations[i], 0) + ")";
      const std::string name = fresh("w");
      scope().os << scope().indent << "const int64_t " << name << " = " << e << ";\n";
      c.push_back(clamp(name, 0, in[s0 + i] - 1));
      add_cond("(" + name + " >= 0 && " + name + " < " + num(in[s0 + i]) + ")");
    }
    if (w->channels_last) c.push_back(coords[1 + 2 * n]);
    inner = value(p.inputs[0], c);
    fill = literal(w->fill, out.dtype);
  } else if (const auto* cat = std::get_if<layout::Concat>(&attrs)) {
    const int64_t axis = cat->axis;
    // Read where the axis coordinate is known to stay inside one input: that input.
    const auto moved = variable_plus(coords[axis]);
    std::optional<std::pair<int64_t, int64_t>> range;
    if (const auto r = known_ranges_.find(coords[axis]); r != known_ranges_.end())
      range = r->second;
    else if (const auto v = moved ? known_ranges_.find(moved->first) : known_ranges_.end();
             v != known_ranges_.end())
      range = std::make_pair(v->second.first + moved->second, v->second.second + moved->second);
    if (range)
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const Shape& ks = graph_.value(p.inputs[k]).shape;
        const int64_t n = ks[axis], off = cat->offsets[k];
        if (n == 0 || range->first < off || range->second > off + n) continue;
        Coords c = coords;
        for (size_t d = 0; d < rank; ++d)
          if (ks[d] == 1) c[d] = "0";
        c[axis] = n == 1 ? "0" : affine(coords[axis], 1, -off);
        return value(p.inputs[k], c);
      }
    if (collecting_cuts_ && moved)
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const int64_t off = cat->offsets[k], n = graph_.value(p.inputs[k]).shape[axis];
        concat_cuts_[moved->first].insert({off - moved->second, off + n - moved->second});
      }
    // The inputs in order of their offsets; the last one needs no test.
    std::vector<size_t> order;
    for (size_t k = 0; k < p.inputs.size(); ++k)
      if (graph_.value(p.inputs[k]).shape[axis] > 0) order.push_back(k);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cat->offsets[a] < cat->offsets[b]; });
    std::string expr;
    for (size_t q = 0; q < order.size(); ++q) {
      const size_t k = order[q];
      const Shape& ks = graph_.value(p.inputs[k]).shape;
      const int64_t n = ks[axis], off = cat->offsets[k];
      Coords c = coords;
      for (size_t d = 0; d < rank; ++d)
        if (ks[d] == 1) c[d] = "0";
      c[axis] = n == 1 ? "0" : clamp(affine(coords[axis], 1, -off), 0, n - 1);
      const std::string v = value(p.inputs[k], c);
      if (q + 1 == order.size())
        expr += v;
      else
        expr += "(" + coords[axis] + " < " + num(off + n) + ") ? " + v + " : ";
    }
    return expr;
  } else {
    throw Error("codegen: " + p.describe() + ": unknown layout map");
  }
  if (cond.empty()) return inner;
  return "(" + cond + ") ? " + inner + " : " + fill;
}

const std::set<std::string>& ValueWriter::deps(const std::string& tensor) {
  if (auto it = deps_.find(tensor); it != deps_.end()) return it->second;
  std::set<std::string> d;
  auto p = producer_.find(tensor);
  if (p != producer_.end()) {
    const PrimKind k = p->second->kind();
    if (k == PrimKind::kReduce || k == PrimKind::kLinear) {
      d.insert(tensor);
    } else {
      for (const std::string& i : p->second->inputs) {
        const std::set<std::string>& sub = deps(i);
        d.insert(sub.begin(), sub.end());
      }
    }
  }
  return deps_[tensor] = d;
}

}  // namespace kora::codegen
