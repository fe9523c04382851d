// CPU code generation (src/cpu/codegen.h): a candidate in, one C++ function out.
// This file plans the function: pointers to the kernel's tensors, then a phase per reduce
// and linear member in topological order (each writes its result to the output or to
// scratch; a linear member's epilogue stores the written tensors computed from it at its
// own coordinates), then one pointwise phase per shape for the remaining written tensors.
// Phases that loop alike over leading dims no member reduces (a softmax's or layer norm's
// rows) share those loops: one (parallel) loop nest over them, each phase inside it over
// its other dims, so a row is reduced and used while it is in cache
// (shared_outer_loops); a reduced input with a transcendental function that later phases
// read again is kept in a row buffer there (keep_reduced_row).
// Also: what is supported, the schedule space and schedule keys, the prelude.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cpu/codegen_internal.h"

namespace kora {
namespace cpu_gen {

KernelWriter::KernelWriter(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                           const CpuSchedule& schedule, const std::set<std::string>& bfloat16)
    : ValueWriter(graph, dag, c), schedule_(schedule), bfloat16_(bfloat16) {}

std::string KernelWriter::index_table(const std::vector<int64_t>& values) {
  const std::string table = fresh("gather");
  statics_ << "  static const int64_t " << table << "[" << std::max<size_t>(1, values.size())
           << "] = {";
  for (size_t i = 0; i < values.size(); ++i) statics_ << (i ? ", " : "") << values[i];
  statics_ << "};\n";
  return table;
}

std::string KernelWriter::scratch(DType t, int64_t n) {
  const std::string name = fresh("scratch");
  statics_ << "  alignas(64) static " << ctype(t) << " " << name << "[" << std::max<int64_t>(n, 1)
           << "];\n";
  return name;
}

std::string KernelWriter::unit_dims_reshape_written(int v) const {
  if (dag_.succ[v].size() != 1) return "";
  const int r = dag_.succ[v][0];
  if (std::find(c_.members.begin(), c_.members.end(), r) == c_.members.end()) return "";
  const Primitive& p = graph_.prims[dag_.prim[r]];
  if (!unit_dims_reshape(graph_, p) ||
      std::find(writes_.begin(), writes_.end(), p.output()) == writes_.end() ||
      graph_.value(p.inputs[0]).dtype != graph_.value(p.output()).dtype)
    return "";
  return p.output();
}

Shape KernelWriter::shared_outer_loops() const {
  constexpr int64_t kLeastOuter = 16;  // outer indices, so that threads share them evenly
  size_t rank = SIZE_MAX, dims = SIZE_MAX;
  std::vector<const Shape*> phases;  // each phase's loop shape
  auto same_rank = [&](const std::string& t) {
    const size_t r = graph_.value(t).shape.size();
    if (rank == SIZE_MAX) rank = r;
    return r == rank;
  };
  for (int v : c_.members) {
    const Primitive& p = graph_.prims[dag_.prim[v]];
    const PrimKind k = p.kind();
    // Dims that mean the same in every tensor: elementwise, broadcast and reduce members
    // of one rank (a reduce keeps its dims), so a value at outer coordinates reads every
    // tensor at those (or at 0 where it is 1).
    if (k != PrimKind::kElementwise && k != PrimKind::kBroadcast && k != PrimKind::kReduce)
      return {};
    for (const std::string& t : p.inputs)
      if (!same_rank(t)) return {};
    if (!same_rank(p.output())) return {};
    if (const auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
      const Shape& xs = graph_.value(p.inputs[0]).shape;
      phases.push_back(&xs);
      for (int64_t a : r->axes)
        if (xs[static_cast<size_t>(a)] > 1) dims = std::min(dims, static_cast<size_t>(a));
    }
  }
  if (phases.empty()) return {};  // no reduce member
  for (const std::string& w : writes_)
    if (producer_.at(w)->kind() != PrimKind::kReduce) phases.push_back(&graph_.value(w).shape);
  if (phases.size() < 2) return {};
  dims = std::min(dims, rank);
  // Every phase as many indices in each shared dim: each writes what it computes once.
  for (size_t d = 0; d < dims; ++d)
    for (const Shape* s : phases)
      if ((*s)[d] != (*phases[0])[d]) dims = std::min(dims, d);
  const Shape outer(phases[0]->begin(), phases[0]->begin() + static_cast<std::ptrdiff_t>(dims));
  return numel(outer) >= kLeastOuter ? outer : Shape{};
}

bool KernelWriter::reads(const std::string& from, const std::string& t) const {
  if (from == t) return true;
  const auto m = producer_.find(from);
  if (m == producer_.end() || buffer_.count(from)) return false;
  const PrimKind k = m->second->kind();
  if (k != PrimKind::kElementwise && k != PrimKind::kBroadcast) return false;
  for (const std::string& in : m->second->inputs)
    if (reads(in, t)) return true;
  return false;
}

bool KernelWriter::transcendental(const std::string& t) const {
  const auto m = producer_.find(t);
  if (m == producer_.end() || buffer_.count(t)) return false;
  const Primitive& p = *m->second;
  if (const auto* e = std::get_if<ElementwiseAttrs>(&p.attrs)) {
    // exp, log, erf, tanh, ... (and square roots and reciprocals), and powers
    if (scalar_op_is_float_only(e->op) || e->op == ScalarOp::kPow) return true;
  } else if (p.kind() != PrimKind::kBroadcast) {
    return false;
  }
  for (const std::string& in : p.inputs)
    if (transcendental(in)) return true;
  return false;
}

bool KernelWriter::nonnegative(const std::string& t) const {
  const auto m = producer_.find(t);
  if (m == producer_.end() || buffer_.count(t)) return false;
  const Primitive& p = *m->second;
  if (p.kind() == PrimKind::kBroadcast) return nonnegative(p.inputs[0]);
  const auto* e = std::get_if<ElementwiseAttrs>(&p.attrs);
  if (!e) return false;
  auto operand = [&](size_t k) {
    const Operand& o = e->operands[k];
    return o.input < 0 ? o.value >= 0 : nonnegative(p.inputs[static_cast<size_t>(o.input)]);
  };
  switch (e->op) {
    case ScalarOp::kExp:
    case ScalarOp::kSigmoid:
    case ScalarOp::kSoftplus:
    case ScalarOp::kAbs:
    case ScalarOp::kRelu:
    case ScalarOp::kSqrt:
      return true;
    case ScalarOp::kMul:  // a square, or a product of nonnegative values
      if (e->operands[0].input >= 0 && e->operands[0].input == e->operands[1].input) return true;
      return operand(0) && operand(1);
    case ScalarOp::kAdd:
    case ScalarOp::kDiv:
      return operand(0) && operand(1);
    default:
      return false;
  }
}

bool KernelWriter::keep_reduced_row(const Primitive& p) const {
  const std::string& x = p.inputs.at(0);
  if (shared_.empty() || !transcendental(x)) return false;
  bool later = false;  // the phases after p's
  for (int v : c_.members) {
    const Primitive& q = graph_.prims[dag_.prim[v]];
    if (&q == &p) {
      later = true;
    } else if (later && q.kind() == PrimKind::kReduce && reads(q.inputs.at(0), x)) {
      return true;
    }
  }
  for (const std::string& w : writes_)
    if (!done_.count(w) && producer_.at(w)->kind() != PrimKind::kReduce && reads(w, x)) return true;
  return false;
}

GeneratedKernel KernelWriter::run(const std::string& symbol) {
  std::ostringstream head;
  head << "extern \"C\" void " << symbol << "(const void* const* in, void* const* out) {\n";
  // A side stored as bfloat16 is a kora_bf16 array: read as float, assigned from float.
  auto type = [&](const std::string& tensor) -> std::string {
    return bfloat16_.count(tensor) ? "kora_bf16" : ctype(graph_.value(tensor).dtype);
  };
  for (const std::string& t : bfloat16_) {
    if (std::find(reads_.begin(), reads_.end(), t) == reads_.end() &&
        std::find(writes_.begin(), writes_.end(), t) == writes_.end())
      throw Error("cpu codegen: '" + t + "' is stored as bfloat16 but is not a side of kernel " +
                  symbol);
    if (graph_.value(t).dtype != DType::kFloat32)
      throw Error("cpu codegen: '" + t + "' is stored as bfloat16 but is " +
                  dtype_name(graph_.value(t).dtype) + " (float32 only)");
  }
  for (size_t i = 0; i < reads_.size(); ++i) {
    const std::string t = type(reads_[i]);
    in_ptr_[reads_[i]] = "in" + std::to_string(i);
    head << "  const " << t << "* __restrict in" << i << " = static_cast<const " << t << "*>(in["
         << i << "]);\n";
  }
  for (size_t i = 0; i < writes_.size(); ++i) {
    const std::string t = type(writes_[i]);
    out_ptr_[writes_[i]] = "out" + std::to_string(i);
    head << "  " << t << "* __restrict out" << i << " = static_cast<" << t << "*>(out[" << i
         << "]);\n";
  }
  scopes_.emplace_back();
  scope().indent = "  ";
  auto written = [&](const std::string& t) {
    return std::find(writes_.begin(), writes_.end(), t) != writes_.end();
  };
  // Phases that share outer loops: those loops once (the parallel ones), every phase
  // inside them over its other dims.
  const Shape outer = shared_outer_loops();
  if (!outer.empty()) {
    int64_t work = 0;
    for (int v : c_.members) {
      const Primitive& p = graph_.prims[dag_.prim[v]];
      if (p.kind() == PrimKind::kReduce) work += numel(graph_.value(p.inputs[0]).shape);
    }
    for (const std::string& w : writes_) work += numel(graph_.value(w).shape);
    line("// phases in shared outer loops over " + shape_str(outer));
    shared_ = open_loops(outer, parallel_for(work));
  }
  for (int v : c_.members) {
    const Primitive& p = graph_.prims[dag_.prim[v]];
    const std::string& t = p.output();
    if (const auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
      // Read only by a reshape of unit dims that the kernel writes (a pool's [N, C, H, W, 1,
      // 1] to [N, C, H, W]): the same elements in the same order, stored there directly.
      const std::string into = written(t) ? "" : unit_dims_reshape_written(v);
      buffer_[t] = written(t)     ? out_ptr_.at(t)
                   : into.empty() ? scratch(graph_.value(t).dtype, numel(graph_.value(t).shape))
                                  : out_ptr_.at(into);
      reduce_phase(p, *r);
      if (!into.empty()) done_.insert(into);
    } else if (const auto* l = std::get_if<LinearAttrs>(&p.attrs)) {
      if (graph_.value(t).dtype != DType::kFloat32 && graph_.value(t).dtype != DType::kInt32)
        throw Error("cpu codegen: " + p.describe() +
                    ": linear primitives are generated for float32 and int32 only");
      const bool integer = graph_.value(t).dtype == DType::kInt32;
      if (written(t)) buffer_[t] = out_ptr_.at(t);
      plan_epilogue(p);
      if (std::holds_alternative<MatMulAttrs>(*l)) {
        const Shape& cs = graph_.value(t).shape;
        const Shape& as = graph_.value(p.inputs[0]).shape;
        // The packed GEMM's micro-kernel is float32; int32 sums take the loop nest.
        if (!integer && use_gemm(cs[cs.size() - 2], cs.back(), as.back()))
          matmul_gemm(p);
        else
          matmul_phase(p);
      } else {
        const ConvAttrs& a = std::get<ConvAttrs>(*l);
        const Shape& ws = graph_.value(p.inputs[1]).shape;
        const int64_t mg = ws[0] / a.group;
        const bool depthwise = mg == 1 && ws[1] == 1;
        if (!depthwise && !integer &&
            use_gemm(mg,
                     numel(Shape(graph_.value(t).shape.begin() + 2, graph_.value(t).shape.end())),
                     ws[1] * numel(Shape(ws.begin() + 2, ws.end()))))
          conv_gemm(p, a);
        else
          conv_phase(p, a);
      }
      for (const std::string& w : epilogue_writes_) done_.insert(w);
      epilogue_writes_.clear();
    } else if (p.kind() == PrimKind::kOpaque) {
      throw Error("cpu codegen: " + p.describe() + " is opaque: not generated");
    } else {
      continue;
    }
    if (written(t)) done_.insert(t);
  }
  // The remaining written tensors, grouped by shape in order of first appearance.
  std::vector<std::vector<std::string>> groups;
  for (const std::string& w : writes_) {
    if (done_.count(w)) continue;
    const Shape& s = graph_.value(w).shape;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& x) { return graph_.value(x[0]).shape == s; });
    if (g == groups.end())
      groups.push_back({w});
    else
      g->push_back(w);
  }
  for (const auto& g : groups) pointwise_phase(g);
  if (!shared_.empty()) {
    shared_.clear();
    close_loops(outer);
  }
  std::string source = head.str() + statics_.str() + scope().os.str() + "}\n";
  scopes_.clear();
  return {symbol, source, reads_, writes_};
}

}  // namespace cpu_gen

namespace {

bool member_supported(const PrimGraph& graph, const Primitive& p) {
  for (const std::string& t : p.inputs)
    if (!codegen::dtype_supported(graph.value(t).dtype, true)) return false;
  for (const std::string& t : p.outputs)
    if (!codegen::dtype_supported(graph.value(t).dtype, true)) return false;
  switch (p.kind()) {
    case PrimKind::kElementwise:
      return codegen::elementwise_supported(graph, p, std::get<ElementwiseAttrs>(p.attrs), true);
    case PrimKind::kBroadcast:
    case PrimKind::kReduce:
      return p.inputs.size() == 1;
    case PrimKind::kLayout:
      return !p.inputs.empty();
    case PrimKind::kLinear: {
      // float32, or int32 operands summed in int32 (the integer operators of quantized
      // models: exact, as onnxruntime's int32 accumulation).
      if (p.inputs.size() != 2) return false;
      const DType t = graph.value(p.output()).dtype;
      if (t != DType::kFloat32 && t != DType::kInt32) return false;
      for (const std::string& in : p.inputs)
        if (graph.value(in).dtype != t) return false;
      if (const auto* conv = std::get_if<ConvAttrs>(&std::get<LinearAttrs>(p.attrs)))
        return graph.value(p.inputs[0]).shape.size() >= 3 && conv->group >= 1;
      return true;
    }
    case PrimKind::kOpaque:
      return false;
  }
  return false;
}

// The largest loop nest of the kernel: output elements, reduced inputs, linear flops / 8.
int64_t kernel_work(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  int64_t work = 0;
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    int64_t w = numel(graph.value(p.output()).shape);
    if (p.kind() == PrimKind::kReduce) w = numel(graph.value(p.inputs[0]).shape);
    if (p.kind() == PrimKind::kLinear) w = prim_flops(graph, p) / 8;
    work = std::max(work, w);
  }
  return work;
}

const Primitive* linear_member(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  for (int v : c.members)
    if (graph.prims[dag.prim[v]].kind() == PrimKind::kLinear) return &graph.prims[dag.prim[v]];
  return nullptr;
}

}  // namespace

bool cpu_codegen_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  if (c.members.empty()) return false;
  for (int v : c.members)
    if (!member_supported(graph, graph.prims[dag.prim[v]])) return false;
  return true;
}

std::string CpuSchedule::key() const {
  if (*this == CpuSchedule{}) return "default";
  return "par=" + std::to_string(parallel ? 1 : 0) +
         ";minpar=" + std::to_string(min_parallel_work) + ";rows=" + std::to_string(rows) +
         ";cols=" + std::to_string(cols) + ";gemm=" + std::to_string(gemm) +
         ";mc=" + std::to_string(mc) + ";nc=" + std::to_string(nc);
}

CpuSchedule CpuSchedule::from_key(const std::string& key) {
  CpuSchedule s;
  if (key == "default") return s;
  long long par = 0, minpar = 0, rows = 0, cols = 0, gemm = 0, mc = 0, nc = 0;
  if (std::sscanf(key.c_str(), "par=%lld;minpar=%lld;rows=%lld;cols=%lld;gemm=%lld;mc=%lld;nc=%lld",
                  &par, &minpar, &rows, &cols, &gemm, &mc, &nc) != 7 ||
      rows < 1 || cols < 1 || mc < 1 || nc < 1)
    throw Error("cpu codegen: '" + key + "' is not a CPU schedule key");
  s.parallel = par != 0;
  s.min_parallel_work = minpar;
  s.rows = rows, s.cols = cols, s.gemm = gemm, s.mc = mc, s.nc = nc;
  if (s.key() != key) throw Error("cpu codegen: '" + key + "' is not a CPU schedule key");
  return s;
}

std::vector<CpuSchedule> cpu_schedule_space(const PrimGraph& graph, const KernelDag& dag,
                                            const Candidate& c) {
  std::vector<CpuSchedule> space = {CpuSchedule{}};
  const int64_t work = kernel_work(graph, dag, c);
  auto add = [&](CpuSchedule s) {
    if (std::find(space.begin(), space.end(), s) == space.end()) space.push_back(s);
  };
  CpuSchedule serial;
  serial.parallel = false;
  if (const Primitive* l = linear_member(graph, dag, c)) {
    const bool big = prim_flops(graph, *l) >= (1 << 16);
    const bool matmul = std::holds_alternative<MatMulAttrs>(std::get<LinearAttrs>(l->attrs));
    const Shape& ws = graph.value(l->inputs[1]).shape;
    const bool depthwise = !matmul && ws[1] == 1 &&
                           ws[0] == std::get<ConvAttrs>(std::get<LinearAttrs>(l->attrs)).group;
    if (big && !depthwise) {  // packed GEMM block shapes
      for (auto [mc, nc] : {std::pair<int64_t, int64_t>{96, 128}, {24, 512}}) {
        CpuSchedule s;
        s.mc = mc, s.nc = nc;
        add(s);
      }
    }
    // The other algorithm than the default's: direct loops or packed GEMM.
    const Shape& cs = graph.value(l->output()).shape;
    const bool packed_default =
        matmul
            ? cpu_gen::gemm_by_default(cs[cs.size() - 2], cs.back(),
                                       graph.value(l->inputs[0]).shape.back())
            : !depthwise && cpu_gen::gemm_by_default(
                                ws[0] / std::get<ConvAttrs>(std::get<LinearAttrs>(l->attrs)).group,
                                numel(Shape(cs.begin() + 2, cs.end())),
                                ws[1] * numel(Shape(ws.begin() + 2, ws.end())));
    if (packed_default) {
      CpuSchedule direct;
      direct.gemm = 0;
      direct.rows = matmul ? 6 : 8;
      direct.cols = 128;
      add(direct);
    } else if (!depthwise) {
      CpuSchedule packed;
      packed.gemm = 1;
      add(packed);
    }
    if (work >= CpuSchedule{}.min_parallel_work) add(serial);
  } else if (work >= CpuSchedule{}.min_parallel_work) {
    add(serial);
    CpuSchedule eager;  // parallel from smaller loop nests on
    eager.min_parallel_work = 1 << 12;
    if (work < (1 << 17)) add(eager);
  }
  return space;
}

GeneratedKernel generate_cpu_kernel(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, const std::string& symbol,
                                    const CpuSchedule& schedule,
                                    const std::set<std::string>& bfloat16) {
  for (int v : c.members) {
    const Primitive& p = graph.prims[dag.prim[v]];
    if (!member_supported(graph, p))
      throw Error("cpu codegen: " + p.describe() + " is not generated (kind or dtypes)");
  }
  return cpu_gen::KernelWriter(graph, dag, c, schedule, bfloat16).run(symbol);
}

std::string cpu_codegen_prelude() { return cpu_gen::prelude_text(); }

}  // namespace kora
