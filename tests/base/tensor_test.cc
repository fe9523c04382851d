// Tests of kora::Tensor (element conversion incl. float16/bfloat16 bit patterns and
// rounding, int <-> float), numel/shape_str, and the .npy reader/writer (round trips for
// several dtypes and ranks, hand-written files in format versions 1 and 2).
#include "kora/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "frontend/model_builder.h"
#include "kora/error.h"
#include "kora/npy.h"

namespace {

using kora::DType;
using kora::Tensor;
using ::testing::HasSubstr;

std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.bytes(), out.size() * 2);
  return out;
}

Tensor from_bits16(DType dtype, const std::vector<uint16_t>& bits) {
  return Tensor(dtype, {static_cast<int64_t>(bits.size())}, bits.data(), bits.size() * 2);
}

TEST(ShapeTest, NumelAndShapeStr) {
  EXPECT_EQ(kora::numel({}), 1);
  EXPECT_EQ(kora::numel({7}), 7);
  EXPECT_EQ(kora::numel({2, 3, 4}), 24);
  EXPECT_EQ(kora::numel({2, 0, 3}), 0);
  EXPECT_EQ(kora::shape_str({}), "[]");
  EXPECT_EQ(kora::shape_str({5}), "[5]");
  EXPECT_EQ(kora::shape_str({1, 3, 224, 224}), "[1, 3, 224, 224]");
  Tensor t(DType::kInt16, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 30u);
  Tensor s(DType::kFloat64, {});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.nbytes(), 8u);
}

TEST(TensorTest, ZeroFilledAndByteConstructor) {
  Tensor z(DType::kFloat32, {2, 2});
  EXPECT_EQ(z.to_double(), (std::vector<double>{0, 0, 0, 0}));
  const int32_t data[3] = {-1, 0, 123456};
  Tensor t(DType::kInt32, {3}, data, sizeof(data));
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{-1, 0, 123456}));
  EXPECT_THROW(Tensor(DType::kInt32, {4}, data, sizeof(data)), kora::Error);
}

TEST(TensorTest, NonsenseShapesAreErrorsNotAllocations) {
  EXPECT_EQ(kora::checked_nbytes(DType::kFloat32, {2, 3}), 24);
  EXPECT_EQ(kora::checked_nbytes(DType::kFloat32, {int64_t{1} << 62, 0}), 0);
  EXPECT_EQ(kora::checked_nbytes(DType::kFloat32, {2, -3}), -1);
  EXPECT_EQ(kora::checked_nbytes(DType::kInt64, {int64_t{1} << 31, int64_t{1} << 31}), -1);
  EXPECT_EQ(kora::checked_nbytes(DType::kUInt8, {int64_t{1} << 40}), int64_t{1} << 40);
  auto error = [](const kora::Shape& shape) {
    try {
      Tensor t(DType::kFloat32, shape);
    } catch (const kora::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error({2, -3}), HasSubstr("[2, -3] has a negative dimension"));
  EXPECT_THAT(error({int64_t{1} << 31, int64_t{1} << 31}), HasSubstr("more than 2^40 bytes"));
  EXPECT_THAT(error({int64_t{1} << 37}), HasSubstr("more than this machine's memory"));
}

// Found by fuzzing (UBSan): NaN and out-of-range floats converted to integers.
TEST(TensorTest, NanAndHugeFloatsToIntegersAreDefined) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor f = Tensor::from_double(DType::kFloat64, {4}, {nan, 1e300, -1e300, -7.9});
  const int64_t min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(f.to_int64(), (std::vector<int64_t>{min, min, min, -7}));
  const Tensor i = Tensor::from_double(DType::kInt64, {3}, {nan, 1e300, -9223372036854775808.0});
  EXPECT_EQ(i.to_int64(), (std::vector<int64_t>{min, min, min}));
}

TEST(TensorTest, Float16Encoding) {
  // Exactly representable values and their IEEE binary16 bit patterns.
  const std::vector<double> values = {
      0.0, 1.0, -2.0, 0.5, 65504.0, 6.103515625e-05, 5.9604644775390625e-08, 1.5, -0.0};
  const std::vector<uint16_t> expect = {0x0000, 0x3c00, 0xc000, 0x3800, 0x7bff,
                                        0x0400, 0x0001, 0x3e00, 0x8000};
  Tensor t = Tensor::from_double(DType::kFloat16, {9}, values);
  EXPECT_EQ(bits16(t), expect);
  EXPECT_EQ(t.to_double(), values);  // round trip is exact
}

TEST(TensorTest, Float16RoundsToNearestEven) {
  const double ulp = std::ldexp(1.0, -10);  // spacing of float16 in [1, 2)
  Tensor t = Tensor::from_double(DType::kFloat16, {6},
                                 {1.0 + ulp / 2,      // tie -> even mantissa 0
                                  1.0 + 3 * ulp / 2,  // tie -> even mantissa 2
                                  1.0 + 0.3 * ulp,    // below half -> 1.0
                                  65519.0,            // below the overflow threshold -> 65504
                                  65520.0,            // at the threshold -> +inf
                                  1e6});              // -> +inf
  EXPECT_EQ(bits16(t), (std::vector<uint16_t>{0x3c00, 0x3c02, 0x3c00, 0x7bff, 0x7c00, 0x7c00}));
  Tensor n = Tensor::from_double(DType::kFloat16, {1}, {std::nan("")});
  EXPECT_TRUE(std::isnan(n.double_at(0)));
}

TEST(TensorTest, Float16AndBFloat16RoundOnceFromDouble) {
  Tensor h = Tensor::from_double(DType::kFloat16, {1},
                                 {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)});
  EXPECT_EQ(bits16(h), (std::vector<uint16_t>{0x3c01}));
  Tensor b = Tensor::from_double(DType::kBFloat16, {1},
                                 {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)});
  EXPECT_EQ(bits16(b), (std::vector<uint16_t>{0x3f81}));
}

TEST(TensorTest, Float16Decoding) {
  Tensor t = from_bits16(DType::kFloat16, {0x3555, 0x0001, 0x03ff, 0xfc00, 0x7c00, 0x7e00, 0xc500});
  EXPECT_DOUBLE_EQ(t.double_at(0), 0.333251953125);
  EXPECT_DOUBLE_EQ(t.double_at(1), std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(t.double_at(2), 1023 * std::ldexp(1.0, -24));
  EXPECT_EQ(t.double_at(3), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.double_at(4), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(t.double_at(5)));
  EXPECT_DOUBLE_EQ(t.double_at(6), -5.0);
  EXPECT_EQ(t.int64_at(6), -5);
}

TEST(TensorTest, BFloat16RoundTrip) {
  const std::vector<double> values = {1.0, 3.140625, -2.0, 0.0, -0.0, 256.0};
  Tensor t = Tensor::from_double(DType::kBFloat16, {6}, values);
  EXPECT_EQ(bits16(t), (std::vector<uint16_t>{0x3f80, 0x4049, 0xc000, 0x0000, 0x8000, 0x4380}));
  EXPECT_EQ(t.to_double(), values);
  const double ulp = std::ldexp(1.0, -7);  // spacing of bfloat16 in [1, 2)
  Tensor r = Tensor::from_double(DType::kBFloat16, {3},
                                 {1.0 + ulp / 2, 1.0 + 3 * ulp / 2, 1.0 + 0.6 * ulp});
  EXPECT_EQ(bits16(r), (std::vector<uint16_t>{0x3f80, 0x3f82, 0x3f81}));
  Tensor n = Tensor::from_double(DType::kBFloat16, {1}, {std::nan("")});
  EXPECT_TRUE(std::isnan(n.double_at(0)));
  Tensor d = from_bits16(DType::kBFloat16, {0xbfc0, 0x7f80});
  EXPECT_DOUBLE_EQ(d.double_at(0), -1.5);
  EXPECT_EQ(d.double_at(1), std::numeric_limits<double>::infinity());
}

TEST(TensorTest, FloatToIntTruncatesTowardZero) {
  Tensor i32 = Tensor::from_double(DType::kInt32, {4}, {2.7, -2.7, 0.4, -1e3});
  EXPECT_EQ(i32.to_int64(), (std::vector<int64_t>{2, -2, 0, -1000}));
  Tensor f = Tensor::from_double(DType::kFloat32, {2}, {3.9, -3.9});
  EXPECT_EQ(f.int64_at(0), 3);
  EXPECT_EQ(f.int64_at(1), -3);
  Tensor b = Tensor::from_double(DType::kBool, {3}, {0.0, 0.5, -2.0});
  EXPECT_EQ(b.to_int64(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(TensorTest, UInt64FromLargeDouble) {
  Tensor u = Tensor::from_double(DType::kUInt64, {1}, {1e19});
  uint64_t stored = 0;
  std::memcpy(&stored, u.bytes(), 8);
  EXPECT_EQ(stored, 10000000000000000000ULL);
}

TEST(TensorTest, IntegerTypesKeepValues) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  Tensor i64 = Tensor::from_int64(DType::kInt64, {3}, {big, -big - 1, 42});
  EXPECT_EQ(i64.to_int64(), (std::vector<int64_t>{big, -big - 1, 42}));
  Tensor u8 = Tensor::from_int64(DType::kUInt8, {2}, {255, 7});
  EXPECT_EQ(u8.to_int64(), (std::vector<int64_t>{255, 7}));
  EXPECT_DOUBLE_EQ(u8.double_at(0), 255.0);
  Tensor i8 = Tensor::from_int64(DType::kInt8, {2}, {-128, 127});
  EXPECT_EQ(i8.to_int64(), (std::vector<int64_t>{-128, 127}));
  Tensor u16 = Tensor::from_int64(DType::kUInt16, {1}, {65535});
  EXPECT_EQ(u16.int64_at(0), 65535);
  Tensor u32 = Tensor::from_int64(DType::kUInt32, {1}, {4000000000LL});
  EXPECT_EQ(u32.int64_at(0), 4000000000LL);
  Tensor u64(DType::kUInt64, {1});
  kora::set_element_int(u64, 0, -1);  // all bits set
  EXPECT_DOUBLE_EQ(u64.double_at(0), 18446744073709551615.0);
  Tensor f64 = Tensor::from_int64(DType::kFloat64, {2}, {-5, 1LL << 40});
  EXPECT_EQ(f64.to_double(), (std::vector<double>{-5.0, 1099511627776.0}));
}

TEST(TensorTest, ReshapedSharesValues) {
  Tensor t = Tensor::from_int64(DType::kInt64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.shape(), (kora::Shape{3, 2}));
  EXPECT_EQ(r.to_int64(), t.to_int64());
  EXPECT_EQ(t.shape(), (kora::Shape{2, 3}));
  EXPECT_THROW(t.reshaped({4}), kora::Error);
}

// --- .npy ---

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  if (a.nbytes()) {
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0);
  }
}

TEST(NpyTest, RoundTripSeveralDtypesAndRanks) {
  kora_test::TempDir dir;
  std::vector<Tensor> cases = {
      Tensor::from_double(DType::kFloat32, {2, 3}, {1.5, -2, 3, 4, 5, 6.25}),
      Tensor::from_int64(DType::kInt64, {5}, {-1, 0, 1, 1LL << 40, -(1LL << 50)}),
      Tensor::from_double(DType::kFloat64, {}, {3.14159}),
      Tensor::from_int64(DType::kUInt8, {2, 2, 2}, {0, 1, 2, 3, 252, 253, 254, 255}),
      Tensor::from_int64(DType::kBool, {4}, {1, 0, 0, 1}),
      Tensor::from_double(DType::kFloat16, {1, 3}, {0.5, -1.0, 65504.0}),
      Tensor::from_int64(DType::kInt32, {1, 2, 1, 2}, {7, -8, 9, -10}),
      Tensor::from_int64(DType::kInt8, {3}, {-128, 0, 127}),
      Tensor::from_int64(DType::kUInt16, {2}, {0, 65535}),
      Tensor(DType::kFloat32, {0, 3}),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + ": " + kora::dtype_name(cases[i].dtype()) + " " +
                 kora::shape_str(cases[i].shape()));
    const std::string path = dir.file("t" + std::to_string(i) + ".npy");
    kora::write_npy(path, cases[i]);
    const std::string file = read_all(path);
    ASSERT_GE(file.size(), 10u);
    EXPECT_EQ(file.substr(0, 6), "\x93NUMPY");
    const size_t header_len =
        static_cast<unsigned char>(file[8]) + 256 * static_cast<unsigned char>(file[9]);
    EXPECT_EQ((10 + header_len) % 64, 0u) << "data must start 64-byte aligned";
    EXPECT_EQ(file.size(), 10 + header_len + cases[i].nbytes());
    expect_same(kora::read_npy(path), cases[i]);
  }
}

TEST(NpyTest, HeaderSpellsScalarAndVectorShapes) {
  kora_test::TempDir dir;
  kora::write_npy(dir.file("s.npy"), Tensor::from_double(DType::kFloat64, {}, {1.0}));
  kora::write_npy(dir.file("v.npy"), Tensor::from_int64(DType::kInt64, {5}, {1, 2, 3, 4, 5}));
  EXPECT_THAT(read_all(dir.file("s.npy")), HasSubstr("'shape': ()"));
  EXPECT_THAT(read_all(dir.file("s.npy")), HasSubstr("'descr': '<f8'"));
  EXPECT_THAT(read_all(dir.file("v.npy")), HasSubstr("'shape': (5,)"));
  EXPECT_THAT(read_all(dir.file("v.npy")), HasSubstr("'descr': '<i8'"));
}

std::string npy_file(int version, const std::string& dict, const std::string& data) {
  std::string header = dict;
  const size_t prefix = version == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out += static_cast<char>(len >> (8 * i));
  return out + header + data;
}

TEST(NpyTest, ReadsHandWrittenVersion1And2Files) {
  kora_test::TempDir dir;
  const std::vector<int32_t> ints = {1, -2, 3, 400000};
  kora_test::write_file(dir.file("v1.npy"),
                        npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }",
                                 kora_test::bytes_of(ints)));
  Tensor a = kora::read_npy(dir.file("v1.npy"));
  EXPECT_EQ(a.dtype(), DType::kInt32);
  EXPECT_EQ(a.shape(), (kora::Shape{2, 2}));
  EXPECT_EQ(a.to_int64(), (std::vector<int64_t>{1, -2, 3, 400000}));

  const std::vector<float> floats = {0.25f, -8.0f, 1e10f};
  kora_test::write_file(dir.file("v2.npy"),
                        npy_file(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                                 kora_test::bytes_of(floats)));
  Tensor b = kora::read_npy(dir.file("v2.npy"));
  EXPECT_EQ(b.dtype(), DType::kFloat32);
  EXPECT_EQ(b.shape(), (kora::Shape{3}));
  EXPECT_EQ(b.to_double(), (std::vector<double>{0.25, -8.0, 1e10}));

  const std::vector<double> scalar = {-0.125};
  kora_test::write_file(dir.file("s.npy"),
                        npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                 kora_test::bytes_of(scalar)));
  Tensor c = kora::read_npy(dir.file("s.npy"));
  EXPECT_EQ(c.shape(), kora::Shape{});
  EXPECT_EQ(c.double_at(0), -0.125);
}

TEST(NpyTest, RejectsWhatItCannotRead) {
  kora_test::TempDir dir;
  const std::vector<float> floats = {1, 2};
  kora_test::write_file(dir.file("be.npy"),
                        npy_file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                                 kora_test::bytes_of(floats)));
  kora_test::write_file(dir.file("short.npy"),
                        npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                                 kora_test::bytes_of(floats)));
  kora_test::write_file(dir.file("junk.npy"), "not an npy file at all");
  for (const char* name : {"be.npy", "short.npy", "junk.npy", "missing.npy"}) {
    SCOPED_TRACE(name);
    try {
      kora::read_npy(dir.file(name));
      ADD_FAILURE() << "no kora::Error";
    } catch (const kora::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(name));
    }
  }
  EXPECT_THROW(kora::write_npy(dir.file("bf.npy"), Tensor(DType::kBFloat16, {2})), kora::Error);
}

}  // namespace
