// The kernels that oneDNN versions are compared on (bench/onednn_versions/run.sh), behind
// a C interface: built once against each version, each build a shared library that the
// driver loads with RTLD_DEEPBIND, so that two versions run in one process, in turn.
// In: a shape's index; out: its median time (ms) over `iters` runs after 10 warm-up runs,
// operands in oneDNN's own layouts for convolutions (any), plain for matmuls (kora's bf16
// matmuls read and write plain bf16), one scratchpad, weights warm.
// The shapes: transformer blocks (DeiT-S, BERT-base: QKV, projection with the residual as
// a binary post-op, MLP with GELU, attention's batched matmuls) and CNN layers (ResNet-50,
// MobileNetV2, EfficientNet-B0: 1x1 and 3x3, strided stem, depthwise), bf16 then f32.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
namespace {
struct Shape {
  std::string name;
  bool conv;
  bool bf16;
  long b, m, k, n;
  int post;  // matmul
  long c, o, hw, kh, stride, group;
};
std::vector<Shape> shapes() {
  std::vector<Shape> v;
  auto mm = [&](const char* n, long b, long m, long k, long nn, int post, bool bf) {
    v.push_back(
        {std::string(bf ? "bf16 " : "f32  ") + n, false, bf, b, m, k, nn, post, 0, 0, 0, 0, 0, 0});
  };
  auto cv = [&](const char* n, long c, long o, long hw, long kh, long s, long g, int post,
                bool bf) {
    v.push_back(
        {std::string(bf ? "bf16 " : "f32  ") + n, true, bf, 0, 0, 0, 0, post, c, o, hw, kh, s, g});
  };
  for (bool bf : {true, false}) {
    mm("deit qkv", 1, 197, 384, 1152, 0, bf);
    mm("deit proj+res", 1, 197, 384, 384, 2, bf);
    mm("deit fc1+gelu", 1, 197, 384, 1536, 1, bf);
    mm("deit fc2+res", 1, 197, 1536, 384, 2, bf);
    mm("deit scores", 6, 197, 64, 197, 0, bf);
    mm("deit attn*v", 6, 197, 197, 64, 0, bf);
    mm("bert qkv", 1, 128, 768, 2304, 0, bf);
    mm("bert fc1+gelu", 1, 128, 768, 3072, 1, bf);
    mm("bert fc2+res", 1, 128, 3072, 768, 2, bf);
    cv("r50 stem 7x7s2", 3, 64, 224, 7, 2, 1, 3, bf);
    cv("r50 1x1 256>64", 256, 64, 56, 1, 1, 1, 3, bf);
    cv("r50 3x3 64", 64, 64, 56, 3, 1, 1, 3, bf);
    cv("r50 1x1 64>256+res", 64, 256, 56, 1, 1, 1, 2, bf);
    cv("r50 3x3 128", 128, 128, 28, 3, 1, 1, 3, bf);
    cv("r50 3x3 256", 256, 256, 14, 3, 1, 1, 3, bf);
    cv("r50 1x1 1024>256", 1024, 256, 14, 1, 1, 1, 3, bf);
    cv("r50 3x3 512", 512, 512, 7, 3, 1, 1, 3, bf);
    cv("mbv2 1x1 16>96", 16, 96, 112, 1, 1, 1, 3, bf);
    cv("mbv2 dw3x3 96 s2", 96, 96, 112, 3, 2, 96, 3, bf);
    cv("mbv2 dw3x3 144", 144, 144, 56, 3, 1, 144, 3, bf);
    cv("effb0 dw5x5 240", 240, 240, 28, 5, 1, 240, 3, bf);
    cv("effb0 1x1 240>40", 240, 40, 28, 1, 1, 1, 0, bf);
  }
  return v;
}
struct Prim {
  primitive p;
  std::unordered_map<int, memory> args;
  std::string impl;
};
std::vector<std::unique_ptr<Prim>> prims;
engine eng(engine::kind::cpu, 0);
stream strm(eng);
memory filled(const memory::desc& d) {
  memory m(d, eng);
  std::memset(m.get_data_handle(), 0, d.get_size());
  return m;
}
Prim* make(const Shape& s) {
  auto p = std::make_unique<Prim>();
  dt t = s.bf16 ? dt::bf16 : dt::f32;
  post_ops po;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  auto add_post = [&](const memory::desc& d) {
    if (s.post == 1 || s.post == 3)
      po.append_eltwise(
#if DNNL_VERSION_MAJOR < 3
          1.f,
#endif
          s.post == 1 ? algorithm::eltwise_gelu_erf : algorithm::eltwise_relu, 0.f, 0.f);
    if (s.post == 2) po.append_binary(algorithm::binary_add, d);
    attr.set_post_ops(po);
  };
  if (!s.conv) {
    memory::desc a({s.b, s.m, s.k}, t, tag::abc),
        w({s.b, s.k, s.n}, t, s.b > 1 ? tag::abc : tag::any), c({s.b, s.m, s.n}, t, tag::abc),
        bias({1, 1, s.n}, dt::f32, tag::abc);
    memory::desc res({s.b, s.m, s.n}, dt::f32, tag::abc);
    add_post(res);
#if DNNL_VERSION_MAJOR >= 3
    matmul::primitive_desc pd(eng, a, w, bias, c, attr);
#else
    matmul::primitive_desc pd(matmul::desc(a, w, bias, c), attr, eng);
#endif
    p->p = matmul(pd);
    p->impl = pd.impl_info_str();
    p->args = {{DNNL_ARG_SRC, filled(a)},
               {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
               {DNNL_ARG_BIAS, filled(bias)},
               {DNNL_ARG_DST, filled(c)},
               {DNNL_ARG_SCRATCHPAD, filled(pd.scratchpad_desc())}};
    if (s.post == 2) p->args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = filled(res);
  } else {
    long pad = s.kh / 2, out = (s.hw + 2 * pad - s.kh) / s.stride + 1;
    memory::desc a({1, s.c, s.hw, s.hw}, t, tag::any), c({1, s.o, out, out}, t, tag::any),
        bias({s.o}, dt::f32, tag::a);
    memory::dims wd = s.group > 1 ? memory::dims{s.group, s.o / s.group, s.c / s.group, s.kh, s.kh}
                                  : memory::dims{s.o, s.c, s.kh, s.kh};
    memory::desc w(wd, t, tag::any);
    memory::dims st{s.stride, s.stride}, pd_{pad, pad};
    auto conv_pd = [&](const primitive_attr& at) {
#if DNNL_VERSION_MAJOR >= 3
      return convolution_forward::primitive_desc(eng, prop_kind::forward_inference,
                                                 algorithm::convolution_direct, a, w, bias, c, st,
                                                 pd_, pd_, at);
#else
      return convolution_forward::primitive_desc(
          convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, a,
                                    w, bias, c, st, pd_, pd_),
          at, eng);
#endif
    };
    // the residual in the destination's layout: ask for the primitive without it first
    add_post(conv_pd(primitive_attr()).dst_desc());
    const convolution_forward::primitive_desc pd = conv_pd(attr);
    p->p = convolution_forward(pd);
    p->impl = pd.impl_info_str();
    p->args = {{DNNL_ARG_SRC, filled(pd.src_desc())},
               {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
               {DNNL_ARG_BIAS, filled(bias)},
               {DNNL_ARG_DST, filled(pd.dst_desc())},
               {DNNL_ARG_SCRATCHPAD, filled(pd.scratchpad_desc())}};
    if (s.post == 2)
      p->args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = filled(pd.dst_desc());
  }
  prims.push_back(std::move(p));
  return prims.back().get();
}
}  // namespace
extern "C" int nshapes() { return (int)shapes().size(); }
extern "C" const char* shape_name(int i) {
  static auto v = shapes();
  return v[i].name.c_str();
}
extern "C" const char* impl(int i) {
  return prims.size() > (size_t)i ? prims[i]->impl.c_str() : "";
}
extern "C" double time_shape(int i, int iters) {
  static auto v = shapes();
  while ((int)prims.size() <= i) make(v[prims.size()]);
  Prim* p = prims[i].get();
  std::vector<double> t;
  for (int r = 0; r < iters + 10; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    p->p.execute(strm, p->args);
    strm.wait();
    if (r >= 10)
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
