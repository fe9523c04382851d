// Dominated candidates (dominance.h): compares each candidate with the candidates writing
// its first output, as node bitsets of what each reads, writes and takes blocked at once.
#include "orchestrate/dominance.h"

#include <cstdint>

namespace kora {

std::vector<char> undominated(const KernelDag& dag, const std::vector<Candidate>& candidates,
                              const std::vector<double>& cost, const LayoutFlexibility* layouts) {
  const size_t words = (static_cast<size_t>(dag.size()) + 63) / 64;
  const size_t count = candidates.size();
  // touched: the blockable nodes each candidate reads or writes (with layouts)
  std::vector<uint64_t> reads(count * words, 0), writes(count * words, 0), touched, together,
      alone;  // alone: the nodes each takes on its own (LayoutFlexibility::bfloat16)
  if (layouts)
    touched.assign(count * words, 0), together.assign(count * words, 0),
        alone.assign(count * words, 0);
  std::vector<std::vector<int>> writers(dag.size());
  for (size_t k = 0; k < count; ++k) {
    for (int u : candidates[k].inputs) reads[k * words + u / 64] |= uint64_t{1} << (u % 64);
    for (int v : candidates[k].outputs) {
      writes[k * words + v / 64] |= uint64_t{1} << (v % 64);
      writers[v].push_back(static_cast<int>(k));
    }
    if (layouts) {
      for (const auto* nodes : {&candidates[k].inputs, &candidates[k].outputs})
        for (int u : *nodes)
          if (layouts->blockable[u]) touched[k * words + u / 64] |= uint64_t{1} << (u % 64);
      if (!layouts->together.empty())
        for (int u : layouts->together[k]) together[k * words + u / 64] |= uint64_t{1} << (u % 64);
      if (!layouts->bfloat16.empty())
        for (int u : layouts->bfloat16[k]) alone[k * words + u / 64] |= uint64_t{1} << (u % 64);
    }
  }
  // With k flexible but not native: j allows k's two layout states (dominance.h).
  auto allows_states = [&](size_t j, size_t k) {
    if (!layouts->flexible[k]) return true;
    if (layouts->native[k] || (layouts->flexible[j] && layouts->native[j])) return false;
    bool inside = true, apart = true;
    for (size_t w = 0; w < words; ++w) {
      const uint64_t tj = together[j * words + w], tk = together[k * words + w];
      const uint64_t seen = reads[j * words + w] | writes[j * words + w];
      if (tk & seen & ~tj) return false;  // a node of k's that j keeps plain
      if (alone[k * words + w] & seen & ~alone[j * words + w]) return false;  // likewise
      inside = inside && !(tj & ~tk);
      apart = apart && !(tj & tk);
    }
    return inside || apart;
  };
  // j covers k: j writes all k writes, and reads only what k reads (and with layouts,
  // touches no blockable node k does not).
  auto covers = [&](size_t j, size_t k) {
    for (size_t w = 0; w < words; ++w) {
      if (writes[k * words + w] & ~writes[j * words + w]) return false;
      if (reads[j * words + w] & ~reads[k * words + w]) return false;
      if (layouts && (touched[j * words + w] & ~touched[k * words + w])) return false;
    }
    return !layouts || allows_states(j, k);
  };
  std::vector<char> keep(count, 1);
  for (size_t k = 0; k < count; ++k) {
    if (candidates[k].outputs.empty() || (layouts && layouts->flexible[k] && layouts->native[k]))
      continue;
    for (int j : writers[candidates[k].outputs.front()]) {
      const size_t jj = static_cast<size_t>(j);
      if (jj == k || !keep[jj] || cost[jj] > cost[k] || !covers(jj, k)) continue;
      // Mutual domination (a tie): keep the first of the two.
      if (cost[jj] == cost[k] && jj > k && covers(k, jj)) continue;
      keep[k] = 0;
      break;
    }
  }
  return keep;
}

}  // namespace kora
