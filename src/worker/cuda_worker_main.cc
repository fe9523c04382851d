// kora-cuda-worker: measures a CUDA job on this machine's GPU. A job directory in (written
// by `kora profile --target cuda`, src/cuda/job.h); DIR/results.jsonl out, which
// `kora profile` checks against the reference and stores. It needs only libc and libm
// (libstdc++ is linked statically) and the CUDA driver (opened with dlopen; cuBLAS and
// cuDNN too, both optional), so it can be copied to a GPU machine that has nothing else
// installed. kora runs the one next to its own executable, or $KORA_CUDA_WORKER.
//
// A supervisor process never touches CUDA: it runs the job in a child and, when the child
// stops on a kernel that failed on the GPU (the context may be unusable) or dies (a
// crash), starts a fresh child that goes on after that kernel; a kernel that killed its
// child is recorded as failed. Exit status: 0 done, 1 bad usage or job, 2 no usable GPU.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "cuda/driver.h"
#include "cuda/job.h"
#include "cuda/worker.h"
#include "kora/error.h"

namespace {

constexpr int kStopped = 3;  // the child's status after recording a GPU failure

int usage() {
  std::cerr << "usage: kora-cuda-worker JOB_DIR [--device N]\n"
               "Measures the kernels of a job written by `kora profile --target cuda` on this\n"
               "machine's GPU; writes JOB_DIR/results.jsonl.\n";
  return 1;
}

// The child: opens the device and runs (the rest of) the job.
int child(const std::string& dir, int ordinal) {
  std::string why;
  std::unique_ptr<kora::CudaDevice> device = kora::CudaDevice::open(ordinal, &why);
  if (!device) {
    std::cerr << "kora-cuda-worker: no usable GPU: " << why << "\n";
    return 2;
  }
  try {
    const kora::CudaWorkerProgress p = kora::run_cuda_job(dir, *device, &std::cerr);
    if (p.stopped) return kStopped;
    std::cerr << "kora-cuda-worker: " << p.total << " kernels on " << device->name() << " ("
              << p.done << " measured before)\n";
    return 0;
  } catch (const kora::Error& e) {
    std::cerr << "kora-cuda-worker: " << e.what() << "\n";
    return 1;
  }
}

// How many results the file holds for this job, and the first kernel without one.
size_t results_held(const std::string& dir, const kora::CudaJob& job, size_t* first_missing) {
  std::set<std::pair<uint64_t, std::string>> done;
  try {
    const kora::CudaResults r = kora::read_cuda_results(dir);
    if (r.job_id == job.id)
      for (const kora::CudaResult& x : r.results) done.insert({x.signature, x.schedule});
  } catch (const kora::Error&) {
  }
  *first_missing = job.kernels.size();
  for (size_t i = 0; i < job.kernels.size(); ++i)
    if (!done.count({job.kernels[i].signature, job.kernels[i].schedule})) {
      *first_missing = i;
      break;
    }
  return done.size();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int ordinal = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    }
    if (a == "--device" && i + 1 < argc) {
      ordinal = std::atoi(argv[++i]);
    } else if (dir.empty() && a[0] != '-') {
      dir = a;
    } else {
      return usage();
    }
  }
  if (dir.empty()) return usage();
  kora::CudaJob job;
  try {
    job = kora::read_cuda_job(dir);
  } catch (const kora::Error& e) {
    std::cerr << "kora-cuda-worker: " << e.what() << "\n";
    return 1;
  }
  int fruitless = 0;  // children in a row that added nothing
  for (;;) {
    size_t missing = 0;
    const size_t before = results_held(dir, job, &missing);
    if (missing == job.kernels.size()) return 0;
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = fork();
    if (pid < 0) {
      std::cerr << "kora-cuda-worker: fork failed: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (pid == 0) _exit(child(dir, ordinal));
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) != kStopped) return WEXITSTATUS(status);
    size_t now_missing = 0;
    const size_t after = results_held(dir, job, &now_missing);
    if (WIFSIGNALED(status) && now_missing == missing && after > 0) {
      // The child died on this kernel without recording it: record it as failed.
      kora::CudaResult r;
      r.signature = job.kernels[missing].signature;
      r.schedule = job.kernels[missing].schedule;
      r.error = "the worker died on it (signal " + std::to_string(WTERMSIG(status)) + ": " +
                strsignal(WTERMSIG(status)) + ")";
      std::ofstream(kora::cuda_results_file(dir), std::ios::app)
          << kora::cuda_result_line(r) << "\n";
      std::cerr << "kora-cuda-worker: kernel " << job.kernels[missing].name << " ("
                << job.kernels[missing].schedule << "): " << r.error << "\n";
    }
    if (results_held(dir, job, &now_missing) == before) {
      if (++fruitless == 3) {
        std::cerr << "kora-cuda-worker: three restarts in a row made no progress; stopping\n";
        return 1;
      }
    } else {
      fruitless = 0;
    }
  }
}
