// The fake driver's graphs (tests/cuda/fake_driver.cc) are strict enough to catch a
// dependency the runtime forgets: of two captured GEMMs, the second reading the first's
// output, a graph that says the second waits for the first gives the serial result, and
// one that does not runs the second first (the fake runs the latest-added ready node
// first), so that CUDA artifacts checked on the fake GPU (tests/cuda/artifact_test.cc)
// fail when src/runtime/step_dependencies misses an edge. Work on the default stream
// while a capture is open is refused, as CUDA refuses it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

#ifdef KORA_FAKE_CUDA_PATH
// The fake's entry points, typed by hand (handles are pointers, results ints).
struct Fake {
  void* lib = ::dlopen(KORA_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F get(const char* name) {
    return reinterpret_cast<F>(::dlsym(lib, name));
  }
  int (*stream_create_with_priority)(void**, unsigned, int) =
      get<decltype(stream_create_with_priority)>("cuStreamCreateWithPriority");
  int (*retain)(void**, int) = get<decltype(retain)>("cuDevicePrimaryCtxRetain");
  int (*set_current)(void*) = get<decltype(set_current)>("cuCtxSetCurrent");
  // A stream of priority 0, the device's context made current first (as the runtime does).
  int stream_create(void** stream, unsigned flags) {
    void* context = nullptr;
    if (!retain || !set_current || retain(&context, 0) || set_current(context)) return -1;
    return stream_create_with_priority ? stream_create_with_priority(stream, flags, 0) : -1;
  }
  int (*begin)(void*, int) = get<decltype(begin)>("cuStreamBeginCapture_v2");
  int (*end)(void*, void**) = get<decltype(end)>("cuStreamEndCapture");
  int (*graph_create)(void**, unsigned) = get<decltype(graph_create)>("cuGraphCreate");
  int (*add_child)(void**, void*, void* const*, size_t,
                   void*) = get<decltype(add_child)>("cuGraphAddChildGraphNode");
  int (*instantiate)(void**, void*, unsigned long long) =
      get<decltype(instantiate)>("cuGraphInstantiateWithFlags");
  int (*launch)(void*, void*) = get<decltype(launch)>("cuGraphLaunch");
  int (*graph_destroy)(void*) = get<decltype(graph_destroy)>("cuGraphDestroy");
  int (*exec_destroy)(void*) = get<decltype(exec_destroy)>("cuGraphExecDestroy");
  int (*blas_create)(void**) = get<decltype(blas_create)>("cublasCreate_v2");
  int (*blas_stream)(void*, void*) = get<decltype(blas_stream)>("cublasSetStream_v2");
  // cublasSgemmStridedBatched, as the fake defines it (column-major, op N).
  int (*gemm)(void*, int, int, int, int, int, const float*, const float*, int, long long,
              const float*, int, long long, const float*, float*, int, long long,
              int) = get<decltype(gemm)>("cublasSgemmStridedBatched");
};

// c = a * b for 1 x 1 matrices, on the handle's stream.
int scalar_gemm(Fake& f, void* blas, const float* a, const float* b, float* c) {
  const float one = 1, zero = 0;
  return f.gemm(blas, 0, 0, 1, 1, 1, &one, a, 1, 1, b, 1, 1, &zero, c, 1, 1, 1);
}

// The two GEMMs (c1 = 2 * 3, c2 = c1 * 10) as a graph of two child nodes, launched once;
// c2's value out.
float run_pair(Fake& f, bool second_waits) {
  const float two = 2, three = 3, ten = 10;
  float c1 = 0, c2 = 0;
  void *stream = nullptr, *blas = nullptr, *parent = nullptr;
  EXPECT_EQ(f.stream_create(&stream, 0), 0);
  EXPECT_EQ(f.blas_create(&blas), 0);
  EXPECT_EQ(f.blas_stream(blas, stream), 0);
  EXPECT_EQ(f.graph_create(&parent, 0), 0);
  void* nodes[2] = {};
  for (int i = 0; i < 2; ++i) {
    void* child = nullptr;
    EXPECT_EQ(f.begin(stream, 0), 0);
    EXPECT_EQ(
        i == 0 ? scalar_gemm(f, blas, &two, &three, &c1) : scalar_gemm(f, blas, &c1, &ten, &c2), 0);
    EXPECT_EQ(f.end(stream, &child), 0);
    EXPECT_EQ(c1 + c2, 0.0f);  // recorded, not run
    EXPECT_EQ(f.add_child(&nodes[i], parent, nodes, i == 1 && second_waits ? 1 : 0, child), 0);
    f.graph_destroy(child);
  }
  void* exec = nullptr;
  EXPECT_EQ(f.instantiate(&exec, parent, 0), 0);
  EXPECT_EQ(f.launch(exec, stream), 0);
  EXPECT_EQ(c1, 6.0f);
  f.exec_destroy(exec);
  f.graph_destroy(parent);
  return c2;
}

TEST(FakeCudaGraph, AForgottenDependencyChangesTheResult) {
  Fake f;
  ASSERT_TRUE(f.lib && f.stream_create_with_priority && f.begin && f.add_child && f.gemm)
      << ::dlerror();
  EXPECT_EQ(run_pair(f, true), 60.0f);
  EXPECT_EQ(run_pair(f, false), 0.0f);  // the second ran first, on c1's old value
}

TEST(FakeCudaGraph, TheDefaultStreamIsRefusedWhileCapturing) {
  Fake f;
  ASSERT_TRUE(f.lib && f.stream_create_with_priority && f.begin && f.gemm) << ::dlerror();
  void *stream = nullptr, *blas = nullptr, *graph = nullptr;
  ASSERT_EQ(f.stream_create(&stream, 0), 0);
  ASSERT_EQ(f.blas_create(&blas), 0);
  ASSERT_EQ(f.blas_stream(blas, nullptr), 0);
  const float two = 2, three = 3;
  float c = 0;
  ASSERT_EQ(f.begin(stream, 0), 0);
  EXPECT_NE(scalar_gemm(f, blas, &two, &three, &c), 0);
  ASSERT_EQ(f.end(stream, &graph), 0);
  f.graph_destroy(graph);
  EXPECT_EQ(scalar_gemm(f, blas, &two, &three, &c), 0);  // no capture open: runs now
  EXPECT_EQ(c, 6.0f);
}
#endif

}  // namespace
