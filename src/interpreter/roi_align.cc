// RoiAlign, as ONNX's reference implementation and onnxruntime compute it. In: X
// [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in X's coordinates times 1 / spatial_scale)
// and batch_indices [R]; attributes mode (avg, max), output_height, output_width,
// sampling_ratio (0: ceil(roi size / output size) samples per bin), spatial_scale and
// coordinate_transformation_mode (half_pixel shifts by -0.5; output_half_pixel does not
// and makes each roi at least 1 x 1). Out: Y [R, C, output_height, output_width], per bin
// the mean (avg) or the maximum (max, of the weighted corner values) of bilinear samples.
#include <algorithm>
#include <cmath>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

template <typename T>
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  T w[4] = {0, 0, 0, 0};
};

template <typename T>
Sample<T> bilinear(T y, T x, int64_t height, int64_t width) {
  Sample<T> s;
  if (y < -1 || y > static_cast<T>(height) || x < -1 || x > static_cast<T>(width)) return s;
  y = std::max<T>(y, 0);
  x = std::max<T>(x, 0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const T ly = y - static_cast<T>(y_low), lx = x - static_cast<T>(x_low);
  const T hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// The sampling geometry in T, X's element type, as onnxruntime computes it (a float roi
// size decides the adaptive sample count).
template <typename T>
std::vector<Tensor> roi_align(const OpaqueCall& call) {
  const Tensor &x = call.required(0), &rois = call.required(1), &idx = call.required(2);
  const Node& node = call.node();
  const bool max_mode = node.attr_string("mode", "avg") == "max";
  const bool half_pixel =
      node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const T scale = static_cast<T>(node.attr_float("spatial_scale", 1.0));
  const int64_t ratio = node.attr_int("sampling_ratio", 0);
  const ValueInfo& out = call.out(0);
  const int64_t count = out.shape[0], channels = out.shape[1], ph_n = out.shape[2],
                pw_n = out.shape[3];
  const int64_t batch = x.shape()[0], height = x.shape()[2], width = x.shape()[3];
  const std::vector<double> rv = rois.to_double(), xd = x.to_double();
  const std::vector<T> xv(xd.begin(), xd.end());
  const std::vector<int64_t> iv = idx.to_int64();
  Tensor y(out.dtype, out.shape);
  const T offset = half_pixel ? T(0.5) : T(0);
  std::vector<Sample<T>> samples;
  for (int64_t n = 0; n < count; ++n) {
    if (iv[n] < 0 || iv[n] >= batch)
      call.fail("batch index " + std::to_string(iv[n]) + " is out of range for " +
                std::to_string(batch) + " images");
    T roi[4];
    for (int j = 0; j < 4; ++j) roi[j] = static_cast<T>(rv[n * 4 + j]) * scale - offset;
    const T start_w = roi[0], start_h = roi[1];
    T roi_w = roi[2] - start_w, roi_h = roi[3] - start_h;
    if (!half_pixel) {
      roi_w = std::max<T>(roi_w, 1);
      roi_h = std::max<T>(roi_h, 1);
    }
    const double bin_h = roi_h / static_cast<double>(ph_n),
                 bin_w = roi_w / static_cast<double>(pw_n);
    const int64_t grid_h =
        ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(ph_n)));
    const int64_t grid_w =
        ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(pw_n)));
    const double div = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    samples.clear();
    for (int64_t ph = 0; ph < ph_n; ++ph)
      for (int64_t pw = 0; pw < pw_n; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const T yy =
              start_h + static_cast<T>(ph) * bin_h +
              static_cast<T>(static_cast<double>(iy) + 0.5) * bin_h / static_cast<T>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const T xx =
                start_w + static_cast<T>(pw) * bin_w +
                static_cast<T>(static_cast<double>(ix) + 0.5) * bin_w / static_cast<T>(grid_w);
            samples.push_back(bilinear(yy, xx, height, width));
          }
        }
    const int64_t per_bin = grid_h * grid_w;
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = xv.data() + (iv[n] * channels + c) * height * width;
      for (int64_t bin = 0; bin < ph_n * pw_n; ++bin) {
        T acc = 0;
        for (int64_t k = 0; k < per_bin; ++k) {
          const Sample<T>& s = samples[bin * per_bin + k];
          if (max_mode) {
            T v = s.w[0] * plane[s.pos[0]];
            for (int j = 1; j < 4; ++j) v = std::max(v, s.w[j] * plane[s.pos[j]]);
            acc = k == 0 ? v : std::max(acc, v);
          } else {
            for (int j = 0; j < 4; ++j) acc += s.w[j] * plane[s.pos[j]];
          }
        }
        if (!max_mode) acc /= div;
        set_element(y, ((n * channels + c) * ph_n * pw_n) + bin, acc);
      }
    }
  }
  return {y};
}

}  // namespace

std::vector<Tensor> run_roi_align(const OpaqueCall& call) {
  return call.required(0).dtype() == DType::kFloat64 ? roi_align<double>(call)
                                                     : roi_align<float>(call);
}

}  // namespace kora::interp
