// The __global__ functions of a generated CUDA kernel, one per launch: a shape (and for a
// reduce launch the member) and the schedule in; a 1-D thread mapping, the values expanded
// per element (src/codegen/value_writer.cc) and the stores out.
//   pointwise  each thread stores `items` elements, a block's elements apart (loads and
//              stores coalesce); the flat index is unflattened into coordinates with
//              constant divisors (32-bit when every tensor of the kernel has fewer than
//              2^30 elements) and stores go to the flat index itself;
//   reduce     output elements are rows. thread: a thread per row (`items` rows per
//              thread), loops over the reduced dims; warp: a warp per row, lanes stride
//              over the row's flattened reduced elements and combine with shuffles;
//              block: a block per row, warps combine through shared memory; multi-block:
//              blocks fold chunks of a row into partials (scratch), a second launch
//              combines each row's. Float32 accumulates in double, as the interpreter.
//   row-fused  a warp or block per row computes each reduce member in turn (the result
//              shared by the row's threads), then the row's outputs, in one launch.
#include <algorithm>
#include <functional>

#include "codegen/reduce.h"
#include "cuda/codegen_internal.h"

namespace kora::cuda_gen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

void KernelWriter::begin_function(const std::string& comment) {
  function_ = symbol_ + "_" + num(static_cast<int64_t>(launches_.size()));
  scopes_.clear();
  scopes_.emplace_back();
  scope().indent = "  ";
  line("// " + comment);
}

void KernelWriter::end_function(int64_t work, int64_t per_block) {
  if (device_body_)  // a part of a horizontal kernel, its block index given
    functions_ << "__device__ __forceinline__ void " << function_
               << "(const kora_block_index blockIdx, " << params_ << ") {\n";
  else
    functions_ << "extern \"C\" __global__ void __launch_bounds__(" << schedule_.block << ") "
               << function_ << "(" << params_ << ") {\n";
  functions_ << scope().os.str() << "}\n";
  launches_.push_back({function_, work, per_block, schedule_.block});
  scopes_.clear();
  known_offsets_.clear();
}

Coords KernelWriter::unflatten(const std::string& flat, const Shape& shape) {
  Coords coords(shape.size(), "0");
  bool outermost = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int64_t stride = 1;
    for (size_t e = d + 1; e < shape.size(); ++e) stride *= shape[e];
    std::string expr = stride == 1 ? flat : "(" + flat + " / " + num(stride) + ")";
    if (!outermost) expr = "(" + expr + " % " + num(shape[d]) + ")";
    outermost = false;
    if (expr == flat) {
      coords[d] = flat;
      continue;
    }
    coords[d] = fresh("i");
    line("[[maybe_unused]] const " + index_ + " " + coords[d] + " = " + expr + ";");
  }
  return coords;
}

void KernelWriter::pointwise_launch(const std::vector<std::string>& writes) {
  const Shape& shape = graph_.value(writes[0]).shape;
  const int64_t n = numel(shape), block = schedule_.block, items = schedule_.items;
  begin_function(writes[0] + (writes.size() > 1 ? " and others of its shape" : ""));
  line("const " + index_ + " base = (" + index_ + ")blockIdx.x * " + num(block * items) + " + (" +
       index_ + ")threadIdx.x;");
  std::string idx = "base";
  if (items > 1) {
    line("#pragma unroll");
    open_block("for (int j = 0; j < " + num(items) + "; ++j)");
    line("const " + index_ + " idx = base + j * " + num(block) + ";");
    idx = "idx";
  }
  open_block("if (" + idx + " < " + num(n) + ")");
  const Coords coords = unflatten(idx, shape);
  known_offsets_[{coords, shape}] = idx;
  for (const std::string& w : writes) {
    const std::string v = value(w, coords);
    line(out_ptr_.at(w) + "[" + idx + "] = " + v + ";");
  }
  close_block();
  if (items > 1) close_block();
  end_function(n, block * items);
}

namespace {

// A reduce's shapes: the input's, which dims are reduced, the reduced dims alone.
struct ReduceShape {
  Shape in, red;
  std::vector<bool> reduced;
  ReduceShape(const Shape& x, const std::vector<int64_t>& axes)
      : in(x), red(x), reduced(x.size(), false) {
    for (int64_t a : axes) reduced[a] = true;
    for (size_t d = 0; d < x.size(); ++d)
      if (!reduced[d]) red[d] = 1;
  }
  // The input's coordinates: kept dims from the row's (kc), reduced ones from rc.
  Coords coords(const Coords& kc, const Coords& rc) const {
    Coords c(in.size());
    for (size_t d = 0; d < in.size(); ++d) c[d] = reduced[d] ? rc[d] : kc[d];
    return c;
  }
  bool inner_reduced() const {  // the last dim of size > 1 is reduced
    for (size_t d = in.size(); d-- > 0;)
      if (in[d] > 1) return reduced[d];
    return false;
  }
};

}  // namespace

void KernelWriter::row_loop(const std::string& first, int64_t stride, const Shape& red,
                            const std::function<void(const Coords&)>& body,
                            const std::string& end) {
  const int64_t items = schedule_.items;
  const std::string limit = end.empty() ? num(numel(red)) : end;
  open_block("for (" + index_ + " rb = " + first + "; rb < " + limit +
             "; rb += " + num(stride * items) + ")");
  std::string r = "rb";
  if (items > 1) {
    line("#pragma unroll");
    open_block("for (int j = 0; j < " + num(items) + "; ++j)");
    line("const " + index_ + " r = rb + j * " + num(stride) + ";");
    open_block("if (r < " + limit + ")");
    r = "r";
  }
  body(unflatten(r, red));
  if (items > 1) {
    close_block();
    close_block();
  }
  close_block();
}

void KernelWriter::combine_warp(const codegen::ReduceCode& code, const std::string& acc) {
  open_block("for (int s = 16; s > 0; s >>= 1)");
  line("const " + code.acc_type + " other = __shfl_down_sync(0xffffffffu, " + acc + ", s);");
  line(code.update(acc, "other"));
  close_block();
}

void KernelWriter::combine_block(const codegen::ReduceCode& code, const std::string& acc,
                                 bool to_all) {
  const int64_t warps = schedule_.block / 32;
  combine_warp(code, acc);
  const std::string partial = acc + "_partial";
  line("__shared__ " + code.acc_type + " " + partial + "[" + num(warps) + "];");
  line("if ((threadIdx.x & 31) == 0) " + partial + "[threadIdx.x >> 5] = " + acc + ";");
  line("__syncthreads();");
  open_block("if (threadIdx.x < 32)");
  line(acc + " = threadIdx.x < " + num(warps) + " ? " + partial + "[threadIdx.x] : (" +
       code.acc_type + ")(" + code.init + ");");
  combine_warp(code, acc);
  if (to_all) line("if (threadIdx.x == 0) " + partial + "[0] = " + acc + ";");
  close_block();
  if (to_all) {
    line("__syncthreads();");
    line(acc + " = " + partial + "[0];");
  }
}

void KernelWriter::reduce_launch(const Primitive& p, const ReduceAttrs& r) {
  const std::string& x = p.inputs.at(0);
  const ReduceShape rs(graph_.value(x).shape, r.axes);
  const Shape& os = graph_.value(p.output()).shape;
  const std::string& out = buffer_.at(p.output());
  const codegen::ReduceCode code = codegen::reduce_code(graph_, p, r);
  const int64_t rows = numel(os), count = code.count;
  const int64_t block = schedule_.block, items = schedule_.items, warps = block / 32;
  CudaReduce strategy = reduce_;
  if (strategy == CudaReduce::kAuto)
    strategy = cuda_reduce_strategy_for(rows, count, rs.inner_reduced());
  begin_function(p.output() + " = reduce " + reduce_op_name(r.op) + " of " + x + " (" +
                 cuda_reduce_name(strategy) + " per row)");
  const std::string acc = "acc";
  auto fold = [&](const Coords& kc) {
    return [&, kc](const Coords& rc) { line(code.update(acc, value(x, rs.coords(kc, rc)))); };
  };
  switch (strategy) {
    case CudaReduce::kWarp: {
      line("const int lane = threadIdx.x & 31;");
      line("const " + index_ + " row = (" + index_ + ")blockIdx.x * " + num(warps) +
           " + (threadIdx.x >> 5);");
      // (row is the same for a whole warp: the shuffles below have every lane)
      open_block("if (row < " + num(rows) + ")");
      const Coords kc = unflatten("row", os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      row_loop("lane", 32, rs.red, fold(kc));
      combine_warp(code, acc);
      line("if (lane == 0) " + out + "[row] = " + code.result(acc) + ";");
      close_block();
      end_function(rows, warps);
      return;
    }
    case CudaReduce::kBlock: {
      line("const " + index_ + " row = blockIdx.x;");
      const Coords kc = unflatten("row", os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      row_loop("threadIdx.x", block, rs.red, fold(kc));
      combine_block(code, acc, false);
      line("if (threadIdx.x == 0) " + out + "[row] = " + code.result(acc) + ";");
      end_function(rows, 1);
      return;
    }
    case CudaReduce::kMultiBlock: {
      // Each of `splits` blocks per row folds a chunk of it into a partial; then a thread
      // per row combines the row's partials.
      const int64_t splits =
          std::max<int64_t>(1, std::min((count + block * items * 4 - 1) / (block * items * 4),
                                        (1024 + rows - 1) / std::max<int64_t>(rows, 1)));
      const int64_t chunk = (count + splits - 1) / splits;
      const std::string partials = scratch(code.acc_type, rows * splits);
      line("[[maybe_unused]] const " + index_ + " row = blockIdx.x / " + num(splits) + ";");
      line("const " + index_ + " begin = blockIdx.x % " + num(splits) + " * " + num(chunk) + ";");
      line("const " + index_ + " end = begin + " + num(chunk) + " < " + num(count) + " ? begin + " +
           num(chunk) + " : " + num(count) + ";");
      const Coords kc = unflatten("row", os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      row_loop("begin + (" + index_ + ")threadIdx.x", block, rs.red, fold(kc), "end");
      combine_block(code, acc, false);
      line("if (threadIdx.x == 0) " + partials + "[blockIdx.x] = " + acc + ";");
      end_function(rows * splits, 1);
      begin_function(p.output() + ": the partials of each row combined (" + num(splits) +
                     " per row)");
      line("const " + index_ + " row = (" + index_ + ")blockIdx.x * " + num(block) + " + (" +
           index_ + ")threadIdx.x;");
      open_block("if (row < " + num(rows) + ")");
      line(code.acc_type + " " + acc + " = " + partials + "[row * " + num(splits) + "];");
      open_block("for (int s = 1; s < " + num(splits) + "; ++s)");
      line(code.update(acc, partials + "[row * " + num(splits) + " + s]"));
      close_block();
      line(out + "[row] = " + code.result(acc) + ";");
      close_block();
      end_function(rows, block);
      return;
    }
    default: {  // a thread per row
      line("const " + index_ + " base = (" + index_ + ")blockIdx.x * " + num(block * items) +
           " + (" + index_ + ")threadIdx.x;");
      std::string row = "base";
      if (items > 1) {
        line("#pragma unroll");
        open_block("for (int j = 0; j < " + num(items) + "; ++j)");
        line("const " + index_ + " row = base + j * " + num(block) + ";");
        row = "row";
      }
      open_block("if (" + row + " < " + num(rows) + ")");
      const Coords kc = unflatten(row, os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      Coords rc(rs.in.size(), "0");
      int loops = 0;
      for (size_t d = 0; d < rs.in.size(); ++d) {
        if (rs.red[d] <= 1) continue;
        rc[d] = fresh("r");
        open_block("for (" + index_ + " " + rc[d] + " = 0; " + rc[d] + " < " + num(rs.red[d]) +
                   "; ++" + rc[d] + ")");
        ++loops;
      }
      line(code.update(acc, value(x, rs.coords(kc, rc))));
      for (int k = 0; k < loops; ++k) close_block();
      line(out + "[" + row + "] = " + code.result(acc) + ";");
      close_block();
      if (items > 1) close_block();
      end_function(rows, block * items);
      return;
    }
  }
}

std::vector<const Primitive*> KernelWriter::reduces() const {
  std::vector<const Primitive*> result;
  for (int v : c_.members)
    if (graph_.prims[dag_.prim[v]].kind() == PrimKind::kReduce)
      result.push_back(&graph_.prims[dag_.prim[v]]);
  return result;
}

bool KernelWriter::row_fusible() {
  if (row_fusible_ >= 0) return row_fusible_;
  row_fusible_ = 0;
  const std::vector<const Primitive*> rs = reduces();
  if (rs.empty()) return false;
  auto axes = [](const Primitive* p) {
    std::vector<int64_t> a = std::get<ReduceAttrs>(p->attrs).axes;
    std::sort(a.begin(), a.end());
    return a;
  };
  const Shape& xs = graph_.value(rs[0]->inputs.at(0)).shape;
  const Shape& os = graph_.value(rs[0]->output()).shape;
  for (const Primitive* p : rs)
    if (p->inputs.size() != 1 || graph_.value(p->inputs[0]).shape != xs || axes(p) != axes(rs[0]))
      return false;
  for (const std::string& w : writes_)
    if (graph_.value(w).shape != xs && graph_.value(w).shape != os) return false;
  // Dry run: every value the launch would compute, the reduce results bound to the row.
  const ReduceShape shape(xs, axes(rs[0]));
  Coords kc(os.size(), "0"), rc(xs.size(), "0");
  for (size_t d = 0; d < xs.size(); ++d) {
    if (os[d] > 1) kc[d] = "k" + num(static_cast<int64_t>(d));
    if (shape.red[d] > 1) rc[d] = "q" + num(static_cast<int64_t>(d));
  }
  const Coords xc = shape.coords(kc, rc);
  const std::string statics = statics_.str();
  scopes_.emplace_back();
  bool ok = true;
  try {
    for (const Primitive* p : rs) {
      value(p->inputs[0], xc);
      bound_[p->output()] = {kc, "bound"};
    }
    for (const std::string& w : writes_) value(w, graph_.value(w).shape == xs ? xc : kc);
  } catch (const codegen::NotAtBoundCoords&) {
    ok = false;
  }
  bound_.clear();
  scopes_.clear();
  statics_.str(statics);
  statics_.seekp(0, std::ios::end);
  row_fusible_ = ok ? 1 : 0;
  return ok;
}

void KernelWriter::fused_row_launch(CudaReduce group) {
  const std::vector<const Primitive*> rs = reduces();
  const Primitive& first = *rs[0];
  const Shape& xs = graph_.value(first.inputs[0]).shape;
  const Shape& os = graph_.value(first.output()).shape;
  const ReduceShape shape(xs, std::get<ReduceAttrs>(first.attrs).axes);
  const bool warp = group == CudaReduce::kRowWarp;
  const int64_t rows = numel(os), block = schedule_.block, warps = block / 32;
  const int64_t threads = warp ? 32 : block;  // per row
  begin_function("every reduce and output of a row, a " + std::string(warp ? "warp" : "block") +
                 " per row");
  std::string tid = "threadIdx.x";
  if (warp) {
    line("const int lane = threadIdx.x & 31;");
    line("const " + index_ + " row = (" + index_ + ")blockIdx.x * " + num(warps) +
         " + (threadIdx.x >> 5);");
    open_block("if (row < " + num(rows) + ")");  // (the same for a whole warp)
    tid = "lane";
  } else {
    line("const " + index_ + " row = blockIdx.x;");
  }
  const Coords kc = unflatten("row", os);
  auto written = [&](const std::string& t) {
    return std::find(writes_.begin(), writes_.end(), t) != writes_.end();
  };
  for (const Primitive* p : rs) {
    const codegen::ReduceCode code =
        codegen::reduce_code(graph_, *p, std::get<ReduceAttrs>(p->attrs));
    const std::string acc = fresh("acc");
    line("// " + p->output() + " = reduce " + reduce_op_name(code.op) + " of " + p->inputs[0]);
    line(code.acc_type + " " + acc + " = " + code.init + ";");
    row_loop(tid, threads, shape.red, [&](const Coords& rc) {
      line(code.update(acc, value(p->inputs[0], shape.coords(kc, rc))));
    });
    if (warp) {
      combine_warp(code, acc);
      line(acc + " = __shfl_sync(0xffffffffu, " + acc + ", 0);");
    } else {
      combine_block(code, acc, true);
    }
    const std::string v = emit_local(code.out, code.result(acc));
    bound_[p->output()] = {kc, v};
    if (written(p->output()))
      line("if (" + tid + " == 0) " + out_ptr_.at(p->output()) + "[row] = " + v + ";");
  }
  std::vector<std::string> per_row, per_element;
  for (const std::string& w : writes_) {
    if (bound_.count(w)) continue;
    (graph_.value(w).shape == xs ? per_element : per_row).push_back(w);
  }
  if (!per_row.empty()) {
    open_block("if (" + tid + " == 0)");
    for (const std::string& w : per_row) line(out_ptr_.at(w) + "[row] = " + value(w, kc) + ";");
    close_block();
  }
  if (!per_element.empty()) {
    line("// " + per_element[0] + (per_element.size() > 1 ? " and others of its shape" : ""));
    row_loop(tid, threads, shape.red, [&](const Coords& rc) {
      const Coords c = shape.coords(kc, rc);
      for (const std::string& w : per_element) {
        const std::string v = value(w, c);
        line(out_ptr_.at(w) + "[" + offset(xs, c) + "] = " + v + ";");
      }
    });
  }
  bound_.clear();
  if (warp) close_block();
  end_function(rows, warp ? warps : 1);
}

}  // namespace kora::cuda_gen
