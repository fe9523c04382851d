// DType names, sizes and the mapping to and from ONNX TensorProto data type numbers.
#include "kora/dtype.h"

#include <string>

namespace kora {
namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
  int onnx;
};

// ONNX numbers: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6 INT64=7 STRING=8 BOOL=9
// FLOAT16=10 DOUBLE=11 UINT32=12 UINT64=13 COMPLEX64=14 COMPLEX128=15 BFLOAT16=16.
constexpr DTypeRow kRows[] = {
    {DType::kFloat32, "float32", 4, 1},  {DType::kFloat64, "float64", 8, 11},
    {DType::kFloat16, "float16", 2, 10}, {DType::kBFloat16, "bfloat16", 2, 16},
    {DType::kInt8, "int8", 1, 3},        {DType::kInt16, "int16", 2, 5},
    {DType::kInt32, "int32", 4, 6},      {DType::kInt64, "int64", 8, 7},
    {DType::kUInt8, "uint8", 1, 2},      {DType::kUInt16, "uint16", 2, 4},
    {DType::kUInt32, "uint32", 4, 12},   {DType::kUInt64, "uint64", 8, 13},
    {DType::kBool, "bool", 1, 9},
};

const DTypeRow& row(DType t) { return kRows[static_cast<int>(t)]; }

}  // namespace

const char* dtype_name(DType t) { return row(t).name; }
size_t dtype_size(DType t) { return row(t).size; }
int dtype_to_onnx(DType t) { return row(t).onnx; }

bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool is_integer(DType t) { return !is_floating(t) && t != DType::kBool; }

std::optional<DType> dtype_from_onnx(int onnx_type) {
  for (const DTypeRow& r : kRows)
    if (r.onnx == onnx_type) return r.dtype;
  return std::nullopt;
}

std::string onnx_dtype_name(int onnx_type) {
  static const char* const kNames[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
  if (onnx_type >= 0 && onnx_type < static_cast<int>(std::size(kNames))) return kNames[onnx_type];
  return "type " + std::to_string(onnx_type);
}

}  // namespace kora
