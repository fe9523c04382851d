// oneDNN library kernels (src/cpu/library.h) against the reference interpreter:
// hand-built primitive graphs of convolutions (plain, grouped, depthwise, strided,
// dilated, asymmetrically padded, 1-D and 3-D, constant and runtime weights) and matmuls
// (2-D, batched, broadcast batch, rank 4, operands read through transposes) with epilogues (bias,
// relu, clip, sigmoid, residual adds, swish, hardswish, gelu, scalar and broadcast operands,
// reshapes). Every candidate kernel onednn_supports() accepts is built with both convolution
// layouts, run on random inputs (constants as they are) and compared with run_primitive() applied
// member by member; the whole chain must be among the accepted ones. Candidates with a
// prologue, an intermediate output or non-float32 data are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/codegen_harness.h"
#include "cpu/library.h"
#include "cpu/onednn_kernel.h"
#include "kora/candidates.h"
#include "kora/check.h"
#include "kora/error.h"
#include "kora/interpreter.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace {

using namespace kora;
using S = ScalarOp;

// The codegen tests' graph builder, with oneDNN-shaped helpers (conv, matmul, ...).
class Builder {
  std::mt19937 rng_{7};
  kora_codegen_test::GraphBuilder builder_{rng_};

 public:
  PrimGraph& g = builder_.g;

  std::string input(const Shape& shape, DType dtype = DType::kFloat32) {
    return builder_.input(dtype, shape);
  }
  std::string constant(const Shape& shape) {  // weights in [-1, 1)
    return builder_.input(DType::kFloat32, shape, true, -1, 1);
  }
  std::string prim(PrimAttrs attrs, std::vector<std::string> inputs, const Shape& shape,
                   DType dtype = DType::kFloat32) {
    return builder_.prim(std::move(attrs), std::move(inputs), dtype, shape);
  }
  const Shape& shape(const std::string& t) { return g.value(t).shape; }

  std::string conv(const std::string& x, const std::string& w, ConvAttrs a) {
    const Shape &xs = shape(x), &ws = shape(w);
    const size_t n = xs.size() - 2;
    if (a.strides.empty()) a.strides.assign(n, 1);
    if (a.dilations.empty()) a.dilations.assign(n, 1);
    if (a.pads_begin.empty()) a.pads_begin.assign(n, 0);
    if (a.pads_end.empty()) a.pads_end.assign(n, 0);
    Shape out{xs[0], ws[0]};
    for (size_t i = 0; i < n; ++i)
      out.push_back(
          (xs[2 + i] + a.pads_begin[i] + a.pads_end[i] - a.dilations[i] * (ws[2 + i] - 1) - 1) /
              a.strides[i] +
          1);
    return prim(LinearAttrs{a}, {x, w}, out, g.value(x).dtype);
  }
  std::string matmul(const std::string& a, const std::string& b) {
    Shape out = shape(a);
    const Shape& bs = shape(b);
    for (size_t i = 0; i + 2 < out.size(); ++i) out[i] = std::max(out[i], bs[i]);
    out.back() = bs.back();
    return prim(LinearAttrs{MatMulAttrs{}}, {a, b}, out, g.value(a).dtype);
  }
  std::string ew(S op, const std::string& x) {
    return prim(ElementwiseAttrs{op, {Operand{0, 0}}}, {x}, shape(x), g.value(x).dtype);
  }
  std::string ew(S op, const std::string& a, const std::string& b) {
    if (a == b) return prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{0, 0}}}, {a}, shape(a));
    return prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {a, b}, shape(a));
  }
  std::string ew(S op, const std::string& x, double imm) {
    return prim(ElementwiseAttrs{op, {Operand{0, 0}, Operand{-1, imm}}}, {x}, shape(x));
  }
  std::string ew(S op, double imm, const std::string& x) {
    return prim(ElementwiseAttrs{op, {Operand{-1, imm}, Operand{0, 0}}}, {x}, shape(x));
  }
  std::string broadcast(const std::string& x, const Shape& to) {
    return prim(BroadcastAttrs{}, {x}, to);
  }
  std::string reshape(const std::string& x, const Shape& to) {
    return prim(LayoutAttrs{layout::Reshape{}}, {x}, to);
  }
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm) {
    Shape to;
    for (int64_t d : perm) to.push_back(shape(x)[d]);
    return prim(LayoutAttrs{layout::Transpose{perm}}, {x}, to);
  }
  // y + bias broadcast per channel (dim 1), as fission emits a Conv bias.
  std::string channel_bias(const std::string& y, bool constant_bias = true) {
    Shape per(shape(y).size(), 1);
    per[1] = shape(y)[1];
    const std::string b = constant_bias ? constant(per) : input(per);
    return ew(S::kAdd, y, broadcast(b, shape(y)));
  }
  // 0.5 x (1 + erf(x / sqrt 2)), as fission emits Gelu.
  std::string gelu(const std::string& x) {
    const std::string inner = ew(S::kErf, ew(S::kMul, x, M_SQRT1_2));
    return ew(S::kMul, ew(S::kMul, x, 0.5), ew(S::kAdd, inner, 1.0));
  }
  std::string hard_swish(const std::string& x) {
    const std::string lin = ew(S::kAdd, ew(S::kMul, x, 1.0 / 6.0), 0.5);
    return ew(S::kMul, x, ew(S::kMax, ew(S::kMin, lin, 1.0), 0.0));
  }
};

// Runs the candidate through oneDNN (the given layout) and through the interpreter; the
// relative L2 error of the written tensor.
// With `native`, the kernel is built for the tensors' native layouts and run through
// run_plain() (reorders around the same primitive).
double relative_error(const PrimGraph& g, const KernelDag& dag, const Candidate& c,
                      onednn::ConvLayout layout, std::mt19937& rng, std::string* impl,
                      const TensorLayouts* native = nullptr, bool bf16 = false) {
  const std::vector<std::string> reads = kernel_reads(g, dag, c), writes = kernel_writes(g, dag, c);
  std::map<std::string, Tensor> values;
  std::uniform_real_distribution<double> u(-1, 1);
  for (const std::string& r : reads) {
    if (const Tensor* k = g.constant(r)) {
      values[r] = *k;
      continue;
    }
    Tensor x(DType::kFloat32, g.value(r).shape);
    for (int64_t i = 0; i < x.numel(); ++i) set_element(x, i, u(rng));
    values[r] = x;
  }
  for (int v : c.members) {
    const Primitive& p = g.prims[dag.prim[v]];
    std::vector<const Tensor*> in;
    for (const std::string& i : p.inputs) in.push_back(&values.at(i));
    values[p.output()] = run_primitive(g, p, in).at(0);
  }
  std::vector<const void*> in;
  for (const std::string& r : reads) in.push_back(values.at(r).bytes());
  const Tensor& want = values.at(writes.at(0));
  std::vector<float> got(want.numel(), -7.0f);
  void* out[] = {got.data()};
  auto kernel =
      onednn::make_kernel(g, dag, c, layout, impl, native ? *native : TensorLayouts{}, bf16);
  EXPECT_EQ(kernel->schedule(), "onednn");
  if (native)
    kernel->run_plain(in.data(), out);
  else
    kernel->run(in.data(), out);
  const float* ref = reinterpret_cast<const float*>(want.bytes());
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

// Every accepted candidate matches the interpreter with both layouts, and in its native
// layouts when it has any; the candidate of all members (the whole epilogue chain) is
// accepted, or refused. Returns how many were accepted.
// `native_count`, when given, counts the candidates checked in native layouts. bf16: the
// kernels compute in bf16, within kBf16Tolerance; *largest gets the largest error seen.
// Candidates oneDNN computes with Winograd (onednn_winograd_supports) are checked with
// that algorithm too, and counted in `winograd_count` when given.
int check_graph(PrimGraph g, const std::string& label, bool whole_accepted = true,
                int* native_count = nullptr, bool bf16 = false, double* largest = nullptr,
                int* winograd_count = nullptr) {
  const double tolerance = bf16 ? kBf16Tolerance : 1e-4;
  if (g.outputs.empty()) g.outputs = {g.prims.back().output()};
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions options;
  options.max_size = 32;
  std::mt19937 rng(11);
  int accepted = 0;
  bool whole = false;
  for (const Candidate& c : enumerate_candidates(dag, options)) {
    if (!onednn_supports(g, dag, c)) continue;
    ++accepted;
    whole = whole || static_cast<int>(c.members.size()) == dag.size();
    std::string members;
    for (int v : c.members) members += g.prims[dag.prim[v]].name + " ";
    for (auto layout : {onednn::ConvLayout::kPlain, onednn::ConvLayout::kBlocked}) {
      std::string impl;
      const double e = relative_error(g, dag, c, layout, rng, &impl, nullptr, bf16);
      if (largest) *largest = std::max(*largest, e);
      EXPECT_LT(e, tolerance) << label << ": candidate { " << members << "} with " << impl;
    }
    if (!bf16 && onednn_winograd_supports(g, dag, c)) {
      if (winograd_count) ++*winograd_count;
      std::string impl;
      const double e = relative_error(g, dag, c, onednn::ConvLayout::kWinograd, rng, &impl);
      EXPECT_LT(e, tolerance) << label << ": candidate { " << members << "} with " << impl;
      EXPECT_NE(impl.find("wino"), std::string::npos) << label << ": " << impl;
    }
    const TensorLayouts native = onednn_native_layouts(g, dag, c, bf16);
    if (native.empty()) continue;
    if (native_count) ++*native_count;
    std::string impl, layouts;
    for (const auto& [t, l] : native) {
      layouts += t + ":" + l + " ";
      EXPECT_EQ(has_bf16_suffix(l), bf16) << label << ": " << t << " in layout " << l;
    }
    const double e =
        relative_error(g, dag, c, onednn::ConvLayout::kAuto, rng, &impl, &native, bf16);
    if (largest) *largest = std::max(*largest, e);
    EXPECT_LT(e, tolerance) << label << ": candidate { " << members << "} in layouts " << layouts
                            << "with " << impl;
  }
  std::vector<int> all(dag.size());
  for (int v = 0; v < dag.size(); ++v) all[v] = v;
  std::string why;
  onednn::plan_kernel(g, dag, make_candidate(dag, all), &why);
  EXPECT_EQ(whole, whole_accepted) << label << ": the whole chain: " << why;
  return accepted;
}

// oneDNN's Winograd convolutions (kOnednnWinograd): offered for 3x3 stride-1 dense
// convolutions with eltwise epilogues and a residual add (the sum post-op), within the
// float32 tolerance of the interpreter; not offered for strided, 1x1 or grouped ones, nor
// in bf16.
TEST(Onednn, WinogradConvolutionsMatchTheInterpreterWhereOffered) {
  // residual 1: relu(conv + bias) + r; 2: relu(conv + bias + r), a basic block's end.
  // How many candidates Winograd takes (each checked against the interpreter), and
  // whether it takes the whole chain.
  auto winograd = [](ConvAttrs a, const Shape& w, int residual = 0) {
    Builder b;
    const std::string x = b.input({1, 32, 14, 14});
    std::string y = b.channel_bias(b.conv(x, b.constant(w), a));
    if (residual == 2) y = b.ew(S::kAdd, b.input(b.shape(y)), y);
    y = b.ew(S::kRelu, y);
    if (residual == 1) y = b.ew(S::kAdd, y, b.input(b.shape(y)));
    b.g.outputs = {y};
    int count = 0;
    check_graph(b.g, "winograd", true, nullptr, false, nullptr, &count);
    const KernelDag dag = kernel_dag_of(b.g);
    std::vector<int> all(dag.size());
    for (int v = 0; v < dag.size(); ++v) all[v] = v;
    return std::make_pair(count, onednn_winograd_supports(b.g, dag, make_candidate(dag, all)));
  };
  const ConvAttrs pad1{1, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  if (winograd(pad1, {32, 32, 3, 3}).first == 0)
    GTEST_SKIP() << "this CPU's oneDNN offers no Winograd convolution (it needs AVX-512)";
  EXPECT_TRUE(winograd(pad1, {32, 32, 3, 3}).second);  // conv + bias + relu
  // The residual add as the sum post-op, after or before the relu.
  EXPECT_TRUE(winograd(pad1, {32, 32, 3, 3}, 1).second);
  EXPECT_TRUE(winograd(pad1, {32, 32, 3, 3}, 2).second);
  EXPECT_EQ(winograd(ConvAttrs{1, {2, 2}, {1, 1}, {1, 1}, {1, 1}}, {32, 32, 3, 3}).first, 0);
  EXPECT_EQ(winograd(ConvAttrs{}, {32, 32, 1, 1}).first, 0);
  EXPECT_EQ(winograd(ConvAttrs{4, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, {32, 8, 3, 3}).first, 0);
  {
    // Sides stored channels last, which Winograd does not write (as a writer that keeps
    // tensors blocked may give it): its dst is reordered into the stored layout.
    Builder b;
    const std::string x = b.input({1, 64, 35, 35});
    const std::string y =
        b.ew(S::kRelu, b.channel_bias(b.conv(x, b.constant({96, 64, 3, 3}), pad1)));
    b.g.outputs = {y};
    const KernelDag dag = kernel_dag_of(b.g);
    std::vector<int> all(dag.size());
    for (int v = 0; v < dag.size(); ++v) all[v] = v;
    const Candidate c = make_candidate(dag, all);
    ASSERT_TRUE(onednn_winograd_supports(b.g, dag, c));
    const TensorLayouts channels_last{{x, "acdb"}, {y, "acdb"}};
    std::mt19937 rng(3);
    std::string impl;
    EXPECT_LT(
        relative_error(b.g, dag, c, onednn::ConvLayout::kWinograd, rng, &impl, &channels_last),
        1e-4)
        << impl;
    EXPECT_NE(impl.find("wino"), std::string::npos) << impl;
  }
  Builder b;
  b.conv(b.input({1, 32, 14, 14}), b.constant({32, 32, 3, 3}), pad1);
  b.g.outputs = {b.g.prims.back().output()};
  const KernelDag dag = kernel_dag_of(b.g);
  EXPECT_THROW(onednn::make_kernel(b.g, dag, make_candidate(dag, {0}),
                                   onednn::ConvLayout::kWinograd, nullptr, {}, true),
               Error);
}

// The layout policy (kAuto, blocked_is_faster): a pointwise convolution, grouped or not,
// runs as GEMMs on plain tensors (blocked, its reorders transpose the whole tensor twice);
// a grouped 3x3 one runs blocked. The blocked primitive stays on offer (kBlocked, which
// the profile measures as onednn:blocked where the convolution has native layouts).
TEST(Onednn, GroupedPointwiseConvolutionsRunOnPlainTensorsUnlessAskedBlocked) {
  auto implementation = [](const Shape& w, ConvAttrs a, onednn::ConvLayout layout) {
    Builder b;
    b.g.outputs = {b.channel_bias(b.conv(b.input({1, 64, 8, 16}), b.constant(w), a))};
    const KernelDag dag = kernel_dag_of(b.g);
    std::vector<int> all(dag.size());
    for (int v = 0; v < dag.size(); ++v) all[v] = v;
    std::mt19937 rng(5);
    std::string impl;
    EXPECT_LT(relative_error(b.g, dag, make_candidate(dag, all), layout, rng, &impl), 1e-4);
    return impl;
  };
  const ConvAttrs grouped{4, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  const ConvAttrs pad1{4, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  EXPECT_NE(implementation({64, 16, 1, 1}, grouped, onednn::ConvLayout::kAuto).find("gemm"),
            std::string::npos);
  EXPECT_NE(implementation({64, 64, 1, 1}, ConvAttrs{1, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
                           onednn::ConvLayout::kAuto)
                .find("gemm"),
            std::string::npos);
  EXPECT_EQ(implementation({64, 16, 1, 1}, grouped, onednn::ConvLayout::kBlocked).find("gemm"),
            std::string::npos);
  EXPECT_EQ(implementation({64, 16, 3, 3}, pad1, onednn::ConvLayout::kAuto).find("gemm"),
            std::string::npos);
}

// A kernel built on one thread and run on another, as a parallel schedule runs the second
// kernel of a pair on a thread of the OpenMP team: oneDNN's own scratchpad of a Winograd
// convolution belongs to the thread that built it (a thread_local one), so kora hands each
// primitive the executing thread's (user mode). Run on a new thread, the result equals the
// one on the building thread, bit for bit.
TEST(Onednn, AKernelBuiltOnOneThreadRunsOnAnother) {
  const ConvAttrs pad1{1, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  for (const onednn::ConvLayout layout :
       {onednn::ConvLayout::kWinograd, onednn::ConvLayout::kAuto}) {
    Builder b;
    const std::string x = b.input({1, 64, 28, 28});
    const std::string y =
        b.ew(S::kRelu, b.channel_bias(b.conv(x, b.constant({64, 64, 3, 3}), pad1)));
    b.g.outputs = {y};
    const KernelDag dag = kernel_dag_of(b.g);
    std::vector<int> all(dag.size());
    for (int v = 0; v < dag.size(); ++v) all[v] = v;
    const Candidate c = make_candidate(dag, all);
    if (layout == onednn::ConvLayout::kWinograd && !onednn_winograd_supports(b.g, dag, c)) continue;
    std::string impl;
    auto kernel = onednn::make_kernel(b.g, dag, c, layout, &impl, {});
    std::vector<std::vector<float>> values;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<const void*> in;
    for (const std::string& r : kernel_reads(b.g, dag, c)) {
      if (const Tensor* k = b.g.constant(r)) {
        in.push_back(k->bytes());
        continue;
      }
      values.emplace_back(static_cast<size_t>(numel(b.g.value(r).shape)));
      for (float& v : values.back()) v = u(rng);
      in.push_back(values.back().data());
    }
    const size_t n = static_cast<size_t>(numel(b.g.value(y).shape));
    std::vector<float> here(n, -7.0f), there(n, -7.0f);
    void* out_here[] = {here.data()};
    void* out_there[] = {there.data()};
    kernel->run(in.data(), out_here);
    std::thread other([&] { kernel->run(in.data(), out_there); });
    other.join();
    EXPECT_EQ(std::memcmp(here.data(), there.data(), n * sizeof(float)), 0) << impl;
  }
}

TEST(Onednn, ConvolutionsMatchTheInterpreter) {
  {
    Builder b;  // plain 3x3, pad 1, bias, relu
    const std::string y = b.conv(b.input({2, 8, 10, 10}), b.constant({16, 8, 3, 3}),
                                 ConvAttrs{1, {}, {}, {1, 1}, {1, 1}});
    b.ew(S::kRelu, b.channel_bias(y));
    EXPECT_GE(check_graph(b.g, "conv3x3 bias relu"), 4);
  }
  {
    Builder b;  // grouped, strided, asymmetric pads, bias, clip (Relu6)
    const std::string y = b.conv(b.input({1, 8, 11, 9}), b.constant({12, 4, 3, 3}),
                                 ConvAttrs{2, {2, 2}, {1, 1}, {0, 1}, {2, 1}});
    b.ew(S::kMin, b.ew(S::kMax, b.channel_bias(y), 0.0), 6.0);
    check_graph(b.g, "grouped strided padded clip");
  }
  {
    Builder b;  // depthwise, dilated, clip(-0.5, 0.25), sigmoid
    const std::string y = b.conv(b.input({2, 8, 12, 12}), b.constant({8, 1, 3, 3}),
                                 ConvAttrs{8, {1, 1}, {2, 3}, {2, 3}, {2, 3}});
    b.ew(S::kSigmoid, b.ew(S::kMin, b.ew(S::kMax, y, -0.5), 0.25));
    check_graph(b.g, "depthwise dilated sigmoid");
  }
  {
    Builder b;  // 1x1 + bias + residual (either operand order) + relu
    const std::string x = b.input({1, 16, 7, 7});
    const std::string y = b.conv(x, b.constant({16, 16, 1, 1}), ConvAttrs{});
    const std::string r = b.ew(S::kAdd, b.input({1, 16, 7, 7}), b.channel_bias(y));
    b.ew(S::kRelu, b.ew(S::kAdd, r, x));
    check_graph(b.g, "1x1 residual relu");
  }
  {
    Builder b;  // stem-like 7x7/2 with 3 channels, per-channel scale (mul), swish
    const std::string y = b.conv(b.input({1, 3, 20, 20}), b.constant({8, 3, 7, 7}),
                                 ConvAttrs{1, {2, 2}, {1, 1}, {3, 3}, {3, 3}});
    Shape per{1, 8, 1, 1};
    const std::string s = b.ew(S::kMul, y, b.broadcast(b.constant(per), b.shape(y)));
    b.ew(S::kMul, s, b.ew(S::kSigmoid, s));
    check_graph(b.g, "stem scale swish");
  }
  {
    Builder b;  // hardswish, then c - x and x / c
    const std::string y = b.conv(b.input({1, 4, 6, 6}), b.constant({8, 4, 3, 3}),
                                 ConvAttrs{1, {}, {}, {1, 1}, {1, 1}});
    b.ew(S::kDiv, b.ew(S::kSub, 0.5, b.hard_swish(y)), 3.0);
    check_graph(b.g, "hardswish sub div");
  }
  {
    Builder b;  // runtime weights and bias, tanh
    const std::string y = b.conv(b.input({2, 4, 9, 9}), b.input({6, 4, 3, 3}),
                                 ConvAttrs{1, {1, 2}, {1, 1}, {1, 0}, {0, 1}});
    b.ew(S::kTanh, b.channel_bias(y, false));
    check_graph(b.g, "runtime weights tanh");
  }
  {
    Builder b;  // 1-D convolution, sub of a broadcast tensor, max with a full tensor
    const std::string y =
        b.conv(b.input({2, 4, 17}), b.constant({6, 2, 3}), ConvAttrs{2, {2}, {2}, {1}, {2}});
    const std::string s = b.ew(S::kSub, y, b.broadcast(b.input({1, 1, b.shape(y)[2]}), b.shape(y)));
    b.ew(S::kMax, b.input(b.shape(y)), s);
    check_graph(b.g, "conv1d sub max");
  }
  {
    Builder b;  // 3-D convolution, bias, abs
    const std::string y = b.conv(b.input({1, 3, 6, 7, 5}), b.constant({4, 3, 2, 3, 3}),
                                 ConvAttrs{1, {1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 1, 1}});
    b.ew(S::kAbs, b.channel_bias(y));
    check_graph(b.g, "conv3d abs");
  }
}

// Why this CPU has no bf16 convolution but oneDNN's reference one ("" when it has one).
std::string no_bf16_convolution() {
  Builder b;
  b.g.outputs = {b.conv(b.input({1, 16, 8, 8}), b.constant({16, 16, 3, 3}),
                        ConvAttrs{1, {}, {}, {1, 1}, {1, 1}})};
  const KernelDag dag = kernel_dag_of(b.g);
  try {
    onednn::make_kernel(b.g, dag, make_candidate(dag, {0}), onednn::ConvLayout::kBlocked, nullptr,
                        {}, true);
    return "";
  } catch (const Error& e) {
    return std::string("no bf16 convolution on this CPU: ") + e.what();
  }
}

// Two 3x3 convolutions sharing a tensor in their native layout (bf16: a bfloat16 one):
// the first writes it into a buffer of the float32 tensor's size, the second reads it.
// Returns the relative L2 error of the chain's output against the interpreter; checks
// that the shared tensor really is laid out (not y's plain float32 bytes) and, for bf16,
// that it takes the first half of the buffer only.
double shared_native_tensor_error(bool bf16) {
  Builder b;
  const std::string x = b.input({1, 16, 10, 10});
  const std::string y = b.ew(
      S::kRelu,
      b.channel_bias(b.conv(x, b.constant({16, 16, 3, 3}), ConvAttrs{1, {}, {}, {1, 1}, {1, 1}})));
  const std::string z = b.ew(
      S::kTanh,
      b.channel_bias(b.conv(y, b.constant({16, 16, 3, 3}), ConvAttrs{1, {}, {}, {1, 1}, {1, 1}})));
  b.g.outputs = {y, z};
  const KernelDag dag = kernel_dag_of(b.g);
  std::vector<int> first, second;
  for (int v = 0; v < dag.size(); ++v) (v < 4 ? first : second).push_back(v);
  const Candidate a = make_candidate(dag, first), c = make_candidate(dag, second);
  EXPECT_EQ(kernel_writes(b.g, dag, a), std::vector<std::string>{y});
  const TensorLayouts la = onednn_native_layouts(b.g, dag, a, bf16);
  const TensorLayouts lc = onednn_native_layouts(b.g, dag, c, bf16);
  std::string seen;
  for (const auto* l : {&la, &lc})
    for (const auto& [t, name] : *l) seen += t + ":" + name + " ";
  if (!la.count(y) || !lc.count(y)) {
    ADD_FAILURE() << "no native layout for the shared tensor: " << seen;
    return 1;
  }
  EXPECT_EQ(la.at(y), lc.at(y));
  EXPECT_EQ(has_bf16_suffix(la.at(y)), bf16) << la.at(y);
  TensorLayouts shared{{y, la.at(y)}};  // x and z stay plain
  const std::string schedule = bf16 ? std::string(kOnednnNative) + kBf16 : kOnednnNative;
  auto ka = make_onednn_kernel(b.g, dag, a, shared, schedule);
  auto kc = make_onednn_kernel(b.g, dag, c, shared, schedule);

  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  Tensor xv(DType::kFloat32, b.shape(x));
  for (int64_t i = 0; i < xv.numel(); ++i) set_element(xv, i, normal(rng));
  constexpr float kUntouched = 12345.0f;
  std::vector<float> laid(static_cast<size_t>(numel(b.shape(y))), kUntouched);
  std::vector<float> got(static_cast<size_t>(numel(b.shape(z))), 0.0f);
  std::vector<const void*> in_a;
  for (const std::string& r : kernel_reads(b.g, dag, a))
    in_a.push_back(r == x ? xv.bytes() : b.g.constant(r)->bytes());
  void* out_a[] = {laid.data()};
  ka->run(in_a.data(), out_a);
  std::vector<const void*> in_c;
  for (const std::string& r : kernel_reads(b.g, dag, c))
    in_c.push_back(r == y ? static_cast<const void*>(laid.data())
                          : static_cast<const void*>(b.g.constant(r)->bytes()));
  void* out_c[] = {got.data()};
  kc->run(in_c.data(), out_c);

  const std::map<std::string, Tensor> want = interpret(b.g, {{x, xv}});
  const float* ref = reinterpret_cast<const float*>(want.at(z).bytes());
  double err = 0, norm = 0, moved = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[i];
    err += (got[i] - r) * (got[i] - r);
    norm += r * r;
  }
  const float* yv = reinterpret_cast<const float*>(want.at(y).bytes());
  for (size_t i = 0; i < laid.size() / (bf16 ? 2 : 1); ++i) moved += std::abs(laid[i] - yv[i]);
  EXPECT_GT(moved, 0) << "layout " << la.at(y) << " left the tensor plain";
  if (bf16) {  // bfloat16: the second half of the float32 buffer is not written
    for (size_t i = laid.size() / 2; i < laid.size(); ++i)
      EXPECT_EQ(laid[i], kUntouched) << "element " << i << " in layout " << la.at(y);
  }
  return std::sqrt(err / norm);
}

// Convolutions whose channels fill oneDNN's blocks have native blocked layouts on any
// x86-64 oneDNN runs its jit kernels on; each such candidate computes the interpreter's
// values through run_plain(). Then two kernels share a tensor in that layout: the first
// writes it blocked into a buffer of the plain size, the second reads it blocked, and the
// chain's output matches the interpreter. (oneDNN 2.6's blocked jit convolutions take no
// full-shape post-op operand: such candidates fall back to its gemm path, not native.)
TEST(Onednn, NativeLayoutsMatchTheInterpreter) {
  int native = 0;
  {
    Builder b;  // 3x3 + bias + relu, then 1x1 + bias + residual
    const std::string x = b.input({1, 16, 9, 9});
    const std::string y =
        b.ew(S::kRelu, b.channel_bias(b.conv(x, b.constant({16, 16, 3, 3}),
                                             ConvAttrs{1, {}, {}, {1, 1}, {1, 1}})));
    b.ew(S::kAdd, b.channel_bias(b.conv(y, b.constant({16, 16, 1, 1}), ConvAttrs{})), y);
    check_graph(b.g, "native 3x3 then 1x1 residual", false, &native);
  }
  {
    Builder b;  // depthwise 3x3/2 + clip
    const std::string y = b.conv(b.input({1, 32, 12, 12}), b.constant({32, 1, 3, 3}),
                                 ConvAttrs{32, {2, 2}, {1, 1}, {1, 1}, {1, 1}});
    b.ew(S::kMin, b.ew(S::kMax, b.channel_bias(y), 0.0), 6.0);
    check_graph(b.g, "native depthwise clip", true, &native);
  }
  if (native == 0) GTEST_SKIP() << "oneDNN has no blocked jit convolution on this CPU";
  EXPECT_LT(shared_native_tensor_error(false), 1e-4);
}

// Two convolutions computing in bf16 keep the tensor between them in a bfloat16 native
// layout: it takes half its float32 buffer, and the chain's output is within the bf16
// tolerance of the interpreter. Skipped where oneDNN has only its reference bf16
// implementation.
TEST(Onednn, Bf16NativeLayoutsKeepActivationsInBfloat16) {
  if (const std::string why = no_bf16_convolution(); !why.empty()) GTEST_SKIP() << why;
  const double e = shared_native_tensor_error(true);
  EXPECT_LT(e, kBf16Tolerance);
  EXPECT_GT(e, 1e-5) << "computed as exactly as float32";
}

TEST(Onednn, MatmulsMatchTheInterpreter) {
  {
    Builder b;  // 2-D, constant B, bias, gelu
    const std::string y = b.matmul(b.input({16, 32}), b.constant({32, 24}));
    b.gelu(b.ew(S::kAdd, y, b.broadcast(b.constant({1, 24}), {16, 24})));
    EXPECT_GE(check_graph(b.g, "matmul bias gelu"), 3);
  }
  {
    Builder b;  // bias then a*x+b (gemm-based matmul folds scales: bias must stay before it)
    const std::string y = b.matmul(b.input({7, 9}), b.constant({9, 5}));
    const std::string z = b.ew(S::kAdd, y, b.broadcast(b.input({1, 5}), {7, 5}));
    b.ew(S::kRelu, b.ew(S::kSub, b.ew(S::kMul, z, 3.0), 0.5));
    check_graph(b.g, "matmul bias linear");
  }
  {
    Builder b;  // batched with broadcast batch dims, runtime B, scalar sub, swish
    const std::string y = b.matmul(b.input({2, 3, 5, 16}), b.input({1, 3, 16, 8}));
    const std::string s = b.ew(S::kSub, y, 0.25);
    b.ew(S::kMul, b.ew(S::kSigmoid, s), s);
    check_graph(b.g, "broadcast batch swish");
  }
  {
    Builder b;  // batched constant B, per-column mul, reshape adding a unit dim, bias-like add
    const std::string y = b.matmul(b.input({4, 6, 8}), b.constant({4, 8, 10}));
    const std::string m = b.ew(S::kMul, y, b.broadcast(b.constant({1, 1, 10}), {4, 6, 10}));
    const std::string r = b.reshape(m, {4, 1, 6, 10});
    b.ew(S::kTanh, b.ew(S::kAdd, b.broadcast(b.input({4, 1, 1, 10}), {4, 1, 6, 10}), r));
    check_graph(b.g, "batched reshape");
  }
  {
    Builder b;  // the PyTorch Gelu pattern: x * (1 + erf(x / sqrt 2)) * 0.5, after a
                // reshaped input (a view) and a reshaped bias
    const std::string a = b.reshape(b.input({1, 12, 16}), {12, 16});
    const std::string y = b.matmul(a, b.constant({16, 20}));
    const std::string bias = b.reshape(b.input({20}), {1, 20});
    const std::string x = b.ew(S::kAdd, y, b.broadcast(bias, {12, 20}));
    const std::string e = b.ew(S::kAdd, b.ew(S::kErf, b.ew(S::kDiv, x, M_SQRT2)), 1.0);
    b.ew(S::kMul, b.ew(S::kMul, x, e), 0.5);
    check_graph(b.g, "pytorch gelu");
  }
  {
    Builder b;  // rank 4 with both batch dims broadcast, square, min, div by a full tensor
    const std::string y = b.matmul(b.input({2, 1, 4, 8}), b.input({1, 3, 8, 5}));
    const std::string q = b.ew(S::kMul, y, y);
    b.ew(S::kDiv, b.ew(S::kMin, q, 2.0), b.input({2, 3, 4, 5}));
    check_graph(b.g, "rank4 square div");
  }
}

TEST(Onednn, MatmulsReadTransposedViews) {
  {
    Builder b;  // attention scores: Q [2,3,6,4] and K^T [2,3,4,6] as views of [2,6,12]
    const std::string q = b.transpose(b.reshape(b.input({2, 6, 12}), {2, 6, 3, 4}), {0, 2, 1, 3});
    const std::string k = b.transpose(b.reshape(b.input({2, 6, 12}), {2, 6, 3, 4}), {0, 2, 3, 1});
    const std::string s = b.ew(S::kMul, b.matmul(q, k), 0.5);
    b.ew(S::kAdd, s, b.broadcast(b.input({2, 1, 1, 6}), b.shape(s)));  // attention mask
    EXPECT_GE(check_graph(b.g, "attention scores"), 10);
  }
  {
    Builder b;  // scaled dot-product attention as exporters write it: q and K^T each scaled
                // by d^-1/4 on their way (a product and a quotient), the product scaled
    const std::string q =
        b.ew(S::kMul, b.transpose(b.reshape(b.input({2, 6, 12}), {2, 6, 3, 4}), {0, 2, 1, 3}), 0.5);
    const std::string k =
        b.ew(S::kDiv, b.transpose(b.reshape(b.input({2, 6, 12}), {2, 6, 3, 4}), {0, 2, 3, 1}), 4.0);
    const std::string s = b.matmul(q, k);
    b.ew(S::kAdd, s, b.broadcast(b.input({2, 1, 1, 6}), b.shape(s)));  // attention mask
    EXPECT_GE(check_graph(b.g, "scaled attention scores"), 10);
  }
  {
    Builder b;  // a scaled source and a bias: the product scaled before the bias is added
    const std::string y = b.matmul(b.ew(S::kMul, b.input({7, 9}), 3.0), b.constant({9, 5}));
    b.ew(S::kAdd, y, b.broadcast(b.constant({1, 5}), {7, 5}));
    check_graph(b.g, "scaled source bias");
  }
  {
    Builder b;  // A^T x B^T, 2-D, constant B (reordered from its transposed view)
    const std::string a = b.transpose(b.input({9, 5}), {1, 0});
    const std::string w = b.transpose(b.constant({7, 9}), {1, 0});
    b.ew(S::kRelu, b.matmul(a, w));
    check_graph(b.g, "transposed 2-D");
  }
  {
    Builder b;  // a reshape after a transpose moves data: not a view
    const std::string t = b.transpose(b.input({4, 6}), {1, 0});
    b.g.outputs = {b.matmul(b.reshape(t, {4, 6}), b.input({6, 3}))};
    const KernelDag dag = kernel_dag_of(b.g);
    EXPECT_FALSE(onednn_supports(b.g, dag, make_candidate(dag, {0, 1, 2})));
    EXPECT_TRUE(onednn_supports(b.g, dag, make_candidate(dag, {2})));
  }
  {
    Builder b;  // convolutions take no transposed view
    const std::string x = b.transpose(b.input({1, 5, 5, 4}), {0, 3, 1, 2});
    b.g.outputs = {b.conv(x, b.constant({4, 4, 1, 1}), ConvAttrs{})};
    const KernelDag dag = kernel_dag_of(b.g);
    EXPECT_FALSE(onednn_supports(b.g, dag, make_candidate(dag, {0, 1})));
  }
}

// bf16 (TargetOptions::bf16): convolutions (blocked, pointwise with a residual, depthwise,
// in native layouts) and matmuls (constant weights, runtime weights read through a
// transposed view; in native layouts too, their activations bfloat16 in their own order)
// within kBf16Tolerance, and visibly not float32 (the rounding of their inputs shows).
// Skipped where oneDNN has only its reference bf16 implementation.
TEST(Onednn, Bf16KernelsMatchTheInterpreterWithinTheirTolerance) {
  if (const std::string why = no_bf16_convolution(); !why.empty()) GTEST_SKIP() << why;
  double largest = 0;
  int native = 0, matmul_native = 0;
  {
    Builder b;  // 3x3, pad 1, bias, relu
    const std::string y = b.conv(b.input({2, 16, 10, 10}), b.constant({32, 16, 3, 3}),
                                 ConvAttrs{1, {}, {}, {1, 1}, {1, 1}});
    b.ew(S::kRelu, b.channel_bias(y));
    EXPECT_GE(check_graph(b.g, "bf16 conv3x3 bias relu", true, &native, true, &largest), 4);
  }
  {
    Builder b;  // 1x1 + bias + residual + relu
    const std::string x = b.input({1, 32, 7, 7});
    const std::string y = b.conv(x, b.constant({32, 32, 1, 1}), ConvAttrs{});
    b.ew(S::kRelu, b.ew(S::kAdd, b.channel_bias(y), x));
    check_graph(b.g, "bf16 1x1 residual relu", true, &native, true, &largest);
  }
  {
    Builder b;  // depthwise, strided
    const std::string y = b.conv(b.input({1, 16, 12, 12}), b.constant({16, 1, 3, 3}),
                                 ConvAttrs{16, {2, 2}, {1, 1}, {1, 1}, {1, 1}});
    b.ew(S::kRelu, y);
    check_graph(b.g, "bf16 depthwise", true, &native, true, &largest);
  }
  {
    Builder b;  // 2-D, constant B, bias, gelu
    const std::string y = b.matmul(b.input({16, 64}), b.constant({64, 24}));
    b.gelu(b.ew(S::kAdd, y, b.broadcast(b.constant({1, 24}), {16, 24})));
    check_graph(b.g, "bf16 matmul bias gelu", true, &matmul_native, true, &largest);
  }
  {
    Builder b;  // attention scores: runtime K^T read through a transposed view
    const std::string q = b.transpose(b.reshape(b.input({2, 6, 32}), {2, 6, 2, 16}), {0, 2, 1, 3});
    const std::string k = b.transpose(b.reshape(b.input({2, 6, 32}), {2, 6, 2, 16}), {0, 2, 3, 1});
    b.ew(S::kMul, b.matmul(q, k), 0.25);
    check_graph(b.g, "bf16 attention scores", true, &matmul_native, true, &largest);
    // The matmul alone reads q and K^T stored as bfloat16 in their own order (a view of the
    // inputs' reshapes and transposes is no longer a kernel read: the members' are) and
    // writes its scores so.
    const KernelDag dag = kernel_dag_of(b.g);
    int matmul = -1;
    for (int v = 0; v < dag.size(); ++v)
      if (b.g.prims[dag.prim[v]].kind() == PrimKind::kLinear) matmul = v;
    const Candidate alone = make_candidate(dag, {matmul});
    const TensorLayouts layouts = onednn_native_layouts(b.g, dag, alone, true);
    const std::vector<std::string> reads = kernel_reads(b.g, dag, alone);
    ASSERT_EQ(reads.size(), 2u);
    EXPECT_EQ(layouts.at(reads[0]), "abcd+bf16");
    EXPECT_EQ(layouts.at(reads[1]), "abcd+bf16");
    EXPECT_EQ(layouts.at(kernel_writes(b.g, dag, alone).at(0)), "abcd+bf16");
    EXPECT_TRUE(onednn_native_layouts(b.g, dag, alone, false).empty());  // float32: none
  }
  // bf16 matmuls have native layouts: their activations bfloat16 in their own order.
  EXPECT_GE(matmul_native, 2);
  EXPECT_GE(native, 1);
  EXPECT_GT(largest, 1e-5) << "bf16 kernels computed as exactly as float32";
}

TEST(Onednn, EveryEltwiseMatchesTheInterpreter) {
  Builder b;  // a long chain of one-operand functions and immediates after a matmul
  std::string y = b.matmul(b.input({6, 10}), b.constant({10, 7}));
  y = b.ew(S::kMax, y, -0.3);  // max without a min after it
  y = b.ew(S::kMul, y, 2.0);
  y = b.ew(S::kMin, b.ew(S::kMax, y, -0.5), 0.5);  // a clip
  y = b.ew(S::kTanh, y);
  y = b.ew(S::kMin, b.ew(S::kMax, y, -0.2), 0.2);  // another clip, other bounds
  y = b.ew(S::kAdd, y, 1.5);
  y = b.ew(S::kSqrt, b.ew(S::kAbs, y));
  y = b.ew(S::kLog, b.ew(S::kAdd, y, 0.25));
  y = b.ew(S::kExp, b.ew(S::kNeg, y));
  y = b.ew(S::kSoftplus, b.ew(S::kIdentity, y));
  y = b.ew(S::kReciprocal, y);
  y = b.ew(S::kSub, y, b.broadcast(b.constant({6, 1}), {6, 7}));  // per-row operand
  b.ew(S::kRelu, y);
  check_graph(b.g, "eltwise chain");

  Builder q;  // round (half to even on both sides; random data hits no halves)
  q.ew(S::kRound, q.ew(S::kMul, q.matmul(q.input({6, 10}), q.constant({10, 7})), 8.0));
  check_graph(q.g, "round");

  Builder p;  // pow twice with other exponents: oneDNN 2.6 would use the first for both
  const std::string m = p.matmul(p.input({6, 10}), p.constant({10, 7}));
  const std::string r = p.ew(S::kRsqrt, p.ew(S::kAdd, p.ew(S::kAbs, m), 0.5));
  p.ew(S::kTanh, p.ew(S::kPow, r, 1.5));
  check_graph(p.g, "rsqrt pow", false);
}

TEST(Onednn, RefusesWhatItCannotFuse) {
  Builder b;
  const std::string x = b.input({1, 4, 6, 6});
  const std::string pre = b.ew(S::kRelu, x);                                 // 0
  const std::string y = b.conv(pre, b.constant({4, 4, 3, 3}), ConvAttrs{});  // 1
  const std::string r = b.ew(S::kRelu, y);                                   // 2
  const std::string s = b.ew(S::kSigmoid, r);                                // 3
  const std::string e = b.ew(S::kErf, s);                                    // 4
  b.g.outputs = {r, e};
  const KernelDag dag = kernel_dag_of(b.g);
  EXPECT_TRUE(onednn_supports(b.g, dag, make_candidate(dag, {1, 2})));
  EXPECT_TRUE(onednn_supports(b.g, dag, make_candidate(dag, {1})));
  EXPECT_FALSE(onednn_supports(b.g, dag, make_candidate(dag, {0, 1})));     // prologue
  EXPECT_FALSE(onednn_supports(b.g, dag, make_candidate(dag, {1, 2, 3})));  // r is written
  EXPECT_FALSE(onednn_supports(b.g, dag, make_candidate(dag, {3, 4})));     // no linear
  EXPECT_THROW(make_onednn_kernel(b.g, dag, make_candidate(dag, {0, 1})), Error);

  Builder i;  // non-float data
  const std::string m =
      i.matmul(i.input({4, 4}, DType::kFloat64), i.input({4, 4}, DType::kFloat64));
  i.g.outputs = {m};
  const KernelDag idag = kernel_dag_of(i.g);
  EXPECT_FALSE(onednn_supports(i.g, idag, make_candidate(idag, {0})));

  Builder f;  // erf has no post-op form
  f.g.outputs = {f.ew(S::kErf, f.matmul(f.input({4, 4}), f.constant({4, 4})))};
  const KernelDag fdag = kernel_dag_of(f.g);
  EXPECT_FALSE(onednn_supports(f.g, fdag, make_candidate(fdag, {0, 1})));
  EXPECT_TRUE(onednn_supports(f.g, fdag, make_candidate(fdag, {0})));
}

}  // namespace
