// Test helper implementation: ONNX protos built field by field, temp dirs per test.
#include "frontend/model_builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <stdexcept>

#include "kora/error.h"

namespace kora_test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::string test = "notest";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    test = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : test)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
  path_ = std::filesystem::temp_directory_path() / ("kora_test_" + std::to_string(::getpid()) +
                                                    "_" + test + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

onnx::TensorProto header(const std::string& name, int onnx_type, const Dims& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx_type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

}  // namespace

onnx::TensorProto float_tensor(const std::string& name, const Dims& dims,
                               const std::vector<float>& values, bool raw) {
  onnx::TensorProto t = header(name, onnx::TensorProto::FLOAT, dims);
  if (raw)
    t.set_raw_data(bytes_of(values));
  else
    for (float v : values) t.add_float_data(v);
  return t;
}

onnx::TensorProto int64_tensor(const std::string& name, const Dims& dims,
                               const std::vector<int64_t>& values, bool raw) {
  onnx::TensorProto t = header(name, onnx::TensorProto::INT64, dims);
  if (raw)
    t.set_raw_data(bytes_of(values));
  else
    for (int64_t v : values) t.add_int64_data(v);
  return t;
}

onnx::TensorProto int32_tensor(const std::string& name, const Dims& dims,
                               const std::vector<int32_t>& values, bool raw) {
  onnx::TensorProto t = header(name, onnx::TensorProto::INT32, dims);
  if (raw)
    t.set_raw_data(bytes_of(values));
  else
    for (int32_t v : values) t.add_int32_data(v);
  return t;
}

onnx::TensorProto raw_tensor(const std::string& name, int onnx_type, const Dims& dims,
                             const std::string& bytes) {
  onnx::TensorProto t = header(name, onnx_type, dims);
  t.set_raw_data(bytes);
  return t;
}

onnx::TensorProto external_tensor(const std::string& name, int onnx_type, const Dims& dims,
                                  const std::string& location, int64_t offset, int64_t length) {
  onnx::TensorProto t = header(name, onnx_type, dims);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* kv = t.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  return t;
}

namespace {

onnx::AttributeProto named(const std::string& name, onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}

}  // namespace

onnx::AttributeProto attr_f(const std::string& name, float v) {
  auto a = named(name, onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
onnx::AttributeProto attr_i(const std::string& name, int64_t v) {
  auto a = named(name, onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
onnx::AttributeProto attr_s(const std::string& name, const std::string& v) {
  auto a = named(name, onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
onnx::AttributeProto attr_t(const std::string& name, const onnx::TensorProto& v) {
  auto a = named(name, onnx::AttributeProto::TENSOR);
  *a.mutable_t() = v;
  return a;
}
onnx::AttributeProto attr_fs(const std::string& name, const std::vector<float>& v) {
  auto a = named(name, onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}
onnx::AttributeProto attr_is(const std::string& name, const std::vector<int64_t>& v) {
  auto a = named(name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
onnx::AttributeProto attr_ss(const std::string& name, const std::vector<std::string>& v) {
  auto a = named(name, onnx::AttributeProto::STRINGS);
  for (const std::string& x : v) a.add_strings(x);
  return a;
}
onnx::AttributeProto attr_g(const std::string& name, const onnx::GraphProto& v) {
  auto a = named(name, onnx::AttributeProto::GRAPH);
  *a.mutable_g() = v;
  return a;
}

ModelBuilder::ModelBuilder(int64_t opset_version) {
  model_.set_ir_version(8);
  model_.set_producer_name("kora_tests");
  model_.mutable_graph()->set_name("test_graph");
  opset(opset_version);
}

ModelBuilder& ModelBuilder::input(const std::string& name, const std::vector<Dim>& dims,
                                  int elem_type) {
  onnx::ValueInfoProto* vi = graph().add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (d.has_value)
      dim->set_dim_value(d.value);
    else if (!d.param.empty())
      dim->set_dim_param(d.param);
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, int elem_type) {
  onnx::ValueInfoProto* vi = graph().add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return *this;
}

ModelBuilder& ModelBuilder::initializer(const onnx::TensorProto& tensor) {
  *graph().add_initializer() = tensor;
  return *this;
}

ModelBuilder& ModelBuilder::init_f32(const std::string& name, const Dims& dims,
                                     const std::vector<float>& values) {
  return initializer(float_tensor(name, dims, values));
}

ModelBuilder& ModelBuilder::init_i64(const std::string& name, const Dims& dims,
                                     const std::vector<int64_t>& values) {
  return initializer(int64_tensor(name, dims, values));
}

onnx::NodeProto& ModelBuilder::node(const std::string& op_type,
                                    const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::vector<onnx::AttributeProto>& attributes,
                                    const std::string& name, const std::string& domain) {
  onnx::NodeProto* n = graph().add_node();
  n->set_op_type(op_type);
  if (!name.empty()) n->set_name(name);
  if (!domain.empty()) n->set_domain(domain);
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  for (const auto& a : attributes) *n->add_attribute() = a;
  return *n;
}

ModelBuilder& ModelBuilder::opset(int64_t version, const std::string& domain) {
  for (auto& op : *model_.mutable_opset_import()) {
    if (op.domain() == domain) {
      op.set_version(version);
      return *this;
    }
  }
  auto* op = model_.add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
  return *this;
}

std::string ModelBuilder::serialize() const {
  std::string bytes;
  if (!model_.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize model");
  return bytes;
}

std::string ModelBuilder::save(const TempDir& dir, const std::string& filename) const {
  const std::string path = dir.file(filename);
  write_file(path, serialize());
  return path;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

kora::Graph import_model(const ModelBuilder& model, const kora::ImportOptions& options) {
  TempDir dir;
  return kora::import_onnx(model.save(dir), options);
}

std::string import_error(const ModelBuilder& model) {
  try {
    import_model(model);
  } catch (const kora::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "import did not throw kora::Error";
  return "";
}

}  // namespace kora_test
