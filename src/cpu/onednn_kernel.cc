// oneDNN library kernels (src/cpu/library.h): a candidate in; a kernel that runs
// one oneDNN matmul or convolution primitive with the candidate's epilogue as bias and
// post-ops out (what is accepted: src/cpu/onednn_plan.h).
//
// Everything oneDNN needs is made once, in the constructor: the primitive, its memory
// objects, and the weights reordered into the layout the primitive prefers. Weights that
// are graph constants are taken from graph.constants then, so run() ignores their `in`
// pointer (valid because constants are fixed when kernels are built); other weights are
// read through `in` (plain, or a matmul's strided view). The kernel keeps no reference
// to the graph. Convolutions take src and dst in blocked layouts chosen by oneDNN and
// reorder them from/to the plain NCHW tensors at the kernel boundary (ConvLayout::kBlocked;
// full-shape post-op operands are reordered in too), or run on the plain tensors (kPlain);
// kAuto picks by measured speed (blocked_is_faster). A tensor named in the kernel's
// TensorLayouts is stored in that blocked layout, so no reorder is made for it: an
// artifact keeps the tensors between two such convolutions blocked (src/emit/), and
// run_plain() reorders from and to plain tensors around the same primitive (the profile
// checks such a kernel that way). run() only binds pointers and executes; it is not
// reentrant (one kernel object per calling thread), and `out` must not alias any `in`.
//
// bf16 (a kernel built with `bf16`, an explicit option of the cpu target): the primitive
// reads its source and weights as bfloat16 (each reordered from the float32 tensor, the
// constant weights once) and accumulates in float32, post-ops included, writing float32;
// a convolution's tensors stored in a bfloat16 layout (its native layouts under bf16,
// onednn_native_layouts) are read and written as they are, so activations stay bfloat16
// between two such convolutions, and a residual add is the sum post-op (sums_residual); a
// matmul's source, runtime weights and destination stored as bfloat16 in their own order
// (its native layouts under bf16) likewise, read through the plan's strides.
// About 2x the float32 speed of dense convolutions and matmuls where the CPU has
// AVX512-BF16, at a relative error near 1e-3 per kernel.
//
// oneDNN 2.x (Debian's 2.6.3) and 3.x (Intel's PyPI wheel) differ here only in how a
// primitive descriptor is made (make_pd).
//
// Threads: Debian's oneDNN 2.6.3 uses the OpenMP runtime (cpu_runtime = OMP). Its direct
// (jit) convolutions keep the thread count omp_get_max_threads() had at construction,
// gemm-based ones follow the count at execution (measured: a conv built at 2 threads
// runs on 2 after omp_set_num_threads(1)), so build kernels after omp_set_num_threads()
// and rebuild them for another count.
//
// Scratchpads: oneDNN's own ("library" mode) gives Winograd and gemm-based
// convolutions a scratchpad of the thread that created the primitive (a thread_local
// "global" one; Debian's build has no DNNL_ENABLE_CONCURRENT_EXEC), so they must run on
// that thread; a parallel schedule runs kernels on other threads of the OpenMP team. So
// every primitive takes its scratchpad from the caller ("user" mode): the executing
// thread's buffer (thread_scratchpad), as large as the largest it has been asked for and
// shared by the primitives that thread runs one after another, as oneDNN's would be.
#include "cpu/onednn_kernel.h"

#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "base/layout_map.h"
#include "cpu/library.h"
#include "cpu/onednn_plan.h"
#include "kora/candidates.h"
#include "kora/error.h"

namespace kora {
namespace onednn {
namespace {

// The calling thread's scratchpads: slot 0 is the one a running plan's kernels share; the
// profile rotates through the others with its buffer copies (select_onednn_scratchpad).
struct Scratchpads {
  struct Buffer {
    void* p = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(p); }
  };
  Buffer slots[kScratchpadSlots];
  int slot = 0;
};
thread_local Scratchpads scratchpads;

// The calling thread's scratchpad of at least `bytes` (page-aligned, as oneDNN's own).
void* thread_scratchpad(size_t bytes) {
  Scratchpads::Buffer& b = scratchpads.slots[scratchpads.slot];
  if (bytes > b.size) {
    std::free(b.p);
    b.size = 0;
    b.p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!b.p)
      throw Error("cannot allocate a oneDNN scratchpad of " + std::to_string(bytes) + " bytes");
    b.size = bytes;
  }
  return b.p;
}

using dnnl::memory;
using Dims = memory::dims;

memory::desc plain(const Shape& dims, memory::data_type type = memory::data_type::f32) {
  const std::vector<int64_t> strides = row_major_strides(dims);
  return memory::desc(Dims(dims.begin(), dims.end()), type, Dims(strides.begin(), strides.end()));
}

memory::desc strided(const Shape& dims, const Shape& strides,
                     memory::data_type type = memory::data_type::f32) {
  return memory::desc(Dims(dims.begin(), dims.end()), type, Dims(strides.begin(), strides.end()));
}

memory::desc any(const Shape& dims, memory::data_type type = memory::data_type::f32) {
  return memory::desc(Dims(dims.begin(), dims.end()), type, memory::format_tag::any);
}

// The blocked layouts a tensor may be stored in between kernels, by rank: channels last,
// or channels in blocks of 4, 8 or 16 (oneDNN's names; the first dim is the batch).
const std::vector<std::pair<const char*, memory::format_tag>>& layout_tags(size_t rank) {
  using T = memory::format_tag;
  static const std::vector<std::pair<const char*, T>> r3 = {
      {"acb", T::acb}, {"aBc4b", T::aBc4b}, {"aBc8b", T::aBc8b}, {"aBc16b", T::aBc16b}};
  static const std::vector<std::pair<const char*, T>> r4 = {
      {"acdb", T::acdb}, {"aBcd4b", T::aBcd4b}, {"aBcd8b", T::aBcd8b}, {"aBcd16b", T::aBcd16b}};
  static const std::vector<std::pair<const char*, T>> r5 = {{"acdeb", T::acdeb},
                                                            {"aBcde4b", T::aBcde4b},
                                                            {"aBcde8b", T::aBcde8b},
                                                            {"aBcde16b", T::aBcde16b}};
  static const std::vector<std::pair<const char*, T>> none;
  return rank == 3 ? r3 : rank == 4 ? r4 : rank == 5 ? r5 : none;
}

memory::data_type data_type_of(const memory::desc& md) {
#if DNNL_VERSION_MAJOR >= 3
  return md.get_data_type();
#else
  return md.data_type();
#endif
}

// Whether md takes no more bytes than the plain tensor of `dims` in its data type (a
// blocked layout padded beyond the plain size does not fit the plain tensor's buffer).
bool fits_plain(const memory::desc& md, const Shape& dims) {
  return md.get_size() <=
         static_cast<size_t>(numel(dims)) * memory::data_type_size(data_type_of(md));
}

// The name of md's layout among layout_tags, with kBf16 after it for bfloat16 ("acdb",
// "aBcd16b+bf16"), or "" (plain, or one kora does not keep) when it is not one of them or
// takes more bytes than the plain tensor in its data type (padded blocks).
std::string layout_name(const memory::desc& md, const Shape& dims) {
  const memory::data_type type = data_type_of(md);
  if (type != memory::data_type::f32 && type != memory::data_type::bf16) return "";
  const bool bf16 = type == memory::data_type::bf16;
  if (!fits_plain(md, dims)) return "";
  for (const auto& [name, tag] : layout_tags(dims.size()))
    if (md == memory::desc(Dims(dims.begin(), dims.end()), type, tag))
      return std::string(name) + (bf16 ? kBf16 : "");
  return "";
}

// The descriptor of a tensor stored in layout `name`; throws kora::Error for a name kora
// does not know or a layout larger than the plain tensor in its data type.
memory::desc laid_out(const Shape& dims, const std::string& name, const std::string& tensor) {
  const bool bf16 = has_bf16_suffix(name);
  const std::string base = bf16 ? name.substr(0, name.size() - strlen(kBf16)) : name;
  for (const auto& [n, tag] : layout_tags(dims.size()))
    if (base == n) {
      const memory::desc md(Dims(dims.begin(), dims.end()),
                            bf16 ? memory::data_type::bf16 : memory::data_type::f32, tag);
      if (!fits_plain(md, dims))
        throw Error("oneDNN kernel: tensor '" + tensor + "' " + shape_str(dims) +
                    " does not fit layout " + name + " in its plain size");
      return md;
    }
  throw Error("oneDNN kernel: tensor '" + tensor + "' " + shape_str(dims) + " has layout '" + name +
              "', which kora does not know for rank " + std::to_string(dims.size()));
}

dnnl::algorithm eltwise_alg(EpilogueEltwise e) {
  using A = dnnl::algorithm;
  switch (e) {
    case EpilogueEltwise::kRelu:
      return A::eltwise_relu;
    case EpilogueEltwise::kTanh:
      return A::eltwise_tanh;
    case EpilogueEltwise::kAbs:
      return A::eltwise_abs;
    case EpilogueEltwise::kSqrt:
      return A::eltwise_sqrt;
    case EpilogueEltwise::kExp:
      return A::eltwise_exp;
    case EpilogueEltwise::kLog:
      return A::eltwise_log;
    case EpilogueEltwise::kLogistic:
      return A::eltwise_logistic;
    case EpilogueEltwise::kSoftRelu:
      return A::eltwise_soft_relu;
    case EpilogueEltwise::kPow:
      return A::eltwise_pow;
    case EpilogueEltwise::kRound:
      return A::eltwise_round;
    case EpilogueEltwise::kSquare:
      return A::eltwise_square;
    case EpilogueEltwise::kSwish:
      return A::eltwise_swish;
    case EpilogueEltwise::kHardswish:
      return A::eltwise_hardswish;
    case EpilogueEltwise::kGeluErf:
      return A::eltwise_gelu_erf;
    case EpilogueEltwise::kClip:
      return A::eltwise_clip;
  }
  return A::eltwise_relu;
}

dnnl::algorithm binary_alg(EpilogueBinary b) {
  using A = dnnl::algorithm;
  switch (b) {
    case EpilogueBinary::kAdd:
      return A::binary_add;
    case EpilogueBinary::kSub:
      return A::binary_sub;
    case EpilogueBinary::kMul:
      return A::binary_mul;
    case EpilogueBinary::kDiv:
      return A::binary_div;
    case EpilogueBinary::kMax:
      return A::binary_max;
    case EpilogueBinary::kMin:
      return A::binary_min;
  }
  return A::binary_add;
}

// The weights as oneDNN sees them: convolution weights [M, C/g, K...] get a group dim
// [g, M/g, C/g, K...] when g > 1 (the same bytes).
Shape weights_dims(const LinearPlan& p) {
  if (!p.conv || p.conv_attrs.group == 1) return p.weights_dims;
  Shape d = p.weights_dims;
  d[0] /= p.conv_attrs.group;
  d.insert(d.begin(), p.conv_attrs.group);
  return d;
}

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

bool is_full(const LinearPlan& p, const EpilogueOp& op) {
  return op.binary && op.operand >= 0 && op.operand_dims == p.dst_dims;
}

// Whether a convolution computes a residual add as oneDNN's sum post-op: Winograd's jit
// kernels take no binary post-ops, and oneDNN 2.6's bf16 convolutions on their native
// (channels-last) layouts take no full-shape binary operand either.
bool sums_residual(const LinearPlan& p, bool winograd, bool bf16) {
  return p.conv && (winograd || bf16);
}

// The epilogue op computed as oneDNN's sum post-op where the convolution sums its residual
// (sums_residual): the first residual add of a full-shape tensor, which the kernel copies
// into the destination before the primitive accumulates onto it; -1 if none or not summed.
int sum_post_op(const LinearPlan& p, bool sums) {
  if (!sums) return -1;
  for (size_t i = 0; i < p.epilogue.size(); ++i)
    if (is_full(p, p.epilogue[i]) && p.epilogue[i].op == EpilogueBinary::kAdd)
      return static_cast<int>(i);
  return -1;
}

// What make_pd is asked for, besides the plan.
struct PdRequest {
  bool blocked = false;  // src and dst `any` (the primitive's blocked choice), else plain
  // Full-shape binary operands, and dst, in this layout (blocked dst); skip_full: such
  // operands left out (to query the layouts the primitive picks without them).
  const memory::desc* full = nullptr;
  bool skip_full = false;
  const memory::desc* src_fixed = nullptr;  // src in this layout
  // A matmul's weights that are not constant, in this layout (bf16: stored as bfloat16)
  const memory::desc* weights_fixed = nullptr;
  bool bf16 = false;      // src and weights bfloat16 (src `any` unless src_fixed is bf16)
  bool bf16_dst = false;  // with blocked: dst `any` in bfloat16 (the native layouts' query)
  bool winograd = false;  // oneDNN's Winograd algorithm, a residual add as the sum post-op
  const memory::desc* matmul_dst = nullptr;  // a matmul's dst in this layout (else plain)
};

// The primitive descriptor for a plan: src/dst plain or `any` (blocked), or src in layout
// `*src_fixed`; weights `any` when constant (reordered once) else plain. Binary operands
// of the full output shape are plain, or in layout `*full` (then dst is too), or left out
// (skip_full). bf16: src and weights bfloat16 (a convolution's src `any` or a stored
// bfloat16 one, a matmul's plain), dst float32 unless it is stored in bfloat16 (`full`) or
// bf16_dst asks for it. winograd: a convolution computed with oneDNN's Winograd algorithm
// (throws where oneDNN does not offer it), a residual add as the sum post-op (sum_post_op).
dnnl::primitive_desc make_pd(const LinearPlan& p, bool constant_weights, const PdRequest& r = {}) {
  dnnl::post_ops po;
  const int sum = sum_post_op(p, sums_residual(p, r.winograd, r.bf16));
  for (const EpilogueOp& op : p.epilogue) {
    if (&op - p.epilogue.data() == sum) {
      po.append_sum(1.0f);
    } else if (!op.binary) {
#if DNNL_VERSION_MAJOR >= 3
      // 3.x made soft_relu's and hardswish's constants parameters (2.x ignored them).
      float alpha = op.alpha, beta = op.beta;
      if (op.eltwise == EpilogueEltwise::kSoftRelu) alpha = 1.0f;
      if (op.eltwise == EpilogueEltwise::kHardswish) alpha = 1.0f / 6, beta = 0.5f;
      po.append_eltwise(eltwise_alg(op.eltwise), alpha, beta);
#else
      po.append_eltwise(1.0f, eltwise_alg(op.eltwise), op.alpha, op.beta);
#endif
    } else if (is_full(p, op)) {
      if (!r.skip_full)
        po.append_binary(binary_alg(op.op), r.full ? *r.full : plain(op.operand_dims));
    } else {
      const Shape dims = op.operand < 0 ? Shape(p.dst_dims.size(), 1) : op.operand_dims;
      po.append_binary(binary_alg(op.op), plain(dims));
    }
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // thread_scratchpad()
  using T = memory::data_type;
  const Shape wd = weights_dims(p);
  // Weights as read: a matmul's may be a strided view; convolution weights are plain.
  const bool weights_bf16 = r.weights_fixed && data_type_of(*r.weights_fixed) == T::bf16;
  const memory::desc w = constant_weights ? any(wd, r.bf16 ? T::bf16 : T::f32)
                         : weights_bf16   ? *r.weights_fixed
                         : r.bf16         ? plain(wd, T::bf16)
                         : p.conv         ? plain(wd)
                                          : strided(wd, p.weights_strides);
  const memory::desc bias = p.bias >= 0 ? plain(p.bias_dims) : memory::desc();
  if (!p.conv) {
    const bool src_bf16 = r.src_fixed && data_type_of(*r.src_fixed) == T::bf16;
    const memory::desc src = src_bf16 ? *r.src_fixed
                             : r.bf16 ? plain(p.src_dims, T::bf16)
                                      : strided(p.src_dims, p.src_strides);
    const memory::desc dst = r.matmul_dst ? *r.matmul_dst : plain(p.dst_dims);
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(cpu_engine(), src, w, bias, dst, attr);
#else
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, bias, dst), attr, cpu_engine());
#endif
  }
  const ConvAttrs& a = p.conv_attrs;
  Dims dilations;
  for (int64_t d : a.dilations) dilations.push_back(d - 1);
  const bool src_bf16 = r.src_fixed && data_type_of(*r.src_fixed) == T::bf16;
  const memory::desc src = r.bf16        ? (src_bf16 ? *r.src_fixed : any(p.src_dims, T::bf16))
                           : r.src_fixed ? *r.src_fixed
                           : r.blocked   ? any(p.src_dims)
                                         : plain(p.src_dims);
  const memory::desc dst = r.full      ? *r.full
                           : r.blocked ? any(p.dst_dims, r.bf16_dst ? T::bf16 : T::f32)
                                       : plain(p.dst_dims);
  const Dims strides(a.strides.begin(), a.strides.end());
  const Dims pads_begin(a.pads_begin.begin(), a.pads_begin.end());
  const Dims pads_end(a.pads_end.begin(), a.pads_end.end());
  constexpr auto kInference = dnnl::prop_kind::forward_inference;
  const auto algorithm =
      r.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::convolution_forward::primitive_desc(cpu_engine(), kInference, algorithm, src, w,
                                                   bias, dst, strides, dilations, pads_begin,
                                                   pads_end, attr);
#else
  const dnnl::convolution_forward::desc d(kInference, algorithm, src, w, bias, dst, strides,
                                          dilations, pads_begin, pads_end);
  return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
#endif
}

bool is_reference(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

struct Choice {
  dnnl::primitive_desc pd;
  bool full_blocked = false;  // full-shape binary operands in dst's (blocked) layout
  memory::desc full;
};

// A direct (jit) implementation: neither the reference one nor an im2col GEMM.
bool is_direct(const dnnl::primitive_desc& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) != 0 && impl.find("gemm") == std::string::npos;
}

// The descriptor for the layout policy: blocked when asked for (kAuto: by the plan's
// shape) and oneDNN has a non-reference implementation for it, else plain. A blocked
// convolution whose post-ops read a full-shape tensor takes that tensor in dst's layout
// (oneDNN's jit kernels do not read a plain one there).
//
// With src or dst stored in a given layout (src_fixed, dst_fixed) the convolution runs
// blocked: the given sides in their layouts, the others `any`, full-shape operands in
// dst's layout.
//
// bf16: the source is bfloat16, in the layout the primitive picks (a stored float32 one
// is reordered into it) or a stored bfloat16 one; dst is float32 unless stored in
// bfloat16 (dst_fixed), so only a fixed dst and a bfloat16 src decide the layouts.
Choice choose_pd(const LinearPlan& p, ConvLayout layout, bool constant_weights,
                 const memory::desc* src_fixed = nullptr, const memory::desc* dst_fixed = nullptr,
                 bool bf16 = false, const memory::desc* weights_fixed = nullptr) {
  if (layout == ConvLayout::kWinograd) {
    if (bf16 || !p.conv || !constant_weights)
      throw Error("oneDNN's Winograd convolutions take float32 and constant weights only");
    // src in Winograd's layout (a stored one reordered into it), dst in a stored dst's
    // layout where Winograd writes it, else in its own (reordered into the stored one); a
    // residual add reads no operand in the primitive (sum).
    if (dst_fixed) {
      try {
        return {
            make_pd(p, constant_weights, {.blocked = true, .full = dst_fixed, .winograd = true}),
            false,
            {}};
      } catch (const dnnl::error&) {
      }
    }
    return {make_pd(p, constant_weights, {.blocked = true, .winograd = true}), false, {}};
  }
  if (bf16) {
    const memory::desc* src_bf16 =
        src_fixed && data_type_of(*src_fixed) == memory::data_type::bf16 ? src_fixed : nullptr;
    if (dst_fixed && p.conv)
      return {make_pd(p, constant_weights,
                      {.blocked = true,
                       .full = dst_fixed,
                       .src_fixed = src_bf16,
                       .weights_fixed = weights_fixed,
                       .bf16 = true}),
              true, *dst_fixed};
    // A matmul's dst stored as bfloat16 is written so, its operands read as they are.
    const bool blocked = p.conv && constant_weights && (layout != ConvLayout::kPlain || src_bf16);
    return {make_pd(p, constant_weights,
                    {.blocked = blocked,
                     .src_fixed = src_bf16,
                     .weights_fixed = weights_fixed,
                     .bf16 = true,
                     .matmul_dst = p.conv ? nullptr : dst_fixed}),
            false,
            {}};
  }
  if (src_fixed || dst_fixed) {
    memory::desc dst = dst_fixed
                           ? *dst_fixed
                           : make_pd(p, constant_weights,
                                     {.blocked = true, .skip_full = true, .src_fixed = src_fixed})
                                 .query_md(dnnl::query::dst_md);
    dnnl::primitive_desc pd =
        make_pd(p, constant_weights, {.blocked = true, .full = &dst, .src_fixed = src_fixed});
    if (is_direct(pd) || !src_fixed == !dst_fixed) return {pd, true, dst};
    // One side stored in a layout and the other `any`, which the implementations take only
    // mixed with the reference one (a grouped convolution given a channels-last dst picks
    // a blocked src): the other side in the stored one's layout, where that is direct.
    try {
      const memory::desc& fixed = src_fixed ? *src_fixed : *dst_fixed;
      const std::string name = layout_name(fixed, src_fixed ? p.src_dims : p.dst_dims);
      if (!name.empty()) {
        const memory::desc src_like = src_fixed ? *src_fixed : laid_out(p.src_dims, name, "src");
        const memory::desc dst_like = dst_fixed ? *dst_fixed : laid_out(p.dst_dims, name, "dst");
        dnnl::primitive_desc like = make_pd(
            p, constant_weights, {.blocked = true, .full = &dst_like, .src_fixed = &src_like});
        if (is_direct(like) && like.query_md(dnnl::query::dst_md) == dst_like)
          return {like, true, dst_like};
      }
    } catch (const dnnl::error&) {
    } catch (const Error&) {
    }
    return {pd, true, dst};
  }
  bool want = p.conv && constant_weights && layout != ConvLayout::kPlain;
  if (want && layout == ConvLayout::kAuto) want = blocked_is_faster(p);
  if (!want) return {make_pd(p, constant_weights), false, {}};
  std::optional<dnnl::primitive_desc> first;
  try {
    first = make_pd(p, constant_weights, {.blocked = true});
    if (is_direct(*first)) return {*first, false, {}};
  } catch (const dnnl::error&) {
  }
  bool any_full = false;
  for (const EpilogueOp& op : p.epilogue) any_full = any_full || is_full(p, op);
  if (any_full) {
    try {
      const memory::desc dst = make_pd(p, constant_weights, {.blocked = true, .skip_full = true})
                                   .query_md(dnnl::query::dst_md);
      dnnl::primitive_desc pd = make_pd(p, constant_weights, {.blocked = true, .full = &dst});
      if (is_direct(pd) && pd.query_md(dnnl::query::dst_md) == dst) return {pd, true, dst};
    } catch (const dnnl::error&) {
    }
  }
  if (first && !is_reference(*first)) return {*first, false, {}};
  return {make_pd(p, constant_weights), false, {}};
}

// The primitive a convolution with constant weights runs natively: src and dst in the
// layouts it picks (bfloat16 ones for bf16: activations stay bf16 between two such
// kernels), full-shape operands in dst's.
dnnl::primitive_desc native_pd(const LinearPlan& p, bool bf16) {
  if (!bf16) return choose_pd(p, ConvLayout::kBlocked, true).pd;
  const memory::desc dst =
      make_pd(p, true, {.blocked = true, .skip_full = true, .bf16 = true, .bf16_dst = true})
          .query_md(dnnl::query::dst_md);
  return make_pd(p, true, {.blocked = true, .full = &dst, .bf16 = true});
}

class OnednnKernel : public CpuLibraryKernel {
 public:
  // `reads`/`write`: the kernel's tensors in kernel_reads()/kernel_writes() order, to look
  // their layouts up in `layouts`.
  OnednnKernel(const PrimGraph& graph, LinearPlan plan, ConvLayout layout,
               const std::vector<std::string>& reads, const std::string& write,
               const TensorLayouts& layouts, bool bf16)
      : plan_(std::move(plan)), stream_(cpu_engine()) {
    dnnl::engine& eng = cpu_engine();
    // A tensor's stored layout as the kernel sees it (`dims`; a matmul's through `strides`,
    // row-major where empty).
    auto stored = [&](const std::string& tensor, const Shape& dims,
                      const Shape& strides = {}) -> std::optional<memory::desc> {
      auto it = layouts.find(tensor);
      if (it == layouts.end() || it->second.empty()) return std::nullopt;
      if (has_bf16_suffix(it->second) && !bf16)
        throw Error("oneDNN kernel: tensor '" + tensor + "' is stored as bfloat16 (layout " +
                    it->second + "), but the kernel computes in float32");
      if (!plan_.conv) {  // a matmul reads a bfloat16 tensor in its own order, as it is
        const Shape& shape = graph.value(tensor).shape;
        if (!is_plain_bfloat16(it->second, shape.size()) || numel(shape) != numel(dims))
          throw Error("oneDNN kernel: tensor '" + tensor + "' has layout " + it->second +
                      ", but a matmul takes only its plain order stored as bfloat16 (" +
                      plain_layout(shape.size()) + kBf16 + ")");
        return strided(dims, strides.empty() ? row_major_strides(dims) : strides,
                       memory::data_type::bf16);
      }
      if (graph.value(tensor).shape != dims)  // read through a reshape
        throw Error("oneDNN kernel: tensor '" + tensor + "' has layout " + it->second +
                    ", but the convolution sees it as " + shape_str(dims));
      return laid_out(dims, it->second, tensor);
    };
    const std::optional<memory::desc> src_stored =
        stored(reads.at(plan_.src), plan_.src_dims, plan_.conv ? Shape{} : plan_.src_strides);
    const Tensor* weights = graph.constant(plan_.weights_tensor);
    const std::optional<memory::desc> weights_stored =
        plan_.conv || weights
            ? std::nullopt
            : stored(reads.at(plan_.weights), plan_.weights_dims, plan_.weights_strides);
    const std::optional<memory::desc> dst_stored = stored(write, plan_.dst_dims);
    std::vector<std::optional<memory::desc>> operand_stored(plan_.epilogue.size());
    std::optional<memory::desc> dst_fixed = dst_stored;
    for (size_t i = 0; i < plan_.epilogue.size(); ++i)
      if (is_full(plan_, plan_.epilogue[i])) {
        operand_stored[i] = stored(reads.at(plan_.epilogue[i].operand), plan_.dst_dims);
        if (operand_stored[i] && !dst_fixed && layout != ConvLayout::kWinograd && plan_.conv)
          dst_fixed = operand_stored[i];
      }
    const Choice choice = choose_pd(
        plan_, layout, weights != nullptr, src_stored ? &*src_stored : nullptr,
        dst_fixed ? &*dst_fixed : nullptr, bf16, weights_stored ? &*weights_stored : nullptr);
    const dnnl::primitive_desc& pd = choice.pd;
    impl_ = pd.impl_info_str();
    if (bf16 && is_reference(pd))
      throw Error("oneDNN has no bf16 implementation but its reference one for this kernel (" +
                  impl_ + ")");
    prim_ = dnnl::primitive(pd);
    scratchpad_bytes_ = pd.scratchpad_desc().get_size();
    if (scratchpad_bytes_ > 0) {
      scratchpad_ = memory(pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_SCRATCHPAD] = scratchpad_;
    }

    // src: bound to `in` directly, or reordered into the primitive's layout.
    const memory::desc src_user =
        src_stored ? *src_stored : strided(plan_.src_dims, plan_.src_strides);
    src_user_ = memory(src_user, eng, DNNL_MEMORY_NONE);
    const memory::desc src_md = pd.query_md(dnnl::query::src_md);
    if (src_md != src_user) {
      src_ = memory(src_md, eng);
      src_reorder_ = dnnl::reorder(src_user_, src_);
    } else {
      src_ = src_user_;
    }
    args_[DNNL_ARG_SRC] = src_;

    const memory::desc dst_user = dst_stored ? *dst_stored : plain(plan_.dst_dims);
    dst_user_ = memory(dst_user, eng, DNNL_MEMORY_NONE);
    const memory::desc dst_md = pd.query_md(dnnl::query::dst_md);
    if (dst_md != dst_user) {
      dst_ = memory(dst_md, eng);
      dst_reorder_ = dnnl::reorder(dst_, dst_user_);
    } else {
      dst_ = dst_user_;
    }
    args_[DNNL_ARG_DST] = dst_;

    // Weights: constant ones reordered now, from the constant's data.
    const memory::desc w_md = pd.query_md(dnnl::query::weights_md);
    if (weights) {
      if (weights->nbytes() != static_cast<size_t>(numel(plan_.weights_dims)) * sizeof(float))
        throw Error("oneDNN kernel: constant '" + plan_.weights_tensor + "' has the wrong size");
      const memory::desc user_md = plan_.conv ? plain(weights_dims(plan_))
                                              : strided(plan_.weights_dims, plan_.weights_strides);
      memory user(user_md, eng,
                  const_cast<std::byte*>(weights->bytes()));  // read only
      memory w(w_md, eng);
      dnnl::reorder(user, w).execute(stream_, user, w);
      stream_.wait();
      args_[DNNL_ARG_WEIGHTS] = w;
    } else if (bf16 && (!weights_stored || *weights_stored != w_md)) {
      // Read as float32 (or stored bfloat16 in another order), reordered every run.
      const memory::desc user_md = weights_stored ? *weights_stored
                                   : plan_.conv
                                       ? plain(weights_dims(plan_))
                                       : strided(plan_.weights_dims, plan_.weights_strides);
      weights_user_ = memory(user_md, eng, DNNL_MEMORY_NONE);
      memory w(w_md, eng);
      operand_reorders_.push_back({dnnl::reorder(weights_user_, w), weights_user_, w});
      args_[DNNL_ARG_WEIGHTS] = w;
      bound_.push_back({plan_.weights, weights_user_});
    } else {
      weights_user_ = memory(w_md, eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_WEIGHTS] = weights_user_;
      bound_.push_back({plan_.weights, weights_user_});
    }
    if (plan_.bias >= 0) {
      memory b(plain(plan_.bias_dims), eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_BIAS] = b;
      bound_.push_back({plan_.bias, b});
    }
    scalars_ = std::make_unique<float[]>(plan_.epilogue.size());
    const int sum = sum_post_op(plan_, sums_residual(plan_, layout == ConvLayout::kWinograd, bf16));
    for (size_t i = 0; i < plan_.epilogue.size(); ++i) {
      const EpilogueOp& op = plan_.epilogue[i];
      if (static_cast<int>(i) == sum) {  // the residual copied into dst, accumulated onto
        memory m(operand_stored[i] ? *operand_stored[i] : plain(op.operand_dims), eng,
                 DNNL_MEMORY_NONE);
        bound_.push_back({op.operand, m});
        operand_reorders_.push_back({dnnl::reorder(m, dst_), m, dst_});
        continue;
      }
      if (!op.binary) continue;
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1;
      if (op.operand < 0) {
        scalars_[i] = op.scalar;
        args_[arg] = memory(plain(Shape(plan_.dst_dims.size(), 1)), eng, &scalars_[i]);
      } else {
        memory m(operand_stored[i] ? *operand_stored[i] : plain(op.operand_dims), eng,
                 DNNL_MEMORY_NONE);
        bound_.push_back({op.operand, m});
        if (choice.full_blocked && is_full(plan_, op) && m.get_desc() != choice.full) {
          memory blocked(choice.full, eng);
          operand_reorders_.push_back({dnnl::reorder(m, blocked), m, blocked});
          args_[arg] = blocked;
        } else {
          args_[arg] = m;
        }
      }
    }

    // run_plain(): each tensor stored in a layout gets a buffer in it and a reorder from
    // (to, for dst) its plain form.
    reads_ = reads.size();
    for (size_t r = 0; r < reads.size(); ++r) {
      const ValueInfo& v = graph.value(reads[r]);
      const std::optional<memory::desc> md =
          v.dtype == DType::kFloat32 ? stored(reads[r], v.shape) : std::nullopt;
      if (!md) continue;
      // As src, a matmul's weights or a full-shape operand.
      bool taken =
          static_cast<int>(r) == plan_.src || (!plan_.conv && static_cast<int>(r) == plan_.weights);
      for (const EpilogueOp& op : plan_.epilogue)
        taken = taken || (is_full(plan_, op) && op.operand == static_cast<int>(r));
      if (!taken)
        throw Error("oneDNN kernel: tensor '" + reads[r] + "' has layout " + layouts.at(reads[r]) +
                    ", but the kernel reads it as neither its source, a matmul's weights " +
                    "nor a full-shape operand");
      PlainView view{r, memory(plain(v.shape), eng, DNNL_MEMORY_NONE), memory(*md, eng), {}};
      view.reorder = dnnl::reorder(view.plain, view.laid);
      plain_in_.push_back(std::move(view));
    }
    if (dst_stored) {
      plain_out_ = PlainView{
          0, memory(plain(plan_.dst_dims), eng, DNNL_MEMORY_NONE), memory(*dst_stored, eng), {}};
      plain_out_->reorder = dnnl::reorder(plain_out_->laid, plain_out_->plain);
    }
  }

  void run(const void* const* in, void* const* out) override {
    src_user_.set_data_handle(const_cast<void*>(in[plan_.src]));
    dst_user_.set_data_handle(out[0]);
    for (auto& [index, mem] : bound_) mem.set_data_handle(const_cast<void*>(in[index]));
    if (scratchpad_bytes_ > 0) scratchpad_.set_data_handle(thread_scratchpad(scratchpad_bytes_));
    if (src_reorder_) src_reorder_.execute(stream_, src_user_, src_);
    for (auto& [r, from, to] : operand_reorders_) r.execute(stream_, from, to);
    prim_.execute(stream_, args_);
    if (dst_reorder_) dst_reorder_.execute(stream_, dst_, dst_user_);
    stream_.wait();
  }

  void run_plain(const void* const* in, void* const* out) override {
    std::vector<const void*> laid_in(in, in + reads_);
    for (PlainView& v : plain_in_) {
      v.plain.set_data_handle(const_cast<void*>(in[v.index]));
      v.reorder.execute(stream_, v.plain, v.laid);
      laid_in[v.index] = v.laid.get_data_handle();
    }
    void* laid_dst[] = {plain_out_ ? plain_out_->laid.get_data_handle() : out[0]};
    stream_.wait();
    run(laid_in.data(), laid_dst);
    if (plain_out_) {
      plain_out_->plain.set_data_handle(out[0]);
      plain_out_->reorder.execute(stream_, plain_out_->laid, plain_out_->plain);
      stream_.wait();
    }
  }

  std::string schedule() const override { return "onednn"; }
  const std::string& implementation() const { return impl_; }

 private:
  // A tensor stored in a layout, seen plain by run_plain().
  struct PlainView {
    size_t index;  // in `in` (reads) or `out`
    memory plain, laid;
    dnnl::reorder reorder;  // plain -> laid for reads, laid -> plain for the write
  };

  LinearPlan plan_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  memory src_user_, src_, dst_user_, dst_, weights_user_;
  memory scratchpad_;  // bound to the executing thread's buffer at each run
  size_t scratchpad_bytes_ = 0;
  dnnl::reorder src_reorder_, dst_reorder_;
  std::vector<std::pair<int, memory>> bound_;  // kernel read index -> memory bound to it
  std::vector<std::tuple<dnnl::reorder, memory, memory>> operand_reorders_;
  std::unique_ptr<float[]> scalars_;
  std::string impl_;
  size_t reads_ = 0;
  std::vector<PlainView> plain_in_;
  std::optional<PlainView> plain_out_;
};

LinearPlan plan_or_throw(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  std::string why;
  std::optional<LinearPlan> plan = plan_kernel(graph, dag, c, &why);
  if (!plan) {
    std::string names;
    for (int v : c.members) names += (names.empty() ? "" : ", ") + graph.prims[dag.prim[v]].name;
    throw Error("oneDNN kernel for {" + names + "}: " + why);
  }
  return *plan;
}

}  // namespace

// Measured with bench/cpu_linear_bench.cc (AVX2, 1 thread): blocked direct kernels win
// 1.2-10x for 3x3, 7x7/2, depthwise and strided 1x1 convolutions even with the reorders
// at the boundary; a pointwise convolution (1x1, stride 1, no pads) is one GEMM per group
// on plain tensors and the reorders make blocked 0.8-1.0x of it. Grouped too (AVX-512,
// 2 threads): blocked ran 0.48-0.87x plain with 3-32 groups (SqueezeBERT's 4 groups of
// 192 channels 0.74x, ShuffleNet's 3 of 80 0.48x), its reorders transposing the whole
// tensor twice; where the convolution has native layouts the profile measures the
// blocked primitive too (kOnednnBlocked), so the solver still has it.
bool blocked_is_faster(const LinearPlan& p) {
  if (!p.conv) return false;
  const ConvAttrs& a = p.conv_attrs;
  bool pointwise = true;
  for (size_t i = 0; i < a.strides.size(); ++i)
    pointwise = pointwise && p.weights_dims[2 + i] == 1 && a.strides[i] == 1 &&
                a.pads_begin[i] == 0 && a.pads_end[i] == 0;
  return !pointwise;
}

std::unique_ptr<CpuLibraryKernel> make_kernel(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c, ConvLayout layout,
                                              std::string* implementation,
                                              const TensorLayouts& layouts, bool bf16) {
  LinearPlan plan = plan_or_throw(graph, dag, c);
  try {
    auto k =
        std::make_unique<OnednnKernel>(graph, std::move(plan), layout, kernel_reads(graph, dag, c),
                                       kernel_writes(graph, dag, c).at(0), layouts, bf16);
    if (implementation) *implementation = k->implementation();
    return k;
  } catch (const dnnl::error& e) {
    // Which kernel, and the layouts it was asked to read and write.
    std::string names, stored;
    for (int v : c.members) names += (names.empty() ? "" : ", ") + graph.prims[dag.prim[v]].name;
    for (const std::string& t : kernel_reads(graph, dag, c))
      if (const auto it = layouts.find(t); it != layouts.end())
        stored += (stored.empty() ? "" : ", ") + t + " " + it->second;
    if (const auto it = layouts.find(kernel_writes(graph, dag, c).at(0)); it != layouts.end())
      stored += (stored.empty() ? "" : ", ") + it->first + " " + it->second;
    throw Error("oneDNN kernel for {" + names + "}" +
                (stored.empty() ? "" : " (stored: " + stored + ")") + ": " + e.what());
  }
}

}  // namespace onednn

bool onednn_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const std::optional<LinearPlan> plan = onednn::plan_kernel(graph, dag, c, nullptr);
  if (!plan) return false;
  try {
    onednn::make_pd(*plan, graph.constant(plan->weights_tensor) != nullptr);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool onednn_winograd_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const std::optional<LinearPlan> plan = onednn::plan_kernel(graph, dag, c, nullptr);
  if (!plan || !plan->conv || !graph.constant(plan->weights_tensor)) return false;
  try {
    return !onednn::is_reference(onednn::choose_pd(*plan, onednn::ConvLayout::kWinograd, true).pd);
  } catch (const dnnl::error&) {
    return false;
  }
}

namespace {

// A bf16 matmul's native layouts: its source, its weights where they are not constant, and
// its destination, stored as bfloat16 in their own order (plain_layout + kBf16), which the
// primitive reads and writes as they are (through the plan's strides where it transposes
// them) instead of reordering a float32 tensor every run (the destination: written in
// float32, its epilogue included, then rounded); where oneDNN has such a primitive besides
// its reference one.
TensorLayouts matmul_bf16_layouts(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                                  const LinearPlan& plan) {
  const std::vector<std::string> reads = kernel_reads(graph, dag, c);
  const std::string write = kernel_writes(graph, dag, c).at(0);
  TensorLayouts layouts;
  for (const std::string& t : {reads.at(plan.src), reads.at(plan.weights), write}) {
    const ValueInfo& v = graph.value(t);
    const std::string tag = plain_layout(v.shape.size());
    if (graph.constant(t) || v.dtype != DType::kFloat32 || tag.empty()) continue;
    layouts[t] = tag + kBf16;
  }
  if (layouts.empty()) return {};
  // The primitive's descriptor alone (building the kernel would reorder its weights).
  auto desc = [&](int side, const Shape& dims, const Shape& strides) {
    const std::optional<dnnl::memory::desc> none;
    if (!layouts.count(reads.at(side))) return none;
    return std::optional(onednn::strided(dims, strides, dnnl::memory::data_type::bf16));
  };
  const auto src = desc(plan.src, plan.src_dims, plan.src_strides);
  const auto weights = desc(plan.weights, plan.weights_dims, plan.weights_strides);
  std::optional<dnnl::memory::desc> dst;
  if (layouts.count(write)) dst = onednn::plain(plan.dst_dims, dnnl::memory::data_type::bf16);
  try {
    const bool constant_weights = graph.constant(plan.weights_tensor) != nullptr;
    const dnnl::primitive_desc pd =
        onednn::choose_pd(plan, onednn::ConvLayout::kAuto, constant_weights, src ? &*src : nullptr,
                          dst ? &*dst : nullptr, true, weights ? &*weights : nullptr)
            .pd;
    if (onednn::is_reference(pd)) return {};
  } catch (const dnnl::error&) {
    return {};
  }
  return layouts;
}

}  // namespace

TensorLayouts onednn_native_layouts(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, bool bf16) {
  const std::optional<LinearPlan> plan = onednn::plan_kernel(graph, dag, c, nullptr);
  if (plan && !plan->conv && bf16) return matmul_bf16_layouts(graph, dag, c, *plan);
  if (!plan || !plan->conv || !graph.constant(plan->weights_tensor)) return {};
  try {
    const dnnl::primitive_desc pd = onednn::native_pd(*plan, bf16);
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0 || impl.find("gemm") != std::string::npos) return {};
    const std::vector<std::string> reads = kernel_reads(graph, dag, c);
    const std::string src = onednn::layout_name(pd.query_md(dnnl::query::src_md), plan->src_dims);
    const std::string dst = onednn::layout_name(pd.query_md(dnnl::query::dst_md), plan->dst_dims);
    TensorLayouts layouts;
    // A tensor read twice (src and operand) must want one layout; one the convolution
    // sees through a reshape keeps its plain form.
    auto put = [&](const std::string& tensor, const std::string& name, const Shape& seen_as) {
      const std::string fits = graph.value(tensor).shape == seen_as ? name : "";
      auto [it, fresh] = layouts.emplace(tensor, fits);
      if (!fresh && it->second != fits) it->second.clear();
    };
    if (!src.empty()) put(reads.at(plan->src), src, plan->src_dims);
    if (!dst.empty()) {
      put(kernel_writes(graph, dag, c).at(0), dst, plan->dst_dims);
      for (const EpilogueOp& op : plan->epilogue)
        if (onednn::is_full(*plan, op)) put(reads.at(op.operand), dst, plan->dst_dims);
    }
    for (auto it = layouts.begin(); it != layouts.end();)
      it = it->second.empty() ? layouts.erase(it) : std::next(it);
    return layouts;
  } catch (const dnnl::error&) {
    return {};
  }
}

TensorLayouts onednn_channels_last_layouts(const PrimGraph& graph, const KernelDag& dag,
                                           const Candidate& c, bool bf16) {
  const TensorLayouts native = onednn_native_layouts(graph, dag, c, bf16);
  TensorLayouts layouts;
  bool differs = false;
  for (const auto& [tensor, layout] : native) {
    const std::string cl = channels_last_layout(graph.value(tensor).shape.size());
    if (cl.empty()) return {};
    const std::string name = cl + (bf16 ? kBf16 : "");
    differs = differs || layout != name;
    layouts[tensor] = name;
  }
  if (!differs) return {};
  try {
    std::string implementation;
    onednn::make_kernel(graph, dag, c, onednn::ConvLayout::kAuto, &implementation, layouts, bf16);
    if (implementation.rfind("ref", 0) == 0 || implementation.find("gemm") != std::string::npos)
      return {};
  } catch (const dnnl::error&) {
    return {};
  } catch (const Error&) {
    return {};
  }
  return layouts;
}

void select_onednn_scratchpad(int copy) {
  onednn::scratchpads.slot = ((copy % kScratchpadSlots) + kScratchpadSlots) % kScratchpadSlots;
}

std::unique_ptr<CpuLibraryKernel> make_onednn_kernel(const PrimGraph& graph, const KernelDag& dag,
                                                     const Candidate& c,
                                                     const TensorLayouts& layouts,
                                                     const std::string& schedule) {
  const bool bf16 = has_bf16_suffix(schedule);
  const std::string base = bf16 ? schedule.substr(0, schedule.size() - strlen(kBf16)) : schedule;
  const onednn::ConvLayout policy = base == kOnednnBlocked    ? onednn::ConvLayout::kBlocked
                                    : base == kOnednnWinograd ? onednn::ConvLayout::kWinograd
                                                              : onednn::ConvLayout::kAuto;
  return onednn::make_kernel(graph, dag, c, policy, nullptr, layouts, bf16);
}

bool layout_agnostic(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  for (int v : c.members)
    if (graph.prims[dag.prim[v]].kind() != PrimKind::kElementwise) return false;
  for (const std::string& t : kernel_reads(graph, dag, c))
    if (graph.constant(t) || graph.value(t).dtype != DType::kFloat32) return false;
  for (const std::string& t : kernel_writes(graph, dag, c))
    if (graph.value(t).dtype != DType::kFloat32) return false;
  return true;
}

}  // namespace kora
