// Tensor: a host-resident constant (weight, initializer, folded value) with a dtype, a
// static shape and its bytes, densely packed in row-major order. The bytes are shared
// between copies and never changed after construction, so graphs copy cheaply.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kora/dtype.h"

namespace kora {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar).
int64_t numel(const Shape& shape);
// Bytes of a dense tensor of `dtype` and `shape`, computed without overflow: -1 when a
// dimension is negative or the size exceeds kMaxTensorBytes. For sizes read from files.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
int64_t checked_nbytes(DType dtype, const Shape& shape);
// Row-major element strides of a shape (the last dimension's is 1).
std::vector<int64_t> row_major_strides(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. Throws kora::Error for a negative dimension or a size beyond
  // kMaxTensorBytes or the machine's memory (never std::bad_alloc from a nonsense shape).
  Tensor(DType dtype, Shape shape);
  // Tensor holding a copy of `bytes` (its size must match dtype and shape).
  Tensor(DType dtype, Shape shape, const void* bytes, size_t size);
  // Tensor over `size` bytes at `data` that it does not copy: `keeper` keeps them alive as
  // long as any copy of the tensor does (binding a caller's buffer, e.g. a numpy array, as
  // a session input). The caller must not change them while kora reads them.
  static Tensor view(DType dtype, Shape shape, std::shared_ptr<const void> keeper, const void* data,
                     size_t size);

  static Tensor from_int64(DType dtype, Shape shape, const std::vector<int64_t>& values);
  static Tensor from_double(DType dtype, Shape shape, const std::vector<double>& values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return kora::numel(shape_); }
  size_t nbytes() const { return size_; }
  const std::byte* bytes() const { return bytes_.get(); }
  // Writable access, for filling a tensor right after construction only.
  std::byte* mutable_bytes() { return bytes_.get(); }

  // Element i converted to int64 / double (any dtype).
  int64_t int64_at(int64_t i) const;
  double double_at(int64_t i) const;
  std::vector<int64_t> to_int64() const;
  std::vector<double> to_double() const;

  // Same bytes, another shape with the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::shared_ptr<std::byte> bytes_;  // owned (an array), or a view kept alive by its keeper
  size_t size_ = 0;
};

// Writes `value` into element i of a tensor being filled, converting to its dtype.
void set_element(Tensor& t, int64_t i, double value);
void set_element_int(Tensor& t, int64_t i, int64_t value);

// A tensor of random values: floats from the standard normal distribution, bools 0/1,
// integers uniform in [0, int_max].
Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng, int64_t int_max = 99);

}  // namespace kora
