// Topological sort with structural checks. In: nodes in file order with graph inputs and
// constants already in graph.values. Out: nodes in a topological order (stable: file
// order wherever the file was already ordered), or an error naming what is wrong: an
// output produced twice (or also a graph input or initializer), an input nobody produces,
// a graph output nobody produces or one listed twice, a cycle (naming up to five of its nodes).
#include "frontend/graph_check.h"

#include <queue>
#include <unordered_map>

#include "kora/error.h"

namespace kora {

void sort_and_check(Graph& g) {
  const size_t n = g.nodes.size();
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (out.empty()) continue;
      if (g.values.count(out))
        throw Error(g.nodes[i].describe() + ": output '" + out +
                    "' is also a graph input or initializer");
      auto [it, fresh] = producer.emplace(out, i);
      if (!fresh)
        throw Error(g.nodes[i].describe() + ": output '" + out + "' is already produced by " +
                    g.nodes[it->second].describe());
    }
  }
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      if (in.empty() || g.values.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error(g.nodes[i].describe() + ": input '" + in +
                    "' is not produced by any node, nor a graph input or initializer");
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::unordered_map<std::string, int> listed;
  for (const std::string& out : g.outputs) {
    if (!producer.count(out) && !g.values.count(out))
      throw Error("graph output '" + out + "' is not produced by any node");
    if (++listed[out] == 2)
      throw Error("graph output '" + out +
                  "' is listed twice among the graph's outputs (kora names each output once)");
  }

  // Kahn's algorithm; the min-heap keeps file order among ready nodes.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<Node> sorted;
  sorted.reserve(n);
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    done[i] = true;
    sorted.push_back(g.nodes[i]);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (sorted.size() != n) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < n && listed < 5; ++i)
      if (!done[i]) names += (listed++ ? ", " : "") + g.nodes[i].describe();
    throw Error("the graph has a cycle through " + names);
  }
  g.nodes = std::move(sorted);
}

}  // namespace kora
