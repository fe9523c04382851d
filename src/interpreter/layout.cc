// Layout and broadcast primitives: data movement only. In: the input tensor(s) and the map
// (transpose, reshape, slice, pad, concat, gather, tile, window; or broadcast). Out: the
// output tensor, each element copied bytewise from the input coordinate the map gives, or
// the fill value where the map gives none. All maps but concat and window are separable,
// one table per output dim from output coordinate to input offset, and run through one
// copy loop; reshape shares the input's bytes.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

constexpr int64_t kNone = -1;  // "no input element": the fill value

// maps[d][o]: input element offset contributed by output coordinate o along output dim d,
// or kNone.
using AxisMaps = std::vector<std::vector<int64_t>>;

template <typename E>
class Copier {
 public:
  Copier(const AxisMaps& maps, const E* src, E fill) : maps_(maps), src_(src), fill_(fill) {
    block_.assign(maps.size(), 1);
    for (size_t d = maps.size(); d-- > 1;)
      block_[d - 1] = block_[d] * static_cast<int64_t>(maps[d].size());
    if (!maps.empty()) {
      const std::vector<int64_t>& last = maps.back();
      contiguous_ = !last.empty() && last[0] >= 0;
      for (size_t i = 1; contiguous_ && i < last.size(); ++i)
        contiguous_ = last[i] == last[0] + static_cast<int64_t>(i);
    }
  }

  void run(E* out) const {
    if (maps_.empty())
      out[0] = src_[0];
    else
      run(0, 0, out);
  }

 private:
  E* run(size_t d, int64_t base, E* out) const {
    const std::vector<int64_t>& m = maps_[d];
    const int64_t n = static_cast<int64_t>(m.size());
    if (d + 1 == maps_.size()) {
      if (contiguous_) {
        std::copy(src_ + base + m[0], src_ + base + m[0] + n, out);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = m[i] == kNone ? fill_ : src_[base + m[i]];
      }
      return out + n;
    }
    for (int64_t off : m) {
      if (off == kNone) {
        std::fill_n(out, block_[d], fill_);
        out += block_[d];
      } else {
        out = run(d + 1, base + off, out);
      }
    }
    return out;
  }

  const AxisMaps& maps_;
  const E* src_;
  E fill_;
  std::vector<int64_t> block_;  // output elements per coordinate of dim d
  bool contiguous_ = false;
};

template <typename E>
void copy_as(const AxisMaps& maps, const Tensor& x, Tensor& y, const Tensor& fill) {
  E f;
  std::memcpy(&f, fill.bytes(), sizeof(E));
  Copier<E>(maps, reinterpret_cast<const E*>(x.bytes()), f)
      .run(reinterpret_cast<E*>(y.mutable_bytes()));
}

// The one-element tensor holding `value` in `dtype`.
Tensor fill_tensor(DType dtype, double value) {
  Tensor f(dtype, {});
  set_element(f, 0, value);
  return f;
}

Tensor copy_mapped(const AxisMaps& maps, const Tensor& x, const ValueInfo& out, double fill = 0) {
  Tensor y(out.dtype, out.shape);
  if (y.numel() == 0) return y;
  const Tensor f = fill_tensor(out.dtype, fill);
  switch (dtype_size(out.dtype)) {
    case 1:
      copy_as<uint8_t>(maps, x, y, f);
      break;
    case 2:
      copy_as<uint16_t>(maps, x, y, f);
      break;
    case 4:
      copy_as<uint32_t>(maps, x, y, f);
      break;
    default:
      copy_as<uint64_t>(maps, x, y, f);
      break;
  }
  return y;
}

// Checks input coordinates (kNone allowed) against the input dim's size and turns them
// into element offsets.
std::vector<int64_t> offsets(const Primitive& prim, std::vector<int64_t> coords, int64_t size,
                             int64_t stride) {
  for (int64_t& c : coords) {
    if (c == kNone) continue;
    if (c < 0 || c >= size)
      fail(prim, "maps to input coordinate " + std::to_string(c) + " outside a dim of size " +
                     std::to_string(size));
    c *= stride;
  }
  return coords;
}

void check_rank(const Primitive& prim, const Tensor& x, const ValueInfo& out, size_t params,
                const char* what) {
  if (x.shape().size() != out.shape.size())
    fail(prim, "input rank " + std::to_string(x.shape().size()) + " differs from output rank " +
                   std::to_string(out.shape.size()));
  if (params != out.shape.size())
    fail(prim, std::string(what) + " has " + std::to_string(params) + " entries for rank " +
                   std::to_string(out.shape.size()));
}

Tensor transpose(const Primitive& prim, const layout::Transpose& t, const Tensor& x,
                 const ValueInfo& out) {
  check_rank(prim, x, out, t.perm.size(), "perm");
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  std::vector<bool> seen(out.shape.size(), false);
  AxisMaps maps(out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) {
    const int64_t p = t.perm[d];
    if (p < 0 || p >= static_cast<int64_t>(seen.size()) || seen[p])
      fail(prim, "perm is not a permutation");
    seen[p] = true;
    if (x.shape()[p] != out.shape[d])
      fail(prim, "output dim " + std::to_string(d) + " is " + std::to_string(out.shape[d]) +
                     ", input dim " + std::to_string(p) + " is " + std::to_string(x.shape()[p]));
    for (int64_t o = 0; o < out.shape[d]; ++o) maps[d].push_back(o * strides[p]);
  }
  return copy_mapped(maps, x, out);
}

Tensor slice(const Primitive& prim, const layout::Slice& s, const Tensor& x, const ValueInfo& out) {
  check_rank(prim, x, out, s.starts.size(), "starts");
  if (s.steps.size() != s.starts.size()) fail(prim, "steps and starts differ in length");
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  AxisMaps maps(out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) {
    std::vector<int64_t> coords;
    for (int64_t o = 0; o < out.shape[d]; ++o) coords.push_back(s.starts[d] + o * s.steps[d]);
    maps[d] = offsets(prim, coords, x.shape()[d], strides[d]);
  }
  return copy_mapped(maps, x, out);
}

// Input coordinate of output coordinate o along one padded dim of input size n.
int64_t pad_coord(int64_t o, int64_t begin, int64_t stride, int64_t n, layout::PadMode mode) {
  const int64_t q = o - begin;
  if (q >= 0 && q % stride == 0 && q / stride < n) return q / stride;
  if (mode == layout::PadMode::kConstant || n == 0) return kNone;
  if (mode == layout::PadMode::kEdge) return q < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);  // reflect: ... 2 1 | 0 1 2 3 | 2 1 0 1 ...
  int64_t m = q % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

Tensor pad(const Primitive& prim, const layout::Pad& p, const Tensor& x, const ValueInfo& out) {
  check_rank(prim, x, out, p.begin.size(), "begin");
  std::vector<int64_t> stride = p.stride;
  if (stride.empty()) stride.assign(p.begin.size(), 1);
  if (stride.size() != p.begin.size()) fail(prim, "stride and begin differ in length");
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  AxisMaps maps(out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) {
    if (stride[d] < 1) fail(prim, "pad stride must be positive");
    if (stride[d] > 1 && p.mode != layout::PadMode::kConstant)
      fail(prim, "pad stride > 1 needs constant mode");
    std::vector<int64_t> coords;
    for (int64_t o = 0; o < out.shape[d]; ++o)
      coords.push_back(pad_coord(o, p.begin[d], stride[d], x.shape()[d], p.mode));
    maps[d] = offsets(prim, coords, x.shape()[d], strides[d]);
  }
  return copy_mapped(maps, x, out, p.value);
}

Tensor gather(const Primitive& prim, const layout::Gather& g, const Tensor& x,
              const ValueInfo& out) {
  check_rank(prim, x, out, out.shape.size(), "");
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  if (g.axis < 0 || g.axis >= rank) fail(prim, "gather axis out of range");
  if (static_cast<int64_t>(g.indices.size()) != out.shape[g.axis])
    fail(prim, std::to_string(g.indices.size()) + " indices for an output dim of " +
                   std::to_string(out.shape[g.axis]));
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  AxisMaps maps(out.shape.size());
  for (int64_t d = 0; d < rank; ++d) {
    std::vector<int64_t> coords;
    if (d == g.axis) {
      coords = g.indices;
    } else {
      if (x.shape()[d] != out.shape[d]) fail(prim, "input and output differ off the gather axis");
      for (int64_t o = 0; o < out.shape[d]; ++o) coords.push_back(o);
    }
    maps[d] = offsets(prim, coords, x.shape()[d], strides[d]);
  }
  return copy_mapped(maps, x, out);
}

Tensor tile(const Primitive& prim, const Tensor& x, const ValueInfo& out) {
  check_rank(prim, x, out, out.shape.size(), "");
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  AxisMaps maps(out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) {
    std::vector<int64_t> coords;
    for (int64_t o = 0; o < out.shape[d]; ++o)
      coords.push_back(x.shape()[d] > 0 ? o % x.shape()[d] : kNone);
    maps[d] = offsets(prim, coords, x.shape()[d], strides[d]);
  }
  return copy_mapped(maps, x, out);
}

Tensor concat(const Primitive& prim, const layout::Concat& c, const Inputs& in,
              const ValueInfo& out) {
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  if (c.axis < 0 || c.axis >= rank) fail(prim, "concat axis out of range");
  if (c.offsets.size() != in.size())
    fail(prim, std::to_string(c.offsets.size()) + " offsets for " + std::to_string(in.size()) +
                   " inputs");
  Tensor y(out.dtype, out.shape);
  const size_t esize = dtype_size(out.dtype);
  int64_t outer = 1, inner = static_cast<int64_t>(esize);
  for (int64_t d = 0; d < c.axis; ++d) outer *= out.shape[d];
  for (int64_t d = c.axis + 1; d < rank; ++d) inner *= out.shape[d];
  const int64_t out_axis = out.shape[c.axis];
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& x = *in[k];
    if (x.dtype() != out.dtype || static_cast<int64_t>(x.shape().size()) != rank)
      fail(prim, "input " + std::to_string(k) + " is " + type_str(x.dtype(), x.shape()) +
                     ", output " + type_str(out.dtype, out.shape));
    for (int64_t d = 0; d < rank; ++d)
      if (d != c.axis && x.shape()[d] != out.shape[d])
        fail(prim, "input " + std::to_string(k) + " differs from the output off the axis");
    const int64_t n = x.shape()[c.axis], off = c.offsets[k];
    if (off < 0 || off + n > out_axis)
      fail(prim, "input " + std::to_string(k) + " at offset " + std::to_string(off) +
                     " overruns the output");
    if (n == 0) continue;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.mutable_bytes() + (o * out_axis + off) * inner, x.bytes() + o * n * inner,
                  static_cast<size_t>(n * inner));
  }
  return y;
}

template <typename E>
void window_as(const std::vector<std::vector<int64_t>>& tables, const Shape& out_shape, int64_t nc,
               int64_t in_plane, const std::vector<int64_t>& in_strides,
               const std::vector<int64_t>& kernel, const Tensor& x, Tensor& y, E fill) {
  const size_t n = tables.size();
  const E* src = reinterpret_cast<const E*>(x.bytes());
  E* dst = reinterpret_cast<E*>(y.mutable_bytes());
  int64_t per_plane = 1;
  for (size_t d = 2; d < out_shape.size(); ++d) per_plane *= out_shape[d];
  std::vector<int64_t> coord(2 * n, 0);  // o_1..o_n, k_1..k_n
  for (int64_t q = 0; q < per_plane; ++q) {
    int64_t off = 0;
    bool inside = true;
    for (size_t i = 0; i < n && inside; ++i) {
      const int64_t c = tables[i][coord[i] * kernel[i] + coord[n + i]];
      inside = c != kNone;
      off += c * in_strides[i];
    }
    for (int64_t p = 0; p < nc; ++p)
      dst[p * per_plane + q] = inside ? src[p * in_plane + off] : fill;
    for (size_t d = 2 * n; d-- > 0;) {
      if (++coord[d] < out_shape[2 + d]) break;
      coord[d] = 0;
    }
  }
}

Tensor window(const Primitive& prim, const layout::Window& w, const Tensor& x,
              const ValueInfo& out) {
  if (w.channels_last) {  // the default form between two transposes moving the channel dim
    const size_t r = x.shape().size(), ro = out.shape.size();
    if (r < 2 || ro < 2)
      fail(prim, "window of " + shape_str(x.shape()) + " cannot give " + shape_str(out.shape));
    layout::Window plain = w;
    plain.channels_last = false;
    std::vector<int64_t> to_first{0, static_cast<int64_t>(r - 1)}, to_last{0};
    for (size_t d = 1; d + 1 < r; ++d) to_first.push_back(static_cast<int64_t>(d));
    for (size_t d = 2; d < ro; ++d) to_last.push_back(static_cast<int64_t>(d));
    to_last.push_back(1);
    Shape xs_first{x.shape()[0], x.shape()[r - 1]}, out_first{out.shape[0], out.shape[ro - 1]};
    xs_first.insert(xs_first.end(), x.shape().begin() + 1, x.shape().end() - 1);
    out_first.insert(out_first.end(), out.shape.begin() + 1, out.shape.end() - 1);
    const Tensor xf = transpose(prim, {to_first}, x, {x.dtype(), xs_first});
    const Tensor yf = window(prim, plain, xf, {out.dtype, out_first});
    return transpose(prim, {to_last}, yf, out);
  }
  const Shape& xs = x.shape();
  if (xs.size() < 2) fail(prim, "window input needs rank >= 2");
  const size_t n = xs.size() - 2;
  if (out.shape.size() != 2 + 2 * n || w.strides.size() != n || w.dilations.size() != n ||
      w.pads_begin.size() != n || out.shape[0] != xs[0] || out.shape[1] != xs[1])
    fail(prim, "window of " + shape_str(xs) + " cannot give " + shape_str(out.shape));
  // tables[i][o * K + k]: input coordinate along spatial dim i, or kNone.
  std::vector<std::vector<int64_t>> tables(n);
  std::vector<int64_t> kernel(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t o_n = out.shape[2 + i], k_n = out.shape[2 + n + i];
    kernel[i] = k_n;
    for (int64_t o = 0; o < o_n; ++o)
      for (int64_t k = 0; k < k_n; ++k) {
        const int64_t c = o * w.strides[i] + k * w.dilations[i] - w.pads_begin[i];
        tables[i].push_back(c >= 0 && c < xs[2 + i] ? c : kNone);
      }
  }
  Tensor y(out.dtype, out.shape);
  if (y.numel() == 0) return y;
  const Shape spatial(xs.begin() + 2, xs.end());
  const std::vector<int64_t> in_strides = row_major_strides(spatial);
  const int64_t nc = xs[0] * xs[1], in_plane = numel(spatial);
  const Tensor f = fill_tensor(out.dtype, w.fill);
  auto run = [&](auto tag) {
    using E = decltype(tag);
    E fill;
    std::memcpy(&fill, f.bytes(), sizeof(E));
    window_as<E>(tables, out.shape, nc, in_plane, in_strides, kernel, x, y, fill);
  };
  switch (dtype_size(out.dtype)) {
    case 1:
      run(uint8_t{});
      break;
    case 2:
      run(uint16_t{});
      break;
    case 4:
      run(uint32_t{});
      break;
    default:
      run(uint64_t{});
      break;
  }
  return y;
}

}  // namespace

Tensor run_broadcast(const Primitive& prim, const Inputs& in, const ValueInfo& out) {
  if (in.size() != 1) fail(prim, "takes one input, given " + std::to_string(in.size()));
  const Tensor& x = *in[0];
  if (x.shape().size() != out.shape.size() || x.dtype() != out.dtype)
    fail(prim, "cannot broadcast " + type_str(x.dtype(), x.shape()) + " to " +
                   type_str(out.dtype, out.shape));
  const std::vector<int64_t> strides = row_major_strides(x.shape());
  AxisMaps maps(out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) {
    const int64_t size = x.shape()[d];
    if (size != 1 && size != out.shape[d])
      fail(prim, "cannot broadcast " + shape_str(x.shape()) + " to " + shape_str(out.shape));
    for (int64_t o = 0; o < out.shape[d]; ++o) maps[d].push_back(size == 1 ? 0 : o * strides[d]);
  }
  return copy_mapped(maps, x, out);
}

Tensor run_layout(const Primitive& prim, const LayoutAttrs& attrs, const Inputs& in,
                  const ValueInfo& out) {
  if (in.empty()) fail(prim, "has no input");
  if (!std::holds_alternative<layout::Concat>(attrs)) {
    if (in.size() != 1) fail(prim, "takes one input, given " + std::to_string(in.size()));
    if (in[0]->dtype() != out.dtype)
      fail(prim, "input is " + std::string(dtype_name(in[0]->dtype())) + ", output " +
                     dtype_name(out.dtype));
  }
  const Tensor& x = *in[0];
  return std::visit(
      [&](const auto& map) -> Tensor {
        using T = std::decay_t<decltype(map)>;
        if constexpr (std::is_same_v<T, layout::Transpose>) {
          return transpose(prim, map, x, out);
        } else if constexpr (std::is_same_v<T, layout::Reshape>) {
          if (x.numel() != numel(out.shape))
            fail(prim, "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(out.shape));
          return x.reshaped(out.shape);
        } else if constexpr (std::is_same_v<T, layout::Slice>) {
          return slice(prim, map, x, out);
        } else if constexpr (std::is_same_v<T, layout::Pad>) {
          return pad(prim, map, x, out);
        } else if constexpr (std::is_same_v<T, layout::Concat>) {
          return concat(prim, map, in, out);
        } else if constexpr (std::is_same_v<T, layout::Gather>) {
          return gather(prim, map, x, out);
        } else if constexpr (std::is_same_v<T, layout::Tile>) {
          return tile(prim, x, out);
        } else {
          return window(prim, map, x, out);
        }
      },
      attrs);
}

}  // namespace kora::interp
