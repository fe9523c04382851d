// Fission of AffineGrid: the grid is a constant base grid of normalized coordinates
// [1, P, d + 1] (rows: the P output positions; columns x, y(, z), 1 as ONNX's reference
// builds them) times theta^T [N, d + 1, d]: one batched matmul, reshaped to
// [N, (D,) H, W, d]. RoiAlign is kept whole with its sampling mode made explicit;
// GridSample and the image scatters (Col2Im, MaxUnpool) are kept whole in rules_opaque.cc.
#include "fission/builder.h"

namespace kora {
namespace {

// Normalized coordinate i of a dim of `size` positions (numpy arange as the reference).
double base_coordinate(int64_t i, int64_t size, bool align_corners) {
  if (align_corners)
    return size == 1 ? -1.0 : -1.0 + static_cast<double>(i) * 2.0 / static_cast<double>(size - 1);
  const double step = 2.0 / static_cast<double>(size);
  return -1.0 + step / 2 + static_cast<double>(i) * step;
}

void affine_grid(FissionBuilder& b) {
  const std::string theta = b.in(0);
  const ValueInfo& out = b.out_info(0);
  const int64_t d = out.shape.back();
  const Shape spatial(out.shape.begin() + 1, out.shape.end() - 1);
  const bool align = b.node().attr_int("align_corners", 0) != 0;
  const int64_t positions = numel(spatial);
  Tensor base(b.dtype(theta), {1, positions, d + 1});
  const std::vector<int64_t> strides = row_major_strides(spatial);
  for (int64_t p = 0; p < positions; ++p) {
    // Column j holds the coordinate along spatial dim d - 1 - j (x is the last dim).
    for (int64_t j = 0; j < d; ++j) {
      const int64_t dim = d - 1 - j, size = spatial[dim];
      set_element(base, p * (d + 1) + j, base_coordinate((p / strides[dim]) % size, size, align));
    }
    set_element(base, p * (d + 1) + d, 1.0);
  }
  const std::string grid = b.matmul(b.add_constant(std::move(base)), b.transpose(theta, {0, 2, 1}));
  b.bind(0, b.reshape(grid, out.shape));
}

// Kept whole; before opset 16 RoiAlign had no coordinate_transformation_mode and sampled
// as output_half_pixel does, so the opaque node states it.
void roi_align(FissionBuilder& b) {
  Node node = b.node();
  if (!node.has_attr("coordinate_transformation_mode")) {
    Attribute& a = node.attributes["coordinate_transformation_mode"];
    a.kind = Attribute::Kind::kString;
    a.s = b.opset() >= 16 ? "half_pixel" : "output_half_pixel";
  }
  node.inputs = {b.in(0), b.in(1), b.in(2)};
  b.bind(0, b.opaque_node(node, {b.out_info(0)})[0]);
}

}  // namespace

void add_sampling_fission(FissionTable& t) {
  t["AffineGrid"] = affine_grid;
  t["RoiAlign"] = roi_align;
}

}  // namespace kora
