// The lower bound of a kernel's measured cost (include/kora/cost.h, LowerBoundCost): a
// candidate kernel and the machine's measured peaks in, milliseconds out that its fastest
// implementation cannot beat. Only work a kernel surely does is counted: every tensor it
// writes, and the FLOPs and external inputs of the members whose whole output is needed
// (what the kernel writes, and what such a member reads whole: elementwise, broadcast,
// reduce, linear, transpose and reshape members; a strided convolution's input divided by
// its strides; another layout or an opaque member may read a part only). A 3x3 convolution's FLOPs
// are counted as a Winograd algorithm multiplies them (multiplied_share).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "base/text.h"
#include "cost/tensor_bytes.h"
#include "kora/cost.h"
#include "kora/error.h"

namespace kora {
namespace {

// The share of `tensor` that member `prim` surely reads: 1 for whole reads, 0 when it
// may read a part only.
double read_share(const Primitive& prim, const std::string& tensor) {
  switch (prim.kind()) {
    case PrimKind::kLayout: {
      // A transpose or a reshape reads every element of its input; the others (slice,
      // gather, window, ...) may read a part only.
      const LayoutAttrs& layout = std::get<LayoutAttrs>(prim.attrs);
      return std::holds_alternative<layout::Transpose>(layout) ||
                     std::holds_alternative<layout::Reshape>(layout)
                 ? 1
                 : 0;
    }
    case PrimKind::kOpaque:
      return 0;
    case PrimKind::kLinear: {
      const auto* conv = std::get_if<ConvAttrs>(&std::get<LinearAttrs>(prim.attrs));
      if (!conv || prim.inputs.empty() || prim.inputs[0] != tensor) return 1;
      double stride = 1;
      for (int64_t s : conv->strides) stride *= static_cast<double>(std::max<int64_t>(s, 1));
      return 1 / stride;
    }
    default:
      return 1;
  }
}

// The share of a linear member's FLOPs that its fastest algorithm surely multiplies: a
// 3x3 convolution of stride 1 and one group can be a Winograd F(4x4, 3x3) one (oneDNN's
// on the CPU, cuDNN's on GPUs), which multiplies 36 times per 16 outputs of an input and
// output channel where the direct one multiplies 144 times.
double multiplied_share(const PrimGraph& graph, const Primitive& prim) {
  if (prim.kind() != PrimKind::kLinear) return 1;
  const auto* conv = std::get_if<ConvAttrs>(&std::get<LinearAttrs>(prim.attrs));
  if (!conv || conv->group != 1 || prim.inputs.size() < 2) return 1;
  const Shape& w = graph.value(prim.inputs[1]).shape;
  if (w.size() != 4 || w[2] != 3 || w[3] != 3) return 1;
  for (int64_t s : conv->strides)
    if (s != 1) return 1;
  for (int64_t d : conv->dilations)
    if (d != 1) return 1;
  return 36.0 / 144.0;
}

}  // namespace

std::string MachinePeaks::to_json() const {
  return nlohmann::json{{"gflops", gflops},
                        {"dram_gbps", dram_gbps},
                        {"cache_gbps", cache_gbps},
                        {"cache_bytes", cache_bytes},
                        {"floor_ms", floor_ms}}
      .dump();
}

MachinePeaks MachinePeaks::from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    MachinePeaks p;
    p.gflops = j.at("gflops").get<double>();
    p.dram_gbps = j.at("dram_gbps").get<double>();
    p.cache_gbps = j.at("cache_gbps").get<double>();
    p.cache_bytes = j.at("cache_bytes").get<double>();
    p.floor_ms = j.at("floor_ms").get<double>();
    if (!(p.gflops > 0 && p.dram_gbps > 0 && p.cache_gbps > 0 && p.cache_bytes >= 0 &&
          p.floor_ms >= 0))
      throw Error("a peak is not positive");
    for (double v : {p.gflops, p.dram_gbps, p.cache_gbps, p.cache_bytes, p.floor_ms})
      if (!std::isfinite(v)) throw Error("a peak is not finite");
    return p;
  } catch (const std::exception& e) {
    throw Error("machine peaks '" + text.substr(0, 200) + "': " + e.what());
  }
}

KernelWork kernel_work(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  KernelWork w;
  // Generated code computes only what the kernel's outputs need: a member counts (its
  // FLOPs, its external inputs' bytes) when all of its output is needed, which holds for
  // the tensors the kernel writes and for what a counted member reads whole. Members in
  // topological order: walked backwards, consumers come first.
  std::set<std::string> needed, inside;
  for (const std::string& t : kernel_writes(graph, dag, c)) {
    needed.insert(t);
    w.bytes += tensor_bytes(graph, t);
  }
  for (int v : c.members)
    for (const std::string& t : graph.prims[dag.prim[v]].outputs) inside.insert(t);
  int rank = -1;  // the heaviest member's kind: linear, reduce, opaque, layout, elementwise
  static const PrimKind order[] = {PrimKind::kBroadcast, PrimKind::kElementwise, PrimKind::kLayout,
                                   PrimKind::kOpaque,    PrimKind::kReduce,      PrimKind::kLinear};
  std::vector<int> members = c.members;
  std::sort(members.rbegin(), members.rend());
  std::set<std::string> read;
  for (int v : members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    const int r = static_cast<int>(std::find(std::begin(order), std::end(order), p.kind()) -
                                   std::begin(order));
    if (r > rank) rank = r, w.kind = prim_kind_name(p.kind());
    bool all = false;
    for (const std::string& t : p.outputs) all = all || needed.count(t);
    if (!all) continue;
    w.flops += static_cast<double>(prim_flops(graph, p)) * multiplied_share(graph, p);
    for (const std::string& t : p.inputs) {
      const double share = read_share(p, t);
      if (share == 1) needed.insert(t);
      if (!inside.count(t) && read.insert(t).second) w.bytes += share * tensor_bytes(graph, t);
    }
  }
  return w;
}

double kind_factor(const std::string& kind, bool typical) {
  // measured / roofline at the peaks, per kind of a kernel's heaviest member, over the
  // 29,600 kernels measured of 4 zoo models and 4 models beyond it on a 2-core Xeon and the
  // 4,923 of 3 zoo models on a 2-core AMD EPYC (bench/bounds.cc, docs/benchmarks.md): the
  // bound's factor is at most 0.88 of the least seen on either, so a kernel would have to
  // beat every one of them by an eighth to fall below its bound (the Xeon's factors alone
  // left 24 of the EPYC's kernels below, the least at 0.67: the peaks, measured on each
  // machine, do not carry every kind's efficiency over); the typical factor, a tenth of
  // them are faster than (the 10th percentile), is an optimistic estimate of what a kernel
  // not measured yet costs.
  struct Factors {
    const char* kind;
    double bound, typical;
  };
  static const Factors table[] = {{"linear", 0.87, 4.2},    {"elementwise", 0.98, 4.1},
                                  {"broadcast", 1.48, 3.8}, {"layout", 2.5, 10.0},
                                  {"reduce", 2.5, 6.4},     {"opaque", 1.0, 21.0}};
  for (const Factors& f : table)
    if (kind == f.kind) return typical ? f.typical : f.bound;
  return 1.0;
}

double LowerBoundCost::cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const KernelWork w = kernel_work(graph, dag, c);
  const double flops = w.flops, bytes = w.bytes;
  const double cached = std::min(bytes, peaks_.cache_bytes);
  const double memory_ms =
      (cached / peaks_.cache_gbps + (bytes - cached) / peaks_.dram_gbps) * 1e-6;
  const double compute_ms = flops / peaks_.gflops * 1e-6;
  const double factor = per_kind_ ? kind_factor(w.kind, typical_) : 1;
  return std::max(compute_ms, memory_ms) * factor + peaks_.floor_ms;
}

std::string LowerBoundCost::describe() const {
  return std::string(typical_ ? "typical costs (" : "lower bounds (") + "" +
         fixed(peaks_.gflops, 0) + " GFLOP/s, " + fixed(peaks_.dram_gbps, 0) + " GB/s, " +
         fixed(peaks_.cache_gbps, 0) + " GB/s within " + fixed(peaks_.cache_bytes / (1 << 20), 1) +
         " MiB, " + fixed(peaks_.floor_ms * 1e3, 1) + " us a call)";
}

}  // namespace kora
