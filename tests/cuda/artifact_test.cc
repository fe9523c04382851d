// CUDA artifacts (src/cuda/artifact.h) and their runtime (src/runtime/cuda_plan.h).
// Without a GPU: an orchestration for the cuda target (candidates the target computes)
// written as an artifact (generated kernels in cubins, cuBLAS and cuDNN calls, fastest
// measured schedule chosen), its manifest read back, a kernel the target cannot compute
// named in the error, a session without a GPU saying so; the artifact run by `kora run`
// on the fake driver and cuBLAS over host memory (tests/cuda/fake_driver.cc; kernels
// emulated) matching the reference interpreter. The whole flow of a machine with a GPU on
// the fake one ($FAKE_CUDA_MODULE: every module is the emulated library): kora profile
// --target cuda (both rounds), kora compile --target cuda finding the GPU here, kora run;
// host kernels between GPU kernels; fused convolutions on a fake cuDNN (fake_cudnn.cc) and
// GEMMs with a bias, a residual, a ReLU, a transposed operand and a scale on a fake
// cuBLASLt (fake_cublaslt.cc), an algorithm refused on request. On a GPU: the artifact with
// convolutions run in-process with each of the three strategies (launch by launch, then
// replayed as a CUDA Graph) against the interpreter.
#include "cuda/artifact.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

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
#include "frontend/model_builder.h"
#include "kora/check.h"
#include "kora/cost.h"
#include "kora/error.h"
#include "kora/fission.h"
#include "kora/frontend.h"
#include "kora/interpreter.h"
#include "kora/npy.h"
#include "kora/orchestration.h"
#include "kora/profile_db.h"
#include "kora/runtime.h"
#include "profile/second_run_waits.h"
#include "runtime/manifest.h"
#include "runtime/sha256.h"

namespace {

using namespace kora;

// Softmax over rows with an integer constant, a broadcast matrix product, an embedding
// lookup (a Gather of run-time indices, opaque) with a tanh and, with
// `convolutions`, a grouped strided convolution with a bias and a ReLU; with `lopsided`,
// also a convolution with asymmetric padding (no CUDA implementation).
PrimGraph artifact_graph(bool convolutions, bool lopsided = false) {
  std::mt19937 rng(5);
  kora_codegen_test::GraphBuilder b(rng);
  const DType F = DType::kFloat32;
  const std::string soft = kora_cuda_test::weighted_softmax(b).second;
  const std::string xa = b.input(F, {2, 3, 5});
  const std::string p =
      b.prim(LinearAttrs{MatMulAttrs{}}, {xa, b.input(F, {1, 5, 4}, true)}, F, {2, 3, 4});
  const std::string pr =
      b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {p}, F, {2, 3, 4});
  Node gather;
  gather.name = "embed";
  gather.op_type = "Gather";
  const std::string table = b.input(F, {7, 5}, true), ids = b.input(DType::kInt64, {2, 3});
  gather.inputs = {table, ids};
  const std::string looked = b.prim(OpaqueAttrs{gather}, {table, ids}, F, {2, 3, 5});
  std::get<OpaqueAttrs>(b.g.prims.back().attrs).node.outputs = {looked};
  const std::string lt =
      b.prim(ElementwiseAttrs{ScalarOp::kTanh, {Operand{0, 0}}}, {looked}, F, {2, 3, 5});
  b.g.outputs = {soft, pr, lt};
  if (convolutions) {
    ConvAttrs conv;
    conv.group = 2;
    conv.strides = {2, 2};
    conv.dilations = {1, 1};
    conv.pads_begin = conv.pads_end = {1, 1};
    const std::string x4 = b.input(F, {1, 4, 9, 9});
    const Shape o = {1, 6, 5, 5};
    const std::string c = b.prim(LinearAttrs{conv}, {x4, b.input(F, {6, 2, 3, 3}, true)}, F, o);
    const std::string bias = b.prim(BroadcastAttrs{}, {b.input(F, {1, 6, 1, 1}, true)}, F, o);
    const std::string cb =
        b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {c, bias}, F, o);
    b.g.outputs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {cb}, F, o));
    if (lopsided) {
      ConvAttrs l{1, {1, 1}, {1, 1}, {0, 0}, {1, 1}};
      b.g.outputs.push_back(
          b.prim(LinearAttrs{l}, {x4, b.input(F, {3, 4, 2, 2}, true)}, F, {1, 3, 9, 9}));
    }
  }
  return b.g;
}

OrchestrationResult cuda_plan(const PrimGraph& g, const std::string& strategy = "optimal",
                              int horizontal = 0, bool tf32 = false) {
  RooflineCost costs(device_params("h100"));
  OrchestrationOptions o;
  o.strategy = strategy;
  o.candidates.max_size = 5;
  o.candidates.horizontal_pairs = horizontal;
  o.candidates = cuda_candidate_options(g, o.candidates, tf32);
  return orchestrate(g, costs, o);
}

// Floats random; integers (the lookup's indices) from -7 to 6, every valid index of the
// table of 7 rows, negative ones counting from the end.
std::map<std::string, Tensor> random_inputs(const PrimGraph& g) {
  std::mt19937_64 rng(9);
  std::map<std::string, Tensor> in;
  for (const std::string& name : g.inputs) {
    Tensor t = random_tensor(g.value(name).dtype, g.value(name).shape, rng, 1);
    if (t.dtype() == DType::kInt64)
      for (int64_t i = 0; i < t.numel(); ++i)
        set_element_int(t, i, static_cast<int64_t>(rng() % 14) - 7);
    in[name] = t;
  }
  return in;
}

Manifest read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return manifest_from_json(text, dir);
}

// Records the artifact's cubins, replaced by a test, in its manifest's sizes and SHA-256s.
void record_replaced_cubins(const std::string& dir, const Manifest& m) {
  std::ifstream in(dir + "/manifest.json");
  nlohmann::json j = nlohmann::json::parse(in);
  for (const std::string& cubin : m.libraries)
    j["files"][cubin] = {{"bytes", std::filesystem::file_size(dir + "/" + cubin)},
                         {"sha256", sha256_file_hex(dir + "/" + cubin)}};
  std::ofstream(dir + "/manifest.json") << j.dump(1);
}

TEST(CudaArtifact, WritesLaunchesAndLibraryCallsWithTheFastestMeasuredSchedule) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = artifact_graph(true);
  const OrchestrationResult plan = cuda_plan(g);
  kora_test::TempDir tmp;
  // The database says a non-default schedule and cuDNN's algorithm 1 are fastest for the
  // kernels that have them (algorithm 2 failed).
  ProfileDb db(tmp.file("profiles.db"));
  const KernelDag dag = kernel_dag_of(g);
  const std::string device = "cuda|Test GPU|sm_90|1 SMs";
  for (const ChosenKernel& k : plan.kernels) {
    const Candidate c = make_candidate(dag, k.prims);
    if (cuda_codegen_supports(g, dag, c)) {
      db.put({device, k.signature, "block=128;items=2;reduce=auto", 0.5, 0, 3, false, "", ""});
      db.put({device, k.signature, "default", 0.7, 0, 3, false, "", ""});
    } else if (cuda_conv_plan(g, dag, c)) {
      db.put({device, k.signature, "cudnn:2", 0.1, 0, 3, true, "unsupported", ""});
      db.put({device, k.signature, "cudnn:1", 0.2, 0, 3, false, "", ""});
    }
  }
  CudaArtifactOptions options;
  options.device = device;
  options.arch = "sm_90";
  options.cache_dir = tmp.file("cubins");
  const ArtifactSummary a = write_cuda_artifact(g, plan, &db, tmp.file("art"), options);
  EXPECT_EQ(a.kernels, static_cast<int64_t>(plan.kernels.size()));
  EXPECT_EQ(a.cublas, 1);
  EXPECT_EQ(a.cudnn, 1);
  EXPECT_EQ(a.generated + a.cublas + a.cudnn, a.kernels);
  const Manifest m = read_manifest(tmp.file("art"));
  EXPECT_EQ(m.target, "cuda");
  EXPECT_EQ(m.arch, "sm_90");
  EXPECT_EQ(m.device, device);
  int launches = 0;
  for (const ManifestKernel& k : m.kernels) {
    EXPECT_EQ(k.impl, "cuda");
    if (k.cuda.library == "cudnn_conv") {
      EXPECT_EQ(k.schedule, "cudnn:1");
      EXPECT_EQ(k.cuda.conv.algo, 1);
      EXPECT_EQ(k.cuda.conv.group, 2);
      EXPECT_TRUE(k.cuda.conv.fused());  // its bias and ReLU with it
      EXPECT_TRUE(k.cuda.conv.relu);
    } else if (k.cuda.library == "cublas_gemm") {
      EXPECT_EQ(k.schedule, "cublas");
      EXPECT_EQ(k.cuda.gemm.batch, 2);
    } else {
      EXPECT_EQ(k.schedule, "block=128;items=2;reduce=auto");
      ASSERT_GE(k.cuda.program, 0);
      ASSERT_LT(k.cuda.program, static_cast<int>(m.libraries.size()));
      EXPECT_FALSE(k.cuda.launches.empty());
      for (const CudaJobLaunch& l : k.cuda.launches) {
        EXPECT_EQ(l.block, 128);
        EXPECT_GT(l.grid, 0);
      }
      launches += static_cast<int>(k.cuda.launches.size());
    }
    EXPECT_EQ(k.cuda.reads.size(), k.reads.size());
    EXPECT_EQ(k.cuda.writes.size(), k.writes.size());
  }
  EXPECT_GT(launches, 0);
  for (const std::string& cubin : m.libraries)
    EXPECT_GT(std::filesystem::file_size(tmp.file("art") + "/" + cubin), 0u);

  // A manifest whose CUDA kernel's buffers are not its tensors is refused when read.
  {
    std::ifstream in(tmp.file("art") + "/manifest.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("\"count\": ") + 9;
    text.replace(at, text.find_first_not_of("0123456789", at) - at, "123457");
    try {
      manifest_from_json(text, "tampered");
      FAIL() << "a CUDA kernel with a wrong buffer size was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("buffers are not the tensors it reads and writes"),
                std::string::npos)
          << e.what();
    }
  }
  // Where no GPU can be used, a session says so (and names the architecture).
  std::string why;
  if (!CudaDevice::open(0, &why)) {
    try {
      Session session(tmp.file("art"));
      FAIL() << "a CUDA artifact opened without a GPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("compiled for CUDA (sm_90), but no GPU"),
                std::string::npos)
          << e.what();
    }
  }
}

// Profiling for a GPU elsewhere (kora profile --gpu): the job leaves out the kernels the
// database holds for that GPU.
// A GPU measured elsewhere, and the options of a job written for it (no worker run here):
// sm_90, kernels of at most 3 primitives, one schedule each, cubins and job under `tmp`.
const char* const kRemoteGpu = "cuda|Remote GPU|sm_90|132 SMs|kora-cuda-gen 2";

CudaProfileOptions remote_job_options(kora_test::TempDir& tmp, const std::string& job) {
  CudaProfileOptions options;
  options.run_worker = false;
  options.kernels.arch = "sm_90";
  options.kernels.candidates.max_size = 3;
  options.kernels.max_schedules = 1;
  options.kernels.cache_dir = tmp.file("cubins");
  options.kernels.job_dir = tmp.file(job);
  return options;
}

TEST(CudaArtifact, AJobForAGpuElsewhereLeavesOutWhatItMeasured) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = artifact_graph(false);
  kora_test::TempDir tmp;
  ProfileDb db(tmp.file("profiles.db"));
  CudaProfileOptions options = remote_job_options(tmp, "all");
  const int64_t all = profile_model_cuda(g, db, options).kernels.job_kernels;
  std::set<uint64_t> measured;
  const std::string remote = kRemoteGpu;
  uint64_t gemm = 0;  // measured with cuBLAS only: cuBLASLt's algorithms are still to measure
  for (const CudaJobKernel& k : read_cuda_job(options.kernels.job_dir).kernels) {
    if (k.library.empty() && measured.size() < 5 && measured.insert(k.signature).second)
      db.put({remote, k.signature, k.schedule, 0.1, 0, 3, false, "", ""});
    if (k.schedule == "cublas" && !gemm) {
      gemm = k.signature;
      db.put({remote, k.signature, k.schedule, 0.1, 0, 3, false, "", ""});
    }
  }
  ASSERT_NE(gemm, 0u);
  options.remote_device = remote;
  options.kernels.job_dir = tmp.file("rest");
  const CudaProfileSummary rest = profile_model_cuda(g, db, options);
  EXPECT_LT(rest.kernels.job_kernels, all);
  EXPECT_GT(rest.kernels.job_kernels, 0);
  int gemm_schedules = 0;
  for (const CudaJobKernel& k : read_cuda_job(options.kernels.job_dir).kernels) {
    EXPECT_EQ(measured.count(k.signature), 0u) << k.name;
    if (k.signature == gemm) {
      EXPECT_NE(k.schedule, "cublas");
      ++gemm_schedules;
    }
  }
  EXPECT_EQ(gemm_schedules, kCublasLtAlgos);
}

// Two kora profile --target cuda runs on one database, as on the CPU
// (tests/profile/profile_test.cc): the second waits for the first's lock on DB.lock (here
// held by the test, which meanwhile stores every kernel as the first run would), says so,
// and then leaves out of its job everything the first stored.
TEST(CudaArtifact, ASecondProfileOnTheDatabaseWaitsAndReusesTheFirstsMeasurements) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = artifact_graph(false);
  kora_test::TempDir tmp;
  const std::string path = tmp.file("profiles.db");
  CudaProfileOptions options = remote_job_options(tmp, "all");
  options.remote_device = kRemoteGpu;
  std::vector<CudaJobKernel> kernels;
  {
    ProfileDb db(path);
    ASSERT_GT(profile_model_cuda(g, db, options).kernels.job_kernels, 0);
    kernels = read_cuda_job(options.kernels.job_dir).kernels;
  }
  std::ostringstream progress;
  options.kernels.progress = &progress;
  options.kernels.job_dir = tmp.file("second");
  CudaProfileSummary second;
  kora_test::expect_second_run_waits(
      path, progress,
      [&] {
        ProfileDb db(path);
        second = profile_model_cuda(g, db, options);
      },
      [&] {
        ProfileDb db(path);
        for (const CudaJobKernel& k : kernels)
          db.put({kRemoteGpu, k.signature, k.schedule, 0.1, 0, 3, false, "", ""});
      });
  EXPECT_EQ(second.kernels.job_kernels, 0);
}

// A lone primitive the GPU cannot compute (a convolution with asymmetric padding) runs on
// the host with the interpreter; a kernel of several the target cannot compute (from a plan
// made without the cuda target's capability filter) is named in the error.
TEST(CudaArtifact, RunsOnTheHostWhatTheGpuCannotAndNamesWhatNothingComputes) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = artifact_graph(true, true);
  kora_test::TempDir tmp;
  CudaArtifactOptions options;
  options.cache_dir = tmp.file("cubins");
  const ArtifactSummary a =
      write_cuda_artifact(g, cuda_plan(g, "unfused"), nullptr, tmp.file("host"), options);
  EXPECT_EQ(a.interpreter, 1);
  int host = 0;
  for (const ManifestKernel& k : read_manifest(tmp.file("host")).kernels)
    if (k.impl == "interpreter") {
      ++host;
      EXPECT_EQ(k.schedule, "host");
      EXPECT_EQ(k.primitives.size(), 1u);
      EXPECT_FALSE(k.graph_json.empty());
    }
  EXPECT_EQ(host, 1);

  RooflineCost costs(device_params("h100"));
  OrchestrationOptions o;
  o.strategy = "greedy";  // fuses the product's tanh, which no CUDA kernel computes with it
  const OrchestrationResult plan = orchestrate(g, costs, o);
  const KernelDag dag = kernel_dag_of(g);
  bool unsupported = false;
  for (const ChosenKernel& k : plan.kernels) {
    const Candidate c = make_candidate(dag, k.prims);
    unsupported |= !cuda_supports(g, dag, c) && !cuda_runs_on_host(g, dag, c);
  }
  ASSERT_TRUE(unsupported);
  try {
    write_cuda_artifact(g, plan, nullptr, tmp.file("art"), options);
    FAIL() << "a kernel the cuda target cannot compute was emitted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no CUDA implementation"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.file("art")));  // nothing half written
}

#if defined(KORA_FAKE_CUDA_PATH) && defined(KORA_CLI_PATH)
// The environment that loads the fake driver, cuBLAS and cuBLASLt (not cuDNN).
std::string fake_libraries() {
  const std::string fake = KORA_FAKE_CUDA_PATH;
  return "KORA_CUDA_DRIVER=" + fake + " KORA_CUBLAS=" + fake + " KORA_CUBLASLT=" + fake + " ";
}

int run(const std::string& command, std::string* output) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) *output += buf;
  const int status = p ? pclose(p) : -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The emulated library of `kernels` (tests/cuda/emulator.h), compiled into `cache`.
std::string emulated_library(const std::vector<CudaKernel>& kernels, const PrimGraph& g,
                             const std::string& cache, const std::string& level = "-O0") {
  CxxCompileOptions compile;
  compile.cache_dir = cache;
  compile.flags = {level, "-fPIC", "-shared", "-std=c++17", "-w"};
  return cache + "/" + compile_shared(kora_cuda_test::emulated_program(kernels, g), compile).key +
         ".so";
}

// The generated kernels of the CUDA artifact `art` (of `g`), regenerated from its manifest
// with their schedules, as one emulated library compiled into `cache`: what the fake driver
// loads for the artifact's cubins.
std::string artifact_emulation(const std::string& art, const PrimGraph& g, const std::string& cache,
                               const std::string& level = "-O0") {
  const Manifest m = read_manifest(art);
  const KernelDag dag = kernel_dag_of(g);
  std::map<std::string, int> prim_index;
  for (int i = 0; i < static_cast<int>(g.prims.size()); ++i) prim_index[g.prims[i].name] = i;
  std::vector<CudaKernel> kernels;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (m.kernels[i].impl != "cuda" || !m.kernels[i].cuda.library.empty()) continue;
    std::vector<int> nodes;
    for (const std::string& p : m.kernels[i].primitives) nodes.push_back(prim_index.at(p));
    std::sort(nodes.begin(), nodes.end());
    Candidate c = make_candidate(dag, nodes);
    c.signature = canonical_signature(g, dag, c);
    const std::optional<CudaMmaTile> tile = cuda_mma_tile(m.kernels[i].schedule);
    const std::string symbol = tile ? cuda_mma_symbol(instance_signature(g, dag, c), *tile)
                                    : cuda_kernel_symbol(g, dag, c, m.kernels[i].schedule);
    if (std::any_of(kernels.begin(), kernels.end(),
                    [&](const CudaKernel& k) { return k.symbol == symbol; }))
      continue;  // one code for kernels of one symbol
    kernels.push_back(tile ? generate_mma_kernel(g, dag, c, symbol, *tile)
                           : generate_cuda_kernel(g, dag, c, symbol,
                                                  CudaSchedule::from_key(m.kernels[i].schedule)));
  }
  return emulated_library(kernels, g, cache, level);
}

TEST(CudaArtifact, RunsOnAFakeDriverLikeTheInterpreter) {
  const PrimGraph g = artifact_graph(false);  // the fake has no cuDNN
  for (const std::string strategy : {"optimal", "unfused"}) {
    SCOPED_TRACE(strategy);
    const OrchestrationResult plan = cuda_plan(g, strategy);
    kora_test::TempDir tmp;
    CudaArtifactOptions options;
    options.arch = "sm_80";  // the fake GPU's
    options.cache_dir = tmp.file("cubins");
    const std::string art = tmp.file("art");
    write_cuda_artifact(g, plan, nullptr, art, options);
    // The cubins become one emulated library of the same kernels (as the fake driver loads
    // modules), regenerated from the plan with the manifest's schedules.
    const Manifest m = read_manifest(art);
    const std::string lib = artifact_emulation(art, g, tmp.file("emulated"));
    for (const std::string& cubin : m.libraries) std::ofstream(art + "/" + cubin) << lib << '\0';
    record_replaced_cubins(art, m);

    const std::map<std::string, Tensor> inputs = random_inputs(g);
    std::string command = fake_libraries() + KORA_CLI_PATH + " run " + art +
                          " --iters 3 --output-dir " + tmp.file("out");
    for (const auto& [name, value] : inputs) {
      write_npy(tmp.file(name + ".npy"), value);
      command += " --input " + name + "=" + tmp.file(name + ".npy");
    }
    std::string out;
    ASSERT_EQ(run(command, &out), 0) << out;
    EXPECT_NE(out.find("Fake GPU, CUDA graph of " + std::to_string(m.kernels.size()) + " kernels"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("gpu median"), std::string::npos) << out;
    const std::map<std::string, Tensor> want = interpret(g, inputs);
    for (const auto& [name, value] : want) {
      const Tensor got = read_npy(tmp.file("out") + "/" + name + ".npy");
      EXPECT_LT(relative_l2(got, value), 1e-5) << name;
    }
  }
}

// Co-location on the fake GPU (kora colocate): two CUDA artifacts of one graph, the
// latency-critical one under a request stream and the best-effort one in a loop of its own
// thread (the fake's context is current per thread, as CUDA's, so a session that did not
// make it current in its thread fails), each on its own stream: every request served in
// every run, the best-effort loop running beside them, and the scheduled run's streams the
// device's highest priority for the request and lowest for the loop.
TEST(CudaArtifact, ColocatesOnAFakeGpuWithStreamPriorities) {
  const PrimGraph g = artifact_graph(false);
  kora_test::TempDir tmp;
  std::vector<std::string> arts;
  for (const std::string strategy : {"optimal", "unfused"}) {
    CudaArtifactOptions options;
    options.arch = "sm_80";
    options.cache_dir = tmp.file("cubins");
    arts.push_back(tmp.file("art_" + strategy));
    write_cuda_artifact(g, cuda_plan(g, strategy), nullptr, arts.back(), options);
    const Manifest m = read_manifest(arts.back());
    const std::string lib = artifact_emulation(arts.back(), g, tmp.file("emulated_" + strategy));
    for (const std::string& cubin : m.libraries)
      std::ofstream(arts.back() + "/" + cubin) << lib << '\0';
    record_replaced_cubins(arts.back(), m);
  }
  std::string out;
  ASSERT_EQ(run(fake_libraries() + KORA_CLI_PATH + " colocate --lc " + arts[0] + " --be " +
                    arts[1] + " --qps 40 --target-ms 500 --seconds 0.5 --json",
                &out),
            0)
      << out;
  const nlohmann::json r = nlohmann::json::parse(out.substr(out.find('{')));
  const int64_t requests = r["runs"]["lc_alone"]["lc"]["requests"];
  EXPECT_GT(requests, 3) << out;
  for (const char* mode : {"naive", "scheduled"}) {
    EXPECT_EQ(r["runs"][mode]["lc"]["requests"], requests) << mode;
    EXPECT_LE(r["runs"][mode]["lc"]["p99_ms"].get<double>(), 500.0) << mode;
    ASSERT_EQ(r["runs"][mode]["be"].size(), 1u) << out;
    EXPECT_GT(r["runs"][mode]["be"][0]["runs"].get<int64_t>(), 0) << mode << out;
    EXPECT_EQ(r["runs"][mode]["be"][0]["error"], "") << mode;
  }
  const std::string lc = r["lc_device"], be = r["be_devices"][0];
  EXPECT_NE(lc.find("Fake GPU, CUDA graph"), std::string::npos) << lc;
  EXPECT_NE(lc.find("a high-priority stream (-5; the device's range -5 (highest) to 0)"),
            std::string::npos)
      << lc;
  EXPECT_NE(be.find("a low-priority stream (0;"), std::string::npos) << be;
}

// The whole flow of a machine with a GPU, on the fake one, for `model`: kora profile
// --target cuda --schedules 2 runs the worker and stores the checked results under the
// fake GPU's fingerprint (its output in *profiled); kora compile --target cuda finds that
// GPU here, measures nothing more and orchestrates with measured costs only; kora run gives
// what the interpreter gives on `inputs`. Every module the fake loads is the emulated
// library of the kernels the step launches (FAKE_CUDA_MODULE); `env`: more variables.
// The generated kernels of a measuring job with --schedules 2, named as
// compile_cuda_kernels names them, for every candidate (not only the first of each
// signature: kernels slicing at other offsets are other functions in the artifacts the
// check on the clock runs).
std::vector<CudaKernel> two_schedule_job_kernels(const PrimGraph& g, int horizontal = 0) {
  std::vector<CudaKernel> job_kernels;
  CudaKernelsOptions options;
  options.candidates = cuda_candidate_options(g, options.candidates);
  options.candidates.horizontal_pairs = horizontal;
  const ModelCandidates all = unique_candidates(g, options.partition, options.candidates);
  std::set<std::string> symbols;
  for (const SegmentCandidates& segment : all.segments)
    for (const Candidate& c : segment.candidates) {
      if (!cuda_codegen_supports(g, segment.sub, c)) continue;
      const std::vector<CudaSchedule> space = cuda_schedule_space(g, segment.sub, c);
      for (size_t k = 0; k < std::min<size_t>(2, space.size()); ++k) {
        const std::string symbol = cuda_kernel_symbol(instance_signature(g, segment.sub, c), k);
        if (symbols.insert(symbol).second)
          job_kernels.push_back(generate_cuda_kernel(g, segment.sub, c, symbol, space[k]));
      }
    }
  return job_kernels;
}

void fake_gpu_flow(const kora_test::TempDir& tmp, const std::string& model, const PrimGraph& g,
                   const std::map<std::string, Tensor>& inputs, const std::string& env_more,
                   std::string* profiled, bool on_demand = false,
                   std::string* checked_out = nullptr, int horizontal = 0) {
  const std::vector<CudaKernel> job_kernels = two_schedule_job_kernels(g, horizontal);
  const std::string env = fake_libraries() + "KORA_CUDA_WORKER=" + KORA_CUDA_WORKER_PATH +
                          " KORA_KERNEL_CACHE=" + tmp.file("cache") +
                          " KORA_PROFILE_DB=" + tmp.file("profiles.db") + " " + env_more + " ";
  std::string& out = *profiled;
  const std::string job_module =
      "FAKE_CUDA_MODULE=" + emulated_library(job_kernels, g, tmp.file("emu")) + " ";
  // Every candidate measured first (--all), or on demand: only the kernels of the plans the
  // solver chooses, each round's job holding what it asks for.
  const std::string all = (on_demand ? "" : " --all") +
                          (horizontal ? " --horizontal " + std::to_string(horizontal) : "");
  ASSERT_EQ(run(env + job_module + KORA_CLI_PATH + " profile " + model +
                    " --target cuda --schedules 2" + all,
                &out),
            0)
      << out;
  if (on_demand) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        out, m, std::regex(R"((\d+) kernels measured now \(of (\d+) candidates\), 0 impl)")))
        << out;
    EXPECT_GT(std::stoi(m[1]), 0) << out;
    EXPECT_LT(std::stoi(m[1]), std::stoi(m[2])) << out;
    EXPECT_NE(out.find("every kernel of it measured"), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("device cuda|Fake GPU|sm_80|4 SMs|driver 13000|cublas 130000"),
              std::string::npos)
        << out;
  }
  EXPECT_EQ(out.find("wrong result"), std::string::npos) << out;

  const std::string art = tmp.file("art");
  std::string compiled;
  ASSERT_EQ(run(env + job_module + KORA_CLI_PATH + " compile " + model +
                    " --target cuda --schedules 2 -o " + art + all,
                &compiled),
            0)
      << compiled;
  EXPECT_NE(compiled.find("target cuda, sm_80, costs of cuda|Fake GPU"), std::string::npos)
      << compiled;
  EXPECT_EQ(compiled.find("never measured"), std::string::npos) << compiled;
  // What kora profile measured is all the compile needs.
  EXPECT_NE(
      compiled.find(on_demand ? " solves, 0 kernels measured now" : " kernels, 0 measured now, "),
      std::string::npos)
      << compiled;
  // The plans checked on the clock (their generated kernels are the job's, by symbol).
  EXPECT_NE(compiled.find("check on the clock: optimal "), std::string::npos) << compiled;
  EXPECT_EQ(compiled.find("could not be run here"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("<- emitted"), std::string::npos) << compiled;

  std::string command = env + "FAKE_CUDA_MODULE=" + artifact_emulation(art, g, tmp.file("emu")) +
                        " " + KORA_CLI_PATH + " run " + art + " --iters 1 --output-dir " +
                        tmp.file("out");
  for (const auto& [name, value] : inputs) {
    write_npy(tmp.file(name + ".npy"), value);
    command += " --input " + name + "=" + tmp.file(name + ".npy");
  }
  std::string ran;  // the first run checked, then replayed (--iters)
  ASSERT_EQ(run(command, &ran), 0) << ran;
  for (const auto& [name, value] : interpret(g, inputs))
    EXPECT_LT(relative_l2(read_npy(tmp.file("out") + "/" + name + ".npy"), value), 1e-5) << name;
  // kora check compares the second run, the CUDA graph's replay (each kernel waiting only for
  // those whose memory it shares, the fake running them in the reverse order where it may),
  // with onnxruntime.
  std::string checked;
  ASSERT_EQ(run(env + "FAKE_CUDA_MODULE=" + artifact_emulation(art, g, tmp.file("emu")) + " " +
                    KORA_CLI_PATH + " check " + art + " " + model,
                &checked),
            0)
      << checked;
  EXPECT_NE(checked.find("checked the second run (the first on other inputs), on Fake GPU, "),
            std::string::npos)
      << checked;
  EXPECT_NE(checked.find(" CUDA graph"), std::string::npos) << checked;
  if (checked_out) *checked_out = checked;
}

// The fake GPU without cuDNN, its GEMMs from the fake cuBLASLt's algorithms.
std::string without_cudnn() {
  return "KORA_CUDNN=/nonexistent/libcudnn.so FAKE_CUBLASLT_ALGOS=" +
         std::to_string(kCublasLtAlgos);
}

// Runs the artifact `art` on the fake driver without cuDNN, its cubins replaced by the
// emulation of its kernels (artifact_emulation), twice on `inputs` (kora run --iters 2);
// the outputs by name into `got`.
void run_on_fake_driver(const kora_test::TempDir& tmp, const std::string& art, const PrimGraph& g,
                        const std::map<std::string, Tensor>& inputs,
                        std::map<std::string, Tensor>& got) {
  const Manifest m = read_manifest(art);
  const std::string lib = artifact_emulation(art, g, tmp.file("emulated"));
  for (const std::string& cubin : m.libraries) std::ofstream(art + "/" + cubin) << lib << '\0';
  record_replaced_cubins(art, m);
  std::string command = fake_libraries() + without_cudnn() + " " + KORA_CLI_PATH + " run " + art +
                        " --iters 2 --output-dir " + tmp.file("out");
  for (const auto& [name, value] : inputs) {
    write_npy(tmp.file(name + ".npy"), value);
    command += " --input " + name + "=" + tmp.file(name + ".npy");
  }
  std::string out;
  ASSERT_EQ(run(command, &out), 0) << out;
  for (const std::string& name : g.outputs)
    got[name] = read_npy(tmp.file("out") + "/" + name + ".npy");
}

// fake_gpu_flow without cuDNN on the model `mb` builds, with random inputs; its primitive
// graph out.
PrimGraph fake_gpu_flow_on(const kora_test::TempDir& tmp, const kora_test::ModelBuilder& mb,
                           bool on_demand = false) {
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::string profiled;
  fake_gpu_flow(tmp, model, g, random_inputs(g), without_cudnn(), &profiled, on_demand);
  return g;
}

TEST(CudaArtifact, ProfileCompileAndRunOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  std::vector<float> w(32 * 16), table(10 * 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 13) / 13 - 0.5f;
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i % 11) / 11;
  mb.input("x", {4, 32}).input("ids", {2, 3}, onnx::TensorProto::INT64);
  mb.init_f32("w", {32, 16}, w).init_f32("table", {10, 16}, table);
  mb.node("MatMul", {"x", "w"}, {"m"});
  mb.node("Softmax", {"m"}, {"s"}, {kora_test::attr_i("axis", -1)});
  mb.node("Gather", {"table", "ids"}, {"e"});
  mb.node("Relu", {"e"}, {"r"});
  mb.output("s").output("r", onnx::TensorProto::FLOAT);
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::map<std::string, Tensor> inputs = random_inputs(g);
  for (int64_t i = 0; i < inputs.at("ids").numel(); ++i)  // the table has 10 rows
    set_element_int(inputs.at("ids"), i, (inputs.at("ids").int64_at(i) + 7) % 10);
  std::string profiled, checked;
  fake_gpu_flow(tmp, model, g, inputs, without_cudnn(), &profiled, false, &checked);
  EXPECT_NE(profiled.find(" stored, 0 failed"), std::string::npos) << profiled;
  // The two branches are independent in the graph: its longest chain is shorter than the plan.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      checked, m, std::regex(R"(CUDA graph of (\d+) kernels, (\d+) on the longest chain)")))
      << checked;
  EXPECT_LT(std::stoi(m[2]), std::stoi(m[1])) << checked;
}

// Two matmuls with a relu between them, a residual add and a softmax into "s": the model
// the measure-on-demand flows run (outputs left to each test).
kora_test::ModelBuilder two_matmuls_and_softmax() {
  kora_test::ModelBuilder mb;
  std::vector<float> w1(32 * 16), w2(16 * 16);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>((i * 7919) % 13) / 13 - 0.5f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>((i * 31) % 7) / 7 - 0.5f;
  mb.input("x", {4, 32}).init_f32("w1", {32, 16}, w1).init_f32("w2", {16, 16}, w2);
  mb.node("MatMul", {"x", "w1"}, {"m"});
  mb.node("Relu", {"m"}, {"r"});
  mb.node("MatMul", {"r", "w2"}, {"n"});
  mb.node("Add", {"n", "m"}, {"a"});
  mb.node("Softmax", {"a"}, {"s"}, {kora_test::attr_i("axis", -1)});
  return mb;
}

// Measured on demand (the default): kora profile's rounds each write and run a job of the
// kernels their plan lacks, fewer than every candidate; the compile then measures nothing
// more, and its artifact matches the interpreter.
TEST(CudaArtifact, MeasureOnDemandOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb = two_matmuls_and_softmax();
  mb.node("Tanh", {"s"}, {"y"});
  mb.output("y");
  fake_gpu_flow_on(tmp, mb, true);
}

// Measured on demand for a GPU elsewhere (kora profile --gpu TEXT --arch ARCH, the fake GPU
// standing in for it): each kora profile stores the results the last job brought back and
// writes a job of the kernels its plan lacks, the first one for a GPU the database holds
// nothing of; after a few rounds the plan has every kernel measured, fewer than every
// candidate, and kora compile for that GPU finds no kernel it must estimate.
TEST(CudaArtifact, MeasureOnDemandForAGpuElsewhereOneJobPerRound) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb = two_matmuls_and_softmax();
  mb.output("s");
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  const std::string env =
      fake_libraries() + without_cudnn() + " KORA_KERNEL_CACHE=" + tmp.file("cache") +
      " KORA_PROFILE_DB=" + tmp.file("profiles.db") +
      " FAKE_CUDA_MODULE=" + emulated_library(two_schedule_job_kernels(g), g, tmp.file("emu")) +
      " ";
  const std::string job = tmp.file("job");
  const std::string profile = env + KORA_CLI_PATH + " profile " + model +
                              " --target cuda --gpu 'Fake GPU' --arch sm_80 --schedules 2 --job " +
                              job;
  int rounds = 0, jobs = 0, asked = 0, generated = 0;
  std::string out;
  // Rounds allowed: 4 on an idle machine; the fake GPU's times are the host's, and under
  // a loaded test run they shift the plans between rounds (8 were once not enough).
  const int kMaxRounds = 16;
  for (; rounds < kMaxRounds; ++rounds) {
    ASSERT_EQ(run(profile, &out), 0) << out;
    EXPECT_EQ(out.find("wrong result"), std::string::npos) << out;
    if (rounds == 0)
      EXPECT_NE(out.find("for cuda|Fake GPU (not measured yet)|sm_80"), std::string::npos) << out;
    else
      EXPECT_NE(out.find(" stored, 0 failed"), std::string::npos) << out;  // the last job's
    if (out.find("every kernel of it measured") != std::string::npos) break;
    EXPECT_NE(out.find("implementations in the job: for a GPU elsewhere"), std::string::npos)
        << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(cuda: (\d+) of (\d+) kernels generated)")))
        << out;
    asked += std::stoi(m[1]);
    generated = std::stoi(m[2]);
    ++jobs;
    // The job, run where the GPU is.
    std::string worked;
    ASSERT_EQ(run(env + KORA_CUDA_WORKER_PATH + " " + job, &worked), 0) << worked;
  }
  // Several rounds, each job a part of the candidates, all of them together fewer.
  EXPECT_GE(jobs, 2) << out;
  EXPECT_LT(rounds, kMaxRounds) << out;
  EXPECT_LT(asked, generated) << out;
  // Compiled for that GPU from here: every kernel of the plan measured on it.
  std::string compiled;
  ASSERT_EQ(run(env + KORA_CLI_PATH + " compile " + model + " --target cuda --gpu 'Fake GPU' -o " +
                    tmp.file("art"),
                &compiled),
            0)
      << compiled;
  EXPECT_NE(compiled.find("costs of cuda|Fake GPU|sm_80"), std::string::npos) << compiled;
  EXPECT_EQ(compiled.find("never measured"), std::string::npos) << compiled;
}

// What the GPU cannot compute (TopK, opaque; its K a constant) runs on the host between GPU
// kernels, its input copied out of device memory and its output back in: the whole flow on
// the fake GPU matches the interpreter.
TEST(CudaArtifact, HostKernelsBetweenGpuKernelsOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {4, 6});
  mb.init_f32("k", {6}, {0.5f, -1, 2, 0.25f, 1, -0.5f});
  mb.node("Mul", {"x", "k"}, {"m"});
  mb.init_i64("kk", {1}, {3});
  mb.node("TopK", {"m", "kk"}, {"v", "i"}, {kora_test::attr_i("axis", 1)});
  mb.node("Tanh", {"v"}, {"y"});
  mb.output("y");
  fake_gpu_flow_on(tmp, mb);
  int host = 0, gpu = 0;
  for (const ManifestKernel& k : read_manifest(tmp.file("art")).kernels)
    ++(k.impl == "interpreter" ? host : gpu);
  EXPECT_EQ(host, 1);
  EXPECT_GE(gpu, 2);  // before and after it
}

// Six kernels that slice one row each (an unrolled cell's time steps) share one signature,
// measured once; each is its own function in the artifact (the instance signature names
// it), so every output holds its own row.
TEST(CudaArtifact, SlicesAtOtherOffsetsAreOtherFunctionsOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {6, 8}).init_i64("axis", {1}, {0});
  for (int t = 0; t < 6; ++t) {
    const std::string n = std::to_string(t);
    mb.init_i64("s" + n, {1}, {t}).init_i64("e" + n, {1}, {t + 1});
    mb.node("Slice", {"x", "s" + n, "e" + n, "axis"}, {"r" + n});
    mb.node("Tanh", {"r" + n}, {"y" + n});
    mb.output("y" + n);
  }
  fake_gpu_flow_on(tmp, mb);
  std::set<std::string> functions;
  int generated = 0;
  for (const ManifestKernel& k : read_manifest(tmp.file("art")).kernels)
    for (const CudaJobLaunch& l : k.cuda.launches) functions.insert(l.function), ++generated;
  EXPECT_GE(generated, 6);
  EXPECT_EQ(static_cast<int>(functions.size()), generated);
}

// n small weights in [-0.5, 0.5), varied by seed.
std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919 + seed) % 17) / 17 - 0.5f;
  return v;
}

// Convolutions on the fake cuDNN (tests/cuda/fake_cudnn.cc, cuDNN's documented
// semantics): one with a bias, a residual and a ReLU, one strided with a bias only (cuDNN
// fuses an identity activation with algorithm 1 only), a pointwise one (also measured as
// a cuBLAS GEMM), one algorithm refused throughout. All are measured, checked against the
// interpreter, chosen and run.
TEST(CudaArtifact, FusedConvolutionsOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {1, 4, 9, 9}).input("res", {1, 6, 9, 9});
  mb.init_f32("w1", {6, 4, 3, 3}, values(216, 1)).init_f32("b1", {6}, values(6, 2));
  mb.init_f32("w2", {3, 4, 3, 3}, values(108, 3)).init_f32("b2", {3}, values(3, 4));
  mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, {kora_test::attr_is("pads", {1, 1, 1, 1})});
  mb.node("Add", {"c1", "res"}, {"a"});
  mb.node("Relu", {"a"}, {"y1"});
  mb.node("Conv", {"x", "w2", "b2"}, {"y2"},
          {kora_test::attr_is("pads", {1, 1, 1, 1}), kora_test::attr_is("strides", {2, 2})});
  mb.init_f32("w3", {5, 4, 1, 1}, values(20, 5));
  mb.node("Conv", {"x", "w3"}, {"y3"});  // pointwise: a GEMM too
  mb.output("y1").output("y2").output("y3");
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::string profiled;
  fake_gpu_flow(tmp, model, g, random_inputs(g),
                std::string("KORA_CUDNN=") + KORA_FAKE_CUDA_PATH + " FAKE_CUDNN_REFUSE=6",
                &profiled);
  EXPECT_NE(profiled.find("cudnn:6"), std::string::npos) << profiled;  // refused, stored failed
  const Manifest m = read_manifest(tmp.file("art"));
  int fused = 0;
  for (const ManifestKernel& k : m.kernels) {
    if (k.cuda.library != "cudnn_conv") continue;
    EXPECT_NE(k.schedule, "cudnn:6");
    if (k.cuda.conv.fused()) {
      ++fused;
      if (!k.cuda.conv.relu) {
        EXPECT_EQ(k.schedule, "cudnn:1");
      }
    }
  }
  EXPECT_GT(fused, 0);
  const ProfileDb db(tmp.file("profiles.db"));  // the pointwise convolution on cuBLAS too
  int gemm = 0;
  for (const ChosenKernel& k : cuda_plan(g, "unfused").kernels)
    for (const ProfileRecord& r : db.records(db.devices().at(0), k.signature))
      gemm += r.schedule == "cublas" && !r.failed;
  EXPECT_EQ(gemm, 1);
}

// An inception block (three branches of convolutions and a pool, concatenated): its
// kernels overlap in the CUDA graph (the longest chain shorter than the plan; the
// branches' intermediates placed apart in the arena), and kora check's replay, which the
// fake runs in the reverse order wherever the dependencies allow, matches onnxruntime.
TEST(CudaArtifact, InceptionBranchesOverlapOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  const auto pad1 = kora_test::attr_is("pads", {1, 1, 1, 1});
  mb.input("x", {1, 4, 9, 9});
  mb.init_f32("w1", {3, 4, 1, 1}, values(12, 1)).init_f32("w2", {3, 4, 1, 1}, values(12, 2));
  mb.init_f32("w3", {3, 3, 3, 3}, values(81, 3)).init_f32("w4", {2, 4, 1, 1}, values(8, 4));
  mb.node("Conv", {"x", "w1"}, {"c1"});
  mb.node("Relu", {"c1"}, {"b1"});
  mb.node("Conv", {"x", "w2"}, {"c2"});
  mb.node("Relu", {"c2"}, {"r2"});
  mb.node("Conv", {"r2", "w3"}, {"b2"}, {pad1});
  mb.node("MaxPool", {"x"}, {"p3"}, {kora_test::attr_is("kernel_shape", {3, 3}), pad1});
  mb.node("Conv", {"p3", "w4"}, {"b3"});
  mb.node("Concat", {"b1", "b2", "b3"}, {"cat"}, {kora_test::attr_i("axis", 1)});
  mb.node("Relu", {"cat"}, {"y"});
  mb.output("y");
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::string profiled, checked;
  fake_gpu_flow(tmp, model, g, random_inputs(g), std::string("KORA_CUDNN=") + KORA_FAKE_CUDA_PATH,
                &profiled, false, &checked);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      checked, m, std::regex(R"(CUDA graph of (\d+) kernels, (\d+) on the longest chain)")))
      << checked;
  EXPECT_LT(std::stoi(m[2]), std::stoi(m[1])) << checked;
  std::printf("[ info     ] %s\n", m[0].str().c_str());
}

// A matrix product read by three independent branches (a softmax, a tanh, a transpose):
// horizontal pairs of their kernels (two kernels in one launch, each on its own blocks).
kora_test::ModelBuilder three_branch_model() {
  kora_test::ModelBuilder mb;
  mb.input("x", {6, 40}).init_f32("w", {40, 40}, values(1600, 5));
  mb.node("MatMul", {"x", "w"}, {"p"});
  mb.node("Softmax", {"p"}, {"y1"}, {kora_test::attr_i("axis", -1)});
  mb.node("Tanh", {"p"}, {"y2"});
  mb.node("Transpose", {"p"}, {"y3"}, {kora_test::attr_is("perm", {1, 0})});
  mb.output("y1").output("y2").output("y3");
  return mb;
}

// A plan taking horizontal pairs (the roofline's launch overhead makes one launch cheaper
// than two) runs on the fake driver like the interpreter: the pair's launches dispatch
// each block to its part.
TEST(CudaArtifact, HorizontalPairsRunOnAFakeDriverLikeTheInterpreter) {
  kora_test::TempDir tmp;
  const std::string model = three_branch_model().save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  const OrchestrationResult plan = cuda_plan(g, "optimal", 16);
  const KernelDag dag = kernel_dag_of(g);
  int pairs = 0;
  for (const ChosenKernel& k : plan.kernels)
    pairs += candidate_parts(dag, make_candidate(dag, k.prims)).size() > 1;
  ASSERT_GE(pairs, 1) << format_orchestration(g, plan);
  CudaArtifactOptions options;
  options.arch = "sm_80";
  options.cache_dir = tmp.file("cubins");
  const std::string art = tmp.file("art");
  write_cuda_artifact(g, plan, nullptr, art, options);
  const Manifest m = read_manifest(art);
  const std::map<std::string, Tensor> inputs = random_inputs(g);
  std::map<std::string, Tensor> got;
  ASSERT_NO_FATAL_FAILURE(run_on_fake_driver(tmp, art, g, inputs, got));
  for (const auto& [name, value] : interpret(g, inputs))
    EXPECT_LT(relative_l2(got.at(name), value), 1e-5) << name;
  std::printf("[ info     ] %d horizontal pairs among %zu kernels\n", pairs, plan.kernels.size());
}

// The whole flow with --horizontal, measuring on demand: the pairs are candidates with
// lower bounds like any, measured when a plan takes one; the solver weighs them against
// their kernels apart, and whatever it emits passes kora check on the replayed CUDA graph.
TEST(CudaArtifact, HorizontalPairsProfiledAndCheckedOnAFakeGpu) {
  kora_test::TempDir tmp;
  const std::string model = three_branch_model().save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::string profiled, checked;
  fake_gpu_flow(tmp, model, g, random_inputs(g), without_cudnn(), &profiled, true, &checked, 16);
  std::ifstream in(tmp.file("art") + "/plan.json");
  const std::string plan((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      plan, m,
      std::regex(
          R"(horizontal fusion: (\d+) pairs of independent kernels offered as one launch each)")))
      << plan.substr(0, 2000);
  EXPECT_GT(std::stoi(m[1]), 0);
  std::printf("[ info     ] %s\n", m[0].str().c_str());
}

// kora's tensor-core GEMM (TF32, an explicit option) where the database measured it
// fastest: the artifact launches it instead of calling cuBLAS, and on the fake driver (the
// emulator's nvcuda::wmma) the model's result is within TF32's tolerance.
TEST(CudaArtifact, KorasTensorCoreGemmRunsOnAFakeDriverWithTf32) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {2, 70, 40}).input("r", {2, 70, 50});
  mb.init_f32("w", {40, 50}, values(2000, 3)).init_f32("b", {50}, values(50, 4));
  mb.node("MatMul", {"x", "w"}, {"m"});
  mb.node("Add", {"m", "b"}, {"mb"});
  mb.node("Add", {"mb", "r"}, {"s"});
  mb.node("Relu", {"s"}, {"y"});
  mb.output("y");
  const PrimGraph g = fission(import_onnx(mb.save(tmp)));
  const OrchestrationResult plan = cuda_plan(g);
  const KernelDag dag = kernel_dag_of(g);
  ProfileDb db(tmp.file("profiles.db"));
  const std::string device = "cuda|Test GPU|sm_80|1 SMs";
  int gemms = 0;
  for (const ChosenKernel& k : plan.kernels) {
    const Candidate c = make_candidate(dag, k.prims);
    if (cuda_gemm_plan(g, dag, c)) {
      ++gemms;
      db.put({device, k.signature, "mma:32x32", 0.1, 0, 3, false, "", ""});
      db.put({device, k.signature, "mma:64x64", 0.2, 0, 3, false, "", ""});
      db.put({device, k.signature, "cublaslt:0", 0.3, 0, 3, false, "", ""});
    } else {
      db.put({device, k.signature, "default", 0.1, 0, 3, false, "", ""});
    }
  }
  ASSERT_EQ(gemms, 1) << format_orchestration(g, plan);
  CudaArtifactOptions options;
  options.device = device;
  options.arch = "sm_80";
  options.cache_dir = tmp.file("cubins");
  options.tf32 = true;
  const std::string art = tmp.file("art");
  write_cuda_artifact(g, plan, &db, art, options);
  const Manifest m = read_manifest(art);
  int mma = 0;
  for (const ManifestKernel& k : m.kernels)
    if (k.schedule == "mma:32x32") {
      ++mma;
      EXPECT_TRUE(k.cuda.library.empty());
      ASSERT_EQ(k.cuda.launches.size(), 1u);
      // 140 rows (the batch folded into rows: w is shared) in 5 tiles, x 2 column tiles
      EXPECT_EQ(k.cuda.launches[0].grid, 5 * 2);
      EXPECT_EQ(k.cuda.launches[0].block, 32);
    }
  ASSERT_EQ(mma, 1);
  const std::map<std::string, Tensor> inputs = random_inputs(g);
  std::map<std::string, Tensor> got;
  ASSERT_NO_FATAL_FAILURE(run_on_fake_driver(tmp, art, g, inputs, got));
  for (const auto& [name, value] : interpret(g, inputs)) {
    const double err = relative_l2(got.at(name), value);
    EXPECT_LT(err, kTf32Tolerance) << name;
    EXPECT_GT(err, 1e-6) << name << ": TF32's rounding shows (a float32 product would not)";
    std::printf("[ info     ] relative L2 %.2e (TF32)\n", err);
  }
}

// Tacker's pair with --tf32 and horizontal pairs: kora's tensor-core GEMM and a CUDA-core
// kernel in one launch, each on its own blocks; the roofline takes it (one launch for two),
// and the artifact runs on the fake driver within TF32's tolerance.
TEST(CudaArtifact, AGemmBesideACudaCoreKernelInOneLaunchOnAFakeDriver) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {2, 24, 40}).init_f32("w1", {40, 40}, values(1600, 5));
  mb.init_f32("w", {40, 36}, values(1440, 6)).init_f32("b", {36}, values(36, 7));
  mb.node("MatMul", {"x", "w1"}, {"xs"});  // a GEMM: neither branch fuses into it
  mb.node("MatMul", {"xs", "w"}, {"m"});
  mb.node("Add", {"m", "b"}, {"mb"});
  mb.node("Relu", {"mb"}, {"y1"});
  mb.node("Tanh", {"xs"}, {"y2"});
  mb.output("y1").output("y2");
  const PrimGraph g = fission(import_onnx(mb.save(tmp)));
  const OrchestrationResult plan = cuda_plan(g, "optimal", 16, true);
  const KernelDag dag = kernel_dag_of(g);
  int pairs = 0;
  for (const ChosenKernel& k : plan.kernels)
    pairs += cuda_mma_pair_supports(g, dag, make_candidate(dag, k.prims));
  ASSERT_EQ(pairs, 1) << format_orchestration(g, plan);
  CudaArtifactOptions options;
  options.arch = "sm_80";
  options.cache_dir = tmp.file("cubins");
  options.tf32 = true;
  const std::string art = tmp.file("art");
  write_cuda_artifact(g, plan, nullptr, art, options);
  const Manifest m = read_manifest(art);
  int launched = 0;
  for (const ManifestKernel& k : m.kernels)
    if (k.schedule == "mma:64x64") {
      ++launched;
      EXPECT_TRUE(k.cuda.library.empty());
      ASSERT_EQ(k.cuda.launches.size(), 1u);
      EXPECT_EQ(k.cuda.launches[0].block, 128);
    }
  ASSERT_EQ(launched, 1);
  const std::map<std::string, Tensor> inputs = random_inputs(g);
  std::map<std::string, Tensor> got;
  ASSERT_NO_FATAL_FAILURE(run_on_fake_driver(tmp, art, g, inputs, got));
  for (const auto& [name, value] : interpret(g, inputs)) {
    const double err = relative_l2(got.at(name), value);
    EXPECT_LT(err, kTf32Tolerance) << name;
    std::printf("[ info     ] %s: relative L2 %.2e\n", name.c_str(), err);
  }
}

// Matrix products on the fake cuBLASLt (tests/cuda/fake_cublaslt.cc, cuBLASLt's documented
// semantics): one with a bias, a residual and a ReLU, one reading a transposed operand in
// place and scaled; cuBLASLt's second algorithm refused throughout. All are measured,
// checked against the interpreter, chosen and run.
TEST(CudaArtifact, FusedGemmsOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  std::vector<float> w(8 * 6), bias(6);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 13) / 13 - 0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i) / 6 - 0.4f;
  mb.input("x", {2, 5, 8}).input("res", {2, 5, 6}).input("q", {2, 5, 8}).input("k", {2, 6, 8});
  mb.init_f32("w", {8, 6}, w).init_f32("b", {6}, bias).init_f32("scale", {}, {0.25f});
  mb.node("MatMul", {"x", "w"}, {"m"});
  mb.node("Add", {"m", "b"}, {"mb"});
  mb.node("Add", {"res", "mb"}, {"s"});
  mb.node("Relu", {"s"}, {"y1"});
  mb.node("Transpose", {"k"}, {"kt"}, {kora_test::attr_is("perm", {0, 2, 1})});
  mb.node("MatMul", {"q", "kt"}, {"qk"});
  mb.node("Mul", {"qk", "scale"}, {"y2"});
  mb.output("y1").output("y2");
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::string profiled;
  fake_gpu_flow(tmp, model, g, random_inputs(g),
                "KORA_CUDNN=/nonexistent/libcudnn.so FAKE_CUBLASLT_REFUSE=1", &profiled);
  EXPECT_NE(profiled.find("cublaslt:1"), std::string::npos) << profiled;  // refused
  EXPECT_NE(profiled.find("cuBLASLt offers 3 algorithms"), std::string::npos) << profiled;
  EXPECT_EQ(profiled.find("wrong result"), std::string::npos) << profiled;
  const Manifest m = read_manifest(tmp.file("art"));
  int fused = 0, transposed = 0;
  for (const ManifestKernel& k : m.kernels) {
    if (k.cuda.library != "cublas_gemm") continue;
    EXPECT_NE(k.schedule, "cublaslt:1");
    fused += k.cuda.gemm.fused();
    transposed += k.cuda.gemm.trans_b;
  }
  EXPECT_GT(fused + transposed, 0);
}

// A folder of ONNX models (the zoo, models/zoo) on the fake GPU, where $KORA_EMULATE_ZOO
// names one (minutes a model, so not in the default run): each model ($KORA_EMULATE_MODELS,
// comma-separated names, else every *.onnx) compiled for the cuda target with each strategy
// ($KORA_EMULATE_STRATEGIES, else all three) at the costs of the database's GPU
// ($KORA_PROFILE_DB, --gpu $KORA_EMULATE_GPU, else the database's only one), then `kora
// check` against onnxruntime with the chosen schedules' generated kernels emulated and the
// library calls on the fake cuBLAS, cuBLASLt and cuDNN: what that GPU would run, less the GPU.
// $KORA_EMULATE_PROFILE=1: no GPU's database needed: each model is first measured on the
// fake GPU itself, on demand, its candidates' default schedules emulated (the costs are the
// emulation's: the plans are valid, not a GPU's). $KORA_EMULATE_HORIZONTAL=N: compiled (and
// profiled) with --horizontal N, the horizontal pairs among the candidates.
// $KORA_EMULATE_ROOFLINE=1: no database at all: each model compiled for the fake GPU at the
// H100 roofline's costs (--no-measure --no-verify), the plan a launch-bound model prefers;
// with $KORA_EMULATE_TF32=1 also --tf32 (GEMMs as kora's tensor-core GEMM where the plan
// has no measurement, pairs of a GEMM and another kernel with --horizontal; slow: the
// emulator computes every fragment in every lane).
TEST(CudaZooEmulated, ChecksEachModelAgainstOnnxruntime) {
  const char* zoo = std::getenv("KORA_EMULATE_ZOO");
  if (!zoo || !*zoo) GTEST_SKIP() << "set KORA_EMULATE_ZOO=DIR to check its models on the fake GPU";
  auto list = [](const char* var, const std::string& fallback) {
    const char* v = std::getenv(var);
    std::vector<std::string> out;
    std::stringstream in(v && *v ? v : fallback);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
  };
  std::vector<std::string> models = list("KORA_EMULATE_MODELS", "");
  if (models.empty())
    for (const auto& e : std::filesystem::directory_iterator(zoo))
      if (e.path().extension() == ".onnx") models.push_back(e.path().stem().string());
  std::sort(models.begin(), models.end());
  const char* gpu = std::getenv("KORA_EMULATE_GPU");
  const std::string gpu_option = gpu && *gpu ? std::string(" --gpu '") + gpu + "'" : "";
  kora_test::TempDir tmp;
  const char* fake_profile = std::getenv("KORA_EMULATE_PROFILE");
  const bool profile_here = fake_profile && std::string(fake_profile) == "1";
  const char* horizontal_env = std::getenv("KORA_EMULATE_HORIZONTAL");
  const int horizontal = horizontal_env && *horizontal_env ? std::stoi(horizontal_env) : 0;
  const std::string horizontal_option =
      horizontal ? " --horizontal " + std::to_string(horizontal) : "";
  const char* roofline_env = std::getenv("KORA_EMULATE_ROOFLINE");
  const bool roofline = roofline_env && std::string(roofline_env) == "1";
  for (const std::string& name : models) {
    const std::string model = std::string(zoo) + "/" + name + ".onnx";
    const PrimGraph g = fission(import_onnx(model));
    std::string env, compile_options;
    if (roofline) {
      env = fake_libraries() + "KORA_CUDNN=" + KORA_FAKE_CUDA_PATH +
            " KORA_KERNEL_CACHE=" + tmp.file("cache") +
            " KORA_PROFILE_DB=" + tmp.file(name + ".db") + " ";
      compile_options = " --no-measure --no-verify";
      const char* tf32 = std::getenv("KORA_EMULATE_TF32");
      if (tf32 && std::string(tf32) == "1") compile_options += " --tf32";
    } else if (profile_here) {
      std::vector<CudaKernel> kernels;
      CudaKernelsOptions options;  // the candidates kora profile enumerates
      options.candidates = cuda_candidate_options(g, options.candidates);
      options.candidates.horizontal_pairs = horizontal;
      for_each_cuda_candidate(g, options, [&](const KernelDag& sub, const Candidate& c) {
        if (!cuda_codegen_supports(g, sub, c)) return;
        kernels.push_back(generate_cuda_kernel(g, sub, c,
                                               cuda_kernel_symbol(instance_signature(g, sub, c), 0),
                                               cuda_schedule_space(g, sub, c).at(0)));
      });
      env = fake_libraries() + "KORA_CUDNN=" + KORA_FAKE_CUDA_PATH +
            " KORA_CUDA_WORKER=" + KORA_CUDA_WORKER_PATH +
            " KORA_KERNEL_CACHE=" + tmp.file("cache") +
            " KORA_PROFILE_DB=" + tmp.file(name + ".db") +
            " FAKE_CUDA_MODULE=" + emulated_library(kernels, g, tmp.file("emu"), "-O1") + " ";
      std::string out;
      ASSERT_EQ(run(env + KORA_CLI_PATH + " profile " + model + " --target cuda --schedules 1" +
                        horizontal_option,
                    &out),
                0)
          << out;
      std::printf("[ info     ] %s: %zu generated candidates emulated; %s\n", name.c_str(),
                  kernels.size(), out.substr(out.rfind('\n', out.size() - 2) + 1).c_str());
    }
    for (const std::string& strategy : list("KORA_EMULATE_STRATEGIES", "optimal,greedy,unfused")) {
      SCOPED_TRACE(name + " " + strategy);
      const std::string art = tmp.file(name + "-" + strategy);
      std::string out;
      ASSERT_EQ(
          run(env + KORA_CLI_PATH + " compile " + model + " --target cuda" + gpu_option +
                  horizontal_option + compile_options + " --strategy " + strategy + " -o " + art,
              &out),
          0)
          << out;
      const std::string lib = artifact_emulation(art, g, tmp.file("emu"), "-O1");
      out.clear();
      const int status = run(fake_libraries() + "FAKE_CUDA_ARCH=" + read_manifest(art).arch +
                                 " KORA_CUDNN=" + KORA_FAKE_CUDA_PATH + " FAKE_CUDA_MODULE=" + lib +
                                 " " + KORA_CLI_PATH + " check " + art + " " + model,
                             &out);
      EXPECT_EQ(status, 0) << out;
      auto line = [&](const std::string& key) {
        const size_t at = out.find(key);
        return at == std::string::npos ? std::string("no ") + key
                                       : out.substr(at, out.find('\n', at) - at);
      };
      std::printf("[ info     ] %s %s: %s; %s\n", name.c_str(), strategy.c_str(),
                  line("max_rel_l2").c_str(), line("checked the second run").c_str());
      std::fflush(stdout);
    }
  }
}

// kora profile --target cuda with the GPU here measures every kernel's default schedule,
// then every schedule of the generated kernels whose default took at least --tune-ms, once.
TEST(CudaArtifact, ProfileTunesTheSlowKernelsOnAFakeGpu) {
  kora_test::TempDir tmp;
  kora_test::ModelBuilder mb;
  mb.input("x", {8, 64}).init_f32("k", {64}, std::vector<float>(64, 0.5f));
  mb.node("Relu", {"x"}, {"r"});
  mb.node("Mul", {"r", "k"}, {"m"});
  mb.node("Sigmoid", {"m"}, {"y"});
  mb.output("y");
  const std::string model = mb.save(tmp);
  const PrimGraph g = fission(import_onnx(model));
  std::vector<CudaKernel> kernels;
  std::map<uint64_t, size_t> spaces;  // generated kernel -> its schedules
  for_each_cuda_candidate(g, CudaKernelsOptions{}, [&](const KernelDag& sub, const Candidate& c) {
    const std::vector<CudaSchedule> space = cuda_schedule_space(g, sub, c);
    spaces[c.signature] = space.size();
    for (size_t k = 0; k < space.size(); ++k)
      kernels.push_back(generate_cuda_kernel(
          g, sub, c, cuda_kernel_symbol(instance_signature(g, sub, c), k), space[k]));
  });
  ASSERT_GE(spaces.size(), 3u);
  const std::string db_path = tmp.file("profiles.db");
  const std::string profile = fake_libraries() + "KORA_CUDA_WORKER=" + KORA_CUDA_WORKER_PATH +
                              " KORA_KERNEL_CACHE=" + tmp.file("cache") +
                              " FAKE_CUDA_MODULE=" + emulated_library(kernels, g, tmp.file("emu")) +
                              " " + KORA_CLI_PATH + " profile " + model +
                              " --target cuda --all --db " + db_path + " --tune-ms ";
  auto records = [&](uint64_t signature) {
    const ProfileDb db(db_path);
    return db.records(db.devices().at(0), signature).size();
  };
  std::string out;
  ASSERT_EQ(run(profile + "1000", &out), 0) << out;  // nothing that slow: defaults only
  EXPECT_EQ(out.find("tuned"), std::string::npos) << out;
  for (const auto& [signature, space] : spaces) EXPECT_EQ(records(signature), 1u);
  out.clear();
  ASSERT_EQ(run(profile + "0", &out), 0) << out;  // every kernel: all its schedules
  EXPECT_NE(out.find("tuned " + std::to_string(spaces.size()) + " kernels"), std::string::npos)
      << out;
  for (const auto& [signature, space] : spaces) EXPECT_EQ(records(signature), space);
  out.clear();
  ASSERT_EQ(run(profile + "0", &out), 0) << out;  // measured once
  EXPECT_EQ(out.find("tuned"), std::string::npos) << out;
}
#endif

TEST(CudaArtifactGpu, RunsLikeTheInterpreterLaunchByLaunchAndAsAGraph) {
  std::string why;
  const auto device = CudaDevice::open(0, &why);
  if (!device) GTEST_SKIP() << "no GPU: " << why;
  const PrimGraph g = artifact_graph(true, true);  // a convolution runs on the host
  kora_test::TempDir tmp;
  for (const std::string strategy : {"optimal", "greedy", "unfused"}) {
    SCOPED_TRACE(strategy);
    CudaArtifactOptions options;
    options.arch = device->arch();
    options.cache_dir = tmp.file("cubins");
    const std::string art = tmp.file(strategy);
    write_cuda_artifact(g, cuda_plan(g, strategy), nullptr, art, options);
    Session session(art);
    const std::map<std::string, Tensor> inputs = random_inputs(g);
    const std::map<std::string, Tensor> want = interpret(g, inputs);
    for (int run = 0; run < 3; ++run) {  // launch by launch, then the graph twice
      const std::map<std::string, Tensor> got = session.run(inputs);
      for (const auto& [name, value] : want)
        EXPECT_LT(relative_l2(got.at(name), value), 1e-5) << name;
    }
    EXPECT_NE(session.device().find("CUDA graph"), std::string::npos) << session.device();
    EXPECT_GT(session.plan_ms(), 0);
    EXPECT_EQ(session.profile_kernels(2).size(), static_cast<size_t>(session.kernels()));
  }
}

}  // namespace
