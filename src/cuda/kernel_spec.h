// How one CUDA kernel is launched, as kora describes it to whoever runs it: the measuring
// worker (a job's job.json, src/cuda/job.h) and the runtime (a CUDA artifact's
// manifest.json, src/runtime/manifest.h). A CudaJobKernel is either a generated kernel (its
// program and the launches of its functions, each with its grid and block) or a library
// call (a cuBLAS / cuBLASLt GEMM, a cuDNN convolution, with which reads are its operands),
// plus its read and written buffers (dtype, size, what a read holds when measured); and its
// JSON object, which the job and the manifest both hold (reading checks it). The names keep
// the "job" of where they began: the job's format and the manifest's are the same.
// This header and src/cuda/kernel_spec.cc use nothing of kora but kora::Error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

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

// The largest buffer a job or a CUDA artifact may describe: 2^40 elements, the frontend's
// limit on a tensor (so a buffer's bytes never overflow int64).
constexpr int64_t kCudaMaxBufferElements = int64_t{1} << 40;

// Checked fields of job.json, results.jsonl and a manifest's CUDA kernels (a hostile file
// must not reach a float-to-int conversion out of range or a std::stoull exception): the
// integer j[key] within [lo, hi] (an integer in the JSON, not a float); the finite number
// j[key]; 1 to 16 hex digits (or decimal digits) as uint64. Throw nlohmann::json::exception
// where the field is missing, kora::Error naming `key` where it is mistyped or out of range.
int64_t cuda_json_int(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi);
double cuda_json_finite(const nlohmann::json& j, const char* key);
uint64_t cuda_parse_hex64(const std::string& text, const char* what);
uint64_t cuda_parse_u64(const std::string& text, const char* what);

// One kernel as job.json holds it (a CUDA artifact's manifest holds its kernels so too);
// reading checks it and throws kora::Error saying what is wrong (`programs`: how many
// programs its `program` may name).
std::string cuda_job_kernel_json(const CudaJobKernel& kernel);
CudaJobKernel cuda_job_kernel_from_json(const std::string& text, size_t programs);
// The same as a JSON object, for files holding many kernels (job.json): reading throws
// nlohmann::json::exception where a field is missing or mistyped, kora::Error where values
// do not agree.
nlohmann::json cuda_job_kernel_to_json(const CudaJobKernel& kernel);
CudaJobKernel cuda_job_kernel_of_json(const nlohmann::json& kernel, size_t programs);

}  // namespace kora
