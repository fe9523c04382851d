// Element types kora computes with. In: an ONNX TensorProto data type number.
// Out: kora's DType, its name and byte size. ONNX types kora cannot compute with
// (string, complex, 8-bit and 4-bit floats, ...) have no DType.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kora {

enum class DType {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
};

// "float32", "int64", ...
const char* dtype_name(DType t);
size_t dtype_size(DType t);
bool is_floating(DType t);
bool is_integer(DType t);  // signed or unsigned integer, not bool

// ONNX TensorProto.DataType number <-> DType. nullopt for types kora does not support.
std::optional<DType> dtype_from_onnx(int onnx_type);
int dtype_to_onnx(DType t);
// Name of an ONNX data type number, for error messages ("STRING", "COMPLEX64", ...).
std::string onnx_dtype_name(int onnx_type);

}  // namespace kora
