// Plan validation and ordering: chosen candidate kernels in, an order they can run in
// out (each kernel after kernels producing all its inputs), or a kora::Error naming the
// required node nobody produces, the input nobody produces, or the kernels that wait on
// each other in a cycle.
#include <algorithm>
#include <set>

#include "kora/error.h"
#include "kora/orchestrate.h"
#include "orchestrate/stuck.h"

namespace kora {

std::vector<int> run_until_stuck(const KernelDag& dag, const std::vector<Candidate>& candidates,
                                 const std::vector<int>& chosen, std::vector<int>* stuck) {
  std::vector<char> available(dag.size(), 0);
  std::vector<int> order, waiting = chosen;
  // Kernels in order of their last member run in few passes.
  std::sort(waiting.begin(), waiting.end(), [&](int a, int b) {
    return candidates[a].members.back() < candidates[b].members.back();
  });
  bool progress = true;
  while (progress && !waiting.empty()) {
    progress = false;
    std::vector<int> still;
    for (int k : waiting) {
      const Candidate& c = candidates[k];
      bool ready =
          std::all_of(c.inputs.begin(), c.inputs.end(), [&](int u) { return available[u] != 0; });
      if (!ready) {
        still.push_back(k);
        continue;
      }
      order.push_back(k);
      for (int v : c.outputs) available[v] = 1;
      progress = true;
    }
    waiting = std::move(still);
  }
  if (stuck) *stuck = waiting;
  return order;
}

std::vector<int> schedule(const KernelDag& dag, const std::vector<Candidate>& candidates,
                          const std::vector<int>& chosen) {
  std::vector<char> produced(dag.size(), 0);
  for (int k : chosen) {
    if (k < 0 || k >= static_cast<int>(candidates.size()))
      throw Error("plan names kernel " + std::to_string(k) + ", which is not a candidate");
    for (int v : candidates[k].outputs) produced[v] = 1;
  }
  for (int v = 0; v < dag.size(); ++v)
    if (dag.required[v] && !produced[v])
      throw Error("plan does not produce required node " + std::to_string(v));
  for (int k : chosen)
    for (int u : candidates[k].inputs)
      if (!produced[u])
        throw Error("plan kernel " + std::to_string(k) + " reads node " + std::to_string(u) +
                    ", which no chosen kernel produces");
  std::vector<int> stuck;
  std::vector<int> order = run_until_stuck(dag, candidates, chosen, &stuck);
  if (!stuck.empty()) {
    std::string names;
    for (size_t i = 0; i < stuck.size() && i < 8; ++i)
      names += (i ? ", " : "") + std::to_string(stuck[i]);
    throw Error("plan kernels " + names + (stuck.size() > 8 ? ", ..." : "") +
                " wait on each other's outputs in a cycle");
  }
  return order;
}

}  // namespace kora
