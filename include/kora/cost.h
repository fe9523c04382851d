// The cost interface of the orchestration problem: a candidate kernel (with the
// primitive graph and DAG it came from) in, its latency in milliseconds out.
//   RooflineCost      analytic: max(FLOPs / peak, bytes / bandwidth) + launch overhead,
//                     with device parameters from a small table (device_params);
//   LowerBoundCost    a lower bound of what a kernel will measure, from the machine's
//                     measured peaks (measure on demand);
//   MeasuredCostTable measured latencies by canonical signature, read from JSON; kernels
//                     it lacks fall back to another model (counted);
//   ProfileDbCost     per kernel its time inside running plans (in-plan costs, from
//                     kora compile's check on the clock) where known, else the fastest
//                     schedule measured alone in the profile database for one device
//                     fingerprint (times the in-plan / alone ratio of similar kernels of
//                     the graph once learn_context saw it), plus the per-kernel overhead
//                     of running plans the check measured; kernels not measured (or only
//                     failed) fall back.
// Both measured models are TableCost: a table by signature, misses counted.
// The backends plug their measurements in here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;
struct UniqueCandidate;

// What blocked layouts change for a candidate (the LayoutProblem of orchestrate.h):
// whether it computes on any layout, and its native implementation, if any: cost with
// every blocked side reordered from and to plain, cost with none, and the sides (tensor
// -> layout). `views`: the sides generated code can also read or write in a permutation
// layout (channels last) at its plain cost, each on its own (src/cpu/layout_view.h).
struct LayoutCost {
  bool agnostic = false;
  double blocked_ms = -1, native_ms = -1;  // < 0: no native implementation
  std::map<std::string, std::string> sides;
  std::vector<std::string> views;
  bool views_channels_last = false;  // views only where every side is channels last (pools)
  // ... or, for such a pool, every side in channel blocks of one of these sizes (8, 16)
  std::vector<int64_t> views_channel_blocks;
  // A second native implementation, every side channels last (acdb), where `sides` name
  // other layouts: its cost with none reordered (< 0: none), and its sides.
  double channels_last_ms = -1;
  std::map<std::string, std::string> channels_last_sides;
  // Sides generated code may store as bfloat16 in their own order, each on its own
  // (plain_layout + kBf16: what a bf16 matmul reads natively; --bf16 only).
  std::vector<std::string> bfloat16_sides;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // On plain tensors.
  virtual double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) = 0;
  // Models that know nothing of layouts: none.
  virtual LayoutCost layout_cost(const PrimGraph&, const KernelDag&, const Candidate&) {
    return {};
  }
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

// A machine's measured peaks (the CPU's: src/cpu/machine_peaks.h), what LowerBoundCost
// needs. Bandwidths count every byte a kernel moves, read or written.
struct MachinePeaks {
  double gflops = 0;       // float32 arithmetic, all of kora's threads
  double dram_gbps = 0;    // main memory
  double cache_gbps = 0;   // data within the cache
  double cache_bytes = 0;  // the last-level cache
  double floor_ms = 0;     // the least a kernel call takes
  std::string to_json() const;
  static MachinePeaks from_json(const std::string& text);  // throws kora::Error
};

// A lower bound of a kernel's measured cost (measure on demand, src/driver/
// measure_on_demand.cc): max(FLOPs / peak, bytes / bandwidth) times a factor of its kind
// (kernels of no kind reach the peaks), plus a floor; only the work the kernel surely does
// counts (kernel_work: what its outputs need; bytes at the cache's bandwidth for the first
// cache_bytes, main memory's beyond). Valid when the peaks are what the machine can reach
// at most and the factors below what every kind reaches (bench/bounds.cc checks both
// against every measured kernel of a profile database).
// What LowerBoundCost counts of a kernel: its FLOPs (a 3x3 convolution's as few as a
// Winograd algorithm multiplies), the bytes it surely moves, and its kind (the kind of
// its heaviest member: linear, reduce, elementwise, ...).
struct KernelWork {
  double flops = 0, bytes = 0;
  std::string kind;
};
KernelWork kernel_work(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

class LowerBoundCost : public CostModel {
 public:
  // `typical`: not the bound but what a kernel of its kind typically costs (the median
  // measured over the roofline instead of the least): an estimate to guide measuring.
  // `per_kind` false: no factor of a kind (the cuda target's bounds: its peaks are above
  // any GPU's, its kinds' efficiencies not calibrated).
  explicit LowerBoundCost(MachinePeaks peaks, bool typical = false, bool per_kind = true)
      : peaks_(peaks), typical_(typical), per_kind_(per_kind) {}
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;
  const MachinePeaks& peaks() const { return peaks_; }

 private:
  MachinePeaks peaks_;
  bool typical_ = false, per_kind_ = true;
};

// What a kernel not measured yet will likely cost (measure on demand's guide), learned
// from kernels of the same graph already measured: its lower bound (the target's) times
// the measured / bound ratio of the most similar measured kernels (same heaviest kind,
// implementation and member ops first, then same kind and implementation, then same kind;
// nearest in bytes, FLOPs and size; the typical cost where few are near), lowered by
// `caution` times the spread of those ratios (a lower confidence bound: the solver also
// tries kernels that may beat their prediction, the more the less similar kernels agree).
// No kernel of its kind measured: the target's typical cost. Not a bound: a guide; what
// decides a plan is measured.
class PredictedCost : public CostModel {
 public:
  // What implements a kernel as the target tells kernels apart (Target::implemented_by:
  // a library's call, generated code); null or "": not told apart.
  using ImplementedBy =
      std::function<std::string(const PrimGraph&, const KernelDag&, const Candidate&)>;
  PredictedCost(std::unique_ptr<CostModel> bound, std::unique_ptr<CostModel> typical,
                double caution = 0, ImplementedBy implemented_by = nullptr);
  // One measured kernel of the graph; or every one of `candidates` that `measured` (by
  // signature, milliseconds) holds.
  void learn(const PrimGraph& graph, const KernelDag& dag, const Candidate& c, double measured_ms);
  void learn(const PrimGraph& graph, const std::vector<UniqueCandidate>& candidates,
             const std::map<uint64_t, double>& measured);
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;
  size_t samples() const { return samples_.size(); }

  // What the predictor compares kernels by (public for tests).
  struct Features {
    std::string kind, ops;       // heaviest member's kind; its distinct member ops, sorted
    std::string implemented_by;  // what the target implements it with ("": not told)
    double log_flops = 0, log_bytes = 0, log_members = 0, bound_ms = 0;
  };
  Features features(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) const;

 private:
  struct Sample {
    Features f;
    double log_ratio = 0;  // log(measured / bound)
  };
  std::unique_ptr<CostModel> bound_, typical_;
  double caution_;
  ImplementedBy implemented_by_;
  std::vector<Sample> samples_;
};

// Costs looked up by canonical signature in a table; kernels it lacks get the fallback
// model's cost (counted as misses), or, without a fallback, a kora::Error naming the
// kernel's signature and primitives. The shared mechanism of the two measured models.
class TableCost : public CostModel {
 public:
  double cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  // Whether the table holds the kernel's cost (else the fallback estimates it).
  bool measured(uint64_t signature) const { return table_.count(signature) > 0; }

 protected:
  // `source` names the table in errors ("cost table 'costs.json'").
  TableCost(std::string source, std::unique_ptr<CostModel> fallback)
      : source_(std::move(source)), fallback_(std::move(fallback)) {}
  std::string fallback_describe() const { return fallback_ ? fallback_->describe() : ""; }
  // The fallback's cost (not counted as a miss), plus fallback_extra_ms_; < 0 without a
  // fallback.
  double fallback_cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
    return fallback_ ? fallback_->cost_ms(graph, dag, c) + fallback_extra_ms_ : -1;
  }

  std::map<uint64_t, double> table_;
  // Added to every fallback cost, as the table's entries carry it (ProfileDbCost: the time
  // between kernels of a running plan, which a kernel not measured yet will cost too).
  double fallback_extra_ms_ = 0;

 private:
  std::string source_;
  std::unique_ptr<CostModel> fallback_;
  int64_t hits_ = 0, misses_ = 0;
};

// JSON: {"device": "...", "kernels": {"<signature as 16 hex digits>": <ms>, ...}}.
class MeasuredCostTable : public TableCost {
 public:
  MeasuredCostTable(const std::string& path, std::unique_ptr<CostModel> fallback);
  std::string describe() const override;

 private:
  std::string path_;
};

// The profile database's fastest non-failed schedule per kernel on `device` on plain
// tensors, read once when constructed; and the layout costs of oneDNN convolutions
// measured in their native layouts (kOnednnNative, kOnednnBlocked) and of elementwise
// kernels.
class ProfileDbCost : public TableCost {
 public:
  ProfileDbCost(std::shared_ptr<const ProfileDb> db, std::string device,
                std::unique_ptr<CostModel> fallback);
  LayoutCost layout_cost(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) override;
  std::string describe() const override;
  // Kernels whose every implementation failed on the device cost `ms` instead of the
  // fallback's estimate: for a target with no implementation that always works (cuda), so
  // that the solver chooses them only when nothing else computes their primitives.
  void penalize_failed(double ms);
  // These kernels cost `ms` (they failed a check without being measured: kora compile
  // --no-measure), so that the solver chooses them only when nothing else computes them.
  void penalize(const std::set<uint64_t>& signatures, double ms);
  // Kernels not measured that a library could run natively in blocked layouts may do so
  // at the fallback's cost (layout_cost): with a lower bound as the fallback, the costs
  // then stay a relaxation of what measuring them would give (measure on demand).
  void offer_native_at_fallback() { native_at_fallback_ = true; }
  // Measure on demand: measured kernels cost at most what measuring the rest of their
  // implementations may give (Target::unexplored_costs; the overhead between kernels added).
  void offer_unexplored(const std::map<uint64_t, double>& ms);
  // Costs in context (src/cost/context_cost.cc): kernels of the graph with a time alone but
  // none inside a running plan cost their time alone times the in-plan / alone ratio of the
  // most similar kernels of the graph timed both ways (same kind; near in weight bytes and
  // other bytes). Where none was timed in plan, costs stay as they are. Once per object.
  void learn_context(const PrimGraph& graph, const std::vector<UniqueCandidate>& candidates);
  int64_t context_samples() const { return context_samples_; }    // kernels timed both ways
  int64_t context_adjusted() const { return context_adjusted_; }  // kernels re-costed
  // Kernels whose cost is their time inside running plans.
  int64_t in_plan() const { return in_plan_; }
  // Whether the kernel's cost is a measurement taken while other processes used the CPU
  // (and no in-plan time replaced it).
  bool suspect(uint64_t signature) const { return suspect_.count(signature) > 0; }

 private:
  std::shared_ptr<const ProfileDb> db_;
  std::string path_, device_;
  // Native (kOnednnNative), native with its sides reordered (kOnednnBlocked), native
  // channels last (kOnednnChannelsLast).
  std::map<uint64_t, double> native_, blocked_, channels_last_;
  // Times alone (plain and native) and, per kernel timed in plan, its in-plan / alone ratio
  // (plain: of its schedule fastest in plan; native), without the overhead (learn_context).
  std::map<uint64_t, double> alone_, alone_native_, in_plan_plain_, in_plan_native_;
  bool context_learned_ = false;
  int64_t context_samples_ = 0, context_adjusted_ = 0;
  int64_t in_plan_ = 0;
  double overhead_ = 0;  // ProfileDb::kernel_overhead, added to every measured cost
  std::set<uint64_t> suspect_;
  bool native_at_fallback_ = false;
};

}  // namespace kora
