// Window geometry for Conv, MaxPool and AveragePool (ONNX auto_pad and ceil_mode rules).
#include "frontend/window.h"

namespace kora {

Window resolve_window(const InferContext& c, const std::vector<int64_t>& spatial,
                      const std::vector<int64_t>& kernel, bool allow_ceil_mode) {
  const Node& n = c.node();
  const size_t r = spatial.size();
  Window w;
  w.kernel = n.attr_ints("kernel_shape", kernel);
  w.strides = n.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.dilations = n.attr_ints("dilations", std::vector<int64_t>(r, 1));
  w.pads = n.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (w.kernel.size() != r)
    c.fail("kernel_shape has " + std::to_string(w.kernel.size()) + " dims for " +
           std::to_string(r) + " spatial dims");
  if (w.strides.size() != r || w.dilations.size() != r || w.pads.size() != 2 * r)
    c.fail("strides, dilations or pads do not match the " + std::to_string(r) + " spatial dims");
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = allow_ceil_mode && n.attr_int("ceil_mode", 0) != 0;
  w.output.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t k = w.kernel[i], s = w.strides[i], d = w.dilations[i], in = spatial[i];
    if (k <= 0 || s <= 0 || d <= 0) c.fail("kernel, strides and dilations must be positive");
    const int64_t dk = (k - 1) * d + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - in);
      const int64_t small = total / 2, large = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads[i + r] = auto_pad == "SAME_UPPER" ? large : small;
      w.output[i] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      w.pads[i] = w.pads[i + r] = 0;
    } else if (auto_pad != "NOTSET") {
      c.fail("auto_pad '" + auto_pad + "' is not valid");
    }
    const int64_t span = in + w.pads[i] + w.pads[i + r] - dk;
    if (span < 0)
      c.fail("window " + std::to_string(dk) + " is larger than the padded input " +
             std::to_string(in + w.pads[i] + w.pads[i + r]));
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // The last window must start inside the input or its left padding.
    if (ceil_mode && (out - 1) * s >= in + w.pads[i]) --out;
    w.output[i] = out;
  }
  return w;
}

}  // namespace kora
