// The C API (include/kora/kora_c.h) over kora::Session: exceptions become -1 / NULL with
// the message kept per thread for kora_last_error().
#include <string>

#include "kora/error.h"
#include "kora/kora_c.h"
#include "kora/runtime.h"

struct kora_session {
  kora::Session session;
  kora_session(const char* dir, int threads) : session(dir, kora::SessionOptions{threads}) {}
};

namespace {

thread_local std::string last_error;

template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

const kora::TensorInfo* info(const std::vector<kora::TensorInfo>& list, int i) {
  if (i < 0 || i >= static_cast<int>(list.size())) {
    last_error = "index " + std::to_string(i) + " out of range (" + std::to_string(list.size()) +
                 " tensors)";
    return nullptr;
  }
  return &list[i];
}

int shape(const kora::TensorInfo* t, int64_t* dims) {
  if (!t) return -1;
  for (size_t d = 0; d < t->shape.size(); ++d) dims[d] = t->shape[d];
  return 0;
}

}  // namespace

extern "C" {

const char* kora_last_error(void) { return last_error.c_str(); }

kora_session* kora_session_open(const char* artifact_dir, int threads) {
  kora_session* s = nullptr;
  if (!artifact_dir) {
    last_error = "artifact directory is NULL";
    return nullptr;
  }
  guarded([&] { s = new kora_session(artifact_dir, threads); });
  return s;
}

void kora_session_close(kora_session* session) { delete session; }

int kora_session_input_count(const kora_session* s) {
  return static_cast<int>(s->session.inputs().size());
}
int kora_session_output_count(const kora_session* s) {
  return static_cast<int>(s->session.outputs().size());
}
const char* kora_session_input_name(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.inputs(), i);
  return t ? t->name.c_str() : nullptr;
}
const char* kora_session_output_name(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.outputs(), i);
  return t ? t->name.c_str() : nullptr;
}
const char* kora_session_input_dtype(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.inputs(), i);
  return t ? kora::dtype_name(t->dtype) : nullptr;
}
const char* kora_session_output_dtype(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.outputs(), i);
  return t ? kora::dtype_name(t->dtype) : nullptr;
}
int kora_session_input_rank(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.inputs(), i);
  return t ? static_cast<int>(t->shape.size()) : -1;
}
int kora_session_output_rank(const kora_session* s, int i) {
  const kora::TensorInfo* t = info(s->session.outputs(), i);
  return t ? static_cast<int>(t->shape.size()) : -1;
}
int kora_session_input_shape(const kora_session* s, int i, int64_t* dims) {
  return shape(info(s->session.inputs(), i), dims);
}
int kora_session_output_shape(const kora_session* s, int i, int64_t* dims) {
  return shape(info(s->session.outputs(), i), dims);
}

int kora_session_set_input(kora_session* s, const char* name, const void* data, size_t bytes) {
  return guarded([&] {
    if (!name || !data) throw kora::Error("input name or data is NULL");
    for (const kora::TensorInfo& t : s->session.inputs()) {
      if (t.name != name) continue;
      const size_t want = kora::dtype_size(t.dtype) * static_cast<size_t>(kora::numel(t.shape));
      if (bytes != want)
        throw kora::Error("input '" + t.name + "' takes " + std::to_string(want) + " bytes (" +
                          kora::dtype_name(t.dtype) + " " + kora::shape_str(t.shape) + "), got " +
                          std::to_string(bytes));
      s->session.set_input(name, kora::Tensor(t.dtype, t.shape, data, bytes));
      return;
    }
    throw kora::Error(std::string("the model has no input '") + name + "'");
  });
}

int kora_session_run(kora_session* s) {
  return guarded([&] { s->session.run(); });
}

int kora_session_output(const kora_session* s, const char* name, const void** data, size_t* bytes) {
  return guarded([&] {
    if (!name) throw kora::Error("output name is NULL");
    const kora::Tensor& t = s->session.output(name);
    if (data) *data = t.bytes();
    if (bytes) *bytes = t.nbytes();
  });
}

}  // extern "C"
