// Candidate kernels (DESIGN.md, "Candidate kernels"): a KernelDag in, the connected,
// convex node sets one kernel could compute out, each with its outputs (members whose
// value leaves the kernel or is required) and inputs (non-members it reads). Rules: at
// most one linear primitive, opaque primitives alone, at most `max_size` members, and a
// backend capability hook. Every single node is always a candidate, so a plan exists.
// Horizontal fusion (DESIGN.md, "Concurrency"), where a backend asks for it: pairs of
// independent candidates as one candidate each (two kernels in one launch), which are
// convex but not connected; candidate_parts() gives a candidate's independent parts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

struct Candidate {
  std::vector<int> members;  // node ids of the DAG, ascending (a topological order)
  std::vector<int> outputs;  // members read outside the kernel or required
  std::vector<int> inputs;   // non-members the members read
  uint64_t signature = 0;    // canonical_signature(); 0 until computed
};

struct CandidateOptions {
  int max_size = 16;
  // Bound on the connected sets grown from one seed node (the sets whose smallest node
  // is the seed). Keeps enumeration linear in graph size; what it can miss is said in
  // src/candidates/enumerate.cc.
  int64_t max_sets_per_seed = 4000;
  // Budget of one segment (segment_candidates): a segment with more candidates is
  // enumerated again with kernels of at most 3/4 as many primitives, until within it (or
  // down to 2). Wide fan-outs and fan-ins (Inception modules, multi-scale heads) grow
  // candidates as a product of their branches: every extra candidate is a kernel to
  // measure and a variable of the program, and the largest ones rarely win. 0: no budget.
  int64_t max_per_segment = 10000;
  // Backend capability: false rejects a node set (called on convex sets passing the rules).
  std::function<bool(const KernelDag&, const std::vector<int>&)> capable;
  // Horizontal fusion (horizontal_candidates): up to this many pairs per enumeration of two
  // independent candidates next to a common node (both read it, or it reads both), each
  // part of at most horizontal_part_size elementwise, broadcast, layout and reduce
  // primitives (kernels a code generator writes), the pair accepted by `capable`. The
  // pairs with the fewest members come first. 0: none (the default).
  // With horizontal_linear a part may also hold a linear primitive (a matrix product and its
  // epilogue: a backend that generates its own tensor-core GEMM pairs it with a CUDA-core
  // kernel), up to horizontal_pairs such pairs besides the others.
  int horizontal_pairs = 0;
  int horizontal_part_size = 6;
  bool horizontal_linear = false;
};

struct CandidateStats {
  int64_t connected_sets = 0;  // connected sets examined
  int64_t convex = 0;          // of those, convex and within the rules
  int64_t seeds_capped = 0;    // seeds whose growth hit max_sets_per_seed
  int max_size = 0;            // the size bound the candidates were enumerated with
  bool over_budget = false;    // max_size came down to keep within max_per_segment
  int64_t horizontal = 0;      // horizontal pairs among the candidates
};

std::vector<Candidate> enumerate_candidates(const KernelDag& dag,
                                            const CandidateOptions& options = {},
                                            CandidateStats* stats = nullptr);

// Outputs and inputs of a member set (members ascending).
Candidate make_candidate(const KernelDag& dag, std::vector<int> members);

// The pairs horizontal fusion adds to `connected` (the enumerated candidates of `dag`), as
// CandidateOptions::horizontal_pairs says; enumerate_candidates appends them.
std::vector<Candidate> horizontal_candidates(const KernelDag& dag,
                                             const std::vector<Candidate>& connected,
                                             const CandidateOptions& options);

// A candidate's independent parts: its members split into the sets connected by the DAG's
// edges among them, ordered by their first member (one part for every enumerated candidate
// but the horizontal pairs).
std::vector<Candidate> candidate_parts(const KernelDag& dag, const Candidate& c);

// True when no path leaves `members` and comes back (members ascending).
bool is_convex(const KernelDag& dag, const std::vector<int>& members);

// A hash of the kernel's structure: primitive kinds and attributes, shapes and dtypes,
// how members feed each other, which members are outputs and how external tensors are
// shared, ignoring tensor names, node order, the values of weights and where slices start
// (the same slice at another offset does the same work: an unrolled recurrent cell's time
// steps are one kernel). Candidates with equal signatures are one kernel to measure, each
// generated from its own members. `dag` came from `graph` (dag.prim maps nodes to
// primitives).
uint64_t canonical_signature(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// The signature with the slices' starts: equal only for kernels whose generated code is the
// same (names of generated functions that must differ where the code does).
uint64_t instance_signature(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// A signature as 16 lowercase hex digits (cost tables, the profile database, reports).
std::string signature_hex(uint64_t signature);
// The kernel's first primitives' names, for messages ("conv1, relu1, ... (7 primitives)").
std::string kernel_name(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// The kernel's tensors: external tensors it reads (constants and graph inputs
// included) and the tensors it writes.
std::vector<std::string> kernel_reads(const PrimGraph& graph, const KernelDag& dag,
                                      const Candidate& c);
std::vector<std::string> kernel_writes(const PrimGraph& graph, const KernelDag& dag,
                                       const Candidate& c);

}  // namespace kora
