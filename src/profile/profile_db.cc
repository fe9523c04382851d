// The profile database (include/kora/profile_db.h) on SQLite: a table of measurements
// keyed by (device, signature, schedule), a table of in-plan times keyed by (device,
// signature, native, schedule), one of per-kernel overheads keyed by device, one of device facts
// keyed by (device, key) and a meta table holding the schema version. Signatures are stored as 16
// hex digits (SQLite integers are signed).
#include "kora/profile_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "kora/candidates.h"
#include "kora/error.h"

namespace kora {
namespace {

constexpr int kSchemaVersion = 1;

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

constexpr size_t kMaxTextBytes = 1 << 20;  // a text longer than kora writes is cut here

// A prepared statement, finalized on scope exit; errors name the database file.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail();
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  // True while rows come; throws on error.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail();
    return false;
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  // Up to its first NUL (a blob or a text may hold NULs) and kMaxTextBytes.
  std::string text(int i) const {
    const unsigned char* s = sqlite3_column_text(stmt_, i);
    if (!s) return "";
    const auto n = static_cast<size_t>(std::max(sqlite3_column_bytes(stmt_, i), 0));
    const char* c = reinterpret_cast<const char*>(s);
    return std::string(c, ::strnlen(c, std::min(n, kMaxTextBytes)));
  }
  double real(int i) const { return sqlite3_column_double(stmt_, i); }
  int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }

 private:
  [[noreturn]] void fail() const {
    throw Error("profile database '" + path_ + "': " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string what = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw Error("profile database '" + path + "': " + what);
  }
}

// A database kora did not write, or one edited or corrupted, may hold anything in any
// column (SQLite's columns take any type, and a table made elsewhere has no constraints).
// What is read as a cost is only a number, finite and not negative (SQLite holds NaN as
// NULL and an infinity as 1e999): other rows are ignored, and counted when the database is
// opened (ProfileDb::invalid_rows). Texts are read up to kMaxTextBytes.
#define KORA_VALID_COST(column) \
  "(typeof(" column ") IN ('integer', 'real') AND " column " >= 0 AND " column " < 1e300)"
// A signature as kora writes it: 16 lowercase hex digits.
#define KORA_VALID_SIGNATURE                                    \
  "(typeof(signature) = 'text' AND length(signature) = 16 AND " \
  "NOT signature GLOB '*[^0-9a-f]*')"

constexpr const char* kColumns =
    "device, signature, schedule, median_ms, spread_ms, samples, failed IS NOT 0, error, "
    "measured_at";

ProfileRecord read_record(const Statement& s) {
  ProfileRecord r;
  r.device = s.text(0);
  r.signature = std::strtoull(s.text(1).c_str(), nullptr, 16);
  r.schedule = s.text(2);
  r.median_ms = s.real(3);
  r.spread_ms = s.real(4);
  r.samples = s.integer(5);
  r.failed = s.integer(6) != 0;
  r.error = s.text(7);
  r.measured_at = s.text(8);
  return r;
}

}  // namespace

ProfileDb::ProfileDb(const std::string& path) : path_(path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string what = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("profile database '" + path + "': cannot open: " + what);
  }
  try {
    // A database file is input kora did not necessarily write: SQLite's settings for such
    // files (no writes to the schema's internals, no functions with side effects run from
    // its views or triggers).
    sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_busy_timeout(db_, 10000);  // other processes writing: wait, do not fail
    // WAL: readers never block the writer, and a killed writer leaves only whole
    // transactions. synchronous=NORMAL is durable against a killed process (not
    // against power loss, which would lose at most the last transactions).
    exec(db_, path_, "PRAGMA journal_mode=WAL");
    exec(db_, path_, "PRAGMA synchronous=NORMAL");
    exec(db_, path_,
         "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "CREATE TABLE IF NOT EXISTS profiles ("
         " device TEXT NOT NULL, signature TEXT NOT NULL, schedule TEXT NOT NULL,"
         " median_ms REAL NOT NULL, spread_ms REAL NOT NULL, samples INTEGER NOT NULL,"
         " failed INTEGER NOT NULL, error TEXT NOT NULL, measured_at TEXT NOT NULL,"
         " PRIMARY KEY (device, signature, schedule));"
         // In-plan times per schedule (a database of kora before them also holds the
         // table in_plan_costs, per kernel only: no longer read).
         "CREATE TABLE IF NOT EXISTS in_plan_times ("
         " device TEXT NOT NULL, signature TEXT NOT NULL, native INTEGER NOT NULL,"
         " schedule TEXT NOT NULL, median_ms REAL NOT NULL, plans INTEGER NOT NULL,"
         " measured_at TEXT NOT NULL, PRIMARY KEY (device, signature, native, schedule));"
         "CREATE TABLE IF NOT EXISTS kernel_overhead ("
         " device TEXT PRIMARY KEY, per_kernel_ms REAL NOT NULL, measured_at TEXT NOT NULL);"
         "CREATE TABLE IF NOT EXISTS device_facts ("
         " device TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, measured_at TEXT NOT NULL,"
         " PRIMARY KEY (device, key));"
         "INSERT OR IGNORE INTO meta VALUES ('schema', '1');");
    Statement version(db_, path_, "SELECT value FROM meta WHERE key = 'schema'");
    if (!version.step() || std::atoi(version.text(0).c_str()) != kSchemaVersion)
      throw Error("profile database '" + path_ + "': schema version " +
                  (version.text(0).empty() ? "missing" : version.text(0).substr(0, 40)) +
                  ", this kora reads " + std::to_string(kSchemaVersion));
    Statement invalid(
        db_, path_,
        "SELECT (SELECT COUNT(*) FROM profiles WHERE NOT " KORA_VALID_SIGNATURE
        " OR (failed = 0 AND NOT " KORA_VALID_COST("median_ms") "))"
        " + (SELECT COUNT(*) FROM in_plan_times WHERE NOT " KORA_VALID_SIGNATURE
        " OR NOT " KORA_VALID_COST("median_ms") ")"
        " + (SELECT COUNT(*) FROM kernel_overhead WHERE NOT " KORA_VALID_COST("per_kernel_ms") ")");
    invalid.step();
    invalid_rows_ = invalid.integer(0);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

ProfileDb::~ProfileDb() { sqlite3_close(db_); }

void ProfileDb::put(const std::vector<ProfileRecord>& records) {
  exec(db_, path_, "BEGIN IMMEDIATE");
  try {
    Statement insert(db_, path_,
                     "INSERT OR REPLACE INTO profiles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const std::string now = now_utc();
    for (const ProfileRecord& r : records) {
      insert.bind(1, r.device);
      insert.bind(2, signature_hex(r.signature));
      insert.bind(3, r.schedule);
      insert.bind(4, r.median_ms);
      insert.bind(5, r.spread_ms);
      insert.bind(6, r.samples);
      insert.bind(7, static_cast<int64_t>(r.failed ? 1 : 0));
      insert.bind(8, r.error);
      insert.bind(9, r.measured_at.empty() ? now : r.measured_at);
      insert.step();
      insert.reset();
    }
    exec(db_, path_, "COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<ProfileRecord> ProfileDb::records(const std::string& device, uint64_t signature) const {
  const std::string sql = std::string("SELECT ") + kColumns +
                          " FROM profiles WHERE device = ? AND signature = ? AND"
                          " (failed IS NOT 0 OR " KORA_VALID_COST("median_ms") ")"
                          " ORDER BY failed IS NOT 0, median_ms, schedule";
  Statement select(db_, path_, sql.c_str());
  select.bind(1, device);
  select.bind(2, signature_hex(signature));
  std::vector<ProfileRecord> out;
  while (select.step()) out.push_back(read_record(select));
  return out;
}

std::optional<ProfileRecord> ProfileDb::best(const std::string& device, uint64_t signature) const {
  std::vector<ProfileRecord> all = records(device, signature);
  if (all.empty() || all.front().failed) return std::nullopt;
  return all.front();
}

std::map<uint64_t, double> ProfileDb::fastest(const std::string& device) const {
  return fastest_except(device, {});
}

std::map<uint64_t, double> ProfileDb::fastest_only(const std::string& device,
                                                   const std::string& only) const {
  return fastest_where(device, "IN", {only});
}

std::map<uint64_t, double> ProfileDb::fastest_except(const std::string& device,
                                                     const std::vector<std::string>& except) const {
  return fastest_where(device, "NOT IN", except);
}

std::map<uint64_t, double> ProfileDb::fastest_where(
    const std::string& device, const char* op, const std::vector<std::string>& schedules) const {
  std::string list;
  for (size_t i = 0; i < schedules.size(); ++i) list += i ? ", ?" : "?";
  const std::string sql = std::string(
                              "SELECT signature, MIN(median_ms) FROM profiles"
                              " WHERE device = ? AND failed = 0 AND " KORA_VALID_SIGNATURE
                              " AND " KORA_VALID_COST("median_ms") " AND schedule ") +
                          op + " (" + list + ") GROUP BY signature";
  Statement select(db_, path_, sql.c_str());
  select.bind(1, device);
  for (size_t i = 0; i < schedules.size(); ++i) select.bind(static_cast<int>(i) + 2, schedules[i]);
  std::map<uint64_t, double> out;
  while (select.step()) out[std::strtoull(select.text(0).c_str(), nullptr, 16)] = select.real(1);
  return out;
}

bool ProfileDb::known(const std::string& device, uint64_t signature) const {
  Statement select(db_, path_, "SELECT 1 FROM profiles WHERE device = ? AND signature = ? LIMIT 1");
  select.bind(1, device);
  select.bind(2, signature_hex(signature));
  return select.step();
}

int64_t ProfileDb::count(const std::string& device) const {
  Statement select(db_, path_,
                   device.empty() ? "SELECT COUNT(*) FROM profiles"
                                  : "SELECT COUNT(*) FROM profiles WHERE device = ?");
  if (!device.empty()) select.bind(1, device);
  select.step();
  return select.integer(0);
}

std::vector<uint64_t> ProfileDb::failed_only(const std::string& device) const {
  Statement select(db_, path_,
                   "SELECT signature FROM profiles WHERE device = ? AND " KORA_VALID_SIGNATURE
                   " GROUP BY signature HAVING MIN(failed) = 1");
  select.bind(1, device);
  std::vector<uint64_t> out;
  while (select.step()) out.push_back(std::strtoull(select.text(0).c_str(), nullptr, 16));
  return out;
}

void ProfileDb::put_in_plan(const std::string& device, const ScheduleTimes& ms, int64_t plans,
                            bool native) {
  exec(db_, path_, "BEGIN IMMEDIATE");
  try {
    Statement insert(db_, path_,
                     "INSERT OR REPLACE INTO in_plan_times VALUES (?, ?, ?, ?, ?, ?, ?)");
    const std::string now = now_utc();
    for (const auto& [signature, schedules] : ms)
      for (const auto& [schedule, median] : schedules) {
        insert.bind(1, device);
        insert.bind(2, signature_hex(signature));
        insert.bind(3, static_cast<int64_t>(native ? 1 : 0));
        insert.bind(4, schedule);
        insert.bind(5, median);
        insert.bind(6, plans);
        insert.bind(7, now);
        insert.step();
        insert.reset();
      }
    exec(db_, path_, "COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void ProfileDb::put_kernel_overhead(const std::string& device, double per_kernel_ms) {
  Statement insert(db_, path_, "INSERT OR REPLACE INTO kernel_overhead VALUES (?, ?, ?)");
  insert.bind(1, device);
  insert.bind(2, per_kernel_ms);
  insert.bind(3, now_utc());
  insert.step();
}

double ProfileDb::kernel_overhead(const std::string& device) const {
  Statement select(
      db_, path_,
      "SELECT per_kernel_ms FROM kernel_overhead WHERE device = ? AND " KORA_VALID_COST(
          "per_kernel_ms"));
  select.bind(1, device);
  return select.step() ? select.real(0) : 0;
}

void ProfileDb::put_device_fact(const std::string& device, const std::string& key,
                                const std::string& value) {
  Statement insert(db_, path_, "INSERT OR REPLACE INTO device_facts VALUES (?, ?, ?, ?)");
  insert.bind(1, device);
  insert.bind(2, key);
  insert.bind(3, value);
  insert.bind(4, now_utc());
  insert.step();
}

std::optional<std::string> ProfileDb::device_fact(const std::string& device,
                                                  const std::string& key) const {
  Statement select(db_, path_, "SELECT value FROM device_facts WHERE device = ? AND key = ?");
  select.bind(1, device);
  select.bind(2, key);
  if (!select.step()) return std::nullopt;
  return select.text(0);
}

std::set<uint64_t> ProfileDb::suspect(const std::string& device) const {
  // SQLite takes a bare column from the row MIN() chose: the fastest record's error.
  Statement select(db_, path_,
                   "SELECT signature, MIN(median_ms), error FROM profiles"
                   " WHERE device = ? AND failed = 0 AND " KORA_VALID_SIGNATURE
                   " AND " KORA_VALID_COST("median_ms") " GROUP BY signature");
  select.bind(1, device);
  std::set<uint64_t> out;
  while (select.step())
    if (select.text(2).rfind("suspect", 0) == 0)
      out.insert(std::strtoull(select.text(0).c_str(), nullptr, 16));
  return out;
}

ProfileDb::ScheduleTimes ProfileDb::in_plan(const std::string& device, bool native,
                                            std::optional<uint64_t> signature) const {
  Statement select(
      db_, path_,
      signature
          ? "SELECT signature, schedule, median_ms FROM in_plan_times"
            " WHERE device = ? AND native = ? AND signature = ? AND " KORA_VALID_COST("median_ms")
          : "SELECT signature, schedule, median_ms FROM in_plan_times"
            " WHERE device = ? AND native = ? AND " KORA_VALID_SIGNATURE
            " AND " KORA_VALID_COST("median_ms"));
  select.bind(1, device);
  select.bind(2, static_cast<int64_t>(native ? 1 : 0));
  if (signature) select.bind(3, signature_hex(*signature));
  ScheduleTimes out;
  while (select.step())
    out[std::strtoull(select.text(0).c_str(), nullptr, 16)][select.text(1)] = select.real(2);
  return out;
}

ProfileDb::ScheduleTimes ProfileDb::times_alone(const std::string& device) const {
  Statement select(db_, path_,
                   "SELECT signature, schedule, median_ms FROM profiles WHERE device = ? AND"
                   " failed = 0 AND " KORA_VALID_SIGNATURE " AND " KORA_VALID_COST("median_ms"));
  select.bind(1, device);
  ScheduleTimes out;
  while (select.step())
    out[std::strtoull(select.text(0).c_str(), nullptr, 16)][select.text(1)] = select.real(2);
  return out;
}

std::vector<std::string> ProfileDb::devices() const {
  Statement select(db_, path_, "SELECT DISTINCT device FROM profiles ORDER BY device");
  std::vector<std::string> out;
  while (select.step()) out.push_back(select.text(0));
  return out;
}

std::string default_profile_db_path() {
  if (const char* p = std::getenv("KORA_PROFILE_DB"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/kora/profiles.db";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/kora/profiles.db";
}

}  // namespace kora
