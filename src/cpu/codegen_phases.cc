// Loop nests of a generated CPU kernel, one phase each: a tensor shape (and for reduce
// and linear phases the member) in, nested loops over its dims out, the innermost dim
// contiguous, the outer ones parallel (OpenMP) when the schedule says so and the work
// pays for it (inside a kernel's shared outer loops, those dims are the shared loops'
// and no phase opens a parallel loop).
//   pointwise  stores written tensors of one shape, their values expanded per element;
//   reduce     accumulates the (expanded) input over the reduced dims, in double for
//              float32 (as the interpreter; in float for at most 4096 values that are
//              never negative), into the member's buffer; when kept dims
//              follow the reduced ones, a row of accumulators keeps the inner loop
//              contiguous (the trailing kept dims that fit 4096, the others outer
//              loops: a split attention's radix sum; one row of outputs, a global
//              pool taken channels last: the reduced rows in parts run in parallel,
//              combined in order; a reduced
//              input the kernel writes is stored as it is reduced, a bfloat16 one
//              by rows); pooling (max or sum over the windows of a window member)
//              folds whole rows, or padded planes, per window position;
//   matmul     rows of C in blocks (schedule rows x cols) accumulated in registers/L1
//              from the expanded A and B, then the epilogue on each element;
//   conv       direct: a block of output channels x one output row, the inner loop over
//              the last output dim restricted to the input's range (no padding tests),
//              then the epilogue.
#include <algorithm>
#include <limits>

#include "codegen/reduce.h"
#include "cpu/codegen_internal.h"

namespace kora::cpu_gen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// The coordinates, over the dims of `dims` above 1, of the row-major flat index `i` of
// those dims (the others left as they are).
void unflatten(const Shape& dims, const std::string& i, Coords& coords) {
  int64_t after = numel(dims);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] <= 1) continue;
    const bool first = after == numel(dims);
    after /= dims[d];
    const std::string e = after == 1 ? i : "(" + i + " / " + num(after) + ")";
    coords[d] = first ? e : "(" + e + " % " + num(dims[d]) + ")";
  }
}

}  // namespace

bool KernelWriter::parallel_for(int64_t work) const {
  return schedule_.parallel && work >= schedule_.min_parallel_work;
}

Coords KernelWriter::open_loops(const Shape& shape, bool parallel, size_t first, size_t end,
                                bool simd, RowChunk* chunk) {
  end = std::min(end, shape.size());
  Coords coords(shape.size(), "0");
  int loops = 0, opened = 0;
  // Inside the kernel's shared outer loops: their coordinates, and no loop in parallel.
  const size_t shared = std::min(shared_.size(), shape.size());
  for (size_t d = first; d < shared && d < end; ++d) coords[d] = shared_[d];
  first = std::max(first, shared);
  parallel = parallel && shared_.empty();
  size_t last = SIZE_MAX;  // the innermost loop's dim
  for (size_t d = first; d < end; ++d)
    if (loop_extent(shape, d) > 1) ++loops, last = d;
  // A chunked innermost loop of one chunk is no loop: nothing to run in parallel there.
  const bool one_chunk = chunk && loops > 0 && loop_extent(shape, last) <= kRowChunk;
  // Collapsed: every loop but the innermost one of a simd or chunked nest (outer loops
  // alone, all of them: threads share 7 x 7 pixels evenly, not 7 rows).
  const int collapsed = simd || chunk ? loops - 1 : loops;
  if (parallel && loops > 0 && !(loops == 1 && one_chunk))
    line(loops == 1
             ? (simd && !chunk ? "#pragma omp parallel for simd" : "#pragma omp parallel for")
             : "#pragma omp parallel for collapse(" + num(collapsed) + ")");
  for (size_t d = first; d < end; ++d) {
    const int64_t lo = d == part_.dim ? part_.lo : 0;
    if (loop_extent(shape, d) == 1) {
      coords[d] = num(lo);
      continue;
    }
    const int64_t hi = lo + loop_extent(shape, d);
    if (d == last && chunk) {
      // The chunk: its first coordinate and count; the caller opens the loop over it.
      chunk->first = fresh("i");
      chunk->count = fresh("n");
      if (one_chunk) {
        chunk->extent = hi - lo;
        open_block("");
        line("const int64_t " + chunk->first + " = " + num(lo) + ", " + chunk->count + " = " +
             num(hi - lo) + ";");
      } else {
        open_block("for (int64_t " + chunk->first + " = " + num(lo) + "; " + chunk->first + " < " +
                   num(hi) + "; " + chunk->first + " += " + num(kRowChunk) + ")");
        line("const int64_t " + chunk->count + " = " + num(hi) + " - " + chunk->first + " < " +
             num(kRowChunk) + " ? " + num(hi) + " - " + chunk->first + " : " + num(kRowChunk) +
             ";");
      }
      coords[d] = fresh("i");
      chunk->at = coords[d];
      continue;
    }
    if (++opened == loops && simd && !(parallel && loops == 1)) line("#pragma omp simd");
    coords[d] = fresh("i");
    open_block("for (int64_t " + coords[d] + " = " + num(lo) + "; " + coords[d] + " < " + num(hi) +
               "; ++" + coords[d] + ")");
  }
  return coords;
}

void KernelWriter::close_loops(const Shape& shape, size_t first, size_t end) {
  end = std::min(end, shape.size());
  first = std::max(first, std::min(shared_.size(), shape.size()));
  for (size_t d = first; d < end; ++d)
    if (loop_extent(shape, d) > 1) close_block();
}

std::vector<KernelWriter::Part> KernelWriter::concat_parts(const Shape& shape) const {
  // Beyond, the kernel's text grows past what is worth compiling. Tests are no alternative:
  // a test per input per element reads every input's element (the values are loaded before
  // the tests choose), 128 loads per element for an LSTM's output of 64 steps both ways.
  constexpr size_t kMostParts = 1024;
  std::set<int64_t> cuts;
  size_t dim = SIZE_MAX;
  for (int v : c_.members) {
    const Primitive& p = graph_.prims[dag_.prim[v]];
    const auto* la = std::get_if<LayoutAttrs>(&p.attrs);
    const auto* cat = la ? std::get_if<layout::Concat>(la) : nullptr;
    if (!cat || graph_.value(p.output()).shape != shape || buffer_.count(p.output())) continue;
    const size_t axis = static_cast<size_t>(cat->axis);
    if (dim != SIZE_MAX && axis != dim) continue;  // one axis is split
    dim = axis;
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      cuts.insert(cat->offsets[k]);
      cuts.insert(cat->offsets[k] + graph_.value(p.inputs[k]).shape[axis]);
    }
  }
  if (dim == SIZE_MAX) return {};
  cuts.insert(0);
  cuts.insert(shape[dim]);
  std::vector<Part> parts;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it)
    if (*it < *std::next(it) && *it >= 0 && *std::next(it) <= shape[dim])
      parts.push_back({dim, *it, *std::next(it)});
  if (parts.size() < 2 || parts.size() > kMostParts) return {};
  return parts;
}

std::vector<KernelWriter::Part> KernelWriter::read_concat_parts(
    const Shape& shape, const std::vector<std::string>& writes) {
  constexpr size_t kMostParts = 64;  // each part repeats the loop body
  const bool concat = std::any_of(c_.members.begin(), c_.members.end(), [&](int v) {
    const auto* la = std::get_if<LayoutAttrs>(&graph_.prims[dag_.prim[v]].attrs);
    return la && std::holds_alternative<layout::Concat>(*la);
  });
  if (!concat) return {};  // no dry run where nothing can be cut
  const size_t first = std::min(shared_.size(), shape.size());
  Coords coords(shape.size(), "0");
  for (size_t d = 0; d < shape.size(); ++d)
    if (d < first)
      coords[d] = shared_[d];
    else if (shape[d] > 1)
      coords[d] = "kora_dim" + num(d);
  collecting_cuts_ = true;
  try {
    dry_run([&] {
      for (const std::string& w : writes) value(w, coords);
    });
  } catch (...) {
    collecting_cuts_ = false;
    concat_cuts_.clear();
    throw;
  }
  collecting_cuts_ = false;
  std::map<std::string, std::set<int64_t>> cuts;
  cuts.swap(concat_cuts_);
  for (size_t d = first; d < shape.size(); ++d) {
    const auto c = cuts.find(coords[d]);
    if (shape[d] == 1 || c == cuts.end()) continue;
    std::set<int64_t> at = {0, shape[d]};
    for (int64_t x : c->second)
      if (x > 0 && x < shape[d]) at.insert(x);
    std::vector<Part> parts;
    for (auto it = at.begin(); std::next(it) != at.end(); ++it)
      parts.push_back({d, *it, *std::next(it)});
    if (parts.size() >= 2 && parts.size() <= kMostParts) return parts;
  }
  return {};
}

void KernelWriter::pointwise_phase(const std::vector<std::string>& writes) {
  const Shape& shape = graph_.value(writes[0]).shape;
  line("// " + writes[0] + (writes.size() > 1 ? " and others of its shape" : ""));
  // A concat member of this shape, or one read through a slice: one loop nest per part of
  // its axis that reads one input of each concat (copies at memory speed instead of a test
  // per input per element, and loads a loop vectorizes instead of clamped gathers).
  std::vector<Part> parts = concat_parts(shape);
  if (parts.empty()) parts = read_concat_parts(shape, writes);
  if (!parts.empty()) {
    // Parts along the innermost dim (a concat of channels stored last): the outer loops
    // once, in parallel, and every part's row inside them, so that each output row is
    // written whole by one thread in one pass (not a pass per part, each writing a piece
    // of every row: a bf16 concat of two 24-channel rows at 112x112 1.5x slower).
    const size_t dim = parts[0].dim;
    bool innermost = shared_.empty() && dim > 0;
    for (size_t d = dim + 1; d < shape.size(); ++d) innermost = innermost && shape[d] == 1;
    const Shape outer(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(dim));
    const bool one_pass = innermost && numel(outer) > 1;
    if (one_pass)
      shared_ = open_loops(outer, parallel_for(numel(shape) * static_cast<int64_t>(writes.size())));
    for (const Part& part : parts) {
      part_ = part;
      const int64_t work = numel(shape) / shape[part.dim] * (part.hi - part.lo) *
                           static_cast<int64_t>(writes.size());
      open_block("");  // each part's locals in a scope of its own
      pointwise_loops(shape, shape, !one_pass && parallel_for(work), writes);
      close_block();
    }
    if (one_pass) {
      shared_.clear();
      close_loops(outer);
    }
    part_ = Part{};
    done_.insert(writes.begin(), writes.end());
    return;
  }
  const int64_t work = numel(shape) * static_cast<int64_t>(writes.size());
  const Shape loops = coalesced_loops(shape, writes);
  pointwise_loops(shape, loops, parallel_for(work), writes, innermost_split(loops, writes));
  done_.insert(writes.begin(), writes.end());
}

namespace {

// The innermost dim of `loops` above 1, or SIZE_MAX.
size_t innermost_dim(const Shape& loops) {
  for (size_t d = loops.size(); d-- > 0;)
    if (loops[d] > 1) return d;
  return SIZE_MAX;
}

}  // namespace

Coords KernelWriter::split_coords(const Coords& loop_coords, size_t dim, const Shape& split) {
  if (split.empty()) return loop_coords;
  Coords c(loop_coords.begin(), loop_coords.begin() + static_cast<std::ptrdiff_t>(dim));
  Digits digits;
  std::string composite;
  int64_t stride = numel(split);
  for (size_t k = 0; k < split.size(); ++k) {
    const std::string& e = loop_coords[dim + k];
    stride /= split[k];
    digits.push_back({e, split[k]});
    composite += (k ? " + " : "") + (stride == 1 ? e : e + " * " + num(stride));
  }
  c.push_back("(" + composite + ")");
  known_digits_[c.back()] = digits;
  c.insert(c.end(), loop_coords.begin() + static_cast<std::ptrdiff_t>(dim + split.size()),
           loop_coords.end());
  return c;
}

Shape KernelWriter::split_shape(const Shape& loops, size_t dim, const Shape& split) {
  if (split.empty()) return loops;
  Shape s(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(dim));
  s.insert(s.end(), split.begin(), split.end());
  s.insert(s.end(), loops.begin() + static_cast<std::ptrdiff_t>(dim) + 1, loops.end());
  return s;
}

int KernelWriter::dry_run_divisions(const Shape& loops, const Shape& split,
                                    const std::vector<std::string>& writes) {
  const size_t dim = innermost_dim(loops);
  const Shape looped = split_shape(loops, dim, split);
  Coords lc(looped.size(), "0");
  for (size_t d = 0; d < looped.size(); ++d)
    if (d < shared_.size() && d < dim)
      lc[d] = shared_[d];
    else if (looped[d] > 1)
      lc[d] = "kora_dim" + num(d);
  const int divisions = index_divisions_;
  try {
    dry_run([&] {
      const Coords coords = split_coords(lc, dim, split);
      for (const std::string& w : writes) value(w, coords);
    });
  } catch (...) {
    index_divisions_ = divisions;
    throw;
  }
  const int counted = index_divisions_ - divisions;
  index_divisions_ = divisions;
  return counted;
}

void KernelWriter::dry_run(const std::function<void()>& body) {
  const std::string statics = statics_.str();
  const int counter = counter_;
  const auto digits = known_digits_;
  auto restore = [&] {
    scopes_.pop_back();
    statics_.str(statics);
    statics_.seekp(0, std::ios_base::end);
    counter_ = counter;
    known_digits_ = digits;
  };
  scopes_.emplace_back();
  try {
    body();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

Shape KernelWriter::innermost_split(const Shape& loops, const std::vector<std::string>& writes) {
  const size_t dim = innermost_dim(loops);
  if (dim == SIZE_MAX || dim < shared_.size()) return {};
  const int64_t extent = loops[dim];
  // The splits the kernel's reshape members suggest: the trailing dims above 1 of each
  // one's input and output, as many as multiply to the loop's extent ([6, 64] for 384),
  // or the product of the last of them where it divides the extent ([6, 64] for 768 as
  // 12 x 64); the inner loop a vector (16 floats) at least.
  std::set<Shape> splits;
  for (int v : c_.members) {
    const Primitive& p = graph_.prims[dag_.prim[v]];
    const auto* la = std::get_if<LayoutAttrs>(&p.attrs);
    if (!la || !std::holds_alternative<layout::Reshape>(*la)) continue;
    for (const Shape* s : {&graph_.value(p.inputs[0]).shape, &graph_.value(p.output()).shape}) {
      Shape trailing;
      int64_t product = 1;
      for (size_t d = s->size(); d-- > 0 && product < extent;) {
        if ((*s)[d] == 1) continue;
        product *= (*s)[d];
        trailing.insert(trailing.begin(), (*s)[d]);
        if (trailing.back() < 16 || product > extent || extent % product != 0) continue;
        Shape split = trailing;
        if (product < extent) split.insert(split.begin(), extent / product);
        if (split.size() > 1) splits.insert(split);
      }
    }
  }
  if (splits.empty()) return {};
  int fewest = dry_run_divisions(loops, {}, writes);
  Shape best;
  for (const Shape& split : splits) {
    if (fewest == 0) break;
    if (const int n = dry_run_divisions(loops, split, writes); n < fewest) fewest = n, best = split;
  }
  return best;
}

bool KernelWriter::reads_bfloat16(const std::string& loop_text) const {
  for (const auto& [t, ptr] : in_ptr_)
    if (bfloat16_.count(t) && loop_text.find(ptr + "[") != std::string::npos) return true;
  return false;
}

std::string KernelWriter::row_store(bool reads_bfloat16) {
  return reads_bfloat16 ? "kora_bf16_row_h" : "kora_bf16_row";
}

void KernelWriter::pointwise_loops(const Shape& shape, const Shape& loops, bool parallel,
                                   const std::vector<std::string>& writes, const Shape& split) {
  std::vector<std::string> rows;  // the writes stored as bfloat16
  for (const std::string& w : writes)
    if (bfloat16_.count(w)) rows.push_back(w);
  const size_t dim = innermost_dim(loops);
  const Shape looped = split_shape(loops, dim, split);
  // (iterations are independent: the innermost loop is declared simd)
  RowChunk chunk;
  const Coords loop_coords =
      open_loops(looped, parallel, 0, SIZE_MAX, true, rows.empty() ? nullptr : &chunk);
  const Coords coords = split_coords(loop_coords, dim, split);
  if (part_.dim != SIZE_MAX) known_ranges_[coords[part_.dim]] = {part_.lo, part_.hi};
  std::map<std::string, std::string> row;  // a bfloat16 write's float row
  // A loop over part of the chunk: [from, to), its values at row[at + i - from].
  struct Range {
    std::string from, to;
    int64_t at;
    std::string count;
  };
  auto store = [&](const std::string& w, const Range* r) {
    const std::string v = value(w, coords);
    line(row.count(w) ? row[w] + "[" + (r->at ? num(r->at) + " + " : "") + chunk.at + " - " +
                            r->from + "] = " + v + ";"
                      : out_ptr_.at(w) + "[" + offset(shape, coords) + "] = " + v + ";");
  };
  if (chunk.first.empty()) {  // no loop, or no bfloat16 write
    if (numel(loops) == 1) open_block("");
    for (const std::string& w : writes) store(w, nullptr);
    if (numel(loops) == 1) close_block();
  } else {
    // Per chunk of the innermost loop, the bfloat16 writes' values into float rows, then
    // the rows stored (kora_bf16_row: the hardware's conversion where there is one).
    for (const std::string& w : rows) {
      row[w] = fresh("row");
      line("float " + row[w] + "[" + num(kRowChunk + 16) + "];");
    }
    // One chunk of E elements, E % T != 0 (T = 16, or 8 for E < 16): the loop over E
    // rounded down to T, then one over the last T (recomputing a few, the same values) into
    // a row of its own: reads of bfloat16 make g++ vectorize by 32 and leave up to 15
    // elements to scalar code otherwise (BN + SiLU rows of 120 channels: 1.75x the time),
    // and kora_bf16_row's loads are then each within one of the loops' stores (into the
    // same row, the last T's stores would overlap the first loop's: no store forwarding).
    std::vector<Range> ranges = {{chunk.first, chunk.first + " + " + chunk.count, 0, chunk.count}};
    const int64_t tail = chunk.extent > 16 ? 16 : 8;
    if (chunk.extent > 8 && chunk.extent % tail != 0) {
      const int64_t body = chunk.extent / tail * tail;
      ranges = {{chunk.first, chunk.first + " + " + num(body), 0, num(body)},
                {"(" + chunk.first + " + " + num(chunk.extent - tail) + ")",
                 chunk.first + " + " + num(chunk.extent), kRowChunk, num(tail)}};
    }
    std::vector<bool> reads_narrow;
    for (const Range& r : ranges) {
      const size_t start = scope().os.str().size();
      line("#pragma omp simd");
      open_block("for (int64_t " + chunk.at + " = " + r.from + "; " + chunk.at + " < " + r.to +
                 "; ++" + chunk.at + ")");
      for (const std::string& w : writes) store(w, &r);
      close_block();
      const std::string text = scope().os.str().substr(start);
      reads_narrow.push_back(reads_bfloat16(text));
    }
    for (size_t i = 0; i < ranges.size(); ++i) {
      const Range& r = ranges[i];
      Coords at_from = loop_coords;
      for (std::string& c : at_from)
        if (c == chunk.at) c = r.from;
      at_from = split_coords(at_from, dim, split);
      for (const std::string& w : rows)
        line(row_store(reads_narrow[i]) + "(" + out_ptr_.at(w) + " + " + offset(shape, at_from) +
             ", " + row[w] + (r.at ? " + " + num(r.at) : "") + ", " + r.count + ");");
    }
  }
  close_loops(looped);  // (the chunk's block is the innermost loop's)
  if (part_.dim != SIZE_MAX) known_ranges_.clear();
}

bool KernelWriter::reads_run_in_order(const std::string& t, const std::vector<bool>& run) {
  const Shape& s = graph_.value(t).shape;
  if (s.size() != run.size()) return false;
  bool full = true, constant = true;  // t's run dims all above 1, or all 1
  for (size_t d = 0; d < s.size(); ++d) {
    if (!run[d]) continue;
    full = full && s[d] > 1;
    constant = constant && s[d] == 1;
  }
  if (constant) return true;  // read at "0" there (through a broadcast)
  if (!full || bound_.count(t)) return false;
  auto m = producer_.find(t);
  if (m == producer_.end() || buffer_.count(t)) return true;  // loaded at its coordinates
  const Primitive& p = *m->second;
  if (p.kind() == PrimKind::kElementwise || p.kind() == PrimKind::kBroadcast) {
    for (const std::string& in : p.inputs)
      if (!reads_run_in_order(in, run)) return false;
    return true;
  }
  if (!unit_dims_reshape(graph_, p)) return false;
  // the same dims above 1 in the same order: the run is the input's matching ones
  const Shape& is = graph_.value(p.inputs[0]).shape;
  std::vector<bool> in_run(is.size(), false);
  size_t d = 0;
  for (size_t e = 0; e < is.size(); ++e) {
    if (is[e] == 1) continue;
    while (s[d] == 1) ++d;
    in_run[e] = run[d++];
  }
  return reads_run_in_order(p.inputs[0], in_run);
}

Shape KernelWriter::coalesced_loops(const Shape& shape, const std::vector<std::string>& writes) {
  size_t last = shape.size();  // the last dim above 1
  for (size_t d = shape.size(); d-- > 0;)
    if (shape[d] > 1) {
      last = d;
      break;
    }
  if (last == shape.size()) return shape;
  for (size_t first = shared_.size(); first < last; ++first) {  // within the shared loops
    if (shape[first] <= 1) continue;
    std::vector<bool> run(shape.size(), false);
    for (size_t d = first; d < shape.size(); ++d) run[d] = shape[d] > 1;
    bool in_order = true;
    for (const std::string& w : writes) in_order = in_order && reads_run_in_order(w, run);
    if (!in_order) continue;
    Shape loops = shape;
    for (size_t d = first; d < shape.size(); ++d) loops[d] = 1;
    loops[last] = numel(shape) / numel(Shape(shape.begin(), shape.begin() + first));
    return loops;
  }
  return shape;
}

// Pooling: a max or sum over exactly the K dims of a window member whose fill is the
// reduce's identity (max: -inf, sum: 0), so a window position outside the input adds
// nothing. Per row of outputs (N, C, O1..On-1) a row of accumulators over On; each window
// position folds in the outputs whose input coordinate is inside: positions of the outer
// window dims are skipped when out of range, and the last one's loop over On runs only
// where its input column exists (bounds computed per position, no per-element tests), so
// the inner loop is a contiguous (stride 1) or strided run of loads.
//
// WindowReduceWriter writes it in steps for window_reduce_phase: match() (is the reduce
// pooling?), then channels_last_rows() for windows taken channels last (a layout view),
// padded_planes() for 2-D windows of stride 1 on a small plane, else accumulator_rows(). The order
// of its statements and fresh names is the text of the kernel (the kernel cache key): a step that
// moves one changes every kernel it writes.
class WindowReduceWriter {
 public:
  WindowReduceWriter(KernelWriter& kw, const Primitive& p, const ReduceAttrs& r)
      : kw_(kw), p_(p), r_(r) {}

  // Whether the reduce pools as above: its input the output of a window member computed
  // in place, the op max or sum over float32, the fill its identity, and the reduced axes
  // the window dims (each of size > 1 among them). Fills in what the steps below read.
  bool match();
  // 2-D windows of stride 1 on a small plane: per (N, C), the plane is copied once into a
  // buffer padded with the fill (its producers computed once per element), and each
  // window position folds the whole padded plane in one loop, the accumulators taking
  // the padded row pitch (columns past the output row are computed and never stored).
  // Short output rows make many short loops otherwise.
  bool fits_padded_plane() const;
  bool channels_last() const { return w_->channels_last; }
  void padded_planes();
  void accumulator_rows();  // a row of accumulators per output row (see above)
  // Channels last (windows [N, O1..On, K1..Kn, C] of [N, S1..Sn, C]): per output position
  // a row of accumulators over C; each window position inside the input folds its C
  // channels, contiguous (a bounds test per position, none per element).
  void channels_last_rows();
  // Channels last, max over 2-D windows where it does not much more work than
  // channels_last_rows: per output row, the window's rows are folded once into a row of
  // column maxima over [S2, C] (each input element read K1 times, not K1 x K2), and each
  // output folds its K2 columns of that row; fewer, longer loops (3x3 windows: 1.6x faster
  // at stride 1, 1.2x at stride 2, measured alone). Max only: a sum in another order would
  // round differently.
  bool fits_separable_rows() const;
  void channels_last_separable();
  // Channels last, over C a multiple of 16 read from memory (a kernel input or a buffer
  // of the kernel, float32 or bfloat16), a max, or a sum over at most 64 window
  // positions: the pointer it is read through, else "". Then the two forms above have a
  // vector twin (KORA_VEC16, the prelude's kora_max16 and kora_sum16): per 16 channels,
  // an accumulator in registers over the whole window, where the scalar loops fold each
  // window position into an array of C (max: 1.9-2.2x faster alone, 3x3 stride 2 over
  // 111x111x64, bf16, 0.058 -> 0.028 ms). A sum adds in float there, in the scalar
  // loops' order (they add in double: a relative difference of about 64 float roundings
  // at most, where 1e-4 is the budget).
  std::string lanes_source() const;
  void separable_lanes(const std::string& src);
  void rows_lanes(const std::string& src);

 private:
  // padded_planes(), per (N, C):
  void copy_padded_plane(const Coords& c, const std::string& plane);
  void fold_plane_windows(const std::string& plane, const std::string& acc);
  void store_plane_rows(const Coords& c, const std::string& acc);
  // accumulator_rows(), per output row:
  Coords open_window_dims(const Coords& c, size_t count);
  std::string stage_input_row(const Coords& ic);
  void fold_last_window_dim(const Coords& ic, const std::string& row, const std::string& acc);
  void fold_window_position(const Coords& ic, const std::string& row, const std::string& acc,
                            const std::string& lo, const std::string& hi, const std::string& off);
  void store_accumulator_row(const Coords& c, const std::string& acc);
  // The statement folding the value `v` into the accumulator `a`.
  std::string update(const std::string& a, const std::string& v) const;
  // The same, in a form g++ 12 vectorizes in the loops over C of channels last: there the
  // short-circuit `v > a || v != v` compiled to branches, 100x slower on GoogLeNet's first
  // pool (5.2 ms against 0.09). So did `(v > a) | (v != v)` in an artifact's translation
  // unit (6.5 ms against 0.11 measured alone), though not in a small one.
  std::string update_lanes(const std::string& a, const std::string& v) const;
  // A channels-last loop over C folding the input at coordinates `at` (or, when `from`
  // is given, the row of C floats that pointer expression names) into acc[q].
  void fold_channels(const std::string& acc, const Coords& at, const std::string& from = "");
  // The outputs at `at` (N, O1..On) over C from acc[q].
  void store_channels(const std::string& acc, const Coords& at);
  // The same from the 16 lanes of `acc` for the channels from `cb`.
  void store_lanes(const std::string& acc, const Coords& at, const std::string& cb);
  // The prelude's 16-lane accumulator of the reduce, and the statement folding the 16
  // floats at `pointer` into `acc`, one of them.
  std::string lanes_type() const;
  std::string fold_lanes(const std::string& acc, const std::string& pointer) const;

  KernelWriter& kw_;
  const Primitive& p_;
  const ReduceAttrs& r_;
  const layout::Window* w_ = nullptr;
  codegen::ReduceCode code_;
  bool max_ = false;
  std::string x_;       // the windows: [N, C, O1..On, K1..Kn] (channels last: [N, O.., K.., C])
  std::string in_;      // the window member's input: [N, C, S1..Sn] (channels last: [N, S.., C])
  Shape is_, xs_, os_;  // the shapes of in_, x_ and the output
  size_t n_ = 0;        // spatial dims
  std::string out_;     // the output's buffer
  // max: a float accumulator (exact) that takes NaN and keeps it; sum: the reduce's own
  std::string acc_t_, init_;
  int64_t height_ = 0, pitch_ = 0;  // the padded plane (2-D windows)
};

bool WindowReduceWriter::match() {
  x_ = p_.inputs.at(0);
  auto prod = kw_.producer_.find(x_);
  if (prod == kw_.producer_.end() || kw_.buffer_.count(x_)) return false;
  const Primitive& wp = *prod->second;
  const auto* la = std::get_if<LayoutAttrs>(&wp.attrs);
  w_ = la ? std::get_if<layout::Window>(la) : nullptr;
  if (!w_) return false;
  code_ = codegen::reduce_code(kw_.graph_, p_, r_);
  max_ = r_.op == ReduceOp::kMax;
  if (!code_.floating || !(max_ || r_.op == ReduceOp::kSum)) return false;
  if (max_ ? w_->fill != -std::numeric_limits<double>::infinity() : w_->fill != 0) return false;
  in_ = wp.inputs.at(0);
  is_ = kw_.graph_.value(in_).shape;
  xs_ = kw_.graph_.value(x_).shape;
  os_ = kw_.graph_.value(p_.output()).shape;
  n_ = is_.size() - 2;
  if (n_ == 0 || xs_.size() != 2 + 2 * n_ || os_.size() != xs_.size()) return false;
  std::vector<int64_t> axes = r_.axes;
  std::sort(axes.begin(), axes.end());
  // The window dims: after N, C, O1..On; channels last, after N, O1..On (C after them).
  const int64_t k0 = static_cast<int64_t>(w_->channels_last ? 1 + n_ : 2 + n_);
  for (size_t i = 0; i < n_; ++i)
    if (std::find(axes.begin(), axes.end(), k0 + static_cast<int64_t>(i)) == axes.end() &&
        xs_[k0 + i] > 1)
      return false;
  for (int64_t a : axes)
    if (a < k0 || a >= k0 + static_cast<int64_t>(n_)) return false;
  out_ = kw_.buffer_.at(p_.output());
  acc_t_ = max_ ? "float" : code_.acc_type;
  init_ = max_ ? "-KORA_INF" : code_.init;
  if (w_->channels_last) return true;
  height_ = n_ == 2 ? xs_[2] + (xs_[4] - 1) * w_->dilations[0] : 0;
  pitch_ = n_ == 2 ? xs_[3] + (xs_[5] - 1) * w_->dilations[1] : 0;
  return true;
}

std::string WindowReduceWriter::update(const std::string& a, const std::string& v) const {
  return max_ ? a + " = (" + v + " > " + a + " || " + v + " != " + v + ") ? " + v + " : " + a + ";"
              : code_.update(a, v);
}

std::string WindowReduceWriter::update_lanes(const std::string& a, const std::string& v) const {
  return max_ ? a + " = (" + v + " != " + v + ") ? " + v + " : (" + v + " > " + a + " ? " + v +
                    " : " + a + ");"
              : code_.update(a, v);
}

bool WindowReduceWriter::fits_padded_plane() const {
  return !w_->channels_last && n_ == 2 && w_->strides[0] == 1 && w_->strides[1] == 1 &&
         xs_[3] < 64 && height_ * pitch_ <= 8192;
}

void WindowReduceWriter::padded_planes() {
  kw_.line("// " + p_.output() + " = reduce " + reduce_op_name(r_.op) + " of the windows " + x_ +
           " (a padded plane per channel)");
  const Shape planes(xs_.begin(), xs_.begin() + 2);
  const Coords c = kw_.open_loops(planes, kw_.parallel_for(numel(xs_)) && numel(planes) > 1);
  if (numel(planes) == 1) kw_.open_block("");
  const std::string plane = kw_.fresh("plane"), acc = kw_.fresh("acc");
  copy_padded_plane(c, plane);
  fold_plane_windows(plane, acc);
  store_plane_rows(c, acc);
  if (numel(planes) == 1) kw_.close_block();
  kw_.close_loops(planes);
}

// The plane of (N, C) = c into `plane`: rows and columns outside the input hold the fill.
void WindowReduceWriter::copy_padded_plane(const Coords& c, const std::string& plane) {
  const int64_t h = is_[2], wd = is_[3];
  const int64_t p1 = w_->pads_begin[0], p2 = w_->pads_begin[1];
  const std::string fill = max_ ? "-KORA_INF" : "0.0f";
  kw_.line("float " + plane + "[" + num(height_ * pitch_) + "];");
  const std::string rr = kw_.fresh("r");
  kw_.open_block("for (int64_t " + rr + " = 0; " + rr + " < " + num(height_) + "; ++" + rr + ")");
  kw_.line("for (int64_t q = 0; q < " + num(pitch_) + "; ++q) " + plane + "[" + rr + " * " +
           num(pitch_) + " + q] = " + fill + ";");
  kw_.line("if (" + rr + " < " + num(p1) + " || " + rr + " >= " + num(p1 + h) + ") continue;");
  kw_.line("#pragma omp simd");
  const std::string q = kw_.fresh("q");
  kw_.open_block("for (int64_t " + q + " = " + num(p2) + "; " + q + " < " +
                 num(std::min(pitch_, p2 + wd)) + "; ++" + q + ")");
  const std::string v = kw_.value(
      in_, {c[0], c[1], "(" + rr + " - " + num(p1) + ")", "(" + q + " - " + num(p2) + ")"});
  kw_.line(plane + "[" + rr + " * " + num(pitch_) + " + " + q + "] = " + v + ";");
  kw_.close_block();
  kw_.close_block();
}

// Every window position folds the whole padded plane, shifted by the position, into the
// accumulators `acc` (one per plane element up to the last output).
void WindowReduceWriter::fold_plane_windows(const std::string& plane, const std::string& acc) {
  const int64_t o1 = xs_[2], k1 = xs_[4], k2 = xs_[5];
  const int64_t span = (o1 - 1) * pitch_ + xs_[3];
  kw_.line(acc_t_ + " " + acc + "[" + num(span) + "];");
  kw_.line("for (int64_t t = 0; t < " + num(span) + "; ++t) " + acc + "[t] = " + init_ + ";");
  if (max_ && k1 > 1 && k2 > 1) {
    // Max: the window's rows first, over the padded pitch (K1 + K2 folds, not K1 x K2).
    const int64_t row_span = span + (k2 - 1) * w_->dilations[1];
    const std::string rows = kw_.fresh("rows"), a = kw_.fresh("a"), b = kw_.fresh("b");
    kw_.line("float " + rows + "[" + num(row_span) + "];");
    kw_.line("for (int64_t t = 0; t < " + num(row_span) + "; ++t) " + rows + "[t] = -KORA_INF;");
    kw_.open_block("for (int64_t " + a + " = 0; " + a + " < " + num(k1) + "; ++" + a + ")");
    kw_.line("const float* __restrict src = &" + plane + "[" + a + " * " +
             num(w_->dilations[0] * pitch_) + "];");
    kw_.line("#pragma omp simd");
    kw_.open_block("for (int64_t t = 0; t < " + num(row_span) + "; ++t)");
    kw_.line(update(rows + "[t]", "src[t]"));
    kw_.close_block();
    kw_.close_block();
    kw_.open_block("for (int64_t " + b + " = 0; " + b + " < " + num(k2) + "; ++" + b + ")");
    kw_.line("const float* __restrict src = &" + rows + "[" + b + " * " + num(w_->dilations[1]) +
             "];");
    kw_.line("#pragma omp simd");
    kw_.open_block("for (int64_t t = 0; t < " + num(span) + "; ++t)");
    kw_.line(update(acc + "[t]", "src[t]"));
    kw_.close_block();
    kw_.close_block();
    return;
  }
  const std::string a = kw_.fresh("a"), b = kw_.fresh("b");
  kw_.open_block("for (int64_t " + a + " = 0; " + a + " < " + num(k1) + "; ++" + a + ")");
  kw_.open_block("for (int64_t " + b + " = 0; " + b + " < " + num(k2) + "; ++" + b + ")");
  const std::string from = "&" + plane + "[" + a + " * " + num(w_->dilations[0] * pitch_) + " + " +
                           b + " * " + num(w_->dilations[1]) + "]";
  kw_.line("const float* __restrict src = " + from + ";");
  kw_.line("#pragma omp simd");
  kw_.open_block("for (int64_t t = 0; t < " + num(span) + "; ++t)");
  kw_.line(update(acc + "[t]", "src[t]"));
  kw_.close_block();
  kw_.close_block();
  kw_.close_block();
}

// The outputs of (N, C) = c from the accumulators at the padded row pitch.
void WindowReduceWriter::store_plane_rows(const Coords& c, const std::string& acc) {
  const int64_t o1 = xs_[2];
  Coords oc(os_.size(), "0");
  oc[0] = c[0];
  oc[1] = c[1];
  const std::string i1 = kw_.fresh("i"), j = kw_.fresh("j");
  kw_.open_block("for (int64_t " + i1 + " = 0; " + i1 + " < " + num(o1) + "; ++" + i1 + ")");
  kw_.line("#pragma omp simd");
  kw_.open_block("for (int64_t " + j + " = 0; " + j + " < " + num(xs_[3]) + "; ++" + j + ")");
  oc[2] = o1 == 1 ? "0" : i1;
  oc[3] = xs_[3] == 1 ? "0" : j;
  kw_.line(out_ + "[" + kw_.offset(os_, oc) +
           "] = " + code_.result(acc + "[" + i1 + " * " + num(pitch_) + " + " + j + "]") + ";");
  kw_.close_block();
  kw_.close_block();
}

void WindowReduceWriter::accumulator_rows() {
  const int64_t on = xs_[1 + n_];  // the last output dim: the accumulator row
  kw_.line("// " + p_.output() + " = reduce " + reduce_op_name(r_.op) + " of the windows " + x_ +
           " (rows of accumulators)");
  Shape rows(xs_.begin(), xs_.begin() + 1 + n_);  // N, C, O1..On-1
  Coords c = kw_.open_loops(rows, kw_.parallel_for(numel(xs_)) && numel(rows) > 1);
  if (numel(rows) == 1) kw_.open_block("");
  const std::string acc = kw_.fresh("acc");
  kw_.line(acc_t_ + " " + acc + "[" + num(on) + "];");
  kw_.line("for (int64_t j = 0; j < " + num(on) + "; ++j) " + acc + "[j] = " + init_ + ";");
  const Coords ic = open_window_dims(c, n_ - 1);  // all but the last
  const std::string row = stage_input_row(ic);
  fold_last_window_dim(ic, row, acc);
  for (size_t i = 0; i + 1 < n_; ++i) kw_.close_block();  // the outer window dims
  store_accumulator_row(c, acc);
  if (numel(rows) == 1) kw_.close_block();
  kw_.close_loops(rows);
}

// A loop per window dim of the first `count`, each position's input coordinate computed
// and skipped when outside the input; returns the input coordinates (N, C unless the
// channels are last, and one per window dim opened). The caller closes the loops.
Coords WindowReduceWriter::open_window_dims(const Coords& c, size_t count) {
  const size_t s0 = w_->channels_last ? 1 : 2;  // the first spatial dim
  Coords ic(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(s0));
  for (size_t i = 0; i < count; ++i) {
    const std::string k = kw_.fresh("k");
    kw_.open_block("for (int64_t " + k + " = 0; " + k + " < " + num(xs_[s0 + n_ + i]) + "; ++" + k +
                   ")");
    const std::string v = kw_.fresh("w");
    kw_.line("const int64_t " + v + " = " + c[s0 + i] + " * " + num(w_->strides[i]) + " + " + k +
             " * " + num(w_->dilations[i]) + " - " + num(w_->pads_begin[i]) + ";");
    kw_.line("if (" + v + " < 0 || " + v + " >= " + num(is_[s0 + i]) + ") continue;");
    ic.push_back(v);
  }
  return ic;
}

// A computed input row once into a local buffer (its producers computed once per
// element, and the strided loads of the folds read plain floats: g++ 12 vectorizes those,
// not a fused expression read at stride 2), when it is small; returns its name. A kernel
// read is read in place (""), as is a long row.
std::string WindowReduceWriter::stage_input_row(const Coords& ic) {
  const int64_t size = is_[1 + n_];
  if (size > 4096 || kw_.in_ptr_.count(in_)) return "";
  const std::string row = kw_.fresh("row");
  kw_.line("float " + row + "[" + num(size) + "];");
  kw_.line("#pragma omp simd");
  const std::string q = kw_.fresh("q");
  kw_.open_block("for (int64_t " + q + " = 0; " + q + " < " + num(size) + "; ++" + q + ")");
  Coords at = ic;
  at.push_back(q);
  kw_.line(row + "[" + q + "] = " + kw_.value(in_, at) + ";");
  kw_.close_block();
  return row;
}

// The last window dim: outputs j with 0 <= j*s + q*d - p < S. Per window position q: its
// column offset q*d - p and the outputs [lo, hi) whose column is inside, constants of the
// generation; unrolled for short windows, else read from tables.
void WindowReduceWriter::fold_last_window_dim(const Coords& ic, const std::string& row,
                                              const std::string& acc) {
  const int64_t on = xs_[1 + n_];
  const int64_t s = w_->strides[n_ - 1], d = w_->dilations[n_ - 1], pb = w_->pads_begin[n_ - 1];
  const int64_t size = is_[1 + n_], kn = xs_[1 + 2 * n_];
  std::vector<int64_t> offs, los, his;
  for (int64_t q = 0; q < kn; ++q) {
    const int64_t off = q * d - pb;
    offs.push_back(off);
    los.push_back(off >= 0 ? 0 : (-off + s - 1) / s);
    his.push_back(size - 1 - off < 0 ? 0 : std::min(on, (size - 1 - off) / s + 1));
  }
  if (kn <= 16) {
    for (int64_t q = 0; q < kn; ++q)
      if (los[q] < his[q])
        fold_window_position(ic, row, acc, num(los[q]), num(his[q]),
                             offs[q] >= 0 ? num(offs[q]) : "(" + num(offs[q]) + ")");
    return;
  }
  const std::string k = kw_.fresh("k");
  kw_.open_block("for (int64_t " + k + " = 0; " + k + " < " + num(kn) + "; ++" + k + ")");
  const std::string off = kw_.fresh("o");
  kw_.line("const int64_t " + off + " = " + kw_.index_table(offs) + "[" + k + "];");
  // (the tables of the bounds are named his first, then los)
  const std::string hi = kw_.index_table(his) + "[" + k + "]";
  const std::string lo = kw_.index_table(los) + "[" + k + "]";
  fold_window_position(ic, row, acc, lo, hi, off);
  kw_.close_block();
}

// One loop over the outputs j in [lo, hi) for the window position whose column is
// j*s + off, folding the input there (the staged row, or the input in place).
void WindowReduceWriter::fold_window_position(const Coords& ic, const std::string& row,
                                              const std::string& acc, const std::string& lo,
                                              const std::string& hi, const std::string& off) {
  const int64_t s = w_->strides[n_ - 1];
  kw_.line("#pragma omp simd");
  const std::string j = kw_.fresh("j");
  kw_.open_block("for (int64_t " + j + " = " + lo + "; " + j + " < " + hi + "; ++" + j + ")");
  const std::string column =
      s == 1 ? "(" + j + " + " + off + ")" : "(" + j + " * " + num(s) + " + " + off + ")";
  Coords at = ic;
  at.push_back(column);
  const std::string v = row.empty() ? kw_.value(in_, at) : kw_.fresh("v");
  if (!row.empty()) kw_.line("const float " + v + " = " + row + "[" + column + "];");
  kw_.line(update(acc + "[" + j + "]", v));
  kw_.close_block();
}

// The row of outputs of c (N, C, O1..On-1) from the accumulators.
void WindowReduceWriter::store_accumulator_row(const Coords& c, const std::string& acc) {
  const int64_t on = xs_[1 + n_];
  Coords oc(os_.size(), "0");
  for (size_t i = 0; i < 1 + n_; ++i) oc[i] = c[i];
  kw_.line("#pragma omp simd");
  const std::string js = kw_.fresh("j");
  kw_.open_block("for (int64_t " + js + " = 0; " + js + " < " + num(on) + "; ++" + js + ")");
  oc[1 + n_] = on == 1 ? "0" : js;
  kw_.line(out_ + "[" + kw_.offset(os_, oc) + "] = " + code_.result(acc + "[" + js + "]") + ";");
  kw_.close_block();
}

void WindowReduceWriter::fold_channels(const std::string& acc, const Coords& at,
                                       const std::string& from) {
  const int64_t channels = xs_.back();
  kw_.line("#pragma omp simd");
  const std::string q = kw_.fresh("q");
  kw_.open_block("for (int64_t " + q + " = 0; " + q + " < " + num(channels) + "; ++" + q + ")");
  const std::string v = kw_.fresh("v");
  Coords with_q = at;
  with_q.push_back(q);
  kw_.line("const auto " + v + " = " +
           (from.empty() ? kw_.value(in_, with_q) : "(" + from + ")[" + q + "]") + ";");
  kw_.line(update_lanes(acc + "[" + q + "]", v));
  kw_.close_block();
}

void WindowReduceWriter::store_channels(const std::string& acc, const Coords& at) {
  const int64_t channels = xs_.back();
  Coords oc(os_.size(), "0");
  for (size_t i = 0; i < at.size(); ++i) oc[i] = at[i];
  const std::string q = kw_.fresh("q");
  oc.back() = channels == 1 ? "0" : q;
  kw_.line("#pragma omp simd");
  kw_.open_block("for (int64_t " + q + " = 0; " + q + " < " + num(channels) + "; ++" + q + ")");
  kw_.line(out_ + "[" + kw_.offset(os_, oc) + "] = " + code_.result(acc + "[" + q + "]") + ";");
  kw_.close_block();
}

bool WindowReduceWriter::fits_separable_rows() const {
  if (!max_ || n_ != 2) return false;
  const int64_t k1 = xs_[3], k2 = xs_[4], width = is_[2], o2 = xs_[2];
  const int64_t separable = k1 * width + k2 * o2, direct = k1 * k2 * o2;
  // Up to a quarter more folds: fewer, longer loops and no bounds test per window
  // position still win (3x3 stride 2 over an odd width, a ceil-mode pool, folds S2 = 2 O2 + 1
  // columns; 2x2 stride 2 does 1.5x the folds and stays window by window).
  return k2 > 1 && 4 * separable <= 5 * direct && width * xs_.back() <= 16384;
}

void WindowReduceWriter::channels_last_separable() {
  const int64_t channels = xs_.back(), width = is_[2], o2 = xs_[2], k2 = xs_[4];
  kw_.line("// " + p_.output() + " = reduce " + reduce_op_name(r_.op) + " of the windows " + x_ +
           " (channels last: the window's rows folded once per output row, then its columns)");
  const Shape rows(xs_.begin(), xs_.begin() + 2);  // N, O1
  const Coords c = kw_.open_loops(rows, kw_.parallel_for(numel(xs_)) && numel(rows) > 1);
  if (numel(rows) == 1) kw_.open_block("");
  // The column maxima of the window's rows, per input column and channel.
  const std::string cols = kw_.fresh("cols");
  kw_.line("float " + cols + "[" + num(width * channels) + "];");
  kw_.line("for (int64_t q = 0; q < " + num(width * channels) + "; ++q) " + cols +
           "[q] = -KORA_INF;");
  Coords ic = open_window_dims(c, 1);  // N, the input row
  const std::string w = kw_.fresh("w");
  kw_.open_block("for (int64_t " + w + " = 0; " + w + " < " + num(width) + "; ++" + w + ")");
  ic.push_back(w);
  fold_channels("(" + cols + " + " + w + " * " + num(channels) + ")", ic);
  kw_.close_block();
  kw_.close_block();  // the window's rows
  // Each output of the row: its window's columns.
  const std::string j = kw_.fresh("j");
  kw_.open_block("for (int64_t " + j + " = 0; " + j + " < " + num(o2) + "; ++" + j + ")");
  const std::string acc = kw_.fresh("acc");
  kw_.line("float " + acc + "[" + num(channels) + "];");
  kw_.line("for (int64_t q = 0; q < " + num(channels) + "; ++q) " + acc + "[q] = -KORA_INF;");
  const std::string k = kw_.fresh("k"), col = kw_.fresh("w");
  kw_.open_block("for (int64_t " + k + " = 0; " + k + " < " + num(k2) + "; ++" + k + ")");
  kw_.line("const int64_t " + col + " = " + j + " * " + num(w_->strides[1]) + " + " + k + " * " +
           num(w_->dilations[1]) + " - " + num(w_->pads_begin[1]) + ";");
  kw_.line("if (" + col + " < 0 || " + col + " >= " + num(width) + ") continue;");
  fold_channels(acc, {}, cols + " + " + col + " * " + num(channels));
  kw_.close_block();
  store_channels(acc, {c[0], c[1], j});
  kw_.close_block();  // the outputs of the row
  if (numel(rows) == 1) kw_.close_block();
  kw_.close_loops(rows);
}

std::string WindowReduceWriter::lanes_source() const {
  if (!w_->channels_last || xs_.back() % 16 != 0) return "";
  int64_t positions = 1;
  for (size_t i = 0; i < n_; ++i) positions *= xs_[1 + n_ + i];
  if (!max_ && positions > 64) return "";
  if (kw_.graph_.value(in_).dtype != DType::kFloat32 || code_.out != DType::kFloat32) return "";
  if (auto b = kw_.buffer_.find(in_); b != kw_.buffer_.end()) return b->second;
  if (kw_.producer_.count(in_)) return "";  // computed in place
  auto r = kw_.in_ptr_.find(in_);
  return r == kw_.in_ptr_.end() ? "" : r->second;
}

std::string WindowReduceWriter::lanes_type() const { return max_ ? "kora_max16" : "kora_sum16"; }

std::string WindowReduceWriter::fold_lanes(const std::string& acc,
                                           const std::string& pointer) const {
  return lanes_type() + "_fold(" + acc + ", kora_load16(" + pointer + "));";
}

void WindowReduceWriter::separable_lanes(const std::string& src) {
  const int64_t channels = xs_.back(), width = is_[2], o2 = xs_[2], k2 = xs_[4];
  const Shape rows(xs_.begin(), xs_.begin() + 2);  // N, O1
  const Coords c = kw_.open_loops(rows, kw_.parallel_for(numel(xs_)) && numel(rows) > 1);
  if (numel(rows) == 1) kw_.open_block("");
  const std::string cols = kw_.fresh("cols");
  kw_.line("float " + cols + "[" + num(width * channels) + "] __attribute__((aligned(64)));");
  const std::string w = kw_.fresh("w"), cb = kw_.fresh("cb"), acc = kw_.fresh("acc");
  kw_.open_block("for (int64_t " + w + " = 0; " + w + " < " + num(width) + "; ++" + w + ")");
  kw_.open_block("for (int64_t " + cb + " = 0; " + cb + " < " + num(channels) + "; " + cb +
                 " += 16)");
  kw_.line("kora_max16 " + acc + ";");
  Coords ic = open_window_dims(c, 1);  // N, the input row
  ic.push_back(w);
  ic.push_back(cb);
  kw_.line(fold_lanes(acc, src + " + " + kw_.offset(is_, ic)));
  kw_.close_block();  // the window's rows
  kw_.line("kora_store16(" + cols + " + " + w + " * " + num(channels) + " + " + cb +
           ", kora_max16_value(" + acc + "));");
  kw_.close_block();
  kw_.close_block();
  const std::string j = kw_.fresh("j");
  kw_.open_block("for (int64_t " + j + " = 0; " + j + " < " + num(o2) + "; ++" + j + ")");
  kw_.open_block("for (int64_t " + cb + " = 0; " + cb + " < " + num(channels) + "; " + cb +
                 " += 16)");
  kw_.line("kora_max16 " + acc + ";");
  const std::string k = kw_.fresh("k"), col = kw_.fresh("w");
  kw_.open_block("for (int64_t " + k + " = 0; " + k + " < " + num(k2) + "; ++" + k + ")");
  kw_.line("const int64_t " + col + " = " + j + " * " + num(w_->strides[1]) + " + " + k + " * " +
           num(w_->dilations[1]) + " - " + num(w_->pads_begin[1]) + ";");
  kw_.line("if (" + col + " < 0 || " + col + " >= " + num(width) + ") continue;");
  kw_.line(fold_lanes(acc, cols + " + " + col + " * " + num(channels) + " + " + cb));
  kw_.close_block();
  store_lanes(acc, {c[0], c[1], j}, cb);
  kw_.close_block();
  kw_.close_block();  // the outputs of the row
  if (numel(rows) == 1) kw_.close_block();
  kw_.close_loops(rows);
}

void WindowReduceWriter::rows_lanes(const std::string& src) {
  const Shape rows(xs_.begin(), xs_.begin() + 1 + n_);  // N, O1..On
  const Coords c = kw_.open_loops(rows, kw_.parallel_for(numel(xs_)) && numel(rows) > 1);
  if (numel(rows) == 1) kw_.open_block("");
  const std::string cb = kw_.fresh("cb"), acc = kw_.fresh("acc");
  kw_.open_block("for (int64_t " + cb + " = 0; " + cb + " < " + num(xs_.back()) + "; " + cb +
                 " += 16)");
  kw_.line(lanes_type() + " " + acc + ";");
  Coords ic = open_window_dims(c, n_);
  ic.push_back(cb);
  kw_.line(fold_lanes(acc, src + " + " + kw_.offset(is_, ic)));
  for (size_t i = 0; i < n_; ++i) kw_.close_block();  // the window dims
  store_lanes(acc, Coords(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(1 + n_)), cb);
  kw_.close_block();
  if (numel(rows) == 1) kw_.close_block();
  kw_.close_loops(rows);
}

void WindowReduceWriter::store_lanes(const std::string& acc, const Coords& at,
                                     const std::string& cb) {
  Coords oc(os_.size(), "0");
  for (size_t i = 0; i < at.size(); ++i) oc[i] = at[i];
  oc.back() = cb;
  kw_.line("kora_store16(" + out_ + " + " + kw_.offset(os_, oc) + ", " + lanes_type() + "_value(" +
           acc + "));");
}

void WindowReduceWriter::channels_last_rows() {
  const int64_t channels = xs_.back();
  kw_.line("// " + p_.output() + " = reduce " + reduce_op_name(r_.op) + " of the windows " + x_ +
           " (channels last: a row of accumulators over C)");
  const Shape rows(xs_.begin(), xs_.begin() + 1 + n_);  // N, O1..On
  const Coords c = kw_.open_loops(rows, kw_.parallel_for(numel(xs_)) && numel(rows) > 1);
  if (numel(rows) == 1) kw_.open_block("");
  const std::string acc = kw_.fresh("acc");
  kw_.line(acc_t_ + " " + acc + "[" + num(channels) + "];");
  kw_.line("for (int64_t q = 0; q < " + num(channels) + "; ++q) " + acc + "[q] = " + init_ + ";");
  fold_channels(acc, open_window_dims(c, n_));
  for (size_t i = 0; i < n_; ++i) kw_.close_block();  // the window dims
  store_channels(acc, Coords(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(1 + n_)));
  if (numel(rows) == 1) kw_.close_block();
  kw_.close_loops(rows);
}

bool KernelWriter::window_reduce_phase(const Primitive& p, const ReduceAttrs& r) {
  WindowReduceWriter pooling(*this, p, r);
  if (!pooling.match()) return false;
  if (pooling.channels_last()) {
    const bool separable = pooling.fits_separable_rows();
    const std::string src = pooling.lanes_source();
    if (!src.empty()) {
      line("#ifdef KORA_VEC16");
      line("// " + p.output() + " = reduce " + reduce_op_name(r.op) + " of the windows " +
           p.inputs.at(0) + " (16 lanes)");
      separable ? pooling.separable_lanes(src) : pooling.rows_lanes(src);
      line("#else");
    }
    separable ? pooling.channels_last_separable() : pooling.channels_last_rows();
    if (!src.empty()) line("#endif");
  } else if (pooling.fits_padded_plane())
    pooling.padded_planes();
  else
    pooling.accumulator_rows();
  return true;
}

bool KernelWriter::reduced_dims_adjacent(const Shape& xs, const Shape& red) {
  // among the dims above 1, the reduced ones form one run
  int runs = 0;
  bool in_run = false;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] <= 1) continue;
    const bool r = red[d] > 1;
    runs += r && !in_run;
    in_run = r;
  }
  return runs == 1;
}

bool KernelWriter::reads_reduced_dims_in_order(const std::string& t, const Shape& xs,
                                               const Shape& red) {
  const Shape& s = graph_.value(t).shape;
  if (s.size() == xs.size()) {
    bool constant_over_reduced = true;  // read at "0" in every reduced dim
    for (size_t d = 0; d < xs.size(); ++d)
      constant_over_reduced = constant_over_reduced && (red[d] <= 1 || s[d] == 1);
    if (constant_over_reduced) return true;
  }
  if (s != xs) return false;
  auto m = producer_.find(t);
  if (m == producer_.end() || buffer_.count(t)) return true;  // loaded at its coordinates
  const Primitive& p = *m->second;
  if (p.kind() != PrimKind::kElementwise && p.kind() != PrimKind::kBroadcast) return false;
  for (const std::string& in : p.inputs)
    if (!reads_reduced_dims_in_order(in, xs, red)) return false;
  return true;
}

void KernelWriter::reduce_phase(const Primitive& p, const ReduceAttrs& r) {
  if (window_reduce_phase(p, r)) return;
  const std::string& x = p.inputs.at(0);
  const Shape& xs = graph_.value(x).shape;
  const std::string& out = buffer_.at(p.output());
  const Shape& os = graph_.value(p.output()).shape;
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t a : r.axes) reduced[a] = true;
  codegen::ReduceCode code = codegen::reduce_code(graph_, p, r);
  const bool fl = code.floating;
  const std::string& acc_t = code.acc_type;
  const std::string& init = code.init;
  const bool simd_ok = r.op == ReduceOp::kSum || r.op == ReduceOp::kMean;
  line("// " + p.output() + " = reduce " + reduce_op_name(r.op) + " of " + x);
  // Dims after the last reduced one (kept) stay the innermost loop, with a row of
  // accumulators, when there are several of them.
  size_t last_reduced = 0;
  for (size_t d = 0; d < xs.size(); ++d)
    if (reduced[d] && xs[d] > 1) last_reduced = d + 1;
  // More kept dims after them than a row of accumulators holds (a split attention's sum
  // over its radix, [2, 128, 56, 56] over the 2): the row is the trailing dims that fit,
  // the kept dims before it join the outer loops, so the inner loop still reads runs, not
  // a reduction of 2 per output element (0.48 ms for that sum in ResNeSt-14d's plan).
  constexpr int64_t kMostRow = 4096;
  size_t row_start = last_reduced;
  auto row_of = [&](size_t from) {
    int64_t n = 1;
    for (size_t d = from; d < xs.size(); ++d) n *= xs[d];
    return n;
  };
  if (last_reduced > 0 && last_reduced >= shared_.size())
    while (row_of(row_start) > kMostRow && row_start + 1 < xs.size()) ++row_start;
  const int64_t inner = row_of(row_start);
  const int64_t outer_work = numel(os) / std::max<int64_t>(inner, 1);
  if (inner > 1 && inner <= kMostRow && last_reduced > 0) {
    // outer kept dims | reduced dims and kept dims interleaved | inner kept dims (acc row)
    Shape outer_shape = xs;
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d] || d >= row_start) outer_shape[d] = 1;
    Shape red_shape = xs;
    for (size_t d = 0; d < xs.size(); ++d)
      if (!reduced[d] || d >= row_start) red_shape[d] = 1;
    // One row of outputs (a global pool taken channels last): no outer loop to run in
    // parallel, so the reduced rows are split into `parts` ranges run in parallel, each
    // folded into a row of its own, and those rows combined in order after them (the same
    // result for any thread count). Serial, the SE pool of a SiLU at 56 x 56 x 144 took
    // 0.2 ms of a 0.3 ms kernel.
    const int64_t rows = numel(red_shape);
    constexpr int64_t kMostParts = 16, kPartBytes = 64 * 1024;
    const int64_t parts_n =
        std::min({rows, kMostParts, kPartBytes / (8 * std::max<int64_t>(inner, 1))});
    const bool split =
        outer_work == 1 && shared_.empty() && parallel_for(numel(xs)) && parts_n >= 2;
    // The reduced input, when the kernel writes it and nothing has stored it yet (a SiLU
    // and its squeeze-excitation pool), stored as it is reduced: one pass over it, not a
    // second phase computing it again.
    // Stored as bfloat16: each row of it computed into a float row and stored by the
    // prelude's row store (rows of whole vectors of 16 only, one dim).
    Shape inner_shape(xs.begin() + static_cast<std::ptrdiff_t>(row_start), xs.end());
    const bool written_x = std::find(writes_.begin(), writes_.end(), x) != writes_.end() &&
                           !done_.count(x) && !buffer_.count(x);
    const bool bf16_x =
        written_x && bfloat16_.count(x) && inner % 16 == 0 &&
        std::count_if(inner_shape.begin(), inner_shape.end(), [](int64_t e) { return e > 1; }) == 1;
    const bool store_x = written_x && (!bfloat16_.count(x) || bf16_x);
    std::string partials, pk, pr;  // the partial rows, the part, its row
    Coords c;
    if (split) {
      partials = fresh("part");
      pk = fresh("k");
      pr = fresh("r");
      open_block("");
      line(acc_t + " " + partials + "[" + num(parts_n) + "][" + num(inner) + "];");
      line("#pragma omp parallel for");
      open_block("for (int64_t " + pk + " = 0; " + pk + " < " + num(parts_n) + "; ++" + pk + ")");
      c = Coords(xs.size(), "0");
    } else {
      c = open_loops(outer_shape, parallel_for(numel(xs)) && outer_work > 1);
      if (outer_work == 1) open_block("");
    }
    const std::string acc = fresh("acc");
    line(acc_t + " " + acc + "[" + num(inner) + "];");
    line("for (int64_t j = 0; j < " + num(inner) + "; ++j) " + acc + "[j] = " + init + ";");
    const std::string x_row = bf16_x ? fresh("row") : "";
    if (bf16_x) line("alignas(64) float " + x_row + "[" + num(inner) + "];");
    if (split) {
      // the part's rows, each a coordinate per reduced dim
      open_block("for (int64_t " + pr + " = " + pk + " * " + num(rows) + " / " + num(parts_n) +
                 "; " + pr + " < (" + pk + " + 1) * " + num(rows) + " / " + num(parts_n) + "; ++" +
                 pr + ")");
      unflatten(red_shape, pr, c);
    } else {
      const Coords rc = open_loops(red_shape, false);
      for (size_t d = 0; d < last_reduced; ++d)
        if (reduced[d]) c[d] = rc[d];
    }
    Shape in_shape = xs;
    for (size_t d = 0; d < row_start; ++d) in_shape[d] = 1;
    // A concat member along a dim of the row (a global pool of a channel concat taken
    // channels last): one loop per part, each reading one input of the concat in order
    // (a test per input per element and clamped, gathered loads otherwise: Inception-v3's
    // last concat with its global average pool took 0.30 ms in a plan).
    std::vector<Part> parts = concat_parts(xs);
    if (!parts.empty() && parts[0].dim < row_start) parts.clear();
    const size_t rounds = std::max<size_t>(1, parts.size());
    const size_t loop_text = scope().os.str().size();
    for (size_t k = 0; k < rounds; ++k) {
      if (!parts.empty()) part_ = parts[k];
      open_block("");  // each part's locals in a scope of its own
      // the vector loop: the row's innermost (a row of several dims: [56, 56])
      const Coords ic = open_loops(in_shape, false, row_start, SIZE_MAX, /*simd=*/true);
      if (!parts.empty()) known_ranges_[ic[part_.dim]] = {part_.lo, part_.hi};
      for (size_t d = row_start; d < xs.size(); ++d) c[d] = ic[d];
      Coords inner_coords(c.begin() + static_cast<std::ptrdiff_t>(row_start), c.end());
      const std::string j = offset(inner_shape, inner_coords);
      const std::string v = value(x, c);
      if (bf16_x)
        line(x_row + "[" + j + "] = " + v + ";");
      else if (store_x)
        line(out_ptr_.at(x) + "[" + offset(xs, c) + "] = " + v + ";");
      line(code.update(acc + "[" + j + "]", v));
      close_loops(in_shape, row_start);
      close_block();
      known_ranges_.clear();
    }
    part_ = Part{};
    if (bf16_x) {
      // The row stored as the pointwise phases store theirs (kora_bf16_row_h where the
      // loop reads bfloat16: read back at the width g++ stored it).
      Coords at = c;
      for (size_t d = row_start; d < xs.size(); ++d) at[d] = "0";
      line(row_store(reads_bfloat16(scope().os.str().substr(loop_text))) + "(" + out_ptr_.at(x) +
           " + " + offset(xs, at) + ", " + x_row + ", " + num(inner) + ");");
    }
    if (store_x) {
      done_.insert(x);
      // read from there by the phases after this one (float32: a bfloat16 one is
      // computed again where they read it)
      if (!bf16_x) buffer_[x] = out_ptr_.at(x);
    }
    std::string row = acc;  // the accumulators of the row stored below
    if (split) {
      close_block();  // the part's rows
      line("for (int64_t j = 0; j < " + num(inner) + "; ++j) " + partials + "[" + pk +
           "][j] = " + acc + "[j];");
      close_block();  // the parts
      // the parts' rows combined in order
      row = fresh("total");
      line(acc_t + " " + row + "[" + num(inner) + "];");
      open_block("for (int64_t j = 0; j < " + num(inner) + "; ++j)");
      line(row + "[j] = " + partials + "[0][j];");
      line("for (int64_t q = 1; q < " + num(parts_n) + "; ++q) " +
           code.update(row + "[j]", partials + "[q][j]"));
      close_block();
      for (size_t d = 0; d < row_start; ++d) c[d] = "0";
    } else {
      close_loops(red_shape);
    }
    // store the row
    Coords oc(os.size(), "0");
    for (size_t d = 0; d < row_start; ++d)
      if (!reduced[d]) oc[d] = c[d];
    const Coords sc = open_loops(in_shape, false, row_start);
    for (size_t d = row_start; d < xs.size(); ++d) oc[d] = sc[d];
    line(out + "[" + offset(os, oc) + "] = " +
         code.result(row + "[" +
                     offset(inner_shape,
                            Coords(sc.begin() + static_cast<std::ptrdiff_t>(row_start), sc.end())) +
                     "]") +
         ";");
    close_loops(in_shape, row_start);
    if (outer_work == 1) close_block();
    close_loops(outer_shape);
    return;
  }
  // Plain: kept dims outside, reduced dims inside, one accumulator. When only a few
  // float elements are reduced (at most 64 per output), all after the innermost kept dim
  // (of 8 or more; pooling windows), the kept loop is the vector one: each lane folds its
  // own window, the reduced loops inside (short, so the compiler unrolls them), not a
  // vector over three elements.
  Shape kept = xs;
  for (size_t d = 0; d < xs.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  size_t innermost_kept = xs.size(), first_reduced = xs.size();
  for (size_t d = 0; d < xs.size(); ++d) {
    if (!reduced[d] && xs[d] > 1) innermost_kept = d;
    if (reduced[d] && xs[d] > 1) first_reduced = std::min(first_reduced, d);
  }
  // (Not inside shared outer loops over that kept dim: it is no loop of this phase's.)
  const bool lanes = innermost_kept < xs.size() && innermost_kept >= shared_.size() &&
                     xs[innermost_kept] >= 8 && first_reduced < xs.size() &&
                     first_reduced > innermost_kept && numel(xs) / numel(os) <= 64 && fl;
  // Inside shared outer loops, an input with a transcendental function that the later
  // phases read again (softmax's exp) is kept in a row buffer on this thread's stack as it
  // is reduced, and read from there (softmax over [12, 257, 257]: 0.31 -> 0.23 ms).
  constexpr int64_t kLongestRow = 16384;
  std::string row, row_base;
  if (keep_reduced_row(p)) {
    const int64_t per_row =
        numel(xs) / numel(Shape(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(
                                                             std::min(shared_.size(), xs.size()))));
    if (per_row <= kLongestRow) {
      row = fresh("row");
      line("alignas(64) " + std::string(ctype(graph_.value(x).dtype)) + " " + row + "[" +
           num(per_row) + "];");
      Coords base(xs.size(), "0");
      for (size_t d = 0; d < shared_.size() && d < xs.size(); ++d) base[d] = shared_[d];
      row_base = offset(xs, base);
    }
  }
  // Sums of at most 4096 float32 values that are never negative (softmax's exponentials,
  // a variance's squares) in float: nothing cancels, and the vector loop below keeps 16
  // partial sums of at most 256 values each, within about 1e-5 of the double sum; a double
  // accumulator halves the lanes (softmax over [12, 257, 257]: 0.24 -> 0.18 ms). A sum
  // that may cancel (a mean of normalized values, about 0) stays in double: in float its
  // rounding is the whole result.
  if (fl && simd_ok && code.count <= 4096 && nonnegative(x)) code.acc_type = "float";
  Coords c = open_loops(kept, parallel_for(numel(xs)) && numel(os) > 1, 0, SIZE_MAX, lanes);
  open_block("");
  const std::string acc = fresh("acc");
  // float max/min: a float accumulator (exact) and a NaN flag, so the loop vectorizes
  const bool minmax = fl && (r.op == ReduceOp::kMax || r.op == ReduceOp::kMin);
  const std::string nan = acc + "_nan";
  if (minmax) {
    line("float " + acc + " = " + (r.op == ReduceOp::kMax ? "-KORA_INF" : "KORA_INF") + ";");
    line("int " + nan + " = 0;");
  } else {
    line(acc_t + " " + acc + " = " + init + ";");
  }
  Shape red = xs;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!reduced[d]) red[d] = 1;
  int red_loops = 0;
  for (int64_t s : red) red_loops += s > 1;
  const std::string& indent = scope().indent;
  (void)indent;
  // the simd pragma goes on the innermost reduced loop
  Coords rc(xs.size(), "0");
  int opened = 0;
  // Reduced dims next to one another whose elements the reduced value reads in order are
  // one loop: a loop of 28 per row of a 28x28 plane ended each row in a horizontal sum
  // (a group norm's per-channel mean: 61 us against 11 for [512, 28, 28])
  const bool flat = !lanes && red_loops > 1 && (simd_ok || minmax) &&
                    reduced_dims_adjacent(xs, red) && reads_reduced_dims_in_order(x, xs, red);
  std::pair<Coords, Shape> flat_key;
  if (flat) {
    const std::string i = fresh("i");
    unflatten(red, i, rc);
    int64_t stride = 1;  // of the innermost reduced dim
    const std::vector<int64_t> strides = row_major_strides(xs);
    for (size_t d = 0; d < xs.size(); ++d)
      if (red[d] > 1) stride = strides[d];
    Coords base = c;
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d]) base[d] = "0";
    const std::string b = offset(xs, base);
    const std::string step = stride == 1 ? i : i + " * " + num(stride);
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d]) base[d] = rc[d];
    flat_key = {base, xs};
    known_offsets_[flat_key] = b == "0" ? step : b + " + " + step;
    if (simd_ok && fl) line("#pragma omp simd reduction(+:" + acc + ")");
    if (minmax)
      line("#pragma omp simd reduction(" + std::string(r.op == ReduceOp::kMax ? "max" : "min") +
           ":" + acc + ") reduction(|:" + nan + ")");
    open_block("for (int64_t " + i + " = 0; " + i + " < " + num(numel(red)) + "; ++" + i + ")");
    opened = 1;
  }
  for (size_t d = 0; d < xs.size() && !flat; ++d) {
    if (red[d] <= 1) continue;
    if (++opened == red_loops && simd_ok && fl && !lanes)
      line("#pragma omp simd reduction(+:" + acc + ")");
    if (opened == red_loops && minmax && !lanes)
      line("#pragma omp simd reduction(" + std::string(r.op == ReduceOp::kMax ? "max" : "min") +
           ":" + acc + ") reduction(|:" + nan + ")");
    rc[d] = fresh("i");
    open_block("for (int64_t " + rc[d] + " = 0; " + rc[d] + " < " + num(red[d]) + "; ++" + rc[d] +
               ")");
  }
  for (size_t d = 0; d < xs.size(); ++d)
    if (reduced[d]) c[d] = rc[d];
  const std::string v = value(x, c);
  if (!row.empty()) line(row + "[" + offset(xs, c) + " - (" + row_base + ")] = " + v + ";");
  if (minmax) {
    line(acc + " = " + v + (r.op == ReduceOp::kMax ? " > " : " < ") + acc + " ? " + v + " : " +
         acc + ";");
    line(nan + " |= " + v + " != " + v + ";");
  } else {
    line(code.update(acc, v));
  }
  for (int k = 0; k < opened; ++k) close_block();
  if (flat) known_offsets_.erase(flat_key);
  if (minmax) line(acc + " = " + nan + " ? KORA_NAN : " + acc + ";");
  Coords oc = c;
  for (size_t d = 0; d < xs.size(); ++d)
    if (reduced[d]) oc[d] = "0";
  line(out + "[" + offset(os, oc) + "] = " + code.result(acc) + ";");
  close_block();
  close_loops(kept);
  if (!row.empty()) {  // the later phases read x there
    buffer_[x] = row;
    buffer_base_[x] = row_base;
  }
}

void KernelWriter::epilogue(const Primitive& p, const Coords& coords, const std::string& acc) {
  const Shape& shape = graph_.value(p.output()).shape;
  bound_[p.output()] = {coords, acc};
  if (auto b = buffer_.find(p.output()); b != buffer_.end())
    line(b->second + "[" + offset(shape, coords) + "] = " + acc + ";");
  for (const std::string& w : epilogue_writes_) {
    const std::string v = value(w, coords);
    line(out_ptr_.at(w) + "[" + offset(shape, coords) + "] = " + v + ";");
  }
  bound_.erase(p.output());
}

void KernelWriter::plan_epilogue(const Primitive& p) {
  const std::string& t = p.output();
  const Shape& shape = graph_.value(t).shape;
  epilogue_writes_.clear();
  // Materialized members computed so far.
  std::set<std::string> ready = {t};
  for (const auto& [name, buf] : buffer_) ready.insert(name);
  std::set<std::string> ep;
  for (const std::string& w : writes_) {
    if (w == t || done_.count(w) || graph_.value(w).shape != shape) continue;
    const PrimKind k = producer_.at(w)->kind();
    if (k == PrimKind::kReduce || k == PrimKind::kLinear) continue;
    const std::set<std::string>& d = deps(w);
    if (!d.count(t) || !std::includes(ready.begin(), ready.end(), d.begin(), d.end())) continue;
    // A dry run: does w read t only at its own coordinates?
    Coords coords(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) coords[i] = shape[i] == 1 ? "0" : "e" + num(i);
    scopes_.emplace_back();
    const std::ostringstream::pos_type mark = statics_.tellp();
    bound_[t] = {coords, "acc"};
    bool ok = true;
    try {
      value(w, coords);
    } catch (const NotAtBoundCoords&) {
      ok = false;
    }
    bound_.erase(t);
    scopes_.pop_back();
    (void)mark;
    if (ok) epilogue_writes_.push_back(w), ep.insert(w);
  }
  // The result needs a buffer when it is written or something else reads it.
  bool needed = std::find(writes_.begin(), writes_.end(), t) != writes_.end();
  for (const std::string& w : writes_)
    if (!ep.count(w) && !done_.count(w) && w != t && deps(w).count(t)) needed = true;
  for (int v : c_.members) {
    const Primitive& q = graph_.prims[dag_.prim[v]];
    if (q.kind() != PrimKind::kReduce && q.kind() != PrimKind::kLinear) continue;
    if (&q == &p) continue;
    for (const std::string& i : q.inputs)
      if (deps(i).count(t)) needed = true;
  }
  if (needed) {
    if (!buffer_.count(t)) buffer_[t] = scratch(graph_.value(t).dtype, numel(shape));
  } else {
    buffer_.erase(t);
  }
}

void KernelWriter::matmul_phase(const Primitive& p) {
  const std::string &a = p.inputs.at(0), &b = p.inputs.at(1);
  const Shape &as = graph_.value(a).shape, &bs = graph_.value(b).shape;
  const Shape& cs = graph_.value(p.output()).shape;
  const size_t r = cs.size();
  const int64_t m = cs[r - 2], n = cs[r - 1], k = as[r - 1];
  const int64_t rows = std::min<int64_t>(std::min<int64_t>(schedule_.rows, 16), m);
  const int64_t cols = std::min<int64_t>(std::min<int64_t>(schedule_.cols, 4096), n);
  line("// " + p.output() + " = matmul(" + a + ", " + b + ")");
  // batch dims and row blocks, parallel
  Shape outer(cs.begin(), cs.end() - 2);
  outer.push_back((m + rows - 1) / rows);
  outer.push_back((n + cols - 1) / cols);
  const int64_t flops = 2 * numel(cs) * k;
  Coords oc = open_loops(outer, parallel_for(flops / 8) && numel(outer) > 1);
  if (numel(outer) == 1) open_block("");
  const std::string i0 = oc[r - 2] == "0" ? "0" : "(" + oc[r - 2] + " * " + num(rows) + ")";
  const std::string j0 = oc[r - 1] == "0" ? "0" : "(" + oc[r - 1] + " * " + num(cols) + ")";
  const std::string acc = fresh("acc");
  line(std::string(codegen::ctype(graph_.value(p.output()).dtype)) + " " + acc + "[" + num(rows) +
       "][" + num(cols) + "] = {};");
  const std::string jn = fresh("jn");
  line("const int64_t " + jn + " = " +
       (n % cols == 0 ? num(cols) : "kora_imin(" + num(cols) + ", " + num(n) + " - " + j0 + ")") +
       ";");
  const std::string kk = fresh("k");
  open_block("for (int64_t " + kk + " = 0; " + kk + " < " + num(k) + "; ++" + kk + ")");
  Coords ac(r), bc(r);
  for (size_t d = 0; d + 2 < r; ++d) {
    ac[d] = as[d] == 1 ? "0" : oc[d];
    bc[d] = bs[d] == 1 ? "0" : oc[d];
  }
  std::vector<std::string> av;
  for (int64_t i = 0; i < rows; ++i) {
    ac[r - 2] = m == 1 ? "0"
                       : (rows * ((m + rows - 1) / rows) > m
                              ? "kora_imin(" + i0 + " + " + num(i) + ", " + num(m - 1) + ")"
                              : i0 + " + " + num(i));
    ac[r - 1] = k == 1 ? "0" : kk;
    av.push_back(value(a, ac));
  }
  const std::string j = fresh("j");
  line("#pragma omp simd");
  open_block("for (int64_t " + j + " = 0; " + j + " < " + jn + "; ++" + j + ")");
  bc[r - 2] = k == 1 ? "0" : kk;
  bc[r - 1] = n == 1 ? "0" : j0 + " + " + j;
  const std::string bv = value(b, bc);
  for (int64_t i = 0; i < rows; ++i)
    line(acc + "[" + num(i) + "][" + j + "] += " + av[i] + " * " + bv + ";");
  close_block();
  close_block();
  // epilogue
  for (int64_t i = 0; i < rows; ++i) {
    const std::string row = i0 == "0" ? num(i) : i0 + " + " + num(i);
    if (rows * ((m + rows - 1) / rows) > m)
      open_block("if (" + row + " < " + num(m) + ")");
    else
      open_block("");
    const std::string jj = fresh("j");
    open_block("for (int64_t " + jj + " = 0; " + jj + " < " + jn + "; ++" + jj + ")");
    Coords c(r);
    for (size_t d = 0; d + 2 < r; ++d) c[d] = oc[d];
    c[r - 2] = m == 1 ? "0" : row;
    c[r - 1] = n == 1 ? "0" : j0 + " + " + jj;
    epilogue(p, c, acc + "[" + num(i) + "][" + jj + "]");
    close_block();
    close_block();
  }
  if (numel(outer) == 1) close_block();
  close_loops(outer);
}

void KernelWriter::conv_phase(const Primitive& p, const ConvAttrs& at) {
  const std::string &x = p.inputs.at(0), &w = p.inputs.at(1);
  const Shape &xs = graph_.value(x).shape, &ws = graph_.value(w).shape;
  const Shape& ys = graph_.value(p.output()).shape;
  const size_t n = xs.size() - 2;
  const int64_t group = at.group, m_total = ws[0], mg = m_total / group, cg = ws[1];
  auto attr = [&](const std::vector<int64_t>& v, size_t i, int64_t dflt) {
    return v.empty() ? dflt : v[i];
  };
  int64_t mb = 1;
  for (int64_t cand : {schedule_.rows, int64_t{8}, int64_t{4}, int64_t{2}, int64_t{1}})
    if (cand >= 1 && cand <= schedule_.rows && mg % cand == 0) {
      mb = cand;
      break;
    }
  line("// " + p.output() + " = conv(" + x + ", " + w + ")");
  // loops: batch, channel blocks, all output dims but the last
  Shape outer = {ys[0], m_total / mb};
  for (size_t i = 0; i + 1 < n; ++i) outer.push_back(ys[2 + i]);
  const int64_t flops = 2 * numel(ys) * cg * numel(Shape(ws.begin() + 2, ws.end()));
  Coords oc = open_loops(outer, parallel_for(flops / 8) && numel(outer) > 1);
  if (numel(outer) == 1) open_block("");
  const int64_t ow = ys.back();
  const std::string m0 = oc[1] == "0" ? "0" : "(" + oc[1] + " * " + num(mb) + ")";
  const std::string g = mg == 1 ? m0 : "(" + m0 + " / " + num(mg) + ")";
  const std::string acc = fresh("acc");
  const std::string acc_t = codegen::ctype(graph_.value(p.output()).dtype);  // float or int32_t
  if (mb * ow <= 16384) {
    line(acc_t + " " + acc + "[" + num(mb) + "][" + num(ow) + "] = {};");
  } else {  // long rows: on the heap (zeroed 4-byte elements), not the worker's stack
    line("kora_buffer " + acc + "_row(" + num(mb * ow) + ");");
    line(acc_t + " (*" + acc + ")[" + num(ow) + "] = reinterpret_cast<" + acc_t + " (*)[" +
         num(ow) + "]>(" + acc + "_row.p);");
  }
  const std::string c = fresh("c");
  open_block("for (int64_t " + c + " = 0; " + c + " < " + num(cg) + "; ++" + c + ")");
  Coords xc = {oc[0], cg == 1 && mg == 1 ? m0 : "(" + g + " * " + num(cg) + " + " + c + ")"};
  if (group == 1) xc[1] = c;
  if (xs[1] == 1) xc[1] = "0";
  Coords wc = {"", cg == 1 ? "0" : c};
  std::vector<std::string> kc(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = attr(at.strides, i, 1), dl = attr(at.dilations, i, 1),
                  pb = attr(at.pads_begin, i, 0), kn = ws[2 + i];
    kc[i] = kn == 1 ? "0" : fresh("k");
    if (kn > 1)
      open_block("for (int64_t " + kc[i] + " = 0; " + kc[i] + " < " + num(kn) + "; ++" + kc[i] +
                 ")");
    if (i + 1 < n) {
      const std::string o = oc[2 + i];
      const std::string ii = fresh("h");
      line("const int64_t " + ii + " = " + (o == "0" ? "0" : o + " * " + num(s)) + " + " +
           (kc[i] == "0" ? "0" : kc[i] + " * " + num(dl)) + " - " + num(pb) + ";");
      line("if (" + ii + " < 0 || " + ii + " >= " + num(xs[2 + i]) + ") continue;");
      xc.push_back(xs[2 + i] == 1 ? "0" : ii);
    } else {
      // the range of the last output dim whose input coordinate is inside
      const std::string lo = fresh("lo"), hi = fresh("hi"), t = fresh("t");
      const std::string koff = kc[i] == "0" ? "0" : kc[i] + " * " + num(dl);
      line("const int64_t " + t + " = " + num(pb) + " - " + koff + ";");
      line("const int64_t " + lo + " = " + t + " <= 0 ? 0 : (" + t + " + " + num(s - 1) + ") / " +
           num(s) + ";");
      line("const int64_t " + hi + " = " + num(xs.back() - 1) + " + " + t +
           " < 0 ? 0 : kora_imin(" + num(ow) + ", (" + num(xs.back() - 1) + " + " + t + ") / " +
           num(s) + " + 1);");
      std::vector<std::string> wv;
      for (int64_t q = 0; q < mb; ++q) {
        Coords wcq = wc;
        wcq[0] = m_total == 1 ? "0" : m0 + " + " + num(q);
        for (size_t e = 0; e < n; ++e) wcq.push_back(kc[e]);
        wv.push_back(value(w, wcq));
      }
      const std::string o = fresh("o");
      line("#pragma omp simd");
      open_block("for (int64_t " + o + " = " + lo + "; " + o + " < " + hi + "; ++" + o + ")");
      xc.push_back(xs.back() == 1 ? "0" : "(" + o + " * " + num(s) + " - " + t + ")");
      const std::string xv = value(x, xc);
      for (int64_t q = 0; q < mb; ++q)
        line(acc + "[" + num(q) + "][" + o + "] += " + wv[q] + " * " + xv + ";");
      close_block();
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (ws[2 + i] > 1) close_block();
  close_block();  // c
  for (int64_t q = 0; q < mb; ++q) {
    const std::string o = fresh("o");
    open_block("for (int64_t " + o + " = 0; " + o + " < " + num(ow) + "; ++" + o + ")");
    Coords yc = {oc[0], m_total == 1 ? "0" : m0 + " + " + num(q)};
    for (size_t i = 0; i + 1 < n; ++i) yc.push_back(oc[2 + i]);
    yc.push_back(ow == 1 ? "0" : o);
    epilogue(p, yc, acc + "[" + num(q) + "][" + o + "]");
    close_block();
  }
  if (numel(outer) == 1) close_block();
  close_loops(outer);
}

}  // namespace kora::cpu_gen
