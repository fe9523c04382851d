// Costs from the profile database (include/kora/cost.h, ProfileDbCost): the fastest
// non-failed schedule of each kernel measured on the device, read in one query into the
// table that TableCost looks candidates up in.
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
  path_ = db->path();
  table_ = db->fastest(device_);
}

std::string ProfileDbCost::describe() const {
  const std::string fallback = fallback_describe();
  return "profile database '" + path_ + "' for " + device_ + " (" + std::to_string(hits()) +
         " measured, " + std::to_string(misses()) + " not" +
         (fallback.empty() ? "" : ": " + fallback) + ")";
}

}  // namespace kora
