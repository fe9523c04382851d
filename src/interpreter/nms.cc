// NonMaxSuppression with ONNX semantics. In: boxes [B, N, 4], scores [B, C, N], and the
// optional max_output_boxes_per_class (default 0), iou_threshold (default 0) and
// score_threshold (default none); attribute center_point_box (0: [y1, x1, y2, x2] corners
// in any order, 1: [x_center, y_center, width, height]). Per batch and class, boxes scoring
// above the threshold are taken greedily by descending score (ties: lower box index
// first; NaN scores are never taken), each dropped if its IoU with an already taken box exceeds
// iou_threshold. Out: the static [bound, 3] int64 tensor of graph.values holding the selected
// (batch, class, box) rows in that order, the remaining rows filled with -1.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

struct Box {
  double y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

Box read_box(const std::vector<double>& v, int64_t at, bool center) {
  const double a = v[at], b = v[at + 1], c = v[at + 2], d = v[at + 3];
  if (center)  // [x_center, y_center, width, height]
    return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

// As onnxruntime: boxes of no area never suppress each other.
bool suppresses(const Box& p, const Box& q, double threshold) {
  const double area_p = (p.y2 - p.y1) * (p.x2 - p.x1), area_q = (q.y2 - q.y1) * (q.x2 - q.x1);
  if (area_p <= 0 || area_q <= 0) return false;
  const double h = std::min(p.y2, q.y2) - std::max(p.y1, q.y1);
  const double w = std::min(p.x2, q.x2) - std::max(p.x1, q.x1);
  if (h <= 0 || w <= 0) return false;
  const double inter = h * w;
  return inter / (area_p + area_q - inter) > threshold;
}

}  // namespace

std::vector<Tensor> run_non_max_suppression(const OpaqueCall& call) {
  const Tensor &boxes_t = call.required(0), &scores_t = call.required(1);
  const Shape &bs = boxes_t.shape(), &ss = scores_t.shape();
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    call.fail("needs boxes [B, N, 4] and scores [B, C, N], got " + shape_str(bs) + " and " +
              shape_str(ss));
  const int64_t batches = bs[0], count = bs[1], classes = ss[1];
  auto scalar = [&](size_t slot) -> const Tensor* {
    const Tensor* t = call.input(slot);
    if (t && t->numel() != 1) call.fail("input " + std::to_string(slot) + " must hold one value");
    return t;
  };
  const Tensor* max_t = scalar(2);
  const Tensor* iou_t = scalar(3);
  const Tensor* score_t = scalar(4);
  const int64_t max_per_class = max_t ? std::max<int64_t>(0, max_t->int64_at(0)) : 0;
  const double iou_threshold = iou_t ? iou_t->double_at(0) : 0.0;
  const bool center = call.node().attr_int("center_point_box", 0) != 0;

  const ValueInfo& out = call.out(0);
  if (out.dtype != DType::kInt64 || out.shape.size() != 2 || out.shape[1] != 3)
    call.fail("output must be int64 [bound, 3], is " + type_str(out.dtype, out.shape));
  const int64_t bound = out.shape[0];
  Tensor y(DType::kInt64, out.shape);
  int64_t* yp = reinterpret_cast<int64_t*>(y.mutable_bytes());
  std::fill_n(yp, bound * 3, int64_t{-1});

  const std::vector<double> boxes = boxes_t.to_double(), scores = scores_t.to_double();
  int64_t rows = 0;
  std::vector<int64_t> order;
  std::vector<Box> taken;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      if (max_per_class == 0) continue;
      const double* sc = scores.data() + (b * classes + c) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!std::isnan(sc[i]) && (!score_t || sc[i] > score_t->double_at(0))) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      taken.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(taken.size()) >= max_per_class) break;
        const Box box = read_box(boxes, (b * count + i) * 4, center);
        bool keep = true;
        for (const Box& t : taken)
          if (suppresses(t, box, iou_threshold)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        taken.push_back(box);
        if (rows >= bound)
          call.fail("selects more than the " + std::to_string(bound) + " rows of its output");
        yp[rows * 3] = b;
        yp[rows * 3 + 1] = c;
        yp[rows * 3 + 2] = i;
        ++rows;
      }
    }
  return {y};
}

}  // namespace kora::interp
