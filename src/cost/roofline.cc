// The analytic cost model: a candidate kernel in, max(FLOPs / peak, bytes / bandwidth)
// plus a launch overhead out (milliseconds), with device parameters from a small table.
// Bytes: every external tensor the kernel reads, whole (a slice or gather reading part
// of its input is charged the whole input), plus every tensor it writes.
#include <algorithm>

#include "kora/cost.h"
#include "kora/error.h"

namespace kora {
namespace {

// cpu: this machine's kind (2 x86-64 cores at ~3 GHz; 8 float32 FLOPs per cycle per core
// with SSE/AVX without FMA: ~50 GFLOP/s; a share of a server's memory bandwidth, ~15 GB/s;
// ~2 us to dispatch a kernel to a thread pool). a100 / h100: NVIDIA's float32 (non tensor
// core) peaks and HBM bandwidths (A100 40 GB: 19.5 TFLOP/s, 1555 GB/s; H100 SXM:
// 67 TFLOP/s, 3350 GB/s), with ~5 / ~4 us per kernel launch.
const DeviceParams kDevices[] = {
    {"cpu", 50.0, 15.0, 2.0},
    {"a100", 19500.0, 1555.0, 5.0},
    {"h100", 67000.0, 3350.0, 4.0},
};

double tensor_bytes(const PrimGraph& graph, const std::string& tensor) {
  const ValueInfo& v = graph.value(tensor);
  double n = 1;
  for (int64_t d : v.shape) n *= static_cast<double>(d);
  return n * static_cast<double>(dtype_size(v.dtype));
}

}  // namespace

DeviceParams device_params(const std::string& name) {
  for (const DeviceParams& d : kDevices)
    if (d.name == name) return d;
  std::string known;
  for (const DeviceParams& d : kDevices) known += (known.empty() ? "" : ", ") + d.name;
  throw Error("unknown device '" + name + "' (known: " + known + ")");
}

std::vector<std::string> known_devices() {
  std::vector<std::string> names;
  for (const DeviceParams& d : kDevices) names.push_back(d.name);
  return names;
}

double RooflineCost::cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  double flops = 0, bytes = 0;
  for (int v : c.members) flops += static_cast<double>(prim_flops(graph, graph.prims[dag.prim[v]]));
  for (const std::string& t : kernel_reads(graph, dag, c)) bytes += tensor_bytes(graph, t);
  for (const std::string& t : kernel_writes(graph, dag, c)) bytes += tensor_bytes(graph, t);
  const double compute_ms = flops / (device_.peak_gflops * 1e9) * 1e3;
  const double memory_ms = bytes / (device_.bandwidth_gbps * 1e9) * 1e3;
  return std::max(compute_ms, memory_ms) + device_.launch_overhead_us * 1e-3;
}

std::string RooflineCost::describe() const {
  auto num = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return "roofline (" + device_.name + ": " + num(device_.peak_gflops) + " GFLOP/s, " +
         num(device_.bandwidth_gbps) + " GB/s, " + num(device_.launch_overhead_us) + " us launch)";
}

}  // namespace kora
