// Co-location runs (include/kora/colocate.h): the latency-critical (LC) artifact and the
// best-effort (BE) artifacts in; four runs of `seconds` each out, in turn:
//   lc_alone   the LC request stream alone;
//   be_alone   the BE artifacts in their loops alone (their throughput alone);
//   naive      both at once, each at full speed, nothing between them;
//   scheduled  both, the BE kernels admitted by ColocationScheduler (src/colocate/scheduler.h).
// The LC stream is the same in every run: Poisson arrivals at `qps`, seeded; a request's
// latency runs from its arrival to its completion, so time queued behind an earlier request
// counts. Each BE artifact runs in a thread of its own, inference after inference, stopped
// at the end of the run at its next kernel boundary (an inference cut short is not counted).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <sstream>
#include <thread>

#include "base/interrupt.h"
#include "base/text.h"
#include "colocate/scheduler.h"
#include "colocate/workload.h"
#include "kora/error.h"
#include "kora/runtime.h"
#include "kora/tensor.h"

namespace kora {
namespace {

using Clock = std::chrono::steady_clock;

struct StopRun {};  // thrown by a BE gate once its run is over

// Sleeps until `t`, stopping with kora::Error at an interrupt request (Ctrl-C in Python).
void sleep_until(Clock::time_point t) {
  for (Clock::time_point now = Clock::now(); now < t; now = Clock::now()) {
    throw_if_interrupted("co-locating");
    std::this_thread::sleep_until(std::min(t, now + std::chrono::milliseconds(50)));
  }
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// The arrival times (seconds from the start) of the LC stream.
std::vector<double> poisson_arrivals(double qps, double seconds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(qps);
  std::vector<double> t;
  for (double at = gap(rng); at < seconds; at += gap(rng)) t.push_back(at);
  return t;
}

}  // namespace

ColocateRun colocate_run(const std::string& mode, Workload& lc, std::vector<Workload>& be,
                         const ColocateOptions& o, const std::vector<double>& arrivals,
                         bool prioritized) {
  const bool with_lc = mode != "be_alone", with_be = mode != "lc_alone";
  const bool scheduled = mode == "scheduled";
  prioritized = prioritized || scheduled;
  if (lc.set_priority)
    lc.set_priority(prioritized ? StreamPriority::kHigh : StreamPriority::kNormal);
  for (Workload& w : be)
    if (w.set_priority)
      w.set_priority(prioritized ? StreamPriority::kLow : StreamPriority::kNormal);
  ColocationScheduler scheduler(
      o.target_ms, o.headroom, lc.kernel_ms, std::max(1.0, o.slowdown),
      lc.gpu ? ColocationScheduler::Sharing::kStreams : ColocationScheduler::Sharing::kCores);
  ColocateRun run;
  run.mode = mode;
  run.has_lc = with_lc;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<int64_t> runs(be.size(), 0);
  std::vector<std::string> errors(be.size());
  if (with_be)
    for (size_t i = 0; i < be.size(); ++i) {
      Workload& w = be[i];
      auto holding = std::make_shared<bool>(false);  // this BE holds the scheduler's token
      w.set_gate([&, holding, i](size_t first, size_t count) {
        if (*holding) scheduler.be_done(), *holding = false;
        if (stop) throw StopRun{};
        if (!scheduled) return;
        double ms = 0;
        for (size_t k = first; k < first + count && k < be[i].kernel_ms.size(); ++k)
          ms += be[i].kernel_ms[k];
        if (!scheduler.be_wait(ms)) throw StopRun{};
        *holding = true;
      });
      threads.emplace_back([&, holding, i]() {
        try {
          while (!stop) {
            be[i].run();
            if (*holding) scheduler.be_done(), *holding = false;
            if (!stop) ++runs[i];
          }
        } catch (const StopRun&) {
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
        if (*holding) scheduler.be_done(), *holding = false;
      });
    }
  auto finish = [&]() {
    stop = true;
    scheduler.stop();
    for (std::thread& t : threads) t.join();
    for (Workload& w : be) w.set_gate(nullptr);
    lc.set_gate(nullptr);
  };
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  const auto at = [&](double s) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  std::vector<double> latencies;
  try {
    if (with_lc) {
      lc.set_gate(scheduled ? std::function<void(size_t, size_t)>(
                                  [&](size_t first, size_t) { scheduler.lc_progress(first); })
                            : nullptr);
      for (double t : arrivals) {
        const Clock::time_point arrival = at(t);
        sleep_until(arrival);
        if (scheduled) scheduler.lc_start(arrival);
        lc.run();
        const Clock::time_point done = Clock::now();
        if (scheduled) scheduler.lc_finish();
        latencies.push_back(ms_between(arrival, done));
      }
    }
    sleep_until(at(o.seconds));
  } catch (...) {
    finish();
    throw;
  }
  finish();
  std::sort(latencies.begin(), latencies.end());
  run.lc.requests = static_cast<int64_t>(latencies.size());
  run.lc.p50_ms = percentile(latencies, 0.5);
  run.lc.p99_ms = percentile(latencies, 0.99);
  run.lc.max_ms = latencies.empty() ? 0 : latencies.back();
  for (double l : latencies) run.lc.violations += l > o.target_ms;
  if (with_be)
    for (size_t i = 0; i < be.size(); ++i)
      run.be.push_back({be[i].name, runs[i], static_cast<double>(runs[i]) / o.seconds, errors[i]});
  run.be_admitted_in_flight = scheduler.admitted_in_flight();
  if (!latencies.empty())
    run.lc_waited_ms = scheduler.lc_waited_ms() / static_cast<double>(latencies.size());
  return run;
}

namespace {

// A session as a workload: random inputs (seeded) bound once; its kernels' costs their
// times inside the running plan alone (the median of 10 runs after a warm-up), which the
// manifest's costs (each kernel measured alone, inputs cold) overestimate up to 2x.
Workload session_workload(Session& s, const std::string& name, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const TensorInfo& t : s.inputs())
    s.set_input(t.name, random_tensor(t.dtype, t.shape, rng, 1));
  Workload w;
  w.name = name;
  w.kernel_ms = s.profile_kernels(10);
  w.set_gate = [&s](std::function<void(size_t, size_t)> gate) { s.set_step_gate(std::move(gate)); };
  w.run = [&s]() { s.run(); };
  w.gpu = s.target() == "cuda";
  if (w.gpu) w.set_priority = [&s](StreamPriority p) { s.set_stream_priority(p); };
  return w;
}

}  // namespace

void check_colocate_options(const ColocateOptions& o, size_t best_effort) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(o.qps))
    throw Error("colocate: --qps must be a positive number of requests per second");
  if (!positive(o.target_ms)) throw Error("colocate: --target-ms must be a positive latency");
  if (!positive(o.seconds) || o.seconds > 3600)
    throw Error("colocate: --seconds must be positive and at most 3600");
  if (!std::isfinite(o.headroom) || o.headroom < 1)
    throw Error("colocate: --headroom must be at least 1");
  if (!std::isfinite(o.slowdown) || (o.slowdown != 0 && o.slowdown < 1))
    throw Error("colocate: --slowdown must be at least 1 (0: measured)");
  if (o.threads < 0) throw Error("colocate: --threads must not be negative");
  if (best_effort == 0) throw Error("colocate: give at least one best-effort artifact (--be)");
}

ColocateReport colocate_workloads(Workload lc, std::vector<Workload> be, const ColocateOptions& o) {
  check_colocate_options(o, be.size());
  ColocateReport report;
  report.lc = lc.name;
  for (const Workload& w : be) report.be.push_back(w.name);
  report.options = o;
  report.options.progress = nullptr;
  for (double ms : lc.kernel_ms) report.lc_predicted_ms += ms;
  // Warm-up: every workload a few times alone.
  for (int i = 0; i < 3; ++i) lc.run();
  for (Workload& w : be) {
    try {
      w.run();
    } catch (const std::exception& e) {
      throw Error("colocate: best-effort artifact '" + w.name + "' fails alone: " + e.what());
    }
  }
  // The LC's slowdown beside the BE loops: 15 requests alone, then beside them, spaced
  // twice the LC's time apart; the ratio of the medians.
  ColocateOptions run_options = o;
  if (!(o.slowdown > 0)) {
    const double gap = std::max(0.005, 2e-3 * report.lc_predicted_ms);
    std::vector<double> probe;
    for (int i = 0; i < 15; ++i) probe.push_back(gap * (i + 1));
    ColocateOptions p = o;
    p.seconds = gap * 16;
    const double alone = colocate_run("lc_alone", lc, be, p, probe).lc.p50_ms;
    const double beside = colocate_run("naive", lc, be, p, probe, true).lc.p50_ms;
    run_options.slowdown = alone > 0 ? std::max(1.0, beside / alone) : 1.0;
  }
  report.slowdown = std::max(1.0, run_options.slowdown);
  if (o.progress)
    *o.progress << "kora colocate: the latency-critical model runs " << fixed(report.slowdown, 2)
                << "x slower beside the best-effort work" << std::endl;
  const std::vector<double> arrivals = poisson_arrivals(o.qps, o.seconds, o.seed);
  for (const char* mode : {"lc_alone", "be_alone", "naive", "scheduled"}) {
    if (o.progress)
      *o.progress << "kora colocate: " << mode << " (" << fixed(o.seconds, 0) << " s)" << std::endl;
    report.runs.push_back(colocate_run(mode, lc, be, run_options, arrivals));
  }
  return report;
}

ColocateReport colocate(const std::string& lc_artifact,
                        const std::vector<std::string>& be_artifacts, const ColocateOptions& o) {
  check_colocate_options(o, be_artifacts.size());
  namespace fs = std::filesystem;
  std::vector<std::string> all = {lc_artifact};
  all.insert(all.end(), be_artifacts.begin(), be_artifacts.end());
  std::vector<fs::path> seen;
  for (const std::string& a : all) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(a), ec);
    if (!p.has_filename()) p = p.parent_path();  // "art/" is "art"
    if (std::find(seen.begin(), seen.end(), p) != seen.end())
      throw Error("colocate: artifact '" + a +
                  "' is given twice: each session needs an artifact of its own (one artifact's "
                  "generated kernels must not run twice at once; compile the model again into "
                  "another directory)");
    seen.push_back(p);
  }
  std::vector<std::unique_ptr<Session>> sessions;
  for (const std::string& a : all) {
    SessionOptions so;
    so.threads = o.threads;
    sessions.push_back(std::make_unique<Session>(a, so));
    if (sessions.back()->target() != sessions[0]->target())
      throw Error("colocate: '" + a + "' is a " + sessions.back()->target() +
                  " artifact and the latency-critical '" + lc_artifact + "' a " +
                  sessions[0]->target() + " one; co-location runs artifacts of one target");
  }
  Workload lc = session_workload(*sessions[0], lc_artifact, o.seed);
  std::vector<Workload> be;
  for (size_t i = 1; i < sessions.size(); ++i) {
    try {
      be.push_back(session_workload(*sessions[i], all[i], o.seed + i));
    } catch (const std::exception& e) {
      throw Error("colocate: best-effort artifact '" + all[i] + "' fails alone: " + e.what());
    }
  }
  ColocateReport report = colocate_workloads(std::move(lc), std::move(be), o);
  report.lc_device = sessions[0]->device();  // as in the last run, the scheduled one
  for (size_t i = 1; i < sessions.size(); ++i) report.be_devices.push_back(sessions[i]->device());
  return report;
}

std::string format_colocate_report(const ColocateReport& r) {
  std::ostringstream os;
  os << "latency-critical: " << r.lc << " (" << fixed(r.lc_predicted_ms, 3)
     << " ms alone, in plan), target " << fixed(r.options.target_ms, 2) << " ms at "
     << fixed(r.options.qps, 1) << " requests/s\n";
  if (!r.lc_device.empty()) os << "  on " << r.lc_device << "\n";
  for (size_t i = 0; i < r.be.size(); ++i) {
    os << "best-effort: " << r.be[i] << "\n";
    if (i < r.be_devices.size()) os << "  on " << r.be_devices[i] << "\n";
  }
  os << fixed(r.options.seconds, 0) << " s per run, seed " << r.options.seed
     << "; the latency-critical model " << fixed(r.slowdown, 2)
     << "x slower beside best-effort work (the scheduler's slowdown)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %9s %9s %9s %9s %11s", "run", "requests", "p50 ms",
                "p99 ms", "max ms", "violations");
  os << line;
  for (size_t i = 0; i < r.be.size(); ++i) os << "  BE" << i + 1 << " runs/s";
  os << "\n";
  const ColocateRun* alone = nullptr;
  for (const ColocateRun& run : r.runs) {
    if (run.mode == "be_alone") alone = &run;
    if (run.has_lc)
      std::snprintf(line, sizeof line, "%-10s %9lld %9.3f %9.3f %9.3f %11lld", run.mode.c_str(),
                    static_cast<long long>(run.lc.requests), run.lc.p50_ms, run.lc.p99_ms,
                    run.lc.max_ms, static_cast<long long>(run.lc.violations));
    else
      std::snprintf(line, sizeof line, "%-10s %9s %9s %9s %9s %11s", run.mode.c_str(), "-", "-",
                    "-", "-", "-");
    os << line;
    for (const BestEffortStats& b : run.be) {
      std::snprintf(line, sizeof line, "  %12.2f", b.per_second);
      os << line;
    }
    os << "\n";
  }
  for (const ColocateRun& run : r.runs) {
    for (const BestEffortStats& b : run.be)
      if (!b.error.empty())
        os << run.mode << ": best-effort '" << b.artifact << "' stopped: " << b.error << "\n";
    if (run.mode == "scheduled" && alone && run.has_lc) {
      os << "scheduled: p99 " << fixed(run.lc.p99_ms, 3) << " ms "
         << (run.lc.p99_ms <= r.options.target_ms ? "within" : "ABOVE") << " the target";
      for (size_t i = 0; i < run.be.size() && i < alone->be.size(); ++i)
        if (alone->be[i].per_second > 0)
          os << "; BE" << i + 1 << " at "
             << fixed(100 * run.be[i].per_second / alone->be[i].per_second, 0)
             << "% of its throughput alone";
      os << "; " << run.be_admitted_in_flight << " BE kernels admitted during requests; a request "
         << "waited " << fixed(run.lc_waited_ms, 3) << " ms on average for a BE kernel to end\n";
    }
  }
  return os.str();
}

std::string colocate_report_json(const ColocateReport& r) {
  nlohmann::json j;
  j["lc"] = r.lc;
  j["be"] = r.be;
  j["qps"] = r.options.qps;
  j["target_ms"] = r.options.target_ms;
  j["seconds"] = r.options.seconds;
  j["seed"] = r.options.seed;
  j["headroom"] = r.options.headroom;
  j["lc_predicted_ms"] = r.lc_predicted_ms;
  j["slowdown"] = r.slowdown;
  j["lc_device"] = r.lc_device;
  j["be_devices"] = r.be_devices;
  for (const ColocateRun& run : r.runs) {
    nlohmann::json m;
    if (run.has_lc)
      m["lc"] = {{"requests", run.lc.requests},
                 {"p50_ms", run.lc.p50_ms},
                 {"p99_ms", run.lc.p99_ms},
                 {"max_ms", run.lc.max_ms},
                 {"violations", run.lc.violations}};
    m["be"] = nlohmann::json::array();
    for (const BestEffortStats& b : run.be)
      m["be"].push_back({{"artifact", b.artifact},
                         {"runs", b.runs},
                         {"per_second", b.per_second},
                         {"error", b.error}});
    if (run.mode == "scheduled") {
      m["be_admitted_in_flight"] = run.be_admitted_in_flight;
      m["lc_waited_ms"] = run.lc_waited_ms;
    }
    j["runs"][run.mode] = m;
  }
  return j.dump(1);
}

}  // namespace kora
