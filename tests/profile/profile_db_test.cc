// The profile database (include/kora/profile_db.h): records round-trip through the file
// and a reopen; best() is the fastest schedule that did not fail; fastest() gives every
// kernel's best at once; put() replaces by key; a process killed while writing leaves an
// intact file holding whole transactions only; a file that is not a database, or has
// another schema version, is refused with an error naming it; the default path follows
// KORA_PROFILE_DB / XDG_CACHE_HOME / HOME.
#include "kora/profile_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "cpu/backend.h"
#include "kora/cost.h"
#include "kora/error.h"

namespace {

namespace fs = std::filesystem;
using kora::ProfileDb;
using kora::ProfileRecord;

class ProfileDbTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("kora_profile_" + std::to_string(::getpid()) + "_" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db_path() const { return (dir_ / "sub" / "profiles.db").string(); }

  fs::path dir_;
};

ProfileRecord record(const std::string& device, uint64_t signature, const std::string& schedule,
                     double median) {
  ProfileRecord r;
  r.device = device;
  r.signature = signature;
  r.schedule = schedule;
  r.median_ms = median;
  r.spread_ms = median / 10;
  r.samples = 25;
  return r;
}

TEST_F(ProfileDbTest, RoundTripBestAndReopen) {
  const uint64_t big = 0xfedcba9876543210ull;  // above 2^63: must survive storage
  {
    ProfileDb db(db_path());  // creates the missing directory
    EXPECT_EQ(db.count(), 0);
    EXPECT_FALSE(db.known("cpu|a", big));
    EXPECT_FALSE(db.best("cpu|a", big).has_value());
    ProfileRecord failed = record("cpu|a", big, "tile=8", 0.001);
    failed.failed = true;
    failed.error = "wrong result: rel L2 3e-2";
    db.put({record("cpu|a", big, "tile=64", 0.5), record("cpu|a", big, "tile=32", 0.25), failed,
            record("cpu|b", big, "tile=64", 0.1), record("cpu|a", 7, "lib=onednn", 2.0)});
    EXPECT_EQ(db.count(), 5);
    EXPECT_EQ(db.count("cpu|a"), 4);
  }
  ProfileDb db(db_path());
  EXPECT_EQ(db.count(), 5);
  EXPECT_TRUE(db.known("cpu|a", big));
  const auto best = db.best("cpu|a", big);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule, "tile=32");  // the failed one is faster but never chosen
  EXPECT_DOUBLE_EQ(best->median_ms, 0.25);
  EXPECT_DOUBLE_EQ(best->spread_ms, 0.025);
  EXPECT_EQ(best->samples, 25);
  EXPECT_EQ(best->signature, big);
  EXPECT_EQ(best->measured_at.size(), 20u) << best->measured_at;  // 2026-11-23T10:00:00Z
  const auto all = db.records("cpu|a", big);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].schedule, "tile=64");
  EXPECT_TRUE(all[2].failed);
  EXPECT_EQ(all[2].error, "wrong result: rel L2 3e-2");
  EXPECT_DOUBLE_EQ(db.best("cpu|b", big)->median_ms, 0.1);  // devices are separate

  // Same key: replaced, not added.
  db.put(record("cpu|a", big, "tile=32", 0.2));
  EXPECT_EQ(db.count(), 5);
  EXPECT_DOUBLE_EQ(db.best("cpu|a", big)->median_ms, 0.2);
  // Only failures: known, but no best.
  ProfileRecord only_failed = record("cpu|a", 9, "tile=8", 1.0);
  only_failed.failed = true;
  db.put(only_failed);
  EXPECT_TRUE(db.known("cpu|a", 9));
  EXPECT_FALSE(db.best("cpu|a", 9).has_value());
  // All kernels of a device at once: the fastest non-failed schedule each.
  const std::map<uint64_t, double> fastest = db.fastest("cpu|a");
  ASSERT_EQ(fastest.size(), 2u);
  EXPECT_DOUBLE_EQ(fastest.at(big), 0.2);
  EXPECT_DOUBLE_EQ(fastest.at(7), 2.0);
  EXPECT_EQ(db.fastest("cpu|b").size(), 1u);
}

TEST_F(ProfileDbTest, KilledWriterLeavesWholeTransactions) {
  constexpr int kBatch = 500;
  { ProfileDb db(db_path()); }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Write batches forever; the parent kills this process mid-transaction.
    try {
      ProfileDb db(db_path());
      for (uint64_t batch = 0;; ++batch) {
        std::vector<ProfileRecord> records;
        for (int i = 0; i < kBatch; ++i)
          records.push_back(record("cpu|kill", batch * kBatch + i, "s", 1.0 + i));
        db.put(records);
      }
    } catch (...) {
    }
    ::_exit(3);
  }
  // Wait until some batches are in, then kill during the next ones.
  {
    ProfileDb reader(db_path());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (reader.count() < 3 * kBatch && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(37));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself, status " << status;

  ProfileDb db(db_path());
  const int64_t n = db.count("cpu|kill");
  EXPECT_GE(n, 3 * kBatch);
  EXPECT_EQ(n % kBatch, 0) << "a partial transaction is visible";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* check = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
  sqlite3_finalize(check);
  sqlite3_close(raw);
  // And it still takes writes.
  db.put(record("cpu|kill", 1ull << 62, "s", 1.0));
  EXPECT_EQ(db.count("cpu|kill"), n + 1);
}

TEST_F(ProfileDbTest, RefusesFilesThatAreNotProfileDatabases) {
  fs::create_directories(dir_);
  const std::string junk = (dir_ / "junk.db").string();
  std::ofstream(junk) << "this is not an SQLite file, but long enough to look like one......"
                         "................................................................";
  try {
    ProfileDb db(junk);
    FAIL() << "opened a text file";
  } catch (const kora::Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos) << e.what();
  }
  const std::string other = (dir_ / "other.db").string();
  { ProfileDb db(other); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE meta SET value = '99' WHERE key = 'schema'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  try {
    ProfileDb db(other);
    FAIL() << "opened a database of another schema version";
  } catch (const kora::Error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ProfileDb("/proc/kora/cannot/profiles.db"), kora::Error);
}

// A database edited by hand, corrupted or written by something else (issue 25,
// fuzz/profile_db_fuzzer.cc): rows whose cost is negative, infinite, NULL (SQLite's NaN)
// or not a number, or whose signature is not 16 hex digits, are never used as costs; they
// are counted when the database is opened and the cost model's description says so.
TEST_F(ProfileDbTest, RowsWithoutAValidCostAreIgnoredAndCounted) {
  {
    ProfileDb db(db_path());
    db.put({record("d", 1, "a", 0.5), record("d", 2, "a", 0.3)});
    db.put_in_plan("d", {{2, {{"a", 0.2}}}}, 1);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
  const char* rows[] = {"('d', '0000000000000001', 'negative', -1, 0, 3, 0, '', '')",
                        "('d', '0000000000000001', 'infinite', 1e999, 0, 3, 0, '', '')",
                        "('d', '0000000000000001', 'text', 'fast', 0, 3, 0, '', '')",
                        "('d', '0000000000000001', 'blob', x'00', 0, 3, 0, '', '')",
                        "('d', 'zz', 'a', 0.001, 0, 3, 0, '', '')",
                        "('d', '0000000000000002', 'failed as text', -7, 0, 3, 'no', '', '')"};
  for (const char* row : rows)
    ASSERT_EQ(sqlite3_exec(raw, (std::string("INSERT INTO profiles VALUES ") + row).c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << row;
  ASSERT_EQ(
      sqlite3_exec(raw,
                   "INSERT INTO in_plan_times VALUES ('d', '0000000000000001', 0, 'a', -5, 1, '');"
                   "INSERT INTO kernel_overhead VALUES ('d', -0.5, '');",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);

  auto db = std::make_shared<ProfileDb>(db_path());
  EXPECT_EQ(db->invalid_rows(), 7);  // the 'failed as text' row failed: not a cost
  const std::map<uint64_t, double> fastest = db->fastest("d");
  EXPECT_EQ(fastest, (std::map<uint64_t, double>{{1, 0.5}, {2, 0.3}}));
  ASSERT_EQ(db->records("d", 1).size(), 1u);
  EXPECT_EQ(db->best("d", 1)->median_ms, 0.5);
  const std::vector<ProfileRecord> two = db->records("d", 2);
  ASSERT_EQ(two.size(), 2u);  // the valid one first, the failed one kept as failed
  EXPECT_FALSE(two[0].failed);
  EXPECT_TRUE(two[1].failed);
  EXPECT_EQ(db->in_plan("d"), (ProfileDb::ScheduleTimes{{2, {{"a", 0.2}}}}));
  EXPECT_EQ(db->kernel_overhead("d"), 0);
  EXPECT_TRUE(db->suspect("d").empty());
  kora::ProfileDbCost cost(db, "d", nullptr);
  EXPECT_NE(cost.describe().find("7 rows without a valid cost or signature ignored"),
            std::string::npos)
      << cost.describe();
}

// Tables made by something else (no types, no constraints): NULLs anywhere, a huge
// string, a schema value that is not a number; one clear error or the row ignored.
TEST_F(ProfileDbTest, TablesWithoutConstraintsAreReadSafely) {
  fs::create_directories(dir_);
  const std::string path = (dir_ / "foreign.db").string();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const std::string huge(3 << 20, 'x');
  const std::string sql =
      "CREATE TABLE meta (key, value); INSERT INTO meta VALUES ('schema', '1');"
      "CREATE TABLE profiles (device, signature, schedule, median_ms, spread_ms, samples,"
      " failed, error, measured_at);"
      "INSERT INTO profiles VALUES ('d', '0000000000000003', 'a', NULL, NULL, NULL, NULL, NULL,"
      " NULL);"
      "INSERT INTO profiles VALUES ('d', '0000000000000003', 'b', 0.25, 0, 1, 0, '" +
      huge + "', NULL);";
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  ProfileDb db(path);
  EXPECT_EQ(db.fastest("d"), (std::map<uint64_t, double>{{3, 0.25}}));
  const std::vector<ProfileRecord> records = db.records("d", 3);
  ASSERT_EQ(records.size(), 2u);  // the NULL row counts as failed
  EXPECT_EQ(records[0].median_ms, 0.25);
  EXPECT_LE(records[0].error.size(), size_t{1} << 20);
  EXPECT_TRUE(records[1].failed);

  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE meta SET value = x'00ff' WHERE key = 'schema'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE profiles; CREATE TABLE profiles (device)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  try {
    ProfileDb again(path);
    FAIL() << "opened a database of no schema version";
  } catch (const kora::Error& e) {
    EXPECT_NE(std::string(e.what()).find("foreign.db"), std::string::npos) << e.what();
  }
}

// Machine peaks stored as a device fact that are not finite are refused (and measured
// again by cpu_peaks), never used as a bound.
TEST(MachinePeaksJson, NonFinitePeaksAreRefused) {
  EXPECT_NO_THROW(kora::MachinePeaks::from_json(
      R"({"gflops": 100, "dram_gbps": 10, "cache_gbps": 50, "cache_bytes": 1e6, "floor_ms": 0})"));
  EXPECT_THROW(kora::MachinePeaks::from_json(
                   R"({"gflops": 1e999, "dram_gbps": 10, "cache_gbps": 50, "cache_bytes": 1e6,)"
                   R"( "floor_ms": 0})"),
               kora::Error);
  EXPECT_THROW(kora::MachinePeaks::from_json("{not json"), kora::Error);
}

TEST(ProfileDbPath, DefaultFollowsEnvironment) {
  auto with_env = [](const char* name, const char* value) {
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  };
  const char* saved[3] = {std::getenv("KORA_PROFILE_DB"), std::getenv("XDG_CACHE_HOME"),
                          std::getenv("HOME")};
  const std::string keep[3] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "",
                               saved[2] ? saved[2] : ""};
  with_env("KORA_PROFILE_DB", "/x/p.db");
  EXPECT_EQ(kora::default_profile_db_path(), "/x/p.db");
  with_env("KORA_PROFILE_DB", nullptr);
  with_env("XDG_CACHE_HOME", "/cache");
  EXPECT_EQ(kora::default_profile_db_path(), "/cache/kora/profiles.db");
  with_env("XDG_CACHE_HOME", nullptr);
  with_env("HOME", "/home/u");
  EXPECT_EQ(kora::default_profile_db_path(), "/home/u/.cache/kora/profiles.db");
  with_env("KORA_PROFILE_DB", saved[0] ? keep[0].c_str() : nullptr);
  with_env("XDG_CACHE_HOME", saved[1] ? keep[1].c_str() : nullptr);
  with_env("HOME", saved[2] ? keep[2].c_str() : nullptr);
}

TEST(ProfileDbPath, CpuFingerprintNamesTheMachineAndTools) {
  const std::string f = kora::cpu_fingerprint(2, "g++ 12.2.0", "onednn 3.0");
  EXPECT_EQ(f.rfind("cpu|", 0), 0u) << f;
  EXPECT_NE(f.find("|threads=2|g++ 12.2.0|onednn 3.0"), std::string::npos) << f;
  EXPECT_EQ(f.find("unknown cpu"), std::string::npos) << f;  // /proc/cpuinfo was read
  EXPECT_NE(f, kora::cpu_fingerprint(1, "g++ 12.2.0", "onednn 3.0"));
  EXPECT_NE(f.find("|family "), std::string::npos) << f;
}

// Two parts sold under one name (a Zen 4 and a Zen 5 EPYC) are two devices; flags kora
// does not choose between do not count.
TEST(ProfileDbPath, CpuIdentityTellsFamiliesAndIsaApart) {
  auto cpuinfo = [](const std::string& family, const std::string& model, const std::string& flags) {
    return "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: " + family +
           "\nmodel\t\t: " + model + "\nmodel name\t: AMD EPYC\nflags\t\t: " + flags +
           "\n\nprocessor\t: 1\ncpu family\t: 99\n";
  };
  const std::string zen4 = kora::cpu_identity(cpuinfo("25", "17", "fpu avx avx2 fma avx512f"));
  EXPECT_EQ(zen4, "AMD EPYC|family 25 model 17|avx,avx2,fma,avx512f");
  EXPECT_NE(zen4, kora::cpu_identity(cpuinfo("26", "2", "fpu avx avx2 fma avx512f")));
  EXPECT_NE(zen4, kora::cpu_identity(cpuinfo("25", "17", "fpu avx avx2 fma avx512f avx512_bf16")));
  EXPECT_EQ(zen4, kora::cpu_identity(cpuinfo("25", "17", "fpu avx avx2 fma avx512f sse4_2 ht")));
  EXPECT_EQ(kora::cpu_identity(""), "unknown cpu|family ? model ?|no avx");
}

}  // namespace
