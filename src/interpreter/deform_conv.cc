// DeformConv (2-D), as ONNX's reference implementation computes it. In: X [N, C, H, W],
// W [oC, C / group, kH, kW], offset [N, offset_group * kH * kW * 2, oH, oW] (per offset
// group, kernel tap and output position a (dy, dx) pair), optional B [oC] and mask
// [N, offset_group * kH * kW, oH, oW]; attributes group, offset_group, strides, pads,
// dilations. Out: Y [N, oC, oH, oW]: a grouped convolution whose tap (ky, kx) at output
// (oy, ox) reads X bilinearly at (oy * stride - pad + ky * dilation + dy, likewise x),
// zero outside X (the reference's GridSample with align_corners and zeros padding), times
// the mask, plus the bias. Computed in double, stored in X's type.
#include <cmath>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// X's plane (height x width) at (y, x), bilinear; taps outside the plane read 0.
double sample(const double* plane, int64_t height, int64_t width, double y, double x) {
  if (!(y > -1 && y < static_cast<double>(height) && x > -1 && x < static_cast<double>(width)))
    return 0;  // also NaN positions
  const double fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  const double ly = y - fy, lx = x - fx;
  double v = 0;
  for (int64_t dy = 0; dy < 2; ++dy)
    for (int64_t dx = 0; dx < 2; ++dx) {
      const int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= height || xx < 0 || xx >= width) continue;
      v += (dy ? ly : 1 - ly) * (dx ? lx : 1 - lx) * plane[yy * width + xx];
    }
  return v;
}

}  // namespace

std::vector<Tensor> run_deform_conv(const OpaqueCall& call) {
  const Node& node = call.node();
  const Tensor &x = call.required(0), &w = call.required(1), &offset = call.required(2);
  const Tensor *bias = call.input(3), *mask = call.input(4);
  const ValueInfo& out = call.out(0);
  const int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2],
                width = x.shape()[3];
  const int64_t out_channels = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t oh = out.shape[2], ow = out.shape[3];
  const int64_t group = node.attr_int("group", 1), offset_group = node.attr_int("offset_group", 1);
  const Shape strides = node.attr_ints("strides", Shape(2, 1));
  const Shape dilations = node.attr_ints("dilations", Shape(2, 1));
  const Shape pads = node.attr_ints("pads", Shape(4, 0));
  const int64_t in_per_group = channels / group, out_per_group = out_channels / group;
  const int64_t in_per_offset_group = channels / offset_group;
  const int64_t taps = kh * kw, positions = oh * ow;
  const std::vector<double> xv = x.to_double(), wv = w.to_double(), ov = offset.to_double();
  const std::vector<double> bv = bias ? bias->to_double() : std::vector<double>();
  const std::vector<double> mv = mask ? mask->to_double() : std::vector<double>();
  // cols[c][tap][position]: X's channel c sampled for one image, times the mask.
  std::vector<double> cols(static_cast<size_t>(channels * taps * positions));
  Tensor y(out.dtype, out.shape);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t g = c / in_per_offset_group;
      const double* plane = xv.data() + (n * channels + c) * height * width;
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t tap = ky * kw + kx;
          // offset [N, offset_group, kH, kW, 2, oH, oW]; mask [N, offset_group, kH, kW, oH, oW]
          const double* dy = ov.data() + ((n * offset_group + g) * taps + tap) * 2 * positions;
          const double* dx = dy + positions;
          const double* m =
              mask ? mv.data() + ((n * offset_group + g) * taps + tap) * positions : nullptr;
          double* col = cols.data() + (c * taps + tap) * positions;
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t p = oy * ow + ox;
              const double sy = static_cast<double>(oy * strides[0] - pads[0] + ky * dilations[0]);
              const double sx = static_cast<double>(ox * strides[1] - pads[1] + kx * dilations[1]);
              const double v = sample(plane, height, width, sy + dy[p], sx + dx[p]);
              col[p] = m ? v * m[p] : v;
            }
        }
    }
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t c0 = (oc / out_per_group) * in_per_group;
      const double* wk = wv.data() + oc * in_per_group * taps;
      for (int64_t p = 0; p < positions; ++p) {
        double acc = bias ? bv[oc] : 0.0;
        for (int64_t ci = 0; ci < in_per_group; ++ci)
          for (int64_t tap = 0; tap < taps; ++tap)
            acc += wk[ci * taps + tap] * cols[((c0 + ci) * taps + tap) * positions + p];
        set_element(y, (n * out_channels + oc) * positions + p, acc);
      }
    }
  }
  return {y};
}

}  // namespace kora::interp
