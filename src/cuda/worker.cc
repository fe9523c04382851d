// The CUDA measuring worker's loop (src/cuda/worker.h): a job directory and a
// device in; per kernel a results line appended out: probes of its outputs after a first
// run, then its median time over samples timed with CUDA events, L2 flushed before each.
#include "cuda/worker.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "base/progress.h"
#include "base/read_file.h"
#include "cuda/blas.h"
#include "cuda/dnn.h"
#include "cuda/kernel_call.h"
#include "kora/error.h"

namespace kora {
namespace {

// Device buffers freed when it goes.
struct Buffers {
  CudaDevice& device;
  std::vector<CudaDevice::Ptr> ptrs;
  explicit Buffers(CudaDevice& d) : device(d) {}
  ~Buffers() {
    for (CudaDevice::Ptr p : ptrs) device.free(p);
  }
};

// The libraries library kernels call, where this machine has them.
struct Libraries {
  std::string no_blas, no_dnn;  // why not, when missing
  std::unique_ptr<CudaBlas> blas = CudaBlas::open(&no_blas);
  std::unique_ptr<CudaDnn> dnn = CudaDnn::open(&no_dnn);
  // Why the kernel cannot run here ("" when it can).
  std::string missing(const CudaJobKernel& k) const {
    if (k.library == "cublas_gemm" && !blas) return "no cuBLAS on this machine: " + no_blas;
    if (k.library == "cudnn_conv" && !dnn) return "no cuDNN on this machine: " + no_dnn;
    return "";
  }
};

// Runs one kernel: its result (probes and time), or throws kora::Error.
CudaResult run_kernel(const CudaJob& job, const CudaJobKernel& k, CudaDevice& device,
                      CudaDevice::Module* module, Libraries& libs, const std::string& data,
                      CudaDevice::Ptr flush, size_t flush_bytes) {
  CudaResult r;
  r.signature = k.signature;
  r.schedule = k.schedule;
  Buffers buffers(device);
  std::vector<char> host;
  for (const CudaJobBuffer& b : k.reads) {
    // The GPU's memory first: a buffer larger than it fails there, before the host's.
    buffers.ptrs.push_back(device.alloc(static_cast<size_t>(b.bytes())));
    host.resize(static_cast<size_t>(b.bytes()));
    cuda_job_fill(b, data, host.data());
    device.to_device(buffers.ptrs.back(), host.data(), host.size());
  }
  for (const CudaJobBuffer& b : k.writes) {
    buffers.ptrs.push_back(device.alloc(static_cast<size_t>(b.bytes())));
    device.memset(buffers.ptrs.back(), 0, static_cast<size_t>(b.bytes()));
  }
  const CudaCall call(k, device, module, libs.blas.get(), libs.dnn.get());
  CudaDevice::Ptr workspace = 0;
  if (call.workspace_bytes())
    buffers.ptrs.push_back(workspace = device.alloc(call.workspace_bytes()));
  const std::vector<CudaDevice::Ptr> args(buffers.ptrs.begin(),
                                          buffers.ptrs.begin() + k.reads.size() + k.writes.size());
  auto run = [&] { call.enqueue(args, workspace); };
  run();
  device.synchronize();
  for (size_t w = 0; w < k.writes.size(); ++w) {
    const CudaJobBuffer& b = k.writes[w];
    host.resize(static_cast<size_t>(b.bytes()));
    device.to_host(host.data(), buffers.ptrs[k.reads.size() + w], host.size());
    r.probes.push_back(cuda_probe(b.dtype, host.data(), b.count));
  }

  // Warm-up and samples as on the CPU (measure_timed), each timed by CUDA events after
  // flushing L2.
  const Measurement m = measure_timed(
      [&](int index) {
        device.memset(flush, static_cast<unsigned char>(index), flush_bytes);
        return device.elapsed_ms(run);
      },
      job.measure);
  r.median_ms = m.median_ms;
  r.spread_ms = m.spread_ms;
  r.samples = m.samples;
  return r;
}

}  // namespace

CudaDeviceInfo cuda_device_info(const CudaDevice& d, const CudaBlas* blas, const CudaDnn* dnn) {
  return {d.name(),
          d.arch(),
          d.sm_count(),
          d.driver_version(),
          d.l2_bytes(),
          blas ? blas->version() : 0,
          dnn ? dnn->version() : 0};
}

CudaWorkerProgress run_cuda_job(const std::string& dir, CudaDevice& device,
                                std::ostream* progress) {
  const CudaJob job = read_cuda_job(dir);
  if (job.arch != device.arch())
    throw Error(cuda_job_file(dir) + ": compiled for " + job.arch + ", but " + device.name() +
                " is " + device.arch() + " (run kora profile --target cuda --arch " +
                device.arch() + ")");
  const std::string data = read_file(cuda_data_file(dir));
  CudaWorkerProgress out;
  out.total = static_cast<int>(job.kernels.size());

  // What the results already hold (of this job).
  std::set<std::pair<uint64_t, std::string>> done;
  const std::string results_path = cuda_results_file(dir);
  bool fresh = true;
  try {
    const CudaResults prior = read_cuda_results(dir);
    if (prior.job_id == job.id) {
      fresh = false;
      for (const CudaResult& r : prior.results) done.insert({r.signature, r.schedule});
    }
  } catch (const Error&) {
  }
  Libraries libs;
  std::ofstream results(results_path, fresh ? std::ios::trunc : std::ios::app);
  if (!results) throw Error(results_path + ": cannot write");
  results << cuda_results_header(job.id, cuda_device_info(device, libs.blas.get(), libs.dnn.get()))
          << "\n"
          << std::flush;

  const size_t flush_bytes = static_cast<size_t>(std::max<int64_t>(2 * device.l2_bytes(), 1 << 20));
  const CudaDevice::Ptr flush = device.alloc(flush_bytes);
  Progress bar(progress, "kora-cuda-worker: measure", out.total, "kernels", false);
  int program = -1;
  std::shared_ptr<CudaDevice::Module> module;
  for (const CudaJobKernel& k : job.kernels) {
    if (done.count({k.signature, k.schedule})) {
      ++out.done;
      continue;
    }
    CudaResult r;
    if (const std::string why = libs.missing(k); !why.empty()) {  // not a GPU fault: go on
      r.signature = k.signature;
      r.schedule = k.schedule;
      r.error = why;
      results << cuda_result_line(r) << "\n" << std::flush;
      bar.update(out.done + ++out.ran);
      continue;
    }
    try {
      if (k.library.empty() && k.program != program) {
        module.reset();
        module = device.load(read_file(dir + "/" + job.programs.at(k.program)));
        program = k.program;
      }
      r = run_kernel(job, k, device, module.get(), libs, data, flush, flush_bytes);
    } catch (const CudaUnsupported& e) {  // the library refused the shape: go on
      r = CudaResult();
      r.signature = k.signature;
      r.schedule = k.schedule;
      r.error = e.what();
    } catch (const Error& e) {
      r = CudaResult();
      r.signature = k.signature;
      r.schedule = k.schedule;
      r.error = e.what();
      out.stopped = true;
    }
    results << cuda_result_line(r) << "\n" << std::flush;
    ++out.ran;
    bar.update(out.done + out.ran);
    if (out.stopped) return out;  // the context may be unusable after a fault
  }
  bar.finish();
  module.reset();
  device.free(flush);
  return out;
}

}  // namespace kora
