// A CUDA measuring job (DESIGN.md, "Backends", cuda): what kora hands the standalone
// measuring worker and what the worker hands back. kora generates and compiles the kernels
// on any machine and writes a job directory:
//   DIR/job.json       the kernels: per (signature, schedule) its program, its launches
//                      and its buffers (what each read tensor holds, each written tensor's
//                      size), plus the measuring options;
//   DIR/program_N.cubin the compiled programs (many kernels each);
//   DIR/data.bin       the bytes of read tensors carried as data (integer constants:
//                      indices must be real).
// The worker (kora-cuda-worker, linked only against the C++ runtime; the driver is opened
// with dlopen) runs each kernel on the GPU and appends one line per kernel to
// DIR/results.jsonl: a header line first (the device), then per kernel its median time
// (CUDA events, L2 flushed before every sample) or its error, and a probe of every written
// tensor, which kora compares with the reference interpreter before storing anything.
// Read tensors not carried as data are filled by a counter-based generator
// (cuda_job_fill), so worker and kora compute on the same inputs without shipping them.
// This header and src/cuda/job.cc use nothing of kora but kora::Error and the correctness
// rule (src/base/compare.cc, standard library only).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/measure.h"

namespace kora {

// What a read tensor holds: uniform floats in [-1, 1) / random 0-1 bools (kRandom), zeros
// (kZero: non-constant integers, a valid index into any axis), or bytes of DIR/data.bin.
enum class CudaFill { kRandom, kZero, kData };

struct CudaJobBuffer {
  std::string dtype = "float32";  // float32, int64, int32, bool (1 byte)
  int64_t count = 0;              // elements
  CudaFill fill = CudaFill::kRandom;
  uint64_t seed = 0;        // kRandom: the generator's seed
  int64_t data_offset = 0;  // kData: where its bytes start in data.bin
  int64_t bytes() const;    // count x element size
};

struct CudaJobLaunch {
  std::string function;
  int64_t grid = 0;
  int block = 0;
};

// A row-major batched matrix product D[b] = act(alpha A[b] B[b] + C[b] + bias) (A m x k,
// B k x n, D m x n), run by cuBLAS. An operand is read in place from a view of its tensor:
// a batch stride (0 broadcasts it), a row stride (ld) and, transposed, stored as k x m
// (A) or n x k (B). The epilogue (a residual C of D's layout, a bias of n values added to
// every row, then a ReLU) is cuBLASLt's; a plain product runs on either library.
struct CudaGemm {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batches (C: D's)
  int64_t ld_a = 0, ld_b = 0;  // elements between stored rows; 0: dense (k, n; transposed m, k)
  bool trans_a = false, trans_b = false;  // stored transposed
  int read_a = 0, read_b = 1;             // A's and B's indices among the kernel's reads
  float alpha = 1;
  int read_bias = -1, read_c = -1;  // the bias's (n values) and the residual's, -1: none
  bool relu = false;
  int algo = -1;      // -1: cublasSgemmStridedBatched; i >= 0: cuBLASLt's i-th heuristic choice
  bool tf32 = false;  // TF32 tensor-core math (an explicit option); else full float32
  bool fused() const { return read_bias >= 0 || read_c >= 0 || relu; }
  int64_t lda() const { return ld_a ? ld_a : (trans_a ? m : k); }
  int64_t ldb() const { return ld_b ? ld_b : (trans_b ? k : n); }
};

// How many of cuBLASLt's heuristic choices a GEMM is measured with (schedules
// "cublaslt:0" ...; plain products also "cublas").
constexpr int kCublasLtAlgos = 8;

// The column-major call that computes a CudaGemm: D^T = B^T A^T, so cuBLAS's first
// operand is the job's B (transposed by op T where the job's is stored transposed).
struct CublasGemmCall {
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // of cuBLAS's A, B, C
  bool trans_a = false, trans_b = false;             // cuBLAS's op T
  float alpha = 1;
  bool tf32 = false;
};
// Throws kora::Error when a size does not fit cuBLAS's 32-bit integers.
CublasGemmCall cublas_gemm_call(const CudaGemm& gemm);

// A float32 convolution (NCHW, cross-correlation, symmetric zero padding, groups) run by
// cuDNN with forward algorithm `algo` (cudnnConvolutionFwdAlgo_t); with a bias, the fused
// epilogue y = act(conv(x, w) + z + bias) of cudnnConvolutionBiasActivationForward (z, a
// residual of y's shape, optional; act ReLU or identity).
struct CudaConv {
  std::vector<int64_t> x, w, y;  // dims: [N, C, S...], [M, C/group, K...], [N, M, O...]
  std::vector<int64_t> pads, strides, dilations;  // per spatial dim
  int64_t group = 1;
  int algo = 0;
  int read_x = 0, read_w = 1;  // X's and W's indices among the kernel's reads
  int read_bias = -1;          // the bias's (M elements), -1: no epilogue
  int read_z = -1;             // the residual's, -1: none
  bool relu = false;
  bool tf32 = false;  // TF32 tensor-core math (an explicit option); else FMA, full float32
  bool fused() const { return read_bias >= 0; }
};

// A library call's operands as indices into its kernel's reads (A, B, bias, residual; X, W,
// bias, z: the last two -1 when absent): "" when they are the `reads` reads, each once (so
// the plan readers and CudaCall agree); else what is wrong.
std::string cuda_library_operands_problem(const std::vector<int>& operands, size_t reads);
std::vector<int> cuda_gemm_operands(const CudaGemm& g);
std::vector<int> cuda_conv_operands(const CudaConv& c);

// One implementation: a kernel signature with one schedule. Every launch takes a pointer
// per read buffer, then per written buffer, in order. A library kernel (schedule "cublas",
// "cublaslt:I" or "cudnn:ALGO") has no program or launches: it reads A and B (X and W), and
// the epilogue's bias and residual, and writes D (Y).
struct CudaJobKernel {
  uint64_t signature = 0;
  std::string schedule;
  int program = 0;      // index into CudaJob::programs; -1 for a library kernel
  std::string library;  // "" (generated), "cublas_gemm" or "cudnn_conv"
  CudaGemm gemm;        // library "cublas_gemm"
  CudaConv conv;        // library "cudnn_conv"
  std::vector<CudaJobBuffer> reads, writes;
  std::vector<CudaJobLaunch> launches;
  std::string name;  // the kernel's primitives, for messages
};

struct CudaJob {
  static constexpr int kFormat = 3;  // 2: fused convolutions, 3: cuBLASLt GEMMs
  std::string arch;                  // the cubins' architecture ("sm_90")
  std::string compiler;              // nvrtc_version() of the kora that compiled them
  std::string codegen;               // the generator's revision, part of the fingerprint
  MeasureOptions measure = {3, 10, 100, 1.0, 0.01};  // measure_timed's, with CUDA events
  std::vector<std::string> programs;  // cubin file names, relative to the job directory
  std::vector<CudaJobKernel> kernels;
  std::string id;  // content hash of the above: results name the job they measured
};

// What a worker saw of its GPU (the results' header line).
struct CudaDeviceInfo {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;  // "sm_90"
  int sms = 0;       // multiprocessors
  int driver = 0;    // cuDriverGetVersion, e.g. 12040
  int64_t l2_bytes = 0;
  int cublas = 0;  // cublasGetVersion; 0 when the worker found no cuBLAS
  int cudnn = 0;   // cudnnGetVersion; 0 when the worker found no cuDNN
};

// A written tensor as the worker left it: at most kPoints elements at positions
// cuda_probe_position(k, count), the sum of squares of its finite elements and how many
// were not finite.
struct CudaProbe {
  static constexpr int kPoints = 64;
  int64_t count = 0;
  double sum_squares = 0;
  int64_t nonfinite = 0;
  std::vector<double> values;  // NaN and infinities as such
};

struct CudaResult {
  uint64_t signature = 0;
  std::string schedule;
  double median_ms = 0, spread_ms = 0;
  int samples = 0;
  std::string error;              // non-empty: the kernel failed on the GPU (launch error, ...)
  std::vector<CudaProbe> probes;  // per written buffer
};

// The job's files.
std::string cuda_job_file(const std::string& dir);      // DIR/job.json
std::string cuda_results_file(const std::string& dir);  // DIR/results.jsonl
std::string cuda_data_file(const std::string& dir);     // DIR/data.bin

// job.json <-> CudaJob. write_cuda_job sets job.id. Reading checks the format and throws
// kora::Error naming the file and what is wrong.
void write_cuda_job(const std::string& dir, CudaJob& job);
CudaJob read_cuda_job(const std::string& dir);

// One kernel as job.json holds it (a CUDA artifact's manifest holds its kernels so too);
// reading checks it and throws kora::Error saying what is wrong (`programs`: how many
// programs its `program` may name).
std::string cuda_job_kernel_json(const CudaJobKernel& kernel);
CudaJobKernel cuda_job_kernel_from_json(const std::string& text, size_t programs);

// Results lines. The header names the job and the device; then one line per result.
std::string cuda_results_header(const std::string& job_id, const CudaDeviceInfo& device);
std::string cuda_result_line(const CudaResult& result);
struct CudaResults {
  std::string job_id;
  CudaDeviceInfo device;
  std::vector<CudaResult> results;
};
// Reads DIR/results.jsonl (a truncated last line, from a killed worker, is ignored).
// Throws kora::Error when the file is missing or its header is not a results header.
CudaResults read_cuda_results(const std::string& dir);

// Fills `out` (buffer.bytes() bytes) with what the buffer holds; `data` is data.bin's
// content (kData).
void cuda_job_fill(const CudaJobBuffer& buffer, const std::string& data, void* out);
// The probe of a tensor of `dtype` (as in CudaJobBuffer) and `count` elements.
CudaProbe cuda_probe(const std::string& dtype, const void* elements, int64_t count);
int64_t cuda_probe_position(int k, int64_t count);
// Empty when `got` matches `want` (the reference): the same non-finite count, probe values
// by kora's correctness rule (src/base/compare.h: non-finite values equal, relative L2 error
// within `tolerance`), sums of squares within 3 x tolerance relatively; else what differs.
std::string compare_cuda_probes(const CudaProbe& got, const CudaProbe& want, double tolerance);

}  // namespace kora
