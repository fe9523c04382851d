// TfIdfVectorizer over integer tokens, as ONNX's reference implementation counts n-grams
// and onnxruntime weighs them. In: X [C] or [B, C] (int32 or int64) and the attributes
// (mode TF, IDF or TFIDF; min/max_gram_length, max_skip_count; the pool_int64s n-grams
// grouped by size through ngram_counts; ngram_indexes; optional weights). Out: Y float32
// [max(ngram_indexes) + 1] or [B, max(ngram_indexes) + 1]: per row, each pool n-gram
// found (its tokens skip_distance - 1 apart for every skip distance up to
// max_skip_count + 1; unigrams counted once) adds to Y[ngram_indexes[id]] its count (TF),
// its weight once (IDF) or its count times its weight (TFIDF). Pool errors (counts out
// of bounds, partial or duplicate n-grams) are errors naming the node, as in onnxruntime.
#include <algorithm>
#include <map>
#include <memory>

#include "interpreter/kernels.h"

namespace kora::interp {
namespace {

// A trie of the pool's n-grams: id 0 where no n-gram ends (ids count from 1).
struct Trie {
  int64_t id = 0;
  std::map<int64_t, std::unique_ptr<Trie>> next;
};

struct Vectorizer {
  std::string mode;
  int64_t min_len = 1, max_len = 1, max_skip = 0;
  std::vector<int64_t> indexes;
  std::vector<double> weights;
  int64_t out_size = 0;
  Trie root;
};

Vectorizer load(const OpaqueCall& call) {
  const Node& n = call.node();
  Vectorizer v;
  v.mode = n.attr_string("mode", "");
  if (v.mode != "TF" && v.mode != "IDF" && v.mode != "TFIDF")
    call.fail("mode '" + v.mode + "' is not one of TF, IDF, TFIDF");
  if (n.has_attr("pool_strings"))
    call.fail("pool_strings: string n-grams are not supported (kora has no string dtype)");
  v.min_len = n.attr_int("min_gram_length", 0);
  v.max_len = n.attr_int("max_gram_length", 0);
  v.max_skip = n.attr_int("max_skip_count", -1);
  const std::vector<int64_t> counts = n.attr_ints("ngram_counts");
  const std::vector<int64_t> pool = n.attr_ints("pool_int64s");
  v.indexes = n.attr_ints("ngram_indexes");
  v.weights = n.attr_floats("weights");
  const int64_t levels = static_cast<int64_t>(counts.size());
  if (v.min_len < 1 || v.max_len < v.min_len || v.max_len > levels)
    call.fail("min_gram_length " + std::to_string(v.min_len) + " and max_gram_length " +
              std::to_string(v.max_len) +
              " must satisfy 1 <= min <= max <= " + std::to_string(levels) + " (the ngram_counts)");
  if (v.max_skip < 0) call.fail("max_skip_count must be given and non-negative");
  if (pool.empty()) call.fail("pool_int64s must not be empty");
  if (v.indexes.empty()) call.fail("ngram_indexes must not be empty");
  for (int64_t i : v.indexes)
    if (i < 0) call.fail("ngram_indexes must not be negative");
  if (!v.weights.empty() && v.weights.size() != v.indexes.size())
    call.fail("weights has " + std::to_string(v.weights.size()) + " entries, ngram_indexes " +
              std::to_string(v.indexes.size()));
  v.out_size = *std::max_element(v.indexes.begin(), v.indexes.end()) + 1;
  const int64_t total = static_cast<int64_t>(pool.size());
  int64_t id = 1;
  for (int64_t level = 0; level < levels; ++level) {
    const int64_t size = level + 1, begin = counts[level];
    const int64_t end = level + 1 < levels ? counts[level + 1] : total;
    if (begin < 0 || end < begin || end > total)
      call.fail("ngram_counts are out of bounds for " + std::to_string(size) + "-grams");
    if ((end - begin) % size != 0)
      call.fail("pool_int64s holds a partial " + std::to_string(size) + "-gram");
    const int64_t grams = (end - begin) / size;
    if (size < v.min_len || size > v.max_len) {
      id += grams;
      continue;
    }
    for (int64_t g = 0; g < grams; ++g, ++id) {
      Trie* t = &v.root;
      for (int64_t k = 0; k < size; ++k) {
        std::unique_ptr<Trie>& child = t->next[pool[begin + g * size + k]];
        if (!child) child = std::make_unique<Trie>();
        t = child.get();
      }
      if (t->id != 0) call.fail("pool_int64s holds a duplicate " + std::to_string(size) + "-gram");
      if (id > static_cast<int64_t>(v.indexes.size()))
        call.fail("ngram_indexes has " + std::to_string(v.indexes.size()) +
                  " entries, fewer than the pool's n-grams");
      t->id = id;
    }
  }
  return v;
}

// Counts the pool n-grams of one row into counts[id - 1].
void count_row(const Vectorizer& v, const int64_t* row, int64_t len, std::vector<int64_t>& counts) {
  int64_t start_len = v.min_len;
  for (int64_t skip = 1; skip <= v.max_skip + 1; ++skip) {
    for (int64_t start = 0; start < len; ++start) {
      if (start + skip * (start_len - 1) >= len) break;
      const Trie* t = &v.root;
      int64_t item = start;
      for (int64_t size = 1; size <= v.max_len && item < len && !t->next.empty();
           ++size, item += skip) {
        const auto hit = t->next.find(row[item]);
        if (hit == t->next.end()) break;
        t = hit->second.get();
        if (size >= start_len && t->id != 0) ++counts[t->id - 1];
      }
    }
    // Unigrams do not depend on the skip distance: counted on the first pass only.
    if (start_len == 1 && ++start_len > v.max_len) break;
  }
}

}  // namespace

std::vector<Tensor> run_tfidf_vectorizer(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  if (x.dtype() != DType::kInt32 && x.dtype() != DType::kInt64)
    call.fail("X must be int32 or int64, not " + std::string(dtype_name(x.dtype())));
  const Shape& xs = x.shape();
  if (xs.empty() || xs.size() > 2) call.fail("X must be [C] or [B, C], got " + shape_str(xs));
  const Vectorizer v = load(call);
  const int64_t rows = xs.size() == 2 ? xs[0] : 1, len = xs.back();
  Shape shape{v.out_size};
  if (xs.size() == 2) shape.insert(shape.begin(), rows);
  const ValueInfo& out = call.out(0);
  if (out.dtype != DType::kFloat32 || out.shape != shape)
    call.fail("output is " + type_str(out.dtype, out.shape) + ", ONNX gives " +
              type_str(DType::kFloat32, shape));
  const std::vector<int64_t> tokens = x.to_int64();
  std::vector<double> y(static_cast<size_t>(rows * v.out_size), 0.0);
  std::vector<int64_t> counts(v.indexes.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    count_row(v, tokens.data() + r * len, len, counts);
    double* yr = y.data() + r * v.out_size;
    for (size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] == 0) continue;
      const double w = v.weights.empty() ? 1.0 : v.weights[k];
      double& target = yr[v.indexes[k]];
      if (v.mode == "TF")
        target += static_cast<double>(counts[k]);
      else if (v.mode == "IDF")
        target = w;
      else
        target += w * static_cast<double>(counts[k]);
    }
  }
  return {Tensor::from_double(DType::kFloat32, shape, y)};
}

}  // namespace kora::interp
