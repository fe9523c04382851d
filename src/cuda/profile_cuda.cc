// Profiling a model for a CUDA GPU (src/cuda/profile_cuda.h): generate and compile into
// a job, run the worker where a GPU is usable, check the results' probes against the
// reference interpreter and store them under the GPU's fingerprint.
#include "cuda/profile_cuda.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/file_lock.h"
#include "base/read_file.h"
#include "cuda/blas.h"
#include "cuda/codegen.h"
#include "cuda/dnn.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/worker.h"
#include "kora/check.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/profile_db.h"

namespace kora {
namespace {

// The reference's probes of a kernel: its members run by the interpreter, in order, on the
// job's inputs (constants included: float constants are random in the job too).
std::vector<CudaProbe> reference_probes(const PrimGraph& graph, const KernelDag& sub,
                                        const Candidate& c, const CudaJobKernel& k,
                                        const std::string& data) {
  const std::vector<std::string> reads = kernel_reads(graph, sub, c),
                                 writes = kernel_writes(graph, sub, c);
  if (reads.size() != k.reads.size() || writes.size() != k.writes.size())
    throw Error("the job's buffers do not match the kernel");
  std::map<std::string, Tensor> values;
  std::vector<char> bytes;
  for (size_t i = 0; i < reads.size(); ++i) {
    bytes.resize(static_cast<size_t>(k.reads[i].bytes()));
    cuda_job_fill(k.reads[i], data, bytes.data());
    const ValueInfo& v = graph.value(reads[i]);
    values[reads[i]] = Tensor(v.dtype, v.shape, bytes.data(), bytes.size());
  }
  for (int m : c.members) {
    const Primitive& p = graph.prims[sub.prim[m]];
    std::vector<const Tensor*> args;
    for (const std::string& t : p.inputs) args.push_back(&values.at(t));
    std::vector<Tensor> out = run_primitive(graph, p, args);
    for (size_t o = 0; o < out.size(); ++o) values[p.outputs[o]] = std::move(out[o]);
  }
  std::vector<CudaProbe> probes;
  for (size_t w = 0; w < writes.size(); ++w) {
    const Tensor& t = values.at(writes[w]);
    probes.push_back(cuda_probe(k.writes[w].dtype, t.bytes(), t.numel()));
  }
  return probes;
}

// Runs the worker on `dir`, its progress on our stderr; its exit status.
int run_worker(const std::string& worker, const std::string& dir) {
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) throw Error(std::string("cannot start the CUDA worker: ") + std::strerror(errno));
  if (pid == 0) {
    execl(worker.c_str(), worker.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string cuda_fingerprint(const CudaDeviceInfo& d, const std::string& compiler,
                             const std::string& codegen) {
  return "cuda|" + d.name + "|" + d.arch + "|" + std::to_string(d.sms) + " SMs|driver " +
         std::to_string(d.driver) + "|cublas " + std::to_string(d.cublas) + "|cudnn " +
         std::to_string(d.cudnn) + "|" + compiler + "|" + codegen;
}

std::string find_cuda_worker(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("KORA_CUDA_WORKER"); env && *env) return env;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path worker = self.parent_path() / "kora-cuda-worker";
  return std::filesystem::exists(worker) ? worker.string() : "";
}

CudaMergeSummary merge_cuda_results(const PrimGraph& graph, const std::string& dir, ProfileDb& db,
                                    const CudaKernelsOptions& options, double tolerance) {
  const CudaJob job = read_cuda_job(dir);
  const CudaResults results = read_cuda_results(dir);
  if (job.codegen.find(" tf32") != std::string::npos)  // TF32 library math: ~1e-3 relative
    tolerance = std::max(tolerance, kTf32Tolerance);
  if (results.job_id != job.id)
    throw Error(cuda_results_file(dir) + " holds the results of another job (" + results.job_id +
                ", the job is " + job.id + "): run kora-cuda-worker " + dir + " again");
  if (results.device.arch != job.arch)
    throw Error(cuda_results_file(dir) + ": measured on " + results.device.arch +
                ", the job is for " + job.arch);
  CudaMergeSummary summary;
  summary.device = cuda_fingerprint(results.device, job.compiler, job.codegen);
  summary.results = static_cast<int64_t>(results.results.size());

  std::map<std::pair<uint64_t, std::string>, const CudaJobKernel*> kernels;
  std::map<uint64_t, const CudaJobKernel*> any_of;  // a job kernel per signature
  for (const CudaJobKernel& k : job.kernels) {
    kernels[{k.signature, k.schedule}] = &k;
    any_of.emplace(k.signature, &k);
  }
  std::map<uint64_t, std::vector<const CudaResult*>> by_signature;
  for (const CudaResult& r : results.results)
    if (kernels.count({r.signature, r.schedule})) by_signature[r.signature].push_back(&r);
  summary.missing = static_cast<int64_t>(job.kernels.size()) - summary.results;

  const std::string data = read_file(cuda_data_file(dir));
  std::vector<ProfileRecord> records;
  CudaKernelsOptions enumerate = options;
  enumerate.known = nullptr;
  for_each_cuda_candidate(graph, enumerate, [&](const KernelDag& sub, const Candidate& c) {
    auto it = by_signature.find(c.signature);
    if (it == by_signature.end()) return;
    std::vector<CudaProbe> want;
    std::string reference_error;
    try {
      want = reference_probes(graph, sub, c, *any_of.at(c.signature), data);
    } catch (const Error& e) {
      reference_error = e.what();
    }
    for (const CudaResult* r : it->second) {
      ProfileRecord rec;
      rec.device = summary.device;
      rec.signature = r->signature;
      rec.schedule = r->schedule;
      std::string error = r->error.empty() ? "" : "on the GPU: " + r->error;
      if (error.empty() && !reference_error.empty()) error = "reference: " + reference_error;
      const CudaJobKernel& k = *kernels.at({r->signature, r->schedule});
      if (error.empty() && r->probes.size() != k.writes.size()) error = "probes missing";
      for (size_t w = 0; error.empty() && w < k.writes.size(); ++w) {
        const std::string diff = compare_cuda_probes(
            r->probes[w], want[w], k.writes[w].dtype == "float32" ? tolerance : 0);
        if (!diff.empty()) error = "wrong result: output " + std::to_string(w) + ": " + diff;
      }
      if (error.empty()) {
        rec.median_ms = r->median_ms;
        rec.spread_ms = r->spread_ms;
        rec.samples = r->samples;
        ++summary.stored;
      } else {
        rec.failed = true;
        rec.error = error;
        summary.failures.push_back({r->signature, r->schedule, kernel_name(graph, sub, c), error});
      }
      records.push_back(std::move(rec));
    }
  });
  db.put(records);
  return summary;
}

std::string default_cuda_job_dir(const std::string& db_path, const std::string& model_path,
                                 const std::string& arch) {
  namespace fs = std::filesystem;
  return (fs::path(db_path).parent_path() / "cuda-jobs" /
          (fs::path(model_path).stem().string() + "-" + arch))
      .string();
}

std::string local_cuda_fingerprint(const CudaDevice& device, bool tf32) {
  const std::unique_ptr<CudaBlas> blas = CudaBlas::open(nullptr);
  const std::unique_ptr<CudaDnn> dnn = CudaDnn::open(nullptr);
  return cuda_fingerprint(cuda_device_info(device, blas.get(), dnn.get()), nvrtc_version(),
                          cuda_codegen_revision(tf32));
}

namespace {

// The database's GPU fingerprints containing `gpu`, of measurements with TF32 or without.
std::vector<std::string> cuda_devices_named(const ProfileDb& db, const std::string& gpu,
                                            bool tf32) {
  std::vector<std::string> found;
  for (const std::string& d : db.devices())
    if (d.rfind("cuda|", 0) == 0 && d.find(gpu) != std::string::npos &&
        (d.find(" tf32") != std::string::npos) == tf32 && !is_cuda_unmeasured_device(d))
      found.push_back(d);
  return found;
}

}  // namespace

bool cuda_gpu_measured(const ProfileDb& db, const std::string& gpu, bool tf32) {
  return !cuda_devices_named(db, gpu, tf32).empty();
}

std::string cuda_unmeasured_device(const std::string& gpu, const std::string& arch, bool tf32) {
  return "cuda|" + gpu + " (not measured yet)|" + arch + "|" + cuda_codegen_revision(tf32);
}

bool is_cuda_unmeasured_device(const std::string& device) {
  return device.rfind("cuda|", 0) == 0 && device.find(" (not measured yet)|") != std::string::npos;
}

std::string cuda_target_device(const ProfileDb& db, const std::string& gpu, std::string* arch,
                               bool tf32) {
  std::string why;
  if (gpu.empty())
    if (const std::unique_ptr<CudaDevice> device = CudaDevice::open(0, &why)) {
      if (arch) *arch = device->arch();
      return local_cuda_fingerprint(*device, tf32);
    }
  const std::vector<std::string> found = cuda_devices_named(db, gpu, tf32);
  if (found.size() != 1) {
    std::string list;
    for (const std::string& d : found) list += "\n  " + d;
    throw Error(found.empty()
                    ? "no GPU's measurements " + (gpu.empty() ? "" : "matching '" + gpu + "' ") +
                          "in " + db.path() +
                          (gpu.empty() ? " (and no GPU here: " + why + ")" : "") +
                          ": measure the model first (kora profile MODEL --target cuda, here or "
                          "with kora-cuda-worker on a GPU machine; for a GPU elsewhere not "
                          "measured yet, kora profile MODEL --target cuda --gpu TEXT --arch "
                          "ARCH writes its first job)"
                    : "measurements of several GPUs in " + db.path() +
                          "; choose one with --gpu TEXT (part of its fingerprint):" + list);
  }
  if (arch) {  // cuda|NAME|sm_XX|...
    const size_t a = found[0].find('|', 5) + 1;
    *arch = found[0].substr(a, found[0].find('|', a) - a);
  }
  return found[0];
}

std::optional<CudaMergeSummary> merge_pending_cuda_results(const PrimGraph& graph,
                                                           const std::string& dir, ProfileDb& db,
                                                           const CudaKernelsOptions& options,
                                                           double tolerance) {
  if (!std::filesystem::exists(cuda_results_file(dir))) return std::nullopt;
  try {
    if (read_cuda_results(dir).job_id != read_cuda_job(dir).id) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // no job, or results cut short before their header
  }
  return merge_cuda_results(graph, dir, db, options, tolerance);
}

namespace {

// Implementations NVRTC rejected, as failures on `device`.
void store_nvrtc_failures(ProfileDb& db, const std::string& device,
                          const std::vector<CudaKernelFailure>& failures) {
  std::vector<ProfileRecord> records;
  for (const CudaKernelFailure& f : failures) {
    ProfileRecord r;
    r.device = device;
    r.signature = f.signature;
    r.schedule = f.schedule;
    r.failed = true;
    r.error = "nvrtc: " + f.error;
    records.push_back(r);
  }
  db.put(records);
}

// One round: the job of `kernels` written to kernels.job_dir, measured where the GPU is
// here, checked and stored.
CudaProfileSummary profile_round(const PrimGraph& graph, ProfileDb& db,
                                 const CudaProfileOptions& options,
                                 const CudaKernelsOptions& kernels, bool gpu_here,
                                 const std::string& why) {
  const std::string& dir = kernels.job_dir;
  CudaProfileSummary summary;
  summary.kernels = compile_cuda_kernels(graph, kernels);
  bool results = std::filesystem::exists(cuda_results_file(dir));
  if (results) {  // results of an older job are measured again where a GPU is here
    try {
      results = read_cuda_results(dir).job_id == read_cuda_job(dir).id;
    } catch (const Error&) {
      results = false;
    }
  }
  if (summary.kernels.job_kernels == 0) {
    summary.next = "nothing to measure";
  } else if (gpu_here) {
    const std::string worker = find_cuda_worker(options.worker);
    if (worker.empty())
      throw Error("no kora-cuda-worker next to kora (set $KORA_CUDA_WORKER to its path)");
    const int status = run_worker(worker, dir);
    summary.ran_worker = true;
    if (status != 0)
      throw Error("kora-cuda-worker " + dir + " failed (exit status " + std::to_string(status) +
                  "); results so far are in " + cuda_results_file(dir));
    results = true;
  } else if (!results) {
    summary.next = (options.elsewhere    ? std::string("for a GPU elsewhere")
                    : options.run_worker ? "no GPU here (" + why + ")"
                                         : "not measured (--no-measure)") +
                   ": copy " + dir +
                   " to a machine with the GPU, run `kora-cuda-worker DIR` there (it needs only "
                   "the CUDA driver), copy DIR/results.jsonl back into " +
                   dir + " and run this command again to check and store the results";
  }
  if (results && summary.kernels.job_kernels > 0) {
    summary.merge = merge_cuda_results(graph, dir, db, kernels, options.tolerance);
    summary.merged = true;
    // Implementations NVRTC rejected are failures on this device too.
    store_nvrtc_failures(db, summary.merge.device, summary.kernels.failures);
  } else if (!options.remote_device.empty() && !is_cuda_unmeasured_device(options.remote_device)) {
    // For a GPU elsewhere measured before: stored now, so that the next round of measure
    // on demand does not ask for them again.
    store_nvrtc_failures(db, options.remote_device, summary.kernels.failures);
  }
  return summary;
}

}  // namespace

CudaProfileSummary profile_model_cuda(const PrimGraph& graph, ProfileDb& db,
                                      const CudaProfileOptions& options) {
  if (options.kernels.job_dir.empty()) throw Error("profile_model_cuda: no job directory");
  // One kora profile at a time per database, as on the CPU (src/cpu/profile.cc): a second
  // waits, then compiles and measures only what the first left.
  const FileLock lock(db.path() + ".lock", [&] {
    if (options.kernels.progress)
      *options.kernels.progress << "kora profile: another kora profile is measuring into "
                                << db.path() << "; waiting for it (what it measures is then "
                                << "reused)" << std::endl;
  });
  CudaKernelsOptions kernels = options.kernels;
  std::string why = "measuring was not asked for";
  std::unique_ptr<CudaDevice> device = options.run_worker ? CudaDevice::open(0, &why) : nullptr;
  const bool gpu_here = device != nullptr;
  std::string fp;
  if (device) {  // the GPU is here: what the database holds for it is not measured again
    fp = local_cuda_fingerprint(*device, kernels.tf32);
    device.reset();  // the worker opens it
  } else {
    fp = options.remote_device;
  }
  // Left out: kernels not asked for (measure on demand), and those measured on the GPU.
  const std::optional<std::set<uint64_t>>& only = options.only;
  if (only || !fp.empty())
    kernels.known = [&db, fp, &only](uint64_t signature) {
      return (only && only->count(signature) == 0) || (!fp.empty() && db.known(fp, signature));
    };
  if (!fp.empty()) {
    kernels.measured = [&db, fp](uint64_t signature, const std::string& schedule) {
      for (const ProfileRecord& r : db.records(fp, signature))
        if (r.schedule == schedule) return true;
      return false;
    };
  }
  // -1: with the GPU here, two rounds (defaults, then the kernels that matter); else all.
  const bool two_rounds = gpu_here && kernels.max_schedules < 0;
  if (kernels.max_schedules < 0) kernels.max_schedules = two_rounds ? 1 : 0;
  CudaProfileSummary summary = profile_round(graph, db, options, kernels, gpu_here, why);
  if (!two_rounds) return summary;

  // The generated kernels whose default schedule took at least tune_ms and whose other
  // schedules are not measured yet: all of their schedules.
  std::set<uint64_t> tune;
  CudaKernelsOptions every = options.kernels;
  every.known = nullptr;
  for_each_cuda_candidate(graph, every, [&](const KernelDag& sub, const Candidate& c) {
    if (only && only->count(c.signature) == 0) return;
    if (!cuda_codegen_supports(graph, sub, c)) return;  // a library call: all measured
    const size_t space = cuda_schedule_space(graph, sub, c).size();
    if (space < 2 || db.records(fp, c.signature).size() >= space) return;
    const std::optional<ProfileRecord> best = db.best(fp, c.signature);
    if (best && best->median_ms >= options.tune_ms) tune.insert(c.signature);
  });
  summary.tuned = static_cast<int64_t>(tune.size());
  if (tune.empty()) return summary;
  CudaKernelsOptions rest = options.kernels;
  rest.max_schedules = 0;
  rest.first_schedule = 1;
  rest.library = false;
  rest.known = [&tune](uint64_t signature) { return tune.count(signature) == 0; };
  rest.job_dir = options.kernels.job_dir + "-tune";
  summary.tune = profile_round(graph, db, options, rest, true, why).merge;
  return summary;
}

std::string format_cuda_profile_summary(const CudaProfileSummary& s) {
  std::ostringstream os;
  os << format_cuda_kernels_summary(s.kernels);
  if (s.merged) {
    const CudaMergeSummary& m = s.merge;
    os << "device " << m.device << "\n"
       << "results " << m.results << ": " << m.stored << " stored, " << m.failures.size()
       << " failed";
    if (m.missing > 0) os << ", " << m.missing << " implementations not measured yet";
    os << "\n";
    for (const ProfileFailure& f : m.failures)
      os << "failed: " << signature_hex(f.signature) << " " << f.schedule << " (" << f.kernel
         << "): " << f.error.substr(0, f.error.find('\n')) << "\n";
  } else if (!s.next.empty()) {
    os << "job " << s.kernels.job_kernels << " implementations; " << s.next << "\n";
  }
  if (s.tuned > 0) {
    os << "tuned " << s.tuned << " kernels (every schedule): " << s.tune.results << " results, "
       << s.tune.stored << " stored, " << s.tune.failures.size() << " failed\n";
    for (const ProfileFailure& f : s.tune.failures)
      os << "failed: " << signature_hex(f.signature) << " " << f.schedule << " (" << f.kernel
         << "): " << f.error.substr(0, f.error.find('\n')) << "\n";
  }
  return os.str();
}

}  // namespace kora
