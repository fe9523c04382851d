// The reference interpreter: runs a primitive graph on the CPU, simply and obviously
// correctly, so every later stage has something trustworthy to compare against.
// float32 is computed in float (sums accumulated in double); float16/bfloat16/float64
// through double; integers in int64; bool as 0/1.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kora/primitive.h"

namespace kora {

// Runs the whole graph. `inputs` gives a tensor for each graph input, of exactly the
// dtype and shape in graph.values (else kora::Error naming the input). Returns every
// graph output by name.
std::map<std::string, Tensor> interpret(const PrimGraph& graph,
                                        const std::map<std::string, Tensor>& inputs);

// Runs one primitive on the given input values (in the order of prim.inputs); returns its
// outputs, typed as graph.values says.
std::vector<Tensor> run_primitive(const PrimGraph& graph, const Primitive& prim,
                                  const std::vector<const Tensor*>& inputs);

// Operators fission keeps whole as opaque primitives; run_primitive implements each with
// its ONNX semantics.
bool is_opaque_operator(const std::string& op_type);

}  // namespace kora
