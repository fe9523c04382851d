// Decodes ONNX tensors. In: a TensorProto (raw bytes, typed repeated fields, or an
// external-data reference) and the model directory. Out: a dense kora::Tensor. Every
// size is checked against the data actually present (bytes, values, the external file's
// size) before the tensor is allocated; external data must resolve, symlinks followed,
// inside the model's directory (as onnxruntime requires).
#include "frontend/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kora/error.h"

namespace kora {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr int64_t kMaxSparseDenseBytes = int64_t{1} << 31;

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

// Whether `file` lies strictly inside directory `base` (both canonical).
bool inside(const std::filesystem::path& base, const std::filesystem::path& file) {
  const std::filesystem::path rel = file.lexically_relative(base);
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

// The `expected` bytes an external-data reference points at. The file must resolve (its
// real path, symlinks followed) inside the model's directory, be a regular file, and hold
// offset..offset+length; everything is checked before anything is read or allocated.
std::string read_external(const onnx::TensorProto& p, const std::string& model_dir,
                          const std::string& what, int64_t expected) {
  namespace fs = std::filesystem;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      size_t used = 0;
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value(), &used);
      else if (kv.key() == "length")
        length = std::stoll(kv.value(), &used);
      if (used && used != kv.value().size()) throw std::invalid_argument(kv.value());
    } catch (const std::exception&) {
      throw Error(what + ": external data " + kv.key() + " '" + kv.value() + "' is not a number");
    }
  }
  if (location.empty()) throw Error(what + ": external data without a 'location'");
  if (offset < 0 || length < -1)
    throw Error(what + ": external data offset " + std::to_string(offset) + " or length " +
                std::to_string(length) + " is negative");
  const fs::path rel(location);
  if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
    throw Error(what + ": external data location '" + location +
                "' must be a relative path inside the model's directory");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(model_dir.empty() ? "." : model_dir, ec);
  const fs::path file = ec ? fs::path() : fs::weakly_canonical(base / rel, ec);
  if (ec || !inside(base, file))
    throw Error(what + ": external data file '" + location + "' escapes the model directory '" +
                base.string() + "'" + (ec ? "" : " (it resolves to '" + file.string() + "')"));
  if (!fs::exists(file, ec))
    throw Error(what + ": external data file '" + file.string() + "' not found");
  if (!fs::is_regular_file(file, ec))
    throw Error(what + ": external data file '" + file.string() + "' is not a regular file");
  const auto file_size = fs::file_size(file, ec);
  if (ec) throw Error(what + ": cannot read external data file '" + file.string() + "'");
  const int64_t size = static_cast<int64_t>(file_size);
  if (offset > size || (length >= 0 && length > size - offset))
    throw Error(what + ": external data file '" + file.string() + "' has " + std::to_string(size) +
                " bytes, the tensor needs " + (length >= 0 ? std::to_string(length) : "the") +
                " bytes from offset " + std::to_string(offset));
  if (length < 0) length = size - offset;
  if (length != expected)
    throw Error(what + ": external data holds " + std::to_string(length) + " bytes, the tensor " +
                "needs " + std::to_string(expected));
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  if (!in || !in.read(bytes.data(), length))
    throw Error(what + ": cannot read external data file '" + file.string() + "'");
  return bytes;
}

// The number of values the tensor's typed field holds (a dtype without one: -1).
int64_t typed_count(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return p.float_data_size();
    case DType::kFloat64:
      return p.double_data_size();
    case DType::kInt64:
      return p.int64_data_size();
    case DType::kUInt32:
    case DType::kUInt64:
      return p.uint64_data_size();
    default:
      return p.int32_data_size();
  }
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
  const int64_t nbytes = checked_nbytes(*dtype, shape);
  if (nbytes < 0) throw Error(what + ": shape " + shape_str(shape) + " is absurdly large");
  // Sizes are checked against the data present before the tensor is allocated.
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || p.has_raw_data()) {
    const std::string external_bytes = external ? read_external(p, model_dir, what, nbytes) : "";
    const std::string& raw = external ? external_bytes : p.raw_data();
    if (static_cast<int64_t>(raw.size()) != nbytes)
      throw Error(what + ": " + std::to_string(raw.size()) + " bytes of data for " +
                  dtype_name(*dtype) + " " + shape_str(shape) + " (needs " +
                  std::to_string(nbytes) + ")");
    Tensor t(*dtype, shape);
    if (!raw.empty()) std::memcpy(t.mutable_bytes(), raw.data(), raw.size());
    return t;
  }
  if (typed_count(p, *dtype) != numel(shape))
    throw Error(what + ": has " + std::to_string(typed_count(p, *dtype)) + " values for shape " +
                shape_str(shape));
  Tensor t(*dtype, shape);
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
  // A sparse tensor's size is not backed by data in the file: bounded by ONNX's 2 GB.
  const int64_t dense_bytes = checked_nbytes(values.dtype(), shape);
  if (dense_bytes < 0 || dense_bytes > kMaxSparseDenseBytes)
    throw Error(what + ": sparse tensor of shape " + shape_str(shape) +
                " would densify to more than 2 GiB");
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
