// Constant folding. In: a node whose inputs are constants (or, for Shape and Size, whose
// input shapes are known) and its inferred output types. Out: the output values. Covers
// the shape arithmetic exporters emit (Shape, Gather, Unsqueeze, Concat, Cast, Slice,
// Split, arithmetic, comparisons, Where, Range, ConstantOfShape, ...) and small elementwise
// math.
#include "frontend/constant_fold.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "frontend/layout_params.h"
#include "interpreter/kernels.h"

namespace kora {
namespace {

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// Calls fn(linear index, coordinates) for every coordinate of `shape`, row-major.
template <typename F>
void for_each_coord(const Shape& shape, F&& fn) {
  const int64_t n = numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(i, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Offset into an input of shape `in` read at output coordinate `idx` under broadcasting.
int64_t broadcast_offset(const Shape& in, const std::vector<int64_t>& in_strides,
                         const std::vector<int64_t>& idx) {
  const size_t lead = idx.size() - in.size();
  int64_t off = 0;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) off += idx[lead + d] * in_strides[d];
  return off;
}

// Builds an output by copying, for each output element, the input element at `source`.
Tensor gather_elements_by(const Tensor& in, const ValueInfo& out,
                          const std::function<int64_t(const std::vector<int64_t>&)>& source) {
  Tensor t(out.dtype, out.shape);
  const size_t es = dtype_size(in.dtype());
  for_each_coord(out.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
    std::memcpy(t.mutable_bytes() + i * es, in.bytes() + source(idx) * es, es);
  });
  return t;
}

using Values = std::vector<double>;

// Elementwise evaluation with broadcasting. Integer inputs are computed in int64 so large
// values (INT64_MAX in Slice ends) stay exact; floating ones in double.
Tensor elementwise(const InferContext& c, const ValueInfo& out,
                   const std::function<double(const Values&)>& f_float,
                   const std::function<int64_t(const std::vector<int64_t>&)>& f_int) {
  std::vector<const Tensor*> ins;
  bool floating = false;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has(i)) continue;
    ins.push_back(c.constant(i));
    if (is_floating(ins.back()->dtype())) floating = true;
  }
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : ins) strides.push_back(strides_of(t->shape()));
  Tensor result(out.dtype, out.shape);
  Values fv(ins.size());
  std::vector<int64_t> iv(ins.size());
  for_each_coord(out.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
    for (size_t k = 0; k < ins.size(); ++k) {
      const int64_t off = broadcast_offset(ins[k]->shape(), strides[k], idx);
      if (floating || !f_int)
        fv[k] = ins[k]->double_at(off);
      else
        iv[k] = ins[k]->int64_at(off);
    }
    if (floating || !f_int)
      set_element(result, i, f_float(fv));
    else
      set_element_int(result, i, f_int(iv));
  });
  return result;
}

template <typename Op>
Tensor binary(const InferContext& c, const ValueInfo& out, Op op) {
  return elementwise(
      c, out, [&](const Values& v) { return static_cast<double>(op(v[0], v[1])); },
      [&](const std::vector<int64_t>& v) { return static_cast<int64_t>(op(v[0], v[1])); });
}

Tensor unary_float(const InferContext& c, const ValueInfo& out, double (*f)(double)) {
  return elementwise(
      c, out, [f](const Values& v) { return f(v[0]); }, nullptr);
}

int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer division by zero in a constant expression");
  return a / b;
}

using Folder = std::function<Tensor(const InferContext&, const ValueInfo&)>;

const std::map<std::string, Folder>& folders() {
  static const std::map<std::string, Folder> table = {
      {"Shape",
       [](const InferContext& c, const ValueInfo& out) {
         const Shape& s = c.shape(0);
         const int64_t r = static_cast<int64_t>(s.size());
         int64_t start = c.node().attr_int("start", 0);
         if (start < 0) start += r;
         start = std::clamp<int64_t>(start, 0, r);
         return Tensor::from_int64(DType::kInt64, out.shape,
                                   Shape(s.begin() + start, s.begin() + start + out.shape[0]));
       }},
      {"Size",
       [](const InferContext& c, const ValueInfo& out) {
         return Tensor::from_int64(DType::kInt64, out.shape, {numel(c.shape(0))});
       }},
      {"Identity", [](const InferContext& c, const ValueInfo&) { return *c.constant(0); }},
      {"Reshape", [](const InferContext& c,
                     const ValueInfo& out) { return c.constant(0)->reshaped(out.shape); }},
      {"Cast",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& in = *c.constant(0);
         Tensor t(out.dtype, out.shape);
         for (int64_t i = 0; i < in.numel(); ++i) {
           if (is_floating(in.dtype()))
             set_element(t, i, in.double_at(i));
           else
             set_element_int(t, i, in.int64_at(i));
         }
         return t;
       }},
      {"Gather",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& x = *c.constant(0);
         const Tensor& ind = *c.constant(1);
         const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
         int64_t outer = 1, inner = 1;
         for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
         for (size_t d = axis + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
         const int64_t dim = x.shape()[axis], k = ind.numel();
         const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
         Tensor t(out.dtype, out.shape);
         for (int64_t o = 0; o < outer; ++o)
           for (int64_t j = 0; j < k; ++j) {
             int64_t at = ind.int64_at(j);
             if (at < 0) at += dim;
             if (at < 0 || at >= dim)
               c.fail("index " + std::to_string(ind.int64_at(j)) + " out of range for dim " +
                      std::to_string(dim));
             std::memcpy(t.mutable_bytes() + (o * k + j) * block,
                         x.bytes() + (o * dim + at) * block, block);
           }
         return t;
       }},
      {"Concat",
       [](const InferContext& c, const ValueInfo& out) {
         const int64_t axis = c.axis(c.node().attr_int("axis", 0), c.rank(0));
         int64_t outer = 1;
         for (int64_t d = 0; d < axis; ++d) outer *= out.shape[d];
         const size_t es = dtype_size(out.dtype);
         const int64_t out_row = numel(out.shape) / std::max<int64_t>(outer, 1);
         Tensor t(out.dtype, out.shape);
         int64_t col = 0;
         for (size_t i = 0; i < c.num_inputs(); ++i) {
           if (!c.has(i)) continue;
           const Tensor& in = *c.constant(i);
           const int64_t row = outer ? in.numel() / outer : 0;
           for (int64_t o = 0; o < outer && row > 0; ++o)
             std::memcpy(t.mutable_bytes() + (o * out_row + col) * es, in.bytes() + o * row * es,
                         static_cast<size_t>(row) * es);
           col += row;
         }
         return t;
       }},
      {"Slice",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& x = *c.constant(0);
         const std::vector<SliceAxis> axes = resolve_slice(c);
         const std::vector<int64_t> st = strides_of(x.shape());
         return gather_elements_by(x, out, [&](const std::vector<int64_t>& idx) {
           int64_t off = 0;
           for (size_t d = 0; d < idx.size(); ++d)
             off += (axes[d].start + idx[d] * axes[d].step) * st[d];
           return off;
         });
       }},
      {"Transpose",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& x = *c.constant(0);
         std::vector<int64_t> perm = c.node().attr_ints("perm");
         if (perm.empty())
           for (int64_t i = c.rank(0) - 1; i >= 0; --i) perm.push_back(i);
         const std::vector<int64_t> st = strides_of(x.shape());
         return gather_elements_by(x, out, [&](const std::vector<int64_t>& idx) {
           int64_t off = 0;
           for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[c.axis(perm[d], c.rank(0))];
           return off;
         });
       }},
      {"Expand",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& x = *c.constant(0);
         const std::vector<int64_t> st = strides_of(x.shape());
         return gather_elements_by(x, out, [&](const std::vector<int64_t>& idx) {
           return broadcast_offset(x.shape(), st, idx);
         });
       }},
      {"Tile",
       [](const InferContext& c, const ValueInfo& out) {
         const Tensor& x = *c.constant(0);
         const std::vector<int64_t> st = strides_of(x.shape());
         return gather_elements_by(x, out, [&](const std::vector<int64_t>& idx) {
           int64_t off = 0;
           for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x.shape()[d]) * st[d];
           return off;
         });
       }},
      {"ConstantOfShape",
       [](const InferContext& c, const ValueInfo& out) {
         Tensor t(out.dtype, out.shape);
         if (const Tensor* v = c.node().attr_tensor("value")) {
           const size_t es = dtype_size(out.dtype);
           for (int64_t i = 0; i < t.numel(); ++i)
             std::memcpy(t.mutable_bytes() + i * es, v->bytes(), es);
         }
         return t;
       }},
      {"Range",
       [](const InferContext& c, const ValueInfo& out) {
         Tensor t(out.dtype, out.shape);
         const Tensor& start = *c.constant(0);
         const Tensor& delta = *c.constant(2);
         for (int64_t i = 0; i < t.numel(); ++i) {
           if (is_floating(out.dtype))
             set_element(t, i, start.double_at(0) + static_cast<double>(i) * delta.double_at(0));
           else
             set_element_int(t, i, start.int64_at(0) + i * delta.int64_at(0));
         }
         return t;
       }},
      {"Add",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::plus<>()); }},
      {"Sub",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::minus<>()); }},
      {"Mul",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::multiplies<>()); }},
      {"Div",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return v[0] / v[1]; },
             [](const std::vector<int64_t>& v) { return int_div(v[0], v[1]); });
       }},
      {"Mod",
       [](const InferContext& c, const ValueInfo& o) {
         const bool fmod = c.node().attr_int("fmod", 0) != 0;
         return elementwise(
             c, o,
             [fmod](const Values& v) {
               double r = std::fmod(v[0], v[1]);
               if (!fmod && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
               return r;
             },
             [fmod](const std::vector<int64_t>& v) {
               if (v[1] == 0) throw Error("integer modulo by zero in a constant expression");
               int64_t r = v[0] % v[1];
               if (!fmod && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
               return r;
             });
       }},
      {"Max",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return *std::max_element(v.begin(), v.end()); },
             [](const std::vector<int64_t>& v) { return *std::max_element(v.begin(), v.end()); });
       }},
      {"Min",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return *std::min_element(v.begin(), v.end()); },
             [](const std::vector<int64_t>& v) { return *std::min_element(v.begin(), v.end()); });
       }},
      // Clip(x, min?, max?): TensorFlow's "same" padding computed from the input's shape
      // (timm's tf_* models clip a pad at 0). Opset 6's min and max attributes too.
      {"Clip",
       [](const InferContext& c, const ValueInfo& o) {
         const bool lo = c.has(1), hi = c.has(2);
         const double inf = std::numeric_limits<double>::infinity();
         const double lo_attr = c.node().attr_float("min", -inf);
         const double hi_attr = c.node().attr_float("max", inf);
         return elementwise(
             c, o,
             [=](const Values& v) {
               const double a = lo ? v[1] : lo_attr, b = hi ? v[lo ? 2 : 1] : hi_attr;
               return v[0] != v[0] ? v[0] : std::min(std::max(v[0], a), b);
             },
             [=](const std::vector<int64_t>& v) {
               int64_t y = v[0];
               if (lo) y = std::max(y, v[1]);
               if (hi) y = std::min(y, v[lo ? 2 : 1]);
               return y;
             });
       }},
      {"Equal",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::equal_to<>()); }},
      {"Less",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::less<>()); }},
      {"LessOrEqual",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::less_equal<>()); }},
      {"Greater",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::greater<>()); }},
      {"GreaterOrEqual", [](const InferContext& c,
                            const ValueInfo& o) { return binary(c, o, std::greater_equal<>()); }},
      {"And", [](const InferContext& c,
                 const ValueInfo& o) { return binary(c, o, std::logical_and<>()); }},
      {"Or",
       [](const InferContext& c, const ValueInfo& o) { return binary(c, o, std::logical_or<>()); }},
      {"Not",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return v[0] == 0 ? 1.0 : 0.0; },
             [](const std::vector<int64_t>& v) -> int64_t { return v[0] == 0; });
       }},
      {"Where",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return v[0] != 0 ? v[1] : v[2]; },
             [](const std::vector<int64_t>& v) { return v[0] != 0 ? v[1] : v[2]; });
       }},
      {"Neg",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return -v[0]; },
             [](const std::vector<int64_t>& v) { return -v[0]; });
       }},
      {"Abs",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return std::fabs(v[0]); },
             [](const std::vector<int64_t>& v) { return v[0] < 0 ? -v[0] : v[0]; });
       }},
      {"Relu",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return v[0] > 0 ? v[0] : 0.0; },
             [](const std::vector<int64_t>& v) { return v[0] > 0 ? v[0] : int64_t{0}; });
       }},
      {"Sqrt",
       [](const InferContext& c, const ValueInfo& o) { return unary_float(c, o, std::sqrt); }},
      {"Exp",
       [](const InferContext& c, const ValueInfo& o) { return unary_float(c, o, std::exp); }},
      {"Log",
       [](const InferContext& c, const ValueInfo& o) { return unary_float(c, o, std::log); }},
      {"Floor",
       [](const InferContext& c, const ValueInfo& o) { return unary_float(c, o, std::floor); }},
      {"Ceil",
       [](const InferContext& c, const ValueInfo& o) { return unary_float(c, o, std::ceil); }},
      {"Reciprocal",
       [](const InferContext& c, const ValueInfo& o) {
         return unary_float(c, o, [](double x) { return 1.0 / x; });
       }},
      // A position embedding's side from its length (DINOv2: 256 ** 0.5, cast to int64).
      {"Pow",
       [](const InferContext& c, const ValueInfo& o) {
         return elementwise(
             c, o, [](const Values& v) { return std::pow(v[0], v[1]); },
             [](const std::vector<int64_t>& v) { return interp::int_pow(v[0], v[1]); });
       }},
      {"Round",
       [](const InferContext& c, const ValueInfo& o) {
         return unary_float(c, o, std::nearbyint);  // halves to even, as ONNX rounds
       }},
  };
  return table;
}

// Split: output k is the input's slice along the axis after the outputs before it.
std::vector<Tensor> split(const InferContext& c, const std::vector<ValueInfo>& outputs) {
  const Tensor& x = *c.constant(0);
  const size_t axis = static_cast<size_t>(c.axis(c.node().attr_int("axis", 0), c.rank(0)));
  const std::vector<int64_t> st = strides_of(x.shape());
  std::vector<Tensor> parts;
  int64_t offset = 0;
  for (const ValueInfo& out : outputs) {
    parts.push_back(gather_elements_by(x, out, [&](const std::vector<int64_t>& idx) {
      int64_t off = offset * st[axis];
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
      return off;
    }));
    offset += out.shape[axis];
  }
  return parts;
}

// Operators that only relabel the shape of their first input.
bool is_reshape_like(const std::string& op) {
  return op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

}  // namespace

bool folds_from_shapes(const std::string& op_type) {
  return op_type == "Shape" || op_type == "Size";
}

std::optional<std::vector<Tensor>> fold_node(const InferContext& c,
                                             const std::vector<ValueInfo>& outputs) {
  const std::string& op = c.node().op_type;
  if (is_reshape_like(op)) return std::vector<Tensor>{c.constant(0)->reshaped(outputs[0].shape)};
  if (op == "Split") {
    for (size_t k = 0; k < outputs.size(); ++k)
      if (!c.node().has_output(k)) return std::nullopt;
    return split(c, outputs);
  }
  auto it = folders().find(op);
  if (it == folders().end() || c.node().outputs.size() != 1) return std::nullopt;
  return std::vector<Tensor>{it->second(c, outputs[0])};
}

}  // namespace kora
