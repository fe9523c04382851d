// CUDA code for ArgMax and ArgMin (opaque primitives: the index of an extreme, not a value):
// the primitive in; one generated function out, a thread per output element scanning its
// axis with the reference interpreter's rule (src/interpreter/opaque.cc): the first
// extreme, or the last with select_last_index; NaN beats every number (the first NaN, or
// the last). Only a kernel of that one primitive is generated so (src/cuda/codegen.cc).
#include <sstream>

#include "codegen/scalar.h"
#include "cuda/codegen_internal.h"
#include "kora/error.h"

namespace kora::cuda_gen {

bool arg_extreme_supported(const PrimGraph& graph, const Primitive& p) {
  const auto* o = std::get_if<OpaqueAttrs>(&p.attrs);
  if (!o || (o->node.op_type != "ArgMax" && o->node.op_type != "ArgMin") || p.inputs.size() != 1 ||
      p.outputs.size() != 1)
    return false;
  const ValueInfo& x = graph.value(p.inputs[0]);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = o->node.attr_int("axis", 0);
  return codegen::dtype_supported(x.dtype) && x.dtype != DType::kBool &&
         graph.value(p.output()).dtype == DType::kInt64 && rank > 0 && axis >= -rank &&
         axis < rank && x.shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)] > 0;
}

CudaKernel arg_extreme_kernel(const PrimGraph& graph, const Primitive& p,
                              const std::vector<std::string>& reads,
                              const std::vector<std::string>& writes, const CudaSchedule& schedule,
                              const std::string& symbol) {
  if (!arg_extreme_supported(graph, p) || reads.size() != 1 || reads[0] != p.inputs[0] ||
      writes.size() != 1 || writes[0] != p.output())
    throw Error("cuda codegen: " + p.describe() + " is not generated");
  const Node& node = std::get<OpaqueAttrs>(p.attrs).node;
  const ValueInfo& x = graph.value(p.inputs[0]);
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  const int64_t total = numel(x.shape) / len;
  const bool max = node.op_type == "ArgMax", last = node.attr_int("select_last_index", 0) != 0;
  const bool floating = x.dtype == DType::kFloat32 || x.dtype == DType::kFloat64;
  const std::string t = codegen::ctype(x.dtype), fn = symbol + "_0";
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << schedule.block << ") " << fn
     << "(const " << t << "* __restrict__ r0, int64_t* __restrict__ w0) {\n"
     << per_output_loop(schedule, total) << "    const " << t << "* x = r0 + o / " << inner
     << "LL * " << len * inner << "LL + o % " << inner << "LL;\n"
     << "    int64_t best = 0;\n"
     << "    " << t << " b = x[0];\n"
     << "    for (int64_t j = 1; j < " << len << "LL; ++j) {\n"
     << "      const " << t << " c = x[j * " << inner << "LL];\n";
  const std::string better = max ? "c > b" : "c < b";
  if (floating)
    os << "      const bool take = b != b ? " << (last ? "c != c" : "false")
       << " : c != c ? true : "
       << "(" << better << (last ? " || c == b" : "") << ");\n";
  else
    os << "      const bool take = " << better << (last ? " || c == b" : "") << ";\n";
  os << "      if (take) { best = j; b = c; }\n"
     << "    }\n"
     << "    w0[o] = best;\n"
     << "  }\n}\n";
  return one_launch_kernel(symbol, reads, writes, os.str(), schedule, total);
}

}  // namespace kora::cuda_gen
