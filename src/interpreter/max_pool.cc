// MaxPool with its Indices output, ONNX semantics. In: X [N, C, S...]; attributes
// kernel_shape, strides, dilations, pads, auto_pad, ceil_mode (through the output sizes in
// graph.values) and storage_order. Out: Y [N, C, O...] (the maximum over each window's
// positions inside X; NaN propagates, the first maximum wins) and, when wanted, Indices
// (int64, the flat index of the maximum in the whole X: row-major for storage_order 0,
// spatial dims column-major for 1).
#include <cmath>
#include <cstring>
#include <limits>

#include "interpreter/kernels.h"

namespace kora::interp {

std::vector<Tensor> run_max_pool(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  const Shape& xs = x.shape();
  if (xs.size() < 3) call.fail("needs X [N, C, S...], got " + shape_str(xs));
  const size_t n = xs.size() - 2;
  const Node& node = call.node();
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool column_major = node.attr_int("storage_order", 0) != 0;
  if (kernel.size() != n || strides.size() != n || dilations.size() != n || pads.size() != 2 * n)
    call.fail("kernel_shape, strides, dilations or pads do not match " + std::to_string(n) +
              " spatial dims");

  const ValueInfo& out = call.out(0);
  if (out.dtype != x.dtype() || out.shape.size() != xs.size() || out.shape[0] != xs[0] ||
      out.shape[1] != xs[1])
    call.fail("output " + type_str(out.dtype, out.shape) + " does not fit X " +
              type_str(x.dtype(), xs));
  const Shape spatial_out(out.shape.begin() + 2, out.shape.end());
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1)
      call.fail("kernel, strides and dilations must be positive");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(
          0, (spatial_out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - xs[2 + i]);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      pads[i] = 0;
    }
  }
  const bool with_indices = call.num_outputs() > 1 && call.wants(1);
  if (with_indices) {
    const ValueInfo& iv = call.out(1);
    if (iv.dtype != DType::kInt64 || iv.shape != out.shape)
      call.fail("Indices is " + type_str(iv.dtype, iv.shape) + ", expected " +
                type_str(DType::kInt64, out.shape));
  }

  const Shape spatial_in(xs.begin() + 2, xs.end());
  const int64_t in_size = numel(spatial_in), out_size = numel(spatial_out);
  const int64_t planes = xs[0] * xs[1], window = numel(kernel);
  std::vector<int64_t> row_strides = row_major_strides(spatial_in), col_strides(n, 1);
  for (size_t i = 1; i < n; ++i) col_strides[i] = col_strides[i - 1] * spatial_in[i - 1];

  Tensor y(out.dtype, out.shape), indices(DType::kInt64, out.shape);
  const std::vector<double> xv = x.to_double();
  const size_t esize = dtype_size(x.dtype());
  int64_t* ip = reinterpret_cast<int64_t*>(indices.mutable_bytes());
  std::vector<int64_t> oc(n), kc(n);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < out_size; ++o) {
      int64_t r = o;
      for (size_t i = n; i-- > 0;) oc[i] = r % spatial_out[i], r /= spatial_out[i];
      int64_t best = -1, best_index = -1;
      for (int64_t k = 0; k < window; ++k) {
        int64_t rk = k, off = 0, index = 0;
        bool inside = true;
        for (size_t i = n; i-- > 0;) {
          kc[i] = rk % kernel[i], rk /= kernel[i];
          const int64_t c = oc[i] * strides[i] + kc[i] * dilations[i] - pads[i];
          inside = inside && c >= 0 && c < spatial_in[i];
          off += c * row_strides[i];
          index += c * col_strides[i];
        }
        if (!inside) continue;
        const int64_t at = p * in_size + off;
        if (best >= 0 && (std::isnan(xv[best]) || !(xv[at] > xv[best] || std::isnan(xv[at]))))
          continue;
        best = at;
        best_index = p * in_size + (column_major ? index : off);
      }
      const int64_t dst = p * out_size + o;
      if (best >= 0) {
        std::memcpy(y.mutable_bytes() + dst * esize, x.bytes() + best * esize, esize);
      } else if (is_floating(out.dtype)) {  // a window wholly in the padding
        set_element(y, dst, -std::numeric_limits<double>::infinity());
      }
      ip[dst] = best_index;
    }
  if (with_indices) return {y, indices};
  return {y};
}

}  // namespace kora::interp
