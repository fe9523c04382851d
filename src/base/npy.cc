// .npy reading and writing. In: a file path. Out: a Tensor (or the file written).
#include "kora/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

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

// The value after `'key':` in the header dict, up to the closing delimiter.
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw Error("'" + path + "': .npy header lacks '" + key + "'");
  at = header.find(':', at) + 1;
  while (at < header.size() && header[at] == ' ') ++at;
  if (header[at] == '(') return header.substr(at + 1, header.find(')', at) - at - 1);
  if (header[at] == '\'') return header.substr(at + 1, header.find('\'', at + 1) - at - 1);
  return header.substr(at, header.find_first_of(",}", at) - at);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "'");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw Error("'" + path + "' is not a .npy file");
  uint32_t header_len = 0;
  unsigned char lenbuf[4] = {0, 0, 0, 0};
  const int lenbytes = magic[6] == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(lenbuf), lenbytes);
  for (int i = lenbytes - 1; i >= 0; --i) header_len = header_len * 256 + lenbuf[i];
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw Error("'" + path + "': truncated .npy header");
  const std::string descr = header_field(header, "descr", path);
  if (header_field(header, "fortran_order", path).find("True") != std::string::npos)
    throw Error("'" + path + "': Fortran-ordered arrays are not supported");
  const Descr* found = nullptr;
  for (const Descr& d : kDescrs)
    if (descr == d.code || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == d.code + 1))
      found = &d;
  if (!found) throw Error("'" + path + "': dtype '" + descr + "' is not supported");
  Shape shape;
  std::stringstream dims(header_field(header, "shape", path));
  for (std::string item; std::getline(dims, item, ',');)
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(item));
  Tensor t(found->dtype, shape);
  if (!in.read(reinterpret_cast<char*>(t.mutable_bytes()),
               static_cast<std::streamsize>(t.nbytes())))
    throw Error("'" + path + "': truncated data (" + shape_str(shape) + " " +
                dtype_name(found->dtype) + ")");
  return t;
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
