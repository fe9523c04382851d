// Tensor storage and element conversion (including float16 and bfloat16 to and from
// float), used by the importer and the constant folder. A tensor is never allocated from
// a nonsense shape: negative, beyond 2^40 bytes or beyond the machine's memory is an Error.
#include "kora/tensor.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kora/error.h"

namespace kora {
namespace {

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// Rounds v (once, to nearest even) into a binary format of 16 bits with `mant_bits`
// mantissa bits and exponent bias `bias`: float16 is (10, 15), bfloat16 is (7, 127).
// Rounding straight from double avoids the double rounding of going through float.
uint16_t double_to_binary16(double v, int mant_bits, int bias) {
  const uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
  const uint32_t max_exp = (0x7fffu >> mant_bits);  // all-ones exponent: inf and NaN
  if (std::isnan(v))
    return static_cast<uint16_t>(sign | (max_exp << mant_bits) | (1u << (mant_bits - 1)));
  const double a = std::fabs(v);
  if (a < std::ldexp(1.0, 1 - bias)) {  // subnormal: a multiple of 2^(1 - bias - mant_bits)
    // Rounding up to 2^mant_bits lands exactly on the smallest normal's encoding.
    return static_cast<uint16_t>(
        sign | static_cast<uint32_t>(std::nearbyint(std::ldexp(a, bias - 1 + mant_bits))));
  }
  int e;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t mant = static_cast<uint32_t>(std::nearbyint(std::ldexp(m * 2 - 1, mant_bits)));
  int64_t exp = e - 1 + bias;
  if (mant == (1u << mant_bits)) mant = 0, ++exp;
  if (std::isinf(a) || exp >= static_cast<int64_t>(max_exp))
    return static_cast<uint16_t>(sign | (max_exp << mant_bits));
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << mant_bits) | mant);
}

uint16_t double_to_half(double v) { return double_to_binary16(v, 10, 15); }
uint16_t double_to_bf16(double v) { return double_to_binary16(v, 7, 127); }

float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Truncates toward zero; NaN and values beyond int64 give INT64_MIN, as x86's conversion
// instruction (and so onnxruntime's Cast there) does, without C++'s undefined behavior.
int64_t truncate_to_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::trunc(v));
}

template <typename T>
T load(const std::byte* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void store(std::byte* p, int64_t i, T v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

}  // namespace

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t checked_nbytes(DType dtype, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) return -1;
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (bytes > kMaxTensorBytes / d) return -1;
    bytes *= d;
  }
  return bytes;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

// The bytes of a tensor about to be allocated; an Error for a nonsense shape or one
// larger than this machine's memory.
size_t allocation_bytes(DType dtype, const Shape& shape) {
  const int64_t bytes = checked_nbytes(dtype, shape);
  if (bytes < 0)
    throw Error(std::string("a tensor of ") + dtype_name(dtype) + " " + shape_str(shape) +
                " has a negative dimension or more than 2^40 bytes");
  static const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > memory)
    throw Error(std::string("a tensor of ") + dtype_name(dtype) + " " + shape_str(shape) +
                " needs " + std::to_string(bytes) + " bytes, more than this machine's memory (" +
                std::to_string(memory) + " bytes)");
  return static_cast<size_t>(bytes);
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(allocation_bytes(dtype, shape_)) {
  bytes_ = std::shared_ptr<std::byte>(new std::byte[size_ ? size_ : 1](),
                                      std::default_delete<std::byte[]>());
}

Tensor::Tensor(DType dtype, Shape shape, const void* bytes, size_t size)
    : Tensor(dtype, std::move(shape)) {
  if (size != nbytes())
    throw Error("tensor of " + std::string(dtype_name(dtype)) + " " + shape_str(shape_) +
                " needs " + std::to_string(nbytes()) + " bytes, got " + std::to_string(size));
  if (size) std::memcpy(bytes_.get(), bytes, size);
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<const void> keeper, const void* data,
                    size_t size) {
  const int64_t want = checked_nbytes(dtype, shape);
  if (want < 0 || static_cast<size_t>(want) != size)
    throw Error("tensor of " + std::string(dtype_name(dtype)) + " " + shape_str(shape) + " needs " +
                std::to_string(want) + " bytes, got " + std::to_string(size));
  if (size && !data) throw Error("tensor view of " + shape_str(shape) + " over no data");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  // The aliasing constructor: shares ownership of the keeper, points at the caller's bytes.
  t.bytes_ = std::shared_ptr<std::byte>(std::const_pointer_cast<void>(std::move(keeper)),
                                        static_cast<std::byte*>(const_cast<void*>(data)));
  t.size_ = size;
  return t;
}

Tensor Tensor::from_int64(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) set_element_int(t, static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::from_double(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) set_element(t, static_cast<int64_t>(i), values[i]);
  return t;
}

int64_t Tensor::int64_at(int64_t i) const {
  const std::byte* p = bytes();
  switch (dtype_) {
    case DType::kInt8:
      return load<int8_t>(p, i);
    case DType::kInt16:
      return load<int16_t>(p, i);
    case DType::kInt32:
      return load<int32_t>(p, i);
    case DType::kInt64:
      return load<int64_t>(p, i);
    case DType::kUInt8:
      return load<uint8_t>(p, i);
    case DType::kUInt16:
      return load<uint16_t>(p, i);
    case DType::kUInt32:
      return load<uint32_t>(p, i);
    case DType::kUInt64:
      return static_cast<int64_t>(load<uint64_t>(p, i));
    case DType::kBool:
      return load<uint8_t>(p, i) != 0;
    default:
      return truncate_to_int64(double_at(i));
  }
}

double Tensor::double_at(int64_t i) const {
  const std::byte* p = bytes();
  switch (dtype_) {
    case DType::kFloat32:
      return load<float>(p, i);
    case DType::kFloat64:
      return load<double>(p, i);
    case DType::kFloat16:
      return half_to_float(load<uint16_t>(p, i));
    case DType::kBFloat16:
      return bf16_to_float(load<uint16_t>(p, i));
    case DType::kUInt64:
      return static_cast<double>(load<uint64_t>(p, i));
    default:
      return static_cast<double>(int64_at(i));
  }
}

std::vector<int64_t> Tensor::to_int64() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = int64_at(i);
  return v;
}

std::vector<double> Tensor::to_double() const {
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = double_at(i);
  return v;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (kora::numel(shape) != numel())
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

void set_element(Tensor& t, int64_t i, double v) {
  std::byte* p = t.mutable_bytes();
  switch (t.dtype()) {
    case DType::kFloat32:
      return store<float>(p, i, static_cast<float>(v));
    case DType::kFloat64:
      return store<double>(p, i, v);
    case DType::kFloat16:
      return store<uint16_t>(p, i, double_to_half(v));
    case DType::kBFloat16:
      return store<uint16_t>(p, i, double_to_bf16(v));
    case DType::kBool:
      return store<uint8_t>(p, i, v != 0.0);
    case DType::kUInt64:
      // Values in [2^63, 2^64) do not fit int64; negative ones wrap as in C.
      if (v >= 9223372036854775808.0 && v < 18446744073709551616.0)
        return store<uint64_t>(p, i, static_cast<uint64_t>(v));
      return set_element_int(t, i, truncate_to_int64(v));
    default:
      // Float to integer conversion truncates toward zero, as ONNX Cast does.
      return set_element_int(t, i, truncate_to_int64(v));
  }
}

void set_element_int(Tensor& t, int64_t i, int64_t v) {
  std::byte* p = t.mutable_bytes();
  switch (t.dtype()) {
    case DType::kInt8:
      return store<int8_t>(p, i, static_cast<int8_t>(v));
    case DType::kInt16:
      return store<int16_t>(p, i, static_cast<int16_t>(v));
    case DType::kInt32:
      return store<int32_t>(p, i, static_cast<int32_t>(v));
    case DType::kInt64:
      return store<int64_t>(p, i, v);
    case DType::kUInt8:
      return store<uint8_t>(p, i, static_cast<uint8_t>(v));
    case DType::kUInt16:
      return store<uint16_t>(p, i, static_cast<uint16_t>(v));
    case DType::kUInt32:
      return store<uint32_t>(p, i, static_cast<uint32_t>(v));
    case DType::kUInt64:
      return store<uint64_t>(p, i, static_cast<uint64_t>(v));
    case DType::kBool:
      return store<uint8_t>(p, i, v != 0);
    default:
      return set_element(t, i, static_cast<double>(v));
  }
}

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng, int64_t int_max) {
  Tensor t(dtype, shape);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int64_t> ints(0, int_max);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (is_floating(dtype))
      set_element(t, i, normal(rng));
    else if (dtype == DType::kBool)
      set_element_int(t, i, ints(rng) % 2);
    else
      set_element_int(t, i, ints(rng));
  }
  return t;
}

}  // namespace kora
