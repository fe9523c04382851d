// JSON writers and strict readers for primitives, tensor types, small tensors and
// primitive graphs (src/runtime/prim_json.h): kora values in, nlohmann::json out, and
// back. Readers check every field's presence and type and every name, and report the
// first problem as a kora::Error naming the primitive (or tensor) and the field.
#include "runtime/prim_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "kora/error.h"

namespace kora {
namespace {

using nlohmann::json;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// For clang before 17, which deduces no aggregate's template arguments (the fuzz build).
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// ---- Text helpers: base64, UTF-8 -------------------------------------------------------

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::byte* data, size_t n) {
  std::string s;
  s.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = std::to_integer<uint32_t>(data[i]) << 16;
    if (i + 1 < n) v |= std::to_integer<uint32_t>(data[i + 1]) << 8;
    if (i + 2 < n) v |= std::to_integer<uint32_t>(data[i + 2]);
    s += kBase64[(v >> 18) & 63];
    s += kBase64[(v >> 12) & 63];
    s += i + 1 < n ? kBase64[(v >> 6) & 63] : '=';
    s += i + 2 < n ? kBase64[v & 63] : '=';
  }
  return s;
}

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// nullopt unless `s` is canonical padded base64.
std::optional<std::vector<std::byte>> base64_decode(const std::string& s) {
  if (s.size() % 4 != 0) return std::nullopt;
  std::vector<std::byte> out;
  out.reserve(s.size() / 4 * 3);
  for (size_t i = 0; i < s.size(); i += 4) {
    const bool last = i + 4 == s.size();
    const int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=') : 0;
    if (pad == 1 && s[i + 2] == '=') return std::nullopt;  // "x=y=" style
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = k < 4 - pad ? base64_digit(s[i + k]) : 0;
      if (d < 0) return std::nullopt;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    if ((pad == 1 && (v & 0xff)) || (pad == 2 && (v & 0xffff))) return std::nullopt;
    out.push_back(static_cast<std::byte>(v >> 16));
    if (pad < 2) out.push_back(static_cast<std::byte>(v >> 8));
    if (pad < 1) out.push_back(static_cast<std::byte>(v));
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    int more;
    uint32_t cp, min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      more = 1, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      more = 2, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      more = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(more) >= n) return false;
    for (int k = 1; k <= more; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += static_cast<size_t>(more) + 1;
  }
  return true;
}

// ---- Values: doubles, strings, names ---------------------------------------------------

json double_to_json(double v) {
  if (std::isfinite(v)) return v;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  if (bits == std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN())) return "nan";
  return fmt::format("nan:0x{:016x}", bits);
}

std::optional<double> double_from_json(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (!j.is_string()) return std::nullopt;
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s.size() != 22 || s.compare(0, 6, "nan:0x") != 0) return std::nullopt;
  uint64_t bits = 0;
  for (size_t i = 6; i < s.size(); ++i) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return std::nullopt;
    bits = bits << 4 | static_cast<uint64_t>(d);
  }
  const double v = std::bit_cast<double>(bits);
  if (!std::isnan(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> int64_from_json(const json& j) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

// A string that may hold arbitrary bytes (ONNX attribute strings).
json bytes_string_to_json(const std::string& s) {
  if (valid_utf8(s)) return s;
  return json{{"base64", base64_encode(reinterpret_cast<const std::byte*>(s.data()), s.size())}};
}

std::optional<std::string> bytes_string_from_json(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_object() || j.size() != 1 || !j.contains("base64") || !j["base64"].is_string())
    return std::nullopt;
  auto bytes = base64_decode(j["base64"].get<std::string>());
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

// A JSON value as a short phrase for error messages: its type and its text.
std::string show(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(j.type_name()) + " " + text;
}

// Reverse look-ups of the name functions: the enum value whose name is `name`.
template <typename E>
std::optional<E> enum_named(const std::string& name, E last, const char* (*name_of)(E)) {
  for (int i = 0; i <= static_cast<int>(last); ++i)
    if (name == name_of(static_cast<E>(i))) return static_cast<E>(i);
  return std::nullopt;
}

template <size_t I = 0>
std::optional<LayoutAttrs> layout_named(const std::string& name) {
  if constexpr (I < std::variant_size_v<LayoutAttrs>) {
    LayoutAttrs attrs{std::in_place_index<I>};
    if (name == layout_name(attrs)) return attrs;
    return layout_named<I + 1>(name);
  } else {
    return std::nullopt;
  }
}

constexpr const char* kPadModes[] = {"constant", "reflect", "edge"};
constexpr const char* kMatMul = "matmul";
constexpr const char* kConv = "conv";

// ---- Reading objects -------------------------------------------------------------------

// A JSON object being read, and what it is for error messages ("primitive 'x'").
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) fail("expected an object, got " + show(j));
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(where_ + ": " + what); }
  [[noreturn]] void bad(const char* key, const std::string& what) const {
    fail(std::string("field '") + key + "': " + what);
  }
  [[noreturn]] void expected(const char* key, const char* what, const json& got) const {
    bad(key, std::string("expected ") + what + ", got " + show(got));
  }

  const std::string& where() const { return where_; }
  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& at(const char* key) const {
    const json* v = find(key);
    if (!v) fail(std::string("missing field '") + key + "'");
    return *v;
  }
  const json& object(const char* key) const {
    const json& v = at(key);
    if (!v.is_object()) expected(key, "an object", v);
    return v;
  }
  const json& array(const char* key) const {
    const json& v = at(key);
    if (!v.is_array()) expected(key, "an array", v);
    return v;
  }

  std::string str(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) expected(key, "a string", v);
    return v.get<std::string>();
  }
  int64_t int64(const char* key) const {
    const json& v = at(key);
    auto i = int64_from_json(v);
    if (!i) expected(key, "a 64-bit integer", v);
    return *i;
  }
  double real(const char* key) const {
    const json& v = at(key);
    auto d = double_from_json(v);
    if (!d) expected(key, "a number (or \"inf\", \"-inf\", \"nan\", \"nan:0x...\")", v);
    return *d;
  }
  std::string bytes_string(const char* key) const {
    const json& v = at(key);
    auto s = bytes_string_from_json(v);
    if (!s) expected(key, "a string or {\"base64\": ...}", v);
    return *s;
  }
  std::vector<int64_t> ints(const char* key) const {
    std::vector<int64_t> out;
    for (const json& e : array(key)) {
      auto i = int64_from_json(e);
      if (!i) expected(key, "an array of 64-bit integers; one element is", e);
      out.push_back(*i);
    }
    return out;
  }
  std::vector<double> reals(const char* key) const {
    std::vector<double> out;
    for (const json& e : array(key)) {
      auto d = double_from_json(e);
      if (!d) expected(key, "an array of numbers; one element is", e);
      out.push_back(*d);
    }
    return out;
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    for (const json& e : array(key)) {
      if (!e.is_string()) expected(key, "an array of strings; one element is", e);
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<std::string> bytes_strings(const char* key) const {
    std::vector<std::string> out;
    for (const json& e : array(key)) {
      auto s = bytes_string_from_json(e);
      if (!s) expected(key, "an array of strings; one element is", e);
      out.push_back(*s);
    }
    return out;
  }

 private:
  const json& j_;
  std::string where_;
};

// Rethrows nlohmann's exceptions (none are expected: types are checked before every
// get) as kora::Error, so no malformed input escapes as another exception type.
template <typename F>
auto guarded(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw Error(what + ": malformed JSON: " + e.what());
  }
}

// ---- Shapes, types, tensors ------------------------------------------------------------

Shape read_shape(const Fields& f, const char* key) {
  Shape shape = f.ints(key);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) f.bad(key, "negative dimension in " + shape_str(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      f.bad(key, "element count of " + shape_str(shape) + " overflows");
    n *= d;
  }
  return shape;
}

DType read_dtype(const Fields& f, const char* key) {
  const std::string name = f.str(key);
  auto t = enum_named(name, DType::kBool, dtype_name);
  if (!t) f.bad(key, "unknown dtype '" + name + "'");
  return *t;
}

ValueInfo read_value_info(const json& j, const std::string& where) {
  Fields f(j, where);
  return {read_dtype(f, "dtype"), read_shape(f, "shape")};
}

Tensor read_tensor(const json& j, const std::string& where) {
  Fields f(j, where);
  const DType dtype = read_dtype(f, "dtype");
  const Shape shape = read_shape(f, "shape");
  const json& data = f.at("data");
  if (data.is_null()) {
    if (dtype != DType::kFloat32 || !shape.empty())
      f.bad("data", "null (an empty tensor) needs dtype float32 and shape []");
    return Tensor();
  }
  if (!data.is_string()) f.expected("data", "a base64 string", data);
  auto bytes = base64_decode(data.get<std::string>());
  if (!bytes) f.bad("data", "not valid base64");
  const int64_t n = numel(shape);
  if (n > static_cast<int64_t>(bytes->size()) ||
      static_cast<size_t>(n) * dtype_size(dtype) != bytes->size())
    f.bad("data", fmt::format("{} bytes for {} {} ({} elements of {} bytes)", bytes->size(),
                              dtype_name(dtype), shape_str(shape), n, dtype_size(dtype)));
  return Tensor(dtype, shape, bytes->data(), bytes->size());
}

// ---- ONNX nodes (opaque primitives) ----------------------------------------------------

// The field that carries an attribute kind's value; always written.
const char* primary_field(Attribute::Kind kind) {
  using K = Attribute::Kind;
  switch (kind) {
    case K::kFloat:
      return "f";
    case K::kInt:
      return "i";
    case K::kString:
      return "s";
    case K::kTensor:
    case K::kSparseTensor:
    case K::kTensors:
    case K::kSparseTensors:
      return "tensors";
    case K::kGraph:
    case K::kGraphs:
      return "num_graphs";
    case K::kFloats:
      return "floats";
    case K::kInts:
      return "ints";
    case K::kStrings:
      return "strings";
    default:
      return "";
  }
}

json attribute_to_json(const Attribute& a) {
  const std::string primary = primary_field(a.kind);
  auto wanted = [&](const char* key, bool set) { return set || primary == key; };
  json j;
  j["kind"] = attribute_kind_name(a.kind);
  if (wanted("f", std::bit_cast<uint64_t>(a.f) != 0)) j["f"] = double_to_json(a.f);
  if (wanted("i", a.i != 0)) j["i"] = a.i;
  if (wanted("s", !a.s.empty())) j["s"] = bytes_string_to_json(a.s);
  if (wanted("floats", !a.floats.empty())) {
    j["floats"] = json::array();
    for (double v : a.floats) j["floats"].push_back(double_to_json(v));
  }
  if (wanted("ints", !a.ints.empty())) j["ints"] = a.ints;
  if (wanted("strings", !a.strings.empty())) {
    j["strings"] = json::array();
    for (const std::string& s : a.strings) j["strings"].push_back(bytes_string_to_json(s));
  }
  if (wanted("tensors", !a.tensors.empty())) {
    j["tensors"] = json::array();
    for (const Tensor& t : a.tensors) j["tensors"].push_back(tensor_to_json(t));
  }
  if (wanted("num_graphs", a.num_graphs != 0)) j["num_graphs"] = a.num_graphs;
  return j;
}

Attribute read_attribute(const json& j, const std::string& where) {
  Fields f(j, where);
  Attribute a;
  const std::string kind = f.str("kind");
  auto k = enum_named(kind, Attribute::Kind::kTypeProtos, attribute_kind_name);
  if (!k) f.bad("kind", "unknown attribute kind '" + kind + "'");
  a.kind = *k;
  const std::string primary = primary_field(a.kind);
  if (!primary.empty()) f.at(primary.c_str());  // the kind's own field is required
  if (f.find("f")) a.f = f.real("f");
  if (f.find("i")) a.i = f.int64("i");
  if (f.find("s")) a.s = f.bytes_string("s");
  if (f.find("floats")) a.floats = f.reals("floats");
  if (f.find("ints")) a.ints = f.ints("ints");
  if (f.find("strings")) a.strings = f.bytes_strings("strings");
  if (f.find("tensors")) {
    const json& ts = f.array("tensors");
    for (size_t i = 0; i < ts.size(); ++i)
      a.tensors.push_back(read_tensor(ts[i], f.where() + ": tensors[" + std::to_string(i) + "]"));
  }
  if (f.find("num_graphs")) {
    const int64_t n = f.int64("num_graphs");
    if (n < 0 || n > std::numeric_limits<int>::max()) f.bad("num_graphs", "out of range");
    a.num_graphs = static_cast<int>(n);
  }
  return a;
}

json node_to_json(const Node& n) {
  json attrs = json::object();
  for (const auto& [key, a] : n.attributes) attrs[key] = attribute_to_json(a);
  return {{"name", n.name},     {"op_type", n.op_type}, {"domain", n.domain},
          {"inputs", n.inputs}, {"outputs", n.outputs}, {"attributes", attrs}};
}

Node read_node(const json& j, const std::string& where) {
  Fields f(j, where);
  Node n;
  n.name = f.str("name");
  n.op_type = f.str("op_type");
  n.domain = f.str("domain");
  n.inputs = f.strings("inputs");
  n.outputs = f.strings("outputs");
  for (const auto& [key, a] : f.object("attributes").items())
    n.attributes[key] = read_attribute(a, where + ": attribute '" + key + "'");
  return n;
}

// ---- Primitives ------------------------------------------------------------------------

// Immediates have input -1 and any value; tensor operands value 0. Other combinations
// (kept for exactness) write both fields.
json operand_to_json(const Operand& o) {
  json j = json::object();
  if (o.input != -1) j["input"] = o.input;
  if (o.input < 0 || std::bit_cast<uint64_t>(o.value) != 0) j["value"] = double_to_json(o.value);
  return j;
}

Operand read_operand(const json& j, const std::string& where, size_t inputs) {
  Fields f(j, where);
  if (!f.find("input") && !f.find("value")) f.fail("needs 'input' or 'value'");
  Operand o;
  if (f.find("input")) {
    const int64_t i = f.int64("input");
    if (i >= static_cast<int64_t>(inputs))
      f.bad("input", fmt::format("{} but the primitive has {} inputs", i, inputs));
    if (i < std::numeric_limits<int>::min()) f.bad("input", "out of range");
    o.input = static_cast<int>(i);
  }
  if (f.find("value")) o.value = f.real("value");
  return o;
}

void write_attrs(json& j, const PrimAttrs& attrs) {
  std::visit(Overloaded{
                 [&](const ElementwiseAttrs& e) {
                   j["op"] = scalar_op_name(e.op);
                   j["operands"] = json::array();
                   for (const Operand& o : e.operands) j["operands"].push_back(operand_to_json(o));
                 },
                 [&](const ReduceAttrs& r) {
                   j["op"] = reduce_op_name(r.op);
                   j["axes"] = r.axes;
                 },
                 [&](const BroadcastAttrs&) {},
                 [&](const LayoutAttrs& l) {
                   j["op"] = layout_name(l);
                   std::visit(Overloaded{
                                  [&](const layout::Transpose& t) { j["perm"] = t.perm; },
                                  [&](const layout::Reshape&) {},
                                  [&](const layout::Slice& s) {
                                    j["starts"] = s.starts;
                                    j["steps"] = s.steps;
                                  },
                                  [&](const layout::Pad& p) {
                                    j["begin"] = p.begin;
                                    j["stride"] = p.stride;
                                    j["mode"] = kPadModes[static_cast<int>(p.mode)];
                                    j["value"] = double_to_json(p.value);
                                  },
                                  [&](const layout::Concat& c) {
                                    j["axis"] = c.axis;
                                    j["offsets"] = c.offsets;
                                  },
                                  [&](const layout::Gather& g) {
                                    j["axis"] = g.axis;
                                    j["indices"] = g.indices;
                                  },
                                  [&](const layout::Tile&) {},
                                  [&](const layout::Window& w) {
                                    j["strides"] = w.strides;
                                    j["dilations"] = w.dilations;
                                    j["pads_begin"] = w.pads_begin;
                                    j["fill"] = double_to_json(w.fill);
                                    if (w.channels_last) j["channels_last"] = true;
                                  },
                              },
                              l);
                 },
                 [&](const LinearAttrs& l) {
                   if (std::holds_alternative<MatMulAttrs>(l)) {
                     j["op"] = kMatMul;
                     return;
                   }
                   const ConvAttrs& c = std::get<ConvAttrs>(l);
                   j["op"] = kConv;
                   j["group"] = c.group;
                   j["strides"] = c.strides;
                   j["dilations"] = c.dilations;
                   j["pads_begin"] = c.pads_begin;
                   j["pads_end"] = c.pads_end;
                 },
                 [&](const OpaqueAttrs& o) { j["node"] = node_to_json(o.node); },
             },
             attrs);
}

ElementwiseAttrs read_elementwise(const Fields& f, size_t inputs) {
  ElementwiseAttrs e;
  const std::string name = f.str("op");
  auto op = enum_named(name, kLastScalarOp, scalar_op_name);
  if (!op) f.bad("op", "unknown scalar op '" + name + "'");
  e.op = *op;
  const json& operands = f.array("operands");
  if (static_cast<int>(operands.size()) != scalar_op_arity(e.op))
    f.bad("operands", fmt::format("{} operands, but {} takes {}", operands.size(), name,
                                  scalar_op_arity(e.op)));
  for (size_t i = 0; i < operands.size(); ++i)
    e.operands.push_back(
        read_operand(operands[i], f.where() + ": operands[" + std::to_string(i) + "]", inputs));
  return e;
}

LayoutAttrs read_layout(const Fields& f) {
  const std::string name = f.str("op");
  auto attrs = layout_named(name);
  if (!attrs) f.bad("op", "unknown layout '" + name + "'");
  std::visit(Overloaded{
                 [&](layout::Transpose& t) { t.perm = f.ints("perm"); },
                 [&](layout::Reshape&) {},
                 [&](layout::Slice& s) {
                   s.starts = f.ints("starts");
                   s.steps = f.ints("steps");
                 },
                 [&](layout::Pad& p) {
                   p.begin = f.ints("begin");
                   p.stride = f.ints("stride");
                   const std::string mode = f.str("mode");
                   auto it = std::find(std::begin(kPadModes), std::end(kPadModes), mode);
                   if (it == std::end(kPadModes)) f.bad("mode", "unknown pad mode '" + mode + "'");
                   p.mode = static_cast<layout::PadMode>(it - std::begin(kPadModes));
                   p.value = f.real("value");
                 },
                 [&](layout::Concat& c) {
                   c.axis = f.int64("axis");
                   c.offsets = f.ints("offsets");
                 },
                 [&](layout::Gather& g) {
                   g.axis = f.int64("axis");
                   g.indices = f.ints("indices");
                 },
                 [&](layout::Tile&) {},
                 [&](layout::Window& w) {
                   w.strides = f.ints("strides");
                   w.dilations = f.ints("dilations");
                   w.pads_begin = f.ints("pads_begin");
                   w.fill = f.real("fill");
                   if (const json* cl = f.find("channels_last")) {
                     if (!cl->is_boolean()) f.expected("channels_last", "a boolean", *cl);
                     w.channels_last = cl->get<bool>();
                   }
                 },
             },
             *attrs);
  return *attrs;
}

LinearAttrs read_linear(const Fields& f) {
  const std::string name = f.str("op");
  if (name == kMatMul) return MatMulAttrs{};
  if (name != kConv) f.bad("op", "unknown linear op '" + name + "' (matmul or conv)");
  ConvAttrs c;
  c.group = f.int64("group");
  if (c.group < 1) f.bad("group", fmt::format("{} is not positive", c.group));
  c.strides = f.ints("strides");
  c.dilations = f.ints("dilations");
  c.pads_begin = f.ints("pads_begin");
  c.pads_end = f.ints("pads_end");
  return c;
}

// `where` names the primitive when its name is unreadable ("primitives[3]").
Primitive read_primitive(const json& j, const std::string& fallback) {
  std::string where = fallback;
  if (j.is_object()) {
    auto it = j.find("name");
    if (it != j.end() && it->is_string()) where = "primitive '" + it->get<std::string>() + "'";
  }
  Fields f(j, where);
  Primitive p;
  p.name = f.str("name");
  p.origin = f.str("origin");
  p.inputs = f.strings("inputs");
  p.outputs = f.strings("outputs");
  const std::string kind_name = f.str("kind");
  auto kind = enum_named(kind_name, PrimKind::kOpaque, prim_kind_name);
  if (!kind) f.bad("kind", "unknown primitive kind '" + kind_name + "'");
  switch (*kind) {
    case PrimKind::kElementwise:
      p.attrs = read_elementwise(f, p.inputs.size());
      break;
    case PrimKind::kReduce: {
      ReduceAttrs r;
      const std::string op = f.str("op");
      auto rop = enum_named(op, ReduceOp::kMean, reduce_op_name);
      if (!rop) f.bad("op", "unknown reduce op '" + op + "'");
      r.op = *rop;
      r.axes = f.ints("axes");
      p.attrs = r;
      break;
    }
    case PrimKind::kBroadcast:
      p.attrs = BroadcastAttrs{};
      break;
    case PrimKind::kLayout:
      p.attrs = read_layout(f);
      break;
    case PrimKind::kLinear:
      p.attrs = read_linear(f);
      break;
    case PrimKind::kOpaque:
      p.attrs = OpaqueAttrs{read_node(f.object("node"), where + ": node")};
      break;
  }
  if (p.outputs.empty()) f.bad("outputs", "a primitive has at least one output");
  if (*kind != PrimKind::kOpaque && p.outputs.size() != 1)
    f.bad("outputs",
          fmt::format("a {} primitive has one output, not {}", kind_name, p.outputs.size()));
  return p;
}

// ---- Graphs ----------------------------------------------------------------------------

constexpr int64_t kGraphVersion = 1;

PrimGraph read_graph(const json& j, const std::map<std::string, Tensor>& constants) {
  std::string where = "primitive graph";
  if (j.is_object() && j.contains("name") && j["name"].is_string())
    where += " '" + j["name"].get<std::string>() + "'";
  Fields f(j, where);
  if (f.int64("version") != kGraphVersion)
    f.bad("version", fmt::format("{} is not supported (this kora reads version {})",
                                 f.int64("version"), kGraphVersion));
  PrimGraph g;
  g.name = f.str("name");
  g.inputs = f.strings("inputs");
  g.outputs = f.strings("outputs");
  for (const auto& [name, v] : f.object("values").items())
    g.values[name] = read_value_info(v, where + ": type of tensor '" + name + "'");

  std::set<std::string> defined;  // graph inputs, constants, outputs of earlier primitives
  auto typed = [&](const std::string& t, const std::string& who) {
    if (!g.values.count(t)) f.fail(who + ": tensor '" + t + "' has no type in 'values'");
  };
  for (const std::string& t : g.inputs) {
    typed(t, "input");
    if (!defined.insert(t).second) f.fail("input '" + t + "' is listed twice");
  }
  for (const auto& [name, v] : f.object("constants").items()) {
    const ValueInfo info = read_value_info(v, where + ": type of constant '" + name + "'");
    auto it = constants.find(name);
    if (it == constants.end()) f.fail("constant '" + name + "' is missing from the weights");
    const Tensor& t = it->second;
    const size_t nbytes = static_cast<size_t>(numel(info.shape)) * dtype_size(info.dtype);
    if (t.dtype() != info.dtype || t.shape() != info.shape || t.nbytes() != nbytes)
      f.fail(fmt::format("constant '{}' is {} {} in the weights, but the graph expects {} {}", name,
                         dtype_name(t.dtype()), shape_str(t.shape()), dtype_name(info.dtype),
                         shape_str(info.shape)));
    auto vt = g.values.find(name);
    if (vt != g.values.end() && (vt->second.dtype != info.dtype || vt->second.shape != info.shape))
      f.fail("constant '" + name + "' has another type in 'values'");
    if (!defined.insert(name).second) f.fail("constant '" + name + "' is also a graph input");
    g.constants[name] = t;
  }

  const json& prims = f.array("primitives");
  std::set<std::string> prim_names;
  for (size_t i = 0; i < prims.size(); ++i) {
    Primitive p = read_primitive(prims[i], where + ": primitives[" + std::to_string(i) + "]");
    const std::string who = "primitive '" + p.name + "'";
    if (!prim_names.insert(p.name).second) f.fail(who + " is defined twice");
    for (const std::string& t : p.inputs) {
      if (t.empty()) continue;
      typed(t, who);
      if (!defined.count(t))
        f.fail(who + " reads '" + t +
               "' before any primitive produces it (not a graph input or constant either)");
    }
    for (const std::string& t : p.outputs) {
      if (t.empty()) continue;
      typed(t, who);
      if (!defined.insert(t).second) f.fail(who + " writes '" + t + "', which already exists");
    }
    g.prims.push_back(std::move(p));
  }
  for (const std::string& t : g.outputs)
    if (!defined.count(t)) f.fail("output '" + t + "' is never produced");
  return g;
}

}  // namespace

nlohmann::json primitive_to_json(const Primitive& p) {
  json j;
  j["name"] = p.name;
  j["origin"] = p.origin;
  j["kind"] = prim_kind_name(p.kind());
  j["inputs"] = p.inputs;
  j["outputs"] = p.outputs;
  write_attrs(j, p.attrs);
  return j;
}

Primitive primitive_from_json(const nlohmann::json& j) {
  return guarded("primitive", [&] { return read_primitive(j, "primitive"); });
}

nlohmann::json value_info_to_json(const ValueInfo& v) {
  return {{"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
}

ValueInfo value_info_from_json(const nlohmann::json& j) {
  return guarded("tensor type", [&] { return read_value_info(j, "tensor type"); });
}

nlohmann::json tensor_to_json(const Tensor& t) {
  // Only a default-constructed Tensor has fewer bytes than its shape needs (none).
  const bool storage = t.nbytes() == static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  json data = storage ? json(base64_encode(t.bytes(), t.nbytes())) : json(nullptr);
  return {{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data", data}};
}

Tensor tensor_from_json(const nlohmann::json& j) {
  return guarded("tensor", [&] { return read_tensor(j, "tensor"); });
}

nlohmann::json prim_graph_to_json(const PrimGraph& g) {
  json j;
  j["version"] = kGraphVersion;
  j["name"] = g.name;
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  j["values"] = json::object();
  for (const auto& [name, v] : g.values) j["values"][name] = value_info_to_json(v);
  j["constants"] = json::object();
  for (const auto& [name, t] : g.constants)
    j["constants"][name] = value_info_to_json({t.dtype(), t.shape()});
  j["primitives"] = json::array();
  for (const Primitive& p : g.prims) j["primitives"].push_back(primitive_to_json(p));
  return j;
}

PrimGraph prim_graph_from_json(const nlohmann::json& j,
                               const std::map<std::string, Tensor>& constants) {
  return guarded("primitive graph", [&] { return read_graph(j, constants); });
}

}  // namespace kora
