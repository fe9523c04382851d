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

// The relative L2 error kora accepts: float32 arithmetic, and TF32 library math (cuBLAS
// and cuDNN tensor-op math on float32 data, about 1e-3; an explicit option, --tf32).
constexpr double kFloat32Tolerance = 1e-4;
constexpr double kTf32Tolerance = 2e-3;
// The tolerance of an artifact compiled with the measurements of device fingerprint
// `device` (TF32 fingerprints end in " tf32").
double tolerance_for(const std::string& device);

// Throws kora::Error with Python's message when onnxruntime cannot run the model.
std::map<std::string, Tensor> run_onnxruntime(const std::string& model,
                                              const std::map<std::string, Tensor>& inputs,
                                              int threads);

// ||got - want|| / ||want|| over all elements as doubles (0 when both are zero; 1 when
// only `want` is zero; infinity when shapes differ or `got` has NaN where `want` has not).
double relative_l2(const Tensor& got, const Tensor& want);

}  // namespace kora
