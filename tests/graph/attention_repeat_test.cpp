// attention_repeat_test.cpp — grouped-query attention as exporters write it
// (the K / V heads repeated by Unsqueeze -> Expand -> Reshape before the
// scaled dot-product attention): the optimizer's FusedAttention reads the
// shared heads in place and keeps the unfused graph's results.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "../session/model_builder.h"
#include "graph/attention_test_util.h"

namespace spindle {
namespace {

using testing::ModelBuilder;
using testing::expect_fused_bits;
using testing::random_values;
using testing::run_model;

constexpr int64_t B = 2, H = 6, Hkv = 2, D = 12;  // D: one 8-lane step and a tail

// Inputs q [B, H, Sq, D], k / v [B, Hkv, Skv, D], the V chain's Expand and
// Reshape shapes ve / vr (so they are known only at run time); K's are
// constants. The scores are divided by sqrt(D), a causal mask is added, y
// is [B, Sq, H, D]. `k_axis` is K's Unsqueeze axis (2 as exported); with
// `second_reader` the expanded K is also a graph output.
std::vector<uint8_t> gqa_model(int64_t Sq, int64_t Skv, int64_t k_axis = 2, bool second_reader = false) {
  ModelBuilder b(14);
  b.input("q", {B, H, Sq, D}).input("k", {B, Hkv, -1, D}).input("v", {-1, Hkv, -1, D});
  b.input("ve", {5}, onnx::TensorProto::INT64).input("vr", {4}, onnx::TensorProto::INT64);
  b.output("y", {B, Sq, H, D});
  if (second_reader) b.output("ke", {B, Hkv, H / Hkv, Skv, D});
  const int64_t n = H / Hkv;
  b.initializer_i64("kax", {1}, {k_axis});
  b.initializer_i64("vax", {1}, {2});
  b.initializer_i64("ke_shape", {5}, k_axis == 2 ? std::vector<int64_t>{B, Hkv, n, Skv, D} : std::vector<int64_t>{B, n, Hkv, Skv, D});
  b.initializer_i64("kr_shape", {4}, {B, H, -1, D});
  b.initializer("scale", {}, {2.828427f});
  std::vector<float> mask(static_cast<size_t>(Sq * Skv));
  for (int64_t i = 0; i < Sq; ++i)
    for (int64_t j = 0; j < Skv; ++j) mask[static_cast<size_t>(i * Skv + j)] = j > Skv - Sq + i ? -1e9f : 0.0f;
  b.initializer("mask", {1, 1, Sq, Skv}, mask);
  b.node("Unsqueeze", {"k", "kax"}, {"ku"});
  b.node("Expand", {"ku", "ke_shape"}, {"ke"});
  b.node("Reshape", {"ke", "kr_shape"}, {"kr"});
  ModelBuilder::attr_ints(b.node("Transpose", {"kr"}, {"kt"}), "perm", {0, 1, 3, 2});
  b.node("Unsqueeze", {"v", "vax"}, {"vu"});
  b.node("Expand", {"vu", "ve"}, {"vx"});
  b.node("Reshape", {"vx", "vr"}, {"vrep"});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Div", {"s", "scale"}, {"sd"});
  b.node("Add", {"sd", "mask"}, {"sm"});
  ModelBuilder::attr_int(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "vrep"}, {"o"});
  ModelBuilder::attr_ints(b.node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  return b.bytes();
}

Feeds gqa_feeds(int64_t Sq, int64_t Skv, std::vector<int64_t> ve, std::vector<int64_t> vr, uint32_t seed) {
  return {{"q", Tensor::from_vector<float>({B, H, Sq, D}, random_values(static_cast<size_t>(B * H * Sq * D), seed))},
          {"k", Tensor::from_vector<float>({B, Hkv, Skv, D}, random_values(static_cast<size_t>(B * Hkv * Skv * D), seed + 1))},
          {"v", Tensor::from_vector<float>({B, Hkv, Skv, D}, random_values(static_cast<size_t>(B * Hkv * Skv * D), seed + 2))},
          {"ve", Tensor::from_vector<int64_t>({5}, std::move(ve))},
          {"vr", Tensor::from_vector<int64_t>({4}, std::move(vr))}};
}

// The exported pattern on K (constant shapes) and V (shapes given at run
// time): everything is one node; prefill-like (several query rows) and
// decode (one query row over a long past).
TEST(AttentionRepeat, RepeatedKvHeadsAreReadInPlaceBitwise) {
  const int64_t n = H / Hkv;
  for (auto [Sq, Skv] : {std::pair<int64_t, int64_t>{9, 9}, {1, 67}, {3, 40}}) {
    SCOPED_TRACE(::testing::Message() << "Sq " << Sq << ", Skv " << Skv);
    expect_fused_bits(gqa_model(Sq, Skv), gqa_feeds(Sq, Skv, {B, Hkv, n, Skv, D}, {B, H, Skv, D}, 71), 1);
    // Expand's ones and Reshape's 0 / -1 as exporters also write them.
    expect_fused_bits(gqa_model(Sq, Skv), gqa_feeds(Sq, Skv, {1, 1, n, 1, 1}, {0, -1, Skv, D}, 72), 1);
  }
}

// Shapes known only at run time that are not a repeat of the heads (the
// Expand broadcasting another axis too, the Reshape not merging the two
// axes): the fused node runs the absorbed nodes and gives their results.
TEST(AttentionRepeat, RunTimeShapesThatAreNoHeadRepeatRunTheNodes) {
  const int64_t Sq = 4, Skv = 4, n = H / Hkv;
  // V [1, Hkv, Skv, D]: the Expand broadcasts the batch axis (1 -> B) too.
  Feeds f = gqa_feeds(Sq, Skv, {B, Hkv, n, Skv, D}, {B, H, Skv, D}, 73);
  f[2].second = Tensor::from_vector<float>({1, Hkv, Skv, D}, random_values(static_cast<size_t>(Hkv * Skv * D), 74));
  expect_fused_bits(gqa_model(Sq, Skv), f, 1);
}

// A hostile Expand shape (a repeat count no tensor can hold) fails with an
// error naming the fused node, and the session keeps working.
TEST(AttentionRepeat, HugeRepeatCountFailsCleanly) {
  const int64_t Sq = 2, Skv = 4, n = H / Hkv;
  auto session = InferenceSession::create_from_bytes(gqa_model(Sq, Skv), {});
  try {
    session->run(gqa_feeds(Sq, Skv, {B, Hkv, int64_t{1} << 61, Skv, D}, {B, H, Skv, D}, 77));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("FusedAttention"));
  }
  const Feeds ok = gqa_feeds(Sq, Skv, {B, Hkv, n, Skv, D}, {B, H, Skv, D}, 78);
  EXPECT_TRUE(testing::tensors_close(session->run(ok)[0], run_model(gqa_model(Sq, Skv), ok, 1, false)[0], 1e-5, 1e-5));
}

// K repeated along axis 1 (the heads' copies outside the KV heads): the
// node's run-time check refuses the in-place read, the results are the
// unfused graph's. A second reader of the expanded K keeps K's chain.
TEST(AttentionRepeat, WrongAxisAndSecondReaderKeepTheUnfusedResults) {
  const int64_t Sq = 5, Skv = 7, n = H / Hkv;
  const Feeds f = gqa_feeds(Sq, Skv, {B, Hkv, n, Skv, D}, {B, H, Skv, D}, 76);
  expect_fused_bits(gqa_model(Sq, Skv, 1), f, 1);
  // K's Unsqueeze, Expand and Reshape stay (ke is read twice).
  expect_fused_bits(gqa_model(Sq, Skv, 2, true), f, 1 + 3);
}

}  // namespace
}  // namespace spindle
