// A 2-D NCHW grouped convolution (cross-correlation, zero padding, strides, dilations) by
// its definition in float64, with cuDNN's fused epilogue:
//   y = act(alpha conv(x, w) + beta r + bias), r = z where given, else y's old value.
// The reference the CUDA tests run library convolutions by (job_test.cc's emulated worker)
// and the fake cuDNN computes with (fake_cudnn.cc). Header-only, no kora types.
#pragma once
#include <cstdint>

namespace kora_cuda_test {

struct Conv2d {
  int64_t n = 1, c = 1, h = 1, w = 1;  // x
  int64_t m = 1, kh = 1, kw = 1;       // weights [m, c / groups, kh, kw]
  int64_t oh = 1, ow = 1, groups = 1;  // y [n, m, oh, ow]
  int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1};
};

// bias (m values) and z (y's shape) may be null; beta = 0 reads nothing.
inline void textbook_conv2d(const Conv2d& d, const float* x, const float* w, float* y,
                            double alpha = 1, double beta = 0, const float* z = nullptr,
                            const float* bias = nullptr, bool relu = false) {
  const int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t oh = 0; oh < d.oh; ++oh)
        for (int64_t ow = 0; ow < d.ow; ++ow) {
          double sum = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t kh = 0; kh < d.kh; ++kh)
              for (int64_t kw = 0; kw < d.kw; ++kw) {
                const int64_t ih = oh * d.stride[0] - d.pad[0] + kh * d.dilation[0];
                const int64_t iw = ow * d.stride[1] - d.pad[1] + kw * d.dilation[1];
                if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
                sum += double(x[((n * d.c + (m / mg) * cg + ci) * d.h + ih) * d.w + iw]) *
                       w[((m * cg + ci) * d.kh + kh) * d.kw + kw];
              }
          const int64_t at = ((n * d.m + m) * d.oh + oh) * d.ow + ow;
          double v = alpha * sum + (beta != 0 ? beta * (z ? z[at] : y[at]) : 0);
          if (bias) v += bias[m];
          if (relu && v < 0) v = 0;
          y[at] = static_cast<float>(v);
        }
}

}  // namespace kora_cuda_test
