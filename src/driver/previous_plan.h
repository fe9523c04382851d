// Internal: the plan a compile emitted, remembered for the next compile of the same model
// (src/driver/plan_check.cc). In: the profile database, the device, the primitive graph,
// and the plan emitted with its latency measured end to end. Out: that plan again when the
// same graph is compiled for the same device, so the check on the clock times it next to
// the new candidates and a recompile never emits a plan slower on the clock than the last
// one (up to the noise of the comparison); without it a recompile re-solved at the in-plan
// costs of the first could emit a plan 5-10% slower (docs/benchmarks.md, "Costs in
// context"). It lives in the database's device facts under "emitted_plan:" and the graph's
// hash (its primitives, their attributes, tensors and types; not the weights' values), as
// JSON: each kernel's primitives (indices), outputs, signature, cost, segment, native
// flag, and the layouts decided. A row that does not fit the graph is ignored.
#pragma once

#include <optional>
#include <string>

#include "kora/orchestration.h"
#include "kora/primitive.h"
#include "kora/profile_db.h"

namespace kora {

// The graph's identity for remembered plans: 16 hex digits.
std::string plan_graph_key(const PrimGraph& graph);

void remember_emitted_plan(ProfileDb& db, const std::string& device, const PrimGraph& graph,
                           const OrchestrationResult& plan, double measured_ms);

// The plan remembered for this device and graph, when there is one that fits the graph:
// kernel primitives in range and ascending, outputs among them, every primitive computed.
std::optional<OrchestrationResult> previous_emitted_plan(const ProfileDb& db,
                                                         const std::string& device,
                                                         const PrimGraph& graph,
                                                         double* measured_ms = nullptr);

}  // namespace kora
