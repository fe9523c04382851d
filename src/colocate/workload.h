// Internal: what co-location runs, one artifact's inference with a gate between its steps
// (a Session, or in tests any function), and the runs themselves
// (include/kora/colocate.h's colocate() over sessions).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kora/colocate.h"
#include "kora/runtime.h"

namespace kora {

struct Workload {
  std::string name;
  std::vector<double> kernel_ms;  // each kernel's cost when compiled, in plan order
  // Installs the gate called before each step (first kernel, kernel count); empty: none.
  std::function<void(std::function<void(size_t, size_t)>)> set_gate;
  std::function<void()> run;  // one inference; throws what the run throws
  // A GPU workload (its kernels on a stream of the device): the LC's decides how the
  // scheduler models sharing (src/colocate/scheduler.h).
  bool gpu = false;
  // Sets the priority of its stream (GPU); empty: none to set.
  std::function<void(StreamPriority)> set_priority;
};

// The four runs of colocate() (lc_alone, be_alone, naive, scheduled), options checked.
ColocateReport colocate_workloads(Workload lc, std::vector<Workload> be,
                                  const ColocateOptions& options);

// One of the four runs ("lc_alone", "be_alone", "naive", "scheduled") of the LC stream
// arriving at `arrivals` (seconds from the start); gates set for the run and cleared after.
// Streams of GPU workloads: the LC's of high priority and the BE's of low in the scheduled
// run, or wherever `prioritized`; of normal priority otherwise.
ColocateRun colocate_run(const std::string& mode, Workload& lc, std::vector<Workload>& be,
                         const ColocateOptions& options, const std::vector<double>& arrivals,
                         bool prioritized = false);

// Throws kora::Error (one line) for options colocate cannot run with.
void check_colocate_options(const ColocateOptions& options, size_t best_effort);

}  // namespace kora
