// The __global__ functions of a generated CUDA kernel, one per launch: a shape (and for a
// reduce launch the member) and the schedule in; a 1-D thread mapping, the values expanded
// per element (src/codegen/value_writer.cc) and the stores out.
//   pointwise  each thread stores `items` elements, a block's elements apart (loads and
//              stores coalesce); the flat index is unflattened into coordinates with
//              constant divisors and stores go to the flat index itself;
//   reduce     output elements are rows. thread: a thread per row (`items` rows per
//              thread), loops over the reduced dims; warp: a warp per row, lanes stride
//              over the row's flattened reduced elements and combine with shuffles;
//              block: a block per row, warps combine through shared memory. Float32
//              accumulates in double, as the interpreter.
#include <algorithm>

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
  functions_ << "extern \"C\" __global__ void __launch_bounds__(" << schedule_.block << ") "
             << function_ << "(" << params_ << ") {\n"
             << scope().os.str() << "}\n";
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
    line("[[maybe_unused]] const int64_t " + coords[d] + " = " + expr + ";");
  }
  return coords;
}

void KernelWriter::pointwise_launch(const std::vector<std::string>& writes) {
  const Shape& shape = graph_.value(writes[0]).shape;
  const int64_t n = numel(shape), block = schedule_.block, items = schedule_.items;
  begin_function(writes[0] + (writes.size() > 1 ? " and others of its shape" : ""));
  line("const int64_t base = (int64_t)blockIdx.x * " + num(block * items) + " + threadIdx.x;");
  std::string idx = "base";
  if (items > 1) {
    line("#pragma unroll");
    open_block("for (int j = 0; j < " + num(items) + "; ++j)");
    line("const int64_t idx = base + j * " + num(block) + ";");
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

void KernelWriter::reduce_launch(const Primitive& p, const ReduceAttrs& r) {
  const std::string& x = p.inputs.at(0);
  const Shape& xs = graph_.value(x).shape;
  const Shape& os = graph_.value(p.output()).shape;
  const std::string& out = buffer_.at(p.output());
  const codegen::ReduceCode code = codegen::reduce_code(graph_, p, r);
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t a : r.axes) reduced[a] = true;
  Shape red = xs;  // the reduced dims (others 1)
  for (size_t d = 0; d < xs.size(); ++d)
    if (!reduced[d]) red[d] = 1;
  bool inner_reduced = false;  // the last dim of size > 1 is reduced
  for (size_t d = xs.size(); d-- > 0;)
    if (xs[d] > 1) {
      inner_reduced = reduced[d];
      break;
    }
  const int64_t rows = numel(os), count = code.count;
  const int64_t block = schedule_.block, items = schedule_.items, warps = block / 32;
  const CudaReduce strategy = schedule_.reduce == CudaReduce::kAuto
                                  ? cuda_reduce_strategy_for(rows, count, inner_reduced)
                                  : schedule_.reduce;
  begin_function(p.output() + " = reduce " + reduce_op_name(r.op) + " of " + x + " (" +
                 cuda_reduce_name(strategy) + " per row)");
  // The input's coordinates: kept dims from the row, reduced ones from `rc`.
  auto input_coords = [&](const Coords& kc, const Coords& rc) {
    Coords c(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) c[d] = reduced[d] ? rc[d] : kc[d];
    return c;
  };
  const std::string acc = "acc";
  // Shuffle-combines the warp's accumulators into lane 0's.
  auto warp_combine = [&]() {
    open_block("for (int s = 16; s > 0; s >>= 1)");
    line("const " + code.acc_type + " other = __shfl_down_sync(0xffffffffu, " + acc + ", s);");
    line(code.update(acc, "other"));
    close_block();
  };
  // Folds this thread's share of the row into acc: the flattened reduced elements from
  // `first` on, `stride` apart (the threads sharing the row), `items` per step (unrolled).
  auto strided_fold = [&](const Coords& kc, const std::string& first, int64_t stride) {
    open_block("for (int64_t rb = " + first + "; rb < " + num(count) +
               "; rb += " + num(stride * items) + ")");
    std::string rr = "rb";
    if (items > 1) {
      line("#pragma unroll");
      open_block("for (int j = 0; j < " + num(items) + "; ++j)");
      line("const int64_t r = rb + j * " + num(stride) + ";");
      open_block("if (r < " + num(count) + ")");
      rr = "r";
    }
    const Coords rc = unflatten(rr, red);
    line(code.update(acc, value(x, input_coords(kc, rc))));
    if (items > 1) {
      close_block();
      close_block();
    }
    close_block();
  };
  switch (strategy) {
    case CudaReduce::kAuto:
    case CudaReduce::kThread: {
      line("const int64_t base = (int64_t)blockIdx.x * " + num(block * items) + " + threadIdx.x;");
      std::string row = "base";
      if (items > 1) {
        line("#pragma unroll");
        open_block("for (int j = 0; j < " + num(items) + "; ++j)");
        line("const int64_t row = base + j * " + num(block) + ";");
        row = "row";
      }
      open_block("if (" + row + " < " + num(rows) + ")");
      const Coords kc = unflatten(row, os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      Coords rc(xs.size(), "0");
      int loops = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        if (red[d] <= 1) continue;
        rc[d] = fresh("r");
        open_block("for (int64_t " + rc[d] + " = 0; " + rc[d] + " < " + num(red[d]) + "; ++" +
                   rc[d] + ")");
        ++loops;
      }
      line(code.update(acc, value(x, input_coords(kc, rc))));
      for (int k = 0; k < loops; ++k) close_block();
      line(out + "[" + row + "] = " + code.result(acc) + ";");
      close_block();
      if (items > 1) close_block();
      end_function(rows, block * items);
      return;
    }
    case CudaReduce::kWarp: {
      line("const int lane = threadIdx.x & 31;");
      line("const int64_t row = (int64_t)blockIdx.x * " + num(warps) + " + (threadIdx.x >> 5);");
      // (row is the same for a whole warp: the shuffles below have every lane)
      open_block("if (row < " + num(rows) + ")");
      const Coords kc = unflatten("row", os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      strided_fold(kc, "lane", 32);
      warp_combine();
      line("if (lane == 0) " + out + "[row] = " + code.result(acc) + ";");
      close_block();
      end_function(rows, warps);
      return;
    }
    case CudaReduce::kBlock: {
      line("const int64_t row = blockIdx.x;");
      const Coords kc = unflatten("row", os);
      line(code.acc_type + " " + acc + " = " + code.init + ";");
      strided_fold(kc, "threadIdx.x", block);
      warp_combine();
      line("__shared__ " + code.acc_type + " partial[" + num(warps) + "];");
      line("if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = " + acc + ";");
      line("__syncthreads();");
      open_block("if (threadIdx.x < 32)");
      line(acc + " = threadIdx.x < " + num(warps) + " ? partial[threadIdx.x] : (" + code.acc_type +
           ")(" + code.init + ");");
      warp_combine();
      line("if (threadIdx.x == 0) " + out + "[row] = " + code.result(acc) + ";");
      close_block();
      end_function(rows, 1);
      return;
    }
  }
}

}  // namespace kora::cuda_gen
