// Fission of the signal operators. HannWindow, HammingWindow, BlackmanWindow and
// MelWeightMatrix become constants, computed as ONNX's reference computes them. DFT and
// STFT become matmuls with a constant real matrix of cos/sin terms (rows: input sample and
// real/imaginary part; columns: frequency bin and real/imaginary part), so they run as
// linear primitives and fuse with their neighbours: DFT moves its axis next to the last
// dim, STFT gathers its frames (constant indices) and weights them by the window. A DFT
// whose matrix would be too large is kept whole (the interpreter's dft.cc).
#include <cmath>

#include "fission/builder.h"

namespace kora {
namespace {

using S = ScalarOp;

// Above this many matrix elements (256 MiB of float32) a DFT is kept whole instead.
constexpr int64_t kMaxMatrixElements = int64_t{1} << 26;

void window(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  const int64_t size = out.shape[0];
  const bool periodic = b.node().attr_int("periodic", 1) != 0;
  const double n1 = static_cast<double>(periodic ? size : size - 1);
  const std::string& op = b.node().op_type;
  Tensor w(out.dtype, out.shape);
  for (int64_t i = 0; i < size; ++i) {
    const double t = static_cast<double>(i) * M_PI / n1;
    double v;
    if (op == "HannWindow") {
      v = std::sin(t) * std::sin(t);
    } else if (op == "HammingWindow") {
      const double alpha = 25.0 / 46.0;
      v = alpha - std::cos(2 * t) * (1 - alpha);
    } else {
      v = 0.42 - 0.5 * std::cos(2 * t) + 0.08 * std::cos(4 * t);
    }
    set_element(w, i, v);
  }
  b.bind(0, b.add_constant(std::move(w)));
}

// Triangular filters between mel-spaced edges rounded down to DFT bins (ONNX reference).
void mel_weight_matrix(FissionBuilder& b) {
  const ValueInfo& out = b.out_info(0);
  const int64_t spectrum = out.shape[0], bins = out.shape[1];
  const int64_t length = b.require_constant(1, "dft_length").int64_at(0);
  const double rate = b.require_constant(2, "sample_rate").double_at(0);
  const double lower = b.require_constant(3, "lower_edge_hertz").double_at(0);
  const double upper = b.require_constant(4, "upper_edge_hertz").double_at(0);
  const double low_mel = 2595 * std::log10(1 + lower / 700);
  const double high_mel = 2595 * std::log10(1 + upper / 700);
  const double step = (high_mel - low_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    edge[i] = static_cast<int64_t>(std::floor(static_cast<double>(length + 1) * hz / rate));
  }
  std::vector<double> m(static_cast<size_t>(spectrum * bins), 0.0);
  const auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spectrum) b.fail("a mel filter edge falls outside the spectrum");
    return m[j * bins + i];
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = edge[i], mid = edge[i + 1], hi = edge[i + 2];
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j)
      at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  Tensor w(out.dtype, out.shape);
  for (int64_t i = 0; i < w.numel(); ++i) set_element(w, i, m[i]);
  b.bind(0, b.add_constant(std::move(w)));
}

// [samples * parts, bins * 2]: y[k] = sum_n window[n] x[n] e^(-+2 pi i k n / length), the
// inverse scaled by 1 / length. `samples` may be below `length` (zero padding).
Tensor dft_matrix(DType dtype, int64_t samples, int64_t parts, int64_t length, int64_t bins,
                  bool inverse, const Tensor* window) {
  Tensor w(dtype, {samples * parts, bins * 2});
  const double sign = inverse ? 1.0 : -1.0,
               scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t n = 0; n < samples; ++n) {
    const double wn = scale * (window ? window->double_at(n) : 1.0);
    for (int64_t k = 0; k < bins; ++k) {
      const double t =
          2 * M_PI * static_cast<double>((k * n) % length) / static_cast<double>(length);
      const double c = wn * std::cos(t), s = wn * sign * std::sin(t);
      const int64_t row = n * parts, col = k * 2;
      set_element(w, row * bins * 2 + col, c);
      set_element(w, row * bins * 2 + col + 1, s);
      if (parts == 2) {
        set_element(w, (row + 1) * bins * 2 + col, -s);
        set_element(w, (row + 1) * bins * 2 + col + 1, c);
      }
    }
  }
  return w;
}

void dft(FissionBuilder& b) {
  std::string x = b.in(0);
  const Shape s = b.shape(x);
  const int64_t r = static_cast<int64_t>(s.size()), parts = s.back();
  int64_t axis = b.opset() >= 20 ? -2 : b.node().attr_int("axis", 1);
  if (b.opset() >= 20 && b.has_in(2)) axis = b.require_constant(2, "axis").int64_at(0);
  if (axis < 0) axis += r;
  const Shape& out = b.out_info(0).shape;
  const int64_t length = b.has_in(1) ? b.require_constant(1, "dft_length").int64_at(0) : s[axis];
  const int64_t bins = out[axis], samples = std::min(s[axis], length);
  // [others..., samples, parts] -> [M, samples * parts]
  std::vector<int64_t> perm;
  Shape others;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != axis) {
      perm.push_back(d);
      others.push_back(s[d]);
    }
  perm.push_back(axis);
  perm.push_back(r - 1);
  const bool inverse = b.node().attr_int("inverse", 0) != 0;
  if (samples * parts * bins * 2 > kMaxMatrixElements) {
    Node whole;
    whole.op_type = "DFT";
    whole.inputs = {x};
    whole.attributes["axis"].i = axis;
    whole.attributes["dft_length"].i = length;
    whole.attributes["inverse"].i = inverse;
    return b.bind(0, b.opaque_node(whole, {b.out_info(0)})[0]);
  }
  if (samples < s[axis]) {
    layout::Slice slice{Shape(s.size(), 0), Shape(s.size(), 1)};
    Shape cut = s;
    cut[axis] = samples;
    x = b.layout(slice, {x}, cut);
  }
  x = b.transpose(x, perm);
  const int64_t m = numel(others);
  x = b.reshape(x, {m, samples * parts});
  std::string y = b.matmul(
      x, b.add_constant(dft_matrix(b.dtype(x), samples, parts, length, bins, inverse, nullptr)));
  Shape moved = others;
  moved.push_back(bins);
  moved.push_back(2);
  y = b.reshape(y, moved);
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) back[perm[d]] = d;
  b.bind(0, b.transpose(y, back));
}

void stft(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape s = b.shape(x);
  const Shape& out = b.out_info(0).shape;
  const int64_t batch = s[0], parts = s[2], frames = out[1], bins = out[2];
  const int64_t step = b.require_constant(1, "frame_step").int64_at(0);
  const int64_t length = b.has_in(3)   ? b.require_constant(3, "frame_length").int64_at(0)
                         : b.has_in(2) ? b.shape(b.in(2))[0]
                                       : s[1];
  const int64_t samples = b.has_in(2) ? std::min(b.shape(b.in(2))[0], length) : length;
  std::vector<int64_t> index;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < samples; ++j) index.push_back(f * step + j);
  std::string framed = b.layout(layout::Gather{1, index}, {x}, {batch, frames * samples, parts});
  framed = b.reshape(framed, {batch, frames, samples, parts});
  const Tensor* window = b.has_in(2) ? b.constant(b.in(2)) : nullptr;
  if (b.has_in(2) && !window) {
    std::string w = b.in(2);
    if (b.shape(w)[0] != samples) w = b.layout(layout::Slice{{0}, {1}}, {w}, {samples});
    framed = b.ew(S::kMul, {framed, b.reshape(w, {1, 1, samples, 1})});
  }
  framed = b.reshape(framed, {batch * frames, samples * parts});
  const std::string y = b.matmul(
      framed, b.add_constant(dft_matrix(b.dtype(x), samples, parts, length, bins, false, window)));
  b.bind(0, b.reshape(y, out));
}

}  // namespace

void add_signal_fission(FissionTable& t) {
  t["HannWindow"] = window;
  t["HammingWindow"] = window;
  t["BlackmanWindow"] = window;
  t["MelWeightMatrix"] = mel_weight_matrix;
  t["DFT"] = dft;
  t["STFT"] = stft;
}

}  // namespace kora
