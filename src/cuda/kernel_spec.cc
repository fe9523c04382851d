// How one CUDA kernel is launched (src/cuda/kernel_spec.h): its buffers' sizes, the cuBLAS
// call of a GEMM, the operands of a library call, and a kernel <-> its JSON object, as a
// measuring job's job.json and a CUDA artifact's manifest.json hold it. Shared by kora, the
// runtime and the standalone worker, so it uses nothing of kora but kora::Error
// (nlohmann-json is header-only).
#include "cuda/kernel_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

#include "base/fnv_hash.h"
#include "kora/error.h"

namespace kora {
namespace {

using json = nlohmann::json;

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
  b.count = cuda_json_int(j, "count", 0, kCudaMaxBufferElements);
  b.fill = fill_of(j.at("fill").get<std::string>());
  if (b.fill == CudaFill::kRandom) b.seed = cuda_parse_u64(j.at("seed").get<std::string>(), "seed");
  // data.bin's size is checked by the job's reader (read_cuda_job).
  if (b.fill == CudaFill::kData)
    b.data_offset = cuda_json_int(j, "offset", 0, std::numeric_limits<int64_t>::max());
  return b;
}

// Dims of a convolution: each in [lo, 2^31 - 1] (cuDNN's int).
std::vector<int64_t> dims_of(const json& j, const char* key, int64_t lo) {
  const json& v = j.at(key);
  if (!v.is_array() || v.size() > 8)
    throw Error(std::string(key) + " is not a list of at most 8 numbers");
  std::vector<int64_t> out;
  for (const json& e : v) {
    if (!e.is_number_integer()) throw Error(std::string(key) + " holds a non-integer");
    const int64_t d = e.is_number_unsigned() && e.get<uint64_t>() > 0x7fffffffull
                          ? int64_t{0x80000000}
                          : e.get<int64_t>();
    if (d < lo || d > 0x7fffffff) throw Error(std::string(key) + " holds " + e.dump());
    out.push_back(d);
  }
  return out;
}

// A GEMM of job.json: an object; or, in a manifest written before cuBLASLt, 8 numbers
// (batch, m, n, k, the 3 batch strides, A's read) with "tf32" beside them.
CudaGemm gemm_of(const json& jk) {
  const json& j = jk.at("gemm");
  CudaGemm g;
  if (j.is_array()) {
    if (j.size() != 8) throw Error("a gemm needs 8 numbers, the last 0 or 1");
    std::vector<int64_t> v;
    for (const json& e : j) {
      const bool fits = e.is_number_unsigned()  ? e.get<uint64_t>() <= (1ull << 40)
                        : e.is_number_integer() ? e.get<int64_t>() >= -(int64_t{1} << 40) &&
                                                      e.get<int64_t>() <= (int64_t{1} << 40)
                                                : false;
      if (!fits) throw Error("a gemm's numbers are not integers within 2^40");
      v.push_back(e.get<int64_t>());
    }
    if (v[7] != 0 && v[7] != 1) throw Error("a gemm needs 8 numbers, the last 0 or 1");
    g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
    g.read_a = static_cast<int>(v[7]);
    g.read_b = 1 - g.read_a;
    g.tf32 = jk.at("tf32").get<bool>();
    return g;
  }
  const int64_t big = int64_t{1} << 40;  // a tensor's most elements (the frontend's limit)
  auto get = [&j, big](const char* name, auto* field) {
    using T = std::remove_pointer_t<decltype(field)>;
    if constexpr (std::is_same_v<T, bool>)
      *field = j.at(name).get<bool>();
    else if constexpr (std::is_same_v<T, int>)
      *field = static_cast<int>(cuda_json_int(j, name, -1, 1 << 20));
    else
      *field = cuda_json_int(j, name, -big, big);
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
  const double alpha = cuda_json_finite(j, "alpha");
  if (std::abs(alpha) > 3e38) throw Error("a gemm's alpha is not a float");
  g.alpha = static_cast<float>(alpha);
  if (g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0)
    throw Error("a gemm's stride is negative");
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1 || g.ld_a < 0 || g.ld_b < 0 ||
      g.lda() < (g.trans_a ? g.m : g.k) || g.ldb() < (g.trans_b ? g.k : g.n) || g.algo < -1)
    throw Error("a gemm's sizes do not agree");
  if (g.fused() && g.algo < 0) throw Error("a gemm's epilogue needs a cuBLASLt algorithm");
  return g;
}

}  // namespace

int64_t cuda_json_int(const json& j, const char* key, int64_t lo, int64_t hi) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw Error(std::string(key) + " is not an integer");
  // nlohmann holds a non-negative integer as uint64: compared as such, never converted first
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                                                     static_cast<int64_t>(v.get<uint64_t>()) >= lo
                                               : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!in_range)
    throw Error(std::string(key) + " " + v.dump() + " is not in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return v.get<int64_t>();
}

double cuda_json_finite(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number()) throw Error(std::string(key) + " is not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw Error(std::string(key) + " is not finite");
  return d;
}

namespace {
uint64_t parse_u64(const std::string& text, const char* what, int base, size_t max_digits) {
  const char* digits = base == 16 ? "0123456789abcdefABCDEF" : "0123456789";
  if (text.empty() || text.size() > max_digits ||
      text.find_first_not_of(digits) != std::string::npos)
    throw Error(std::string(what) + " '" + text.substr(0, 40) + "' is not a " +
                (base == 16 ? "hex" : "decimal") + " number of 64 bits");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
  if (errno == ERANGE)
    throw Error(std::string(what) + " '" + text + "' is not a number of 64 bits");
  return v;
}
}  // namespace

uint64_t cuda_parse_hex64(const std::string& text, const char* what) {
  return parse_u64(text, what, 16, 16);
}
uint64_t cuda_parse_u64(const std::string& text, const char* what) {
  return parse_u64(text, what, 10, 20);
}

int64_t CudaJobBuffer::bytes() const { return count * static_cast<int64_t>(element_size(dtype)); }

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

json cuda_job_kernel_to_json(const CudaJobKernel& k) {
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

CudaJobKernel cuda_job_kernel_of_json(const json& jk, size_t programs) {
  CudaJobKernel k;
  k.signature = cuda_parse_hex64(jk.at("signature").get<std::string>(), "signature");
  k.schedule = jk.at("schedule").get<std::string>();
  k.program = static_cast<int>(cuda_json_int(jk, "program", -1, 0x7fffffff));
  if (jk.contains("library")) {
    k.library = jk.at("library").get<std::string>();
    if (k.library == "cudnn_conv") {
      const json& c = jk.at("conv");
      CudaConv& v = k.conv;
      v.x = dims_of(c, "x", 1);
      v.w = dims_of(c, "w", 1);
      v.y = dims_of(c, "y", 1);
      v.pads = dims_of(c, "pads", 0);
      v.strides = dims_of(c, "strides", 1);
      v.dilations = dims_of(c, "dilations", 1);
      v.group = cuda_json_int(c, "group", 1, 0x7fffffff);
      v.algo = static_cast<int>(cuda_json_int(c, "algo", 0, 1 << 20));
      v.read_x = static_cast<int>(cuda_json_int(c, "read_x", -1, 1 << 20));
      v.read_w = static_cast<int>(cuda_json_int(c, "read_w", -1, 1 << 20));
      v.read_bias = static_cast<int>(cuda_json_int(c, "read_bias", -1, 1 << 20));
      v.read_z = static_cast<int>(cuda_json_int(c, "read_z", -1, 1 << 20));
      v.relu = c.at("relu").get<bool>();
      v.tf32 = c.at("tf32").get<bool>();
      if (v.x.size() < 3 || v.w.size() != v.x.size() || v.y.size() != v.x.size() ||
          v.pads.size() != v.x.size() - 2 || v.strides.size() != v.x.size() - 2 ||
          v.dilations.size() != v.x.size() - 2)
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
  for (const json& l : jk.at("launches"))  // CUDA's limits: grid.x < 2^31, 1024 threads
    k.launches.push_back({l.at("function").get<std::string>(),
                          cuda_json_int(l, "grid", 1, 0x7fffffff),
                          static_cast<int>(cuda_json_int(l, "block", 1, 1024))});
  return k;
}

std::string cuda_job_kernel_json(const CudaJobKernel& kernel) {
  return cuda_job_kernel_to_json(kernel).dump();
}

CudaJobKernel cuda_job_kernel_from_json(const std::string& text, size_t programs) {
  try {
    return cuda_job_kernel_of_json(json::parse(text), programs);
  } catch (const json::exception& e) {
    throw Error(std::string("not a CUDA kernel (") + e.what() + ")");
  }
}

}  // namespace kora
