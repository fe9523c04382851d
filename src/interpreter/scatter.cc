// Opaque primitives that address elements by computed index tuples: GatherND (slices of
// data picked by the last dim of indices, after batch_dims shared dims), ScatterND (data
// with slices replaced or combined by reduction at index tuples) and ScatterElements
// (data with elements replaced or combined along an axis). Negative indices wrap;
// out-of-range ones are errors naming the primitive. Updates apply in index order, so
// duplicate indices without a reduction keep the last, as onnxruntime does.
#include <algorithm>
#include <cstring>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// Combines `update` into element `i` of `data` by the node's reduction.
class Combine {
 public:
  explicit Combine(const OpaqueCall& call) : how_(call.node().attr_string("reduction", "none")) {}
  void operator()(Tensor& data, int64_t i, const Tensor& updates, int64_t j) const {
    if (how_ == "none") {
      const size_t es = dtype_size(data.dtype());
      std::memcpy(data.mutable_bytes() + i * es, updates.bytes() + j * es, es);
    } else if (is_floating(data.dtype())) {
      set_element(data, i, apply(data.double_at(i), updates.double_at(j)));
    } else {
      set_element_int(data, i, apply(data.int64_at(i), updates.int64_at(j)));
    }
  }

 private:
  template <typename T>
  T apply(T a, T b) const {
    if (how_ == "add") return a + b;
    if (how_ == "mul") return a * b;
    if (how_ == "max") return std::max(a, b);
    return std::min(a, b);
  }
  std::string how_;
};

std::vector<Tensor> gather_nd(const OpaqueCall& call) {
  const Tensor &data = call.required(0), &idx = call.required(1);
  const Shape &ds = data.shape(), &is = idx.shape();
  const int64_t b = call.node().attr_int("batch_dims", 0);
  const int64_t k = is.back();
  int64_t batch = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d) batch *= ds[d];
  for (size_t d = static_cast<size_t>(b + k); d < ds.size(); ++d) slice *= ds[d];
  const int64_t tuples = idx.numel() / std::max<int64_t>(k, 1) / std::max<int64_t>(batch, 1);
  int64_t per_batch = slice;  // data elements per batch entry
  for (int64_t d = b; d < b + k; ++d) per_batch *= ds[d];
  const std::vector<int64_t> indices = idx.to_int64();
  const ValueInfo& out = call.out(0);
  Tensor y(data.dtype(), out.shape);
  const size_t es = dtype_size(data.dtype());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t* tuple = indices.data() + (n * tuples + t) * k;
      int64_t offset = 0;
      for (int64_t d = 0; d < k; ++d) offset = offset * ds[b + d] + call.index(tuple[d], ds[b + d]);
      std::memcpy(y.mutable_bytes() + (n * tuples + t) * slice * es,
                  data.bytes() + (n * per_batch + offset * slice) * es,
                  static_cast<size_t>(slice) * es);
    }
  return {y};
}

std::vector<Tensor> scatter_nd(const OpaqueCall& call) {
  const Tensor &data = call.required(0), &idx = call.required(1), &upd = call.required(2);
  const Shape& ds = data.shape();
  const int64_t k = idx.shape().back();
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < ds.size(); ++d) slice *= ds[d];
  const int64_t tuples = idx.numel() / std::max<int64_t>(k, 1);
  const std::vector<int64_t> indices = idx.to_int64();
  Tensor y(data.dtype(), ds, data.bytes(), data.nbytes());
  const Combine combine(call);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) offset = offset * ds[d] + call.index(indices[t * k + d], ds[d]);
    for (int64_t e = 0; e < slice; ++e) combine(y, offset * slice + e, upd, t * slice + e);
  }
  return {y};
}

std::vector<Tensor> scatter_elements(const OpaqueCall& call) {
  const Tensor &data = call.required(0), &idx = call.required(1), &upd = call.required(2);
  const Shape &ds = data.shape(), &is = idx.shape();
  const int64_t rank = static_cast<int64_t>(ds.size());
  const int64_t axis = call.axis("axis", 0, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && is[d] > ds[d])
      call.fail("indices " + shape_str(is) + " exceed data " + shape_str(ds) + " off the axis");
  const std::vector<int64_t> strides = row_major_strides(ds);
  const std::vector<int64_t> indices = idx.to_int64();
  Tensor y(data.dtype(), ds, data.bytes(), data.nbytes());
  const Combine combine(call);
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += (d == axis ? call.index(indices[e], ds[d]) : coord[d]) * strides[d];
    combine(y, offset, upd, e);
    for (int64_t d = rank; d-- > 0;) {
      if (++coord[d] < is[d]) break;
      coord[d] = 0;
    }
  }
  return {y};
}

}  // namespace

std::vector<Tensor> run_scatter_gather_nd(const OpaqueCall& call) {
  const std::string& op = call.node().op_type;
  if (op == "GatherND") return gather_nd(call);
  if (op == "ScatterND") return scatter_nd(call);
  return scatter_elements(call);
}

}  // namespace kora::interp
