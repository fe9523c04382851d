// The opaque operators that scatter values into an image: Col2Im (input
// [N, C * prod(block_shape), L] of sliding blocks -> [N, C, image_shape...], overlapping
// blocks summed; attributes dilations, pads, strides) and MaxUnpool (X and indices I
// [N, C, S...] -> zeros of the unpooled shape with X placed at I's flat positions; a
// larger output_shape keeps that result in its leading corner, as ONNX's reference does).
#include <algorithm>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

std::vector<Tensor> col2im(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  const std::vector<int64_t> image = call.required(1).to_int64();
  const std::vector<int64_t> block = call.required(2).to_int64();
  const size_t n = image.size();
  const Node& node = call.node();
  const std::vector<int64_t> dil = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::vector<int64_t> str = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  Shape cols(n);
  for (size_t i = 0; i < n; ++i)
    cols[i] = (image[i] + pads[i] + pads[i + n] - dil[i] * (block[i] - 1) - 1) / str[i] + 1;
  const int64_t kernel = numel(block), length = numel(cols), pixels = numel(image);
  const ValueInfo& out = call.out(0);
  const int64_t planes = out.shape[0] * out.shape[1];
  const std::vector<double> xv = x.to_double();
  std::vector<double> yv(static_cast<size_t>(planes * pixels), 0.0);
  const std::vector<int64_t> kstr = row_major_strides(block), cstr = row_major_strides(cols),
                             istr = row_major_strides(image);
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t l = 0; l < length; ++l) {
      int64_t off = 0;
      for (size_t i = 0; i < n && off >= 0; ++i) {
        const int64_t at =
            ((l / cstr[i]) % cols[i]) * str[i] - pads[i] + ((k / kstr[i]) % block[i]) * dil[i];
        off = at < 0 || at >= image[i] ? -1 : off + at * istr[i];
      }
      if (off < 0) continue;
      for (int64_t p = 0; p < planes; ++p)
        yv[p * pixels + off] += xv[(p * kernel + k) * length + l];
    }
  Tensor y(out.dtype, out.shape);
  for (int64_t i = 0; i < y.numel(); ++i) set_element(y, i, yv[i]);
  return {y};
}

std::vector<Tensor> max_unpool(const OpaqueCall& call) {
  const Tensor &x = call.required(0), &idx = call.required(1);
  const Node& node = call.node();
  const size_t n = x.shape().size() - 2;
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const std::vector<int64_t> str = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  Shape unpooled{x.shape()[0], x.shape()[1]};
  for (size_t i = 0; i < n; ++i)
    unpooled.push_back((x.shape()[i + 2] - 1) * str[i] - pads[i] - pads[i + n] + kernel[i]);
  const ValueInfo& out = call.out(0);
  if (out.shape.size() != unpooled.size()) call.fail("output rank differs from X's");
  const std::vector<int64_t> ustr = row_major_strides(unpooled),
                             ostr = row_major_strides(out.shape);
  const std::vector<int64_t> iv = idx.to_int64();
  const int64_t total = numel(unpooled);
  Tensor y(out.dtype, out.shape);
  for (int64_t e = 0; e < x.numel(); ++e) {
    if (iv[e] < 0 || iv[e] >= total)
      call.fail("index " + std::to_string(iv[e]) + " is out of range for the unpooled " +
                shape_str(unpooled));
    int64_t off = 0;
    for (size_t d = 0; d < unpooled.size(); ++d) off += ((iv[e] / ustr[d]) % unpooled[d]) * ostr[d];
    set_element(y, off, x.double_at(e));
  }
  return {y};
}

}  // namespace

std::vector<Tensor> run_image_scatter(const OpaqueCall& call) {
  return call.node().op_type == "Col2Im" ? col2im(call) : max_unpool(call);
}

}  // namespace kora::interp
