// CUDA code for a Gather whose indices are computed at run time (an opaque primitive: a
// token embedding's lookup, for one): the primitive in; one generated function out that
// copies, per output element, the data element its index selects (negative indices count
// from the end; an index out of range is clamped, where ONNX leaves the result undefined).
// Only a kernel of that one primitive is generated so (src/cuda/codegen.cc).
#include <sstream>

#include "codegen/scalar.h"
#include "cuda/codegen_internal.h"
#include "kora/error.h"

namespace kora::cuda_gen {

bool gather_supported(const PrimGraph& graph, const Primitive& p) {
  const auto* o = std::get_if<OpaqueAttrs>(&p.attrs);
  if (!o || o->node.op_type != "Gather" || p.inputs.size() != 2 || p.outputs.size() != 1)
    return false;
  const DType data = graph.value(p.inputs[0]).dtype, index = graph.value(p.inputs[1]).dtype;
  const int64_t rank = static_cast<int64_t>(graph.value(p.inputs[0]).shape.size());
  const int64_t axis = o->node.attr_int("axis", 0);
  return codegen::dtype_supported(data) && (index == DType::kInt64 || index == DType::kInt32) &&
         axis >= -rank && axis < rank && rank > 0;
}

CudaKernel gather_kernel(const PrimGraph& graph, const Primitive& p,
                         const std::vector<std::string>& reads,
                         const std::vector<std::string>& writes, const CudaSchedule& schedule,
                         const std::string& symbol) {
  if (!gather_supported(graph, p))
    throw Error("cuda codegen: " + p.describe() + " is not generated");
  const Shape& data = graph.value(p.inputs[0]).shape;
  int64_t axis = std::get<OpaqueAttrs>(p.attrs).node.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  const int64_t dim = data[static_cast<size_t>(axis)];
  const int64_t indices = numel(graph.value(p.inputs[1]).shape);
  const int64_t total = numel(graph.value(p.output()).shape);
  std::ostringstream os;
  const std::string fn = symbol + "_0";
  os << "extern \"C\" __global__ void __launch_bounds__(" << schedule.block << ") " << fn << "(";
  for (size_t i = 0; i < reads.size(); ++i)
    os << (i ? ", " : "") << "const " << codegen::ctype(graph.value(reads[i]).dtype)
       << "* __restrict__ r" << i;
  os << ", " << codegen::ctype(graph.value(writes.at(0)).dtype) << "* __restrict__ w0) {\n";
  const size_t d =
      static_cast<size_t>(std::find(reads.begin(), reads.end(), p.inputs[0]) - reads.begin());
  const size_t x =
      static_cast<size_t>(std::find(reads.begin(), reads.end(), p.inputs[1]) - reads.begin());
  if (d >= reads.size() || x >= reads.size() || writes.size() != 1 || writes[0] != p.output())
    throw Error("cuda codegen: " + p.describe() + ": unexpected kernel inputs or outputs");
  os << per_output_loop(schedule, total) << "    const int64_t in = o % " << inner
     << "LL, rest = o / " << inner << "LL;\n"
     << "    int64_t i = (int64_t)r" << x << "[rest % " << indices << "LL];\n"
     << "    if (i < 0) i += " << dim << "LL;\n"
     << "    i = i < 0 ? 0 : i >= " << dim << "LL ? " << dim - 1 << "LL : i;\n"
     << "    w0[o] = r" << d << "[(rest / " << indices << "LL * " << dim << "LL + i) * " << inner
     << "LL + in];\n"
     << "  }\n}\n";
  return one_launch_kernel(symbol, reads, writes, os.str(), schedule, total);
}

}  // namespace kora::cuda_gen
