// The .npy reader follows the format exactly (src/base/npy.cc): Fortran-ordered arrays
// reordered to row-major; trailing or missing data, a malformed header (unclosed, unknown
// or repeated keys, a shape that is not a tuple of non-negative integers, a bad
// fortran_order, a header longer than the file) and absurd shapes refused with an error
// naming the file, before anything is allocated. (numpy's own files of every dtype:
// tests/cli/test_hostile.py.)
#include "kora/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/model_builder.h"
#include "kora/error.h"

namespace {

using kora::DType;
using kora::Tensor;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A version-1 .npy file with the header dict `dict` (padded as numpy pads it) and `data`.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string npy_error(const kora_test::TempDir& dir, const std::string& name,
                      const std::string& bytes) {
  const std::string path = dir.file(name);
  kora_test::write_file(path, bytes);
  try {
    kora::read_npy(path);
  } catch (const kora::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(name));
    return e.what();
  }
  ADD_FAILURE() << name << ": read without an error";
  return "";
}

TEST(NpyReader, FortranOrderIsReorderedToRowMajor) {
  kora_test::TempDir dir;
  // [[0, 1, 2], [3, 4, 5]] stored column by column.
  const std::vector<float> columns = {0, 3, 1, 4, 2, 5};
  kora_test::write_file(dir.file("f.npy"),
                        npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                  kora_test::bytes_of(columns)));
  const Tensor t = kora::read_npy(dir.file("f.npy"));
  EXPECT_EQ(t.shape(), (kora::Shape{2, 3}));
  EXPECT_EQ(t.to_double(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  // Rank 3: element (i, j, k) at i + 2j + 6k.
  std::vector<int16_t> f(2 * 3 * 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) f[i + 2 * j + 6 * k] = static_cast<int16_t>(100 * i + 10 * j + k);
  kora_test::write_file(dir.file("f3.npy"),
                        npy_bytes("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4)}",
                                  kora_test::bytes_of(f)));
  const Tensor u = kora::read_npy(dir.file("f3.npy"));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(u.int64_at(12 * i + 4 * j + k), 100 * i + 10 * j + k);
}

TEST(NpyReader, KeysInAnyOrderAndEitherQuote) {
  kora_test::TempDir dir;
  const std::vector<int32_t> v = {7, 8};
  kora_test::write_file(dir.file("q.npy"),
                        npy_bytes("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<i4\"}",
                                  kora_test::bytes_of(v)));
  EXPECT_EQ(kora::read_npy(dir.file("q.npy")).to_int64(), (std::vector<int64_t>{7, 8}));
}

TEST(NpyReader, DataOfAnyOtherSizeIsRefused) {
  kora_test::TempDir dir;
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_THAT(npy_error(dir, "trailing.npy", npy_bytes(dict, std::string(12, '\0'))),
              HasSubstr("trailing data"));
  EXPECT_THAT(npy_error(dir, "short.npy", npy_bytes(dict, std::string(4, '\0'))),
              HasSubstr("truncated data"));
}

TEST(NpyReader, MalformedHeadersAreRefused) {
  kora_test::TempDir dir;
  const std::string data(8, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"unclosed_shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, }"},
      {"unclosed_dict.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)"},
      {"unclosed_string.npy", "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}"},
      {"not_a_tuple.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}"},
      {"negative.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"},
      {"float_dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}"},
      {"no_shape.npy", "{'descr': '<f4', 'fortran_order': False}"},
      {"no_order.npy", "{'descr': '<f4', 'shape': (2,)}"},
      {"repeated.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"},
      {"unknown_key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"},
      {"bad_order.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}"},
      {"after_dict.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk"},
      {"not_a_dict.npy", "['<f4', False, (2,)]"},
      {"huge_dim.npy",
       "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"},
  };
  for (const auto& [name, dict] : cases)
    EXPECT_THAT(npy_error(dir, name, npy_bytes(dict, data)), HasSubstr("malformed .npy header"))
        << name;
  EXPECT_THAT(npy_error(dir, "big_endian.npy",
                        npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}", data)),
              HasSubstr("big-endian"));
  EXPECT_THAT(npy_error(dir, "pipe_f4.npy",
                        npy_bytes("{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", data)),
              HasSubstr("'|f4' is not supported"));
  // A header length beyond the file, a header not ending in a newline, a bad version.
  std::string long_header =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data);
  long_header[8] = '\xff';
  long_header[9] = '\x7f';
  EXPECT_THAT(npy_error(dir, "long_header.npy", long_header), HasSubstr("truncated .npy header"));
  std::string no_newline =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data);
  no_newline[no_newline.size() - data.size() - 1] = ' ';
  EXPECT_THAT(npy_error(dir, "no_newline.npy", no_newline), HasSubstr("newline"));
  std::string version = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data);
  version[6] = 9;
  EXPECT_THAT(npy_error(dir, "version.npy", version), HasSubstr("format version 9"));
}

TEST(NpyReader, AbsurdShapesAreRefusedBeforeAllocating) {
  kora_test::TempDir dir;
  // 2^62 elements overflow nothing and allocate nothing; 2^31 floats (8 GiB) with 8 bytes
  // of data are refused by the file's size.
  EXPECT_THAT(npy_error(dir, "absurd.npy",
                        npy_bytes("{'descr': '|u1', 'fortran_order': False, "
                                  "'shape': (2147483648, 2147483648)}",
                                  "")),
              HasSubstr("absurdly large"));
  EXPECT_THAT(npy_error(dir, "overflow.npy",
                        npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (4611686018427387904, 4)}",
                                  "")),
              HasSubstr("absurdly large"));
  EXPECT_THAT(
      npy_error(dir, "big.npy",
                npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648,)}",
                          std::string(8, '\0'))),
      AllOf(HasSubstr("truncated data"), HasSubstr("8589934592 bytes")));
}

}  // namespace
