// Unique of a constant tensor: items (elements, or slices along an axis) compared
// lexicographically as doubles (floating types) or int64 (integers), grouped, and the
// groups ordered by value or by first occurrence.
#include "frontend/unique.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace kora {
namespace {

// -1, 0, 1 for a < b, a == b, a > b; NaN above every number and equal to itself.
template <typename T>
int compare(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) - std::isnan(b);
  }
  return a < b ? -1 : b < a ? 1 : 0;
}

template <typename T>
UniqueResult unique_as(const Tensor& x, const std::vector<T>& v, std::optional<int64_t> axis,
                       bool sorted) {
  const Shape& s = x.shape();
  int64_t outer = 1, len = x.numel(), inner = 1;
  if (axis) {
    len = s[*axis];
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
      if (d != *axis) (d < *axis ? outer : inner) *= s[d];
  }
  auto item_compare = [&](int64_t p, int64_t q) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int c = compare(v[(o * len + p) * inner + i], v[(o * len + q) * inner + i]);
        if (c) return c;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(len));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return item_compare(p, q) < 0; });
  std::vector<int64_t> first, counts, group_of(static_cast<size_t>(len));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || item_compare(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    group_of[order[k]] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  std::vector<int64_t> rank(first.size());  // output position of each group
  std::iota(rank.begin(), rank.end(), int64_t{0});
  if (!sorted) {
    std::vector<int64_t> by_first(first.size());
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (size_t k = 0; k < by_first.size(); ++k) rank[by_first[k]] = static_cast<int64_t>(k);
  }
  const int64_t groups = static_cast<int64_t>(first.size());
  Shape ys = axis ? s : Shape{groups};
  if (axis) ys[*axis] = groups;
  UniqueResult r{Tensor(x.dtype(), ys), Tensor(DType::kInt64, {groups}),
                 Tensor(DType::kInt64, {len}), Tensor(DType::kInt64, {groups})};
  const size_t es = dtype_size(x.dtype());
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t at = rank[g];
    set_element_int(r.indices, at, first[g]);
    set_element_int(r.counts, at, counts[g]);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(r.y.mutable_bytes() + ((o * groups + at) * inner) * es,
                  x.bytes() + ((o * len + first[g]) * inner) * es, static_cast<size_t>(inner) * es);
  }
  for (int64_t j = 0; j < len; ++j) set_element_int(r.inverse, j, rank[group_of[j]]);
  return r;
}

}  // namespace

UniqueResult unique_of(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  if (is_floating(x.dtype())) return unique_as(x, x.to_double(), axis, sorted);
  return unique_as(x, x.to_int64(), axis, sorted);
}

}  // namespace kora
