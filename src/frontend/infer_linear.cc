// Shape rules of the compute-intensive operators: Conv, DeformConv, ConvTranspose, MatMul,
// Gemm and Einsum.
#include <algorithm>
#include <map>
#include <set>

#include "frontend/op_rules.h"
#include "frontend/window.h"

namespace kora {
namespace {

std::vector<ValueInfo> conv(const InferContext& c) {
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (x.size() < 3 || w.size() != x.size())
    c.fail("needs X of rank >= 3 and W of the same rank, got " + shape_str(x) + " and " +
           shape_str(w));
  const int64_t group = c.node().attr_int("group", 1);
  if (group <= 0 || x[1] % group != 0 || w[0] % group != 0)
    c.fail("group " + std::to_string(group) + " does not divide the channels");
  if (w[1] * group != x[1])
    c.fail("input has " + std::to_string(x[1]) + " channels, weights expect " +
           std::to_string(w[1] * group) + " (W " + shape_str(w) + ", group " +
           std::to_string(group) + ")");
  if (c.has(2) && (c.shape(2).size() != 1 || c.shape(2)[0] != w[0]))
    c.fail("bias " + shape_str(c.shape(2)) + " does not match " + std::to_string(w[0]) +
           " output channels");
  Window win =
      resolve_window(c, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), false);
  Shape out{x[0], w[0]};
  out.insert(out.end(), win.output.begin(), win.output.end());
  return {ValueInfo{c.dtype(0), out}};
}

// DeformConv, 2-D as ONNX's reference implements it: X [N, C, H, W], W [oC, C / group,
// kH, kW], offset [N, offset_group * kH * kW * 2, oH, oW], optional B [oC] and mask
// [N, offset_group * kH * kW, oH, oW] -> [N, oC, oH, oW], oH and oW as a convolution's.
std::vector<ValueInfo> deform_conv(const InferContext& c) {
  const Node& n = c.node();
  const Shape &x = c.shape(0), &w = c.shape(1), &offset = c.shape(2);
  if (x.size() != 4 || w.size() != 4)
    c.fail("X " + shape_str(x) + " and W " + shape_str(w) +
           " must be [N, C, H, W] and [oC, C / group, kH, kW] (only 2-D DeformConv is defined "
           "by ONNX's reference)");
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has(i) && c.dtype(i) != c.dtype(0))
      c.fail("input " + std::to_string(i) + " is " + dtype_name(c.dtype(i)) + ", X is " +
             dtype_name(c.dtype(0)));
  if (!is_floating(c.dtype(0))) c.fail("X must be floating point");
  const int64_t group = n.attr_int("group", 1), offset_group = n.attr_int("offset_group", 1);
  if (group < 1 || w[0] % group != 0 || w[1] * group != x[1])
    c.fail("X " + shape_str(x) + ", W " + shape_str(w) + " and group " + std::to_string(group) +
           " disagree: W must be [oC, C / group, kH, kW] with oC divisible by group");
  if (offset_group < 1 || x[1] % offset_group != 0)
    c.fail("offset_group " + std::to_string(offset_group) + " does not divide " +
           std::to_string(x[1]) + " input channels");
  const Shape kernel = n.attr_ints("kernel_shape", Shape(w.begin() + 2, w.end()));
  const Shape strides = n.attr_ints("strides", Shape(2, 1));
  const Shape dilations = n.attr_ints("dilations", Shape(2, 1));
  const Shape pads = n.attr_ints("pads", Shape(4, 0));
  if (kernel != Shape(w.begin() + 2, w.end()))
    c.fail("kernel_shape " + shape_str(kernel) + " does not match W " + shape_str(w));
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    c.fail("strides, dilations and pads must hold 2, 2 and 4 values");
  Shape out{x[0], w[0]};
  for (size_t i = 0; i < 2; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[i + 2] < 0)
      c.fail("strides and dilations must be positive and pads not negative");
    const int64_t span = x[i + 2] + pads[i] + pads[i + 2] - dilations[i] * (kernel[i] - 1) - 1;
    if (span < 0)
      c.fail("the dilated kernel " + shape_str(kernel) + " does not fit the padded input " +
             shape_str(x));
    out.push_back(span / strides[i] + 1);
  }
  const int64_t taps = offset_group * kernel[0] * kernel[1];
  const Shape want_offset{x[0], taps * 2, out[2], out[3]};
  if (offset != want_offset)
    c.fail("offset " + shape_str(offset) + " is not " + shape_str(want_offset) +
           " [N, offset_group * kH * kW * 2, oH, oW]");
  if (c.has(3) && c.shape(3) != Shape{w[0]})
    c.fail("B " + shape_str(c.shape(3)) + " does not match " + std::to_string(w[0]) +
           " output channels");
  const Shape want_mask{x[0], taps, out[2], out[3]};
  if (c.has(4) && c.shape(4) != want_mask)
    c.fail("mask " + shape_str(c.shape(4)) + " is not " + shape_str(want_mask) +
           " [N, offset_group * kH * kW, oH, oW]");
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> conv_transpose(const InferContext& c) {
  const Node& n = c.node();
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (x.size() < 3 || w.size() != x.size()) c.fail("needs X of rank >= 3 and W of the same rank");
  const size_t r = x.size() - 2;
  const int64_t group = n.attr_int("group", 1);
  if (group <= 0 || w[0] != x[1] || x[1] % group != 0)
    c.fail("input has " + std::to_string(x[1]) + " channels, W " + shape_str(w) + " and group " +
           std::to_string(group) + " disagree");
  const Shape kernel = n.attr_ints("kernel_shape", Shape(w.begin() + 2, w.end()));
  const Shape strides = n.attr_ints("strides", Shape(r, 1));
  const Shape dilations = n.attr_ints("dilations", Shape(r, 1));
  const Shape out_pad = n.attr_ints("output_padding", Shape(r, 0));
  Shape pads = n.attr_ints("pads", Shape(2 * r, 0));
  const Shape output_shape = n.attr_ints("output_shape");
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (kernel.size() != r || strides.size() != r || dilations.size() != r || out_pad.size() != r ||
      pads.size() != 2 * r)
    c.fail("kernel_shape, strides, dilations, output_padding or pads do not match the input rank");
  Shape out{x[0], w[1] * group};
  for (size_t i = 0; i < r; ++i) {
    int64_t o;
    if (!output_shape.empty()) {
      // output_shape may list all dims or just the spatial ones.
      o = output_shape[output_shape.size() == r ? i : i + 2];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = x[i + 2] * strides[i];
    } else {
      o = strides[i] * (x[i + 2] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - pads[i] -
          pads[i + r];
    }
    if (o <= 0) c.fail("output size " + std::to_string(o) + " is not positive");
    out.push_back(o);
  }
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> matmul(const InferContext& c) {
  Shape a = c.shape(0), b = c.shape(1);
  if (a.empty() || b.empty()) c.fail("operands must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], nn = b.back();
  if (k != k2)
    c.fail("inner dimensions differ: " + shape_str(c.shape(0)) + " x " + shape_str(c.shape(1)));
  Shape out = broadcast_shapes(c, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(nn);
  return {ValueInfo{c.dtype(0), out}};
}

std::vector<ValueInfo> gemm(const InferContext& c) {
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.size() != 2 || b.size() != 2) c.fail("A and B must be matrices");
  const bool ta = c.node().attr_int("transA", 0) != 0, tb = c.node().attr_int("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t k2 = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  if (k != k2)
    c.fail("inner dimensions differ: " + std::to_string(k) + " vs " + std::to_string(k2));
  Shape out{m, nn};
  if (c.has(2) && broadcast_shapes(c, out, c.shape(2)) != out)
    c.fail("C " + shape_str(c.shape(2)) + " does not broadcast to " + shape_str(out));
  return {ValueInfo{c.dtype(0), out}};
}

// Einsum: "ij,jk->ik", with "..." for leading broadcast dims, a label repeated in one
// operand for its diagonal ("bii->bi"), and an implicit output (letters used once, in
// alphabetical order) when "->" is missing.
std::vector<ValueInfo> einsum(const InferContext& c) {
  std::string eq;
  for (char ch : c.node().attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.num_inputs())
    c.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands, node has " +
           std::to_string(c.num_inputs()));
  std::map<char, int64_t> size;
  std::map<char, int> count;
  Shape ellipsis;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Shape& s = c.shape(t);
    const std::string& term = terms[t];
    const size_t dots = term.find("...");
    const size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (letters > s.size() || (dots == std::string::npos && letters != s.size()))
      c.fail("operand " + std::to_string(t) + " " + shape_str(s) + " does not match '" + term +
             "'");
    const size_t ell_rank = s.size() - letters;
    std::map<char, int64_t> in_term;  // a label repeated in one operand: its diagonal
    size_t dim = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0) {
        Shape e(s.begin() + static_cast<int64_t>(dim),
                s.begin() + static_cast<int64_t>(dim + ell_rank));
        ellipsis = broadcast_shapes(c, ellipsis, e);
        dim += ell_rank;
        i += 2;
        continue;
      }
      const char ch = term[i];
      if (!std::isalpha(static_cast<unsigned char>(ch))) c.fail("bad equation '" + eq + "'");
      const int64_t d = s[dim++];
      auto [rep, first] = in_term.emplace(ch, d);
      if (!first && rep->second != d)
        c.fail(std::string("label '") + ch + "' repeats in operand " + std::to_string(t) + " " +
               shape_str(s) + " with sizes " + std::to_string(rep->second) + " and " +
               std::to_string(d) + "; a diagonal needs equal sizes");
      auto [it, fresh] = size.emplace(ch, d);
      if (!fresh && it->second != d) {
        if (it->second == 1)
          it->second = d;
        else if (d != 1)
          c.fail(std::string("label '") + ch + "' has sizes " + std::to_string(it->second) +
                 " and " + std::to_string(d));
      }
      ++count[ch];
    }
  }
  std::string rhs;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    rhs = "...";
    for (const auto& [ch, k] : count)
      if (k == 1) rhs += ch;
  }
  Shape out;
  for (size_t i = 0; i < rhs.size(); ++i) {
    if (rhs.compare(i, 3, "...") == 0) {
      out.insert(out.end(), ellipsis.begin(), ellipsis.end());
      i += 2;
      continue;
    }
    auto it = size.find(rhs[i]);
    if (it == size.end())
      c.fail(std::string("output label '") + rhs[i] + "' is not an input label");
    if (rhs.find(rhs[i]) != i)
      c.fail(std::string("output label '") + rhs[i] + "' repeats in '" + rhs + "'");
    out.push_back(it->second);
  }
  return {ValueInfo{c.dtype(0), out}};
}

}  // namespace

void add_linear_rules(RuleTable& t) {
  t["Conv"] = {conv, 2, 3};
  t["ConvTranspose"] = {conv_transpose, 2, 3};
  t["DeformConv"] = {deform_conv, 3, 5};
  t["MatMul"] = {matmul, 2, 2};
  t["Gemm"] = {gemm, 2, 3};
  t["Einsum"] = {einsum, 1, -1};
}

}  // namespace kora
