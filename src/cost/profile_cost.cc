// Costs from the profile database (include/kora/cost.h, ProfileDbCost): per kernel its
// time inside running plans where kora compile measured one (ProfileDb::in_plan), else
// the fastest non-failed schedule measured alone on the device on plain tensors (in the
// context of a running plan once learn_context has seen the graph: context_cost.cc), read
// into the table that TableCost looks candidates up in; the native-layout records of
// oneDNN convolutions (and their channels-last alternative) for their layout costs
// (bfloat16 layouts on a bf16 device), and the sides generated code takes through layout
// views (bfloat16 ones too).
#include <algorithm>

#include "base/layout_map.h"
#include "cpu/backend.h"
#include "cpu/layout_view.h"
#include "cpu/library.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {

ProfileDbCost::ProfileDbCost(std::shared_ptr<const ProfileDb> db, std::string device,
                             std::unique_ptr<CostModel> fallback)
    : TableCost(db ? "profile database '" + db->path() + "' for " + device : std::string(),
                std::move(fallback)),
      device_(std::move(device)) {
  if (!db) throw Error("ProfileDbCost needs a database");
  db_ = db;
  path_ = db->path();
  table_ = alone_ = db->fastest_except(device_, {kOnednnNative, kOnednnChannelsLast});
  suspect_ = db->suspect(device_);
  // On plain tensors, a kernel costs its cheapest schedule, each schedule at its time inside
  // running plans where it has one, else at its time alone: a schedule fast alone but slow
  // in plan (a Winograd convolution whose scratchpad a running plan has evicted: 0.64 ms
  // alone, 1.19 in plan) gives way to one the check on the clock has not timed yet, which
  // the next check times in turn (src/cpu/artifact.cc runs the same schedule).
  const ProfileDb::ScheduleTimes alone = db->times_alone(device_);
  for (const auto& [signature, in_plan] : db->in_plan(device_)) {
    const auto times = alone.find(signature);
    if (times == alone.end()) continue;
    double cost = -1, timed = -1, ratio = 0;
    for (const auto& [schedule, alone_ms] : times->second) {
      if (schedule == kOnednnNative || schedule == kOnednnChannelsLast) continue;
      const auto it = in_plan.find(schedule);
      const double ms = it == in_plan.end() ? alone_ms : it->second;
      if (cost < 0 || ms < cost) cost = ms;
      if (it != in_plan.end() && (timed < 0 || it->second < timed) && alone_ms > 0) {
        timed = it->second;
        ratio = it->second / alone_ms;
      }
    }
    if (timed < 0) continue;
    table_[signature] = cost;
    in_plan_plain_[signature] = ratio;
    if (cost == timed) suspect_.erase(signature);
    ++in_plan_;
  }
  native_ = alone_native_ = db->fastest_only(device_, kOnednnNative);
  blocked_ = db->fastest_only(device_, kOnednnBlocked);
  channels_last_ = db->fastest_only(device_, kOnednnChannelsLast);
  // Run natively inside a plan (in whichever native layouts the plan stored its sides).
  for (const auto& [signature, in_plan] : db->in_plan(device_, true)) {
    const auto alone_ms = alone_native_.find(signature);
    if (in_plan.empty() || alone_ms == alone_native_.end() || alone_ms->second <= 0) continue;
    double ms = in_plan.begin()->second;
    for (const auto& [schedule, t] : in_plan) ms = std::min(ms, t);
    in_plan_native_[signature] = ms / alone_ms->second;
    for (auto* costs : {&native_, &channels_last_})
      if (costs->count(signature)) (*costs)[signature] = ms;
  }
  // Every kernel of a running plan also costs its share of the time between kernels.
  // Kernels not measured (their prediction or bound, PredictedCost, LowerBoundCost) too:
  // else each looks cheaper than a measured one by it, and the solve prefers them.
  overhead_ = db->kernel_overhead(device_);
  for (auto* costs : {&table_, &native_, &blocked_, &channels_last_})
    for (auto& [signature, ms] : *costs) ms += overhead_;
  fallback_extra_ms_ = overhead_;
}

void ProfileDbCost::penalize_failed(double ms) {
  for (uint64_t signature : db_->failed_only(device_)) table_.emplace(signature, ms);
}

void ProfileDbCost::penalize(const std::set<uint64_t>& signatures, double ms) {
  for (uint64_t signature : signatures) table_[signature] = ms;
}

void ProfileDbCost::offer_unexplored(const std::map<uint64_t, double>& ms) {
  for (const auto& [signature, cost] : ms)
    if (auto it = table_.find(signature); it != table_.end())
      it->second = std::min(it->second, cost + overhead_);
}

LayoutCost ProfileDbCost::layout_cost(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c) {
  LayoutCost l;
  // No convolution measured natively (nor offered so unmeasured): nothing to choose.
  if (native_.empty() && !native_at_fallback_) return l;
  // bf16: native layouts hold bfloat16, which generated code reads and writes through
  // views only (an agnostic kernel computes on float32 elements as it is).
  const bool bf16 = bf16_fingerprint(device_);
  l.agnostic = !bf16 && layout_agnostic(graph, dag, c);
  l.views = layout_view_sides(graph, dag, c, bf16);
  if (bf16) l.bfloat16_sides = bfloat16_sides(graph, dag, c);
  l.views_channels_last = !l.views.empty() && views_channels_last_only(graph, dag, c);
  if (l.views_channels_last) l.views_channel_blocks = pool_view_channel_blocks(graph, dag, c);
  const auto native = native_.find(c.signature), blocked = blocked_.find(c.signature);
  if (native == native_.end() || blocked == blocked_.end()) {
    const uint64_t sig = c.signature ? c.signature : canonical_signature(graph, dag, c);
    if (!native_at_fallback_ || table_.count(sig)) return l;
    l.sides = onednn_native_layouts(graph, dag, c, bf16);
    if (l.sides.empty()) return l;
    l.native_ms = l.blocked_ms = fallback_cost_ms(graph, dag, c);
    return l;
  }
  l.sides = onednn_native_layouts(graph, dag, c, bf16);
  if (l.sides.empty()) return l;
  l.native_ms = native->second;
  l.blocked_ms = blocked->second;
  // A bf16 matmul (its sides bfloat16 in their own order) on plain tensors is the same
  // primitive as its plain schedule, reorders and all: its cost there, so that running it
  // native without a side stored so neither gains nor loses by the two records' noise.
  bool matmul = true;
  for (const auto& [t, layout] : l.sides)
    matmul = matmul && is_plain_bfloat16(layout, graph.value(t).shape.size());
  if (matmul) l.blocked_ms = cost_ms(graph, dag, c);
  // The channels-last alternative, where measured (onednn_channels_last_layouts).
  if (const auto cl = channels_last_.find(c.signature); cl != channels_last_.end()) {
    l.channels_last_ms = cl->second;
    for (const auto& [tensor, layout] : l.sides)
      l.channels_last_sides[tensor] =
          channels_last_layout(graph.value(tensor).shape.size()) + (bf16 ? kBf16 : "");
  }
  return l;
}

std::string ProfileDbCost::describe() const {
  const std::string fallback = fallback_describe();
  const int64_t invalid = db_->invalid_rows();
  return "profile database '" + path_ + "' for " + device_ + " (" + std::to_string(hits()) +
         " measured, " + std::to_string(misses()) + " not" +
         (fallback.empty() ? "" : ": " + fallback) + ")" +
         (invalid ? "; " + std::to_string(invalid) +
                        " rows without a valid cost or signature ignored (a corrupt database?)"
                  : "");
}

}  // namespace kora
