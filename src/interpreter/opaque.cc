// Opaque primitives: ONNX operators kept whole, run with their ONNX semantics. In: the
// node (attributes; inputs and outputs renamed to primitive tensors) and its input
// tensors. Out: its outputs, typed as graph.values says. One table (runners()) names every
// such operator and what runs it; is_opaque_operator reads it. This file holds the index
// operators TopK, Gather and GatherElements (computed indices; negative ones wrap,
// out-of-range ones are errors), ArgMax and ArgMin; the others live in files of their own
// (max_pool.cc, nms.cc, scatter.cc, grid_sample.cc, roi_align.cc, ...).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "interpreter/kernels.h"
#include "kora/interpreter.h"

namespace kora::interp {

OpaqueCall::OpaqueCall(const PrimGraph& graph, const Primitive& prim, const Inputs& in)
    : graph_(graph), prim_(prim), node_(std::get<OpaqueAttrs>(prim.attrs).node), in_(in) {}

const Tensor* OpaqueCall::input(size_t slot) const {
  if (!node_.has_input(slot)) return nullptr;
  const std::string& name = node_.inputs[slot];
  for (size_t j = 0; j < prim_.inputs.size(); ++j)
    if (prim_.inputs[j] == name) return in_[j];
  fail("node input '" + name + "' is not among the primitive's inputs");
}

const Tensor& OpaqueCall::required(size_t slot) const {
  const Tensor* t = input(slot);
  if (!t) fail("needs input " + std::to_string(slot));
  return *t;
}

bool OpaqueCall::wants(size_t i) const {
  return i < prim_.outputs.size() && !prim_.outputs[i].empty();
}

const ValueInfo& OpaqueCall::out(size_t i) const { return graph_.value(prim_.outputs.at(i)); }

int64_t OpaqueCall::axis(const std::string& key, int64_t fallback, int64_t rank) const {
  const int64_t a = node_.attr_int(key, fallback);
  if (a < -rank || a >= rank)
    fail(key + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a < 0 ? a + rank : a;
}

int64_t OpaqueCall::index(int64_t index, int64_t size) const {
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size)
    fail("index " + std::to_string(index) + " is out of range for a dim of " +
         std::to_string(size));
  return i;
}

namespace {

// A tensor's elements as sort keys: double for floating types, int64 otherwise.
struct Keys {
  bool floating = true;
  std::vector<double> f;
  std::vector<int64_t> i;

  explicit Keys(const Tensor& t) : floating(is_floating(t.dtype())) {
    if (floating)
      f = t.to_double();
    else
      i = t.to_int64();
  }
  bool nan(int64_t p) const { return floating && std::isnan(f[p]); }
  // Strict "greater" with NaN above everything.
  bool greater(int64_t p, int64_t q) const {
    if (!floating) return i[p] > i[q];
    if (std::isnan(f[q])) return false;
    return std::isnan(f[p]) || f[p] > f[q];
  }
  bool equal(int64_t p, int64_t q) const {
    if (!floating) return i[p] == i[q];
    return (std::isnan(f[p]) && std::isnan(f[q])) || f[p] == f[q];
  }
};

// outer x axis x inner decomposition of a shape around `axis`.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    if (d == axis) s.len = shape[d];
    if (d > axis) s.inner *= shape[d];
  }
  return s;
}

void check_out(const OpaqueCall& call, size_t i, DType dtype, const Shape& shape) {
  const ValueInfo& v = call.out(i);
  if (v.dtype != dtype || v.shape != shape)
    call.fail("output " + std::to_string(i) + " is " + type_str(v.dtype, v.shape) +
              ", ONNX gives " + type_str(dtype, shape));
}

std::vector<Tensor> top_k(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const int64_t axis = call.axis("axis", -1, rank);
  int64_t k = call.node().attr_int("k", -1);
  if (const Tensor* kt = call.input(1)) {
    if (kt->numel() != 1) call.fail("K must hold one value");
    k = kt->int64_at(0);
  }
  const AxisSplit s = split_at(x.shape(), axis);
  if (k < 0 || k > s.len)
    call.fail("K " + std::to_string(k) + " is out of range for an axis of " +
              std::to_string(s.len));
  const bool largest = call.node().attr_int("largest", 1) != 0;
  Shape shape = x.shape();
  shape[axis] = k;
  if (call.num_outputs() < 2) call.fail("TopK has two outputs");
  if (call.wants(0)) check_out(call, 0, x.dtype(), shape);
  if (call.wants(1)) check_out(call, 1, DType::kInt64, shape);
  Tensor values(x.dtype(), shape), indices(DType::kInt64, shape);
  const Keys keys(x);
  const size_t esize = dtype_size(x.dtype());
  int64_t* ip = reinterpret_cast<int64_t*>(indices.mutable_bytes());
  std::vector<int64_t> order(static_cast<size_t>(s.len));
  // Ties and sorted=0 alike: the lower index first, output in sorted order.
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const int64_t base = o * s.len * s.inner + in;
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
        const int64_t a = base + p * s.inner, b = base + q * s.inner;
        if (keys.equal(a, b)) return p < q;
        return largest ? keys.greater(a, b) : keys.greater(b, a);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * s.inner + in, src = base + order[j] * s.inner;
        ip[dst] = order[j];
        std::memcpy(values.mutable_bytes() + dst * esize, x.bytes() + src * esize, esize);
      }
    }
  return {values, indices};
}

std::vector<Tensor> gather(const OpaqueCall& call) {
  const Tensor &x = call.required(0), &idx = call.required(1);
  if (is_floating(idx.dtype()) || idx.dtype() == DType::kBool)
    call.fail("indices must be integers");
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const int64_t axis = call.axis("axis", 0, rank);
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  check_out(call, 0, x.dtype(), shape);
  const AxisSplit s = split_at(x.shape(), axis);
  const std::vector<int64_t> indices = idx.to_int64();
  const int64_t count = static_cast<int64_t>(indices.size());
  const int64_t block = s.inner * static_cast<int64_t>(dtype_size(x.dtype()));
  Tensor y(x.dtype(), shape);
  for (int64_t j = 0; j < count; ++j) {
    const int64_t i = call.index(indices[j], s.len);
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(y.mutable_bytes() + (o * count + j) * block, x.bytes() + (o * s.len + i) * block,
                  static_cast<size_t>(block));
  }
  return {y};
}

std::vector<Tensor> gather_elements(const OpaqueCall& call) {
  const Tensor &x = call.required(0), &idx = call.required(1);
  if (is_floating(idx.dtype()) || idx.dtype() == DType::kBool)
    call.fail("indices must be integers");
  const Shape &xs = x.shape(), &is = idx.shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (static_cast<int64_t>(is.size()) != rank)
    call.fail("indices " + shape_str(is) + " and data " + shape_str(xs) + " differ in rank");
  const int64_t axis = call.axis("axis", 0, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && is[d] > xs[d])
      call.fail("indices " + shape_str(is) + " exceed data " + shape_str(xs) + " off the axis");
  check_out(call, 0, x.dtype(), is);
  const std::vector<int64_t> xstr = row_major_strides(xs);
  const std::vector<int64_t> indices = idx.to_int64();
  const size_t esize = dtype_size(x.dtype());
  Tensor y(x.dtype(), is);
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d)
      off += (d == axis ? call.index(indices[e], xs[d]) : coord[d]) * xstr[d];
    std::memcpy(y.mutable_bytes() + e * esize, x.bytes() + off * esize, esize);
    for (int64_t d = rank; d-- > 0;) {
      if (++coord[d] < is[d]) break;
      coord[d] = 0;
    }
  }
  return {y};
}

// ArgMax / ArgMin; NaN wins over numbers (the first NaN, or the last with
// select_last_index), as numpy's argmax does.
std::vector<Tensor> arg_extreme(const OpaqueCall& call, bool max) {
  const Tensor& x = call.required(0);
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const int64_t axis = call.axis("axis", 0, rank);
  const bool keepdims = call.node().attr_int("keepdims", 1) != 0;
  const bool last = call.node().attr_int("select_last_index", 0) != 0;
  Shape shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      shape.push_back(x.shape()[d]);
    else if (keepdims)
      shape.push_back(1);
  }
  check_out(call, 0, DType::kInt64, shape);
  const AxisSplit s = split_at(x.shape(), axis);
  if (s.len == 0 && s.outer * s.inner > 0) call.fail("cannot reduce an empty axis");
  const Keys keys(x);
  Tensor y(DType::kInt64, shape);
  int64_t* yp = reinterpret_cast<int64_t*>(y.mutable_bytes());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const int64_t base = o * s.len * s.inner + in;
      int64_t best = 0;
      for (int64_t j = 1; j < s.len; ++j) {
        const int64_t b = base + best * s.inner, c = base + j * s.inner;
        bool take;
        if (keys.nan(b))
          take = last && keys.nan(c);
        else if (keys.nan(c))
          take = true;
        else
          take = (max ? keys.greater(c, b) : keys.greater(b, c)) || (last && keys.equal(b, c));
        if (take) best = j;
      }
      yp[o * s.inner + in] = best;
    }
  return {y};
}

using Runner = std::vector<Tensor> (*)(const OpaqueCall&);

// Every operator the interpreter runs whole, and what runs it.
const std::map<std::string, Runner>& runners() {
  static const std::map<std::string, Runner> table = {
      {"TopK", top_k},
      {"NonMaxSuppression", run_non_max_suppression},
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"ArgMax", [](const OpaqueCall& c) { return arg_extreme(c, true); }},
      {"ArgMin", [](const OpaqueCall& c) { return arg_extreme(c, false); }},
      {"MaxPool", run_max_pool},
      {"GatherND", run_scatter_gather_nd},
      {"ScatterND", run_scatter_gather_nd},
      {"ScatterElements", run_scatter_gather_nd},
      {"GridSample", run_grid_sample},
      {"RoiAlign", run_roi_align},
      {"DeformConv", run_deform_conv},
      {"Col2Im", run_image_scatter},
      {"MaxUnpool", run_image_scatter},
      {"Det", run_det},
      {"RandomUniform", run_random},
      {"RandomNormal", run_random},
      {"RandomUniformLike", run_random},
      {"RandomNormalLike", run_random},
      {"Bernoulli", run_random},
      {"DFT", run_dft},
      {"TfIdfVectorizer", run_tfidf_vectorizer},
  };
  return table;
}

}  // namespace

std::vector<Tensor> run_opaque(const PrimGraph& graph, const Primitive& prim, const Inputs& in) {
  const OpaqueCall call(graph, prim, in);
  const std::string& op = call.node().op_type;
  const std::string& domain = call.node().domain;
  const auto runner = runners().find(op);
  if (runner == runners().end() || !(domain.empty() || domain == "ai.onnx"))
    call.fail("'" + op + "' is not an operator the interpreter runs whole");
  std::vector<Tensor> out = runner->second(call);
  out.resize(prim.outputs.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (!call.wants(i)) out[i] = Tensor();
  return out;
}

}  // namespace kora::interp

namespace kora {

bool is_opaque_operator(const std::string& op_type) {
  return interp::runners().count(op_type) != 0;
}

}  // namespace kora
