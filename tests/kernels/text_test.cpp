// text_test.cpp — string tensors and the text ops beyond the ONNX backend
// tests: StringNormalizer on non-ASCII text, case-insensitive stop words,
// bad UTF-8; TfIdfVectorizer with string pools, IDF / TFIDF weights, skips
// that count an n-gram once per distance, thread-count independence, hostile
// indexes and skip counts; Cast between strings and numbers (round trips,
// NaN / INF spellings, bad text); string tensors refused by kernels that move
// raw bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;

Tensor strings(Shape shape, const std::vector<std::string>& v) { return Tensor::from_vector<std::string>(std::move(shape), v); }

TEST(StringTensor, CopiesShareAndCloneCopies) {
  Tensor a = strings({2}, {"alpha", "beta"});
  Tensor view = a.reshaped({1, 2});
  Tensor copy = a.clone();
  a.mutable_data<std::string>()[0] = "changed";
  EXPECT_EQ(view.data<std::string>()[0], "changed");
  EXPECT_EQ(copy.data<std::string>()[0], "alpha");
  EXPECT_EQ(a.nbytes(), 0u);  // byte-moving kernels see no bytes to move and refuse strings
}

TEST(StringNormalizer, NonAsciiCaseAndCaseInsensitiveStopWords) {
  const Tensor x = strings({1, 4}, {"Straße", "ÉCOLE", "montag", "MONTAG"});
  const Tensor upper = run_kernel_once("StringNormalizer", 10,
                                       {{"case_change_action", std::string("UPPER")},
                                        {"stopwords", std::vector<std::string>{"Montag"}}},
                                       {x})[0];
  ASSERT_EQ(upper.shape(), (Shape{1, 2}));
  // Per code point: ß has no one-character upper case and stays.
  EXPECT_EQ(upper.to_vector<std::string>(), (std::vector<std::string>{"STRAßE", "ÉCOLE"}));
  const Tensor lower = run_kernel_once("StringNormalizer", 10,
                                       {{"case_change_action", std::string("LOWER")}, {"is_case_sensitive", int64_t{1}},
                                        {"stopwords", std::vector<std::string>{"montag"}}},
                                       {x})[0];
  EXPECT_EQ(lower.to_vector<std::string>(), (std::vector<std::string>{"straße", "école", "montag"}));
  testing::expect_error("StringNormalizer", 10, {{"case_change_action", std::string("LOWER")}},
                        {strings({2}, {"ok", std::string("\xC3\x28", 2)})}, {"element 1 of X is not valid UTF-8"});
  testing::expect_error("StringNormalizer", 10, {{"case_change_action", std::string("TITLE")}}, {x},
                        {"case_change_action 'TITLE'", "NONE, LOWER, UPPER"});
  testing::expect_error("StringNormalizer", 10, {}, {strings({2, 2}, {"a", "b", "c", "d"})}, {"expected shape [C] or [1, C]"});
}

TEST(TfIdfVectorizer, StringPoolWeightsAndSkipsMatchAHandCount) {
  // Pool: unigrams "a" -> 0, "b" -> 1; bigram ("a", "b") -> 2.
  Attributes attrs{{"min_gram_length", int64_t{1}},
                   {"max_gram_length", int64_t{2}},
                   {"max_skip_count", int64_t{1}},
                   {"mode", std::string("TFIDF")},
                   {"ngram_counts", std::vector<int64_t>{0, 2}},
                   {"ngram_indexes", std::vector<int64_t>{0, 1, 2}},
                   {"pool_strings", std::vector<std::string>{"a", "b", "a", "b"}},
                   {"weights", std::vector<float>{0.5f, 2.0f, 10.0f}}};
  // Row 0: a b b -> a:1, b:2, (a,b) at distance 1 and 2 (skip 0 and 1): 2.
  // Row 1: b a c -> a:1, b:1, no (a,b).
  const Tensor x = strings({2, 3}, {"a", "b", "b", "b", "a", "c"});
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const Tensor y = run_kernel_once("TfIdfVectorizer", 9, attrs, {x}, 1, pool.get())[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.5f, 4.0f, 20.0f, 0.5f, 2.0f, 0.0f}));
  attrs.set("mode", std::string("IDF"));
  EXPECT_EQ(run_kernel_once("TfIdfVectorizer", 9, attrs, {x})[0].to_vector<float>(),
            (std::vector<float>{0.5f, 2.0f, 10.0f, 0.5f, 2.0f, 0.0f}));
  testing::expect_error("TfIdfVectorizer", 9, attrs, {Tensor::from_vector<int64_t>({2}, {1, 2})},
                        {"input X is int64 2", "pool_strings"});
  attrs.set("ngram_counts", std::vector<int64_t>{0, 3});
  testing::expect_error("TfIdfVectorizer", 9, attrs, {x}, {"does not split a pool of 4 items into n-grams of length 2"});
}

// Attributes from a hostile model: an output index of 2^63 - 1 (its + 1
// overflowed, fuzz_graph) is refused naming it; a skip count of 2^63 - 1 is
// a skip past any row (the work cost is computed in double, bounded by the
// row), so it counts what the largest useful skip counts.
TEST(TfIdfVectorizer, HostileIndexesAndSkipCountsAreHandled) {
  Attributes attrs{{"min_gram_length", int64_t{1}},
                   {"max_gram_length", int64_t{2}},
                   {"max_skip_count", int64_t{2}},
                   {"mode", std::string("TF")},
                   {"ngram_counts", std::vector<int64_t>{0, 2}},
                   {"ngram_indexes", std::vector<int64_t>{0, 1, 2}},
                   {"pool_int64s", std::vector<int64_t>{4, 5, 4, 5}}};
  const Tensor x = Tensor::from_vector<int64_t>({2, 4}, {4, 7, 7, 5, 5, 4, 9, 5});
  const std::vector<float> want = run_kernel_once("TfIdfVectorizer", 9, attrs, {x})[0].to_vector<float>();
  EXPECT_EQ(want, (std::vector<float>{1, 1, 1, 1, 2, 1}));
  attrs.set("max_skip_count", std::numeric_limits<int64_t>::max());
  EXPECT_EQ(run_kernel_once("TfIdfVectorizer", 9, attrs, {x})[0].to_vector<float>(), want);
  attrs.set("ngram_indexes", std::vector<int64_t>{0, 1, 2, std::numeric_limits<int64_t>::max()});
  testing::expect_error("TfIdfVectorizer", 9, attrs, {x}, {"ngram_indexes holds the index 9223372036854775807"});
}

TEST(CastString, NumbersRoundTripAndSpecialValuesAreSpelledTheOnnxWay) {
  const std::vector<float> v = {0.1f, -3.0f, 1e-7f, 3.4028235e38f, NAN, INFINITY, -INFINITY};
  const Tensor s = run_kernel_once("Cast", 13, {{"to", int64_t{8}}}, {Tensor::from_vector<float>({7}, v)})[0];
  EXPECT_EQ(s.to_vector<std::string>(),
            (std::vector<std::string>{"0.1", "-3", "1e-07", "3.4028235e+38", "NaN", "INF", "-INF"}));
  const auto back = run_kernel_once("Cast", 13, {{"to", int64_t{1}}}, {s})[0].to_vector<float>();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(back[i], v[i]);
  EXPECT_TRUE(std::isnan(back[4]));
  EXPECT_EQ(back[5], INFINITY);
  EXPECT_EQ(back[6], -INFINITY);
  const Tensor ints = run_kernel_once("Cast", 13, {{"to", int64_t{7}}}, {strings({2}, {"-9007199254740993", "42"})})[0];
  EXPECT_EQ(ints.to_vector<int64_t>(), (std::vector<int64_t>{-9007199254740993LL, 42}));
  testing::expect_error("Cast", 13, {{"to", int64_t{1}}}, {strings({2}, {"1.5", "1.5kg"})},
                        {"element 1 is the string \"1.5kg\", which is not a number"});
  testing::expect_error("Cast", 13, {{"to", int64_t{2}}}, {strings({1}, {"300"})}, {"not a number in range"});
  testing::expect_error("Cast", 13, {{"to", int64_t{9}}}, {strings({1}, {"1"})}, {"cast from string to bool is not supported"});
}

TEST(StringTensor, KernelsThatMoveBytesRefuseStringsAndViewsTakeThem) {
  const Tensor x = strings({2, 2}, {"a", "b", "c", "d"});
  testing::expect_error("Transpose", 13, {}, {x}, {"Transpose", "string tensor", "does not take strings"});
  testing::expect_error("Add", 13, {}, {x, x}, {"Add", "does not take strings"});
  const Tensor flat = run_kernel_once("Reshape", 13, {}, {x, Tensor::from_vector<int64_t>({1}, {4})})[0];
  EXPECT_EQ(flat.to_vector<std::string>(), (std::vector<std::string>{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace spindle
