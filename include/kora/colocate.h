// Co-location (Tacker/Aker's deployment, on kora's artifacts): a latency-critical (LC)
// artifact serving a request stream with a latency target, and best-effort (BE) artifacts
// running in a loop beside it, in one process. The artifacts' paths and the load in; the
// LC latencies (p50, p99, violations of the target) and the BE throughput out, for four
// runs of the same length in turn: the LC alone, the BE alone, both naively at full speed,
// and both under kora's scheduler.
//
// The scheduler (src/colocate/scheduler.h) preempts best-effort work between kernels: a
// BE kernel starts when no LC request is in flight, or while one is when the request's
// predicted finish stays within the target with the BE kernel beside it:
//     elapsed + headroom x (the LC kernels left) + slowdown x (the BE kernel) <= target,
// where slowdown is how many times slower the LC runs beside best-effort work than alone
// (measured before the runs: a short stream of requests alone, then beside the BE loops;
// two OpenMP teams on the same cores slow each other far more than sharing them fairly
// would). An LC request takes every core back at the next BE kernel boundary. Where the
// slowdown is 1.5 or more, side by side gives the LC too little, and the scheduler time-slices:
// no BE kernel during a request, and a request arriving during a BE kernel waits for its
// end rather than run beside it. BE kernels of several artifacts run one at a time.
// A kernel's predicted cost is its time inside its plan running alone, measured when the
// sessions start (Session::profile_kernels).
//
// CUDA artifacts run the same way on one GPU, each session on a stream of its own: in the
// scheduled run (and the slowdown's probe) the LC's stream has the device's highest
// priority and the BE's the lowest, so the GPU starts the LC's waiting blocks first and a
// request never waits for BE work to end; a BE inference (one graph replay) is admitted
// during a request when the request, slowed down beside it, still keeps its target
// (src/colocate/scheduler.h, Sharing::kStreams). The other runs use normal priorities.
// Every artifact must be of one target. A best-effort artifact that fails while running
// stops alone, with its error in the report; the LC stream goes on. The LC artifact and each BE artifact must be different directories (generated
// kernels of one artifact keep static scratch and must not run twice at once).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace kora {

struct ColocateOptions {
  double qps = 0;         // LC requests per second (Poisson arrivals)
  double target_ms = 0;   // the LC latency target (p99)
  double seconds = 10;    // the length of each of the four runs
  uint64_t seed = 1;      // of the arrivals and the inputs
  double headroom = 1.2;  // the LC kernels left are predicted to take this times their cost
  double slowdown = 0;    // the LC's slowdown beside BE work; 0: measured before the runs
  int threads = 0;        // of every session; 0: each artifact's own
  std::ostream* progress = nullptr;  // one line per run when set
};

struct LatencyStats {
  int64_t requests = 0;                       // completed within the run
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // arrival to completion (queueing included)
  int64_t violations = 0;                     // requests above the target
};

struct BestEffortStats {
  std::string artifact;
  int64_t runs = 0;       // inferences completed within the run
  double per_second = 0;  // runs / seconds
  std::string error;      // why it stopped early (empty: it did not)
};

struct ColocateRun {
  std::string mode;  // "lc_alone", "be_alone", "naive", "scheduled"
  bool has_lc = false;
  LatencyStats lc;
  std::vector<BestEffortStats> be;    // empty for lc_alone
  int64_t be_admitted_in_flight = 0;  // scheduled: BE kernels started during an LC request
  double lc_waited_ms = 0;  // scheduled, time-slicing: mean wait of a request for a BE kernel
};

struct ColocateReport {
  std::string lc;
  std::vector<std::string> be;
  ColocateOptions options;
  double lc_predicted_ms = 0;  // the LC plan's in-plan kernel times, summed
  double slowdown = 1;         // the scheduler's (options.slowdown, or measured)
  // Where each ran in the scheduled run (Session::device(): the CPU's threads, or the GPU,
  // its replay and its stream's priority); empty for workloads that are not sessions.
  std::string lc_device;
  std::vector<std::string> be_devices;
  std::vector<ColocateRun> runs;  // lc_alone, be_alone, naive, scheduled
};

// Throws kora::Error (one line) for bad options or an artifact that does not load.
ColocateReport colocate(const std::string& lc_artifact,
                        const std::vector<std::string>& be_artifacts,
                        const ColocateOptions& options);

// The report as a table (text) and as JSON.
std::string format_colocate_report(const ColocateReport& report);
std::string colocate_report_json(const ColocateReport& report);

}  // namespace kora
