// TfIdfVectorizer run whole by the interpreter: expected values are ONNX's node test
// test_tfidfvectorizer_tf_batch_uniandbigrams_skip5 and onnxruntime 1.32's outputs (each
// n-gram's weight lands at its ngram_indexes entry); pool errors name the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "interpreter/interp_helpers.h"
#include "kora/error.h"

namespace kora_interp_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The node tests' pool: unigrams 2, 3, 5, 4; bigrams (5, 6), (7, 8), (6, 7).
kora::Node vectorizer(const std::string& mode, int64_t max_skip,
                      const std::vector<int64_t>& indexes = {0, 1, 2, 3, 4, 5, 6}) {
  kora::Node n = onnx_node("TfIdfVectorizer", {"x0"}, 1);
  set_string(n, "mode", mode);
  set_int(n, "min_gram_length", 1);
  set_int(n, "max_gram_length", 2);
  set_int(n, "max_skip_count", max_skip);
  set_ints(n, "ngram_counts", {0, 4});
  set_ints(n, "ngram_indexes", indexes);
  set_ints(n, "pool_int64s", {2, 3, 5, 4, 5, 6, 7, 8, 6, 7});
  return n;
}

const Tensor kBatch = i64({2, 6}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});

TEST(InterpTfIdf, CountsUnigramsAndSkippedBigrams) {
  const Tensor y = run1(kora::OpaqueAttrs{vectorizer("TF", 5)}, {kBatch}, DType::kFloat32, {2, 7});
  expect_near(y, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1});
  // One row: a 1-D input gives a 1-D output.
  const Tensor row = i64({6}, {8, 6, 7, 5, 6, 8});
  expect_near(run1(kora::OpaqueAttrs{vectorizer("TF", 5)}, {row}, DType::kFloat32, {7}),
              {0, 0, 1, 0, 1, 1, 1});
}

TEST(InterpTfIdf, WeightsFollowTheNgramToItsIndex) {
  const std::vector<int64_t> perm = {6, 0, 3, 1, 2, 5, 4};
  kora::Node idf = vectorizer("IDF", 2, perm), tfidf = vectorizer("TFIDF", 2, perm);
  for (kora::Node* n : {&idf, &tfidf}) set_floats(*n, "weights", {.1, .2, .3, .4, .5, .6, .7});
  expect_near(run1(kora::OpaqueAttrs{idf}, {kBatch}, DType::kFloat32, {2, 7}),
              {.2, 0, 0, 0, 0, 0, 0, 0, 0, .5, .3, .7, .6, 0});
  expect_near(run1(kora::OpaqueAttrs{tfidf}, {kBatch}, DType::kFloat32, {2, 7}),
              {.6, 0, 0, 0, 0, 0, 0, 0, 0, .5, .3, .7, .6, 0});
  // Without weights IDF marks presence and TFIDF counts.
  expect_near(
      run1(kora::OpaqueAttrs{vectorizer("IDF", 2, perm)}, {kBatch}, DType::kFloat32, {2, 7}),
      {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0});
}

TEST(InterpTfIdf, BadPoolsNameTheNode) {
  kora::Node duplicate = vectorizer("TF", 0);
  set_ints(duplicate, "pool_int64s", {2, 3, 5, 2, 5, 6, 7, 8, 6, 7});
  kora::Node partial = vectorizer("TF", 0);
  set_ints(partial, "pool_int64s", {2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 9});
  kora::Node short_indexes = vectorizer("TF", 0, {0, 1, 2, 3, 4});
  for (const auto& [node, what] :
       {std::pair{duplicate, "duplicate 1-gram"}, std::pair{partial, "partial 2-gram"},
        std::pair{short_indexes, "ngram_indexes"}}) {
    try {
      run1(kora::OpaqueAttrs{node}, {kBatch}, DType::kFloat32,
           {2, node.attr_ints("ngram_indexes").size() == 7 ? 7 : 5});
      ADD_FAILURE() << what << ": no error";
    } catch (const kora::Error& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr("TfIdfVectorizer"), HasSubstr(what)));
    }
  }
}

}  // namespace
}  // namespace kora_interp_test
