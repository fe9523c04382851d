// The CUDA measuring job's files (src/cuda/job.h): CudaJob <-> DIR/job.json,
// results lines <-> DIR/results.jsonl, the inputs' generator and the outputs' probes.
// Shared by kora and the standalone worker, so it uses nothing of kora but kora::Error and
// the correctness rule (src/base/compare.cc; nlohmann-json is header-only).
#include "cuda/job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
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

size_t element_size(const std::string& dtype) {
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "int64") return 8;
  if (dtype == "bool") return 1;
  throw Error("CUDA job: unsupported dtype '" + dtype + "'");
}

const char* fill_name(CudaFill f) {
  switch (f) {
    case CudaFill::kRandom:
      return "random";
    case CudaFill::kZero:
      return "zero";
    case CudaFill::kData:
      return "data";
  }
  return "?";
}

CudaFill fill_of(const std::string& name) {
  if (name == "random") return CudaFill::kRandom;
  if (name == "zero") return CudaFill::kZero;
  if (name == "data") return CudaFill::kData;
  throw Error("CUDA job: unknown fill '" + name + "'");
}

json buffer_json(const CudaJobBuffer& b) {
  json j = {{"dtype", b.dtype}, {"count", b.count}, {"fill", fill_name(b.fill)}};
  if (b.fill == CudaFill::kRandom) j["seed"] = std::to_string(b.seed);
  if (b.fill == CudaFill::kData) j["offset"] = b.data_offset;
  return j;
}

CudaJobBuffer buffer_of(const json& j) {
  CudaJobBuffer b;
  b.dtype = j.at("dtype").get<std::string>();
  element_size(b.dtype);
  b.count = j.at("count").get<int64_t>();
  if (b.count < 0) throw Error("CUDA job: negative element count");
  b.fill = fill_of(j.at("fill").get<std::string>());
  if (b.fill == CudaFill::kRandom) b.seed = std::stoull(j.at("seed").get<std::string>());
  if (b.fill == CudaFill::kData) b.data_offset = j.at("offset").get<int64_t>();
  return b;
}

// The job's content (id excluded), for its id.
json kernel_json(const CudaJobKernel& k) {
  json reads = json::array(), writes = json::array(), launches = json::array();
  for (const CudaJobBuffer& b : k.reads) reads.push_back(buffer_json(b));
  for (const CudaJobBuffer& b : k.writes) writes.push_back(buffer_json(b));
  for (const CudaJobLaunch& l : k.launches)
    launches.push_back({{"function", l.function}, {"grid", l.grid}, {"block", l.block}});
  json jk = {{"signature", hex64(k.signature)},
             {"schedule", k.schedule},
             {"program", k.program},
             {"name", k.name},
             {"reads", reads},
             {"writes", writes},
             {"launches", launches}};
  if (!k.library.empty()) jk["library"] = k.library;
  if (k.library == "cublas_gemm") {
    const CudaGemm& g = k.gemm;
    jk["gemm"] = {{"batch", g.batch},
                  {"m", g.m},
                  {"n", g.n},
                  {"k", g.k},
                  {"stride_a", g.stride_a},
                  {"stride_b", g.stride_b},
                  {"stride_c", g.stride_c},
                  {"ld_a", g.ld_a},
                  {"ld_b", g.ld_b},
                  {"trans_a", g.trans_a},
                  {"trans_b", g.trans_b},
                  {"read_a", g.read_a},
                  {"read_b", g.read_b},
                  {"alpha", g.alpha},
                  {"read_bias", g.read_bias},
                  {"read_c", g.read_c},
                  {"relu", g.relu},
                  {"algo", g.algo},
                  {"tf32", g.tf32}};
  } else if (k.library == "cudnn_conv") {
    const CudaConv& c = k.conv;
    jk["conv"] = {{"x", c.x},
                  {"w", c.w},
                  {"y", c.y},
                  {"pads", c.pads},
                  {"strides", c.strides},
                  {"dilations", c.dilations},
                  {"group", c.group},
                  {"algo", c.algo},
                  {"read_x", c.read_x},
                  {"read_w", c.read_w},
                  {"read_bias", c.read_bias},
                  {"read_z", c.read_z},
                  {"relu", c.relu},
                  {"tf32", c.tf32}};
  }
  return jk;
}

json job_json(const CudaJob& job) {
  json kernels = json::array();
  for (const CudaJobKernel& k : job.kernels) kernels.push_back(kernel_json(k));
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
  throw Error("CUDA results: bad number '" + s + "'");
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

// A GEMM of job.json: an object; or, in a manifest written before cuBLASLt, 8 numbers
// (batch, m, n, k, the 3 batch strides, A's read) with "tf32" beside them.
CudaGemm gemm_of(const json& jk) {
  const json& j = jk.at("gemm");
  CudaGemm g;
  if (j.is_array()) {
    const std::vector<int64_t> v = j.get<std::vector<int64_t>>();
    if (v.size() != 8 || (v[7] != 0 && v[7] != 1))
      throw Error("a gemm needs 8 numbers, the last 0 or 1");
    g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
    g.read_a = static_cast<int>(v[7]);
    g.read_b = 1 - g.read_a;
    g.tf32 = jk.at("tf32").get<bool>();
    return g;
  }
  auto get = [&j](const char* name, auto* field) {
    *field = j.at(name).get<std::remove_pointer_t<decltype(field)>>();
  };
  for (auto [name, field] :
       std::initializer_list<std::pair<const char*, int64_t*>>{{"batch", &g.batch},
                                                               {"m", &g.m},
                                                               {"n", &g.n},
                                                               {"k", &g.k},
                                                               {"stride_a", &g.stride_a},
                                                               {"stride_b", &g.stride_b},
                                                               {"stride_c", &g.stride_c},
                                                               {"ld_a", &g.ld_a},
                                                               {"ld_b", &g.ld_b}})
    get(name, field);
  for (auto [name, field] :
       std::initializer_list<std::pair<const char*, int*>>{{"read_a", &g.read_a},
                                                           {"read_b", &g.read_b},
                                                           {"read_bias", &g.read_bias},
                                                           {"read_c", &g.read_c},
                                                           {"algo", &g.algo}})
    get(name, field);
  for (auto [name, field] : std::initializer_list<std::pair<const char*, bool*>>{
           {"trans_a", &g.trans_a}, {"trans_b", &g.trans_b}, {"relu", &g.relu}, {"tf32", &g.tf32}})
    get(name, field);
  g.alpha = j.at("alpha").get<float>();
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1 || g.ld_a < 0 || g.ld_b < 0 ||
      g.lda() < (g.trans_a ? g.m : g.k) || g.ldb() < (g.trans_b ? g.k : g.n) || g.algo < -1)
    throw Error("a gemm's sizes do not agree");
  if (g.fused() && g.algo < 0) throw Error("a gemm's epilogue needs a cuBLASLt algorithm");
  return g;
}

// A kernel of job.json (or of a CUDA artifact's manifest); `programs`: how many there are.
CudaJobKernel kernel_of(const json& jk, size_t programs) {
  CudaJobKernel k;
  k.signature = std::stoull(jk.at("signature").get<std::string>(), nullptr, 16);
  k.schedule = jk.at("schedule").get<std::string>();
  k.program = jk.at("program").get<int>();
  if (jk.contains("library")) {
    k.library = jk.at("library").get<std::string>();
    if (k.library == "cudnn_conv") {
      const json& c = jk.at("conv");
      CudaConv& v = k.conv;
      v.x = c.at("x").get<std::vector<int64_t>>();
      v.w = c.at("w").get<std::vector<int64_t>>();
      v.y = c.at("y").get<std::vector<int64_t>>();
      v.pads = c.at("pads").get<std::vector<int64_t>>();
      v.strides = c.at("strides").get<std::vector<int64_t>>();
      v.dilations = c.at("dilations").get<std::vector<int64_t>>();
      v.group = c.at("group").get<int64_t>();
      v.algo = c.at("algo").get<int>();
      v.read_x = c.at("read_x").get<int>();
      v.read_w = c.at("read_w").get<int>();
      v.read_bias = c.at("read_bias").get<int>();
      v.read_z = c.at("read_z").get<int>();
      v.relu = c.at("relu").get<bool>();
      v.tf32 = c.at("tf32").get<bool>();
      const size_t spatial = v.x.size() - 2;
      if (v.x.size() < 3 || v.w.size() != v.x.size() || v.y.size() != v.x.size() ||
          v.pads.size() != spatial || v.strides.size() != spatial ||
          v.dilations.size() != spatial || v.group < 1)
        throw Error("a convolution's dims do not agree");
    } else if (k.library != "cublas_gemm") {
      throw Error("unknown library '" + k.library + "'");
    } else {
      k.gemm = gemm_of(jk);
    }
  } else if (k.program < 0 || k.program >= static_cast<int>(programs))
    throw Error("kernel " + hex64(k.signature) + " names program " + std::to_string(k.program) +
                " of " + std::to_string(programs));
  k.name = jk.at("name").get<std::string>();
  for (const json& b : jk.at("reads")) k.reads.push_back(buffer_of(b));
  for (const json& b : jk.at("writes")) k.writes.push_back(buffer_of(b));
  for (const json& l : jk.at("launches"))
    k.launches.push_back({l.at("function").get<std::string>(), l.at("grid").get<int64_t>(),
                          l.at("block").get<int>()});
  return k;
}

}  // namespace

int64_t CudaJobBuffer::bytes() const { return count * static_cast<int64_t>(element_size(dtype)); }

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
    job.measure.warmup = m.at("warmup").get<int>();
    job.measure.min_samples = m.at("min_samples").get<int>();
    job.measure.max_samples = m.at("max_samples").get<int>();
    job.measure.max_seconds = m.at("max_seconds").get<double>();
    job.measure.stable_within = m.at("stable_within").get<double>();
    job.measure.slow_ms = m.at("slow_ms").get<double>();
    job.measure.abandon_ms = m.at("abandon_ms").get<double>();
    job.programs = j.at("programs").get<std::vector<std::string>>();
    for (const json& jk : j.at("kernels"))
      job.kernels.push_back(kernel_of(jk, job.programs.size()));
    job.id = j.at("id").get<std::string>();
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
      if (header) {
        out.job_id = j.at("job").get<std::string>();
        const json& d = j.at("device");
        out.device = {d.at("name").get<std::string>(),
                      d.at("arch").get<std::string>(),
                      d.at("sms").get<int>(),
                      d.at("driver").get<int>(),
                      d.at("l2_bytes").get<int64_t>(),
                      d.value("cublas", 0),
                      d.value("cudnn", 0)};
        header = false;
        continue;
      }
      if (j.contains("job")) continue;  // a restarted worker's header
      CudaResult r;
      r.signature = std::stoull(j.at("signature").get<std::string>(), nullptr, 16);
      r.schedule = j.at("schedule").get<std::string>();
      if (j.contains("error")) {
        r.error = j.at("error").get<std::string>();
      } else {
        r.median_ms = j.at("median_ms").get<double>();
        r.spread_ms = j.at("spread_ms").get<double>();
        r.samples = j.at("samples").get<int>();
        for (const json& jp : j.at("probes")) {
          CudaProbe p;
          p.count = jp.at("count").get<int64_t>();
          p.sum_squares = number_of(jp.at("sum_squares"));
          p.nonfinite = jp.at("nonfinite").get<int64_t>();
          for (const json& v : jp.at("values")) p.values.push_back(number_of(v));
          r.probes.push_back(std::move(p));
        }
      }
      out.results.push_back(std::move(r));
    } catch (const json::exception& e) {
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
    if (b.data_offset < 0 || b.data_offset + bytes > static_cast<int64_t>(data.size()))
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

std::string cuda_library_operands_problem(const std::vector<int>& operands, size_t reads) {
  size_t given = 0;
  for (size_t k = 0; k < operands.size(); ++k) {
    const int i = operands[k];
    if (i < 0 && k >= 2) continue;  // an absent bias or residual
    if (i < 0 || i >= static_cast<int>(reads) ||
        std::count(operands.begin(), operands.end(), i) != 1)
      return "a library call's operands are not its distinct reads";
    ++given;
  }
  return given == reads ? "" : "a library call reads what it does not use";
}

std::vector<int> cuda_gemm_operands(const CudaGemm& g) {
  return {g.read_a, g.read_b, g.read_bias, g.read_c};
}
std::vector<int> cuda_conv_operands(const CudaConv& c) {
  return {c.read_x, c.read_w, c.read_bias, c.read_z};
}

CublasGemmCall cublas_gemm_call(const CudaGemm& g) {
  const int64_t limit = 0x7fffffff;
  for (int64_t v : {g.batch, g.m, g.n, g.k, g.lda(), g.ldb()})
    if (v <= 0 || v > limit) throw Error("a gemm size does not fit cuBLAS's 32-bit integers");
  CublasGemmCall c;  // column-major D^T (n x m) = B^T (n x k) A^T (k x m)
  c.m = static_cast<int>(g.n);
  c.n = static_cast<int>(g.m);
  c.k = static_cast<int>(g.k);
  // cuBLAS's A: the job's B, row-major k x n (column-major n x k), or stored n x k (op T);
  // cuBLAS's B: the job's A, row-major m x k (column-major k x m), or stored k x m (op T).
  c.lda = static_cast<int>(g.ldb());
  c.ldb = static_cast<int>(g.lda());
  c.trans_a = g.trans_b;
  c.trans_b = g.trans_a;
  c.ldc = static_cast<int>(g.n);
  c.batch = static_cast<int>(g.batch);
  c.stride_a = g.stride_b;
  c.stride_b = g.stride_a;
  c.stride_c = g.stride_c;
  c.alpha = g.alpha;
  c.tf32 = g.tf32;
  return c;
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

std::string cuda_job_kernel_json(const CudaJobKernel& kernel) { return kernel_json(kernel).dump(); }

CudaJobKernel cuda_job_kernel_from_json(const std::string& text, size_t programs) {
  try {
    return kernel_of(json::parse(text), programs);
  } catch (const json::exception& e) {
    throw Error(std::string("not a CUDA kernel (") + e.what() + ")");
  }
}

}  // namespace kora
