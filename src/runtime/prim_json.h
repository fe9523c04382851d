// The primitive IR as JSON, exactly: primitives (every attribute of every kind, opaque
// nodes with all their ONNX attributes), tensor types, small tensors, and whole primitive
// graphs without their constants' bytes. In: kora values or parsed JSON; out: the other.
// from_json(to_json(x)) equals x field by field, doubles bit for bit.
//
// Encoding choices:
//   - names (scalar ops, reduce ops, layouts, kinds, dtypes, attribute kinds) are the
//     text of the name functions in include/kora/; pad modes are "constant", "reflect",
//     "edge"; linear ops "matmul" and "conv";
//   - a double is a JSON number when finite (printed with round-trip precision, -0.0
//     kept), else the string "inf", "-inf", "nan" (the default quiet NaN) or
//     "nan:0x<16 hex digits>" (any other NaN, its bit pattern);
//   - tensor bytes are base64 (RFC 4648, padded) of the raw little-endian bytes;
//   - attribute strings that are not valid UTF-8 (ONNX strings are bytes) become
//     {"base64": "..."}; names of tensors, nodes and primitives must be UTF-8.
// Malformed input (missing field, wrong type, unknown name, bad shape, inconsistent
// graph) throws kora::Error naming the primitive or tensor and the field.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kora/primitive.h"

namespace kora {

nlohmann::json primitive_to_json(const Primitive& p);
Primitive primitive_from_json(const nlohmann::json& j);

// {"dtype": "float32", "shape": [1, 3]}
nlohmann::json value_info_to_json(const ValueInfo& v);
ValueInfo value_info_from_json(const nlohmann::json& j);

// {"dtype": ..., "shape": ..., "data": "<base64>"}; meant for small tensors (attributes).
// A default-constructed Tensor (no bytes at all) has "data": null.
nlohmann::json tensor_to_json(const Tensor& t);
Tensor tensor_from_json(const nlohmann::json& j);

// A whole primitive graph: {"version": 1, "name", "inputs", "outputs", "values": {name:
// type}, "constants": {name: type}, "primitives": [...]}. Constants are listed with their
// types only; prim_graph_from_json takes their tensors from `constants` (every listed one
// must be there with that dtype and shape; entries not listed are ignored) and checks the
// graph: every tensor typed, primitives in topological order, one producer per tensor,
// outputs produced.
nlohmann::json prim_graph_to_json(const PrimGraph& g);
PrimGraph prim_graph_from_json(const nlohmann::json& j,
                               const std::map<std::string, Tensor>& constants);

}  // namespace kora
