// attention_where_test.cpp — attention masked as GPT-2's code writes it:
// the scores (MatMul of Q by K transposed, divided by sqrt(D)) go through
// Where(causal, scores, lowest) before the Softmax, the condition a bool
// tensor computed at run time. The optimizer's FusedAttention takes the
// Where in (either branch order) and keeps the unfused graph's results; a
// condition that would widen the scores runs the absorbed nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../session/model_builder.h"
#include "graph/attention_test_util.h"

namespace spindle {
namespace {

using testing::expect_fused_bits;
using testing::ModelBuilder;
using testing::random_values;

constexpr int64_t B = 1, H = 3, D = 10;

// q [B, H, Sq, D], k / v [B, H, Skv, D], cond (bool) of shape `cond_shape`;
// y [B, Sq, H, D]. `scores_first`: Where(cond, s, fill), else
// Where(NOT cond, fill, s) written as Where(cond_inv, fill, s) with cond_inv
// a second bool input.
std::vector<uint8_t> gpt_model(const std::vector<int64_t>& cond_shape, bool scores_first) {
  ModelBuilder b(14);
  b.input("q", {B, H, -1, D}).input("k", {B, H, -1, D}).input("v", {B, H, -1, D});
  b.input("cond", cond_shape, onnx::TensorProto::BOOL);
  b.output("y", {-1, -1, H, D});
  b.initializer("scale", {}, {3.1622777f});
  b.initializer("lowest", {}, {-3.4028235e38f});
  ModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Div", {"s", "scale"}, {"sd"});
  if (scores_first)
    b.node("Where", {"cond", "sd", "lowest"}, {"sm"});
  else
    b.node("Where", {"cond", "lowest", "sd"}, {"sm"});
  ModelBuilder::attr_int(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "v"}, {"o"});
  ModelBuilder::attr_ints(b.node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  return b.bytes();
}

// The causal condition over a cache: query i (at position Skv - Sq + i)
// sees keys 0 .. Skv - Sq + i; `visible` false inverts it.
Tensor causal(const std::vector<int64_t>& shape, int64_t Sq, int64_t Skv, bool visible) {
  Tensor t(DataType::kBool, Shape(shape.begin(), shape.end()));
  bool* p = t.mutable_data<bool>();
  const int64_t copies = t.numel() / (Sq * Skv);
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t i = 0; i < Sq; ++i)
      for (int64_t j = 0; j < Skv; ++j) p[(c * Sq + i) * Skv + j] = (j <= Skv - Sq + i) == visible;
  return t;
}

Feeds gpt_feeds(int64_t Sq, int64_t Skv, Tensor cond, uint32_t seed) {
  auto t = [&](int64_t rows, uint32_t s) {
    return Tensor::from_vector<float>({B, H, rows, D}, random_values(static_cast<size_t>(B * H * rows * D), s));
  };
  return {{"q", t(Sq, seed)}, {"k", t(Skv, seed + 1)}, {"v", t(Skv, seed + 2)}, {"cond", std::move(cond)}};
}

// Prefill (several query rows, in blocks), decode (one row over a long
// past) and a short cache; the condition [Sq, Skv] as sliced from GPT-2's
// buffer, and [B, 1, Sq, Skv]; both branch orders.
TEST(AttentionWhere, CausalWhereMaskIsFusedBitwise) {
  // (100, 100), (70, 90), (300, 300) and (150, 520): prompts in several
  // query blocks, each stopping at the last key its rows see (past 256 keys
  // too: the SGEMM's k blocks continue one chain per element).
  for (auto [Sq, Skv] :
       {std::pair<int64_t, int64_t>{9, 9}, {1, 67}, {3, 40}, {100, 100}, {70, 90}, {300, 300}, {150, 520}}) {
    SCOPED_TRACE(::testing::Message() << "Sq " << Sq << ", Skv " << Skv);
    expect_fused_bits(gpt_model({-1, -1}, true), gpt_feeds(Sq, Skv, causal({Sq, Skv}, Sq, Skv, true), 81), 1);
    expect_fused_bits(gpt_model({B, 1, -1, -1}, true),
                      gpt_feeds(Sq, Skv, causal({B, 1, Sq, Skv}, Sq, Skv, true), 82), 1);
    expect_fused_bits(gpt_model({-1, -1}, false), gpt_feeds(Sq, Skv, causal({Sq, Skv}, Sq, Skv, false), 83), 1);
  }
}

// The skipped keys' probabilities are exact zeros, so skipping them keeps
// the unfused graph's bits; a NaN or an infinity in a V row no query of a
// block sees still reaches that block's outputs (0 x NaN), as unfused: the
// block reads up to that row. A query row that sees no key at all spreads
// its probability over every key, as unfused.
TEST(AttentionWhere, SkippedKeysKeepNonFiniteValuesAndEmptyRows) {
  const int64_t Sq = 60, Skv = 60;
  Feeds nan_v = gpt_feeds(Sq, Skv, causal({Sq, Skv}, Sq, Skv, true), 91);
  float* v = nan_v[2].second.mutable_data<float>();
  v[(Skv - 3) * D + 4] = std::numeric_limits<float>::quiet_NaN();  // head 0, key Skv - 3
  v[(2 * Skv - 1) * D] = std::numeric_limits<float>::infinity();   // head 1, the last key
  const auto want = testing::run_model(gpt_model({-1, -1}, true), nan_v, 1, false);
  const auto got = testing::run_model(gpt_model({-1, -1}, true), nan_v, 2, true);
  ASSERT_EQ(got.size(), 1u);
  const auto w = want[0].to_vector<float>(), g = got[0].to_vector<float>();
  ASSERT_EQ(w.size(), g.size());
  size_t nans = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(std::isnan(w[i]), std::isnan(g[i])) << "at " << i;
    if (!std::isnan(w[i])) EXPECT_EQ(w[i], g[i]) << "at " << i;
    nans += std::isnan(w[i]) ? 1 : 0;
  }
  EXPECT_GT(nans, 0u);  // the NaN reaches rows that do not see its key

  Tensor cond = causal({Sq, Skv}, Sq, Skv, true);
  bool* c = cond.mutable_data<bool>();
  for (int64_t j = 0; j < Skv; ++j) c[5 * Skv + j] = false;  // query 5 sees nothing
  expect_fused_bits(gpt_model({-1, -1}, true), gpt_feeds(Sq, Skv, std::move(cond), 92), 1);
}

// A condition with a larger batch than the scores widens the result: the
// fused node runs Transpose, MatMul, Div, Where, Softmax, MatMul and
// Transpose one by one, with the unfused graph's results.
TEST(AttentionWhere, ConditionThatWidensTheScoresRunsTheNodes) {
  const int64_t Sq = 4, Skv = 6;
  expect_fused_bits(gpt_model({2, H, -1, -1}, true), gpt_feeds(Sq, Skv, causal({2, H, Sq, Skv}, Sq, Skv, true), 84), 1);
}

// A Where whose other branch is not a scalar constant is not the mask: the
// chain stays as it is.
TEST(AttentionWhere, WhereBetweenTwoComputedValuesIsLeftAlone) {
  ModelBuilder b(14);
  b.input("q", {B, H, 4, D}).input("k", {B, H, 4, D}).input("v", {B, H, 4, D}).input("cond", {4, 4}, onnx::TensorProto::BOOL);
  b.input("other", {B, H, 4, 4});
  b.output("y", {B, H, 4, D});
  ModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Where", {"cond", "s", "other"}, {"sm"});
  ModelBuilder::attr_int(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "v"}, {"y"});
  std::string summary;
  Feeds f = gpt_feeds(4, 4, causal({4, 4}, 4, 4, true), 85);
  f.push_back({"other", Tensor::from_vector<float>({B, H, 4, 4}, random_values(B * H * 16, 86))});
  const auto got = testing::run_model(b.bytes(), f, 2, true, &summary);
  EXPECT_THAT(summary, ::testing::HasSubstr("AttentionFusion 0"));
  EXPECT_EQ(got[0].to_vector<float>(), testing::run_model(b.bytes(), f, 1, false)[0].to_vector<float>());
}

}  // namespace
}  // namespace spindle
