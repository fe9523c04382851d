// Stored layouts as index maps: a oneDNN format tag and a tensor's logical shape in, the
// layout as a split of one dim into blocks and a permutation out. "acdb" (channels last)
// stores [N, C, H, W] as [N, H, W, C]; "aBcd8b" as [N, C/8, H, W, 8] (the channels in
// blocks of 8, the block innermost); a bfloat16 tag ("acdb+bf16") has its float32 tag's
// map. A tag that pads (C not a multiple of the block) or has two blocked dims has no
// map; a plain one ("abc") has none either, but its bfloat16 form ("abc+bf16": the tensor in
// its own order, each element bfloat16; a oneDNN matmul's source under --bf16) has the
// identity. Generated code reads and writes tensors stored so through a reshape and a
// transpose (src/cpu/layout_view.h); the orchestration offers such views only on tensors
// a oneDNN kernel would store so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kora/tensor.h"

namespace kora {

struct LayoutMap {
  int64_t split = -1;  // the logical dim split into (size / block, block); -1: none
  int64_t block = 0;
  // Over the split shape (the logical shape with dim `split` as two): stored dim d is
  // split dim perm[d].
  std::vector<int64_t> perm;

  Shape split_shape(const Shape& logical) const;
  bool identity() const;  // stores the logical tensor in its own order
  Shape stored_shape(const Shape& logical) const;
};

// The suffix of a bfloat16 layout ("acdb+bf16") or of a oneDNN schedule computing in
// bf16 ("onednn:native+bf16", src/cpu/library.h), and whether a name ends in it.
inline constexpr char kBf16[] = "+bf16";
inline bool has_bf16_suffix(const std::string& name) {
  constexpr size_t n = sizeof(kBf16) - 1;
  return name.size() > n && name.compare(name.size() - n, n, kBf16) == 0;
}

// The channels-last layout of a rank ("acb", "acdb", "acdeb"; "" for other ranks): the
// layout oneDNN's convolutions share with one another on AVX-512 machines.
std::string channels_last_layout(size_t rank);
// Whether `tag` is the channels-last layout of that rank, float32 or bfloat16 ("acdb+bf16").
bool is_channels_last(const std::string& tag, size_t rank);

// The plain (row-major) layout of a rank ("ab", "abc", ...; "" below 2), and whether `tag`
// is that layout stored as bfloat16 ("abc+bf16").
std::string plain_layout(size_t rank);
bool is_plain_bfloat16(const std::string& tag, size_t rank);

// The map of `tag` for a tensor of `shape`; none for plain float32 ("abcd"), for tags of
// another rank and for the tags above; the identity for plain bfloat16 ("abcd+bf16").
std::optional<LayoutMap> layout_map(const std::string& tag, const Shape& shape);

// The block of a map, or of `tag` for a tensor of `shape`, that stores the channel dim (1)
// in whole blocks, the block innermost and the other dims in order ("aBcd8b", "aBcd16b",
// "aBcde16b+bf16": 8, 16); 0 for any other.
int64_t channel_block(const LayoutMap& m);
int64_t channel_block(const std::string& tag, const Shape& shape);

}  // namespace kora
