// ONNX TensorProto / SparseTensorProto -> kora::Tensor: raw_data and every typed field,
// external-data files resolved against the model's directory (confined to it by real path,
// symlinks followed: an absolute location or one leading out of it is an error), sparse
// tensors densified (at most 2 GiB). Sizes are checked against the data before allocating.
#pragma once

#include <string>

#include "kora/tensor.h"

namespace onnx {
class TensorProto;
class SparseTensorProto;
}  // namespace onnx

namespace kora {

// `what` names the tensor in error messages ("initializer 'fc.weight'").
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& model_dir,
                         const std::string& what);
Tensor tensor_from_sparse_proto(const onnx::SparseTensorProto& proto, const std::string& model_dir,
                                const std::string& what);

}  // namespace kora
