// attention_additive_test.cpp — attention masked as LLaMA-style exports
// write it: the scores (MatMul of Q by K transposed, divided by sqrt(D)) get
// an additive float mask (0 where a key is seen, a large negative constant
// where not) before the Softmax. FusedAttention stops each query block at
// the last key its rows see when the skipped terms are exact zeros (a bound
// on the scores from the rows' norms) and keeps the unfused graph's bits in
// every case: huge scores that the mask does not push below the row's max,
// a NaN in the mask, a row that sees nothing, an infinity in a V row no
// query sees.
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

constexpr int64_t B = 1, H = 2, D = 10;

// q [B, H, Sq, D], k / v [B, H, Skv, D], mask (float) of shape `mask_shape`;
// y [B, Sq, H, D].
std::vector<uint8_t> llama_model(const std::vector<int64_t>& mask_shape) {
  ModelBuilder b(14);
  b.input("q", {B, H, -1, D}).input("k", {B, H, -1, D}).input("v", {B, H, -1, D});
  b.input("mask", mask_shape);
  b.output("y", {-1, -1, H, D});
  b.initializer("scale", {}, {3.1622777f});
  ModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Div", {"s", "scale"}, {"sd"});
  b.node("Add", {"sd", "mask"}, {"sm"});
  ModelBuilder::attr_int(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "v"}, {"o"});
  ModelBuilder::attr_ints(b.node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  return b.bytes();
}

// The causal mask over a cache: query i (at position Skv - Sq + i) sees keys
// 0 .. Skv - Sq + i (mask 0), the others get `fill`.
Tensor causal_mask(const std::vector<int64_t>& shape, int64_t Sq, int64_t Skv, float fill) {
  Tensor t(DataType::kFloat32, Shape(shape.begin(), shape.end()));
  float* p = t.mutable_data<float>();
  const int64_t copies = t.numel() / (Sq * Skv);
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t i = 0; i < Sq; ++i)
      for (int64_t j = 0; j < Skv; ++j) p[(c * Sq + i) * Skv + j] = j <= Skv - Sq + i ? 0.0f : fill;
  return t;
}

Feeds llama_feeds(int64_t Sq, int64_t Skv, Tensor mask, uint32_t seed) {
  auto t = [&](int64_t rows, uint32_t s) {
    return Tensor::from_vector<float>({B, H, rows, D}, random_values(static_cast<size_t>(B * H * rows * D), s));
  };
  return {{"q", t(Sq, seed)}, {"k", t(Skv, seed + 1)}, {"v", t(Skv, seed + 2)}, {"mask", std::move(mask)}};
}

// The unoptimized graph at one thread against the optimized one at two,
// NaN where the other has NaN, equal bits elsewhere; the count of NaN
// outputs.
size_t expect_same_bits_or_nan(const std::vector<uint8_t>& model, const Feeds& feeds) {
  const auto want = testing::run_model(model, feeds, 1, false);
  const auto got = testing::run_model(model, feeds, 2, true);
  EXPECT_EQ(got.size(), 1u);
  const auto w = want[0].to_vector<float>(), g = got[0].to_vector<float>();
  EXPECT_EQ(w.size(), g.size());
  size_t nans = 0;
  for (size_t i = 0; i < std::min(w.size(), g.size()); ++i) {
    EXPECT_EQ(std::isnan(w[i]), std::isnan(g[i])) << "at " << i;
    if (!std::isnan(w[i])) EXPECT_EQ(w[i], g[i]) << "at " << i;
    nans += std::isnan(w[i]) ? 1 : 0;
  }
  return nans;
}

// Prompts in several query blocks (past 256 keys too), decode over a past,
// the mask [Sq, Skv] and [B, 1, Sq, Skv], fills -1e9 (the exporters'
// constant), the lowest float and -inf.
TEST(AttentionAdditive, CausalAdditiveMaskIsFusedBitwise) {
  for (auto [Sq, Skv] :
       {std::pair<int64_t, int64_t>{9, 9}, {1, 67}, {100, 100}, {70, 90}, {300, 300}, {150, 520}}) {
    SCOPED_TRACE(::testing::Message() << "Sq " << Sq << ", Skv " << Skv);
    expect_fused_bits(llama_model({-1, -1}), llama_feeds(Sq, Skv, causal_mask({Sq, Skv}, Sq, Skv, -1e9f), 11), 1);
    expect_fused_bits(llama_model({B, 1, -1, -1}),
                      llama_feeds(Sq, Skv, causal_mask({B, 1, Sq, Skv}, Sq, Skv, -3.4028235e38f), 12), 1);
    expect_fused_bits(llama_model({-1, -1}),
                      llama_feeds(Sq, Skv, causal_mask({Sq, Skv}, Sq, Skv, -std::numeric_limits<float>::infinity()),
                                  13),
                      1);
  }
}

// Keys the mask hides but whose scores are larger than the mask is
// negative (k rows of 1e6 against the -1e6 fill): their probabilities are
// not zeros, so the blocks read them (the norm bound says so); rows that
// see such keys themselves skip the rest. The unfused graph's bits.
TEST(AttentionAdditive, ScoresLargerThanTheMaskAreNotSkipped) {
  const int64_t Sq = 64, Skv = 64;
  Feeds f = llama_feeds(Sq, Skv, causal_mask({Sq, Skv}, Sq, Skv, -1e6f), 21);
  float* q = f[0].second.mutable_data<float>();
  float* k = f[1].second.mutable_data<float>();
  for (int64_t i = 0; i < B * H * Sq * D; ++i) q[i] = 1.0f;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t j = Skv / 2; j < Skv; ++j)
      for (int64_t d = 0; d < D; ++d) k[(h * Skv + j) * D + d] = 1e6f;
  expect_fused_bits(llama_model({-1, -1}), f, 1);
  // The same keys at moderate size (the bound holds): skipped, same bits.
  for (int64_t i = 0; i < B * H * Skv * D; ++i) k[i] = k[i] == 1e6f ? 30.0f : k[i];
  expect_fused_bits(llama_model({-1, -1}), f, 1);
}

// A NaN in a masked entry past a row's last seen key is not a masked value:
// the row reads up to it and its outputs are NaN, as unfused. A row whose
// every key is masked spreads its probability over all of them, as
// unfused. An infinity in a V row that no query of a block sees reaches the
// block's outputs (0 x inf = NaN), as unfused.
TEST(AttentionAdditive, NaNMaskEmptyRowAndNonFiniteValuesKeepTheUnfusedResults) {
  const int64_t Sq = 60, Skv = 60;
  Tensor mask = causal_mask({Sq, Skv}, Sq, Skv, -1e9f);
  float* m = mask.mutable_data<float>();
  m[3 * Skv + Skv - 1] = std::numeric_limits<float>::quiet_NaN();  // query 3, the last key
  for (int64_t j = 0; j < Skv; ++j) m[7 * Skv + j] = -1e9f;        // query 7 sees nothing
  EXPECT_GT(expect_same_bits_or_nan(llama_model({-1, -1}), llama_feeds(Sq, Skv, std::move(mask), 31)), 0u);

  Feeds inf_v = llama_feeds(Sq, Skv, causal_mask({Sq, Skv}, Sq, Skv, -1e9f), 32);
  inf_v[2].second.mutable_data<float>()[(Skv - 1) * D] = std::numeric_limits<float>::infinity();  // head 0, last key
  EXPECT_GT(expect_same_bits_or_nan(llama_model({-1, -1}), inf_v), 0u);

  Tensor empty_row = causal_mask({Sq, Skv}, Sq, Skv, -1e9f);
  for (int64_t j = 0; j < Skv; ++j) empty_row.mutable_data<float>()[7 * Skv + j] = -1e9f;
  expect_fused_bits(llama_model({-1, -1}), llama_feeds(Sq, Skv, std::move(empty_row), 33), 1);
}

}  // namespace
}  // namespace spindle
