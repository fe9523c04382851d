// The operator graph: what the front end produces from an ONNX model and every later
// stage starts from. Nodes are ONNX operators with their attributes, in topological
// order; every tensor has a dtype and a static shape; constants (initializers, Constant
// nodes, folded shape arithmetic) live beside the nodes as host tensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kora/tensor.h"

namespace kora {

struct Graph;

// One ONNX attribute. Sparse-tensor and type attributes are recorded by kind (sparse
// tensors are densified into `tensors`); the subgraphs of control flow (If, Loop, Scan)
// are converted into `graphs`, which shape inference expands into the graph.
struct Attribute {
  enum class Kind {
    kFloat,
    kInt,
    kString,
    kTensor,
    kGraph,
    kSparseTensor,
    kTypeProto,
    kFloats,
    kInts,
    kStrings,
    kTensors,
    kGraphs,
    kSparseTensors,
    kTypeProtos,
  };
  Kind kind = Kind::kInt;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;  // kTensor / kSparseTensor: exactly one
  int num_graphs = 0;           // kGraph / kGraphs: how many subgraphs the attribute held
  std::vector<std::shared_ptr<const Graph>> graphs;  // those subgraphs (control flow only)
};

const char* attribute_kind_name(Attribute::Kind kind);

struct Node {
  std::string name;  // the model's node name, or "<OpType>_<index>" when it had none
  std::string op_type;
  std::string domain;               // "" for the default ONNX domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  bool has_attr(const std::string& key) const { return attributes.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key,
                                 const std::vector<int64_t>& fallback = {}) const;
  std::vector<double> attr_floats(const std::string& key) const;
  const Tensor* attr_tensor(const std::string& key) const;

  // Input i is present (given and not the empty name).
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  // "node 'conv1' (Conv)": how error messages name a node.
  std::string describe() const;
};

struct ValueInfo {
  DType dtype = DType::kFloat32;
  Shape shape;
};

// A model's graph, or a subgraph of control flow: then its `inputs` are the formal
// parameters (untyped), and a name it does not define refers to the enclosing graph.
struct Graph {
  std::string name;
  int64_t opset = 0;  // version of the default ONNX domain
  std::string producer;
  std::vector<std::string> inputs;  // runtime inputs (initializers excluded)
  std::vector<std::string> outputs;
  std::vector<Node> nodes;                  // topological order
  std::map<std::string, ValueInfo> values;  // dtype and static shape of every tensor
  std::map<std::string, Tensor> constants;  // initializers and folded values
  int64_t parameter_count = 0;              // floating-point weight elements in the model file

  const ValueInfo& value(const std::string& tensor) const;
  const Tensor* constant(const std::string& tensor) const;
  bool is_constant(const std::string& tensor) const { return constants.count(tensor) != 0; }
};

}  // namespace kora
