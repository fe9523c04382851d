// The CUDA measuring worker's loop (the kora-cuda-worker program, src/worker/): a job
// directory (src/cuda/job.h) and an open device in; a results line per kernel
// appended to DIR/results.jsonl out. Per kernel: its program's cubin loaded, its read
// buffers filled as the job says, its launches (or its cuBLAS / cuDNN call) run once and
// every written tensor probed, then warm-up runs and samples timed with CUDA events, L2
// flushed (a memset of twice its size) before every sample, until the median is stable or
// a cap (measure_timed, the CPU's loop, with the job's MeasureOptions: 3 warm-up runs, at
// least 10 samples, then until 5 more move the median less than 1%, or 100 samples, or
// 1 s).
// A kernel whose library this machine lacks (cuBLAS, cuDNN: both optional) fails saying
// so. Each results line is flushed, and kernels the results already hold are skipped, so
// a worker restarted after a crash goes on where it stopped. The worker links this with
// the driver, cuBLAS and cuDNN wrappers, the job's files and kernels' description (job.cc,
// kernel_spec.cc, kernel_call.cc), measure.cc, src/base/compare.cc and progress.cc:
// nothing else of kora.
#pragma once
#include <ostream>
#include <string>

#include "cuda/driver.h"
#include "cuda/job.h"

namespace kora {

struct CudaWorkerProgress {
  int total = 0;         // kernels in the job
  int done = 0;          // with a result before this run
  int ran = 0;           // run now
  bool stopped = false;  // a kernel failed on the GPU: its error is recorded and the run
                         // stopped there (the context may be unusable; start afresh)
};

// Runs the job in `dir` on `device`. Results of another job in DIR/results.jsonl are
// replaced. `progress`: a line now and then (done/total, rate, ETA).
CudaWorkerProgress run_cuda_job(const std::string& dir, CudaDevice& device,
                                std::ostream* progress = nullptr);

class CudaBlas;
class CudaDnn;
// The device (and cuBLAS and cuDNN, when open) as the results header records it.
CudaDeviceInfo cuda_device_info(const CudaDevice& device, const CudaBlas* blas, const CudaDnn* dnn);

}  // namespace kora
