// The fuzzed readers, shared by the libFuzzer harnesses (fuzz/*_fuzzer.cc, `make fuzz`)
// and the regression test that replays the seed corpus and every crasher found
// (tests/fuzz/replay_test.cc). In: arbitrary bytes. Out: nothing; the reader runs on them
// (as a file where it reads files). A kora::Error is a correct answer to bad input;
// anything else (a crash, another exception, a sanitizer report, a hang) is a finding.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cuda/job.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/frontend.h"
#include "kora/npy.h"
#include "kora/profile_db.h"
#include "runtime/manifest.h"

namespace kora_fuzz {

// This process's scratch directory, removed when the process exits.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kora-fuzz-" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const std::filesystem::path& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

// A file of this process's own holding the bytes; its path.
inline std::string as_file(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// The ONNX importer: parse, structural checks, shape inference, constant folding.
inline void onnx_import(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size, "model.onnx");
  try {
    kora::import_onnx(path);
  } catch (const kora::Error&) {
  }
}

inline void npy(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size, "tensor.npy");
  try {
    kora::read_npy(path);
  } catch (const kora::Error&) {
  }
}

// The artifact manifest: every field and the plan checked.
inline void manifest(const uint8_t* data, size_t size) {
  try {
    kora::manifest_from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const kora::Error&) {
  }
}

// A broken promise of a reader (a wrong answer, not a crash by itself): a finding.
inline void expect(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "kora fuzz: %s\n", what);
  std::abort();
}

// The CUDA measuring job's files (src/cuda/job.cc): the bytes as DIR/job.json (with a
// data.bin of 256 bytes beside it) and as DIR/results.jsonl, each read as kora and the
// worker read them; what a read job holds is then used as the worker uses it on the host
// (sizes, the inputs' generator for small buffers, the cuBLAS call), and read results'
// probes are compared as kora compares them.
inline void cuda_job(const uint8_t* data, size_t size) {
  const std::string dir = (scratch() / "cuda-job").string();
  std::filesystem::create_directories(dir);
  static const std::string blob = [&] {
    std::string b(256, '\0');
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i);
    std::ofstream(kora::cuda_data_file(dir), std::ios::binary).write(b.data(), 256);
    return b;
  }();
  for (const std::string& path : {kora::cuda_job_file(dir), kora::cuda_results_file(dir)})
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    const kora::CudaJob job = kora::read_cuda_job(dir);
    expect(job.measure.min_samples >= 1 && job.measure.max_samples >= job.measure.min_samples,
           "a job's sample counts");
    for (const kora::CudaJobKernel& k : job.kernels) {
      expect(!k.library.empty() ||
                 (k.program >= 0 && static_cast<size_t>(k.program) < job.programs.size()),
             "a generated kernel's program");
      for (const auto* buffers : {&k.reads, &k.writes})
        for (const kora::CudaJobBuffer& b : *buffers) {
          const int64_t bytes = b.bytes();
          expect(bytes >= 0 && bytes <= (int64_t{8} << 40), "a buffer's size");
          if (bytes <= 4096) {
            std::string out(static_cast<size_t>(bytes), '\0');
            kora::cuda_job_fill(b, blob, out.data());
            kora::cuda_probe(b.dtype, out.data(), b.count);
          }
        }
      for (const kora::CudaJobLaunch& l : k.launches)
        expect(l.grid >= 1 && l.block >= 1 && l.block <= 1024, "a launch's grid and block");
      if (k.library == "cublas_gemm") kora::cublas_gemm_call(k.gemm);
      kora::cuda_library_operands_problem(kora::cuda_gemm_operands(k.gemm), k.reads.size());
      kora::cuda_library_operands_problem(kora::cuda_conv_operands(k.conv), k.reads.size());
    }
  } catch (const kora::Error&) {
  }
  try {
    const kora::CudaResults results = kora::read_cuda_results(dir);
    for (const kora::CudaResult& r : results.results) {
      if (!r.error.empty()) continue;
      expect(std::isfinite(r.median_ms) && r.median_ms >= 0 && std::isfinite(r.spread_ms) &&
                 r.spread_ms >= 0 && r.samples >= 1,
             "a result's time");
      for (const kora::CudaProbe& p : r.probes) kora::compare_cuda_probes(p, p, 1e-4);
    }
  } catch (const kora::Error&) {
  }
}

// A cost kora may use: finite and not negative.
inline bool is_cost(double ms) { return std::isfinite(ms) && ms >= 0; }

// Every reader of the profile database on the database at `path`, device "d": what they
// return as a cost must be a cost (a corrupt row is ignored, never used).
inline void read_profile_db(const std::string& path) {
  auto db = std::make_shared<kora::ProfileDb>(path);
  for (const std::string& device : db->devices()) (void)device;
  db->count("");
  db->count("d");
  std::map<uint64_t, double> costs = db->fastest("d");
  for (const auto& m : {db->fastest_only("d", "s"), db->fastest_except("d", {"s", "t"})})
    costs.insert(m.begin(), m.end());
  for (const auto& m : {db->in_plan("d"), db->in_plan("d", true), db->in_plan("d", false, 0xab),
                        db->times_alone("d")})
    for (const auto& [signature, schedules] : m)
      for (const auto& [schedule, ms] : schedules) {
        expect(is_cost(ms), "a schedule's time from the profile database is not a cost");
        costs.emplace(signature, ms);
      }
  costs.emplace(0xab, 0.0);
  for (const auto& [signature, ms] : costs) {
    expect(is_cost(ms), "a kernel's cost from the profile database is not a cost");
    for (const kora::ProfileRecord& r : db->records("d", signature))
      expect(r.failed || is_cost(r.median_ms), "a record's time is not a cost");
    if (const auto best = db->best("d", signature))
      expect(is_cost(best->median_ms), "the best record's time is not a cost");
    db->known("d", signature);
  }
  db->failed_only("d");
  db->suspect("d");
  expect(is_cost(db->kernel_overhead("d")), "the per-kernel overhead is not a cost");
  if (const auto peaks = db->device_fact("d", "peaks")) {
    try {
      const kora::MachinePeaks p = kora::MachinePeaks::from_json(*peaks);
      expect(std::isfinite(p.gflops) && p.gflops > 0 && std::isfinite(p.dram_gbps) &&
                 std::isfinite(p.cache_gbps) && std::isfinite(p.cache_bytes) &&
                 std::isfinite(p.floor_ms),
             "machine peaks that are not finite");
    } catch (const kora::Error&) {
    }
  }
  kora::ProfileDbCost cost(db, "d", nullptr);
  cost.describe();
}

// Reads one SQLite value for a column from the bytes: NULL, an integer, a double (any bit
// pattern: NaN, infinities, negative), a text of up to 255 bytes, a huge text, a blob, or
// the column's expected value (`usual`).
inline void bind_value(sqlite3_stmt* stmt, int column, const uint8_t*& p, const uint8_t* end,
                       const char* usual, bool& huge_given) {
  auto take = [&](void* out, size_t n) {
    const size_t have = std::min<size_t>(n, static_cast<size_t>(end - p));
    std::memset(out, 0, n);
    std::memcpy(out, p, have);
    p += have;
  };
  uint8_t kind = 0;
  take(&kind, 1);
  switch (kind % 8) {
    case 0:
      sqlite3_bind_null(stmt, column);
      break;
    case 1: {
      int64_t v;
      take(&v, 8);
      sqlite3_bind_int64(stmt, column, v);
      break;
    }
    case 2: {
      double v;
      take(&v, 8);
      sqlite3_bind_double(stmt, column, v);
      break;
    }
    case 3: {
      uint8_t n = 0;
      take(&n, 1);
      std::string s(n, '\0');
      take(s.data(), n);
      sqlite3_bind_text(stmt, column, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    case 4: {  // a huge string (once per input, for speed; then a short one)
      const std::string s(huge_given ? 300 : 3 << 20, 'x');
      huge_given = true;
      sqlite3_bind_text(stmt, column, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    case 5: {
      uint8_t n = 0;
      take(&n, 1);
      std::string s(n, '\0');
      take(s.data(), n);
      sqlite3_bind_blob(stmt, column, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    case 6: {  // a small non-negative number as text ("0.5")
      uint8_t n = 0;
      take(&n, 1);
      const std::string s = std::to_string(n / 8.0);
      sqlite3_bind_text(stmt, column, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    default:
      sqlite3_bind_text(stmt, column, usual, -1, SQLITE_STATIC);
  }
}

// The profile database (src/profile/profile_db.cc). First byte even: the rest is the
// database file itself. Odd: the rest describes rows, inserted into tables of kora's names
// without types or constraints (a database written by something else, or edited by hand),
// each value any SQLite value. Then every reader runs on it (read_profile_db).
inline void profile_db(const uint8_t* data, size_t size) {
  const std::string path = (scratch() / "profiles.db").string();
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());
  if (size == 0) return;
  if (data[0] % 2 == 0) {
    as_file(data + 1, size - 1, "profiles.db");
  } else {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                 "CREATE TABLE meta (key, value);"
                 "CREATE TABLE profiles (device, signature, schedule, median_ms, spread_ms,"
                 " samples, failed, error, measured_at);"
                 "CREATE TABLE in_plan_times (device, signature, native, schedule, median_ms,"
                 " plans, measured_at);"
                 "CREATE TABLE kernel_overhead (device, per_kernel_ms, measured_at);"
                 "CREATE TABLE device_facts (device, key, value, measured_at);"
                 "INSERT INTO meta VALUES ('schema', '1'); BEGIN;",
                 nullptr, nullptr, nullptr);
    struct Table {
      const char* sql;
      std::vector<const char*> usual;  // per column
    };
    const Table tables[] = {
        {"INSERT INTO profiles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
         {"d", "00000000000000ab", "s", "0.5", "0.01", "3", "0", "", "2026-01-01T00:00:00Z"}},
        {"INSERT INTO in_plan_times VALUES (?, ?, ?, ?, ?, ?, ?)",
         {"d", "00000000000000ab", "0", "s", "0.25", "1", "2026-01-01T00:00:00Z"}},
        {"INSERT INTO kernel_overhead VALUES (?, ?, ?)", {"d", "0.001", "2026-01-01T00:00:00Z"}},
        {"INSERT INTO device_facts VALUES (?, ?, ?, ?)",
         {"d", "peaks",
          "{\"gflops\": 100, \"dram_gbps\": 10, \"cache_gbps\": 50, \"cache_bytes\": 1e6, "
          "\"floor_ms\": 0.001}",
          "2026-01-01T00:00:00Z"}},
        {"INSERT INTO meta VALUES (?, ?)", {"schema", "1"}}};
    const uint8_t* p = data + 1;
    const uint8_t* end = data + size;
    bool huge_given = false;
    for (int rows = 0; p < end && rows < 16; ++rows) {
      const Table& t = tables[*p++ % 5];
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db, t.sql, -1, &stmt, nullptr);
      for (size_t c = 0; c < t.usual.size(); ++c)
        bind_value(stmt, static_cast<int>(c) + 1, p, end, t.usual[c], huge_given);
      sqlite3_step(stmt);
      sqlite3_finalize(stmt);
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  try {
    read_profile_db(path);
  } catch (const kora::Error&) {
  }
}

}  // namespace kora_fuzz
