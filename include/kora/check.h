// Checking kora against onnxruntime (`kora check`): a model file and input tensors in;
// onnxruntime's outputs (all graph optimizations, the given thread count) and the
// relative L2 error of kora's outputs against them out. onnxruntime runs in a Python
// process ($KORA_PYTHON, else python3, with the onnxruntime package), tensors passed as
// .npy files in a temporary directory.
#pragma once

#include <map>
#include <string>

#include "kora/tensor.h"

namespace kora {

// Throws kora::Error with Python's message when onnxruntime cannot run the model.
std::map<std::string, Tensor> run_onnxruntime(const std::string& model,
                                              const std::map<std::string, Tensor>& inputs,
                                              int threads);

// ||got - want|| / ||want|| over all elements as doubles (0 when both are zero; 1 when
// only `want` is zero; infinity when shapes differ or `got` has NaN where `want` has not).
double relative_l2(const Tensor& got, const Tensor& want);

}  // namespace kora
