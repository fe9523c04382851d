// Linear primitives. MatMul: A [..., M, K] x B [..., K, N] -> [..., M, N], batch dims
// equal or 1 (broadcast). Conv: X [N, C, S...] * W [M, C/group, K...] -> [N, M, O...] with
// group, strides, dilations and zero padding. float32 runs through gemm_f32 (convolution
// as im2col + GEMM, a pointwise convolution straight on the input); other floating types
// are computed in double, integers in int64, with plain loops.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// Store a vector computed in double or int64 into a tensor of dtype `out`.
template <typename T>
Tensor to_tensor(const std::vector<T>& v, const ValueInfo& out) {
  Tensor y(out.dtype, out.shape);
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      set_element(y, static_cast<int64_t>(i), v[i]);
    else
      set_element_int(y, static_cast<int64_t>(i), v[i]);
  }
  return y;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  if constexpr (std::is_floating_point_v<T>)
    return t.to_double();
  else
    return t.to_int64();
}

// ---- matmul ----

template <typename T>
void gemm_plain(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  std::fill_n(c, m * n, T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const T x = a[i * k + p];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += x * b[p * n + j];
    }
}

Tensor matmul(const Primitive& prim, const Tensor& a, const Tensor& b, const ValueInfo& out) {
  const Shape &as = a.shape(), &bs = b.shape();
  const size_t r = as.size();
  if (r < 2 || bs.size() != r || out.shape.size() != r)
    fail(prim, "matmul needs operands of equal rank >= 2, got " + shape_str(as) + " and " +
                   shape_str(bs));
  const int64_t m = as[r - 2], k = as[r - 1], n = bs[r - 1];
  if (bs[r - 2] != k || out.shape[r - 2] != m || out.shape[r - 1] != n)
    fail(prim, "cannot multiply " + shape_str(as) + " by " + shape_str(bs) + " into " +
                   shape_str(out.shape));
  if (a.dtype() != out.dtype || b.dtype() != out.dtype)
    fail(prim, "operands must have the output's dtype " + std::string(dtype_name(out.dtype)));
  // Batch strides (in matrices), 0 where an operand is broadcast.
  const Shape batch(out.shape.begin(), out.shape.end() - 2);
  std::vector<int64_t> a_str(r - 2, 0), b_str(r - 2, 0);
  int64_t a_step = 1, b_step = 1;
  bool b_broadcast = true;
  for (size_t d = r - 2; d-- > 0;) {
    const int64_t ad = as[d], bd = bs[d], od = batch[d];
    if ((ad != od && ad != 1) || (bd != od && bd != 1) || (ad != od && bd != od))
      fail(prim, "batch dims of " + shape_str(as) + " and " + shape_str(bs) +
                     " do not broadcast to " + shape_str(out.shape));
    a_str[d] = ad == 1 ? 0 : a_step;
    b_str[d] = bd == 1 ? 0 : b_step;
    a_step *= ad;
    b_step *= bd;
    b_broadcast = b_broadcast && bd == 1;
  }
  const int64_t batches = numel(batch);
  Tensor y(out.dtype, out.shape);
  if (y.numel() == 0) return y;

  if (out.dtype == DType::kFloat32) {
    const float* ap = reinterpret_cast<const float*>(a.bytes());
    const float* bp = reinterpret_cast<const float*>(b.bytes());
    float* cp = reinterpret_cast<float*>(y.mutable_bytes());
    if (b_broadcast && a_step == batches) {  // one B for every batch: stack A's rows
      gemm_f32(batches * m, n, k, ap, k, bp, n, cp, n);
      return y;
    }
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t q = 0; q < batches; ++q) {
      int64_t ao = 0, bo = 0;
      for (size_t d = 0; d < batch.size(); ++d) ao += idx[d] * a_str[d], bo += idx[d] * b_str[d];
      gemm_f32(m, n, k, ap + ao * m * k, k, bp + bo * k * n, n, cp + q * m * n, n);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
    return y;
  }
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> av = values_of<T>(a), bv = values_of<T>(b);
    std::vector<T> cv(static_cast<size_t>(y.numel()));
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t q = 0; q < batches; ++q) {
      int64_t ao = 0, bo = 0;
      for (size_t d = 0; d < batch.size(); ++d) ao += idx[d] * a_str[d], bo += idx[d] * b_str[d];
      gemm_plain(m, n, k, av.data() + ao * m * k, bv.data() + bo * k * n, cv.data() + q * m * n);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
    return to_tensor(cv, out);
  };
  return is_floating(out.dtype) ? run(0.0) : run(int64_t{0});
}

// ---- convolution ----

struct ConvGeometry {
  int64_t batch = 0, channels = 0, filters = 0, group = 1;
  Shape in, kernel, out;  // spatial sizes
  std::vector<int64_t> strides, dilations, pads;
  int64_t in_size = 1, kernel_size = 1, out_size = 1;  // products of the spatial sizes
};

ConvGeometry conv_geometry(const Primitive& prim, const ConvAttrs& attrs, const Tensor& x,
                           const Tensor& w, const ValueInfo& out) {
  const Shape &xs = x.shape(), &ws = w.shape();
  if (xs.size() < 3 || ws.size() != xs.size() || out.shape.size() != xs.size())
    fail(prim, "conv needs X [N, C, S...] and W [M, C/group, K...] of equal rank >= 3, got " +
                   shape_str(xs) + " and " + shape_str(ws));
  const size_t n = xs.size() - 2;
  ConvGeometry g;
  g.batch = xs[0];
  g.channels = xs[1];
  g.filters = ws[0];
  g.group = attrs.group;
  g.strides = attrs.strides.empty() ? std::vector<int64_t>(n, 1) : attrs.strides;
  g.dilations = attrs.dilations.empty() ? std::vector<int64_t>(n, 1) : attrs.dilations;
  g.pads = attrs.pads_begin.empty() ? std::vector<int64_t>(n, 0) : attrs.pads_begin;
  const std::vector<int64_t> pads_end =
      attrs.pads_end.empty() ? std::vector<int64_t>(n, 0) : attrs.pads_end;
  if (g.strides.size() != n || g.dilations.size() != n || g.pads.size() != n ||
      pads_end.size() != n)
    fail(prim, "strides, dilations or pads do not match " + std::to_string(n) + " spatial dims");
  if (g.group < 1 || g.channels % g.group != 0 || g.filters % g.group != 0 ||
      ws[1] * g.group != g.channels)
    fail(prim, "group " + std::to_string(g.group) + " does not fit X " + shape_str(xs) + " and W " +
                   shape_str(ws));
  if (out.shape[0] != g.batch || out.shape[1] != g.filters)
    fail(prim, "output " + shape_str(out.shape) + " does not fit X " + shape_str(xs) + " and W " +
                   shape_str(ws));
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = xs[2 + i], k = ws[2 + i];
    if (g.strides[i] < 1 || g.dilations[i] < 1) fail(prim, "strides and dilations must be >= 1");
    const int64_t o =
        (s + g.pads[i] + pads_end[i] - g.dilations[i] * (k - 1) - 1) / g.strides[i] + 1;
    if (out.shape[2 + i] != o)
      fail(prim, "output spatial dim " + std::to_string(i) + " is " +
                     std::to_string(out.shape[2 + i]) + ", the formula gives " + std::to_string(o));
    g.in.push_back(s);
    g.kernel.push_back(k);
    g.out.push_back(o);
    g.in_size *= s;
    g.kernel_size *= k;
    g.out_size *= o;
  }
  return g;
}

// Output positions [lo, hi) along one dim whose input coordinate
// o * stride + offset lies in [0, size).
std::pair<int64_t, int64_t> valid_range(int64_t offset, int64_t stride, int64_t size, int64_t out) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
  return {lo, hi};
}

// im2col of one group's channels for output rows [q0, q1) of the outer output positions
// (all spatial dims but the last): col[(c, k...), position] for positions in the range.
void im2col(const ConvGeometry& g, const float* x, int64_t channels, int64_t q0, int64_t q1,
            float* col) {
  const size_t n = g.in.size(), last = n - 1;
  const int64_t o_last = g.out[last], s_last = g.in[last];
  const int64_t width = (q1 - q0) * o_last;
  const std::vector<int64_t> in_strides = row_major_strides(g.in);
  std::vector<int64_t> kc(n), oc(n);
  for (int64_t row = 0; row < channels * g.kernel_size; ++row) {
    // Decode the row into channel and kernel position.
    int64_t rest = row;
    for (size_t i = n; i-- > 0;) kc[i] = rest % g.kernel[i], rest /= g.kernel[i];
    const float* xc = x + rest * g.in_size;
    float* dst = col + row * width;
    const int64_t off_last = kc[last] * g.dilations[last] - g.pads[last];
    const auto [lo, hi] = valid_range(off_last, g.strides[last], s_last, o_last);
    for (int64_t q = q0; q < q1; ++q, dst += o_last) {
      int64_t r = q, base = 0;
      bool inside = true;
      for (size_t i = last; i-- > 0;) {
        oc[i] = r % g.out[i], r /= g.out[i];
        const int64_t c = oc[i] * g.strides[i] + kc[i] * g.dilations[i] - g.pads[i];
        inside = inside && c >= 0 && c < g.in[i];
        base += c * in_strides[i];
      }
      if (!inside) {
        std::fill_n(dst, o_last, 0.0f);
        continue;
      }
      std::fill_n(dst, lo, 0.0f);
      const float* src = xc + base + off_last;
      const int64_t s = g.strides[last];
      if (s == 1)
        std::copy(src + lo, src + hi, dst + lo);
      else
        for (int64_t o = lo; o < hi; ++o) dst[o] = src[o * s];
      std::fill(dst + hi, dst + o_last, 0.0f);
    }
  }
}

Tensor conv_f32(const ConvGeometry& g, const Tensor& x, const Tensor& w, const ValueInfo& out) {
  Tensor y(out.dtype, out.shape);
  if (y.numel() == 0) return y;
  const float* xp = reinterpret_cast<const float*>(x.bytes());
  const float* wp = reinterpret_cast<const float*>(w.bytes());
  float* yp = reinterpret_cast<float*>(y.mutable_bytes());
  const int64_t cg = g.channels / g.group, mg = g.filters / g.group;
  const int64_t depth = cg * g.kernel_size;
  bool pointwise = g.kernel_size == 1;
  for (size_t i = 0; i < g.in.size(); ++i)
    pointwise = pointwise && g.strides[i] == 1 && g.pads[i] == 0 && g.out[i] == g.in[i];
  // Outer output positions (all spatial dims but the last) per im2col chunk, so the column
  // buffer stays near 8 Mi floats.
  const int64_t o_last = g.out.back(), outer = g.out_size / std::max<int64_t>(o_last, 1);
  const int64_t chunk =
      std::clamp<int64_t>((int64_t{1} << 23) / std::max<int64_t>(depth * o_last, 1), 1, outer);
  std::vector<float> col;
  if (!pointwise) col.resize(static_cast<size_t>(depth * chunk * o_last));
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const float* xg = xp + (b * g.channels + gi * cg) * g.in_size;
      const float* wg = wp + gi * mg * depth;
      float* yg = yp + (b * g.filters + gi * mg) * g.out_size;
      if (pointwise) {
        gemm_f32(mg, g.out_size, cg, wg, depth, xg, g.in_size, yg, g.out_size);
        continue;
      }
      for (int64_t q0 = 0; q0 < outer; q0 += chunk) {
        const int64_t q1 = std::min(outer, q0 + chunk), width = (q1 - q0) * o_last;
        im2col(g, xg, cg, q0, q1, col.data());
        gemm_f32(mg, width, depth, wg, depth, col.data(), width, yg + q0 * o_last, g.out_size);
      }
    }
  return y;
}

template <typename T>
Tensor conv_plain(const ConvGeometry& g, const Tensor& x, const Tensor& w, const ValueInfo& out) {
  const std::vector<T> xv = values_of<T>(x), wv = values_of<T>(w);
  std::vector<T> yv(static_cast<size_t>(numel(out.shape)), T(0));
  const size_t n = g.in.size();
  const int64_t cg = g.channels / g.group, mg = g.filters / g.group;
  const std::vector<int64_t> in_strides = row_major_strides(g.in);
  std::vector<int64_t> oc(n), kc(n);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t m = 0; m < g.filters; ++m) {
      const int64_t gi = m / mg;
      for (int64_t o = 0; o < g.out_size; ++o) {
        int64_t r = o;
        for (size_t i = n; i-- > 0;) oc[i] = r % g.out[i], r /= g.out[i];
        T sum = 0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t k = 0; k < g.kernel_size; ++k) {
            int64_t rk = k, off = 0;
            bool inside = true;
            for (size_t i = n; i-- > 0;) {
              kc[i] = rk % g.kernel[i], rk /= g.kernel[i];
              const int64_t p = oc[i] * g.strides[i] + kc[i] * g.dilations[i] - g.pads[i];
              inside = inside && p >= 0 && p < g.in[i];
              off += p * in_strides[i];
            }
            if (!inside) continue;
            sum += xv[(b * g.channels + gi * cg + c) * g.in_size + off] *
                   wv[(m * cg + c) * g.kernel_size + k];
          }
        yv[(b * g.filters + m) * g.out_size + o] = sum;
      }
    }
  return to_tensor(yv, out);
}

}  // namespace

Tensor run_linear(const Primitive& prim, const LinearAttrs& attrs, const Inputs& in,
                  const ValueInfo& out) {
  if (in.size() != 2) fail(prim, "takes two inputs, given " + std::to_string(in.size()));
  const Tensor &a = *in[0], &b = *in[1];
  if (std::holds_alternative<MatMulAttrs>(attrs)) return matmul(prim, a, b, out);
  const ConvGeometry g = conv_geometry(prim, std::get<ConvAttrs>(attrs), a, b, out);
  if (a.dtype() != out.dtype || b.dtype() != out.dtype)
    fail(prim, "operands must have the output's dtype " + std::string(dtype_name(out.dtype)));
  if (out.dtype == DType::kFloat32) return conv_f32(g, a, b, out);
  if (is_floating(out.dtype)) return conv_plain<double>(g, a, b, out);
  return conv_plain<int64_t>(g, a, b, out);
}

}  // namespace kora::interp
