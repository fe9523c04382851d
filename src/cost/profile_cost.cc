// Costs from the profile database (include/kora/cost.h, ProfileDbCost): a candidate in,
// the median of its fastest non-failed schedule on the device out; otherwise the
// fallback model's cost, counted as a miss.
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/profile_db.h"

namespace kora {

ProfileDbCost::ProfileDbCost(std::shared_ptr<const ProfileDb> db, std::string device,
                             std::unique_ptr<CostModel> fallback)
    : db_(std::move(db)), device_(std::move(device)), fallback_(std::move(fallback)) {
  if (!db_) throw Error("ProfileDbCost needs a database");
}

double ProfileDbCost::cost_ms(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const uint64_t sig = c.signature ? c.signature : canonical_signature(graph, dag, c);
  if (const auto best = db_->best(device_, sig)) {
    ++hits_;
    return best->median_ms;
  }
  ++misses_;
  if (!fallback_) {
    std::string names;
    for (int v : c.members) names += (names.empty() ? "" : ", ") + graph.prims[dag.prim[v]].name;
    throw Error("profile database '" + db_->path() + "' has no measurement of kernel " +
                signature_hex(sig) + " (" + names + ") on " + device_);
  }
  return fallback_->cost_ms(graph, dag, c);
}

std::string ProfileDbCost::describe() const {
  return "profile database '" + db_->path() + "' for " + device_ + " (" + std::to_string(hits_) +
         " measured, " + std::to_string(misses_) + " not" +
         (fallback_ ? ": " + fallback_->describe() : std::string()) + ")";
}

}  // namespace kora
