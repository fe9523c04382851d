// Decodes ONNX tensors. In: a TensorProto (raw bytes, typed repeated fields, or an
// external-data reference) and the model directory. Out: a dense kora::Tensor.
#include "frontend/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kora/error.h"

namespace kora {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;

Shape dims_of(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  Shape shape(dims.begin(), dims.end());
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + ": negative dimension in shape " + shape_str(shape));
    if (d > 0 && n > kMaxElements / d)
      throw Error(what + ": shape " + shape_str(shape) + " is absurdly large");
    n *= d;
  }
  return shape;
}

std::string read_external(const onnx::TensorProto& p, const std::string& model_dir,
                          const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error(what + ": external data " + kv.key() + " '" + kv.value() + "' is not a number");
    }
  }
  if (location.empty()) throw Error(what + ": external data without a 'location'");
  std::filesystem::path rel(location);
  if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
    throw Error(what + ": external data location '" + location +
                "' must be a relative path inside the model's directory");
  std::filesystem::path file = std::filesystem::path(model_dir) / rel;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(what + ": external data file '" + file.string() + "' not found");
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    throw Error(what + ": external data file '" + file.string() + "' has " + std::to_string(size) +
                " bytes, the tensor needs bytes " + std::to_string(offset) + ".." +
                std::to_string(offset + length));
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

template <typename Field>
void fill_from_field(Tensor& t, const Field& field, const std::string& what) {
  if (field.size() != t.numel())
    throw Error(what + ": has " + std::to_string(field.size()) + " values for shape " +
                shape_str(t.shape()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_floating_point_v<typename Field::value_type>)
      set_element(t, i, static_cast<double>(field.Get(static_cast<int>(i))));
    else
      set_element_int(t, i, static_cast<int64_t>(field.Get(static_cast<int>(i))));
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir,
                         const std::string& what) {
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype)
    throw Error(what + ": element type " + onnx_dtype_name(p.data_type()) + " is not supported");
  Shape shape = dims_of(p.dims(), what);
  Tensor t(*dtype, shape);
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || p.has_raw_data()) {
    std::string raw = external ? read_external(p, model_dir, what) : p.raw_data();
    if (raw.size() != t.nbytes())
      throw Error(what + ": " + std::to_string(raw.size()) + " bytes of data for " +
                  dtype_name(*dtype) + " " + shape_str(shape) + " (needs " +
                  std::to_string(t.nbytes()) + ")");
    if (!raw.empty()) std::memcpy(t.mutable_bytes(), raw.data(), raw.size());
    return t;
  }
  switch (*dtype) {
    case DType::kFloat32:
      fill_from_field(t, p.float_data(), what);
      break;
    case DType::kFloat64:
      fill_from_field(t, p.double_data(), what);
      break;
    case DType::kInt64:
      fill_from_field(t, p.int64_data(), what);
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      fill_from_field(t, p.uint64_data(), what);
      break;
    case DType::kFloat16:
    case DType::kBFloat16: {
      // 16-bit floats are stored as their bit patterns in int32_data.
      if (p.int32_data_size() != t.numel())
        throw Error(what + ": has " + std::to_string(p.int32_data_size()) + " values for shape " +
                    shape_str(shape));
      for (int64_t i = 0; i < t.numel(); ++i) {
        uint16_t bits = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
        std::memcpy(t.mutable_bytes() + 2 * i, &bits, 2);
      }
      break;
    }
    default:
      fill_from_field(t, p.int32_data(), what);
      break;
  }
  return t;
}

Tensor tensor_from_sparse_proto(const onnx::SparseTensorProto& p, const std::string& model_dir,
                                const std::string& what) {
  Tensor values = tensor_from_proto(p.values(), model_dir, what + " (values)");
  Tensor indices = tensor_from_proto(p.indices(), model_dir, what + " (indices)");
  Shape shape = dims_of(p.dims(), what);
  Tensor dense(values.dtype(), shape);
  const int64_t nnz = values.numel(), total = dense.numel();
  const size_t esize = dtype_size(values.dtype());
  const int64_t rank = static_cast<int64_t>(shape.size());
  const bool coords = indices.shape().size() == 2;
  // ONNX allows indices of shape [NNZ] (linear positions) or [NNZ, rank] (coordinates).
  if (values.shape().size() != 1 ||
      !(indices.shape() == Shape{nnz} || (coords && indices.shape() == Shape{nnz, rank})))
    throw Error(what + ": sparse tensor of shape " + shape_str(shape) + " has values " +
                shape_str(values.shape()) + " and indices " + shape_str(indices.shape()) +
                " (expected [NNZ] values with [NNZ] or [NNZ, " + std::to_string(rank) +
                "] indices)");
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t linear = 0;
    if (coords) {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t c = indices.int64_at(k * rank + d);
        if (c < 0 || c >= shape[d])
          throw Error(what + ": sparse coordinate " + std::to_string(c) + " of dimension " +
                      std::to_string(d) + " is outside " + shape_str(shape));
        linear = linear * shape[d] + c;
      }
    } else {
      linear = indices.int64_at(k);
    }
    if (linear < 0 || linear >= total) throw Error(what + ": sparse index out of range");
    std::memcpy(dense.mutable_bytes() + linear * esize, values.bytes() + k * esize, esize);
  }
  return dense;
}

}  // namespace kora
