// The CUDA measuring job (src/cuda/job.h, profile_cuda.h, worker.h) without a
// GPU: the inputs' generator and the probes against brute force; results lines round trip;
// a model's job written by compile_cuda_kernels (programs hold every launched function,
// integer constants travel as data); the job run kernel by kernel through the CUDA
// emulator (tests/cuda/emulator.h) as the worker runs it on a GPU (same buffers, same
// launches; GEMMs by cuBLAS's and cuBLASLt's textbook definition, tests/cuda/textbook_gemm.h,
// convolutions by cuDNN's, textbook_conv.h), its results checked against the reference
// interpreter and stored under the device's fingerprint; tampered results (a wrong value, a
// GPU error) stored as failed; results of another job refused; the worker program without
// a GPU (a clear message, exit status 2) and what it links (ldd); the worker program itself
// on the fake driver and cuBLAS over host memory (tests/cuda/fake_driver.cc) through a
// crashed child and a failed launch, every result merged against the reference. On a GPU:
// kora profile's whole loop with the real worker.
#include "cuda/job.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "base/read_file.h"
#include "cpu/codegen_harness.h"
#include "cpu/compile.h"
#include "cuda/codegen.h"
#include "cuda/compile_kernels.h"
#include "cuda/driver.h"
#include "cuda/emulator.h"
#include "cuda/library_plan.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/profile_cuda.h"
#include "cuda/reduce_graphs.h"
#include "cuda/textbook_conv.h"
#include "cuda/textbook_gemm.h"
#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/profile_db.h"
#include "runtime/shared_library.h"

namespace {

using namespace kora;

TEST(CudaJob, FillIsDeterministicUniformAndNeverOutOfRange) {
  CudaJobBuffer b;
  b.count = 20000;
  b.seed = 7;
  std::vector<float> x(b.count), y(b.count);
  cuda_job_fill(b, "", x.data());
  cuda_job_fill(b, "", y.data());
  EXPECT_EQ(x, y);
  double mean = 0;
  int below = 0;
  for (float v : x) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    mean += v / b.count;
    below += v < -0.5f;
  }
  EXPECT_LT(std::abs(mean), 0.03);
  EXPECT_NEAR(below, b.count / 4, b.count / 40);  // uniform: a quarter below -0.5
  b.seed = 8;
  cuda_job_fill(b, "", y.data());
  EXPECT_NE(x, y);

  CudaJobBuffer flags{"bool", 1000, CudaFill::kRandom, 3, 0};
  std::vector<uint8_t> f(1000);
  cuda_job_fill(flags, "", f.data());
  int ones = 0;
  for (uint8_t v : f) {
    ASSERT_LE(v, 1);
    ones += v;
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);

  CudaJobBuffer index{"int64", 3, CudaFill::kRandom, 3, 0};  // integers: zero, a valid index
  std::vector<int64_t> i(3, 5);
  cuda_job_fill(index, "", i.data());
  EXPECT_EQ(i, std::vector<int64_t>(3, 0));

  const std::vector<int64_t> values = {4, -1, 9};
  std::string data(16, 'x');
  data.append(reinterpret_cast<const char*>(values.data()), 24);
  CudaJobBuffer carried{"int64", 3, CudaFill::kData, 0, 16};
  cuda_job_fill(carried, data, i.data());
  EXPECT_EQ(i, values);
  carried.data_offset = 17;  // past the end of data.bin
  EXPECT_THROW(cuda_job_fill(carried, data, i.data()), Error);
}

TEST(CudaJob, ProbesCatchWhatABruteForceComparisonCatches) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> want(1000);
  for (float& v : want) v = u(rng);
  const CudaProbe ref = cuda_probe("float32", want.data(), 1000);
  ASSERT_EQ(ref.values.size(), static_cast<size_t>(CudaProbe::kPoints));
  double sum = 0;
  for (float v : want) sum += double(v) * v;
  EXPECT_NEAR(ref.sum_squares, sum, 1e-9 * sum);
  for (int k = 0; k < CudaProbe::kPoints; ++k)
    EXPECT_EQ(ref.values[k], want[cuda_probe_position(k, 1000)]);

  std::vector<float> got = want;
  EXPECT_EQ(compare_cuda_probes(cuda_probe("float32", got.data(), 1000), ref, 1e-4), "");
  got[cuda_probe_position(3, 1000)] *= 1.0f + 1e-7f;  // rounding noise passes
  EXPECT_EQ(compare_cuda_probes(cuda_probe("float32", got.data(), 1000), ref, 1e-4), "");
  got = want;
  got[cuda_probe_position(3, 1000)] += 0.1f;  // a probed element off
  EXPECT_NE(compare_cuda_probes(cuda_probe("float32", got.data(), 1000), ref, 1e-4), "");
  // An element no probe looks at, off by a lot: the sum of squares sees it.
  int unprobed = 0;
  for (bool probed = true; probed; ++unprobed) {
    probed = false;
    for (int k = 0; k < CudaProbe::kPoints; ++k) probed |= cuda_probe_position(k, 1000) == unprobed;
    if (!probed) break;
  }
  got = want;
  got[unprobed] = 3;
  EXPECT_NE(compare_cuda_probes(cuda_probe("float32", got.data(), 1000), ref, 1e-4), "");
  got = want;
  got[unprobed] = NAN;  // not finite where the reference is
  EXPECT_NE(compare_cuda_probes(cuda_probe("float32", got.data(), 1000), ref, 1e-4), "");
  EXPECT_NE(compare_cuda_probes(cuda_probe("float32", want.data(), 999), ref, 1e-4), "");

  const std::vector<int64_t> ints = {1, 2, 3};
  const std::vector<int64_t> other = {1, 2, 4};
  const CudaProbe ri = cuda_probe("int64", ints.data(), 3);
  EXPECT_EQ(ri.values, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(compare_cuda_probes(cuda_probe("int64", ints.data(), 3), ri, 0), "");
  EXPECT_NE(compare_cuda_probes(cuda_probe("int64", other.data(), 3), ri, 0), "");
}

TEST(CudaJob, ResultsRoundTripWithNonFiniteValuesAndATruncatedLine) {
  kora_test::TempDir dir;
  const CudaDeviceInfo device{"NVIDIA H100 80GB HBM3", "sm_90", 132, 12040, 52428800};
  CudaResult ok;
  ok.signature = 0xabcdef0123456789ull;
  ok.schedule = "block=128;items=2;reduce=warp";
  ok.median_ms = 0.0125;
  ok.spread_ms = 0.001;
  ok.samples = 25;
  ok.probes.push_back({3, 2.5, 2, {1.5, NAN, -INFINITY}});
  CudaResult bad;
  bad.signature = 42;
  bad.schedule = "default";
  bad.error = "cuCtxSynchronize failed: an illegal memory access was encountered";
  {
    std::ofstream out(cuda_results_file(dir.path().string()));
    out << cuda_results_header("0123", device) << "\n"
        << cuda_result_line(ok) << "\n"
        << cuda_results_header("0123", device) << "\n"  // a restarted worker's header
        << cuda_result_line(bad) << "\n"
        << cuda_result_line(ok).substr(0, 30);  // killed mid-line
  }
  const CudaResults r = read_cuda_results(dir.path().string());
  EXPECT_EQ(r.job_id, "0123");
  EXPECT_EQ(r.device.name, device.name);
  EXPECT_EQ(r.device.sms, 132);
  EXPECT_EQ(r.device.l2_bytes, device.l2_bytes);
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].signature, ok.signature);
  EXPECT_EQ(r.results[0].schedule, ok.schedule);
  EXPECT_DOUBLE_EQ(r.results[0].median_ms, 0.0125);
  EXPECT_EQ(r.results[0].samples, 25);
  ASSERT_EQ(r.results[0].probes.size(), 1u);
  EXPECT_EQ(r.results[0].probes[0].values[0], 1.5);
  EXPECT_TRUE(std::isnan(r.results[0].probes[0].values[1]));
  EXPECT_EQ(r.results[0].probes[0].values[2], -INFINITY);
  EXPECT_EQ(r.results[1].error, bad.error);

  std::ofstream(cuda_results_file(dir.path().string())) << "{\"nothing\": 1}\n";
  EXPECT_THROW(read_cuda_results(dir.path().string()), Error);
  std::filesystem::remove(cuda_results_file(dir.path().string()));
  EXPECT_THROW(read_cuda_results(dir.path().string()), Error);
  EXPECT_THROW(read_cuda_job(dir.path().string()), Error);
}

// A hostile or corrupt job.json or results.jsonl (issue 25, fuzz/cuda_job_fuzzer.cc): one
// kora::Error naming the file and the field, never another exception, a float converted to
// an int out of range, a size that overflows or a cost that is not a time.
TEST(CudaJob, HostileJobsAndResultsAreOneClearError) {
  kora_test::TempDir tmp;
  const std::string dir = tmp.path().string();
  std::ofstream(cuda_data_file(dir), std::ios::binary) << std::string(64, 'x');
  CudaJobKernel k;
  k.signature = 0xab;
  k.schedule = "default";
  k.program = 0;
  k.name = "Add";
  k.reads.push_back({"int64", 4, CudaFill::kData, 0, 8});  // bytes 8..40 of 64
  k.writes.push_back({"float32", 16, CudaFill::kZero});
  k.launches.push_back({"k0", 1, 32});
  CudaJob job;
  job.arch = "sm_90";
  job.programs = {"program_0.cubin"};
  job.kernels = {k};
  write_cuda_job(dir, job);
  ASSERT_EQ(read_cuda_job(dir).kernels.size(), 1u);
  const std::string good = read_file(cuda_job_file(dir));

  // `from` in job.json replaced by `to`: the error names the file and says `what`.
  auto job_error = [&](const std::string& from, const std::string& to, const std::string& what) {
    std::string text = good;
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(cuda_job_file(dir)) << text;
    try {
      read_cuda_job(dir);
      ADD_FAILURE() << "accepted " << to;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cuda_job_file(dir)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  job_error("\"00000000000000ab\"", "\"zz\"", "signature 'zz' is not a hex number");
  job_error("\"00000000000000ab\"", "\"1234567890abcdef0\"", "not a hex number of 64 bits");
  job_error("\"program\": 0", "\"program\": 1e300", "program is not an integer");
  job_error("\"program\": 0", "\"program\": 4294967296", "program 4294967296 is not in");
  job_error("\"count\": 4", "\"count\": 9223372036854775807", "count");
  job_error("\"count\": 16", "\"count\": -1", "count -1 is not in");
  job_error("\"offset\": 8", "\"offset\": 9223372036854775800", "bytes at offset");
  job_error("\"offset\": 8", "\"offset\": 40", "(64 bytes)");  // 40 + 32 > 64
  job_error("\"grid\": 1", "\"grid\": 0", "grid 0 is not in");
  job_error("\"block\": 32", "\"block\": 4096", "block 4096 is not in");
  job_error("\"max_samples\": 100", "\"max_samples\": 1", "max_samples 1 is not in");
  job_error("\"warmup\": 3", "\"warmup\": 1e10", "warmup is not an integer");
  job_error("\"program_0.cubin\"", "\"../../etc/passwd\"", "is not a file name");
  std::filesystem::remove(cuda_data_file(dir));
  job_error("\"offset\": 8", "\"offset\": 0", "(missing)");

  const CudaDeviceInfo device{"GPU", "sm_90", 132, 12040, 52428800};
  CudaResult ok;
  ok.signature = 0xab;
  ok.schedule = "default";
  ok.median_ms = 0.5;
  ok.samples = 10;
  ok.probes.push_back({3, 2.5, 0, {1.0, 1.0, 0.5}});
  const std::string line = cuda_result_line(ok);
  auto results_error = [&](const std::string& from, const std::string& to,
                           const std::string& what) {
    std::string text = line;
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(cuda_results_file(dir)) << cuda_results_header("0123", device) << "\n"
                                          << text << "\n"
                                          << line << "\n";
    try {
      read_cuda_results(dir);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cuda_results_file(dir)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  results_error("\"00000000000000ab\"", "\"-1\"", "signature '-1' is not a hex number");
  results_error("\"median_ms\":0.5", "\"median_ms\":-0.5", "a negative time");
  results_error("\"median_ms\":0.5", "\"median_ms\":\"inf\"", "median_ms is not a number");
  results_error("\"samples\":10", "\"samples\":1e300", "samples is not an integer");
  results_error("\"nonfinite\":0", "\"nonfinite\":4", "nonfinite 4 is not in [0, 3]");
  results_error("[1.0,1.0,0.5]", "[1.0]", "a probe's values are not min(count, 64) numbers");
  results_error("[1.0,1.0,0.5]", "[1.0,1.0,\"x\"]", "bad number 'x'");
}

// softmax(x * float(w)) over rows, w an int64 constant (carried as data), plus w == 0;
// batched matrix products (cuBLAS): [2,3,5] x [1,5,4] (B broadcast), [2,3,5] x [2,5,4],
// and [2,1,3,5] x [1,2,5,4], whose batch dims broadcast both ways (no cuBLAS call).
PrimGraph job_graph() {
  std::mt19937 rng(11);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const Shape s = {6, 40};
  const auto [w, out] = kora_cuda_test::weighted_softmax(b);
  const std::string zero = b.prim(
      ElementwiseAttrs{ScalarOp::kEqual, {Operand{0, 0}, Operand{-1, 0}}}, {w}, DType::kBool, s);
  const std::string xa = b.input(F, {2, 3, 5});
  const std::string p1 =
      b.prim(LinearAttrs{MatMulAttrs{}}, {xa, b.input(F, {1, 5, 4}, true)}, F, {2, 3, 4});
  const std::string p2 =
      b.prim(LinearAttrs{MatMulAttrs{}}, {xa, b.input(F, {2, 5, 4}, true)}, F, {2, 3, 4});
  const std::string p3 =
      b.prim(LinearAttrs{MatMulAttrs{}}, {b.input(F, {2, 1, 3, 5}), b.input(F, {1, 2, 5, 4})}, F,
             {2, 2, 3, 4});
  // Convolutions (cuDNN): grouped and strided; asymmetric padding (no cuDNN call).
  ConvAttrs conv;
  conv.group = 2;
  conv.strides = {2, 2};
  conv.dilations = {1, 1};
  conv.pads_begin = conv.pads_end = {1, 1};
  const std::string x4 = b.input(F, {1, 4, 7, 7});
  const std::string c1 =
      b.prim(LinearAttrs{conv}, {x4, b.input(F, {6, 2, 3, 3}, true)}, F, {1, 6, 4, 4});
  ConvAttrs lopsided{1, {1, 1}, {1, 1}, {0, 0}, {1, 1}};
  const std::string c2 =
      b.prim(LinearAttrs{lopsided}, {x4, b.input(F, {3, 4, 2, 2}, true)}, F, {1, 3, 7, 7});
  b.g.outputs = {out, zero, p1, p2, p3, c1, c2};
  return b.g;
}

// A job's GEMM as cuBLAS and cuBLASLt define the call that computes it
// (tests/cuda/textbook_gemm.h), with the worker's operand order: cuBLAS's A is the job's B.
void textbook_gemm(const CudaGemm& gemm, const std::vector<void*>& args, size_t reads) {
  const CublasGemmCall c = cublas_gemm_call(gemm);
  kora_cuda_test::Gemm g;
  g.m = c.m, g.n = c.n, g.k = c.k, g.batch = c.batch;
  g.trans_a = c.trans_a, g.trans_b = c.trans_b;
  g.lda = c.lda, g.ldb = c.ldb, g.ldc = g.ldd = c.ldc;
  g.stride_a = c.stride_a, g.stride_b = c.stride_b, g.stride_c = g.stride_d = c.stride_c;
  g.alpha = c.alpha, g.beta = gemm.read_c >= 0 ? 1 : 0, g.relu = gemm.relu;
  auto read = [&](int i) { return i >= 0 ? static_cast<const float*>(args[i]) : nullptr; };
  kora_cuda_test::textbook_gemm(g, read(gemm.read_b), read(gemm.read_a), read(gemm.read_c),
                                read(gemm.read_bias), static_cast<float*>(args[reads]));
}

// A job's 2-D convolution and its fused epilogue by their definition
// (tests/cuda/textbook_conv.h): y = act(conv + z + bias) (bias, z: null when none).
void textbook_conv(const CudaConv& c, const float* x, const float* w, float* y,
                   const float* bias = nullptr, const float* z = nullptr) {
  ASSERT_EQ(c.x.size(), 4u);
  kora_cuda_test::Conv2d d;
  d.n = c.x[0], d.c = c.x[1], d.h = c.x[2], d.w = c.x[3];
  d.m = c.w[0], d.kh = c.w[2], d.kw = c.w[3], d.oh = c.y[2], d.ow = c.y[3], d.groups = c.group;
  for (int i = 0; i < 2; ++i)
    d.stride[i] = c.strides[i], d.pad[i] = c.pads[i], d.dilation[i] = c.dilations[i];
  kora_cuda_test::textbook_conv2d(d, x, w, y, 1, z ? 1 : 0, z, bias, c.relu);
}

// compile_cuda_kernels' options for job_graph() in `tmp`: candidates of up to 3
// primitives, 16 kernels per program (several programs), the job in tmp/job.
CudaKernelsOptions job_options(const kora_test::TempDir& tmp) {
  CudaKernelsOptions options;
  options.cache_dir = tmp.file("cubins");
  options.candidates.max_size = 3;
  options.kernels_per_program = 16;
  options.job_dir = tmp.file("job");
  return options;
}

// What the worker does on a GPU, through the emulator: per job kernel, its buffers filled
// as the job says, its launches run by name (a cuBLAS call by textbook_gemm), its outputs
// probed; times made up (the
// kernel's index in the job, so the fastest schedule is known). Writes DIR/results.jsonl.
// The generated kernels of the job (regenerated with the job's names) as one emulated
// shared library in `cache`; its path.
std::string emulated_library(const PrimGraph& g, const CudaKernelsOptions& options,
                             const std::string& cache) {
  std::vector<CudaKernel> kernels;
  for_each_cuda_candidate(g, options, [&](const KernelDag& sub, const Candidate& c) {
    if (options.tf32 && cuda_mma_supports(g, sub, c))  // kora's tensor-core GEMM
      for (const CudaMmaTile& tile : cuda_mma_tiles())
        kernels.push_back(generate_mma_kernel(
            g, sub, c, cuda_mma_symbol(instance_signature(g, sub, c), tile), tile));
    if (!cuda_codegen_supports(g, sub, c)) return;  // a library call
    const std::vector<CudaSchedule> space = cuda_schedule_space(g, sub, c);
    for (size_t k = 0; k < space.size(); ++k)
      kernels.push_back(generate_cuda_kernel(
          g, sub, c, cuda_kernel_symbol(instance_signature(g, sub, c), k), space[k]));
  });
  CxxCompileOptions compile;
  compile.cache_dir = cache;
  compile.flags = {"-O0", "-fPIC", "-shared", "-std=c++17", "-w"};
  return cache + "/" + compile_shared(kora_cuda_test::emulated_program(kernels, g), compile).key +
         ".so";
}

void emulate_worker(const PrimGraph& g, const CudaKernelsOptions& options, const std::string& dir,
                    const std::string& cache) {
  const SharedLibrary lib(emulated_library(g, options, cache));
  using Entry = void (*)(long long, int, void**);

  const CudaJob job = read_cuda_job(dir);
  std::ifstream in(cuda_data_file(dir), std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream out(cuda_results_file(dir));
  out << cuda_results_header(job.id, {"emulator", job.arch, 1, 0, 0}) << "\n";
  for (size_t i = 0; i < job.kernels.size(); ++i) {
    const CudaJobKernel& k = job.kernels[i];
    std::vector<std::vector<char>> buffers;
    for (const CudaJobBuffer& b : k.reads) {
      buffers.emplace_back(b.bytes());
      cuda_job_fill(b, data, buffers.back().data());
    }
    for (const CudaJobBuffer& b : k.writes) buffers.emplace_back(b.bytes());
    std::vector<void*> args;
    for (auto& b : buffers) args.push_back(b.data());
    if (k.library == "cublas_gemm") textbook_gemm(k.gemm, args, k.reads.size());
    if (k.library == "cudnn_conv") {
      const CudaConv& c = k.conv;
      auto read = [&](int i) { return i >= 0 ? static_cast<const float*>(args[i]) : nullptr; };
      textbook_conv(c, read(c.read_x), read(c.read_w), static_cast<float*>(args[k.reads.size()]),
                    read(c.read_bias), read(c.read_z));
    }
    for (const CudaJobLaunch& l : k.launches)
      reinterpret_cast<Entry>(lib.symbol("kora_emu_" + l.function))(l.grid, l.block, args.data());
    CudaResult r;
    r.signature = k.signature;
    r.schedule = k.schedule;
    r.median_ms = 1 + static_cast<double>(i);
    r.samples = 10;
    for (size_t w = 0; w < k.writes.size(); ++w)
      r.probes.push_back(
          cuda_probe(k.writes[w].dtype, buffers[k.reads.size() + w].data(), k.writes[w].count));
    out << cuda_result_line(r) << "\n";
  }
}

// options.job_dir run through the emulated worker and merged into a database in `tmp`:
// every result matches the interpreter and is stored.
void emulate_and_merge(const PrimGraph& g, const CudaKernelsOptions& options,
                       const kora_test::TempDir& tmp) {
  emulate_worker(g, options, options.job_dir, tmp.file("emulated"));
  ProfileDb db(tmp.file("profiles.db"));
  const CudaMergeSummary merged = merge_cuda_results(g, options.job_dir, db, options);
  for (const ProfileFailure& f : merged.failures) ADD_FAILURE() << f.kernel << ": " << f.error;
  EXPECT_EQ(merged.stored, merged.results);
}

TEST(CudaJob, AModelsJobRunThroughTheEmulatorIsCheckedAndStored) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = job_graph();
  kora_test::TempDir tmp;
  CudaKernelsOptions options = job_options(tmp);
  const std::string dir = options.job_dir;
  const CudaKernelsSummary summary = compile_cuda_kernels(g, options);
  ASSERT_TRUE(summary.failures.empty()) << summary.failures.front().error;
  ASSERT_GT(summary.implementations, 20);
  // The third product's batch dims broadcast both ways, the second convolution's padding
  // is lopsided: neither is a library call.
  EXPECT_EQ(summary.library, 3);
  ASSERT_GT(summary.programs, 1);
  EXPECT_EQ(summary.job_kernels, summary.implementations + 2 * (1 + kCublasLtAlgos) +
                                     static_cast<int64_t>(cudnn_conv_algorithms().size()));

  // The job: every implementation; its program holds every function it launches; the
  // int64 constant travels as data, the float input is random, the same for every kernel.
  const CudaJob job = read_cuda_job(dir);
  ASSERT_EQ(static_cast<int64_t>(job.kernels.size()), summary.job_kernels);
  EXPECT_EQ(job.arch, "sm_80");
  EXPECT_EQ(job.compiler, nvrtc_version());
  EXPECT_EQ(job.codegen, cuda_codegen_revision());
  std::ifstream in(cuda_data_file(dir), std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Tensor& w = g.constants.begin()->second;
  EXPECT_EQ(data, std::string(reinterpret_cast<const char*>(w.bytes()), w.nbytes()));
  int carried = 0, gemms = 0, convs = 0;
  for (const CudaJobKernel& k : job.kernels) {
    if (k.library == "cudnn_conv") {
      EXPECT_EQ(k.schedule, "cudnn:" + std::to_string(k.conv.algo));
      EXPECT_EQ(k.conv.group, 2);
      EXPECT_EQ(k.conv.y, (std::vector<int64_t>{1, 6, 4, 4}));
      EXPECT_EQ(k.conv.pads, (std::vector<int64_t>{1, 1}));
      ++convs;
      continue;
    }
    if (k.library == "cublas_gemm") {
      EXPECT_EQ(k.schedule, k.gemm.algo < 0 ? "cublas" : "cublaslt:" + std::to_string(k.gemm.algo));
      EXPECT_FALSE(k.gemm.fused());
      EXPECT_EQ(k.gemm.batch, 2);
      EXPECT_EQ(k.gemm.stride_a, 15);
      EXPECT_TRUE(k.gemm.stride_b == 0 || k.gemm.stride_b == 20) << k.gemm.stride_b;
      EXPECT_EQ(k.gemm.stride_c, 12);
      ++gemms;
      continue;
    }
    std::ifstream cubin(dir + "/" + job.programs.at(k.program), std::ios::binary);
    const std::string image((std::istreambuf_iterator<char>(cubin)),
                            std::istreambuf_iterator<char>());
    ASSERT_FALSE(k.launches.empty());
    for (const CudaJobLaunch& l : k.launches) {
      EXPECT_NE(image.find(l.function + '\0'), std::string::npos) << l.function;
      EXPECT_GT(l.grid, 0);
    }
    for (const CudaJobBuffer& b : k.reads) {
      if (b.dtype == "int64") {
        EXPECT_EQ(b.fill, CudaFill::kData);
        EXPECT_EQ(b.data_offset, 0);
        ++carried;
      } else {
        EXPECT_EQ(b.fill, CudaFill::kRandom);
      }
    }
  }
  EXPECT_GT(carried, 0);
  EXPECT_EQ(gemms, 2 * (1 + kCublasLtAlgos));  // cuBLAS, and each of cuBLASLt's choices
  EXPECT_EQ(convs, static_cast<int>(cudnn_conv_algorithms().size()));

  // Run and stored: every result matches the interpreter; the fastest schedule per kernel
  // is the one measured first (the made-up times grow along the job).
  emulate_worker(g, options, dir, tmp.file("emulated"));
  ProfileDb db(tmp.file("profiles.db"));
  const CudaMergeSummary merged = merge_cuda_results(g, dir, db, options);
  for (const ProfileFailure& f : merged.failures) ADD_FAILURE() << f.kernel << ": " << f.error;
  EXPECT_EQ(merged.stored, static_cast<int64_t>(job.kernels.size()));
  EXPECT_EQ(merged.missing, 0);
  EXPECT_EQ(merged.device, "cuda|emulator|sm_80|1 SMs|driver 0|cublas 0|cudnn 0|" +
                               nvrtc_version() + "|" + cuda_codegen_revision());
  for (const CudaJobKernel& k : job.kernels) {
    const auto best = db.best(merged.device, k.signature);
    ASSERT_TRUE(best.has_value());
    const CudaJobKernel* first = nullptr;
    for (const CudaJobKernel& o : job.kernels)
      if (o.signature == k.signature) {
        first = &o;
        break;
      }
    EXPECT_EQ(best->schedule, first->schedule);
  }

  // Tampered: one value a little off, one kernel failed on the GPU. Both stored as failed.
  std::vector<std::string> lines;
  {
    std::ifstream r(cuda_results_file(dir));
    for (std::string line; std::getline(r, line);) lines.push_back(line);
  }
  CudaResults results = read_cuda_results(dir);
  size_t tampered = 0;
  while (results.results[tampered].probes[0].sum_squares == 0) ++tampered;
  results.results[tampered].probes[0].values[0] *= 1.01;
  results.results[tampered].probes[0].values[1] += 0.01;
  results.results[tampered + 1].error = "cuCtxSynchronize failed: an illegal memory access";
  {
    std::ofstream r(cuda_results_file(dir));
    r << lines[0] << "\n";
    for (const CudaResult& x : results.results) r << cuda_result_line(x) << "\n";
  }
  ProfileDb db2(tmp.file("profiles2.db"));
  const CudaMergeSummary again = merge_cuda_results(g, dir, db2, options);
  ASSERT_EQ(again.failures.size(), 2u);
  EXPECT_EQ(again.stored, static_cast<int64_t>(job.kernels.size()) - 2);
  EXPECT_NE(again.failures[0].error.find("wrong result"), std::string::npos)
      << again.failures[0].error;
  EXPECT_NE(again.failures[1].error.find("illegal memory access"), std::string::npos);
  for (size_t t : {tampered, tampered + 1}) {
    bool found = false;
    for (const ProfileRecord& rec : db2.records(again.device, results.results[t].signature))
      if (rec.schedule == results.results[t].schedule) {
        EXPECT_TRUE(rec.failed);
        found = true;
      }
    EXPECT_TRUE(found);
  }

  // Results of another job are refused, naming what to do.
  {
    std::ofstream r(cuda_results_file(dir));
    r << cuda_results_header("0000000000000000", {"emulator", "sm_80", 1, 0, 0}) << "\n";
  }
  try {
    merge_cuda_results(g, dir, db2, options);
    ADD_FAILURE() << "results of another job were merged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another job"), std::string::npos) << e.what();
  }
}

int run(const std::string& command, std::string* output) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) *output += buf;
  const int status = p ? pclose(p) : -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A convolution with a bias, a residual and a ReLU after it, as fission writes them: the
// candidates cuDNN's fused epilogue computes are library kernels (each read placed), and,
// run as cuDNN defines cudnnConvolutionBiasActivationForward, match the interpreter.
TEST(CudaJob, FusedConvolutionEpiloguesMatchTheInterpreter) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(4);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  ConvAttrs conv{1, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  const Shape o = {1, 6, 9, 9};
  const std::string x = b.input(F, {1, 4, 9, 9}), residual = b.input(F, o);
  const std::string c = b.prim(LinearAttrs{conv}, {x, b.input(F, {6, 4, 3, 3}, true)}, F, o);
  const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, {1, 6, 1, 1}, true)}, F, o);
  const std::string cb =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {c, bias}, F, o);
  const std::string sum = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {residual, cb}, F, o);
  const std::string y = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {sum}, F, o);
  b.g.outputs = {y};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  // Members: 0 conv, 1 bias broadcast, 2 bias add, 3 residual add, 4 relu.
  const auto fused = cuda_conv_plan(g, dag, make_candidate(dag, {0, 1, 2, 3, 4}));
  ASSERT_TRUE(fused.has_value());
  EXPECT_TRUE(fused->fused());
  EXPECT_TRUE(fused->relu);
  EXPECT_GE(fused->read_z, 0);
  const auto biased = cuda_conv_plan(g, dag, make_candidate(dag, {0, 1, 2}));
  ASSERT_TRUE(biased.has_value());
  EXPECT_FALSE(biased->relu);
  EXPECT_EQ(biased->read_z, -1);
  EXPECT_FALSE(cuda_conv_plan(g, dag, make_candidate(dag, {0, 1, 2, 4})));  // relu skips z

  kora_test::TempDir tmp;
  CudaKernelsOptions options = job_options(tmp);
  options.candidates.max_size = 5;
  const CudaKernelsSummary summary = compile_cuda_kernels(g, options);
  EXPECT_GE(summary.library, 3);  // the conv alone, with its bias, with the residual and ReLU
  emulate_and_merge(g, options, tmp);
  int fused_kernels = 0, with_relu = 0;
  for (const CudaJobKernel& k : read_cuda_job(options.job_dir).kernels) {
    if (k.library != "cudnn_conv" || !k.conv.fused()) continue;
    ++fused_kernels;
    with_relu += k.conv.relu;
    // A bias without ReLU only with the one algorithm cuDNN fuses it with.
    if (!k.conv.relu) {
      EXPECT_EQ(k.conv.algo, 1) << k.schedule;
    }
  }
  EXPECT_GE(with_relu, static_cast<int>(cudnn_conv_algorithms().size()));
  EXPECT_GT(fused_kernels, with_relu);
}

// Matrix products as fission writes them, with what cuBLASLt fuses: a bias, a residual and a
// ReLU after one; a transposed operand and a scale; a head split (reshape and transpose)
// read in place. The candidates are library kernels (views and epilogues read off them)
// and, run as cuBLAS and cuBLASLt define their calls, match the interpreter.
TEST(CudaJob, GemmViewsAndEpiloguesMatchTheInterpreter) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(6);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  auto binary = [&](ScalarOp op, const std::string& x, const std::string& y, const Shape& s) {
    return b.prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {x, y}, F, s);
  };
  const Shape o = {2, 5, 6};
  // 0 matmul (weights broadcast over the batch), 1 bias broadcast, 2 bias add, 3 residual
  // add, 4 relu.
  const std::string m1 = b.prim(LinearAttrs{MatMulAttrs{}},
                                {b.input(F, {2, 5, 8}), b.input(F, {1, 8, 6}, true)}, F, o);
  const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, {1, 1, 6}, true)}, F, o);
  const std::string a2 =
      binary(ScalarOp::kAdd, b.input(F, o), binary(ScalarOp::kAdd, m1, bias, o), o);
  const std::string y1 = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {a2}, F, o);
  // 5 transpose, 6 matmul, 7 scale.
  const std::string kt =
      b.prim(LayoutAttrs{layout::Transpose{{0, 2, 1}}}, {b.input(F, {2, 6, 8})}, F, {2, 8, 6});
  const std::string m2 = b.prim(LinearAttrs{MatMulAttrs{}}, {b.input(F, {2, 5, 8}), kt}, F, o);
  const std::string y2 =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 0.25}}}, {m2}, F, o);
  // 8 reshape, 9 transpose, 10 matmul: heads of 4 split off rows of 12.
  const std::string split =
      b.prim(LayoutAttrs{layout::Reshape{}}, {b.input(F, {5, 12})}, F, {5, 3, 4});
  const std::string heads =
      b.prim(LayoutAttrs{layout::Transpose{{1, 0, 2}}}, {split}, F, {3, 5, 4});
  const std::string y3 =
      b.prim(LinearAttrs{MatMulAttrs{}}, {heads, b.input(F, {3, 4, 2})}, F, {3, 5, 2});
  b.g.outputs = {y1, y2, y3};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);

  const auto fused = cuda_gemm_plan(g, dag, make_candidate(dag, {0, 1, 2, 3, 4}));
  ASSERT_TRUE(fused.has_value());
  EXPECT_TRUE(fused->fused());
  EXPECT_TRUE(fused->relu);
  EXPECT_GE(fused->read_bias, 0);
  EXPECT_GE(fused->read_c, 0);
  EXPECT_EQ(fused->algo, 0);  // cuBLASLt
  EXPECT_EQ(fused->stride_b, 0);
  EXPECT_FALSE(cuda_gemm_plan(g, dag, make_candidate(dag, {0, 1, 2, 4})));  // relu skips c
  const auto scaled = cuda_gemm_plan(g, dag, make_candidate(dag, {5, 6, 7}));
  ASSERT_TRUE(scaled.has_value());
  EXPECT_FALSE(scaled->fused());
  EXPECT_TRUE(scaled->trans_b);
  EXPECT_FALSE(scaled->trans_a);
  EXPECT_EQ(scaled->alpha, 0.25f);
  EXPECT_EQ(scaled->stride_b, 48);
  const auto split_heads = cuda_gemm_plan(g, dag, make_candidate(dag, {8, 9, 10}));
  ASSERT_TRUE(split_heads.has_value());
  EXPECT_EQ(split_heads->batch, 3);
  EXPECT_EQ(split_heads->stride_a, 4);
  EXPECT_EQ(split_heads->lda(), 12);
  EXPECT_FALSE(split_heads->trans_a);
  EXPECT_EQ(cuda_gemm_schedules(*fused).front(), "cublaslt:0");
  EXPECT_EQ(cuda_gemm_schedules(*scaled).front(), "cublas");
  EXPECT_EQ(cuda_gemm_schedules(*scaled).size(), 1u + kCublasLtAlgos);

  kora_test::TempDir tmp;
  CudaKernelsOptions options = job_options(tmp);
  options.candidates.max_size = 5;
  compile_cuda_kernels(g, options);
  int fused_kernels = 0, viewed = 0;
  for (const CudaJobKernel& k : read_cuda_job(options.job_dir).kernels) {
    fused_kernels += k.library == "cublas_gemm" && k.gemm.fused();
    viewed += k.library == "cublas_gemm" && (k.gemm.trans_b || k.gemm.ld_a != 0);
  }
  EXPECT_GE(fused_kernels, 3 * kCublasLtAlgos);  // bias; bias and residual; and ReLU
  EXPECT_GE(viewed, 2 * (1 + kCublasLtAlgos));
  emulate_and_merge(g, options, tmp);
}

// Random matrix products read through transposes and head splits, broadcast over the
// batch or not, with random epilogues (a scale, a bias, a residual, a ReLU): every library
// kernel among their candidates (each view and epilogue read off the candidate), run as
// cuBLAS and cuBLASLt define their calls, matches the interpreter.
TEST(CudaJob, RandomGemmViewsAndEpiloguesMatchTheInterpreter) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  std::mt19937 rng(17);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int viewed = 0, fused = 0;
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    kora_codegen_test::GraphBuilder b(rng);
    const DType F = DType::kFloat32;
    const int64_t batch = pick(1, 3), m = pick(1, 5), k = pick(1, 5), n = pick(1, 5);
    // An operand [batch, rows, cols]: stored so, transposed ([batch, cols, rows] moved), or
    // split off wider rows ([rows, batch * cols] reshaped and moved); with `shared`, one
    // matrix for every batch element ([1, rows, cols]).
    auto operand = [&](int64_t rows, int64_t cols, bool shared) {
      const int64_t nb = shared ? 1 : batch;
      switch (shared ? pick(0, 1) : pick(0, 2)) {
        case 1: {
          const std::string t = b.input(F, {nb, cols, rows});
          return b.prim(LayoutAttrs{layout::Transpose{{0, 2, 1}}}, {t}, F, {nb, rows, cols});
        }
        case 2: {
          const std::string wide = b.input(F, {rows, nb * cols});
          const std::string split =
              b.prim(LayoutAttrs{layout::Reshape{}}, {wide}, F, {rows, nb, cols});
          return b.prim(LayoutAttrs{layout::Transpose{{1, 0, 2}}}, {split}, F, {nb, rows, cols});
        }
        default:
          return b.input(F, {nb, rows, cols});
      }
    };
    const bool shared_a = pick(0, 3) == 0, shared_b = !shared_a && pick(0, 1);
    const Shape o = {batch, m, n};
    std::string y = b.prim(LinearAttrs{MatMulAttrs{}},
                           {operand(m, k, shared_a), operand(k, n, shared_b)}, F, o);
    auto binary = [&](ScalarOp op, const std::string& x, const std::string& z) {
      return b.prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {x, z}, F, o);
    };
    if (pick(0, 1))
      y = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 0.5 * pick(1, 4)}}},
                 {y}, F, o);
    if (pick(0, 1))
      y = binary(ScalarOp::kAdd, y, b.prim(BroadcastAttrs{}, {b.input(F, {1, 1, n})}, F, o));
    if (pick(0, 1)) y = binary(ScalarOp::kAdd, b.input(F, o), y);
    if (pick(0, 1)) y = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {y}, F, o);
    b.g.outputs = {y};
    const PrimGraph& g = b.g;

    kora_test::TempDir tmp;
    CudaKernelsOptions options = job_options(tmp);
    options.candidates.max_size = 8;
    options.max_schedules = 1;
    compile_cuda_kernels(g, options);
    for (const CudaJobKernel& kernel : read_cuda_job(options.job_dir).kernels) {
      viewed += kernel.library == "cublas_gemm" && (kernel.gemm.trans_a || kernel.gemm.trans_b ||
                                                    kernel.gemm.ld_a || kernel.gemm.ld_b);
      fused += kernel.library == "cublas_gemm" && kernel.gemm.fused();
    }
    emulate_and_merge(g, options, tmp);
  }
  EXPECT_GT(viewed, 0);
  EXPECT_GT(fused, 0);
}

// TF32 library math is an explicit option: its library calls say so, its job's generator
// revision and so its fingerprint carry " tf32", and orchestration finds those measurements
// only when asked for TF32.
TEST(CudaJob, Tf32MeasurementsAreAnotherDevice) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = job_graph();
  kora_test::TempDir tmp;
  CudaKernelsOptions options = job_options(tmp);
  options.tf32 = true;
  compile_cuda_kernels(g, options);
  const CudaJob job = read_cuda_job(options.job_dir);
  EXPECT_EQ(job.codegen, cuda_codegen_revision() + " tf32");
  int library = 0;
  for (const CudaJobKernel& k : job.kernels) {
    if (k.library.empty()) continue;
    EXPECT_TRUE(k.library == "cublas_gemm" ? k.gemm.tf32 : k.conv.tf32) << k.name;
    ++library;
  }
  EXPECT_GT(library, 0);
  // kora's tensor-core GEMMs, generated, beside cuBLAS's TF32 ones: every tile of every GEMM.
  std::set<uint64_t> gemms;
  std::map<uint64_t, size_t> tiles;
  for (const CudaJobKernel& k : job.kernels) {
    if (k.library == "cublas_gemm") gemms.insert(k.signature);
    if (cuda_mma_tile(k.schedule)) {
      EXPECT_TRUE(k.library.empty()) << k.name;
      EXPECT_EQ(k.launches.size(), 1u) << k.name;
      ++tiles[k.signature];
    }
  }
  EXPECT_FALSE(gemms.empty());
  for (uint64_t s : gemms) EXPECT_EQ(tiles[s], cuda_mma_tiles().size()) << signature_hex(s);
  emulate_worker(g, options, options.job_dir, tmp.file("emulated"));
  ProfileDb db(tmp.file("profiles.db"));
  const CudaMergeSummary merged = merge_cuda_results(g, options.job_dir, db, options);
  // The emulated TF32 products pass the check at TF32's tolerance.
  EXPECT_TRUE(merged.failures.empty()) << merged.failures.size() << " failed, first "
                                       << (merged.failures.empty() ? "" : merged.failures[0].error);
  EXPECT_NE(merged.device.find("|" + cuda_codegen_revision(true)), std::string::npos)
      << merged.device;
  EXPECT_GT(merged.stored, 0);
  if (!cuda_device_unavailable().empty()) {  // no GPU here: the database's GPU
    std::string arch;
    EXPECT_EQ(cuda_target_device(db, "", &arch, true), merged.device);
    EXPECT_EQ(arch, job.arch);
    EXPECT_THROW(cuda_target_device(db, "", &arch, false), Error);
  }
}

#ifdef KORA_CUDA_WORKER_PATH
TEST(CudaWorker, WithoutAGpuSaysSoAndLinksOnlyTheCRuntime) {
  std::mt19937 rng(2);
  const PrimGraph g = kora_cuda_test::softmax_graph(rng, 4, 64);
  kora_test::TempDir tmp;
  CudaKernelsOptions options;
  options.cache_dir = tmp.file("cubins");
  options.candidates.max_size = 1;
  options.job_dir = tmp.file("job");
  compile_cuda_kernels(g, options);
  std::string out;
  const int status = run("KORA_CUDA_DRIVER=/nonexistent/libcuda.so " +
                             std::string(KORA_CUDA_WORKER_PATH) + " " + options.job_dir,
                         &out);
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("no usable GPU"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(cuda_results_file(options.job_dir)));
  out.clear();
  EXPECT_EQ(run(std::string(KORA_CUDA_WORKER_PATH) + " " + tmp.file("nothing"), &out), 1);
  EXPECT_NE(out.find("job.json"), std::string::npos) << out;

  out.clear();
  ASSERT_EQ(run("ldd " + std::string(KORA_CUDA_WORKER_PATH), &out), 0) << out;
  for (const char* lib :
       {"libstdc++", "libcuda", "libnvrtc", "libsqlite", "libdnnl", "libprotobuf"})
    EXPECT_EQ(out.find(lib), std::string::npos) << lib << " in\n" << out;
}

#ifdef KORA_FAKE_CUDA_PATH
// The worker program itself, on a fake driver and cuBLAS over host memory
// (tests/cuda/fake_driver.cc) whose modules are the emulated kernels: every kernel of the
// job gets one result although one crashes its process (the supervisor records it and
// starts a fresh child) and another's launch fails (recorded; the child stops and a fresh
// one goes on); without cuDNN the convolutions fail saying so; everything else matches the
// reference interpreter when merged: buffers, launch arguments, GEMM operands and probes
// as the worker really makes them.
TEST(CudaWorker, RunsAJobOnAFakeDriverThroughCrashesAndItsResultsMatch) {
  const PrimGraph g = job_graph();
  kora_test::TempDir tmp;
  CudaKernelsOptions options = job_options(tmp);
  const std::string dir = options.job_dir;
  options.measure = {1, 2, 2, 1.0, 0.01};
  compile_cuda_kernels(g, options);
  const std::string lib = emulated_library(g, options, tmp.file("emulated"));
  const CudaJob job = read_cuda_job(dir);
  for (const std::string& p : job.programs) std::ofstream(dir + "/" + p) << lib << '\0';
  std::vector<const CudaJobKernel*> generated;
  for (const CudaJobKernel& k : job.kernels)
    if (!k.launches.empty()) generated.push_back(&k);
  ASSERT_GT(generated.size(), 40u);
  const CudaJobKernel &crash = *generated[3], &fail = *generated[30];
  std::string out;
  const int status = run(
      std::string("KORA_CUDA_DRIVER=") + KORA_FAKE_CUDA_PATH +
          " KORA_CUBLAS=" + KORA_FAKE_CUDA_PATH + " KORA_CUBLASLT=" + KORA_FAKE_CUDA_PATH +
          " FAKE_CUBLASLT_ALGOS=" + std::to_string(kCublasLtAlgos) +
          " KORA_CUDNN=/nonexistent/libcudnn.so FAKE_CUDA_CRASH_ON=" + crash.launches[0].function +
          " FAKE_CUDA_FAIL_ON=" + fail.launches[0].function + " " + KORA_CUDA_WORKER_PATH + " " +
          dir,
      &out);
  ASSERT_EQ(status, 0) << out;

  const CudaResults results = read_cuda_results(dir);
  EXPECT_EQ(results.device.name, "Fake GPU");
  EXPECT_EQ(results.device.sms, 4);
  EXPECT_EQ(results.device.cublas, 130000);
  EXPECT_EQ(results.device.cudnn, 0);
  ASSERT_EQ(results.results.size(), job.kernels.size());  // each once, none lost or repeated
  std::map<std::pair<uint64_t, std::string>, const CudaResult*> by;
  for (const CudaResult& r : results.results) by[{r.signature, r.schedule}] = &r;
  ASSERT_EQ(by.size(), job.kernels.size());
  int no_dnn = 0;
  for (const CudaJobKernel& k : job.kernels) {
    const CudaResult& r = *by.at({k.signature, k.schedule});
    if (&k == &crash) {
      EXPECT_NE(r.error.find("the worker died on it (signal 6"), std::string::npos) << r.error;
    } else if (&k == &fail) {
      EXPECT_NE(r.error.find("unspecified launch failure"), std::string::npos) << r.error;
    } else if (k.library == "cudnn_conv") {
      EXPECT_NE(r.error.find("no cuDNN on this machine"), std::string::npos) << r.error;
      ++no_dnn;
    } else {
      EXPECT_EQ(r.error, "") << k.name;
      EXPECT_EQ(r.samples, 2);
      EXPECT_GT(r.median_ms, 0);
    }
  }
  EXPECT_EQ(no_dnn, static_cast<int>(cudnn_conv_algorithms().size()));

  ProfileDb db(tmp.file("profiles.db"));
  const CudaMergeSummary merged = merge_cuda_results(g, dir, db, options);
  EXPECT_EQ(merged.failures.size(), 2u + no_dnn);
  for (const ProfileFailure& f : merged.failures)
    EXPECT_EQ(f.error.find("wrong result"), std::string::npos) << f.kernel << ": " << f.error;
  EXPECT_EQ(merged.stored, static_cast<int64_t>(job.kernels.size()) - 2 - no_dnn);
}
#endif

TEST(CudaWorker, MeasuresAModelOnTheGpuAndASecondRunMeasuresNothing) {
  std::string why;
  const auto device = CudaDevice::open(0, &why);
  if (!device) GTEST_SKIP() << "no GPU: " << why;
  const std::string arch = device->arch();
  std::vector<std::string> archs = nvrtc_architectures();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end())
    GTEST_SKIP() << "NVRTC cannot compile for " << arch;
  const PrimGraph g = job_graph();
  kora_test::TempDir tmp;
  ProfileDb db(tmp.file("profiles.db"));
  CudaProfileOptions options;
  options.kernels.arch = arch;
  options.kernels.cache_dir = tmp.file("cubins");
  options.kernels.candidates.max_size = 5;
  options.kernels.job_dir = tmp.file("job");
  options.worker = KORA_CUDA_WORKER_PATH;
  const CudaProfileSummary a = profile_model_cuda(g, db, options);
  ASSERT_TRUE(a.ran_worker);
  ASSERT_TRUE(a.merged);
  int64_t no_library = 0;  // a machine without cuBLAS/cuDNN, an algorithm cuDNN lacks
  for (const ProfileFailure& f : a.merge.failures) {
    if ((f.error.find("no cuBLAS") != std::string::npos && f.schedule == "cublas") ||
        (f.error.find("no cuDNN") != std::string::npos && f.schedule.rfind("cudnn:", 0) == 0))
      ++no_library;
    else if (f.schedule.rfind("cudnn:", 0) == 0 &&
             f.error.find("unsupported by cuDNN") != std::string::npos)
      ++no_library;  // an algorithm cuDNN does not implement for the shape
    else
      ADD_FAILURE() << f.kernel << ": " << f.error;
  }
  EXPECT_EQ(a.merge.stored + no_library, a.kernels.job_kernels);
  for (const CudaJobKernel& k : read_cuda_job(options.kernels.job_dir).kernels) {
    if (no_library && !k.library.empty()) continue;
    const auto best = db.best(a.merge.device, k.signature);
    ASSERT_TRUE(best.has_value());
    EXPECT_GT(best->median_ms, 0);
    EXPECT_LT(best->median_ms, 1);  // a few thousand elements
  }
  const CudaProfileSummary b = profile_model_cuda(g, db, options);
  EXPECT_EQ(b.kernels.job_kernels, 0);
  EXPECT_FALSE(b.ran_worker);
}
#endif

}  // namespace
