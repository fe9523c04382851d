// Shape rules of the signal operators: HannWindow, HammingWindow, BlackmanWindow (a
// constant size -> [size] of output_datatype), MelWeightMatrix (constant inputs ->
// [dft_length / 2 + 1, num_mel_bins]), DFT (x [..., L, ..., 1 or 2] -> [..., K, ..., 2]
// along a constant axis, K the dft_length or its onesided half + 1) and STFT (signal
// [B, L, 1 or 2] -> [B, frames, K, 2]).
#include "frontend/op_rules.h"

namespace kora {
namespace {

DType output_datatype(const InferContext& c) {
  const int to = static_cast<int>(c.node().attr_int("output_datatype", 1));
  std::optional<DType> d = dtype_from_onnx(to);
  if (!d) c.fail("output_datatype " + onnx_dtype_name(to) + " is not supported");
  return *d;
}

int64_t positive(const InferContext& c, size_t i, const char* role) {
  const double v = c.scalar(i, role);
  if (!(v >= 1)) c.fail(std::string(role) + " must be at least 1");
  return static_cast<int64_t>(v);
}

std::vector<ValueInfo> window(const InferContext& c) {
  return {ValueInfo{output_datatype(c), {positive(c, 0, "size")}}};
}

std::vector<ValueInfo> mel_weight_matrix(const InferContext& c) {
  const int64_t bins = positive(c, 0, "num_mel_bins"), length = positive(c, 1, "dft_length");
  for (size_t i = 2; i < 5; ++i) c.scalar(i, i == 2 ? "sample_rate" : "edge hertz");
  return {ValueInfo{output_datatype(c), {length / 2 + 1, bins}}};
}

void require_signal(const InferContext& c, const Shape& x) {
  if (!is_floating(c.dtype(0))) c.fail("input must be floating point");
  if (x.size() < 2 || (x.back() != 1 && x.back() != 2))
    c.fail("input " + shape_str(x) + " must end in a dim of 1 (real) or 2 (complex)");
}

std::vector<ValueInfo> dft(const InferContext& c) {
  const Shape& x = c.shape(0);
  require_signal(c, x);
  const int64_t r = c.rank(0);
  int64_t axis = c.opset() >= 20 ? -2 : c.node().attr_int("axis", 1);
  if (c.opset() >= 20 && c.has(2)) axis = static_cast<int64_t>(c.scalar(2, "axis"));
  axis = c.axis(axis, r);
  if (axis == r - 1) c.fail("axis must not be the last (real/imaginary) dim");
  const int64_t length = c.has(1) ? positive(c, 1, "dft_length") : x[axis];
  const bool onesided = c.node().attr_int("onesided", 0) != 0;
  Shape out = x;
  out[axis] = onesided ? length / 2 + 1 : length;
  out.back() = 2;
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> stft(const InferContext& c) {
  const Shape& x = c.shape(0);
  require_signal(c, x);
  if (x.size() != 3) c.fail("signal must be [batch, length, 1 or 2], got " + shape_str(x));
  const int64_t step = positive(c, 1, "frame_step");
  int64_t frame = x[1];
  if (c.has(2)) {
    if (c.rank(2) != 1) c.fail("window must be one-dimensional");
    frame = c.shape(2)[0];
  }
  if (c.has(3)) frame = positive(c, 3, "frame_length");
  if (frame > x[1])
    c.fail("frame_length " + std::to_string(frame) + " exceeds the signal length " +
           std::to_string(x[1]));
  const bool onesided = c.node().attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (x[1] - frame) / step;
  return {ValueInfo{c.dtype(0), {x[0], frames, onesided ? frame / 2 + 1 : frame, 2}}};
}

}  // namespace

void add_signal_rules(RuleTable& t) {
  t["HannWindow"] = {window, 1, 1};
  t["HammingWindow"] = {window, 1, 1};
  t["BlackmanWindow"] = {window, 1, 1};
  t["MelWeightMatrix"] = {mel_weight_matrix, 5, 5};
  t["DFT"] = {dft, 1, 3};
  t["STFT"] = {stft, 2, 4};
}

}  // namespace kora
