// Profiling a model on the CPU backend (`kora profile`): a primitive graph, a profile
// database and options in; every unique candidate kernel of the graph (the candidates
// orchestrate() enumerates with the same partition and candidate options) measured and
// stored under the device fingerprint out. Per kernel, its implementations are:
//   generated code, per schedule of cpu_schedule_space() (the default for every kernel,
//   the others where the search decides), compiled many kernels per translation unit on
//   all cores (src/cpu/codegen.h, src/cpu/compile.h);
//   oneDNN, when the candidate fits a library call (src/cpu/library.h);
//   the interpreter, when nothing else computes the kernel (opaque primitives) or every
//   other implementation failed.
// Each implementation runs once on random inputs (constants: their real values) and is
// compared with the reference interpreter; one that fails to compile, throws or differs
// (relative L2 error above the tolerance) is stored as failed with the reason, never
// measured and never used. The rest are measured (src/cpu/measure.h) with inputs
// rotated through copies so that they do not sit in cache unrealistically. Kernels the
// database already knows for the device are not measured again. Generated code that is
// the same for two kernels (comments aside; e.g. they differ by a reshape) is compiled
// and measured once, and checked for each.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "cpu/compile.h"
#include "cpu/library.h"
#include "cpu/measure.h"
#include "kora/candidates.h"
#include "kora/orchestration.h"
#include "kora/partition.h"
#include "kora/primitive.h"

namespace kora {

class ProfileDb;

struct ProfileOptions {
  int threads = 0;  // 0: all cores
  CandidateOptions candidates;
  PartitionOptions partition;
  MeasureOptions measure = {2, 5, 50, 0.25, 0.02, 20.0};
  CxxCompileOptions compile;
  int kernels_per_unit = 32;  // generated kernels per translation unit (fewer when that
                              // leaves a compiler idle)
  int compile_jobs = 0;       // compilers run at once; 0: all cores
  double tolerance = 1e-4;    // relative L2 error vs the interpreter
  // oneDNN kernels computing in bf16 (TargetOptions::bf16); the tolerance is then at
  // least kBf16KernelTolerance.
  bool bf16 = false;
  // The schedule search. Exhaustive: every schedule of every kernel. Otherwise two
  // rounds: the default schedule (and library kernels) of every kernel, then the other
  // schedules of kernels whose default came within `search_within` of their best
  // implementation and whose best takes at least `search_min_ms`, the slowest
  // `search_max_kernels` of them (compiling is the cost: about 0.3 s per kernel per core).
  bool exhaustive = false;
  double search_within = 1.5;
  double search_min_ms = 0.05;
  int search_max_kernels = 200;
  // ... and the search stops after this many seconds of measuring (0: no limit); a
  // schedule whose first call takes twice the kernel's best so far is not measured further.
  double search_max_seconds = 300;
  // At most this many seconds in all waiting for a quiet machine to measure again what
  // was measured while other processes used the CPU (src/cpu/machine_load.h).
  double quiet_budget_seconds = 5;
  // Measure again the kernels whose fastest record is suspect (ProfileDb::suspect).
  bool remeasure_suspect = false;
  // Times the speed probe's reference loop once, in ms (src/cpu/speed_probe.h); empty: the
  // real one. The tests give one that reports a slowed machine.
  std::function<double()> speed_probe;
  // Measure only these kernels (by signature; measure on demand, src/driver/
  // measure_on_demand.h); the other candidates are counted as not needed.
  std::optional<std::set<uint64_t>> only;
  // Measure on demand: the kernels measured now get no schedule search; the known kernels
  // of `only` whose search is pending (unexplored_schedule_costs) get theirs.
  bool defer_search = false;
  // Check only (kora compile --no-measure): the implementations a plan emits for a kernel
  // the database does not know (oneDNN where it fits, generated code's default schedule)
  // are each run once and compared with the interpreter; nothing is measured or stored.
  // The failures are ProfileSummary::failures, the kernels left to the interpreter
  // ProfileSummary::unusable.
  bool check_only = false;
  // Every tensor's reference value (the interpreter's, on the profile's random inputs):
  // computed into it when empty, reused when not (it must be this graph's: measure on
  // demand keeps it across its rounds).
  std::shared_ptr<std::map<std::string, Tensor>> reference;
  // The graph's candidates already enumerated with these partition and candidate options
  // (unique_candidates); null: enumerated here.
  const ModelCandidates* enumerated = nullptr;
  std::ostream* progress = nullptr;  // progress lines and failures, when set
  bool terminal = false;             // progress as one rewritten line
  // More implementations per kernel, checked and measured like the others (plug-in
  // libraries; the tests inject deliberately wrong ones).
  std::function<std::vector<std::unique_ptr<CpuLibraryKernel>>(const PrimGraph&, const KernelDag&,
                                                               const Candidate&)>
      extra_kernels;
};

struct ProfileFailure {
  uint64_t signature = 0;
  std::string schedule, kernel, error;  // kernel: its primitives' names
};

struct ProfileSummary {
  std::string device;
  int64_t kernels = 0;         // unique signatures in the graph
  int64_t from_db = 0;         // already known for the device: not measured
  int64_t not_needed = 0;      // not asked for (ProfileOptions::only)
  int64_t measured = 0;        // kernels measured now
  int64_t reused_float32 = 0;  // bf16: generated code's records taken from float32
  // Of `measured`: known to the database, measured only for the library schedules it
  // lacked (added to kora since: native layouts, Winograd).
  int64_t library_filled = 0;
  int64_t implementations = 0;   // implementations measured now (all schedules)
  int64_t interpreter_only = 0;  // kernels whose only working implementation is the interpreter
  int64_t searched = 0;          // kernels whose other schedules were measured too
  std::vector<ProfileFailure> failures;  // implementations stored as failed
  int64_t checked = 0;                   // check_only: kernels checked
  std::vector<uint64_t> unusable;        // check_only: no implementation checked works
  int64_t units = 0, units_cached = 0;   // translation units compiled / found in the cache
  int64_t same_code = 0;  // generated implementations with another's code: compiled and
                          // measured once (each still checked)
  double enumerate_seconds = 0, generate_seconds = 0, compile_seconds = 0, measure_seconds = 0,
         total_seconds = 0;
  // Before each kernel measured, whether more tasks were runnable than kora's threads
  // (other work on the machine: the times are then inflated): how often, of how many looks.
  int64_t busy_looks = 0, load_looks = 0;
  // Implementations measured again because other processes used the CPU while they were
  // measured, and those stored as suspect (it never got quiet).
  int64_t remeasured = 0, suspect = 0;
  // Of `suspect`: measured while the speed probe ran slowed before and after, with no
  // other process in sight (another tenant on these cores, a power limit).
  int64_t slowed = 0;
  // When the database held nothing for this fingerprint: its records under others
  // (another machine, thread count, compiler, oneDNN or kora revision), none reused.
  int64_t other_fingerprints = 0;
};

// Measure on demand (ProfileOptions::defer_search): the graph's kernels measured on
// `device` whose schedule search is still to run (the default schedule measured and no
// other, and the search's rules pick them), each with what it may cost after the search:
// the default's time times the gain of the kernels searched so far (a low quantile, so
// that a kernel the search could make the best is tried), at most its best so far.
std::map<uint64_t, double> unexplored_schedule_costs(const PrimGraph& graph,
                                                     const ModelCandidates& candidates,
                                                     const ProfileDb& db, const std::string& device,
                                                     const ProfileOptions& options = {});

// The device fingerprint is cpu_backend_fingerprint(threads).
ProfileSummary profile_model(const PrimGraph& graph, ProfileDb& db,
                             const ProfileOptions& options = {});

std::string format_profile_summary(const ProfileSummary& summary);
std::string profile_summary_json(const ProfileSummary& summary);

}  // namespace kora
