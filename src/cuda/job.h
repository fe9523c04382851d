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
// (cuda_job_fill): float tensors (constants included) and bools random, non-constant
// integers 0; so worker and kora compute on the same inputs without shipping them, and a
// job stays small (MobileNetV2's, 1,808 implementations in 25 programs for sm_90: 6.2 MB).
// kora writes it to cuda-jobs/MODEL-ARCH next to the database unless told otherwise.
// The kernels themselves, and their JSON objects, are src/cuda/kernel_spec.h's (a CUDA
// artifact's manifest holds them too). This header and src/cuda/job.cc use nothing of kora
// but kora::Error, the kernels' description and the correctness rule (src/base/compare.cc,
// standard library only).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/measure.h"
#include "cuda/kernel_spec.h"

namespace kora {

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
// content (kData). kRandom: element i from splitmix64 of (splitmix64(seed) + i), float32
// uniform in [-1, 1) from 24 random bits, bool from the top bit; integers 0.
void cuda_job_fill(const CudaJobBuffer& buffer, const std::string& data, void* out);
// The probe of a tensor of `dtype` (as in CudaJobBuffer) and `count` elements.
CudaProbe cuda_probe(const std::string& dtype, const void* elements, int64_t count);
// Probe k's element: k itself for a tensor of at most kPoints elements, else a fixed
// pseudo-random position (splitmix64 of k).
int64_t cuda_probe_position(int k, int64_t count);
// Empty when `got` matches `want` (the reference): the same non-finite count, probe values
// by kora's correctness rule (src/base/compare.h: non-finite values equal, relative L2 error
// within `tolerance`), sums of squares within 3 x tolerance relatively; else what differs.
std::string compare_cuda_probes(const CudaProbe& got, const CudaProbe& want, double tolerance);

}  // namespace kora
