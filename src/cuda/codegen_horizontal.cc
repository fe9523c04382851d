// Horizontal fusion on CUDA (Tacker's scheme, for kernels on the CUDA cores): the
// independent parts of a candidate (candidate_parts: a pair that horizontal_candidates
// offered) in; one kernel out whose every launch runs the parts' launches of that rank
// side by side, each part on its own range of blocks:
//   extern "C" __global__ void K_j(the kernel's parameters) {
//     if (blockIdx.x < G0) { K_p0_j({blockIdx.x}, its pointers); return; }
//     if (blockIdx.x < G0 + G1) { K_p1_j({blockIdx.x - G0}, its pointers); return; }
//   }
// Each part is generated as a kernel of its own (its launches __device__ functions taking
// their block index), at the schedule's block size, so a block runs one part with all its
// threads and each part's __syncthreads() is its own block's barrier. A part's launches
// keep their order (rank j after rank j - 1), so a part of several launches (a reduction
// into scratch, then its outputs) stays correct; a part with fewer launches is absent
// from the later ones.
#include <algorithm>
#include <sstream>

#include "codegen/scalar.h"
#include "cuda/codegen_internal.h"
#include "kora/error.h"

namespace kora::cuda_gen {
namespace {

size_t index_of(const std::vector<std::string>& v, const std::string& x) {
  const auto it = std::find(v.begin(), v.end(), x);
  if (it == v.end())
    throw Error("cuda codegen: horizontal part's tensor " + x + " is not the kernel's");
  return static_cast<size_t>(it - v.begin());
}

}  // namespace

CudaKernel horizontal_kernel(const PrimGraph& graph, const KernelDag& dag,
                             const std::vector<Candidate>& parts,
                             const std::vector<std::string>& reads,
                             const std::vector<std::string>& writes, const CudaSchedule& schedule,
                             const std::string& symbol) {
  std::vector<CudaKernel> generated;
  std::ostringstream source;
  size_t ranks = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    KernelWriter writer(graph, dag, parts[p], schedule, symbol + "_p" + std::to_string(p));
    writer.as_device_body();
    generated.push_back(writer.run());
    source << generated.back().source;
    ranks = std::max(ranks, generated.back().launches.size());
  }
  std::string params;
  for (size_t i = 0; i < reads.size(); ++i)
    params += std::string(i ? ", " : "") + "const " + codegen::ctype(graph.value(reads[i]).dtype) +
              "* __restrict__ in" + std::to_string(i);
  for (size_t i = 0; i < writes.size(); ++i)
    params += std::string(params.empty() ? "" : ", ") +
              codegen::ctype(graph.value(writes[i]).dtype) + "* __restrict__ out" +
              std::to_string(i);
  CudaKernel k;
  k.symbol = symbol;
  k.reads = reads;
  k.writes = writes;
  for (size_t j = 0; j < ranks; ++j) {
    const std::string function = symbol + "_" + std::to_string(j);
    source << "extern \"C\" __global__ void __launch_bounds__(" << schedule.block << ") "
           << function << "(" << params << ") {\n";
    int64_t first = 0;  // the part's first block
    for (const CudaKernel& part : generated) {
      if (j >= part.launches.size() || part.launches[j].grid() == 0) continue;
      const CudaLaunch& l = part.launches[j];
      if (l.block != schedule.block)
        throw Error("cuda codegen: horizontal part launches " + std::to_string(l.block) +
                    " threads, not the schedule's " + std::to_string(schedule.block));
      std::string args;
      for (const std::string& r : part.reads) args += ", in" + std::to_string(index_of(reads, r));
      for (const std::string& w : part.writes)
        args += ", out" + std::to_string(index_of(writes, w));
      const int64_t end = first + l.grid();
      source << "  if (blockIdx.x < " << end << "u) {\n"
             << "    " << l.function << "(kora_block_index{blockIdx.x - " << first << "u}" << args
             << ");\n    return;\n  }\n";
      first = end;
    }
    source << "}\n";
    if (first > 0) k.launches.push_back({function, first, 1, schedule.block});
  }
  k.source = source.str();
  return k;
}

}  // namespace kora::cuda_gen
