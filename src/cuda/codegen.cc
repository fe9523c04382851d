// CUDA code generation (src/cuda/codegen.h): a candidate in, the source of a few
// __global__ functions and their launches out. This file plans them: one row-fused launch
// when the schedule asks for it (or, by default, when the kernel allows it and its rows
// are long enough), else a launch per reduce member in topological order (writing the
// output, or module-scope scratch when only the kernel reads it), then one launch per
// shape of the remaining written tensors, each element's value expanded through the fused
// members; a candidate of independent parts is a horizontal kernel (codegen_horizontal.cc).
// Also: what is supported, the schedule space and schedule keys.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/fnv_hash.h"
#include "cuda/codegen_internal.h"
#include "kora/error.h"

namespace kora {
namespace cuda_gen {

KernelWriter::KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                           const CudaSchedule& schedule, const std::string& symbol)
    : ValueWriter(graph, dag, c), schedule_(schedule), symbol_(symbol) {
  int64_t largest = 0;
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    for (const std::string& t : p.inputs) largest = std::max(largest, numel(graph.value(t).shape));
    largest = std::max(largest, numel(graph.value(p.output()).shape));
  }
  if (largest < (int64_t{1} << 30)) index_ = "int";
  for (size_t i = 0; i < reads_.size(); ++i) {
    in_ptr_[reads_[i]] = "in" + std::to_string(i);
    params_ += std::string(i ? ", " : "") + "const " +
               codegen::ctype(graph_.value(reads_[i]).dtype) + "* __restrict__ in" +
               std::to_string(i);
  }
  for (size_t i = 0; i < writes_.size(); ++i) {
    out_ptr_[writes_[i]] = "out" + std::to_string(i);
    params_ += std::string(params_.empty() ? "" : ", ") +
               codegen::ctype(graph_.value(writes_[i]).dtype) + "* __restrict__ out" +
               std::to_string(i);
  }
}

std::string KernelWriter::index_table(const std::vector<int64_t>& values) {
  const std::string table = symbol_ + "_" + fresh("gather");
  statics_ << "__device__ const int64_t " << table << "[" << std::max<size_t>(1, values.size())
           << "] = {";
  for (size_t i = 0; i < values.size(); ++i) statics_ << (i ? ", " : "") << values[i];
  statics_ << "};\n";
  return table;
}

std::string KernelWriter::scratch(DType t, int64_t n) { return scratch(codegen::ctype(t), n); }

std::string KernelWriter::scratch(const std::string& ctype, int64_t n) {
  const std::string name = symbol_ + "_" + fresh("scratch");
  statics_ << "__device__ " << ctype << " " << name << "[" << std::max<int64_t>(n, 1) << "];\n";
  return name;
}

CudaKernel KernelWriter::run() {
  if (writes_.empty()) return {symbol_, "", reads_, writes_, {}};  // dead members only
  auto written = [&](const std::string& t) {
    return std::find(writes_.begin(), writes_.end(), t) != writes_.end();
  };
  // One row-fused launch, or a launch per reduce member and per output shape.
  CudaReduce strategy = schedule_.reduce;
  const std::vector<const Primitive*> rs = reduces();
  if (strategy == CudaReduce::kAuto && !rs.empty() && row_fusible()) {
    const int64_t count =
        codegen::reduce_code(graph_, *rs[0], std::get<ReduceAttrs>(rs[0]->attrs)).count;
    const int64_t rows = numel(graph_.value(rs[0]->output()).shape);
    // (few long rows: several blocks per row in separate launches fill the device better)
    if (count >= 32 && cuda_reduce_strategy_for(rows, count, true) != CudaReduce::kMultiBlock)
      strategy = count >= 1024 ? CudaReduce::kRowBlock : CudaReduce::kRowWarp;
  }
  if ((strategy == CudaReduce::kRowWarp || strategy == CudaReduce::kRowBlock) && row_fusible()) {
    fused_row_launch(strategy);
    return {symbol_, statics_.str() + functions_.str(), reads_, writes_, launches_};
  }
  reduce_ = strategy == CudaReduce::kRowWarp    ? CudaReduce::kWarp
            : strategy == CudaReduce::kRowBlock ? CudaReduce::kBlock
                                                : strategy;
  std::vector<std::string> done;
  for (int v : c_.members) {
    const Primitive& p = graph_.prims[dag_.prim[v]];
    const std::string& t = p.output();
    if (const auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
      buffer_[t] = written(t) ? out_ptr_.at(t)
                              : scratch(graph_.value(t).dtype, numel(graph_.value(t).shape));
      reduce_launch(p, *r);
      if (written(t)) done.push_back(t);
    } else if (p.kind() == PrimKind::kLinear || p.kind() == PrimKind::kOpaque) {
      throw Error("cuda codegen: " + p.describe() + " is " + prim_kind_name(p.kind()) +
                  ": not generated");
    }
  }
  // The remaining written tensors, grouped by shape in order of first appearance.
  std::vector<std::vector<std::string>> groups;
  for (const std::string& w : writes_) {
    if (std::find(done.begin(), done.end(), w) != done.end()) continue;
    const Shape& s = graph_.value(w).shape;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& x) { return graph_.value(x[0]).shape == s; });
    if (g == groups.end())
      groups.push_back({w});
    else
      g->push_back(w);
  }
  for (const auto& g : groups) pointwise_launch(g);
  return {symbol_, statics_.str() + functions_.str(), reads_, writes_, launches_};
}

}  // namespace cuda_gen

namespace {

bool member_supported(const PrimGraph& graph, const Primitive& p) {
  for (const std::string& t : p.inputs)
    if (!codegen::dtype_supported(graph.value(t).dtype)) return false;
  for (const std::string& t : p.outputs)
    if (!codegen::dtype_supported(graph.value(t).dtype)) return false;
  switch (p.kind()) {
    case PrimKind::kElementwise:
      return codegen::elementwise_supported(graph, p, std::get<ElementwiseAttrs>(p.attrs));
    case PrimKind::kBroadcast:
    case PrimKind::kReduce:
      return p.inputs.size() == 1;
    case PrimKind::kLayout:
      return !p.inputs.empty();
    case PrimKind::kLinear:  // cuBLAS / cuDNN
    case PrimKind::kOpaque:
      return false;
  }
  return false;
}

bool has_reduce(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  for (int v : c.members)
    if (graph.prims[dag.prim[v]].kind() == PrimKind::kReduce) return true;
  return false;
}

constexpr CudaReduce kStrategies[] = {
    CudaReduce::kAuto,       CudaReduce::kThread,  CudaReduce::kWarp,    CudaReduce::kBlock,
    CudaReduce::kMultiBlock, CudaReduce::kRowWarp, CudaReduce::kRowBlock};

// A kernel of one opaque primitive that is generated: a Gather of computed indices
// (codegen_gather.cc), ArgMax or ArgMin (codegen_arg_extreme.cc).
const Primitive* lone_opaque(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  if (c.members.size() != 1) return nullptr;
  const Primitive& p = graph.prims[dag.prim[c.members[0]]];
  return cuda_gen::gather_supported(graph, p) || cuda_gen::arg_extreme_supported(graph, p)
             ? &p
             : nullptr;
}

}  // namespace

bool cuda_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  if (c.members.empty()) return false;
  const std::vector<Candidate> parts = candidate_parts(dag, c);
  if (parts.size() > 1)  // horizontal: parts the kernel writer generates
    return std::all_of(parts.begin(), parts.end(), [&](const Candidate& p) {
      return !lone_opaque(graph, dag, p) && cuda_codegen_supports(graph, dag, p);
    });
  if (lone_opaque(graph, dag, c)) return true;
  for (int v : c.members)
    if (!member_supported(graph, graph.prims[dag.prim[v]])) return false;
  return true;
}

const char* cuda_reduce_name(CudaReduce r) {
  switch (r) {
    case CudaReduce::kAuto:
      return "auto";
    case CudaReduce::kThread:
      return "thread";
    case CudaReduce::kWarp:
      return "warp";
    case CudaReduce::kBlock:
      return "block";
    case CudaReduce::kMultiBlock:
      return "multi_block";
    case CudaReduce::kRowWarp:
      return "row_warp";
    case CudaReduce::kRowBlock:
      return "row_block";
  }
  return "?";
}

CudaReduce cuda_reduce_strategy_for(int64_t rows, int64_t count, bool inner_reduced) {
  if (count <= 16) return CudaReduce::kThread;
  // Reduced elements strided in memory: neighbouring threads take neighbouring rows, so
  // their loads coalesce, as long as there are rows enough to fill the device.
  if (!inner_reduced && rows >= 2048) return CudaReduce::kThread;
  if (count >= 8192 && rows <= 128) return CudaReduce::kMultiBlock;  // fill the device
  if (count >= 2048 && rows < (1 << 16)) return CudaReduce::kBlock;
  return CudaReduce::kWarp;
}

std::string CudaSchedule::key() const {
  if (*this == CudaSchedule{}) return "default";
  return "block=" + std::to_string(block) + ";items=" + std::to_string(items) +
         ";reduce=" + cuda_reduce_name(reduce);
}

std::string cuda_kernel_symbol(uint64_t signature, size_t schedule_index) {
  return "kora_" + signature_hex(signature) + "_" + std::to_string(schedule_index);
}

std::string cuda_kernel_symbol(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                               const std::string& schedule_key) {
  // The instance signature: kernels of one signature that slice at other offsets are
  // other code, in one artifact beside each other.
  const uint64_t instance = instance_signature(graph, dag, c);
  const std::vector<CudaSchedule> space = cuda_schedule_space(graph, dag, c);
  const std::string key = CudaSchedule::from_key(schedule_key).key();
  for (size_t i = 0; i < space.size(); ++i)
    if (space[i].key() == key) return cuda_kernel_symbol(instance, i);
  FnvHash hash;
  hash.str(key);
  return "kora_" + signature_hex(instance) + "_s" + hex64(hash.h);
}

CudaSchedule CudaSchedule::from_key(const std::string& key) {
  CudaSchedule s;
  if (key == "default") return s;
  int block = 0, items = 0;
  char reduce[16] = {};
  if (std::sscanf(key.c_str(), "block=%d;items=%d;reduce=%15s", &block, &items, reduce) != 3 ||
      block < 32 || block > 1024 || block % 32 != 0 || items < 1 || items > 16)
    throw Error("cuda codegen: '" + key + "' is not a CUDA schedule key");
  s.block = block;
  s.items = items;
  bool known = false;
  for (CudaReduce r : kStrategies)
    if (std::strcmp(reduce, cuda_reduce_name(r)) == 0) s.reduce = r, known = true;
  if (!known || s.key() != key)
    throw Error("cuda codegen: '" + key + "' is not a CUDA schedule key");
  return s;
}

std::vector<CudaSchedule> cuda_schedule_space(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c) {
  std::vector<CudaSchedule> space = {CudaSchedule{}};
  auto add = [&](int block, int items, CudaReduce reduce) {
    const CudaSchedule s{block, items, reduce};
    if (std::find(space.begin(), space.end(), s) == space.end()) space.push_back(s);
  };
  if (candidate_parts(dag, c).size() > 1) {  // horizontal: one block size for every part
    for (int block : {128, 512}) add(block, 1, CudaReduce::kAuto);
    return space;
  }
  if (!has_reduce(graph, dag, c)) {
    for (int block : {128, 256, 512})
      for (int items : {1, 2, 4}) add(block, items, CudaReduce::kAuto);
    return space;
  }
  const bool fusible = cuda_row_fusible(graph, dag, c);
  for (CudaReduce r :
       {CudaReduce::kThread, CudaReduce::kWarp, CudaReduce::kBlock, CudaReduce::kMultiBlock}) {
    for (int block : {128, 256, 512}) add(block, 1, r);
    if (!fusible)
      for (int items : {2, 4}) add(256, items, r);
  }
  if (fusible)
    for (CudaReduce r : {CudaReduce::kRowWarp, CudaReduce::kRowBlock}) {
      for (int block : {128, 256, 512}) add(block, 1, r);
      for (int items : {2, 4}) add(256, items, r);
    }
  return space;
}

bool cuda_row_fusible(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  if (!cuda_codegen_supports(graph, dag, c) || candidate_parts(dag, c).size() > 1) return false;
  return cuda_gen::KernelWriter(graph, dag, c, CudaSchedule{}, "k").row_fusible();
}

CudaKernel generate_cuda_kernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                                const std::string& symbol, const CudaSchedule& schedule) {
  if (schedule.block < 32 || schedule.block > 1024 || schedule.block % 32 != 0 ||
      schedule.items < 1)
    throw Error("cuda codegen: schedule '" + schedule.key() + "' is not valid");
  if (const Primitive* o = lone_opaque(graph, dag, c))
    return (cuda_gen::gather_supported(graph, *o) ? cuda_gen::gather_kernel
                                                  : cuda_gen::arg_extreme_kernel)(
        graph, *o, kernel_reads(graph, dag, c), kernel_writes(graph, dag, c), schedule, symbol);
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    if (!member_supported(graph, p))
      throw Error("cuda codegen: " + p.describe() + " is not generated (kind or dtypes)");
  }
  const std::vector<Candidate> parts = candidate_parts(dag, c);
  if (parts.size() > 1)
    return cuda_gen::horizontal_kernel(graph, dag, parts, kernel_reads(graph, dag, c),
                                       kernel_writes(graph, dag, c), schedule, symbol);
  return cuda_gen::KernelWriter(graph, dag, c, schedule, symbol).run();
}

}  // namespace kora
