// The reference interpreter's driver. In: a primitive graph and a tensor for each graph
// input. Out: every graph output. interpret() checks the inputs, walks the primitives in
// order and frees each intermediate after its last use; run_primitive() checks one
// primitive's inputs against graph.values and dispatches it to its kind's kernel.
#include "kora/interpreter.h"

#include <set>

#include "interpreter/kernels.h"
#include "kora/error.h"

namespace kora {
namespace interp {

void fail(const Primitive& prim, const std::string& message) {
  throw Error(prim.describe() + ": " + message);
}

std::string type_str(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + shape_str(shape);
}

}  // namespace interp

std::vector<Tensor> run_primitive(const PrimGraph& graph, const Primitive& prim,
                                  const std::vector<const Tensor*>& inputs) {
  using interp::fail;
  if (inputs.size() != prim.inputs.size())
    fail(prim, "given " + std::to_string(inputs.size()) + " inputs, it has " +
                   std::to_string(prim.inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) fail(prim, "input '" + prim.inputs[i] + "' is missing");
    const ValueInfo& v = graph.value(prim.inputs[i]);
    if (inputs[i]->dtype() != v.dtype || inputs[i]->shape() != v.shape)
      fail(prim, "input '" + prim.inputs[i] + "' is " +
                     interp::type_str(inputs[i]->dtype(), inputs[i]->shape()) + ", expected " +
                     interp::type_str(v.dtype, v.shape));
  }
  if (prim.kind() == PrimKind::kOpaque) return interp::run_opaque(graph, prim, inputs);
  if (prim.outputs.size() != 1)
    fail(prim, "has " + std::to_string(prim.outputs.size()) + " outputs, expected 1");
  const ValueInfo& out = graph.value(prim.output());
  Tensor result;
  switch (prim.kind()) {
    case PrimKind::kElementwise:
      result = interp::run_elementwise(prim, std::get<ElementwiseAttrs>(prim.attrs), inputs, out);
      break;
    case PrimKind::kReduce:
      result = interp::run_reduce(prim, std::get<ReduceAttrs>(prim.attrs), inputs, out);
      break;
    case PrimKind::kBroadcast:
      result = interp::run_broadcast(prim, inputs, out);
      break;
    case PrimKind::kLayout:
      result = interp::run_layout(prim, std::get<LayoutAttrs>(prim.attrs), inputs, out);
      break;
    case PrimKind::kLinear:
      result = interp::run_linear(prim, std::get<LinearAttrs>(prim.attrs), inputs, out);
      break;
    case PrimKind::kOpaque:
      break;
  }
  if (result.dtype() != out.dtype || result.shape() != out.shape)
    fail(prim, "computed " + interp::type_str(result.dtype(), result.shape()) + ", expected " +
                   interp::type_str(out.dtype, out.shape));
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(result));
  return outputs;
}

std::map<std::string, Tensor> interpret(const PrimGraph& graph,
                                        const std::map<std::string, Tensor>& inputs) {
  const std::string where = "interpret graph '" + graph.name + "': ";
  const std::set<std::string> input_names(graph.inputs.begin(), graph.inputs.end());
  for (const auto& [name, tensor] : inputs)
    if (!input_names.count(name)) throw Error(where + "'" + name + "' is not a graph input");
  for (const std::string& name : graph.inputs) {
    const ValueInfo& v = graph.value(name);
    auto it = inputs.find(name);
    if (it == inputs.end())
      throw Error(where + "input '" + name + "' (" + interp::type_str(v.dtype, v.shape) +
                  ") is not given");
    if (it->second.dtype() != v.dtype || it->second.shape() != v.shape)
      throw Error(where + "input '" + name + "' is " +
                  interp::type_str(it->second.dtype(), it->second.shape()) + ", expected " +
                  interp::type_str(v.dtype, v.shape));
  }

  // Remaining uses of each tensor; graph outputs are never freed.
  std::map<std::string, int64_t> uses;
  for (const Primitive& prim : graph.prims)
    for (const std::string& t : prim.inputs) ++uses[t];
  const std::set<std::string> keep(graph.outputs.begin(), graph.outputs.end());

  std::map<std::string, Tensor> computed;
  auto lookup = [&](const std::string& name) -> const Tensor* {
    if (auto it = computed.find(name); it != computed.end()) return &it->second;
    if (input_names.count(name)) return &inputs.at(name);
    return graph.constant(name);
  };

  std::vector<const Tensor*> args;
  for (const Primitive& prim : graph.prims) {
    args.clear();
    for (const std::string& t : prim.inputs) {
      const Tensor* value = lookup(t);
      if (!value)
        interp::fail(prim,
                     "input '" + t + "' is neither a graph input, a constant nor computed before");
      args.push_back(value);
    }
    std::vector<Tensor> results = run_primitive(graph, prim, args);
    for (size_t i = 0; i < prim.outputs.size() && i < results.size(); ++i) {
      const std::string& name = prim.outputs[i];
      if (name.empty() || (uses[name] == 0 && !keep.count(name))) continue;
      if (lookup(name)) interp::fail(prim, "output '" + name + "' is defined twice");
      computed.emplace(name, std::move(results[i]));
    }
    for (const std::string& t : prim.inputs)
      if (--uses[t] == 0 && !keep.count(t)) computed.erase(t);
  }

  std::map<std::string, Tensor> outputs;
  for (const std::string& name : graph.outputs) {
    const Tensor* value = lookup(name);
    if (!value) throw Error(where + "output '" + name + "' is never computed");
    outputs.emplace(name, *value);
  }
  return outputs;
}

}  // namespace kora
