// How one CUDA kernel is launched (src/cuda/kernel_spec.h): its buffers' sizes, the cuBLAS
// call of a GEMM, the operands of a library call, and a kernel <-> its JSON object, as a
// measuring job's job.json and a CUDA artifact's manifest.json hold it. Shared by kora, the
// runtime and the standalone worker, so it uses nothing of kora but kora::Error
// (nlohmann-json is header-only).
#include "cuda/kernel_spec.h"

#include <algorithm>
#include <initializer_list>
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
  b.count = j.at("count").get<int64_t>();
  if (b.count < 0) throw Error("CUDA job: negative element count");
  b.fill = fill_of(j.at("fill").get<std::string>());
  if (b.fill == CudaFill::kRandom) b.seed = std::stoull(j.at("seed").get<std::string>());
  if (b.fill == CudaFill::kData) b.data_offset = j.at("offset").get<int64_t>();
  return b;
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

}  // namespace

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
