// Co-location runs (src/colocate/colocate.cc) over workloads whose kernels sleep, with
// their timelines recorded: every request of the stream is served in every run with the
// LC; in the scheduled run no best-effort kernel starts inside a request unless the rule
// admitted it, while the naive run lets them; a best-effort workload that throws stops
// alone with its error, the stream goes on; bad options and artifacts are one clear error.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "colocate/workload.h"
#include "kora/error.h"

namespace {

using namespace kora;
using Clock = std::chrono::steady_clock;

// Each kernel sleeps `ms`; the gate is called before each, like a session's.
struct Timeline {
  std::mutex mutex;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> requests;  // LC runs
  std::vector<Clock::time_point> be_starts;                               // BE kernels
};

Workload sleeper(const std::string& name, std::vector<double> kernel_ms, Timeline* timeline,
                 bool lc, std::shared_ptr<int> fail_after = nullptr) {
  auto gate = std::make_shared<std::function<void(size_t, size_t)>>();
  Workload w;
  w.name = name;
  w.kernel_ms = kernel_ms;
  w.set_gate = [gate](std::function<void(size_t, size_t)> g) { *gate = std::move(g); };
  w.run = [=]() {
    if (fail_after && (*fail_after)-- <= 0) throw Error("kernel 0 of " + name + " failed");
    const Clock::time_point start = Clock::now();
    for (size_t k = 0; k < kernel_ms.size(); ++k) {
      if (*gate) (*gate)(k, 1);
      if (!lc) {
        std::lock_guard<std::mutex> lock(timeline->mutex);
        timeline->be_starts.push_back(Clock::now());
      }
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kernel_ms[k]));
    }
    if (lc) {
      std::lock_guard<std::mutex> lock(timeline->mutex);
      timeline->requests.push_back({start, Clock::now()});
    }
  };
  return w;
}

ColocateOptions options() {
  ColocateOptions o;
  o.qps = 40;
  o.target_ms = 6;  // the LC plan takes 3 ms: 1.2 x 3 + 3 > 6, a BE kernel of 3 ms never fits
  o.seconds = 0.6;
  o.headroom = 1.2;
  return o;
}

// BE kernels that started strictly inside an LC request (after its start + 0.3 ms).
int started_inside(const Timeline& lc, const Timeline& be) {
  int n = 0;
  for (const auto& s : be.be_starts)
    for (const auto& [a, b] : lc.requests) n += s > a + std::chrono::microseconds(300) && s < b;
  return n;
}

TEST(Colocate, TheSchedulerKeepsBestEffortKernelsOutOfRequestsThatHaveNoRoom) {
  Timeline lc_t, be_t;
  const ColocateReport r =
      colocate_workloads(sleeper("lc", {1, 1, 1}, &lc_t, true),
                         {sleeper("be", {3, 3, 3, 3}, &be_t, false)}, options());
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_EQ(r.runs[0].mode, "lc_alone");
  EXPECT_EQ(r.runs[3].mode, "scheduled");
  EXPECT_DOUBLE_EQ(r.lc_predicted_ms, 3.0);
  const int64_t requests = r.runs[0].lc.requests;
  EXPECT_GT(requests, 10);
  for (const ColocateRun& run : r.runs) {
    if (run.has_lc) {
      EXPECT_EQ(run.lc.requests, requests) << run.mode;  // the same stream in every run
      EXPECT_GE(run.lc.p50_ms, 3.0) << run.mode;
      EXPECT_LE(run.lc.p50_ms, run.lc.p99_ms);
    }
    if (run.mode != "lc_alone") {
      ASSERT_EQ(run.be.size(), 1u);
      EXPECT_GT(run.be[0].runs, 0) << run.mode;
      EXPECT_TRUE(run.be[0].error.empty());
    }
  }
  EXPECT_EQ(r.runs[3].be_admitted_in_flight, 0);

  // The runs alone, each with its timelines: naive lets BE kernels start inside requests,
  // the scheduler none (3 ms kernels never fit a 3 ms request's 6 ms target).
  const ColocateOptions o = options();
  const std::vector<double> arrivals = {0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5};
  for (const char* mode : {"naive", "scheduled"}) {
    Timeline lc_run, be_run;
    Workload lc = sleeper("lc", {1, 1, 1}, &lc_run, true);
    std::vector<Workload> be = {sleeper("be", {3, 3, 3, 3}, &be_run, false)};
    const ColocateRun run = colocate_run(mode, lc, be, o, arrivals);
    EXPECT_EQ(run.lc.requests, 10);
    EXPECT_EQ(lc_run.requests.size(), 10u);
    if (std::string(mode) == "naive") {
      EXPECT_GT(started_inside(lc_run, be_run), 0);
    } else {
      EXPECT_EQ(started_inside(lc_run, be_run), 0);
    }
  }

  // BE kernels of 1 ms fit a request with 6 ms of target: admitted during requests.
  Timeline lc3, be3;
  Workload lc = sleeper("lc", {1, 1, 1}, &lc3, true);
  std::vector<Workload> be = {sleeper("be", {1, 1}, &be3, false)};
  const ColocateRun fits = colocate_run("scheduled", lc, be, o, arrivals);
  EXPECT_GT(fits.be_admitted_in_flight, 0);
  EXPECT_GT(started_inside(lc3, be3), 0);
}

TEST(Colocate, ABestEffortWorkloadThatFailsStopsAloneAndTheStreamGoesOn) {
  Timeline lc_t, be_t, ok_t;
  auto fail_after = std::make_shared<int>(3);  // the warm-up and two runs, then it throws
  const ColocateReport r = colocate_workloads(
      sleeper("lc", {1, 1}, &lc_t, true),
      {sleeper("broken", {2, 2}, &be_t, false, fail_after), sleeper("fine", {2}, &ok_t, false)},
      options());
  for (const ColocateRun& run : r.runs) {
    if (run.has_lc) {
      EXPECT_EQ(run.lc.requests, r.runs[0].lc.requests) << run.mode;
    }
    if (run.mode == "lc_alone") continue;
    ASSERT_EQ(run.be.size(), 2u);
    EXPECT_NE(run.be[0].error.find("kernel 0 of broken failed"), std::string::npos) << run.mode;
    EXPECT_TRUE(run.be[1].error.empty());
    EXPECT_GT(run.be[1].runs, 0) << run.mode;
  }
  const std::string text = format_colocate_report(r);
  EXPECT_NE(text.find("best-effort 'broken' stopped: kernel 0 of broken failed"), std::string::npos)
      << text;
  EXPECT_NE(colocate_report_json(r).find("\"scheduled\""), std::string::npos);

  // One that fails alone, before the runs: one clear error.
  auto at_once = std::make_shared<int>(0);
  try {
    colocate_workloads(sleeper("lc", {1}, &lc_t, true),
                       {sleeper("broken", {1}, &be_t, false, at_once)}, options());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("best-effort artifact 'broken' fails alone"),
              std::string::npos)
        << e.what();
  }
}

TEST(Colocate, BadOptionsAndArtifactsAreOneClearError) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto with = [](auto change) {
    ColocateOptions o = options();
    change(o);
    return o;
  };
  const std::vector<std::string> be = {"b"};
  EXPECT_NE(message([&] { colocate("a", be, with([](auto& o) { o.qps = 0; })); }).find("--qps"),
            std::string::npos);
  EXPECT_NE(message([&] {
              colocate("a", be, with([](auto& o) { o.target_ms = -1; }));
            }).find("--target-ms"),
            std::string::npos);
  EXPECT_NE(
      message([&] { colocate("a", be, with([](auto& o) { o.seconds = 0; })); }).find("--seconds"),
      std::string::npos);
  EXPECT_NE(message([&] {
              colocate("a", be, with([](auto& o) { o.headroom = 0.5; }));
            }).find("--headroom"),
            std::string::npos);
  EXPECT_NE(message([&] { colocate("a", {}, options()); }).find("--be"), std::string::npos);
  EXPECT_NE(message([&] { colocate("art", {"./art/"}, options()); }).find("given twice"),
            std::string::npos);
  const std::string missing =
      (std::filesystem::temp_directory_path() / "kora_no_artifact").string();
  EXPECT_NE(
      message([&] { colocate(missing, {missing + "2"}, options()); }).find("kora_no_artifact"),
      std::string::npos);
}

}  // namespace
