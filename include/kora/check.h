// Checking kora against onnxruntime (`kora check`): a model file and input tensors in;
// onnxruntime's outputs (all graph optimizations, the given thread count) and the
// relative L2 error of kora's float outputs against them out (integer outputs: the number
// of elements that differ). onnxruntime runs in a Python
// process ($KORA_PYTHON, else python3, with the onnxruntime package), tensors passed as
// .npy files in a temporary directory.
#pragma once

#include <map>
#include <string>

#include "kora/tensor.h"

namespace kora {

// The relative L2 error kora accepts: float32 arithmetic, TF32 library math (cuBLAS
// and cuDNN tensor-op math on float32 data, about 1e-3; an explicit option, --tf32), and
// bf16 library math on the CPU (oneDNN convolutions and matmuls reading bfloat16 source
// and weights, accumulating in float32; an explicit option, --bf16: about 2e-3 per kernel,
// up to 1e-2 over a deep network), for a kernel and a whole model alike.
constexpr double kFloat32Tolerance = 1e-4;
constexpr double kTf32Tolerance = 2e-3;
constexpr double kBf16Tolerance = 3e-2;
// A QDQ-quantized model with groups kora computes in float32 where onnxruntime runs its
// own integer kernels (frontend/qdq_fold.h's float_qdq_groups): a float result within
// rounding of a .5 step quantizes one step apart, and layers amplify it (1e-2 measured
// on RegNetY-400MF int8's squeeze-excitation blocks).
constexpr double kQdqTolerance = 3e-2;
// The tolerance of an artifact compiled with the measurements of device fingerprint
// `device` (TF32 fingerprints end in " tf32", bf16 ones in " bf16").
double tolerance_for(const std::string& device);

// Throws kora::Error with Python's message when onnxruntime cannot run the model.
std::map<std::string, Tensor> run_onnxruntime(const std::string& model,
                                              const std::map<std::string, Tensor>& inputs,
                                              int threads);

// The relative L2 error ||got - want|| / ||want|| by kora's correctness rule (the one its
// profilers check kernels with, src/base/compare.h): over the elements where `want` is
// finite, as doubles; 0 when both are zero, infinity when only `want` is zero; infinity when
// shapes differ or a non-finite value disagrees (NaN must meet NaN, an infinity the same
// infinity, a finite value a finite value).
double relative_l2(const Tensor& got, const Tensor& want);

// Integer and bool outputs are compared exactly (quantized models: the same integers): the
// number of elements of `got` that differ from `want`, every element when the shapes or
// dtypes differ.
int64_t count_mismatches(const Tensor& got, const Tensor& want);

}  // namespace kora
