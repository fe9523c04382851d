// The CUDA measuring job's files (src/cuda/job.h): CudaJob <-> DIR/job.json,
// results lines <-> DIR/results.jsonl, the inputs' generator and the outputs' probes.
// Shared by kora and the standalone worker, so it uses nothing of kora but kora::Error, the
// kernels' description (kernel_spec.cc) and the correctness rule (src/base/compare.cc;
// nlohmann-json is header-only).
#include "cuda/job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "base/compare.h"
#include "base/fnv_hash.h"
#include "base/read_file.h"
#include "kora/error.h"

namespace kora {
namespace {

using json = nlohmann::json;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The job's content (id excluded), for its id.
json job_json(const CudaJob& job) {
  json kernels = json::array();
  for (const CudaJobKernel& k : job.kernels) kernels.push_back(cuda_job_kernel_to_json(k));
  const MeasureOptions& m = job.measure;
  return {{"format", CudaJob::kFormat},
          {"arch", job.arch},
          {"compiler", job.compiler},
          {"codegen", job.codegen},
          {"measure",
           {{"warmup", m.warmup},
            {"min_samples", m.min_samples},
            {"max_samples", m.max_samples},
            {"max_seconds", m.max_seconds},
            {"stable_within", m.stable_within},
            {"slow_ms", m.slow_ms},
            {"abandon_ms", m.abandon_ms}}},
          {"programs", job.programs},
          {"kernels", kernels}};
}

// Finite doubles as numbers; NaN and infinities as strings (JSON has no such numbers).
json number_json(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double number_of(const json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw Error("bad number '" + s.substr(0, 40) + "'");
}

// The probe of `count` elements of one type (the dtype dispatched once, not per element).
template <class T>
CudaProbe probe_of(const T* x, int64_t count) {
  CudaProbe p;
  p.count = count;
  for (int64_t i = 0; i < count; ++i) {
    const double v = static_cast<double>(x[i]);
    if (std::isfinite(v))
      p.sum_squares += v * v;
    else
      ++p.nonfinite;
  }
  const int points = static_cast<int>(std::min<int64_t>(count, CudaProbe::kPoints));
  for (int k = 0; k < points; ++k)
    p.values.push_back(static_cast<double>(x[cuda_probe_position(k, count)]));
  return p;
}

}  // namespace

std::string cuda_job_file(const std::string& dir) { return dir + "/job.json"; }
std::string cuda_results_file(const std::string& dir) { return dir + "/results.jsonl"; }
std::string cuda_data_file(const std::string& dir) { return dir + "/data.bin"; }

void write_cuda_job(const std::string& dir, CudaJob& job) {
  json j = job_json(job);
  FnvHash h;
  h.str(j.dump());
  job.id = hex64(h.h);
  j["id"] = job.id;
  const std::string path = cuda_job_file(dir), tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) throw Error(path + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error(path + ": cannot write");
}

CudaJob read_cuda_job(const std::string& dir) {
  const std::string path = cuda_job_file(dir);
  const std::string text = read_file(path);
  CudaJob job;
  try {
    const json j = json::parse(text);
    if (j.at("format").get<int>() != CudaJob::kFormat)
      throw Error("format " + std::to_string(j.at("format").get<int>()) + ", this reads " +
                  std::to_string(CudaJob::kFormat));
    job.arch = j.at("arch").get<std::string>();
    job.compiler = j.at("compiler").get<std::string>();
    job.codegen = j.at("codegen").get<std::string>();
    const json& m = j.at("measure");
    const int kMaxSamples = 1000000;
    job.measure.warmup = static_cast<int>(cuda_json_int(m, "warmup", 0, kMaxSamples));
    job.measure.min_samples = static_cast<int>(cuda_json_int(m, "min_samples", 1, kMaxSamples));
    job.measure.max_samples =
        static_cast<int>(cuda_json_int(m, "max_samples", job.measure.min_samples, kMaxSamples));
    double* times[] = {&job.measure.max_seconds, &job.measure.stable_within, &job.measure.slow_ms,
                       &job.measure.abandon_ms};
    const char* names[] = {"max_seconds", "stable_within", "slow_ms", "abandon_ms"};
    for (int i = 0; i < 4; ++i) {
      *times[i] = cuda_json_finite(m, names[i]);
      if (*times[i] < 0) throw Error(std::string("measure.") + names[i] + " is negative");
    }
    job.programs = j.at("programs").get<std::vector<std::string>>();
    for (const std::string& p : job.programs)  // a file in the job's directory
      if (p.empty() || p == "." || p == ".." || p.find('/') != std::string::npos)
        throw Error("program '" + p.substr(0, 80) + "' is not a file name");
    for (const json& jk : j.at("kernels"))
      job.kernels.push_back(cuda_job_kernel_of_json(jk, job.programs.size()));
    job.id = j.at("id").get<std::string>();
    // Buffers carried as data lie inside data.bin (checked without overflow: an offset and
    // a size of at most 2^63 - 1 and 2^43 each).
    std::error_code ec;
    const std::string data = cuda_data_file(dir);
    const auto data_size = std::filesystem::file_size(data, ec);
    for (const CudaJobKernel& k : job.kernels)
      for (const CudaJobBuffer& b : k.reads)
        if (b.fill == CudaFill::kData &&
            (ec || b.data_offset > static_cast<int64_t>(data_size) ||
             b.bytes() > static_cast<int64_t>(data_size) - b.data_offset))
          throw Error("kernel " + hex64(k.signature) + " reads " + std::to_string(b.bytes()) +
                      " bytes at offset " + std::to_string(b.data_offset) + " of " + data +
                      (ec ? " (missing)" : " (" + std::to_string(data_size) + " bytes)"));
  } catch (const json::exception& e) {
    throw Error(path + ": not a kora CUDA job (" + e.what() + ")");
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return job;
}

std::string cuda_results_header(const std::string& job_id, const CudaDeviceInfo& d) {
  return json({{"job", job_id},
               {"device",
                {{"name", d.name},
                 {"arch", d.arch},
                 {"sms", d.sms},
                 {"driver", d.driver},
                 {"l2_bytes", d.l2_bytes},
                 {"cublas", d.cublas},
                 {"cudnn", d.cudnn}}}})
      .dump();
}

std::string cuda_result_line(const CudaResult& r) {
  json probes = json::array();
  for (const CudaProbe& p : r.probes) {
    json values = json::array();
    for (double v : p.values) values.push_back(number_json(v));
    probes.push_back({{"count", p.count},
                      {"sum_squares", number_json(p.sum_squares)},
                      {"nonfinite", p.nonfinite},
                      {"values", values}});
  }
  json j = {{"signature", hex64(r.signature)}, {"schedule", r.schedule}};
  if (!r.error.empty()) {
    j["error"] = r.error;
  } else {
    j["median_ms"] = r.median_ms;
    j["spread_ms"] = r.spread_ms;
    j["samples"] = r.samples;
    j["probes"] = probes;
  }
  return j.dump();
}

CudaResults read_cuda_results(const std::string& dir) {
  const std::string path = cuda_results_file(dir);
  std::istringstream in(read_file(path));
  CudaResults out;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      if (in.peek() == EOF) break;  // a killed worker's last line
      throw Error(path + ": a line is not JSON: " + line.substr(0, 80));
    }
    try {
      const int kMaxInt = 0x7fffffff;
      if (header) {
        out.job_id = j.at("job").get<std::string>();
        const json& d = j.at("device");
        out.device = {
            d.at("name").get<std::string>(),
            d.at("arch").get<std::string>(),
            static_cast<int>(cuda_json_int(d, "sms", 0, kMaxInt)),
            static_cast<int>(cuda_json_int(d, "driver", 0, kMaxInt)),
            cuda_json_int(d, "l2_bytes", 0, std::numeric_limits<int64_t>::max()),
            d.contains("cublas") ? static_cast<int>(cuda_json_int(d, "cublas", 0, kMaxInt)) : 0,
            d.contains("cudnn") ? static_cast<int>(cuda_json_int(d, "cudnn", 0, kMaxInt)) : 0};
        header = false;
        continue;
      }
      if (j.contains("job")) continue;  // a restarted worker's header
      CudaResult r;
      r.signature = cuda_parse_hex64(j.at("signature").get<std::string>(), "signature");
      r.schedule = j.at("schedule").get<std::string>();
      if (j.contains("error")) {
        r.error = j.at("error").get<std::string>();
      } else {
        // A time is a cost in the database: finite and not negative, or the line is bad.
        r.median_ms = cuda_json_finite(j, "median_ms");
        r.spread_ms = cuda_json_finite(j, "spread_ms");
        if (r.median_ms < 0 || r.spread_ms < 0) throw Error("a negative time");
        r.samples = static_cast<int>(cuda_json_int(j, "samples", 1, kMaxInt));
        for (const json& jp : j.at("probes")) {
          CudaProbe p;
          p.count = cuda_json_int(jp, "count", 0, kCudaMaxBufferElements);
          p.sum_squares = number_of(jp.at("sum_squares"));
          p.nonfinite = cuda_json_int(jp, "nonfinite", 0, p.count);
          const json& values = jp.at("values");
          if (!values.is_array() ||
              values.size() != static_cast<size_t>(std::min<int64_t>(p.count, CudaProbe::kPoints)))
            throw Error("a probe's values are not min(count, " +
                        std::to_string(CudaProbe::kPoints) + ") numbers");
          for (const json& v : values) p.values.push_back(number_of(v));
          r.probes.push_back(std::move(p));
        }
      }
      out.results.push_back(std::move(r));
    } catch (const json::exception& e) {
      throw Error(path + ": not a kora CUDA results line (" + e.what() +
                  "): " + line.substr(0, 80));
    } catch (const Error& e) {
      throw Error(path + ": not a kora CUDA results line (" + e.what() +
                  "): " + line.substr(0, 80));
    }
  }
  if (header) throw Error(path + ": no results header (the worker wrote nothing)");
  return out;
}

void cuda_job_fill(const CudaJobBuffer& b, const std::string& data, void* out) {
  const int64_t bytes = b.bytes();
  if (b.fill == CudaFill::kZero) {
    std::memset(out, 0, static_cast<size_t>(bytes));
    return;
  }
  if (b.fill == CudaFill::kData) {
    if (b.data_offset < 0 || b.data_offset > static_cast<int64_t>(data.size()) ||
        bytes > static_cast<int64_t>(data.size()) - b.data_offset)
      throw Error("CUDA job: a buffer's data lies outside data.bin");
    std::memcpy(out, data.data() + b.data_offset, static_cast<size_t>(bytes));
    return;
  }
  const uint64_t base = splitmix64(b.seed);
  if (b.dtype == "float32") {
    auto* f = static_cast<float*>(out);
    for (int64_t i = 0; i < b.count; ++i)  // 24 random bits -> [-1, 1)
      f[i] = static_cast<float>(static_cast<int32_t>(splitmix64(base + i) >> 40) - (1 << 23)) /
             static_cast<float>(1 << 23);
  } else if (b.dtype == "bool") {
    auto* c = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < b.count; ++i) c[i] = splitmix64(base + i) >> 63;
  } else {
    std::memset(out, 0, static_cast<size_t>(bytes));  // integers: 0 indexes any axis
  }
}

int64_t cuda_probe_position(int k, int64_t count) {
  if (count <= CudaProbe::kPoints) return k;
  return static_cast<int64_t>(splitmix64(0x70726f6265ull + k) % static_cast<uint64_t>(count));
}

CudaProbe cuda_probe(const std::string& dtype, const void* elements, int64_t count) {
  if (dtype == "float32") return probe_of(static_cast<const float*>(elements), count);
  if (dtype == "int64") return probe_of(static_cast<const int64_t*>(elements), count);
  if (dtype == "int32") return probe_of(static_cast<const int32_t*>(elements), count);
  if (dtype == "bool") return probe_of(static_cast<const uint8_t*>(elements), count);
  throw Error("CUDA probe: unsupported dtype '" + dtype + "'");
}

std::string compare_cuda_probes(const CudaProbe& got, const CudaProbe& want, double tolerance) {
  if (got.count != want.count || got.values.size() != want.values.size())
    return "probe of " + std::to_string(got.count) + " elements, the reference's " +
           std::to_string(want.count);
  if (got.nonfinite != want.nonfinite)
    return std::to_string(got.nonfinite) + " elements not finite, the reference's " +
           std::to_string(want.nonfinite);
  ElementComparison c;
  for (size_t k = 0; k < want.values.size(); ++k)
    c.add(cuda_probe_position(static_cast<int>(k), want.count), got.values[k], want.values[k]);
  const std::string failure = comparison_failure(c, tolerance, "probed elements:", "reference");
  if (!failure.empty()) return failure;
  const double sums =
      std::abs(got.sum_squares - want.sum_squares) / std::max(want.sum_squares, 1e-30);
  if (got.sum_squares != want.sum_squares && sums > 3 * tolerance) {
    std::ostringstream os;
    os << "sum of squares " << got.sum_squares << ", the reference's " << want.sum_squares;
    return os.str();
  }
  return "";
}

}  // namespace kora
