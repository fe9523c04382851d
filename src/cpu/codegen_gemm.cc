// Packed GEMM phases of generated CPU kernels: a matmul, or a convolution as implicit
// GEMM (A = filters [M/group, C/group * K...], B = the input's windows [C/group * K...,
// O...] per image and group), in; loops out that pack A into 6-row panels and B into
// 16-column panels (zero-padded) computing the operands with value(), so prologue members
// (layout, elementwise, the convolution's padding) run while packing; then the 6x16 AVX2
// FMA micro-kernel (kora_ukernel_6x16 in the prelude) over the whole K for each pair of
// panels, in mc x nc blocks in parallel, and the epilogue on each finished 6x16 tile.
#include <algorithm>
#include <functional>

#include "cpu/codegen_internal.h"

namespace kora::cpu_gen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

constexpr int64_t kMr = 6, kNr = 16;

}  // namespace

std::string gemm_prelude() {
  // GCC vector extensions and the FMA builtin rather than <immintrin.h>, whose parsing
  // alone took 0.8 s per translation unit; the instructions are the same.
  return R"(#if defined(__AVX2__) && defined(__FMA__)
typedef float kora_v8 __attribute__((vector_size(32), __may_alias__));
// C (6x16, row stride 16) = A panel (kc x 6) * B panel (kc x 16); B and C 32-byte aligned.
static inline void kora_ukernel_6x16(int64_t kc, const float* __restrict a,
                                     const float* __restrict b, float* __restrict c) {
  kora_v8 c00 = {}, c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  kora_v8 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < kc; ++k, a += 6, b += 16) {
    const kora_v8 b0 = *(const kora_v8*)b, b1 = *(const kora_v8*)(b + 8);
#define KORA_ROW(i, r0, r1)                        \
  {                                                \
    const float s = a[i];                          \
    const kora_v8 x = {s, s, s, s, s, s, s, s};    \
    r0 = __builtin_ia32_vfmaddps256(x, b0, r0);    \
    r1 = __builtin_ia32_vfmaddps256(x, b1, r1);    \
  }
    KORA_ROW(0, c00, c01) KORA_ROW(1, c10, c11) KORA_ROW(2, c20, c21)
    KORA_ROW(3, c30, c31) KORA_ROW(4, c40, c41) KORA_ROW(5, c50, c51)
#undef KORA_ROW
  }
  kora_v8* v = (kora_v8*)c;
  v[0] = c00, v[1] = c01, v[2] = c10, v[3] = c11, v[4] = c20, v[5] = c21;
  v[6] = c30, v[7] = c31, v[8] = c40, v[9] = c41, v[10] = c50, v[11] = c51;
}
#else
static inline void kora_ukernel_6x16(int64_t kc, const float* __restrict a,
                                     const float* __restrict b, float* __restrict c) {
  float acc[6][16] = {};
  for (int64_t k = 0; k < kc; ++k, a += 6, b += 16)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 16; ++j) acc[i][j] += a[i] * b[j];
  __builtin_memcpy(c, acc, sizeof acc);
}
#endif
)";
}

void KernelWriter::gemm_phase(const Primitive& p, const GemmSpec& g) {
  const int64_t mp = (g.m + kMr - 1) / kMr, np = (g.n + kNr - 1) / kNr;
  const int64_t mc = std::max<int64_t>(1, schedule_.mc / kMr),
                nc = std::max<int64_t>(1, schedule_.nc / kNr);
  const std::string ap = scratch(DType::kFloat32, mp * kMr * g.k);
  const std::string bp = scratch(DType::kFloat32, np * kNr * g.k);
  const bool par = parallel_for(2 * g.m * g.n * g.k * numel(g.outer) / 8);
  line("// " + p.output() + ": packed GEMM " + num(g.m) + "x" + num(g.n) + "x" + num(g.k));
  const Coords oc = open_loops(g.outer, false);
  if (numel(g.outer) == 1) open_block("");
  // pack B: panels of 16 columns
  if (par) line("#pragma omp parallel for");
  // Loop order: k innermost when the spec asks (the index arithmetic of a column stays
  // out of it), else columns innermost (contiguous rows of a row-major B).
  open_block("for (int64_t jp = 0; jp < " + num(np) + "; ++jp)");
  const bool n_edge = g.n % kNr != 0;
  const std::string jline =
      "const int64_t j = " +
      std::string(n_edge ? "kora_imin(jp * 16 + jj, " + num(g.n - 1) + ")" : "jp * 16 + jj") + ";";
  if (g.b_k_inner) {
    open_block("for (int64_t jj = 0; jj < " + num(kNr) + "; ++jj)");
    line(jline);
    open_block("for (int64_t kk = 0; kk < " + num(g.k) + "; ++kk)");
  } else {
    open_block("for (int64_t kk = 0; kk < " + num(g.k) + "; ++kk)");
    open_block("for (int64_t jj = 0; jj < " + num(kNr) + "; ++jj)");
    line(jline);
  }
  {
    const std::string v = g.b(oc, g.k == 1 ? "0" : "kk", g.n == 1 ? "0" : "j");
    line(bp + "[(jp * " + num(g.k) + " + kk) * 16 + jj] = " +
         (n_edge ? "jp * 16 + jj < " + num(g.n) + " ? " + v + " : 0.0f" : v) + ";");
  }
  close_block();
  close_block();
  close_block();
  // pack A: panels of 6 rows
  if (par) line("#pragma omp parallel for");
  open_block("for (int64_t ip = 0; ip < " + num(mp) + "; ++ip)");
  open_block("for (int64_t ii = 0; ii < " + num(kMr) + "; ++ii)");
  const bool m_edge = g.m % kMr != 0;
  line("const int64_t i = " +
       std::string(m_edge ? "kora_imin(ip * 6 + ii, " + num(g.m - 1) + ")" : "ip * 6 + ii") + ";");
  open_block("for (int64_t kk = 0; kk < " + num(g.k) + "; ++kk)");
  {
    const std::string v = g.a(oc, g.m == 1 ? "0" : "i", g.k == 1 ? "0" : "kk");
    line(ap + "[(ip * " + num(g.k) + " + kk) * 6 + ii] = " +
         (m_edge ? "ip * 6 + ii < " + num(g.m) + " ? " + v + " : 0.0f" : v) + ";");
  }
  close_block();
  close_block();
  close_block();
  // compute, blocks of mc x nc in parallel
  const int64_t mb = (mp + mc - 1) / mc, nb = (np + nc - 1) / nc;
  if (par && mb * nb > 1)
    line(mb > 1 && nb > 1 ? "#pragma omp parallel for collapse(2) schedule(dynamic)"
                          : "#pragma omp parallel for schedule(dynamic)");
  open_block("for (int64_t ib = 0; ib < " + num(mb) + "; ++ib)");
  open_block("for (int64_t jb = 0; jb < " + num(nb) + "; ++jb)");
  line("alignas(64) float tile[96];");
  open_block("for (int64_t jp = jb * " + num(nc) + "; jp < kora_imin(" + num(np) + ", (jb + 1) * " +
             num(nc) + "); ++jp)");
  open_block("for (int64_t ip = ib * " + num(mc) + "; ip < kora_imin(" + num(mp) + ", (ib + 1) * " +
             num(mc) + "); ++ip)");
  line("kora_ukernel_6x16(" + num(g.k) + ", " + ap + " + ip * " + num(g.k * kMr) + ", " + bp +
       " + jp * " + num(g.k * kNr) + ", tile);");
  // Constant tile sizes where no tile is partial: loops the compiler can vectorize and
  // unroll without peeling (which only -O3 does; see src/cpu/compile.h).
  line("const int64_t mrows = " + (m_edge ? "kora_imin(6, " + num(g.m) + " - ip * 6)" : "6") + ";");
  line("const int64_t ncols = " + (n_edge ? "kora_imin(16, " + num(g.n) + " - jp * 16)" : "16") +
       ";");
  open_block("for (int64_t ii = 0; ii < mrows; ++ii)");
  line("const int64_t i = ip * 6 + ii;");
  open_block("for (int64_t jj = 0; jj < ncols; ++jj)");
  line("const int64_t j = jp * 16 + jj;");
  epilogue(p, g.c(oc, g.m == 1 ? "0" : "i", g.n == 1 ? "0" : "j"), "tile[ii * 16 + jj]");
  close_block();
  close_block();
  close_block();
  close_block();
  close_block();
  close_block();
  if (numel(g.outer) == 1) close_block();
  close_loops(g.outer);
}

bool KernelWriter::use_gemm(int64_t m, int64_t n, int64_t k) const {
  if (schedule_.gemm == 0) return false;
  if (schedule_.gemm == 1) return true;
  return gemm_by_default(m, n, k);
}

bool gemm_by_default(int64_t m, int64_t n, int64_t k) {
  return m >= 4 && n >= 8 && 2 * m * n * k >= (1 << 16);
}

void KernelWriter::matmul_gemm(const Primitive& p) {
  const std::string &a = p.inputs.at(0), &b = p.inputs.at(1);
  const Shape &as = graph_.value(a).shape, &bs = graph_.value(b).shape;
  const Shape& cs = graph_.value(p.output()).shape;
  const size_t r = cs.size();
  GemmSpec g;
  g.m = cs[r - 2], g.n = cs[r - 1], g.k = as[r - 1];
  g.outer.assign(cs.begin(), cs.end() - 2);
  g.a = [&, r](const Coords& o, const std::string& i, const std::string& k) {
    Coords c(r);
    for (size_t d = 0; d + 2 < r; ++d) c[d] = as[d] == 1 ? "0" : o[d];
    c[r - 2] = i, c[r - 1] = k;
    return value(a, c);
  };
  g.b = [&, r](const Coords& o, const std::string& k, const std::string& j) {
    Coords c(r);
    for (size_t d = 0; d + 2 < r; ++d) c[d] = bs[d] == 1 ? "0" : o[d];
    c[r - 2] = k, c[r - 1] = j;
    return value(b, c);
  };
  g.c = [&, r](const Coords& o, const std::string& i, const std::string& j) {
    Coords c(o.begin(), o.end());
    c.push_back(i), c.push_back(j);
    (void)r;
    return c;
  };
  gemm_phase(p, g);
}

void KernelWriter::conv_gemm(const Primitive& p, const ConvAttrs& at) {
  const std::string &x = p.inputs.at(0), &w = p.inputs.at(1);
  const Shape &xs = graph_.value(x).shape, &ws = graph_.value(w).shape;
  const Shape& ys = graph_.value(p.output()).shape;
  const size_t n = xs.size() - 2;
  const int64_t group = at.group, mg = ws[0] / group, cg = ws[1];
  Shape kernel(ws.begin() + 2, ws.end()), out(ys.begin() + 2, ys.end());
  GemmSpec g;
  g.m = mg, g.k = cg * numel(kernel), g.n = numel(out);
  g.outer = {ys[0], group};
  g.b_k_inner = numel(kernel) == 1;  // pointwise: B is X's [C, spatial] as it is
  auto attr = [&](const std::vector<int64_t>& v, size_t i, int64_t dflt) {
    return v.empty() ? dflt : v[i];
  };
  // k -> (c, kernel...), row-major; j -> output position, row-major
  auto split = [&](const std::string& flat, const Shape& shape) {
    Coords c(shape.size());
    int64_t stride = numel(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      stride /= shape[d];
      if (shape[d] == 1) {
        c[d] = "0";
        continue;
      }
      std::string e = stride == 1 ? flat : "(" + flat + " / " + num(stride) + ")";
      if (d > 0) e = "(" + e + " % " + num(shape[d]) + ")";
      c[d] = e;
    }
    return c;
  };
  g.a = [&](const Coords& o, const std::string& i, const std::string& k) {
    Shape ks = {cg};
    ks.insert(ks.end(), kernel.begin(), kernel.end());
    const Coords kc = split(k, ks);
    Coords c = {ws[0] == 1 ? "0"
                           : (group == 1 ? i : "(" + o[1] + " * " + num(mg) + " + " + i + ")")};
    c.insert(c.end(), kc.begin(), kc.end());
    return value(w, c);
  };
  g.b = [&](const Coords& o, const std::string& k, const std::string& j) {
    Shape ks = {cg};
    ks.insert(ks.end(), kernel.begin(), kernel.end());
    const Coords kc = split(k, ks), jc = split(j, out);
    Coords c = {o[0],
                xs[1] == 1
                    ? "0"
                    : (group == 1 ? kc[0] : "(" + o[1] + " * " + num(cg) + " + " + kc[0] + ")")};
    std::string cond;
    for (size_t d = 0; d < n; ++d) {
      const int64_t s = attr(at.strides, d, 1), dl = attr(at.dilations, d, 1),
                    pb = attr(at.pads_begin, d, 0);
      const std::string e = fresh("h");
      line("const int64_t " + e + " = " + jc[d] + " * " + num(s) + " + " + kc[1 + d] + " * " +
           num(dl) + " - " + num(pb) + ";");
      if (pb == 0 && (out[d] - 1) * s + (kernel[d] - 1) * dl <= xs[2 + d] - 1) {
        c.push_back(xs[2 + d] == 1 ? "0" : e);  // always inside
        continue;
      }
      cond += (cond.empty() ? "" : " && ") + ("(uint64_t)" + e + " < " + num(xs[2 + d]));
      c.push_back(xs[2 + d] == 1 ? "0" : "kora_clamp(" + e + ", 0, " + num(xs[2 + d] - 1) + ")");
    }
    const std::string v = value(x, c);
    return cond.empty() ? v : "((" + cond + ") ? " + v + " : 0.0f)";
  };
  g.c = [&](const Coords& o, const std::string& i, const std::string& j) {
    Coords c = {
        o[0], ws[0] == 1 ? "0" : (group == 1 ? i : "(" + o[1] + " * " + num(mg) + " + " + i + ")")};
    const Coords jc = split(j, out);
    for (size_t d = 0; d < n; ++d) c.push_back(out[d] == 1 ? "0" : jc[d]);
    return c;
  };
  gemm_phase(p, g);
}

}  // namespace kora::cpu_gen
