// Test helper: builds small onnx::ModelProto graphs in C++ (inputs with fixed or symbolic
// dims, initializers in raw_data, typed fields or external files, nodes with attributes of
// every kind, opset imports) and saves them into a per-test temporary directory.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kora/frontend.h"

namespace kora_test {

// A fresh directory under the system temp dir, named after the running test; removed
// (with everything in it) when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// One dimension of a graph input: a size (4), a symbolic name ("batch"), or Dim{} for an
// unnamed unknown dimension.
struct Dim {
  Dim() = default;
  Dim(int64_t v) : value(v), has_value(true) {}  // NOLINT: implicit on purpose
  Dim(int v) : Dim(int64_t{v}) {}                // NOLINT
  Dim(const char* p) : param(p) {}               // NOLINT
  int64_t value = 0;
  bool has_value = false;
  std::string param;
};

using Dims = std::vector<int64_t>;

// TensorProtos. `raw` selects raw_data (true) or the typed repeated field (false).
onnx::TensorProto float_tensor(const std::string& name, const Dims& dims,
                               const std::vector<float>& values, bool raw = true);
onnx::TensorProto int64_tensor(const std::string& name, const Dims& dims,
                               const std::vector<int64_t>& values, bool raw = true);
onnx::TensorProto int32_tensor(const std::string& name, const Dims& dims,
                               const std::vector<int32_t>& values, bool raw = true);
// Any element type from its raw little-endian bytes.
onnx::TensorProto raw_tensor(const std::string& name, int onnx_type, const Dims& dims,
                             const std::string& bytes);
// A tensor whose bytes live in `location` (relative to the model file) at offset/length;
// length < 0 leaves the length key out.
onnx::TensorProto external_tensor(const std::string& name, int onnx_type, const Dims& dims,
                                  const std::string& location, int64_t offset, int64_t length = -1);
// The little-endian bytes of a vector, for raw_data and external files.
template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Attributes, one function per kind.
onnx::AttributeProto attr_f(const std::string& name, float v);
onnx::AttributeProto attr_i(const std::string& name, int64_t v);
onnx::AttributeProto attr_s(const std::string& name, const std::string& v);
onnx::AttributeProto attr_t(const std::string& name, const onnx::TensorProto& v);
onnx::AttributeProto attr_fs(const std::string& name, const std::vector<float>& v);
onnx::AttributeProto attr_is(const std::string& name, const std::vector<int64_t>& v);
onnx::AttributeProto attr_ss(const std::string& name, const std::vector<std::string>& v);
onnx::AttributeProto attr_g(const std::string& name, const onnx::GraphProto& v);

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);

  ModelBuilder& input(const std::string& name, const std::vector<Dim>& dims,
                      int elem_type = onnx::TensorProto::FLOAT);
  ModelBuilder& output(const std::string& name, int elem_type = onnx::TensorProto::FLOAT);
  ModelBuilder& initializer(const onnx::TensorProto& tensor);
  ModelBuilder& init_f32(const std::string& name, const Dims& dims,
                         const std::vector<float>& values);
  ModelBuilder& init_i64(const std::string& name, const Dims& dims,
                         const std::vector<int64_t>& values);
  // Adds a node; the returned reference stays valid while the builder lives.
  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::vector<onnx::AttributeProto>& attributes = {},
                        const std::string& name = "", const std::string& domain = "");
  // Sets the version of `domain` ("" is the default ONNX domain), adding it if new.
  ModelBuilder& opset(int64_t version, const std::string& domain = "");

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  std::string serialize() const;
  // Writes the model to dir/filename and returns the path.
  std::string save(const TempDir& dir, const std::string& filename = "model.onnx") const;

 private:
  onnx::ModelProto model_;
};

// Writes bytes to a file (external data, corrupt models).
void write_file(const std::string& path, const std::string& bytes);

// Saves the model into a temporary directory and imports it.
kora::Graph import_model(const ModelBuilder& model, const kora::ImportOptions& options = {});
// The kora::Error importing the model throws (a test failure when it imports).
std::string import_error(const ModelBuilder& model);

}  // namespace kora_test
