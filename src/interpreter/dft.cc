// DFT kept whole, for transforms whose cos/sin matrix would be too large to hold as a
// constant (rules_signal.cc decides). In: x [..., L, ..., 1 or 2] (real, or real and
// imaginary parts in the last dim); attributes axis (non-negative), dft_length, inverse
// and onesided, all made explicit by the fission rule. Out: [..., K, ..., 2], K the
// dft_length or its onesided half + 1; x zero-padded or truncated to dft_length; the
// inverse scaled by 1 / dft_length. Sums in double.
#include <algorithm>
#include <cmath>

#include "interpreter/kernels.h"

namespace kora::interp {

std::vector<Tensor> run_dft(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  const Shape& s = x.shape();
  const Node& node = call.node();
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t axis = call.axis("axis", 1, rank - 1);
  const int64_t length = node.attr_int("dft_length", s[axis]);
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const ValueInfo& out = call.out(0);
  if (length < 1 || out.shape.size() != s.size() || out.shape.back() != 2)
    call.fail("output " + type_str(out.dtype, out.shape) + " does not fit x " +
              type_str(x.dtype(), s));
  const int64_t parts = s.back(), bins = out.shape[axis], samples = std::min(s[axis], length);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= s[d];
  const std::vector<double> xv = x.to_double();
  std::vector<double> cosines(static_cast<size_t>(length)), sines(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    const double t = 2 * M_PI * static_cast<double>(i) / static_cast<double>(length);
    cosines[i] = std::cos(t);
    sines[i] = (inverse ? 1.0 : -1.0) * std::sin(t);
  }
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  Tensor y(out.dtype, out.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in)
      for (int64_t k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < samples; ++n) {
          const int64_t at = ((o * s[axis] + n) * inner + in) * parts;
          const double a = xv[at], b = parts == 2 ? xv[at + 1] : 0.0;
          const int64_t i = (k * n) % length;
          re += a * cosines[i] - b * sines[i];
          im += a * sines[i] + b * cosines[i];
        }
        const int64_t at = ((o * bins + k) * inner + in) * 2;
        set_element(y, at, re * scale);
        set_element(y, at + 1, im * scale);
      }
  return {y};
}

}  // namespace kora::interp
