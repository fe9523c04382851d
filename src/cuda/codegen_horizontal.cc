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
#include "cuda/library_plan.h"
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

CudaKernel horizontal_launches(const PrimGraph& graph, const std::vector<CudaKernel>& generated,
                               const std::vector<std::string>& reads,
                               const std::vector<std::string>& writes, int block,
                               const std::string& symbol) {
  std::ostringstream source;
  size_t ranks = 0;
  for (const CudaKernel& part : generated) {
    source << part.source;
    ranks = std::max(ranks, part.launches.size());
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
    source << "extern \"C\" __global__ void __launch_bounds__(" << block << ") " << function << "("
           << params << ") {\n";
    int64_t first = 0;  // the part's first block
    for (const CudaKernel& part : generated) {
      if (j >= part.launches.size() || part.launches[j].grid() == 0) continue;
      const CudaLaunch& l = part.launches[j];
      if (l.block != block)
        throw Error("cuda codegen: horizontal part launches " + std::to_string(l.block) +
                    " threads, not the kernel's " + std::to_string(block));
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
    if (first > 0) k.launches.push_back({function, first, 1, block});
  }
  k.source = source.str();
  return k;
}

CudaKernel horizontal_kernel(const PrimGraph& graph, const KernelDag& dag,
                             const std::vector<Candidate>& parts,
                             const std::vector<std::string>& reads,
                             const std::vector<std::string>& writes, const CudaSchedule& schedule,
                             const std::string& symbol) {
  std::vector<CudaKernel> generated;
  for (size_t p = 0; p < parts.size(); ++p) {
    KernelWriter writer(graph, dag, parts[p], schedule, symbol + "_p" + std::to_string(p));
    writer.as_device_body();
    generated.push_back(writer.run());
  }
  return horizontal_launches(graph, generated, reads, writes, schedule.block, symbol);
}

}  // namespace kora::cuda_gen

namespace kora {

bool cuda_mma_pair_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const std::vector<Candidate> parts = candidate_parts(dag, c);
  if (parts.size() < 2) return false;
  bool gemm = false;
  for (const Candidate& p : parts) {
    const bool is_gemm = cuda_gemm_plan(graph, dag, p).has_value();
    if (!is_gemm && !cuda_codegen_supports(graph, dag, p)) return false;
    gemm |= is_gemm;
  }
  return gemm;
}

CudaKernel generate_mma_pair(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                             const std::string& symbol, const CudaMmaTile& tile) {
  const int block = tile.bm / 32 * (tile.bn / 32) * 32;
  std::vector<CudaKernel> generated;
  const std::vector<Candidate> parts = candidate_parts(dag, c);
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string part_symbol = symbol + "_p" + std::to_string(p);
    if (const std::optional<CudaGemm> gemm = cuda_gemm_plan(graph, dag, parts[p])) {
      generated.push_back(generate_mma_gemm(*gemm, kernel_reads(graph, dag, parts[p]),
                                            kernel_writes(graph, dag, parts[p]), part_symbol, tile,
                                            true));
      continue;
    }
    if (!cuda_codegen_supports(graph, dag, parts[p]))
      throw Error("cuda codegen: " + kernel_name(graph, dag, parts[p]) +
                  " is neither a GEMM nor generated code");
    CudaSchedule schedule;
    schedule.block = block;
    cuda_gen::KernelWriter writer(graph, dag, parts[p], schedule, part_symbol);
    writer.as_device_body();
    generated.push_back(writer.run());
  }
  return cuda_gen::horizontal_launches(graph, generated, kernel_reads(graph, dag, c),
                                       kernel_writes(graph, dag, c), block, symbol);
}

}  // namespace kora
