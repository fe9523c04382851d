// Shape rules of the operators that sample or place image elements at computed positions:
// GridSample (X [N, C, D1..Dr], grid [N, O1..Or, r] -> [N, C, O1..Or]), AffineGrid (theta
// [N, 2, 3] or [N, 3, 4] and a constant size -> grid [N, H, W, 2] or [N, D, H, W, 3]),
// RoiAlign (-> [num_rois, C, output_height, output_width]), Col2Im (constant image_shape
// and block_shape), MaxUnpool (output_shape a constant input or inferred from the
// pooling attributes) and Det ([*, M, M] -> [*]).
#include "frontend/op_rules.h"

namespace kora {
namespace {

void require_float(const InferContext& c, size_t i, const char* role) {
  if (!is_floating(c.dtype(i)))
    c.fail(std::string(role) + " must be floating point, not " + dtype_name(c.dtype(i)));
}

std::vector<ValueInfo> grid_sample(const InferContext& c) {
  require_float(c, 1, "grid");
  const Shape &x = c.shape(0), &grid = c.shape(1);
  const int64_t r = c.rank(0) - 2;
  if (r < 1) c.fail("X must be [N, C, D1, ...], got " + shape_str(x));
  if (c.rank(1) != r + 2 || grid[0] != x[0] || grid.back() != r)
    c.fail("grid " + shape_str(grid) + " does not fit X " + shape_str(x) + ": expected [" +
           std::to_string(x[0]) + ", ..., " + std::to_string(r) + "]");
  const std::string mode = c.node().attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode != "linear" && mode != "bilinear" && mode != "nearest" && mode != "cubic" &&
      mode != "bicubic")
    c.fail("mode '" + mode + "' is not one of linear, bilinear, nearest, cubic, bicubic");
  const std::string pad = c.node().attr_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    c.fail("padding_mode '" + pad + "' is not one of zeros, border, reflection");
  Shape out{x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> affine_grid(const InferContext& c) {
  require_float(c, 0, "theta");
  const Shape& theta = c.shape(0);
  const std::vector<int64_t> size = c.ints(1, "size");
  const int64_t d = static_cast<int64_t>(size.size()) - 2;
  if ((d != 2 && d != 3) || c.rank(0) != 3 || theta[0] != size[0] || theta[1] != d ||
      theta[2] != d + 1)
    c.fail("theta " + shape_str(theta) + " and size " + shape_str(size) +
           " are not [N, 2, 3] with [N, C, H, W] or [N, 3, 4] with [N, C, D, H, W]");
  for (int64_t s : size)
    if (s < 1) c.fail("size " + shape_str(size) + " has a dimension below 1");
  Shape out{size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(d);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> roi_align(const InferContext& c) {
  const Shape &x = c.shape(0), &rois = c.shape(1), &idx = c.shape(2);
  if (c.rank(0) != 4) c.fail("X must be [N, C, H, W], got " + shape_str(x));
  if (c.rank(1) != 2 || rois[1] != 4 || c.rank(2) != 1 || idx[0] != rois[0])
    c.fail("rois " + shape_str(rois) + " and batch_indices " + shape_str(idx) +
           " are not [num_rois, 4] and [num_rois]");
  if (!is_integer(c.dtype(2))) c.fail("batch_indices must be integers");
  const std::string mode = c.node().attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode '" + mode + "' is not avg or max");
  const std::string ctm = c.node().attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    c.fail("coordinate_transformation_mode '" + ctm + "' is not half_pixel or output_half_pixel");
  const int64_t oh = c.node().attr_int("output_height", 1),
                ow = c.node().attr_int("output_width", 1);
  if (oh < 1 || ow < 1) c.fail("output_height and output_width must be positive");
  return {ValueInfo{c.dtype(0), {rois[0], x[1], oh, ow}}};
}

std::vector<ValueInfo> col2im(const InferContext& c) {
  const Shape& x = c.shape(0);
  const std::vector<int64_t> image = c.ints(1, "image_shape"), block = c.ints(2, "block_shape");
  const size_t n = image.size();
  if (c.rank(0) != 3 || n == 0 || block.size() != n)
    c.fail("input " + shape_str(x) + ", image_shape " + shape_str(image) + " and block_shape " +
           shape_str(block) + " are not [N, C * prod(block), L] with matching sizes");
  const auto attr = [&](const char* key, int64_t fill, size_t count) {
    std::vector<int64_t> v = c.node().attr_ints(key, std::vector<int64_t>(count, fill));
    if (v.size() != count) c.fail(std::string(key) + " must hold " + std::to_string(count));
    return v;
  };
  const std::vector<int64_t> dil = attr("dilations", 1, n), pads = attr("pads", 0, 2 * n),
                             str = attr("strides", 1, n);
  int64_t kernel = 1, blocks = 1;
  for (size_t i = 0; i < n; ++i) {
    kernel *= block[i];
    const int64_t span = image[i] + pads[i] + pads[i + n] - dil[i] * (block[i] - 1) - 1;
    if (block[i] < 1 || str[i] < 1 || dil[i] < 1 || span < 0)
      c.fail("block_shape " + shape_str(block) + " does not fit image_shape " + shape_str(image));
    blocks *= span / str[i] + 1;
  }
  if (x[1] % kernel != 0 || x[2] != blocks)
    c.fail("input " + shape_str(x) + " is not [N, C * " + std::to_string(kernel) + ", " +
           std::to_string(blocks) + "]");
  Shape out{x[0], x[1] / kernel};
  out.insert(out.end(), image.begin(), image.end());
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> max_unpool(const InferContext& c) {
  const Shape& x = c.shape(0);
  if (x.size() < 3) c.fail("X must be [N, C, S...], got " + shape_str(x));
  const size_t n = x.size() - 2;
  if (c.shape(1) != x)
    c.fail("I " + shape_str(c.shape(1)) + " must have X's shape " + shape_str(x));
  if (!is_integer(c.dtype(1))) c.fail("I must be integers");
  const std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape");
  const std::vector<int64_t> strides = c.node().attr_ints("strides", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> pads = c.node().attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    c.fail("kernel_shape, strides or pads do not match " + std::to_string(n) + " spatial dims");
  Shape out{x[0], x[1]};
  for (size_t i = 0; i < n; ++i)
    out.push_back((x[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i]);
  if (c.has(2)) {
    const std::vector<int64_t> given = c.ints(2, "output_shape");
    if (given.size() != out.size())
      c.fail("output_shape " + shape_str(given) + " has the wrong rank");
    for (size_t i = 0; i < out.size(); ++i)
      if (given[i] < out[i])
        c.fail("output_shape " + shape_str(given) + " is smaller than the unpooled " +
               shape_str(out));
    out = given;
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> det(const InferContext& c) {
  require_float(c, 0, "X");
  const Shape& x = c.shape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    c.fail("X must be [*, M, M], got " + shape_str(x));
  return {ValueInfo{c.dtype(0), Shape(x.begin(), x.end() - 2)}};
}

}  // namespace

void add_sampling_rules(RuleTable& t) {
  t["GridSample"] = {grid_sample, 2, 2};
  t["AffineGrid"] = {affine_grid, 2, 2};
  t["RoiAlign"] = {roi_align, 3, 3};
  t["Col2Im"] = {col2im, 3, 3};
  t["MaxUnpool"] = {max_unpool, 2, 3};
  t["Det"] = {det, 1, 1};
}

}  // namespace kora
