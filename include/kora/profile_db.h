// The profile database (DESIGN.md, "The profile database"): one SQLite file of kernel
// measurements. Key: device fingerprint + canonical kernel signature + schedule. Value:
// median latency, spread, sample count, date, and whether the kernel failed (a kernel
// that did not compile or gave a wrong result is recorded as failed, so it is neither
// measured again nor used). WAL journal: a process killed mid-write leaves the file
// consistent, with whole transactions only; several processes may share it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

struct sqlite3;

namespace kora {

struct ProfileRecord {
  std::string device;      // device fingerprint (cpu_backend_fingerprint())
  uint64_t signature = 0;  // canonical_signature() of the kernel
  std::string schedule;    // the schedule's parameters, e.g. "tile=64x64;vec=8;par=0"
  double median_ms = 0;
  double spread_ms = 0;  // interquartile range of the samples
  int64_t samples = 0;
  bool failed = false;
  std::string error;        // why, when failed
  std::string measured_at;  // UTC, ISO 8601; filled by put() when empty
};

class ProfileDb {
 public:
  // Opens (creating the file and its directory when missing) the database at `path`.
  // Throws kora::Error naming the path when it cannot be opened or is not a kora
  // profile database.
  explicit ProfileDb(const std::string& path);
  ~ProfileDb();
  ProfileDb(const ProfileDb&) = delete;
  ProfileDb& operator=(const ProfileDb&) = delete;

  // Insert or replace records (by key), all in one transaction.
  void put(const std::vector<ProfileRecord>& records);
  void put(const ProfileRecord& record) { put(std::vector<ProfileRecord>{record}); }

  // Every schedule measured for the kernel on the device, fastest first, failed last.
  std::vector<ProfileRecord> records(const std::string& device, uint64_t signature) const;
  // The fastest schedule that did not fail, if any.
  std::optional<ProfileRecord> best(const std::string& device, uint64_t signature) const;
  // Per kernel measured on the device, the median of its fastest non-failed schedule
  // (`only`: that schedule; `except`: any other).
  std::map<uint64_t, double> fastest(const std::string& device) const;
  std::map<uint64_t, double> fastest_only(const std::string& device, const std::string& only) const;
  std::map<uint64_t, double> fastest_except(const std::string& device,
                                            const std::vector<std::string>& except) const;
  // True when the kernel has any record on the device (measured or failed).
  bool known(const std::string& device, uint64_t signature) const;
  // Records on `device` (all devices when empty).
  int64_t count(const std::string& device = "") const;
  // Kernels with records on the device, every one failed.
  std::vector<uint64_t> failed_only(const std::string& device) const;
  // Kernels whose fastest record is suspect: measured while other processes used the CPU
  // (its error says so; it did not fail).
  std::set<uint64_t> suspect(const std::string& device) const;
  // Times per kernel and schedule (as the records name it), in milliseconds.
  using ScheduleTimes = std::map<uint64_t, std::map<std::string, double>>;
  // In-plan times: a kernel's time inside running plans, per schedule (kora compile's check
  // on the clock, src/driver/plan_check.cc). The cost model takes a schedule's time in plan
  // instead of its time alone where it has one (include/kora/cost.h), and an artifact runs
  // the schedule of least such cost (src/cpu/artifact.cc). `plans`: how many plans the
  // median comes from. `native`: the kernel ran in its native blocked layouts (oneDNN; the
  // cost model's native cost), else on plain tensors.
  void put_in_plan(const std::string& device, const ScheduleTimes& ms, int64_t plans,
                   bool native = false);
  // Every kernel's (or one kernel's) in-plan times.
  ScheduleTimes in_plan(const std::string& device, bool native = false,
                        std::optional<uint64_t> signature = std::nullopt) const;
  // Per kernel measured on the device, the time alone of every schedule that did not fail.
  ScheduleTimes times_alone(const std::string& device) const;
  // What a running plan spends per kernel beyond its kernels' in-plan times (calls,
  // barriers between kernels): the end-to-end latency minus the in-plan sum, per kernel, as
  // the check on the clock last measured it (the least over its plans); 0 before any.
  void put_kernel_overhead(const std::string& device, double per_kernel_ms);
  double kernel_overhead(const std::string& device) const;
  // Facts measured once per device (the machine's peaks of src/cpu/machine_peaks.h), by
  // key; a value is the measuring code's own text (JSON).
  void put_device_fact(const std::string& device, const std::string& key, const std::string& value);
  std::optional<std::string> device_fact(const std::string& device, const std::string& key) const;
  // Every device fingerprint with records, sorted.
  std::vector<std::string> devices() const;

  const std::string& path() const { return path_; }
  // Rows found when the database was opened that hold no valid cost (not a finite,
  // non-negative number where a kernel did not fail) or no valid signature: every reader
  // above ignores them (a corrupt or hand-edited database).
  int64_t invalid_rows() const { return invalid_rows_; }

 private:
  // Per kernel, the fastest non-failed record whose schedule compares `op` ("=" or "!=")
  // to `schedule`.
  std::map<uint64_t, double> fastest_where(const std::string& device, const char* op,
                                           const std::vector<std::string>& schedules) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t invalid_rows_ = 0;
};

// $KORA_PROFILE_DB if set, else $XDG_CACHE_HOME/kora/profiles.db, else
// $HOME/.cache/kora/profiles.db.
std::string default_profile_db_path();

}  // namespace kora
