// The cost interface of the orchestration problem: a candidate kernel (with the
// primitive graph and DAG it came from) in, its latency in milliseconds out.
//   RooflineCost      analytic: max(FLOPs / peak, bytes / bandwidth) + launch overhead,
//                     with device parameters from a small table (device_params);
//   MeasuredCostTable measured latencies by canonical signature, read from JSON; kernels
//                     it lacks fall back to another model (counted);
//   ProfileDbCost     the fastest measured schedule in the profile database for one
//                     device fingerprint; kernels not measured (or only failed) fall back.
// The backends plug their measurements in here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) = 0;
  virtual std::string describe() const = 0;
};

struct DeviceParams {
  std::string name;
  double peak_gflops = 0;         // float32, all cores / SMs
  double bandwidth_gbps = 0;      // main memory (GB/s)
  double launch_overhead_us = 0;  // per kernel
};

// "cpu" (this machine's kind: 2 x86-64 cores), "a100", "h100". Throws kora::Error
// listing the known names otherwise.
DeviceParams device_params(const std::string& name);
std::vector<std::string> known_devices();

class RooflineCost : public CostModel {
 public:
  explicit RooflineCost(DeviceParams device) : device_(std::move(device)) {}
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;

 private:
  DeviceParams device_;
};

// JSON: {"device": "...", "kernels": {"<signature as 16 hex digits>": <ms>, ...}}.
class MeasuredCostTable : public CostModel {
 public:
  MeasuredCostTable(const std::string& path, std::unique_ptr<CostModel> fallback);
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  std::string path_;
  std::map<uint64_t, double> table_;
  std::unique_ptr<CostModel> fallback_;
  int64_t hits_ = 0, misses_ = 0;
};

class ProfileDbCost : public CostModel {
 public:
  ProfileDbCost(std::shared_ptr<const ProfileDb> db, std::string device,
                std::unique_ptr<CostModel> fallback);
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  std::shared_ptr<const ProfileDb> db_;
  std::string device_;
  std::unique_ptr<CostModel> fallback_;
  int64_t hits_ = 0, misses_ = 0;
};

std::string signature_hex(uint64_t signature);

}  // namespace kora
