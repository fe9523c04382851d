// Attribute accessors and look-ups of the operator graph (include/kora/graph.h).
#include "kora/graph.h"

#include "kora/error.h"

namespace kora {

const char* attribute_kind_name(Attribute::Kind kind) {
  static const char* const kNames[] = {
      "float",  "int",  "string",  "tensor",  "graph",  "sparse_tensor",  "type_proto",
      "floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos"};
  return kNames[static_cast<int>(kind)];
}

namespace {

const Attribute* find(const Node& n, const std::string& key, Attribute::Kind kind) {
  auto it = n.attributes.find(key);
  if (it == n.attributes.end()) return nullptr;
  if (it->second.kind != kind)
    throw Error(n.describe() + ": attribute '" + key + "' is " +
                attribute_kind_name(it->second.kind) + ", expected " + attribute_kind_name(kind));
  return &it->second;
}

}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = find(*this, key, Attribute::Kind::kInt);
  return a ? a->i : fallback;
}

double Node::attr_float(const std::string& key, double fallback) const {
  const Attribute* a = find(*this, key, Attribute::Kind::kFloat);
  return a ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = find(*this, key, Attribute::Kind::kString);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& key,
                                     const std::vector<int64_t>& fallback) const {
  const Attribute* a = find(*this, key, Attribute::Kind::kInts);
  return a ? a->ints : fallback;
}

std::vector<double> Node::attr_floats(const std::string& key) const {
  const Attribute* a = find(*this, key, Attribute::Kind::kFloats);
  return a ? a->floats : std::vector<double>{};
}

const Tensor* Node::attr_tensor(const std::string& key) const {
  auto it = attributes.find(key);
  if (it == attributes.end() || it->second.tensors.empty()) return nullptr;
  return &it->second.tensors[0];
}

std::string Node::describe() const { return "node '" + name + "' (" + op_type + ")"; }

const ValueInfo& Graph::value(const std::string& tensor) const {
  auto it = values.find(tensor);
  if (it == values.end()) throw Error("tensor '" + tensor + "' has no inferred type");
  return it->second;
}

const Tensor* Graph::constant(const std::string& tensor) const {
  auto it = constants.find(tensor);
  return it == constants.end() ? nullptr : &it->second;
}

}  // namespace kora
