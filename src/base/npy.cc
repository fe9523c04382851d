// .npy reading and writing. In: a file path. Out: a Tensor (or the file written). The
// reader follows the format exactly: versions 1.0 to 3.0, the header a Python dict of
// exactly descr, fortran_order and shape (parsed, not searched), a supported little-endian
// dtype, and data of exactly the size the header says, checked against the file's size
// before anything is allocated; Fortran-ordered arrays are reordered to row-major.
#include "kora/npy.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kora/error.h"

namespace kora {
namespace {

struct Descr {
  const char* code;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
    {"|i1", DType::kInt8},    {"<i2", DType::kInt16},   {"<i4", DType::kInt32},
    {"<i8", DType::kInt64},   {"|u1", DType::kUInt8},   {"<u2", DType::kUInt16},
    {"<u4", DType::kUInt32},  {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
};

// The header dict of a .npy file, parsed as the Python literal it is: exactly the keys
// 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple of
// non-negative integers), each once, in any order, quoted with ' or ".
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !has_descr) {
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        h.shape = tuple();
        has_shape = true;
      } else {
        fail("key '" + key + "' is unknown or repeated");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (at_ != s_.size()) fail("text after the closing '}'");
    if (!has_descr || !has_order || !has_shape)
      fail(std::string("lacks '") +
           (!has_descr   ? "descr"
            : !has_order ? "fortran_order"
                         : "shape") +
           "'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("'" + path_ + "': malformed .npy header (" + what + ")");
  }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t')) ++at_;
  }
  bool peek(char c) {
    skip_space();
    return at_ < s_.size() && s_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string string_literal() {
    skip_space();
    if (at_ >= s_.size() || (s_[at_] != '\'' && s_[at_] != '"')) fail("expected a quoted string");
    const char quote = s_[at_++];
    const size_t end = s_.find(quote, at_);
    if (end == std::string::npos) fail("unclosed string");
    std::string out = s_.substr(at_, end - at_);
    if (out.find('\\') != std::string::npos) fail("escapes in a string");
    at_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (s_.compare(at_, std::strlen(word), word) == 0) {
        at_ += std::strlen(word);
        return value;
      }
    fail("fortran_order is neither True nor False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    bool comma = false;  // a one-element tuple needs its trailing comma
    while (!peek(')')) {
      int64_t d = 0;
      size_t digits = 0;
      for (; at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_]));
           ++at_, ++digits) {
        if (d > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("a dimension is too large");
        d = d * 10 + (s_[at_] - '0');
      }
      if (digits == 0) fail("shape holds something other than non-negative integers");
      shape.push_back(d);
      comma = peek(',');
      if (comma)
        ++at_;
      else if (!peek(')'))
        fail("expected ',' or ')' in the shape");
    }
    expect(')');
    if (shape.size() == 1 && !comma)
      fail("shape (" + std::to_string(shape[0]) + ") is not a tuple");
    return shape;
  }

  const std::string& s_;
  const std::string& path_;
  size_t at_ = 0;
};

// Reorders a Fortran-ordered array's elements (first index fastest) into row-major order.
Tensor from_fortran_order(const Tensor& f) {
  Tensor t(f.dtype(), f.shape());
  const Shape& shape = f.shape();
  const size_t rank = shape.size(), esize = dtype_size(f.dtype());
  std::vector<int64_t> fstride(rank, 1), idx(rank, 0);
  for (size_t d = 1; d < rank; ++d) fstride[d] = fstride[d - 1] * shape[d - 1];
  const int64_t n = f.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += idx[d] * fstride[d];
    std::memcpy(t.mutable_bytes() + i * static_cast<int64_t>(esize),
                f.bytes() + src * static_cast<int64_t>(esize), esize);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "'");
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec) throw Error("cannot read the size of '" + path + "'");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw Error("'" + path + "' is not a .npy file");
  if (magic[6] < 1 || magic[6] > 3 || magic[7] != 0)
    throw Error("'" + path + "': .npy format version " + std::to_string(magic[6]) + "." +
                std::to_string(magic[7]) + " is not 1.0, 2.0 or 3.0");
  uint32_t header_len = 0;
  unsigned char lenbuf[4] = {0, 0, 0, 0};
  const int lenbytes = magic[6] == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char*>(lenbuf), lenbytes))
    throw Error("'" + path + "': truncated .npy header");
  for (int i = lenbytes - 1; i >= 0; --i) header_len = header_len * 256 + lenbuf[i];
  const uint64_t data_start = 8 + static_cast<uint64_t>(lenbytes) + header_len;
  if (data_start > file_size) throw Error("'" + path + "': truncated .npy header");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw Error("'" + path + "': truncated .npy header");
  if (header.empty() || header.back() != '\n')
    throw Error("'" + path + "': malformed .npy header (it does not end in a newline)");
  const Header h = HeaderParser(header, path).parse();

  const Descr* found = nullptr;
  for (const Descr& d : kDescrs) {
    // '<' (little-endian), '|' (no byte order) and '=' (native, little-endian here).
    const char order = h.descr.empty() ? 0 : h.descr[0];
    if (h.descr.size() == 3 && h.descr.substr(1) == d.code + 1 &&
        (order == d.code[0] || order == '=' || (order == '<' && d.code[0] == '|')))
      found = &d;
  }
  if (!found)
    throw Error("'" + path + "': dtype '" + h.descr + "' is not supported" +
                (!h.descr.empty() && h.descr[0] == '>' ? " (big-endian)" : ""));
  const int64_t nbytes = checked_nbytes(found->dtype, h.shape);
  if (nbytes < 0) throw Error("'" + path + "': shape " + shape_str(h.shape) + " is absurdly large");
  const uint64_t data_bytes = file_size - data_start;
  if (data_bytes != static_cast<uint64_t>(nbytes))
    throw Error("'" + path +
                "': " + (data_bytes < static_cast<uint64_t>(nbytes) ? "truncated" : "trailing") +
                " data: " + shape_str(h.shape) + " " + dtype_name(found->dtype) + " needs " +
                std::to_string(nbytes) + " bytes, the file holds " + std::to_string(data_bytes));
  Tensor t(found->dtype, h.shape);
  if (!in.read(reinterpret_cast<char*>(t.mutable_bytes()), static_cast<std::streamsize>(nbytes)))
    throw Error("'" + path + "': truncated data (" + shape_str(h.shape) + " " +
                dtype_name(found->dtype) + ")");
  return h.fortran_order && h.shape.size() > 1 ? from_fortran_order(t) : t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == t.dtype()) code = d.code;
  if (!code) throw Error(std::string("cannot write ") + dtype_name(t.dtype()) + " to .npy");
  std::string shape;
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.shape().size() == 1) shape += ",";
  std::string header =
      "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lenbytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lenbytes, 2);
  out << header;
  out.write(reinterpret_cast<const char*>(t.bytes()), static_cast<std::streamsize>(t.nbytes()));
  if (!out) throw Error("failed writing '" + path + "'");
}

}  // namespace kora
