// The two baselines, chosen from the same candidates and costs as the optimum:
//   unfused  one kernel per primitive (every single node is a candidate);
//   greedy   rule-based fusion as conventional compilers do it: walking the nodes in
//            order, an elementwise, broadcast, reduce or layout node joins the kernel of
//            a producer whose only consumer it is (a linear producer's kernel first:
//            epilogues into GEMM/conv; elementwise chains; reductions with the
//            elementwise nodes around them), and a layout producer (pad, reshape) joins
//            its only consumer, a linear node, as prologue. A merge happens only when the
//            merged set is a candidate and the kernels still form a DAG.
#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include "kora/error.h"
#include "kora/orchestrate.h"

namespace kora {
namespace {

double total(const std::vector<int>& kernels, const std::vector<double>& cost) {
  double sum = 0;
  for (int k : kernels) sum += cost[k];
  return sum;
}

std::map<std::vector<int>, int> index_by_members(const std::vector<Candidate>& candidates) {
  std::map<std::vector<int>, int> index;
  for (size_t k = 0; k < candidates.size(); ++k)
    index.emplace(candidates[k].members, static_cast<int>(k));
  return index;
}

// Whether the groups (group[v] per node) are acyclic as a quotient graph.
bool groups_acyclic(const KernelDag& dag, const std::vector<int>& group, int groups) {
  std::vector<std::vector<int>> out(groups);
  std::vector<int> indegree(groups, 0);
  for (int v = 0; v < dag.size(); ++v)
    for (int s : dag.succ[v])
      if (group[v] != group[s]) out[group[v]].push_back(group[s]), ++indegree[group[s]];
  std::vector<int> ready;
  for (int g = 0; g < groups; ++g)
    if (indegree[g] == 0) ready.push_back(g);
  int seen = 0;
  while (!ready.empty()) {
    int g = ready.back();
    ready.pop_back();
    ++seen;
    for (int h : out[g])
      if (--indegree[h] == 0) ready.push_back(h);
  }
  return seen == groups;
}

}  // namespace

Plan plan_unfused(const KernelDag& dag, const std::vector<Candidate>& candidates,
                  const std::vector<double>& cost) {
  const auto start = std::chrono::steady_clock::now();
  const auto index = index_by_members(candidates);
  Plan plan;
  for (int v = 0; v < dag.size(); ++v) {
    auto it = index.find({v});
    if (it == index.end())
      throw Error("node " + std::to_string(v) + " has no single-node candidate");
    plan.kernels.push_back(it->second);
  }
  plan.kernels = schedule(dag, candidates, plan.kernels);
  plan.cost = total(plan.kernels, cost);
  plan.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

Plan plan_greedy(const KernelDag& dag, const std::vector<Candidate>& candidates,
                 const std::vector<double>& cost) {
  const auto start = std::chrono::steady_clock::now();
  const auto index = index_by_members(candidates);
  const int n = dag.size();
  std::vector<int> group(n);
  std::iota(group.begin(), group.end(), 0);
  std::vector<std::vector<int>> members(n);
  for (int v = 0; v < n; ++v) members[v] = {v};
  auto has_linear = [&](int g) {
    return std::any_of(members[g].begin(), members[g].end(),
                       [&](int v) { return dag.kind[v] == PrimKind::kLinear; });
  };
  // Merges group b into group a when the union is a candidate and groups stay acyclic.
  auto try_merge = [&](int a, int b) {
    if (a == b) return false;
    std::vector<int> merged = members[a];
    merged.insert(merged.end(), members[b].begin(), members[b].end());
    std::sort(merged.begin(), merged.end());
    if (!index.count(merged)) return false;
    std::vector<int> trial = group;
    for (int v : members[b]) trial[v] = a;
    // Renumber densely for the acyclicity check.
    std::vector<int> dense(n, -1), renumbered(n);
    int groups = 0;
    for (int v = 0; v < n; ++v) {
      if (dense[trial[v]] < 0) dense[trial[v]] = groups++;
      renumbered[v] = dense[trial[v]];
    }
    if (!groups_acyclic(dag, renumbered, groups)) return false;
    group = std::move(trial);
    members[a] = std::move(merged);
    members[b].clear();
    return true;
  };
  for (int v = 0; v < n; ++v) {
    const PrimKind kind = dag.kind[v];
    if (kind == PrimKind::kOpaque) continue;
    if (kind == PrimKind::kLinear) {
      // Prologue: a layout producer whose only consumer this is.
      for (int p : dag.pred[v])
        if (dag.kind[p] == PrimKind::kLayout && dag.succ[p].size() == 1 && !has_linear(group[p]))
          try_merge(group[v], group[p]);
      continue;
    }
    // Producers whose only consumer is v, those in a linear kernel first.
    std::vector<int> producers;
    for (int p : dag.pred[v])
      if (dag.succ[p].size() == 1 && dag.kind[p] != PrimKind::kOpaque) producers.push_back(p);
    std::stable_sort(producers.begin(), producers.end(),
                     [&](int a, int b) { return has_linear(group[a]) > has_linear(group[b]); });
    for (int p : producers) try_merge(group[p], group[v]);
  }
  Plan plan;
  for (int g = 0; g < n; ++g)
    if (!members[g].empty()) plan.kernels.push_back(index.at(members[g]));
  plan.kernels = schedule(dag, candidates, plan.kernels);
  plan.cost = total(plan.kernels, cost);
  plan.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace kora
