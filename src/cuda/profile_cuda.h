// Profiling a model for a CUDA GPU (`kora profile --target cuda`): a primitive graph, a
// profile database and options in; the model's CUDA kernels measured, checked and stored
// under the GPU's fingerprint out. The GPU side is the standalone worker (kora-cuda-worker,
// src/cuda/worker.h), so measuring works where kora itself cannot be installed:
//   1. every distinct candidate x schedule is generated and compiled
//      (src/cuda/compile_kernels.h) and written as a job directory (src/cuda/job.h);
//   2. on a machine with a usable GPU, kora runs the worker on the job; elsewhere the job is
//      left for a worker on a GPU machine (copy the directory there, run kora-cuda-worker
//      DIR, copy DIR/results.jsonl back);
//   3. results present: every result's probes are compared with the reference interpreter
//      run on the same inputs (cuda_job_fill; float32 within the tolerance, other dtypes
//      exactly: compare_cuda_probes), and the results are stored: measured ones with their
//      median, failed and wrong ones as failed with the reason (never used), and so are the
//      implementations NVRTC rejected.
// With a GPU here, kernels the database holds for it are left out of the job; without
// one, --gpu TEXT names the GPU the job is for (remote_device), whose measured kernels are
// left out likewise. With the GPU here kora profile measures in two rounds by default:
// every kernel's default schedule (and every library schedule), then a second job
// (DIR-tune) with the other schedules of the generated kernels whose default took at
// least tune_ms (--tune-ms, 0.01 ms) and that were not tuned before. --schedules N keeps
// the first N of each kernel's schedule space instead.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cpu/profile.h"
#include "cuda/compile_kernels.h"
#include "cuda/job.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

// The GPU's device fingerprint in the profile database: name, architecture, SM count,
// driver, cuBLAS and cuDNN versions, the NVRTC that compiled the kernels and the
// generator's revision:
// "cuda|NAME|sm_XX|N SMs|driver V|cublas V|cudnn V|nvrtc V|kora-cuda-gen R[ tf32]".
std::string cuda_fingerprint(const CudaDeviceInfo& device, const std::string& compiler,
                             const std::string& codegen);

class CudaDevice;
// The fingerprint of `device` as kora profile stores its measurements (with this machine's
// cuBLAS, cuDNN and NVRTC).
std::string local_cuda_fingerprint(const CudaDevice& device, bool tf32 = false);

// The GPU whose measurements orchestrate and compile for the cuda target use, and its
// architecture (*arch): the GPU here when there is one and `gpu` is empty; else the one
// GPU fingerprint in `db` containing `gpu` (of measurements with TF32 library math when
// `tf32`, else without). Throws kora::Error when there is none (saying how to measure) or
// several (listing them).
std::string cuda_target_device(const ProfileDb& db, const std::string& gpu, std::string* arch,
                               bool tf32 = false);

struct CudaMergeSummary {
  std::string device;   // the fingerprint stored under
  int64_t results = 0;  // result lines of the job
  int64_t missing = 0;  // job kernels without a result (a worker still running, or stopped)
  int64_t stored = 0;   // measured and checked
  std::vector<ProfileFailure> failures;  // failed on the GPU, or wrong results
};

// Checks DIR/results.jsonl against the reference and stores the results in `db`. Throws
// kora::Error when DIR holds no job or no results of its job (naming what to run).
CudaMergeSummary merge_cuda_results(const PrimGraph& graph, const std::string& dir, ProfileDb& db,
                                    const CudaKernelsOptions& options, double tolerance = 1e-4);

// The results kora-cuda-worker wrote next to the job in DIR, for a GPU elsewhere, checked
// and stored as merge_cuda_results does; nullopt when DIR holds no job, or no results of
// it. Measure on demand for a GPU elsewhere (kora profile --gpu) calls it before each
// round's solve, whose new job then replaces that one.
std::optional<CudaMergeSummary> merge_pending_cuda_results(const PrimGraph& graph,
                                                           const std::string& dir, ProfileDb& db,
                                                           const CudaKernelsOptions& options,
                                                           double tolerance = 1e-4);

// The device a first round of measure on demand costs for a GPU elsewhere that the
// database holds no measurement of (kora profile --gpu TEXT --arch ARCH): no kernel is
// measured under it, and nothing is stored under it (the results come back under the
// GPU's own fingerprint, found by TEXT the next round).
std::string cuda_unmeasured_device(const std::string& gpu, const std::string& arch, bool tf32);
bool is_cuda_unmeasured_device(const std::string& device);
// Whether the database holds measurements of a GPU whose fingerprint contains `gpu`.
bool cuda_gpu_measured(const ProfileDb& db, const std::string& gpu, bool tf32);

struct CudaProfileOptions {
  CudaKernelsOptions kernels;  // kernels.job_dir: where the job goes (required)
  double tolerance = 1e-4;     // relative L2 error vs the interpreter
  // With a GPU here and kernels.max_schedules -1: every kernel's default schedule first,
  // then every schedule of the generated kernels whose default took at least tune_ms.
  double tune_ms = 0.01;
  // Without a GPU here: the fingerprint of the GPU the job is for (kora profile --gpu),
  // whose measurements in the database the job leaves out.
  std::string remote_device;
  bool elsewhere = false;  // the job is for a GPU elsewhere (kora profile --gpu)
  // Measure only these kernels (by signature; measure on demand), or every candidate.
  std::optional<std::set<uint64_t>> only;
  bool run_worker = true;  // run the worker when this machine has a usable GPU
  std::string worker;      // the worker program; empty: $KORA_CUDA_WORKER, else
                           // kora-cuda-worker next to the running executable
};

struct CudaProfileSummary {
  CudaKernelsSummary kernels;
  bool ran_worker = false;
  bool merged = false;  // results were checked and stored (merge below)
  CudaMergeSummary merge;
  std::string next;  // when nothing was stored: what to do to measure
  // The second round (kernels.max_schedules -1): kernels whose every schedule was then
  // measured, and what was stored.
  int64_t tuned = 0;
  CudaMergeSummary tune;
};

CudaProfileSummary profile_model_cuda(const PrimGraph& graph, ProfileDb& db,
                                      const CudaProfileOptions& options);
std::string format_cuda_profile_summary(const CudaProfileSummary& summary);

// Where kora profile and kora compile put a model's job by default: cuda-jobs/MODEL-ARCH
// next to the database (MODEL: the model file's name without extension).
std::string default_cuda_job_dir(const std::string& db_path, const std::string& model_path,
                                 const std::string& arch);

// The worker program kora runs: `configured`, else $KORA_CUDA_WORKER, else
// kora-cuda-worker in the running executable's directory ("" when none is there).
std::string find_cuda_worker(const std::string& configured = "");

}  // namespace kora
