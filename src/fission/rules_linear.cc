// Fission of the compute-intensive operators into linear primitives with elementwise,
// broadcast and layout around them: Conv (+ bias add), ConvTranspose (zero-interleave pad
// + convolution with flipped, regrouped weights), MatMul (1-D and batch forms made
// explicit), Gemm (transposes, alpha, beta*C), and the matmul-like forms of Einsum (a
// repeated label's diagonal read by a strided slice).
#include <algorithm>
#include <map>

#include "fission/builder.h"
#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

std::string add_channel_bias(FissionBuilder& b, const std::string& y, const std::string& bias) {
  Shape per_channel(b.shape(y).size(), 1);
  per_channel[1] = b.shape(y)[1];
  return b.ew(ScalarOp::kAdd, {y, b.reshape(bias, per_channel)});
}

void conv(FissionBuilder& b) {
  const std::string x = b.in(0), w = b.in(1);
  const Shape& sx = b.shape(x);
  const Shape& sw = b.shape(w);
  InferContext ctx(b.source(), b.node());
  const Window win =
      resolve_window(ctx, Shape(sx.begin() + 2, sx.end()), Shape(sw.begin() + 2, sw.end()), false);
  const size_t r = sx.size() - 2;
  ConvAttrs attrs{b.node().attr_int("group", 1), win.strides, win.dilations,
                  Shape(win.pads.begin(), win.pads.begin() + r),
                  Shape(win.pads.begin() + r, win.pads.end())};
  std::string y = b.conv(x, w, attrs);
  if (b.has_in(2)) y = add_channel_bias(b, y, b.in(2));
  b.bind(0, y);
}

// ConvTranspose = insert stride-1 zeros between input elements, pad by dilation*(k-1)
// minus the node's pads, and convolve (stride 1) with the weights flipped in space and
// regrouped from [C, M/g, K...] to [M, C/g, K...].
void conv_transpose(FissionBuilder& b) {
  const Node& n = b.node();
  const std::string x = b.in(0), w = b.in(1);
  const Shape& sx = b.shape(x);
  const Shape& sw = b.shape(w);
  const size_t r = sx.size() - 2;
  const int64_t g = n.attr_int("group", 1);
  const int64_t c = sw[0], m_per_g = sw[1];
  const Shape strides = n.attr_ints("strides", Shape(r, 1));
  const Shape dilations = n.attr_ints("dilations", Shape(r, 1));
  const Shape out_pad = n.attr_ints("output_padding", Shape(r, 0));
  const Shape& out = b.out_info(0).shape;
  Shape pads = n.attr_ints("pads", Shape(2 * r, 0));
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (n.has_attr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < r; ++i) {
      const int64_t total = strides[i] * (sx[i + 2] - 1) + out_pad[i] +
                            dilations[i] * (sw[i + 2] - 1) + 1 - out[i + 2];
      const int64_t half = total / 2;
      pads[i] = auto_pad == "SAME_LOWER" ? total - half : half;
      pads[i + r] = total - pads[i];
    }
  }
  layout::Pad interleave{Shape(r + 2, 0), Shape(r + 2, 1), layout::PadMode::kConstant, 0.0};
  Shape padded = sx;
  for (size_t i = 0; i < r; ++i) {
    const int64_t reach = dilations[i] * (sw[i + 2] - 1);
    interleave.begin[i + 2] = reach - pads[i];
    interleave.stride[i + 2] = strides[i];
    const int64_t end = reach - pads[i + r] + out_pad[i];
    padded[i + 2] = (sx[i + 2] - 1) * strides[i] + 1 + interleave.begin[i + 2] + end;
  }
  const std::string xp = b.layout(interleave, {x}, padded);
  // [C, M/g, K..] -> [g, C/g, M/g, K..] -> [g, M/g, C/g, K..] -> [M, C/g, K..], flipped.
  Shape grouped{g, c / g, m_per_g};
  grouped.insert(grouped.end(), sw.begin() + 2, sw.end());
  std::vector<int64_t> perm{0, 2, 1};
  for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(i + 3));
  std::string wt = b.transpose(b.reshape(w, grouped), perm);
  Shape regrouped{g * m_per_g, c / g};
  regrouped.insert(regrouped.end(), sw.begin() + 2, sw.end());
  wt = b.reshape(wt, regrouped);
  layout::Slice flip{Shape(r + 2, 0), Shape(r + 2, 1)};
  for (size_t i = 0; i < r; ++i) {
    flip.starts[i + 2] = sw[i + 2] - 1;
    flip.steps[i + 2] = -1;
  }
  wt = b.layout(flip, {wt}, regrouped);
  ConvAttrs attrs{g, Shape(r, 1), dilations, Shape(r, 0), Shape(r, 0)};
  std::string y = b.conv(xp, wt, attrs);
  if (b.has_in(2)) y = add_channel_bias(b, y, b.in(2));
  b.bind(0, y);
}

}  // namespace

// Batched matmul of A [..., M, K] and B [..., K, N] of any ranks (numpy matmul rules).
std::string matmul_nd(FissionBuilder& b, std::string a, std::string w, const Shape& result) {
  Shape sa = b.shape(a), sb = b.shape(w);
  if (sa.size() == 1) a = b.reshape(a, sa = {1, sa[0]});
  if (sb.size() == 1) w = b.reshape(w, sb = {sb[0], 1});
  std::string y;
  if (sb.size() == 2 && sa.size() > 2) {
    // [..., M, K] x [K, N]: one GEMM over all rows of A.
    const int64_t k = sa.back();
    const std::string flat = b.reshape(a, {numel(sa) / k, k});
    y = b.matmul(flat, w);
  } else {
    const size_t r = std::max(sa.size(), sb.size());
    Shape pa(r - sa.size(), 1), pb(r - sb.size(), 1);
    pa.insert(pa.end(), sa.begin(), sa.end());
    pb.insert(pb.end(), sb.begin(), sb.end());
    y = b.matmul(b.reshape(a, pa), b.reshape(w, pb));
  }
  return b.reshape(y, result);
}

namespace {

void matmul(FissionBuilder& b) { b.bind(0, matmul_nd(b, b.in(0), b.in(1), b.out_info(0).shape)); }

void gemm(FissionBuilder& b) {
  const Node& n = b.node();
  std::string a = b.in(0), w = b.in(1);
  if (n.attr_int("transA", 0)) a = b.transpose(a, {1, 0});
  if (n.attr_int("transB", 0)) w = b.transpose(w, {1, 0});
  std::string y = b.matmul(a, w);
  const double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
  if (alpha != 1.0) y = b.ew(ScalarOp::kMul, {y, alpha});
  if (b.has_in(2) && beta != 0.0) {
    std::string c = b.in(2);
    if (beta != 1.0) c = b.ew(ScalarOp::kMul, {c, beta});
    y = b.ew(ScalarOp::kAdd, {y, c});
  }
  b.bind(0, y);
}

// Einsum in matmul form: each operand's diagonals (repeated labels) are taken first, then
// it is transposed to [batch, free, contracted] and flattened to 3-D, labels of one
// operand alone that the output lacks are summed first, one batched matmul contracts the
// shared labels, and the result is reshaped and transposed to the output's label order.
// Ellipsis dims become batch labels.
struct Term {
  std::string labels;  // one character per dim; ellipsis dims get '0', '1', ...
};

std::vector<std::string> split_terms(const std::string& lhs) {
  std::vector<std::string> terms;
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) return terms;
    start = comma + 1;
  }
}

std::string expand_ellipsis(const std::string& term, size_t rank, size_t ell_rank) {
  const size_t dots = term.find("...");
  if (dots == std::string::npos) return term;
  std::string ell;
  // Right-aligned: an operand with fewer ellipsis dims uses the last ones.
  for (size_t i = ell_rank - (rank - (term.size() - 3)); i < ell_rank; ++i)
    ell += static_cast<char>('0' + i);
  return term.substr(0, dots) + ell + term.substr(dots + 3);
}

// Sums the labels of `t` that `keep` does not contain.
std::string sum_out(FissionBuilder& b, std::string x, std::string& labels,
                    const std::string& keep) {
  std::vector<int64_t> axes;
  std::string kept;
  Shape shape;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (keep.find(labels[i]) == std::string::npos)
      axes.push_back(static_cast<int64_t>(i));
    else
      kept += labels[i], shape.push_back(b.shape(x)[i]);
  }
  if (axes.empty()) return x;
  labels = kept;
  return b.reshape(b.reduce(ReduceOp::kSum, x, axes), shape);
}

// The diagonal of each label `labels` repeats (as numpy's einsum takes it: "bii" reads
// x[b, i, i]): the k dims of that label are moved next to its first one and flattened to
// n^k, and a strided slice (step 1 + n + ... + n^(k-1), from 0) picks the n elements whose
// k indices agree. Transpose, reshape and slice are index maps, so the diagonal is one
// layout read; `labels` loses the repeats.
std::string take_diagonals(FissionBuilder& b, std::string x, std::string& labels) {
  for (size_t first = 0; first < labels.size(); ++first) {
    const char ch = labels[first];
    std::vector<int64_t> perm;
    std::string rest;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i == first) {
        for (size_t j = i; j < labels.size(); ++j)
          if (labels[j] == ch) perm.push_back(static_cast<int64_t>(j));
      }
      if (labels[i] != ch || i == first) rest += labels[i];
      if (labels[i] != ch) perm.push_back(static_cast<int64_t>(i));
    }
    const size_t k = labels.size() - rest.size() + 1;
    if (k == 1) continue;
    const Shape& sx = b.shape(x);
    const int64_t n = sx[first];
    for (int64_t d : perm)
      if (labels[d] == ch && sx[d] != n)
        b.fail(std::string("repeated label '") + ch + "' has sizes " + std::to_string(n) + " and " +
               std::to_string(sx[d]));
    int64_t step = 0, span = 1;
    for (size_t j = 0; j < k; ++j) step += span, span *= n;
    // After the transpose, dims first .. first + k - 1 are the label's; they become one.
    Shape merged, out;
    for (size_t d = 0; d < perm.size(); ++d) {
      if (d == first) {
        merged.push_back(span);
        out.push_back(n);
        d += k - 1;
      } else {
        merged.push_back(sx[perm[d]]);
        out.push_back(sx[perm[d]]);
      }
    }
    x = b.reshape(b.transpose(x, perm), merged);
    std::vector<int64_t> starts(rest.size(), 0), steps(rest.size(), 1);
    steps[first] = n > 1 ? step : 1;
    x = b.layout(layout::Slice{starts, steps}, {x}, out);
    labels = rest;
  }
  return x;
}

std::string permute_to(FissionBuilder& b, const std::string& x, const std::string& from,
                       const std::string& to) {
  std::vector<int64_t> perm;
  for (char ch : to) perm.push_back(static_cast<int64_t>(from.find(ch)));
  return b.transpose(x, perm);
}

void einsum(FissionBuilder& b) {
  std::string eq;
  for (char ch : b.node().attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms = split_terms(eq.substr(0, arrow));
  size_t ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k)
    if (terms[k].find("...") != std::string::npos)
      ell_rank = std::max(ell_rank, b.shape(b.in(k)).size() - (terms[k].size() - 3));
  for (size_t k = 0; k < terms.size(); ++k)
    terms[k] = expand_ellipsis(terms[k], b.shape(b.in(k)).size(), ell_rank);
  std::string out;
  if (arrow != std::string::npos) {
    out = expand_ellipsis(eq.substr(arrow + 2), ell_rank + eq.size() - arrow - 2 - 3, ell_rank);
  } else {
    std::map<char, int> count;
    for (const std::string& t : terms)
      for (char ch : t) ++count[ch];
    for (size_t i = 0; i < ell_rank; ++i) out += static_cast<char>('0' + i);
    for (const auto& [ch, k] : count)
      if (k == 1 && !std::isdigit(static_cast<unsigned char>(ch))) out += ch;
  }
  const Shape& result = b.out_info(0).shape;
  if (terms.size() == 1) {
    std::string labels = terms[0];
    const std::string x = sum_out(b, take_diagonals(b, b.in(0), labels), labels, out);
    b.bind(0, b.reshape(permute_to(b, x, labels, out), result));
    return;
  }
  if (terms.size() != 2) b.fail("Einsum with more than two operands is not supported");
  std::string la = terms[0], lb = terms[1];
  std::string a = take_diagonals(b, b.in(0), la), w = take_diagonals(b, b.in(1), lb);
  a = sum_out(b, a, la, lb + out);
  w = sum_out(b, w, lb, la + out);
  std::string batch, free_a, free_b, contract;
  for (char ch : la) {
    const bool in_b = lb.find(ch) != std::string::npos, in_out = out.find(ch) != std::string::npos;
    if (in_b && in_out)
      batch += ch;
    else if (in_b)
      contract += ch;
    else
      free_a += ch;
  }
  for (char ch : lb)
    if (la.find(ch) == std::string::npos) free_b += ch;
  auto size_of = [&](char ch) -> int64_t {
    const size_t ia = la.find(ch);
    if (ia != std::string::npos && b.shape(a)[ia] != 1) return b.shape(a)[ia];
    const size_t ib = lb.find(ch);
    return ib != std::string::npos ? b.shape(w)[ib] : b.shape(a)[ia];
  };
  auto prod = [&](const std::string& ls) {
    int64_t p = 1;
    for (char ch : ls) p *= size_of(ch);
    return p;
  };
  // Batch labels may broadcast (size 1 in one operand): expand both to the full size.
  Shape batch_shape;
  for (char ch : batch) batch_shape.push_back(size_of(ch));
  auto operand = [&](std::string x, const std::string& labels, const std::string& first,
                     const std::string& second) {
    x = permute_to(b, x, labels, batch + first + second);
    Shape full = batch_shape;
    for (char ch : first + second) full.push_back(size_of(ch));
    x = b.broadcast(x, full);
    return b.reshape(x, {prod(batch), prod(first), prod(second)});
  };
  const std::string am = operand(a, la, free_a, contract);
  const std::string bm = operand(w, lb, contract, free_b);
  std::string y = b.matmul(am, bm);
  Shape unflat = batch_shape;
  for (char ch : free_a + free_b) unflat.push_back(size_of(ch));
  y = b.reshape(y, unflat);
  std::string labels = batch + free_a + free_b;
  for (char ch : out)
    if (labels.find(ch) == std::string::npos)
      b.fail(std::string("output label '") + ch + "' unknown");
  b.bind(0, b.reshape(permute_to(b, y, labels, out), result));
}

}  // namespace

void add_linear_fission(FissionTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Einsum"] = einsum;
}

}  // namespace kora
