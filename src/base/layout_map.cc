// oneDNN format tags as index maps (src/base/layout_map.h).
#include "base/layout_map.h"

#include <algorithm>
#include <cctype>

namespace kora {

Shape LayoutMap::split_shape(const Shape& logical) const {
  if (split < 0) return logical;
  Shape s = logical;
  s[split] = logical[split] / block;
  s.insert(s.begin() + split + 1, block);
  return s;
}

Shape LayoutMap::stored_shape(const Shape& logical) const {
  const Shape s = split_shape(logical);
  Shape out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = s[perm[d]];
  return out;
}

bool LayoutMap::identity() const {
  if (split >= 0) return false;
  for (size_t d = 0; d < perm.size(); ++d)
    if (perm[d] != static_cast<int64_t>(d)) return false;
  return true;
}

std::string plain_layout(size_t rank) {
  if (rank < 2 || rank > 26) return "";
  std::string tag;
  for (size_t d = 0; d < rank; ++d) tag += static_cast<char>('a' + d);
  return tag;
}

std::string channels_last_layout(size_t rank) {
  return rank == 3 ? "acb" : rank == 4 ? "acdb" : rank == 5 ? "acdeb" : "";
}

namespace {

// A bfloat16 tag ("acdb+bf16") stores its elements in the same order as its float32 one.
std::string float32_tag(const std::string& tag) {
  return has_bf16_suffix(tag) ? tag.substr(0, tag.size() - (sizeof(kBf16) - 1)) : tag;
}

}  // namespace

bool is_plain_bfloat16(const std::string& tag, size_t rank) {
  return has_bf16_suffix(tag) && !plain_layout(rank).empty() &&
         float32_tag(tag) == plain_layout(rank);
}

bool is_channels_last(const std::string& tag, size_t rank) {
  const std::string name = channels_last_layout(rank);
  return !name.empty() && float32_tag(tag) == name;
}

std::optional<LayoutMap> layout_map(const std::string& tag, const Shape& shape) {
  const std::string layout = float32_tag(tag);
  const int64_t rank = static_cast<int64_t>(shape.size());
  size_t letters = 0;
  while (letters < layout.size() && std::isalpha(static_cast<unsigned char>(layout[letters])))
    ++letters;
  if (rank < 2 || static_cast<int64_t>(letters) != rank) return std::nullopt;
  LayoutMap m;
  std::vector<int64_t> order;  // logical dims, outer to inner
  for (size_t i = 0; i < letters; ++i) {
    const char ch = layout[i];
    const int64_t d = std::tolower(static_cast<unsigned char>(ch)) - 'a';
    if (d < 0 || d >= rank) return std::nullopt;
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (m.split >= 0) return std::nullopt;  // two blocked dims
      m.split = d;
    }
    order.push_back(d);
  }
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d = 0; d < rank; ++d)
    if (sorted[d] != d) return std::nullopt;
  const std::string rest = layout.substr(letters);
  if (m.split >= 0) {  // "<block><letter>": the split dim's block, innermost
    size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
    if (digits == 0 || digits > 6 || rest.size() != digits + 1 || rest[digits] != 'a' + m.split)
      return std::nullopt;
    m.block = std::stoll(rest.substr(0, digits));
    if (m.block < 1 || shape[m.split] % m.block != 0) return std::nullopt;  // padded
  } else if (!rest.empty() ||
             (std::is_sorted(order.begin(), order.end()) && !has_bf16_suffix(tag))) {
    return std::nullopt;  // another suffix, or plain float32
  }
  for (int64_t d : order) m.perm.push_back(m.split >= 0 && d > m.split ? d + 1 : d);
  if (m.split >= 0) m.perm.push_back(m.split + 1);
  return m;
}

int64_t channel_block(const LayoutMap& m) {
  if (m.split != 1 || m.perm.size() < 3) return 0;
  for (size_t d = 0; d + 1 < m.perm.size(); ++d)
    if (m.perm[d] != static_cast<int64_t>(d < 2 ? d : d + 1)) return 0;
  return m.perm.back() == 2 ? m.block : 0;
}

int64_t channel_block(const std::string& tag, const Shape& shape) {
  const std::optional<LayoutMap> m = layout_map(tag, shape);
  return m ? channel_block(*m) : 0;
}

}  // namespace kora
