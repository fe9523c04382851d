// Generated kernels over sides stored in oneDNN's layouts (src/cpu/layout_view.h,
// src/base/layout_map.h) against the interpreter: a squeeze-excitation (global mean,
// sigmoid, broadcast scale), a max pool window, a channel concat, channel slices and a
// nearest resize (a gather per axis), every
// candidate with wide activations taken with all of them channels last, all in blocks of 8
// channels, and only the first in blocks of 4; inputs stored so, outputs compared as stored; the
// view takes the candidate's arguments; the kernels offered views are relabelled into the
// stored order, with no transpose (pools: channels last only, the windows taken channels last).
#include "cpu/layout_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <utility>

#include "cpu/codegen_harness.h"
#include "kora/error.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

// `logical` stored as `m` says: split (the same bytes), then permuted.
Tensor stored(const Tensor& logical, const LayoutMap& m) {
  const Shape s = m.split_shape(logical.shape());
  const Shape out = m.stored_shape(logical.shape());
  Tensor r(logical.dtype(), out);
  std::vector<int64_t> stride(s.size(), 1);  // per split dim, in the stored tensor
  for (size_t d = 0; d < s.size(); ++d)
    for (size_t e = d + 1; e < s.size(); ++e) stride[m.perm[d]] *= out[e];
  const float* src = reinterpret_cast<const float*>(logical.bytes());
  float* dst = reinterpret_cast<float*>(r.mutable_bytes());
  for (int64_t i = 0; i < logical.numel(); ++i) {
    int64_t rest = i, at = 0;
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
      at += (rest % s[d]) * stride[d];
      rest /= s[d];
    }
    dst[at] = src[i];
  }
  return r;
}

// Round-to-nearest-even float -> bfloat16 bits, a NaN kept quiet: the brute-force
// reference of kora_bf16 (and of oneDNN's conversion).
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t lower = u & 0xffff, upper = u >> 16;
  const bool up = lower > 0x8000 || (lower == 0x8000 && (upper & 1));
  return static_cast<uint16_t>(upper + up);
}
float bf16_value(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// A float32 tensor as the bfloat16 elements a "+bf16" layout stores (in a float32
// tensor's buffer, the first half used), and back.
template <typename From, typename To, typename Convert>
Tensor converted(const Tensor& t, Convert convert) {
  Tensor r(DType::kFloat32, t.shape());
  const From* src = reinterpret_cast<const From*>(t.bytes());
  To* dst = reinterpret_cast<To*>(r.mutable_bytes());
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = convert(src[i]);
  return r;
}
Tensor to_bf16(const Tensor& t) { return converted<float, uint16_t>(t, bf16_bits); }
Tensor from_bf16(const Tensor& t) { return converted<uint16_t, float>(t, bf16_value); }

// A generated kernel on views of a candidate, with the layouts it was generated for.
struct ViewCase {
  Candidate c;
  TensorLayouts layouts;
  GeneratedKernel kernel;
};

// Every candidate that takes views, generated with all of them channels last in bfloat16
// (symbols PREFIX0, PREFIX1, ...).
std::vector<ViewCase> bfloat16_view_cases(const PrimGraph& g, const KernelDag& dag,
                                          const std::string& prefix) {
  std::vector<ViewCase> cases;
  for (const Candidate& c : enumerate_candidates(dag, CandidateOptions{})) {
    const std::vector<std::string> views = layout_view_sides(g, dag, c, true);
    if (views.empty()) continue;
    TensorLayouts layouts;
    for (const std::string& t : views) layouts[t] = "acdb+bf16";
    const LayoutView view = layout_view(g, dag, c, layouts);
    cases.push_back(
        {c, layouts,
         generate_cpu_kernel(view.graph, view.dag, view.candidate,
                             prefix + std::to_string(cases.size()), {}, view.bfloat16)});
  }
  return cases;
}

// A view case run on random inputs: the interpreter's value of every tensor of the
// candidate (logical, float32) and what the kernel wrote, in its writes' order. `bf16`:
// the sides in layouts are bfloat16, their inputs rounded so before both run.
struct ViewRun {
  std::map<std::string, Tensor> values;
  std::vector<Tensor> outputs;
  Tensor stored_value(const PrimGraph& g, const ViewCase& k, const std::string& t) const {
    return k.layouts.count(t) ? stored(values.at(t), *layout_map(k.layouts.at(t), g.value(t).shape))
                              : values.at(t);
  }
};
ViewRun run_view_case(const PrimGraph& g, const KernelDag& dag, const ViewCase& k,
                      const CompileResult& lib, std::mt19937& rng, bool bf16) {
  ViewRun run;
  for (const std::string& r : k.kernel.reads) {
    Tensor t = kora_codegen_test::random_tensor(g.value(r).dtype, g.value(r).shape, rng);
    run.values[r] = bf16 && k.layouts.count(r) ? from_bf16(to_bf16(t)) : t;
  }
  for (int v : k.c.members) {
    const Primitive& p = g.prims[dag.prim[v]];
    std::vector<const Tensor*> in;
    for (const std::string& i : p.inputs) in.push_back(&run.values.at(i));
    run.values[p.output()] = run_primitive(g, p, in).at(0);
  }
  std::vector<Tensor> inputs;
  std::vector<const void*> in;
  for (const std::string& r : k.kernel.reads) {
    const Tensor t = run.stored_value(g, k, r);
    inputs.push_back(bf16 && k.layouts.count(r) ? to_bf16(t) : t);
  }
  for (const Tensor& t : inputs) in.push_back(t.bytes());
  std::vector<void*> out;
  for (const std::string& t : k.kernel.writes)
    run.outputs.emplace_back(DType::kFloat32, g.value(t).shape);
  for (Tensor& t : run.outputs) out.push_back(t.mutable_bytes());
  using Fn = void (*)(const void* const*, void* const*);
  reinterpret_cast<Fn>(lib.library->symbol(k.kernel.symbol))(in.data(), out.data());
  return run;
}

// Every case of `source` (float32 sides) compiled and run: each output, stored in its
// layout, matches the interpreter's value.
void expect_float32_cases_match(const PrimGraph& g, const KernelDag& dag,
                                const std::vector<ViewCase>& cases, const std::string& source,
                                std::mt19937& rng) {
  kora_test::TempDir dir;
  const CompileResult lib =
      compile_shared(source, kora_codegen_test::quick_compile_options(dir.file("kernels")));
  for (const ViewCase& k : cases) {
    const ViewRun run = run_view_case(g, dag, k, lib, rng, false);
    for (size_t i = 0; i < k.kernel.writes.size(); ++i) {
      const std::string& t = k.kernel.writes[i];
      EXPECT_EQ(kora_codegen_test::compare(run.stored_value(g, k, t), run.outputs[i].bytes()), "")
          << kernel_name(g, dag, k.c) << ", output " << t << "\n"
          << k.kernel.source;
    }
  }
}

// Squeeze-excitation of x [N, C, H, W]: mean over H, W; sigmoid; x scaled by it.
std::string squeeze_excitation(GraphBuilder& b, const std::string& x, const Shape& shape) {
  const Shape narrow = {shape[0], shape[1], 1, 1};
  const std::string mean =
      b.prim(ReduceAttrs{ReduceOp::kMean, {2, 3}}, {x}, DType::kFloat32, narrow);
  const std::string gate = b.prim(ElementwiseAttrs{ScalarOp::kSigmoid, {Operand{0, 0}}}, {mean},
                                  DType::kFloat32, narrow);
  const std::string wide = b.prim(BroadcastAttrs{}, {gate}, DType::kFloat32, shape);
  return b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}}, {x, wide},
                DType::kFloat32, shape);
}

// Every case run from `lib` on bfloat16 sides: each output stored in a layout within one
// bfloat16 rounding of the interpreter's value (stored so), a plain one exactly. `what`
// names the case in a failure.
void expect_bfloat16_cases_match(const PrimGraph& g, const KernelDag& dag,
                                 const std::vector<ViewCase>& cases, const CompileResult& lib,
                                 std::mt19937& rng, const std::string& what = "") {
  for (const ViewCase& k : cases) {
    const ViewRun run = run_view_case(g, dag, k, lib, rng, true);
    for (size_t i = 0; i < k.kernel.writes.size(); ++i) {
      const std::string& t = k.kernel.writes[i];
      if (!k.layouts.count(t)) {  // a narrow output ([1, C, 1, 1]): float32, plain
        EXPECT_EQ(kora_codegen_test::compare(run.values.at(t), run.outputs[i].bytes()), "")
            << kernel_name(g, dag, k.c) << what << ", output " << t;
        continue;
      }
      const Tensor want = run.stored_value(g, k, t);
      const Tensor got = from_bf16(run.outputs[i]);
      const float* a = reinterpret_cast<const float*>(want.bytes());
      const float* b16 = reinterpret_cast<const float*>(got.bytes());
      for (int64_t e = 0; e < want.numel(); ++e)
        ASSERT_LE(std::fabs(a[e] - b16[e]), std::fabs(a[e]) * 0x1p-7f + 1e-30f)
            << kernel_name(g, dag, k.c) << what << ", output " << t << " element " << e << "\n"
            << k.kernel.source;
    }
  }
}

// The same for the cases' source (the prelude and every case's kernel), compiled first.
void expect_bfloat16_source_matches(const PrimGraph& g, const KernelDag& dag,
                                    const std::vector<ViewCase>& cases, const std::string& source,
                                    std::mt19937& rng, const std::string& what = "") {
  kora_test::TempDir dir;
  const CompileResult lib =
      compile_shared(source, kora_codegen_test::quick_compile_options(dir.file("kernels")));
  expect_bfloat16_cases_match(g, dag, cases, lib, rng, what);
}

// A 3x3 max pool of x [N, C, H, W], pad 1, as a window, a max over it and a reshape.
// The fill -inf is ONNX MaxPool's (the reduce's identity: the pooling forms of codegen);
// another one takes the generic path.
std::string max_pool_3x3(GraphBuilder& b, const std::string& x, const Shape& shape, int64_t stride,
                         double fill = -1e30) {
  layout::Window w;
  w.strides = {stride, stride};
  w.dilations = {1, 1};
  w.pads_begin = {1, 1};
  w.fill = fill;
  const int64_t oh = (shape[2] + 2 - 3) / stride + 1, ow = (shape[3] + 2 - 3) / stride + 1;
  const std::string windows =
      b.prim(LayoutAttrs{w}, {x}, DType::kFloat32, {shape[0], shape[1], oh, ow, 3, 3});
  const std::string pooled_6d = b.prim(ReduceAttrs{ReduceOp::kMax, {4, 5}}, {windows},
                                       DType::kFloat32, {shape[0], shape[1], oh, ow, 1, 1});
  return b.prim(LayoutAttrs{layout::Reshape{}}, {pooled_6d}, DType::kFloat32,
                {shape[0], shape[1], oh, ow});
}

TEST(LayoutView, OneDnnTagsAsMaps) {
  const Shape x = {2, 16, 5, 6};
  const std::optional<LayoutMap> nhwc = layout_map("acdb", x);
  ASSERT_TRUE(nhwc);
  EXPECT_EQ(nhwc->split, -1);
  EXPECT_EQ(nhwc->perm, (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(nhwc->stored_shape(x), (Shape{2, 5, 6, 16}));
  const std::optional<LayoutMap> blocked = layout_map("aBcd8b", x);
  ASSERT_TRUE(blocked);
  EXPECT_EQ(blocked->split, 1);
  EXPECT_EQ(blocked->block, 8);
  EXPECT_EQ(blocked->split_shape(x), (Shape{2, 2, 8, 5, 6}));
  EXPECT_EQ(blocked->stored_shape(x), (Shape{2, 2, 5, 6, 8}));
  EXPECT_EQ(layout_map("aBc16b", {1, 32, 7})->stored_shape({1, 32, 7}), (Shape{1, 2, 7, 16}));
  EXPECT_EQ(layout_map("acb", {1, 4, 7})->stored_shape({1, 4, 7}), (Shape{1, 7, 4}));
  EXPECT_FALSE(layout_map("abcd", x));                 // plain
  EXPECT_FALSE(layout_map("aBcd16b", {2, 24, 5, 6}));  // padded: 24 is not whole blocks
  EXPECT_FALSE(layout_map("ABcd16b16a", x));           // two blocked dims
  EXPECT_EQ(layout_map("acdb+bf16", x)->perm, layout_map("acdb", x)->perm);  // bfloat16
  EXPECT_FALSE(layout_map("acdb", {1, 4, 7}));                               // another rank
  EXPECT_FALSE(layout_map("aadb", x));
  EXPECT_FALSE(layout_map("aBcd8c", x));  // the block of another dim
}

TEST(LayoutView, KernelsOnChannelsLastSidesMatchTheInterpreter) {
  std::mt19937 rng(3);
  GraphBuilder b(rng);
  const Shape shape = {1, 32, 10, 10};
  const std::string x0 = b.input(DType::kFloat32, shape);
  // A bias from a constant, broadcast (a kernel of it alone reads nothing but constants).
  const std::string bias = b.input(DType::kFloat32, {1, 32, 1, 1}, true);
  const std::string wide_bias = b.prim(BroadcastAttrs{}, {bias}, DType::kFloat32, shape);
  const std::string x = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                               {x0, wide_bias}, DType::kFloat32, shape);
  // Squeeze-excitation, then a 3x3 max pool of stride 1.
  const std::string se = squeeze_excitation(b, x, shape);
  const std::string pooled = max_pool_3x3(b, se, shape, 1);
  // A channel concat of the pool and the excitation.
  const std::string cat = b.prim(LayoutAttrs{layout::Concat{1, {0, 32}}}, {pooled, se},
                                 DType::kFloat32, {1, 64, 10, 10});
  // Channel slices: one of whole blocks of 8, one not (blocks of 8 read it transposed).
  std::vector<std::string> outputs = {cat};
  for (const auto& [start, end] : {std::pair<int64_t, int64_t>{8, 24}, {4, 12}}) {
    const std::string part = b.prim(LayoutAttrs{layout::Slice{{0, start, 0, 0}, {1, 1, 1, 1}}},
                                    {se}, DType::kFloat32, {1, end - start, 10, 10});
    outputs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {part},
                             DType::kFloat32, {1, end - start, 10, 10}));
  }
  // A nearest resize of the excitation by 2 (a gather per axis, as fission makes it), then
  // its exponential.
  std::vector<int64_t> twice;
  for (int64_t i = 0; i < 20; ++i) twice.push_back(i / 2);
  const std::string tall =
      b.prim(LayoutAttrs{layout::Gather{2, twice}}, {se}, DType::kFloat32, {1, 32, 20, 10});
  const std::string resized =
      b.prim(LayoutAttrs{layout::Gather{3, twice}}, {tall}, DType::kFloat32, {1, 32, 20, 20});
  outputs.push_back(b.prim(ElementwiseAttrs{ScalarOp::kExp, {Operand{0, 0}}}, {resized},
                           DType::kFloat32, {1, 32, 20, 20}));
  b.g.outputs = outputs;
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions co;
  co.max_size = 4;
  std::string source = cpu_codegen_prelude();
  std::vector<ViewCase> cases;
  int relabelled = 0, offered = 0, pools = 0, gathers = 0;
  for (const Candidate& c : enumerate_candidates(dag, co)) {
    // Every wide activation it touches (also of kernels offered no views: windows and
    // concats read through transposes).
    std::vector<std::string> sides;
    for (const auto& list : {kernel_reads(g, dag, c), kernel_writes(g, dag, c)})
      for (const std::string& t : list) {
        int wide = 0;
        for (int64_t d : g.value(t).shape) wide += d > 1;
        if (!g.constant(t) && wide > 1 && g.value(t).shape.size() == 4) sides.push_back(t);
      }
    if (sides.empty() || !cpu_codegen_supports(g, dag, c)) continue;
    const std::vector<std::string> views = layout_view_sides(g, dag, c);
    offered += !views.empty();
    if (!views.empty()) {
      EXPECT_EQ(views, sides) << kernel_name(g, dag, c);
      pools += views_channels_last_only(g, dag, c);
      for (int v : c.members) {
        const auto* l = std::get_if<LayoutAttrs>(&g.prims[dag.prim[v]].attrs);
        gathers += l && std::holds_alternative<layout::Gather>(*l);
      }
    }
    // All sides channels last; all in blocks of 8 channels; the first in blocks of 4.
    for (const auto& [n, layout] : std::vector<std::pair<size_t, std::string>>{
             {sides.size(), "acdb"}, {sides.size(), "aBcd8b"}, {1, "aBcd4b"}}) {
      TensorLayouts layouts;
      for (size_t i = 0; i < n; ++i) layouts[sides[i]] = layout;
      const LayoutView view = layout_view(g, dag, c, layouts);
      // Offered views on all their sides channels last: relabelled, no transpose (in
      // blocks too, but for the slice of 4 channels at 4).
      if (!views.empty() && n == sides.size() && layout == "acdb") {
        for (const Primitive& p : view.graph.prims) {
          EXPECT_NE(p.origin, "layout view");
          const auto* l = std::get_if<LayoutAttrs>(&p.attrs);
          const auto* w = l ? std::get_if<layout::Window>(l) : nullptr;
          if (w) {
            EXPECT_TRUE(w->channels_last);
          }
        }
        ++relabelled;
      }
      ViewCase k{c, layouts,
                 generate_cpu_kernel(view.graph, view.dag, view.candidate,
                                     "view" + std::to_string(cases.size()))};
      EXPECT_EQ(k.kernel.reads, kernel_reads(g, dag, c));
      EXPECT_EQ(k.kernel.writes, kernel_writes(g, dag, c));
      source += k.kernel.source;
      cases.push_back(std::move(k));
    }
  }
  ASSERT_GE(cases.size(), 40u);
  EXPECT_GE(offered, 5);
  EXPECT_GE(pools, 2);    // the window with its max (and its reshape, and the scale before)
  EXPECT_GE(gathers, 4);  // each gather alone, both together, with the exponential
  EXPECT_EQ(relabelled, offered);
  expect_float32_cases_match(g, dag, cases, source, rng);
}

// Pools between convolutions in oneDNN's float32 channel blocks: a bias-and-ReLU then a
// 3x3 max pool (stride 2 and stride 1, -inf fill: codegen's pooling forms) and a 2x2 sum
// pool, over 32 channels. Every pooling candidate takes blocks of 8 and 16
// (pool_view_channel_blocks); on sides all "aBcd8b" or all "aBcd16b" its kernel is the
// pool relabelled with the blocks as a batch and the block as the channels (no transpose,
// windows channels last; over blocks of 16, the 16-lane code), and matches the
// interpreter. Over 24 channels only blocks of 8 divide; a batch of 2, none.
TEST(LayoutView, PoolsInChannelBlocksTakeTheBlocksAsABatch) {
  std::mt19937 rng(8);
  GraphBuilder b(rng);
  const Shape shape = {1, 32, 9, 9};
  const std::string x = b.input(DType::kFloat32, shape);
  const std::string bias = b.input(DType::kFloat32, {1, 32, 1, 1}, true);
  const std::string wide_bias = b.prim(BroadcastAttrs{}, {bias}, DType::kFloat32, shape);
  const std::string biased =
      b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {x, wide_bias},
             DType::kFloat32, shape);
  const std::string relu =
      b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {biased}, DType::kFloat32, shape);
  std::vector<std::string> outputs = {max_pool_3x3(b, relu, shape, 2, -INFINITY),
                                      max_pool_3x3(b, x, shape, 1, -INFINITY)};
  layout::Window two{{2, 2}, {1, 1}, {0, 0}, 0.0};
  const std::string windows = b.prim(LayoutAttrs{two}, {x}, DType::kFloat32, {1, 32, 4, 4, 2, 2});
  const std::string summed =
      b.prim(ReduceAttrs{ReduceOp::kSum, {4, 5}}, {windows}, DType::kFloat32, {1, 32, 4, 4, 1, 1});
  outputs.push_back(
      b.prim(LayoutAttrs{layout::Reshape{}}, {summed}, DType::kFloat32, {1, 32, 4, 4}));
  b.g.outputs = outputs;
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions co;
  co.max_size = 4;
  std::string source = cpu_codegen_prelude();
  std::vector<ViewCase> cases;
  int lanes = 0;
  for (const Candidate& c : enumerate_candidates(dag, co)) {
    const std::vector<std::string> views = layout_view_sides(g, dag, c);
    if (views.empty() || !relabels_channels_last(g, dag, c)) continue;
    EXPECT_EQ(pool_view_channel_blocks(g, dag, c), (std::vector<int64_t>{8, 16}))
        << kernel_name(g, dag, c);
    for (const std::string layout : {"aBcd8b", "aBcd16b"}) {
      TensorLayouts layouts;
      for (const std::string& t : views) layouts[t] = layout;
      const LayoutView view = layout_view(g, dag, c, layouts);
      int windows_seen = 0;
      for (const Primitive& p : view.graph.prims) {
        EXPECT_NE(p.origin, "layout view") << kernel_name(g, dag, c) << " in " << layout;
        const auto* l = std::get_if<LayoutAttrs>(&p.attrs);
        const auto* w = l ? std::get_if<layout::Window>(l) : nullptr;
        if (w) {
          EXPECT_TRUE(w->channels_last);
          ++windows_seen;
        }
      }
      EXPECT_EQ(windows_seen, 1);
      ViewCase k{c, layouts,
                 generate_cpu_kernel(view.graph, view.dag, view.candidate,
                                     "block_view" + std::to_string(cases.size()))};
      lanes += k.kernel.source.find("16_fold(") != std::string::npos;
      source += k.kernel.source;
      cases.push_back(std::move(k));
    }
  }
  ASSERT_GE(cases.size(), 6u);
  EXPECT_GE(lanes, 3);  // each pool reading memory in blocks of 16
  expect_float32_cases_match(g, dag, cases, source, rng);

  for (const Shape& other : {Shape{1, 24, 9, 9}, Shape{2, 32, 9, 9}}) {
    GraphBuilder o(rng);
    const std::string y = o.input(DType::kFloat32, other);
    o.g.outputs = {max_pool_3x3(o, y, other, 2, -INFINITY)};
    const KernelDag odag = kernel_dag_of(o.g);
    const Candidate pool = make_candidate(odag, {0, 1, 2});
    EXPECT_EQ(pool_view_channel_blocks(o.g, odag, pool),
              other[0] == 1 ? std::vector<int64_t>{8} : std::vector<int64_t>{})
        << shape_str(other);
  }
}

TEST(LayoutView, SidesAreTheWideActivationsAndReductionsKeepChannelsInnermost) {
  std::mt19937 rng(1);
  GraphBuilder b(rng);
  const std::string x = b.input(DType::kFloat32, {1, 4, 3, 3});
  const std::string mean =
      b.prim(ReduceAttrs{ReduceOp::kMean, {2, 3}}, {x}, DType::kFloat32, {1, 4, 1, 1});
  const std::string relu = b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {x},
                                  DType::kFloat32, {1, 4, 3, 3});
  b.g.outputs = {mean, relu};
  const KernelDag dag = kernel_dag_of(b.g);
  // The mean reads x (wide) and writes [1, 4, 1, 1] (stored alike in every layout).
  EXPECT_EQ(layout_view_sides(b.g, dag, make_candidate(dag, {0})), std::vector<std::string>{x});
  // The relu is layout-agnostic: it needs no view.
  EXPECT_TRUE(layout_view_sides(b.g, dag, make_candidate(dag, {1})).empty());
  // Channels last, the mean is relabelled: one member over [1, 3, 3, 4], reducing the
  // middle dims, the channels innermost; in channel blocks likewise over [1, 1, 3, 3, 4].
  LayoutView view = layout_view(b.g, dag, make_candidate(dag, {0}), {{x, "acdb"}});
  ASSERT_EQ(view.graph.prims.size(), 1u);
  EXPECT_EQ(std::get<ReduceAttrs>(view.graph.prims[0].attrs).axes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(view.graph.value(x).shape, (Shape{1, 3, 3, 4}));
  view = layout_view(b.g, dag, make_candidate(dag, {0}), {{x, "aBcd4b"}});
  ASSERT_EQ(view.graph.prims.size(), 1u);
  EXPECT_EQ(std::get<ReduceAttrs>(view.graph.prims[0].attrs).axes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(view.graph.value(x).shape, (Shape{1, 1, 3, 3, 4}));
  // A side in a layout generated code cannot read, or a tensor that is not a side.
  EXPECT_THROW(layout_view(b.g, dag, make_candidate(dag, {0}), {{x, "aBcd16b"}}), Error);  // padded
  EXPECT_THROW(layout_view(b.g, dag, make_candidate(dag, {0}), {{relu, "acdb"}}), Error);
}

// --bf16: the sides a oneDNN convolution stores as bfloat16 ("acdb+bf16", "aBcd8b+bf16"),
// read and written by generated code through its views, agnostic kernels included. Every
// candidate offered views on a squeeze-excitation, a residual add with ReLU and a max
// pool (16 lanes at a time where it reads memory), all sides in each bfloat16 layout:
// inputs stored as bfloat16, each output within one bfloat16 rounding of the
// interpreter's result on those inputs.
TEST(LayoutView, KernelsOnBfloat16SidesMatchTheInterpreterToOneRounding) {
  std::mt19937 rng(5);
  GraphBuilder b(rng);
  const Shape shape = {1, 16, 6, 6};
  const std::string x = b.input(DType::kFloat32, shape);
  const std::string skip = b.input(DType::kFloat32, shape);
  const std::string se = squeeze_excitation(b, x, shape);
  const std::string sum = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {se, skip}, DType::kFloat32, shape);
  const std::string relu =
      b.prim(ElementwiseAttrs{ScalarOp::kRelu, {Operand{0, 0}}}, {sum}, DType::kFloat32, shape);
  const std::string pooled = max_pool_3x3(b, relu, shape, 2, -INFINITY);
  b.g.outputs = {pooled};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions co;
  co.max_size = 4;
  std::string source = cpu_codegen_prelude();
  std::vector<ViewCase> cases;
  int agnostic = 0;
  for (const Candidate& c : enumerate_candidates(dag, co)) {
    const std::vector<std::string> views = layout_view_sides(g, dag, c, true);
    if (views.empty()) continue;
    EXPECT_TRUE(layout_view_sides(g, dag, c) == views || layout_agnostic(g, dag, c));
    agnostic += layout_agnostic(g, dag, c);
    for (const std::string layout : {"acdb+bf16", "aBcd8b+bf16"}) {
      if (layout != std::string("acdb+bf16") && views_channels_last_only(g, dag, c)) continue;
      TensorLayouts layouts;
      for (const std::string& t : views) layouts[t] = layout;
      const LayoutView view = layout_view(g, dag, c, layouts);
      EXPECT_EQ(view.bfloat16, std::set<std::string>(views.begin(), views.end()));
      for (const Primitive& p : view.graph.prims) EXPECT_NE(p.origin, "layout view");
      ViewCase k{
          c, layouts,
          generate_cpu_kernel(view.graph, view.dag, view.candidate,
                              "bf16_view" + std::to_string(cases.size()), {}, view.bfloat16)};
      source += k.kernel.source;
      cases.push_back(std::move(k));
    }
  }
  EXPECT_GE(agnostic, 2);  // the add, the relu, the two
  ASSERT_GE(cases.size(), 10u);
  int lanes = 0;  // the pool over 16 channels read from memory: 16 lanes (KORA_VEC16)
  for (const ViewCase& k : cases)
    lanes += k.kernel.source.find("kora_max16_fold(") != std::string::npos;
  EXPECT_GE(lanes, 1);
  // The conversion alone, exactly: a copy of plain float32 into a bfloat16 side (ties to
  // even both ways, NaN, infinities, the largest float rounding to infinity, subnormals:
  // rounded, or zero where the hardware converts).
  int relu_node = 0;
  while (g.prims[dag.prim[relu_node]].output() != relu) ++relu_node;
  const Candidate copy_kernel = make_candidate(dag, {relu_node});
  const LayoutView copy = layout_view(g, dag, copy_kernel, {{relu, "acdb+bf16"}});
  source +=
      generate_cpu_kernel(copy.graph, copy.dag, copy.candidate, "bf16_copy", {}, copy.bfloat16)
          .source;
  kora_test::TempDir dir;
  const CompileResult lib =
      compile_shared(source, kora_codegen_test::quick_compile_options(dir.file("kernels")));
  expect_bfloat16_cases_match(g, dag, cases, lib, rng);
  if (HasFatalFailure()) return;
  // The copy: ReLU of non-negative values (and a NaN), the rounding checked bit for bit.
  std::vector<float> special = {1.0f,     0x1.01p0f, 0x1.03p0f, 0x1.00802p0f,  0x1.fffffep127f,
                                INFINITY, NAN,       0x1p-140f, 0x1.018p-130f, 3.14159265f,
                                0.0f};
  Tensor sum_in(DType::kFloat32, shape);
  float* s = reinterpret_cast<float*>(sum_in.mutable_bytes());
  for (int64_t e = 0; e < sum_in.numel(); ++e)
    s[e] = e < static_cast<int64_t>(special.size())
               ? special[e]
               : std::ldexp(1.0f + static_cast<float>(rng() % 65536) / 65536.0f,
                            static_cast<int>(rng() % 40) - 20);
  Tensor y(DType::kFloat32, shape);
  const void* copy_in[] = {sum_in.bytes()};
  void* copy_out[] = {y.mutable_bytes()};
  using Fn = void (*)(const void* const*, void* const*);
  reinterpret_cast<Fn>(lib.library->symbol("bf16_copy"))(copy_in, copy_out);
  const Tensor relu_of = run_primitive(g, g.prims[dag.prim[relu_node]], {&sum_in}).at(0);
  const Tensor want = stored(relu_of, *layout_map("acdb", shape));
  const float* wv = reinterpret_cast<const float*>(want.bytes());
  const uint16_t* yv = reinterpret_cast<const uint16_t*>(y.bytes());
  for (int64_t e = 0; e < want.numel(); ++e) {
    if (std::isnan(wv[e])) {
      EXPECT_TRUE(std::isnan(bf16_value(yv[e]))) << e;
    } else if (std::fpclassify(wv[e]) == FP_SUBNORMAL && yv[e] != bf16_bits(wv[e])) {
      // AVX512-BF16's conversion (kora_bf16_row) takes a subnormal float as zero.
      EXPECT_EQ(yv[e], std::signbit(wv[e]) ? 0x8000 : 0) << "element " << e << ": " << wv[e];
    } else {
      EXPECT_EQ(yv[e], bf16_bits(wv[e])) << "element " << e << ": " << wv[e];
    }
  }
}

// --bf16 rows of every kind of length: a per-channel scale and SiLU on x [1, C, 3, 5]
// stored channels last as bfloat16 (each row of C channels is the kernel's innermost
// loop), C of 8, C between 8 and 16 and C above 16 not a multiple of 16 (one chunk: the
// loop over C rounded down to 8 or 16, then one over its last 8 or 16 into a row of its
// own, both rows stored) and above a chunk of 256 (chunks, the last one partial); every
// candidate with views matches the interpreter to one bfloat16 rounding.
TEST(LayoutView, Bfloat16RowsOfEveryLengthMatchTheInterpreterToOneRounding) {
  std::mt19937 rng(9);
  int overlapped = 0, chunked = 0;
  for (int64_t channels : {8, 12, 24, 40, 120, 300}) {
    GraphBuilder b(rng);
    const Shape shape = {1, channels, 3, 5};
    const std::string x = b.input(DType::kFloat32, shape);
    const std::string scale = b.input(DType::kFloat32, {1, channels, 1, 1});
    const std::string wide = b.prim(BroadcastAttrs{}, {scale}, DType::kFloat32, shape);
    const std::string y = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}},
                                 {x, wide}, DType::kFloat32, shape);
    const std::string gate =
        b.prim(ElementwiseAttrs{ScalarOp::kSigmoid, {Operand{0, 0}}}, {y}, DType::kFloat32, shape);
    b.g.outputs = {b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}},
                          {y, gate}, DType::kFloat32, shape)};
    const PrimGraph& g = b.g;
    const KernelDag dag = kernel_dag_of(g);
    std::string source = cpu_codegen_prelude();
    const std::vector<ViewCase> cases = bfloat16_view_cases(g, dag, "rows");
    for (const ViewCase& k : cases) {
      const int64_t tail = channels > 16 ? 16 : 8;
      overlapped +=
          std::regex_search(
              k.kernel.source,
              std::regex("= \\(i[0-9]+ \\+ " + std::to_string(channels - tail) + "\\);")) &&
          k.kernel.source.find(" + 256, " + std::to_string(tail) + ");") != std::string::npos;
      chunked += k.kernel.source.find("+= 256)") != std::string::npos;
      source += k.kernel.source;
    }
    ASSERT_FALSE(cases.empty()) << "C = " << channels;
    expect_bfloat16_source_matches(g, dag, cases, source, rng, ", C = " + std::to_string(channels));
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(overlapped, 4);  // C = 12, 24, 40, 120
  EXPECT_GE(chunked, 1);     // C = 300
}

// A concat of channels stored last (a ghost module's, a dense block's), alone and with an
// add after it, on bfloat16 views: the parts' rows (24 and 12 channels: each a loop over
// its channels rounded down and one over its last ones) sit inside one parallel pass over
// the pixels, so each output row is written whole at once, and every candidate matches
// the interpreter to one rounding.
TEST(LayoutView, Bfloat16ConcatsOfChannelsWriteEachRowInOnePass) {
  std::mt19937 rng(13);
  GraphBuilder b(rng);
  const std::string x = b.input(DType::kFloat32, {1, 24, 32, 32});
  const std::string y = b.input(DType::kFloat32, {1, 12, 32, 32});
  const Shape shape = {1, 36, 32, 32};
  const std::string cat =
      b.prim(LayoutAttrs{layout::Concat{1, {0, 24}}}, {x, y}, DType::kFloat32, shape);
  const std::string z = b.input(DType::kFloat32, shape);
  b.g.outputs = {b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}}, {cat, z},
                        DType::kFloat32, shape)};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  std::string source = cpu_codegen_prelude();
  const std::vector<ViewCase> cases = bfloat16_view_cases(g, dag, "cat");
  int one_pass = 0;
  for (const ViewCase& k : cases) {
    const std::string& text = k.kernel.source;
    const bool holds_concat = std::any_of(k.c.members.begin(), k.c.members.end(), [&](int v) {
      return g.prims[dag.prim[v]].output() == cat;
    });
    if (holds_concat && k.layouts.size() == kernel_reads(g, dag, k.c).size() + 1) {  // all views
      size_t regions = 0;
      for (size_t at = text.find("omp parallel"); at != std::string::npos;
           at = text.find("omp parallel", at + 1))
        ++regions;
      EXPECT_EQ(regions, 1u) << text;
      one_pass += regions == 1 && text.find("+ 256, 16);") != std::string::npos &&
                  text.find("+ 256, 8);") != std::string::npos;
    }
    source += text;
  }
  ASSERT_FALSE(cases.empty());
  EXPECT_GE(one_pass, 1);
  expect_bfloat16_source_matches(g, dag, cases, source, rng);
}

// Global pools of one row, taken channels last (a SiLU and its squeeze-excitation mean,
// a global max; [1, 48, 40, 40]: no outer loop to run in parallel): the rows are reduced
// in parts run in parallel and combined in order, and a written SiLU is stored as it is
// reduced (its sigmoid computed once in the kernel, not again by a later phase; stored
// as bfloat16, through a row of floats). Every candidate on views, float32 and bfloat16,
// matches the interpreter.
TEST(LayoutView, GlobalPoolsOfOneRowReduceTheirRowsInParallelParts) {
  std::mt19937 rng(17);
  GraphBuilder b(rng);
  const Shape shape = {1, 48, 40, 40}, narrow = {1, 48, 1, 1};
  const std::string x0 = b.input(DType::kFloat32, shape);
  const std::string bias = b.input(DType::kFloat32, narrow, true);
  const std::string wide_bias = b.prim(BroadcastAttrs{}, {bias}, DType::kFloat32, shape);
  const std::string x = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                               {x0, wide_bias}, DType::kFloat32, shape);
  const std::string gate =
      b.prim(ElementwiseAttrs{ScalarOp::kSigmoid, {Operand{0, 0}}}, {x}, DType::kFloat32, shape);
  const std::string silu = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{1, 0}}},
                                  {x, gate}, DType::kFloat32, shape);
  const std::string mean =
      b.prim(ReduceAttrs{ReduceOp::kMean, {2, 3}}, {silu}, DType::kFloat32, narrow);
  const std::string peak =
      b.prim(ReduceAttrs{ReduceOp::kMax, {2, 3}}, {x}, DType::kFloat32, narrow);
  b.g.outputs = {silu, mean, peak};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  auto sigmoid_members = [&](const Candidate& c) {
    return static_cast<size_t>(std::count_if(c.members.begin(), c.members.end(), [&](int v) {
      return g.prims[dag.prim[v]].output() == gate;
    }));
  };
  auto occurrences = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  std::vector<ViewCase> cases;
  std::string source = cpu_codegen_prelude();
  int split = 0, stored_once = 0;
  for (const Candidate& c : enumerate_candidates(dag, CandidateOptions{})) {
    const std::vector<std::string> views = layout_view_sides(g, dag, c);
    if (views.empty()) continue;
    TensorLayouts layouts;
    for (const std::string& t : views) layouts[t] = "acdb";
    const LayoutView view = layout_view(g, dag, c, layouts);
    ViewCase k{c, layouts,
               generate_cpu_kernel(view.graph, view.dag, view.candidate,
                                   "pool" + std::to_string(cases.size()))};
    const std::string& text = k.kernel.source;
    const auto& w = k.kernel.writes;
    const bool reduces = std::find(w.begin(), w.end(), mean) != w.end() ||
                         std::find(w.begin(), w.end(), peak) != w.end();
    if (reduces) {
      EXPECT_NE(text.find("[16][48];"), std::string::npos) << text;  // 16 parts of 48 channels
      split += text.find("[16][48];") != std::string::npos;
    }
    if (std::find(w.begin(), w.end(), silu) != w.end() &&
        std::find(w.begin(), w.end(), mean) != w.end()) {
      const size_t sigmoids = occurrences(text, "kora_sigmoid(");
      EXPECT_EQ(sigmoids, sigmoid_members(c)) << text;
      stored_once += sigmoid_members(c) == 1 && sigmoids == 1;
    }
    source += text;
    cases.push_back(std::move(k));
  }
  EXPECT_GE(split, 3);
  EXPECT_GE(stored_once, 1);
  expect_float32_cases_match(g, dag, cases, source, rng);
  std::string bf16_source = cpu_codegen_prelude();
  const std::vector<ViewCase> bf16_cases = bfloat16_view_cases(g, dag, "pool_bf16_");
  int bf16_stored_once = 0;
  for (const ViewCase& k : bf16_cases) {
    const std::string& text = k.kernel.source;
    const auto& w = k.kernel.writes;
    if (std::find(w.begin(), w.end(), silu) != w.end() &&
        std::find(w.begin(), w.end(), mean) != w.end() && sigmoid_members(k.c) == 1) {
      EXPECT_EQ(occurrences(text, "kora_sigmoid("), 1u) << text;
      bf16_stored_once += occurrences(text, "kora_sigmoid(") == 1;
    }
    bf16_source += text;
  }
  ASSERT_FALSE(bf16_cases.empty());
  EXPECT_GE(bf16_stored_once, 1);
  expect_bfloat16_source_matches(g, dag, bf16_cases, bf16_source, rng);
}

// Transposes that move the channels last and back around a reduction over the channels,
// as timm's LayerNorm2d and Swin's permutes are (x [N, C, H, W] -> [N, H, W, C], x -
// mean(x) over C, -> [N, C, H, W]): every candidate holding a transpose is offered views
// on exactly the sides such a transpose reads or writes, channels last only, and a
// transpose by another permutation offers none. Each such kernel on those sides stored
// channels last, float32 and bfloat16, matches the interpreter (bfloat16: to one
// rounding of its output).
TEST(LayoutView, TransposesMovingChannelsLastTakeChannelsLastSides) {
  std::mt19937 rng(11);
  GraphBuilder b(rng);
  const Shape shape = {1, 16, 5, 6}, last = {1, 5, 6, 16};
  const std::string x = b.input(DType::kFloat32, shape);
  const std::string t =
      b.prim(LayoutAttrs{layout::Transpose{{0, 2, 3, 1}}}, {x}, DType::kFloat32, last);
  const std::string mean =
      b.prim(ReduceAttrs{ReduceOp::kMean, {3}}, {t}, DType::kFloat32, {1, 5, 6, 1});
  const std::string wide = b.prim(BroadcastAttrs{}, {mean}, DType::kFloat32, last);
  const std::string centred =
      b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{0, 0}, Operand{1, 0}}}, {t, wide},
             DType::kFloat32, last);
  const std::string y =
      b.prim(LayoutAttrs{layout::Transpose{{0, 3, 1, 2}}}, {centred}, DType::kFloat32, shape);
  const std::string other = b.input(DType::kFloat32, shape);  // H and W swapped: no views
  const std::string swapped =
      b.prim(LayoutAttrs{layout::Transpose{{0, 1, 3, 2}}}, {other}, DType::kFloat32, {1, 16, 6, 5});
  b.g.outputs = {y, swapped};
  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  CandidateOptions co;
  co.max_size = 5;
  std::string source = cpu_codegen_prelude();
  std::vector<std::pair<ViewCase, bool>> cases;  // and whether its sides are bfloat16
  int offered = 0;
  for (const Candidate& c : enumerate_candidates(dag, co)) {
    bool transposes = false, swaps = false;
    for (int v : c.members) {
      const auto* l = std::get_if<LayoutAttrs>(&g.prims[dag.prim[v]].attrs);
      const auto* tr = l ? std::get_if<layout::Transpose>(l) : nullptr;
      transposes = transposes || (tr && tr->perm != std::vector<int64_t>{0, 1, 3, 2});
      swaps = swaps || tr;
    }
    const std::vector<std::string> views = layout_view_sides(g, dag, c);
    if (!transposes) {
      if (swaps) {
        EXPECT_TRUE(views.empty()) << kernel_name(g, dag, c);
      }
      continue;
    }
    EXPECT_EQ(layout_view_sides(g, dag, c, true), views);
    std::vector<std::string> want;
    for (const std::string& r : kernel_reads(g, dag, c))
      if (r == x) want.push_back(x);
    for (const std::string& w : kernel_writes(g, dag, c))
      if (w == y) want.push_back(y);
    EXPECT_EQ(views, want) << kernel_name(g, dag, c);
    if (views.empty()) continue;
    ++offered;
    EXPECT_TRUE(views_channels_last_only(g, dag, c));
    for (const bool bf16 : {false, true}) {
      TensorLayouts layouts;
      for (const std::string& side : views) layouts[side] = bf16 ? "acdb+bf16" : "acdb";
      const LayoutView view = layout_view(g, dag, c, layouts);
      ViewCase k{
          c, layouts,
          generate_cpu_kernel(view.graph, view.dag, view.candidate,
                              "transposed" + std::to_string(cases.size()), {}, view.bfloat16)};
      source += k.kernel.source;
      cases.emplace_back(std::move(k), bf16);
    }
  }
  EXPECT_GE(offered, 6);
  kora_test::TempDir dir;
  const CompileResult lib =
      compile_shared(source, kora_codegen_test::quick_compile_options(dir.file("kernels")));
  for (const auto& [k, bf16] : cases) {
    const ViewRun run = run_view_case(g, dag, k, lib, rng, bf16);
    for (size_t i = 0; i < k.kernel.writes.size(); ++i) {
      const std::string& w = k.kernel.writes[i];
      const Tensor want = run.stored_value(g, k, w);
      if (!bf16 || !k.layouts.count(w)) {
        EXPECT_EQ(kora_codegen_test::compare(want, run.outputs[i].bytes()), "")
            << kernel_name(g, dag, k.c) << ", output " << w;
        continue;
      }
      const Tensor got = from_bf16(run.outputs[i]);
      const float* a = reinterpret_cast<const float*>(want.bytes());
      const float* r = reinterpret_cast<const float*>(got.bytes());
      for (int64_t e = 0; e < want.numel(); ++e)
        ASSERT_LE(std::fabs(a[e] - r[e]), std::fabs(a[e]) * 0x1p-7f + 1e-30f)
            << kernel_name(g, dag, k.c) << ", output " << w << " element " << e;
    }
  }
}

// Attention's head merge, [1, H, T, D] transposed to [1, T, H, D] and reshaped to
// [1, T, H D] (then a bias and a scale), and a merge of three dims ([1, 2, 3, T, D]
// transposed and reshaped to [1, T, 6 D]): every candidate matches the interpreter, float32 and
// with every side stored as bfloat16 in its own order (as bf16 matmuls read and write them), and
// the whole kernels loop over the merged dims: no coordinate divided (the loop over H D
// divided by D per element was a scalar gather, 15x the time of a copy).
TEST(LayoutView, HeadMergesLoopOverTheMergedDimsWithoutDividing) {
  std::mt19937 rng(17);
  GraphBuilder b(rng);
  const int64_t heads = 6, tokens = 10, depth = 32;
  const Shape merged = {1, tokens, heads * depth};
  const std::string x = b.input(DType::kFloat32, {1, heads, tokens, depth});
  const std::string t = b.prim(LayoutAttrs{layout::Transpose{{0, 2, 1, 3}}}, {x}, DType::kFloat32,
                               {1, tokens, heads, depth});
  const std::string r = b.prim(LayoutAttrs{layout::Reshape{}}, {t}, DType::kFloat32, merged);
  const std::string bias =
      b.prim(BroadcastAttrs{}, {b.input(DType::kFloat32, {1, 1, heads * depth}, true)},
             DType::kFloat32, merged);
  const std::string sum = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {r, bias}, DType::kFloat32, merged);
  const std::string y = b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 0.5}}},
                               {sum}, DType::kFloat32, merged);
  const std::string x2 = b.input(DType::kFloat32, {1, 2, 3, tokens, depth});
  const std::string t2 = b.prim(LayoutAttrs{layout::Transpose{{0, 3, 1, 2, 4}}}, {x2},
                                DType::kFloat32, {1, tokens, 2, 3, depth});
  const std::string y2 =
      b.prim(LayoutAttrs{layout::Reshape{}}, {t2}, DType::kFloat32, {1, tokens, 6 * depth});
  b.g.outputs = {y, y2};
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(b.g, 5, rng, stats);
  EXPECT_GE(stats.kernels, 10);

  const PrimGraph& g = b.g;
  const KernelDag dag = kernel_dag_of(g);
  std::string source = cpu_codegen_prelude();
  std::vector<ViewCase> cases;
  int merges = 0;
  for (const Candidate& c : enumerate_candidates(dag, CandidateOptions{})) {
    const std::vector<std::string> reads = kernel_reads(g, dag, c),
                                   writes = kernel_writes(g, dag, c);
    TensorLayouts layouts;
    for (const auto* sides : {&reads, &writes})
      for (const std::string& side : *sides)
        if (!g.constant(side)) layouts[side] = plain_layout(g.value(side).shape.size()) + "+bf16";
    const LayoutView view = layout_view(g, dag, c, layouts);
    ViewCase k{c, layouts,
               generate_cpu_kernel(view.graph, view.dag, view.candidate,
                                   "merge" + std::to_string(cases.size()), {}, view.bfloat16)};
    EXPECT_EQ(view.bfloat16.size(), layouts.size()) << kernel_name(g, dag, c);
    const bool whole = std::find(writes.begin(), writes.end(), y) != writes.end() &&
                       reads.front() == x && c.members.size() == 5;
    const bool whole2 = writes == std::vector<std::string>{y2} && c.members.size() == 2;
    if (whole || whole2) {
      const std::string f32 = generate_cpu_kernel(g, dag, c, "f32").source;
      for (const std::string* text : {&std::as_const(k.kernel.source), &f32})
        EXPECT_FALSE(std::regex_search(*text, std::regex(R"([/%] [0-9]+\))"))) << *text;
      EXPECT_NE(f32.find("< 32; ++"), std::string::npos) << f32;
      ++merges;
    }
    source += k.kernel.source;
    cases.push_back(std::move(k));
  }
  EXPECT_EQ(merges, 2);
  EXPECT_GE(cases.size(), 10u);
  expect_bfloat16_source_matches(g, dag, cases, source, rng);
}

}  // namespace
