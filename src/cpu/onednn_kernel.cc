// oneDNN library kernels (include/kora/cpu_library.h): a candidate in; a kernel that runs
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
// kAuto picks by measured speed (blocked_is_faster). run() only binds pointers and
// executes; it is not reentrant (one kernel object per calling thread), and `out` must not
// alias any `in`.
//
// Threads: Debian's oneDNN 2.6.3 uses the OpenMP runtime (cpu_runtime = OMP). Its direct
// (jit) convolutions keep the thread count omp_get_max_threads() had at construction,
// gemm-based ones follow the count at execution (measured: a conv built at 2 threads
// runs on 2 after omp_set_num_threads(1)), so build kernels after omp_set_num_threads()
// and rebuild them for another count.
#include "cpu/onednn_kernel.h"

#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "cpu/onednn_plan.h"
#include "kora/cpu_library.h"
#include "kora/error.h"

namespace kora {
namespace onednn {
namespace {

using dnnl::memory;
using Dims = memory::dims;

memory::desc plain(const Shape& dims) {
  const std::vector<int64_t> strides = row_major_strides(dims);
  return memory::desc(Dims(dims.begin(), dims.end()), memory::data_type::f32,
                      Dims(strides.begin(), strides.end()));
}

memory::desc strided(const Shape& dims, const Shape& strides) {
  return memory::desc(Dims(dims.begin(), dims.end()), memory::data_type::f32,
                      Dims(strides.begin(), strides.end()));
}

memory::desc any(const Shape& dims) {
  return memory::desc(Dims(dims.begin(), dims.end()), memory::data_type::f32,
                      memory::format_tag::any);
}

dnnl::algorithm eltwise_alg(Eltwise e) {
  using A = dnnl::algorithm;
  switch (e) {
    case Eltwise::kRelu:
      return A::eltwise_relu;
    case Eltwise::kTanh:
      return A::eltwise_tanh;
    case Eltwise::kAbs:
      return A::eltwise_abs;
    case Eltwise::kSqrt:
      return A::eltwise_sqrt;
    case Eltwise::kExp:
      return A::eltwise_exp;
    case Eltwise::kLog:
      return A::eltwise_log;
    case Eltwise::kLogistic:
      return A::eltwise_logistic;
    case Eltwise::kSoftRelu:
      return A::eltwise_soft_relu;
    case Eltwise::kPow:
      return A::eltwise_pow;
    case Eltwise::kRound:
      return A::eltwise_round;
    case Eltwise::kSquare:
      return A::eltwise_square;
    case Eltwise::kSwish:
      return A::eltwise_swish;
    case Eltwise::kHardswish:
      return A::eltwise_hardswish;
    case Eltwise::kGeluErf:
      return A::eltwise_gelu_erf;
    case Eltwise::kClip:
      return A::eltwise_clip;
  }
  return A::eltwise_relu;
}

dnnl::algorithm binary_alg(Binary b) {
  using A = dnnl::algorithm;
  switch (b) {
    case Binary::kAdd:
      return A::binary_add;
    case Binary::kSub:
      return A::binary_sub;
    case Binary::kMul:
      return A::binary_mul;
    case Binary::kDiv:
      return A::binary_div;
    case Binary::kMax:
      return A::binary_max;
    case Binary::kMin:
      return A::binary_min;
  }
  return A::binary_add;
}

// The weights as oneDNN sees them: convolution weights [M, C/g, K...] get a group dim
// [g, M/g, C/g, K...] when g > 1 (the same bytes).
Shape weights_dims(const Plan& p) {
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

bool is_full(const Plan& p, const PostOp& op) {
  return op.binary && op.operand >= 0 && op.operand_dims == p.dst_dims;
}

// The primitive descriptor for a plan: src/dst plain or `any` (blocked), weights `any`
// when constant (reordered once) else plain. Binary operands of the full output shape
// are plain, or in layout `*full` (then dst is too), or left out (skip_full).
dnnl::primitive_desc make_pd(const Plan& p, bool blocked, bool constant_weights,
                             const memory::desc* full = nullptr, bool skip_full = false) {
  dnnl::post_ops po;
  for (const PostOp& op : p.post_ops) {
    if (!op.binary) {
      po.append_eltwise(1.0f, eltwise_alg(op.eltwise), op.alpha, op.beta);
    } else if (is_full(p, op)) {
      if (!skip_full) po.append_binary(binary_alg(op.op), full ? *full : plain(op.operand_dims));
    } else {
      const Shape dims = op.operand < 0 ? Shape(p.dst_dims.size(), 1) : op.operand_dims;
      po.append_binary(binary_alg(op.op), plain(dims));
    }
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const Shape wd = weights_dims(p);
  // Weights as read: a matmul's may be a strided view; convolution weights are plain.
  const memory::desc w = constant_weights ? any(wd)
                         : p.conv         ? plain(wd)
                                          : strided(wd, p.weights_strides);
  const memory::desc bias = p.bias >= 0 ? plain(p.bias_dims) : memory::desc();
  if (!p.conv) {
    const dnnl::matmul::desc d(strided(p.src_dims, p.src_strides), w, bias, plain(p.dst_dims));
    return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
  }
  const ConvAttrs& a = p.conv_attrs;
  Dims dilations;
  for (int64_t d : a.dilations) dilations.push_back(d - 1);
  const memory::desc src = blocked ? any(p.src_dims) : plain(p.src_dims);
  const memory::desc dst = full ? *full : blocked ? any(p.dst_dims) : plain(p.dst_dims);
  const dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, w, bias, dst,
      Dims(a.strides.begin(), a.strides.end()), dilations,
      Dims(a.pads_begin.begin(), a.pads_begin.end()), Dims(a.pads_end.begin(), a.pads_end.end()));
  return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
}

bool is_reference(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

struct Choice {
  dnnl::primitive_desc pd;
  bool full_blocked = false;  // full-shape binary operands in dst's (blocked) layout
  memory::desc full;
};

// The descriptor for the layout policy: blocked when asked for (kAuto: by the plan's
// shape) and oneDNN has a non-reference implementation for it, else plain. A blocked
// convolution whose post-ops read a full-shape tensor takes that tensor in dst's layout
// (oneDNN's jit kernels do not read a plain one there).
Choice choose_pd(const Plan& p, ConvLayout layout, bool constant_weights) {
  bool want = p.conv && constant_weights && layout != ConvLayout::kPlain;
  if (want && layout == ConvLayout::kAuto) want = blocked_is_faster(p);
  if (!want) return {make_pd(p, false, constant_weights), false, {}};
  auto direct = [](const dnnl::primitive_desc& pd) {
    const std::string impl = pd.impl_info_str();
    return impl.rfind("ref", 0) != 0 && impl.find("gemm") == std::string::npos;
  };
  std::optional<dnnl::primitive_desc> first;
  try {
    first = make_pd(p, true, constant_weights);
    if (direct(*first)) return {*first, false, {}};
  } catch (const dnnl::error&) {
  }
  bool any_full = false;
  for (const PostOp& op : p.post_ops) any_full = any_full || is_full(p, op);
  if (any_full) {
    try {
      const memory::desc dst =
          make_pd(p, true, constant_weights, nullptr, true).query_md(dnnl::query::dst_md);
      dnnl::primitive_desc pd = make_pd(p, true, constant_weights, &dst);
      if (direct(pd) && pd.query_md(dnnl::query::dst_md) == dst) return {pd, true, dst};
    } catch (const dnnl::error&) {
    }
  }
  if (first && !is_reference(*first)) return {*first, false, {}};
  return {make_pd(p, false, constant_weights), false, {}};
}

class OnednnKernel : public CpuLibraryKernel {
 public:
  OnednnKernel(const PrimGraph& graph, Plan plan, ConvLayout layout)
      : plan_(std::move(plan)), stream_(cpu_engine()) {
    dnnl::engine& eng = cpu_engine();
    const Tensor* weights = graph.constant(plan_.weights_tensor);
    const Choice choice = choose_pd(plan_, layout, weights != nullptr);
    const dnnl::primitive_desc& pd = choice.pd;
    impl_ = pd.impl_info_str();
    prim_ = dnnl::primitive(pd);

    // src: bound to `in` directly, or reordered into the primitive's layout.
    const memory::desc src_plain = strided(plan_.src_dims, plan_.src_strides);
    src_user_ = memory(src_plain, eng, DNNL_MEMORY_NONE);
    const memory::desc src_md = pd.query_md(dnnl::query::src_md);
    if (src_md != src_plain) {
      src_ = memory(src_md, eng);
      src_reorder_ = dnnl::reorder(src_user_, src_);
    } else {
      src_ = src_user_;
    }
    args_[DNNL_ARG_SRC] = src_;

    const memory::desc dst_plain = plain(plan_.dst_dims);
    dst_user_ = memory(dst_plain, eng, DNNL_MEMORY_NONE);
    const memory::desc dst_md = pd.query_md(dnnl::query::dst_md);
    if (dst_md != dst_plain) {
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
    scalars_ = std::make_unique<float[]>(plan_.post_ops.size());
    for (size_t i = 0; i < plan_.post_ops.size(); ++i) {
      const PostOp& op = plan_.post_ops[i];
      if (!op.binary) continue;
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1;
      if (op.operand < 0) {
        scalars_[i] = op.scalar;
        args_[arg] = memory(plain(Shape(plan_.dst_dims.size(), 1)), eng, &scalars_[i]);
      } else {
        memory m(plain(op.operand_dims), eng, DNNL_MEMORY_NONE);
        bound_.push_back({op.operand, m});
        if (choice.full_blocked && is_full(plan_, op)) {
          memory blocked(choice.full, eng);
          operand_reorders_.push_back({dnnl::reorder(m, blocked), m, blocked});
          args_[arg] = blocked;
        } else {
          args_[arg] = m;
        }
      }
    }
  }

  void run(const void* const* in, void* const* out) override {
    src_user_.set_data_handle(const_cast<void*>(in[plan_.src]));
    dst_user_.set_data_handle(out[0]);
    for (auto& [index, mem] : bound_) mem.set_data_handle(const_cast<void*>(in[index]));
    if (src_reorder_) src_reorder_.execute(stream_, src_user_, src_);
    for (auto& [r, from, to] : operand_reorders_) r.execute(stream_, from, to);
    prim_.execute(stream_, args_);
    if (dst_reorder_) dst_reorder_.execute(stream_, dst_, dst_user_);
    stream_.wait();
  }

  std::string schedule() const override { return "onednn"; }
  const std::string& implementation() const { return impl_; }

 private:
  Plan plan_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  memory src_user_, src_, dst_user_, dst_, weights_user_;
  dnnl::reorder src_reorder_, dst_reorder_;
  std::vector<std::pair<int, memory>> bound_;  // kernel read index -> memory bound to it
  std::vector<std::tuple<dnnl::reorder, memory, memory>> operand_reorders_;
  std::unique_ptr<float[]> scalars_;
  std::string impl_;
};

Plan plan_or_throw(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  std::string why;
  std::optional<Plan> plan = plan_kernel(graph, dag, c, &why);
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
// at the boundary; a pointwise convolution (1x1, stride 1, no pads, one group) is one
// GEMM on plain tensors and the reorders make blocked 0.8-1.0x of it.
bool blocked_is_faster(const Plan& p) {
  if (!p.conv) return false;
  const ConvAttrs& a = p.conv_attrs;
  bool pointwise = a.group == 1;
  for (size_t i = 0; i < a.strides.size(); ++i)
    pointwise = pointwise && p.weights_dims[2 + i] == 1 && a.strides[i] == 1 &&
                a.pads_begin[i] == 0 && a.pads_end[i] == 0;
  return !pointwise;
}

std::unique_ptr<CpuLibraryKernel> make_kernel(const PrimGraph& graph, const KernelDag& dag,
                                              const Candidate& c, ConvLayout layout,
                                              std::string* implementation) {
  Plan plan = plan_or_throw(graph, dag, c);
  try {
    auto k = std::make_unique<OnednnKernel>(graph, std::move(plan), layout);
    if (implementation) *implementation = k->implementation();
    return k;
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN kernel: ") + e.what());
  }
}

}  // namespace onednn

bool onednn_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  const std::optional<onednn::Plan> plan = onednn::plan_kernel(graph, dag, c, nullptr);
  if (!plan) return false;
  try {
    onednn::make_pd(*plan, false, graph.constant(plan->weights_tensor) != nullptr);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

std::unique_ptr<CpuLibraryKernel> make_onednn_kernel(const PrimGraph& graph, const KernelDag& dag,
                                                     const Candidate& c) {
  return onednn::make_kernel(graph, dag, c, onednn::ConvLayout::kAuto, nullptr);
}

}  // namespace kora
