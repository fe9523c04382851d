// The lower bound of a kernel's measured cost (include/kora/cost.h, LowerBoundCost): a
// candidate kernel and the machine's measured peaks in, milliseconds out that its fastest
// implementation cannot beat. Only work a kernel surely does is counted: every tensor it
// writes, and the FLOPs and external inputs of each member in the share of its output that
// is needed (all of what the kernel writes; what needed members read: elementwise,
// broadcast, reduce, linear, transpose and reshape members all of their input, a slice or
// a gather its part, slices and gathers that do not overlap together the sum of their parts;
// a convolution the input positions its windows touch; another layout or an opaque member
// may read a part only). A 3x3 convolution's FLOPs
// are counted as a Winograd algorithm multiplies them (multiplied_share).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "base/text.h"
#include "cost/tensor_bytes.h"
#include "kora/cost.h"
#include "kora/error.h"

namespace kora {
namespace {

// The input positions along one dim a convolution's windows touch, at least: windows of
// k taps (dilation 1) every s positions, less the padding.
double touched_share(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pads) {
  if (in <= 0) return 0;
  const int64_t touched = k <= s ? out * k - pads : (out - 1) * s + k - pads;
  return std::clamp(static_cast<double>(touched) / static_cast<double>(in), 0.0, 1.0);
}

// The share of `tensor` that member `prim` surely reads, when all of its output is needed:
// 1 for whole reads, a slice's or a gather's elements over its input's, a convolution's
// input where its windows touch it, 0 when it may read a part only.
double read_share(const PrimGraph& graph, const Primitive& prim, const std::string& tensor) {
  switch (prim.kind()) {
    case PrimKind::kLayout: {
      // A transpose or a reshape reads every element of its input, a slice as many as it
      // writes, a gather its distinct indices; the others (window, pad, ...) may read a
      // part only.
      const LayoutAttrs& layout = std::get<LayoutAttrs>(prim.attrs);
      if (std::holds_alternative<layout::Transpose>(layout) ||
          std::holds_alternative<layout::Reshape>(layout))
        return 1;
      const Shape& in = graph.value(tensor).shape;
      if (std::holds_alternative<layout::Slice>(layout)) {
        const double n = static_cast<double>(numel(in));
        const double out = static_cast<double>(numel(graph.value(prim.outputs[0]).shape));
        return n > 0 ? std::min(1.0, out / n) : 0;
      }
      if (const auto* gather = std::get_if<layout::Gather>(&layout)) {
        if (gather->axis < 0 || gather->axis >= static_cast<int64_t>(in.size()) ||
            in[gather->axis] <= 0)
          return 0;
        const std::set<int64_t> distinct(gather->indices.begin(), gather->indices.end());
        return std::min(
            1.0, static_cast<double>(distinct.size()) / static_cast<double>(in[gather->axis]));
      }
      return 0;
    }
    case PrimKind::kOpaque:
      return 0;
    case PrimKind::kLinear: {
      const auto* conv = std::get_if<ConvAttrs>(&std::get<LinearAttrs>(prim.attrs));
      if (!conv || prim.inputs.size() < 2 || prim.inputs[0] != tensor) return 1;
      const Shape& x = graph.value(tensor).shape;
      const Shape& w = graph.value(prim.inputs[1]).shape;
      const Shape& y = graph.value(prim.outputs[0]).shape;
      const size_t n = conv->strides.size();
      double share = 1;
      for (size_t i = 0; i < n; ++i) {
        const int64_t s = std::max<int64_t>(conv->strides[i], 1);
        const bool plain = i < conv->dilations.size() ? conv->dilations[i] == 1 : true;
        if (!plain || x.size() != n + 2 || w.size() != n + 2 || y.size() != n + 2) {
          share /= static_cast<double>(s);  // dilated: every stride-th position at least
          continue;
        }
        const int64_t pads = (i < conv->pads_begin.size() ? conv->pads_begin[i] : 0) +
                             (i < conv->pads_end.size() ? conv->pads_end[i] : 0);
        share *= touched_share(x[2 + i], y[2 + i], w[2 + i], s, pads);
      }
      return share;
    }
    default:
      return 1;
  }
}

// The input positions a member reads, per dim as sorted intervals [first, last], for a
// slice of unit steps and a gather; empty for other members (a strided slice's elements
// interleave with another's).
using Region = std::vector<std::vector<std::pair<int64_t, int64_t>>>;
Region read_region(const PrimGraph& graph, const Primitive& prim) {
  if (prim.kind() != PrimKind::kLayout) return {};
  const LayoutAttrs& layout = std::get<LayoutAttrs>(prim.attrs);
  const Shape& in = graph.value(prim.inputs[0]).shape;
  Region region;
  if (const auto* slice = std::get_if<layout::Slice>(&layout)) {
    const Shape& out = graph.value(prim.outputs[0]).shape;
    if (slice->starts.size() != out.size() || slice->steps.size() != out.size()) return {};
    for (size_t d = 0; d < out.size(); ++d) {
      const int64_t step = out[d] > 1 ? slice->steps[d] : 1;
      if (step != 1 && step != -1) return {};
      const int64_t end = slice->starts[d] + (out[d] - 1) * step;
      region.push_back({{std::min(slice->starts[d], end), std::max(slice->starts[d], end)}});
    }
    return region;
  }
  if (const auto* gather = std::get_if<layout::Gather>(&layout)) {
    if (gather->axis < 0 || gather->axis >= static_cast<int64_t>(in.size())) return {};
    for (size_t d = 0; d < in.size(); ++d) {
      if (static_cast<int64_t>(d) != gather->axis) {
        region.push_back({{0, in[d] - 1}});
        continue;
      }
      const std::set<int64_t> distinct(gather->indices.begin(), gather->indices.end());
      std::vector<std::pair<int64_t, int64_t>> runs;
      for (int64_t i : distinct)
        if (!runs.empty() && runs.back().second + 1 == i)
          runs.back().second = i;
        else
          runs.emplace_back(i, i);
      region.push_back(std::move(runs));
    }
    return region;
  }
  return {};
}

// Whether two regions of one tensor share no position: on some dim their intervals meet
// nowhere.
bool apart(const Region& a, const Region& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    bool meet = false;
    for (size_t i = 0, j = 0; i < a[d].size() && j < b[d].size() && !meet;) {
      meet = a[d][i].first <= b[d][j].second && b[d][j].first <= a[d][i].second;
      if (a[d][i].second < b[d][j].second)
        ++i;
      else
        ++j;
    }
    if (!meet) return true;
  }
  return false;
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
  // FLOPs, its external inputs' bytes) in the share of its output that is needed, which is
  // all of the tensors the kernel writes and, for a tensor inside, the most any member
  // reading it needs, or the sum of what slices and gathers of it that do not overlap read
  // (the parts of a split, or of an attention's packed q, k and v). Computing a share of any
  // member's output takes that share of its FLOPs at least and reads that share of each input at
  // least (a share of a matmul's outputs spans that share of its rows or of its columns). Members
  // in topological order: walked backwards, consumers come first.
  struct Part {
    double share;
    Region region;  // what a whole slice or gather reads, else empty
  };
  std::map<std::string, std::vector<Part>> parts;  // tensors inside: what their readers need
  std::set<std::string> written;
  for (const std::string& t : kernel_writes(graph, dag, c)) {
    written.insert(t);
    w.bytes += tensor_bytes(graph, t);
  }
  auto needed = [&](const std::string& t) {
    if (written.count(t)) return 1.0;
    const auto it = parts.find(t);
    if (it == parts.end()) return 0.0;
    double most = 0, apart_sum = 0;
    std::vector<const Part*> regions;
    for (const Part& p : it->second) {
      most = std::max(most, p.share);
      if (!p.region.empty()) regions.push_back(&p);
    }
    bool disjoint = true;  // slices and gathers apart pairwise
    for (size_t i = 0; i < regions.size() && disjoint; ++i)
      for (size_t j = i + 1; j < regions.size() && disjoint; ++j)
        disjoint = apart(regions[i]->region, regions[j]->region);
    if (disjoint)
      for (const Part* p : regions) apart_sum += p->share;
    return std::min(1.0, std::max(most, apart_sum));
  };
  std::set<std::string> inside;
  for (int v : c.members)
    for (const std::string& t : graph.prims[dag.prim[v]].outputs) inside.insert(t);
  int rank = -1;  // the heaviest member's kind: linear, reduce, opaque, layout, elementwise
  static const PrimKind order[] = {PrimKind::kBroadcast, PrimKind::kElementwise, PrimKind::kLayout,
                                   PrimKind::kOpaque,    PrimKind::kReduce,      PrimKind::kLinear};
  std::vector<int> members = c.members;
  std::sort(members.rbegin(), members.rend());
  std::map<std::string, double> read;  // external inputs: the share of each surely read
  for (int v : members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    const int r = static_cast<int>(std::find(std::begin(order), std::end(order), p.kind()) -
                                   std::begin(order));
    if (r > rank) rank = r, w.kind = prim_kind_name(p.kind());
    double share = 0;
    for (const std::string& t : p.outputs) share = std::max(share, needed(t));
    if (share <= 0) continue;
    w.flops += static_cast<double>(prim_flops(graph, p)) * multiplied_share(graph, p) * share;
    for (const std::string& t : p.inputs) {
      const double s = read_share(graph, p, t) * share;
      if (s <= 0) continue;
      if (inside.count(t))
        parts[t].push_back({s, share == 1 ? read_region(graph, p) : Region{}});
      else
        read[t] = std::max(read[t], s);
    }
  }
  for (const auto& [t, s] : read) w.bytes += s * tensor_bytes(graph, t);
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
