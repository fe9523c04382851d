// kora._kora: the Python package's extension module (nanobind). In: calls from
// python/kora/__init__.py. Out: the compile API (include/kora/compile.h) returning the
// summary as JSON, a Session over an artifact (include/kora/runtime.h) that takes and
// returns numpy arrays, and the plan report (include/kora/report.h).
//
// kora::Error becomes kora.KoraError (a RuntimeError) carrying kora's one-line message.
// The GIL is released while kora compiles or runs; progress lines go to Python's
// sys.stderr (so notebooks show them too), and Ctrl-C stops a compile at kora's next
// safe point (base/interrupt.h). Inputs are bound without a copy when they are C-contiguous arrays
// of the model's dtype (the array is kept alive until the next run binds another); outputs are
// copied once out of the session's buffers, which the next run rewrites.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "kora/colocate.h"
#include "kora/compile.h"
#include "kora/error.h"
#include "kora/report.h"
#include "kora/runtime.h"
#include "kora/target.h"

namespace nb = nanobind;

namespace {

// Runs `work` with the GIL released on a thread of its own while this thread looks for
// Ctrl-C every 50 ms (signal handlers run on Python's main thread only). On
// KeyboardInterrupt (or any error a signal handler raises) kora is asked to stop at its
// next safe point (base/interrupt.h) and, once it has, the Python error is raised.
template <class F>
auto run_interruptible(F work) -> decltype(work()) {
  std::optional<nb::python_error> raised;
  auto result = std::async(std::launch::async, std::move(work));
  {
    nb::gil_scoped_release release;
    while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (raised) continue;
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        raised.emplace();
        kora::request_interrupt();
      }
    }
  }
  if (raised) {
    kora::clear_interrupt();
    try {
      result.get();
    } catch (const std::exception&) {  // "interrupted while ...": the Python error says it
    }
    throw *raised;
  }
  return result.get();
}

// A streambuf writing whole lines to Python's sys.stderr, the GIL taken per line.
class PythonStderr : public std::streambuf {
 public:
  ~PythonStderr() override {
    try {
      flush_line();
    } catch (...) {
    }
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    line_ += static_cast<char>(c);
    if (c == '\n' || c == '\r') flush_line();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }
  int sync() override {
    flush_line();
    return 0;
  }

 private:
  void flush_line() {
    if (line_.empty()) return;
    nb::gil_scoped_acquire gil;
    nb::object err = nb::module_::import_("sys").attr("stderr");
    if (!err.is_none()) {
      err.attr("write")(line_);
      err.attr("flush")();
    }
    line_.clear();
  }
  std::string line_;
};

bool stderr_is_terminal() {
  nb::object err = nb::module_::import_("sys").attr("stderr");
  if (err.is_none() || !nb::hasattr(err, "isatty")) return false;
  try {
    return nb::cast<bool>(err.attr("isatty")());
  } catch (const std::exception&) {
    return false;
  }
}

// kora's dtypes as DLPack's (numpy's) and back.
nb::dlpack::dtype dlpack_dtype(kora::DType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case kora::DType::kFloat32:
      return make(C::Float, 32);
    case kora::DType::kFloat64:
      return make(C::Float, 64);
    case kora::DType::kFloat16:
      return make(C::Float, 16);
    case kora::DType::kBFloat16:
      return make(C::Bfloat, 16);
    case kora::DType::kInt8:
      return make(C::Int, 8);
    case kora::DType::kInt16:
      return make(C::Int, 16);
    case kora::DType::kInt32:
      return make(C::Int, 32);
    case kora::DType::kInt64:
      return make(C::Int, 64);
    case kora::DType::kUInt8:
      return make(C::UInt, 8);
    case kora::DType::kUInt16:
      return make(C::UInt, 16);
    case kora::DType::kUInt32:
      return make(C::UInt, 32);
    case kora::DType::kUInt64:
      return make(C::UInt, 64);
    case kora::DType::kBool:
      return make(C::Bool, 8);
  }
  throw kora::Error("unknown dtype");
}

bool same_dtype(nb::dlpack::dtype a, nb::dlpack::dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

using CpuArray = nb::ndarray<nb::device::cpu>;

// One run at a time per artifact: generated kernels keep function-static scratch, so two
// sessions of one artifact must not run together either (include/kora/runtime.h).
std::mutex& artifact_mutex(const std::string& dir) {
  static std::mutex guard;
  static std::map<std::string, std::unique_ptr<std::mutex>> by_dir;
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) key = dir;
  std::lock_guard<std::mutex> lock(guard);
  auto& m = by_dir[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

class PySession {
 public:
  PySession(const std::string& dir, int threads, const std::string& priority)
      : session_(std::make_unique<kora::Session>(dir, options(threads, priority))),
        mutex_(&artifact_mutex(dir)) {}

  // The session's options; priority "normal", "high" or "low" (a CUDA stream's).
  static kora::SessionOptions options(int threads, const std::string& priority) {
    kora::SessionOptions o;
    o.threads = threads;
    if (priority == "high")
      o.priority = kora::StreamPriority::kHigh;
    else if (priority == "low")
      o.priority = kora::StreamPriority::kLow;
    else if (priority != "normal")
      throw kora::Error("priority is '" + priority + "'; it takes 'normal', 'high' or 'low'");
    return o;
  }

  // (name, dtype name, shape) of each input / output.
  static nb::list describe(const std::vector<kora::TensorInfo>& infos) {
    nb::list out;
    for (const kora::TensorInfo& t : infos)
      out.append(nb::make_tuple(t.name, kora::dtype_name(t.dtype), nb::cast(t.shape)));
    return out;
  }
  nb::list inputs() const { return describe(session_->inputs()); }
  nb::list outputs() const { return describe(session_->outputs()); }

  // Binds every input of `feeds` (name -> C-contiguous array; no copy), runs with the
  // GIL released and returns the requested outputs (all when `names` is empty) as new
  // numpy arrays, in order.
  nb::list run(const std::vector<std::string>& names, nb::dict feeds) {
    for (auto [key, value] : feeds) {
      const std::string name = nb::cast<std::string>(key);
      CpuArray array;
      try {
        array = nb::cast<CpuArray>(value);
      } catch (const std::exception&) {
        throw kora::Error("input '" + name + "' is not an array in CPU memory");
      }
      bind(name, array);
    }
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mutex_);
      session_->run();
    }
    nb::list out;
    if (names.empty()) {
      for (const kora::TensorInfo& t : session_->outputs())
        out.append(to_numpy(session_->output(t.name)));
    } else {
      for (const std::string& name : names) out.append(to_numpy(session_->output(name)));
    }
    return out;
  }

  // Per kernel of the plan: its description and median time inside the running plan
  // (inputs bound by an earlier run).
  nb::list profile_kernels(int iters) {
    std::vector<double> ms;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mutex_);
      ms = session_->profile_kernels(iters);
    }
    nb::list out;
    const auto& infos = session_->kernel_infos();
    for (size_t i = 0; i < infos.size(); ++i) {
      nb::dict k;
      k["impl"] = infos[i].impl;
      k["schedule"] = infos[i].schedule;
      k["primitives"] = infos[i].primitives;
      k["predicted_ms"] = infos[i].predicted_ms;
      k["in_plan_ms"] = i < ms.size() ? ms[i] : 0.0;
      k["signature"] = infos[i].signature;
      out.append(k);
    }
    return out;
  }

  double plan_ms() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(*mutex_);
    return session_->plan_ms();
  }

  const kora::Session& session() const { return *session_; }

 private:
  void bind(const std::string& name, const CpuArray& array) {
    const kora::TensorInfo* want = nullptr;
    for (const kora::TensorInfo& t : session_->inputs())
      if (t.name == name) want = &t;
    if (!want) {
      std::string known;
      for (const kora::TensorInfo& t : session_->inputs())
        known += (known.empty() ? "" : ", ") + t.name;
      throw kora::Error("the model has no input '" + name + "' (its inputs: " + known + ")");
    }
    kora::Shape shape(array.ndim());
    for (size_t d = 0; d < array.ndim(); ++d) shape[d] = static_cast<int64_t>(array.shape(d));
    if (!same_dtype(array.dtype(), dlpack_dtype(want->dtype)) || shape != want->shape)
      throw kora::Error("input '" + name + "' must be " + kora::dtype_name(want->dtype) + " " +
                        kora::shape_str(want->shape) + ", got an array of shape " +
                        kora::shape_str(shape) + " (dtype code " +
                        std::to_string(array.dtype().code) + ", " +
                        std::to_string(array.dtype().bits) + " bits)");
    // C-contiguous (the Python side makes it so): strides are row-major or the array is
    // empty.
    const std::vector<int64_t> strides = kora::row_major_strides(shape);
    for (size_t d = 0; d < array.ndim(); ++d)
      if (shape[d] > 1 && array.stride(d) != strides[d])
        throw kora::Error("input '" + name + "' is not C-contiguous (numpy.ascontiguousarray)");
    // The array stays alive while the session holds the view; released with the GIL held.
    auto* keep = new nb::object(nb::cast(array));
    std::shared_ptr<const void> keeper(keep, [](const void* p) {
      nb::gil_scoped_acquire gil;
      delete static_cast<const nb::object*>(p);
    });
    session_->set_input(name, kora::Tensor::view(want->dtype, shape, std::move(keeper),
                                                 array.data(), array.nbytes()));
  }

  static nb::object to_numpy(const kora::Tensor& t) {
    const size_t n = t.nbytes();
    auto* buffer = new std::byte[n ? n : 1];
    if (n) std::memcpy(buffer, t.bytes(), n);
    nb::capsule owner(buffer, [](void* p) noexcept { delete[] static_cast<std::byte*>(p); });
    std::vector<size_t> shape(t.shape().begin(), t.shape().end());
    return nb::cast(nb::ndarray<nb::numpy>(buffer, shape.size(), shape.data(), owner, nullptr,
                                           dlpack_dtype(t.dtype())));
  }

  std::unique_ptr<kora::Session> session_;
  std::mutex* mutex_;
};

// kora::compile on a model file; returns the summary as JSON.
std::string compile_model(const std::string& model, const std::string& output_dir,
                          const std::string& target_name, const std::string& strategy,
                          const std::string& db, int threads, bool measure, bool verify,
                          const std::string& schedule, bool progress,
                          const std::map<std::string, int64_t>& dims, bool bf16, bool measure_all) {
  kora::TargetOptions t;
  t.threads = threads;
  t.bf16 = bf16;
  kora::CompileOptions options;
  options.strategy = strategy;
  options.db = db;
  options.measure = measure;
  options.on_demand = !measure_all;
  options.verify = verify;
  options.schedule = schedule;
  kora::ImportOptions import;
  import.dims = dims;
  PythonStderr buffer;
  std::ostream out(&buffer);
  if (progress) {
    options.progress = &out;
    options.terminal = stderr_is_terminal();
    options.orchestration.progress_line = options.terminal;
  }
  return run_interruptible([&]() {
    const std::unique_ptr<kora::Target> target = kora::make_target(target_name, t);
    const kora::CompiledArtifact a = kora::compile(model, *target, output_dir, options, import);
    out.flush();
    return kora::compile_summary_json(a.summary);
  });
}

void write_report(const std::string& artifact, const std::string& html, bool measure, int iters,
                  int threads) {
  kora::PlanReportOptions options;
  options.measure = measure;
  options.iters = iters;
  options.threads = threads;
  std::mutex& mutex = artifact_mutex(artifact);
  run_interruptible([&]() {
    std::lock_guard<std::mutex> lock(mutex);
    kora::write_plan_report(artifact, html, options);
  });
}

// kora::colocate; returns the report as JSON. The artifacts' sessions are held for the run.
std::string colocate_artifacts(const std::string& lc, const std::vector<std::string>& be,
                               double qps, double target_ms, double seconds, uint64_t seed,
                               double headroom, int threads, bool progress) {
  kora::ColocateOptions o;
  o.qps = qps;
  o.target_ms = target_ms;
  o.seconds = seconds;
  o.seed = seed;
  o.headroom = headroom;
  o.threads = threads;
  PythonStderr buffer;
  std::ostream out(&buffer);
  if (progress) o.progress = &out;
  // Each artifact's lock once (a path given twice is kora::colocate's error), in one order:
  // no deadlock with another call.
  std::vector<std::string> all;
  for (const std::string& a : be) all.push_back(a);
  all.push_back(lc);
  for (std::string& a : all) {
    std::error_code ec;
    const std::string key = std::filesystem::weakly_canonical(a, ec).string();
    if (!ec) a = key;
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return run_interruptible([&]() {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (const std::string& a : all) locks.emplace_back(artifact_mutex(a));
    const kora::ColocateReport r = kora::colocate(lc, be, o);
    out.flush();
    return kora::colocate_report_json(r);
  });
}

}  // namespace

NB_MODULE(_kora, m) {
  m.doc() = "kora's C++ library: compile an ONNX model, run and report its artifact";
  nb::exception<kora::Error>(m, "KoraError", PyExc_RuntimeError);

  m.def("compile", &compile_model, nb::arg("model"), nb::arg("output_dir"), nb::arg("target"),
        nb::arg("strategy"), nb::arg("db"), nb::arg("threads"), nb::arg("measure"),
        nb::arg("verify"), nb::arg("schedule"), nb::arg("progress"), nb::arg("dims"),
        nb::arg("bf16") = false, nb::arg("measure_all") = false,
        "Compiles an ONNX file into an artifact directory; returns the summary as JSON.");
  m.def("colocate", &colocate_artifacts, nb::arg("lc"), nb::arg("be"), nb::arg("qps"),
        nb::arg("target_ms"), nb::arg("seconds"), nb::arg("seed"), nb::arg("headroom"),
        nb::arg("threads"), nb::arg("progress"),
        "A latency-critical artifact beside best-effort ones; returns the report as JSON.");
  m.def("write_report", &write_report, nb::arg("artifact"), nb::arg("html"),
        nb::arg("measure") = true, nb::arg("iters") = 20, nb::arg("threads") = 0,
        "Writes the plan report of an artifact as one HTML page.");
  m.def("targets", &kora::target_names, "The targets kora compiles for.");

  nb::class_<PySession>(m, "Session")
      .def(nb::init<const std::string&, int, const std::string&>(), nb::arg("artifact"),
           nb::arg("threads") = 0, nb::arg("priority") = "normal")
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, nb::arg("names"), nb::arg("feeds"))
      .def("profile_kernels", &PySession::profile_kernels, nb::arg("iters") = 20)
      .def("plan_ms", &PySession::plan_ms)
      .def_prop_ro("strategy", [](const PySession& s) { return s.session().strategy(); })
      .def_prop_ro("predicted_ms", [](const PySession& s) { return s.session().predicted_ms(); })
      .def_prop_ro("kernels", [](const PySession& s) { return s.session().kernels(); })
      .def_prop_ro("threads", [](const PySession& s) { return s.session().threads(); })
      .def_prop_ro("target", [](const PySession& s) { return s.session().target(); })
      .def_prop_ro("device", [](const PySession& s) { return s.session().device(); })
      .def_prop_ro("compiled_for", [](const PySession& s) { return s.session().compiled_for(); })
      .def_prop_ro("arena_bytes", [](const PySession& s) { return s.session().arena_bytes(); });
}
