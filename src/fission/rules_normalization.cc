// Fission of normalizations into reduce + elementwise: BatchNormalization (inference:
// x * a + b with per-channel a = scale / sqrt(var + eps), b = bias - mean * a, folded when
// constant; training mode: the batch's statistics, and the running ones updated), Instance-, Layer-
// and GroupNormalization (mean, centred variance, rsqrt), numerically stable Softmax and LogSoftmax
// (max subtracted first), Dropout (identity; in training mode a random mask, drawn by
// rules_random.cc's generator), Hardmax (ArgMax, kept whole, compared with an iota), LRN (a window
// of channels summed), MeanVarianceNormalization (ONNX's function body).
#include <functional>

#include "fission/builder.h"

namespace kora {

std::string stable_softmax(FissionBuilder& b, const std::string& x,
                           const std::vector<int64_t>& axes, bool log) {
  using S = ScalarOp;
  const std::string shifted = b.ew(S::kSub, {x, b.reduce(ReduceOp::kMax, x, axes)});
  const std::string e = b.ew(S::kExp, {shifted});
  const std::string sum = b.reduce(ReduceOp::kSum, e, axes);
  return log ? b.ew(S::kSub, {shifted, b.ew(S::kLog, {sum})}) : b.ew(S::kDiv, {e, sum});
}

namespace {

using S = ScalarOp;

// [C] -> [1, C, 1, ...] for a tensor of `rank`.
std::string per_channel(FissionBuilder& b, const std::string& v, size_t rank) {
  Shape s(rank, 1);
  s[1] = numel(b.shape(v));
  return b.reshape(v, s);
}

// Training mode: normalized by the batch's mean and (population) variance over every dim
// but the channels; the running statistics move towards them by 1 - momentum.
void batch_norm_training(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  std::vector<int64_t> axes;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != 1) axes.push_back(static_cast<int64_t>(d));
  const std::string mean = b.reduce(ReduceOp::kMean, x, axes);
  const std::string centred = b.ew(S::kSub, {x, mean});
  const std::string var = b.reduce(ReduceOp::kMean, b.ew(S::kMul, {centred, centred}), axes);
  const double eps = b.node().attr_float("epsilon", 1e-5);
  const std::string y = b.ew(S::kMul, {centred, b.ew(S::kRsqrt, {b.ew(S::kAdd, {var, eps})})});
  const std::string scaled = b.ew(S::kMul, {y, per_channel(b, b.in(1), s.size())});
  b.bind(0, b.ew(S::kAdd, {scaled, per_channel(b, b.in(2), s.size())}));
  const double momentum = b.node().attr_float("momentum", 0.9);
  for (size_t o : {1, 2}) {
    if (!b.wants_out(o)) continue;
    const std::string batch = b.reshape(o == 1 ? mean : var, {s[1]});
    b.bind(o, b.ew(S::kAdd,
                   {b.ew(S::kMul, {b.in(o + 2), momentum}), b.ew(S::kMul, {batch, 1 - momentum})}));
  }
}

void batch_norm(FissionBuilder& b) {
  if (b.node().attr_int("training_mode", 0) != 0) return batch_norm_training(b);
  const std::string x = b.in(0);
  const size_t r = b.shape(x).size();
  const double eps = b.node().attr_float("epsilon", 1e-5);
  const std::string a = b.ew(S::kMul, {b.in(1), b.ew(S::kRsqrt, {b.ew(S::kAdd, {b.in(4), eps})})});
  const std::string shift = b.ew(S::kSub, {b.in(2), b.ew(S::kMul, {b.in(3), a})});
  const std::string y = b.ew(S::kMul, {x, per_channel(b, a, r)});
  b.bind(0, b.ew(S::kAdd, {y, per_channel(b, shift, r)}));
}

struct Normalized {
  std::string y, mean, inv_std;
};

// (x - mean) * rsqrt(var + eps) over `axes`, var the mean of squared deviations.
Normalized normalize(FissionBuilder& b, const std::string& x, const std::vector<int64_t>& axes,
                     double eps) {
  const std::string mean = b.reduce(ReduceOp::kMean, x, axes);
  const std::string centred = b.ew(S::kSub, {x, mean});
  const std::string var = b.reduce(ReduceOp::kMean, b.ew(S::kMul, {centred, centred}), axes);
  const std::string inv_std = b.ew(S::kRsqrt, {b.ew(S::kAdd, {var, eps})});
  return {b.ew(S::kMul, {centred, inv_std}), mean, inv_std};
}

std::vector<int64_t> axes_from(int64_t first, size_t rank) {
  std::vector<int64_t> axes;
  for (int64_t a = first; a < static_cast<int64_t>(rank); ++a) axes.push_back(a);
  return axes;
}

void instance_norm(FissionBuilder& b) {
  const std::string x = b.in(0);
  const size_t r = b.shape(x).size();
  const Normalized n = normalize(b, x, axes_from(2, r), b.node().attr_float("epsilon", 1e-5));
  const std::string y = b.ew(S::kMul, {n.y, per_channel(b, b.in(1), r)});
  b.bind(0, b.ew(S::kAdd, {y, per_channel(b, b.in(2), r)}));
}

void layer_norm(FissionBuilder& b) {
  const std::string x = b.in(0);
  const size_t r = b.shape(x).size();
  int64_t axis = b.node().attr_int("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(r);
  const Normalized n = normalize(b, x, axes_from(axis, r), b.node().attr_float("epsilon", 1e-5));
  std::string y = b.ew(S::kMul, {n.y, b.in(1)});
  if (b.has_in(2)) y = b.ew(S::kAdd, {y, b.in(2)});
  b.bind(0, y);
  b.bind(1, n.mean);
  b.bind(2, n.inv_std);
}

// Scale and bias are per group (opset 18) or per channel (opset 21); either way they are
// applied per channel here, a per-group vector gathered out to the channels.
std::string channel_vector(FissionBuilder& b, const std::string& v, int64_t channels,
                           int64_t groups, size_t rank) {
  std::string per_c = v;
  const int64_t n = numel(b.shape(v));
  if (n != channels) {
    if (n != groups) b.fail("scale/bias must have num_groups or channels entries");
    std::vector<int64_t> idx;
    for (int64_t c = 0; c < channels; ++c) idx.push_back(c / (channels / groups));
    per_c = b.layout(layout::Gather{0, idx}, {b.reshape(v, {n})}, {channels});
  }
  return per_channel(b, per_c, rank);
}

// The mean over each group's C/G channels (and the dims after them) of `v` [N, C, ...],
// broadcast back per channel [N, C, 1, ...]: per channel first, then per group on the small
// [N, C] means (reshaped to [N, G, C/G]; the groups are equal, so the mean of their means
// is theirs). `then` maps the per-group statistic before it is spread out. Every large
// tensor keeps x's shape (one group: a reduction over all dims but N; a group per channel:
// over the spatial dims), so the kernels of a normalization between channels-last
// convolutions read and write them through layout views; merging the channels with the
// spatial dims ([N, G, C/G * spatial]) made a copy of x in plain order instead.
std::string group_mean(FissionBuilder& b, const std::string& v, int64_t groups,
                       const std::function<std::string(const std::string&)>& then) {
  const Shape& s = b.shape(v);
  const int64_t n = s[0], c = s[1];
  if (groups == 1 || groups == c)
    return then(b.reduce(ReduceOp::kMean, v, axes_from(groups == 1 ? 1 : 2, s.size())));
  Shape per_c(s.size(), 1);
  per_c[0] = n;
  per_c[1] = c;
  const std::string means = b.reduce(ReduceOp::kMean, v, axes_from(2, s.size()));
  const std::string g =
      then(b.reduce(ReduceOp::kMean, b.reshape(means, {n, groups, c / groups}), {2}));
  return b.reshape(b.broadcast(g, {n, groups, c / groups}), per_c);
}

void group_norm(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t groups = b.node().attr_int("num_groups", 1), c = s[1];  // checked by inference
  const double eps = b.node().attr_float("epsilon", 1e-5);
  auto same = [](const std::string& t) { return t; };
  const std::string centred = b.ew(S::kSub, {x, group_mean(b, x, groups, same)});
  const std::string inv_std =
      group_mean(b, b.ew(S::kMul, {centred, centred}), groups, [&](const std::string& var) {
        return b.ew(S::kRsqrt, {b.ew(S::kAdd, {var, eps})});
      });
  const std::string y = b.ew(S::kMul, {centred, inv_std});
  const std::string scaled = b.ew(S::kMul, {y, channel_vector(b, b.in(1), c, groups, s.size())});
  b.bind(0, b.ew(S::kAdd, {scaled, channel_vector(b, b.in(2), c, groups, s.size())}));
}

// argmax along `axis` as a one-hot mask of x's dtype (the first maximum wins).
std::string hardmax_of(FissionBuilder& b, const std::string& v, int64_t axis) {
  Node arg;
  arg.op_type = "ArgMax";
  arg.inputs = {v};
  arg.attributes["axis"].i = axis;
  arg.attributes["keepdims"].i = 1;
  Shape at = b.shape(v);
  const int64_t n = at[axis];
  at[axis] = 1;
  const std::string index = b.opaque_node(arg, {ValueInfo{DType::kInt64, at}})[0];
  const std::string hot = b.ew(S::kEqual, {index, b.iota(n, axis, at.size())});
  return b.ew(S::kCast, {hot}, b.dtype(v));
}

// x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta: the
// squares viewed as [N, 1, C, spatial], a window of `size` channels unfolded and summed.
void lrn(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  if (s.size() < 2) b.fail("input must have rank >= 2");
  const Node& n = b.node();
  const int64_t size = n.attr_int("size", 0);
  if (size < 1) b.fail("size must be at least 1");
  const int64_t spatial = numel(Shape(s.begin() + 2, s.end()));
  const std::string squares = b.reshape(b.ew(S::kMul, {x, x}), {s[0], 1, s[1], spatial});
  const layout::Window window{{1, 1}, {1, 1}, {(size - 1) / 2, 0}, 0.0};
  const std::string windows = b.layout(window, {squares}, {s[0], 1, s[1], spatial, size, 1});
  const std::string sum = b.reshape(b.reduce(ReduceOp::kSum, windows, {4, 5}), s);
  const double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75);
  const std::string base = b.ew(S::kAdd, {b.ew(S::kMul, {sum, alpha / static_cast<double>(size)}),
                                          n.attr_float("bias", 1.0)});
  b.bind(0, b.ew(S::kDiv, {x, b.ew(S::kPow, {base, beta})}));
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
void mean_variance_normalization(FissionBuilder& b) {
  const std::string x = b.in(0);
  const std::vector<int64_t> axes = b.node().attr_ints("axes", {0, 2, 3});
  const std::string mean = b.reduce(ReduceOp::kMean, x, axes);
  const std::string mean_sq = b.reduce(ReduceOp::kMean, b.ew(S::kMul, {x, x}), axes);
  const std::string var = b.ew(S::kSub, {mean_sq, b.ew(S::kMul, {mean, mean})});
  const std::string std = b.ew(S::kAdd, {b.ew(S::kSqrt, {var}), 1e-9});
  b.bind(0, b.ew(S::kDiv, {b.ew(S::kSub, {x, mean}), std}));
}

// Hardmax over `axis` (opset >= 13) or, before, over the input viewed as 2-D at `axis`.
void hardmax(FissionBuilder& b) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = b.node().attr_int("axis", b.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += r;
  if (b.opset() >= 13) return b.bind(0, hardmax_of(b, x, axis));
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  const std::string v = b.reshape(x, {outer, numel(s) / std::max<int64_t>(outer, 1)});
  b.bind(0, b.reshape(hardmax_of(b, v, 1), s));
}

// Softmax over `axis` (opset >= 13) or, before opset 13, over all dims from `axis` on
// (the input viewed as 2-D).
void softmax_family(FissionBuilder& b, bool log) {
  const std::string x = b.in(0);
  const Shape& s = b.shape(x);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = b.node().attr_int("axis", b.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += r;
  std::string v = x;
  std::vector<int64_t> axes{axis};
  if (b.opset() < 13) {
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= s[i];
    v = b.reshape(x, {outer, numel(s) / std::max<int64_t>(outer, 1)});
    axes = {1};
  }
  b.bind(0, b.reshape(stable_softmax(b, v, axes, log), s));
}

void softmax(FissionBuilder& b) { softmax_family(b, false); }
void log_softmax(FissionBuilder& b) { softmax_family(b, true); }

// Inference (or a ratio of 0): the identity, mask all true. Training mode with ratio r > 0:
// u = RandomUniformLike(x) (seeded by the node's `seed`, random.cc), kept = u >= r,
// y = kept ? x / (1 - r) : 0, as ONNX's reference draws it.
void dropout(FissionBuilder& b) {
  const bool training = b.has_in(2) && b.require_constant(2, "training_mode").double_at(0) != 0;
  const double ratio = b.has_in(1) ? b.require_constant(1, "ratio").double_at(0) : 0.5;
  if (training && ratio > 0) {
    Node draw;
    draw.op_type = "RandomUniformLike";
    draw.inputs = {b.in(0)};
    if (b.node().has_attr("seed")) {  // Dropout's seed is an int, the generators' a float
      Attribute seed;
      seed.kind = Attribute::Kind::kFloat;
      seed.f = static_cast<double>(b.node().attr_int("seed", 0));
      draw.attributes["seed"] = seed;
    }
    Attribute dtype;
    dtype.kind = Attribute::Kind::kInt;
    dtype.i = dtype_to_onnx(DType::kFloat32);
    draw.attributes["dtype"] = dtype;
    const std::string u = b.opaque_node(draw, {ValueInfo{DType::kFloat32, b.shape(b.in(0))}})[0];
    const std::string dropped = b.ew(ScalarOp::kLess, {u, ratio});
    b.bind(0, b.ew(ScalarOp::kWhere,
                   {dropped, 0.0, b.ew(ScalarOp::kMul, {b.in(0), 1.0 / (1.0 - ratio)})}));
    if (b.wants_out(1)) b.bind(1, b.ew(ScalarOp::kNot, {dropped}));
    return;
  }
  b.bind(0, b.in(0));
  if (b.wants_out(1)) {
    const std::string one = b.add_constant(Tensor::from_int64(DType::kBool, {}, {1}));
    b.bind(1, b.broadcast(one, b.out_info(1).shape));
  }
}

}  // namespace

void add_normalization_fission(FissionTable& t) {
  t["BatchNormalization"] = batch_norm;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm;
  t["GroupNormalization"] = group_norm;
  t["Softmax"] = softmax;
  t["LogSoftmax"] = log_softmax;
  t["Dropout"] = dropout;
  t["Hardmax"] = hardmax;
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = mean_variance_normalization;
}

}  // namespace kora
