// generate_test.cpp — spindle generate on a small decoder built here in the
// layout ONNX Runtime GenAI's model builder writes (SimplifiedLayerNormalization,
// com.microsoft RotaryEmbedding on queries and keys, GroupQueryAttention with
// past_key_values.0.* / present.0.*, seqlens_k and total_sequence_length
// computed from attention_mask, SkipSimplifiedLayerNormalization): the ids it
// generates at one and two threads equal a reference that runs the model
// through the library without a cache, the whole sequence again at every
// step. Bad prompts and models that are not decoders give clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

constexpr int64_t kVocab = 40, kHidden = 16, kHeads = 4, kKvHeads = 2, kHead = 4, kMaxPos = 64;

std::vector<float> weights(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::filesystem::path write_decoder() {
  using testing::ModelBuilder;
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("input_ids", {1, -1}, onnx::TensorProto::INT64)
      .input("position_ids", {1, -1}, onnx::TensorProto::INT64)
      .input("attention_mask", {1, -1}, onnx::TensorProto::INT64)
      .input("past_key_values.0.key", {1, kKvHeads, -1, kHead})
      .input("past_key_values.0.value", {1, kKvHeads, -1, kHead});
  b.output("logits", {1, -1, kVocab}).output("present.0.key", {1, kKvHeads, -1, kHead})
      .output("present.0.value", {1, kKvHeads, -1, kHead});
  std::vector<float> cs, sn;
  for (int64_t p = 0; p < kMaxPos; ++p)
    for (int64_t i = 0; i < kHead / 2; ++i) {
      const double angle = static_cast<double>(p) / std::pow(100.0, static_cast<double>(i) / (kHead / 2));
      cs.push_back(static_cast<float>(std::cos(angle)));
      sn.push_back(static_cast<float>(std::sin(angle)));
    }
  b.initializer("embed", {kVocab, kHidden}, weights(kVocab * kHidden, 1, 1.0f))
      .initializer("g1", {kHidden}, weights(kHidden, 2, 1.0f))
      .initializer("g2", {kHidden}, weights(kHidden, 3, 1.0f))
      .initializer("wq", {kHidden, kHeads * kHead}, weights(kHidden * kHeads * kHead, 4, 0.5f))
      .initializer("wk", {kHidden, kKvHeads * kHead}, weights(kHidden * kKvHeads * kHead, 5, 0.5f))
      .initializer("wv", {kHidden, kKvHeads * kHead}, weights(kHidden * kKvHeads * kHead, 6, 0.5f))
      .initializer("wo", {kHeads * kHead, kHidden}, weights(kHeads * kHead * kHidden, 7, 0.5f))
      .initializer("lm_head", {kHidden, kVocab}, weights(kHidden * kVocab, 8, 1.0f))
      .initializer("cos", {kMaxPos, kHead / 2}, cs)
      .initializer("sin", {kMaxPos, kHead / 2}, sn)
      .initializer_i64("axis1", {1}, {1})
      .initializer_i64("one", {}, {1})
      .initializer_i64("index1", {}, {1});
  b.node("Gather", {"embed", "input_ids"}, {"emb"});
  ModelBuilder::attr_float(b.node("SimplifiedLayerNormalization", {"emb", "g1"}, {"n1"}), "epsilon", 1e-6f);
  b.node("MatMul", {"n1", "wq"}, {"q"});
  b.node("MatMul", {"n1", "wk"}, {"k"});
  b.node("MatMul", {"n1", "wv"}, {"v"});
  auto& rq = b.node("RotaryEmbedding", {"q", "position_ids", "cos", "sin"}, {"q_rot"});
  rq.set_domain("com.microsoft");
  ModelBuilder::attr_int(rq, "num_heads", kHeads);
  auto& rk = b.node("RotaryEmbedding", {"k", "position_ids", "cos", "sin"}, {"k_rot"});
  rk.set_domain("com.microsoft");
  ModelBuilder::attr_int(rk, "num_heads", kKvHeads);
  ModelBuilder::attr_int(b.node("ReduceSum", {"attention_mask", "axis1"}, {"mask_sum"}), "keepdims", 0);
  b.node("Sub", {"mask_sum", "one"}, {"seqlens64"});
  ModelBuilder::attr_int(b.node("Cast", {"seqlens64"}, {"seqlens_k"}), "to", onnx::TensorProto::INT32);
  b.node("Shape", {"attention_mask"}, {"mask_shape"});
  b.node("Gather", {"mask_shape", "index1"}, {"total64"});
  ModelBuilder::attr_int(b.node("Cast", {"total64"}, {"total"}), "to", onnx::TensorProto::INT32);
  auto& gqa = b.node("GroupQueryAttention",
                     {"q_rot", "k_rot", "v", "past_key_values.0.key", "past_key_values.0.value", "seqlens_k", "total"},
                     {"attn", "present.0.key", "present.0.value"});
  gqa.set_domain("com.microsoft");
  ModelBuilder::attr_int(gqa, "num_heads", kHeads);
  ModelBuilder::attr_int(gqa, "kv_num_heads", kKvHeads);
  b.node("MatMul", {"attn", "wo"}, {"o"});
  auto& skip = b.node("SkipSimplifiedLayerNormalization", {"o", "emb", "g2"}, {"n2"});
  skip.set_domain("com.microsoft");
  b.node("MatMul", {"n2", "lm_head"}, {"logits"});
  const std::filesystem::path path = temp_dir() / "tiny_decoder.onnx";
  const auto bytes = b.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Greedy ids without a cache: the whole sequence through the model at every step.
std::vector<int64_t> reference_ids(const std::filesystem::path& model, std::vector<int64_t> ids, int new_tokens) {
  auto session = InferenceSession::create(model.string());
  std::vector<int64_t> out;
  for (int step = 0; step < new_tokens; ++step) {
    const int64_t n = static_cast<int64_t>(ids.size());
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = i;
    Feeds feeds = {{"input_ids", Tensor::from_vector<int64_t>({1, n}, ids)},
                   {"position_ids", Tensor::from_vector<int64_t>({1, n}, pos)},
                   {"attention_mask", Tensor::from_vector<int64_t>({1, n}, std::vector<int64_t>(static_cast<size_t>(n), 1))},
                   {"past_key_values.0.key", Tensor(DataType::kFloat32, {1, kKvHeads, 0, kHead})},
                   {"past_key_values.0.value", Tensor(DataType::kFloat32, {1, kKvHeads, 0, kHead})}};
    const Tensor logits = session->run(feeds, {"logits"})[0];
    const float* row = logits.data<float>() + (n - 1) * kVocab;
    const int64_t next = std::max_element(row, row + kVocab) - row;
    out.push_back(next);
    ids.push_back(next);
  }
  return out;
}

TEST(Generate, GreedyIdsWithTheCacheEqualRecomputingTheSequence) {
  const auto model = write_decoder();
  const std::vector<int64_t> want = reference_ids(model, {3, 17, 5, 29}, 12);
  // Not one token over and over: the cache really changes what comes next.
  EXPECT_GT(std::set<int64_t>(want.begin(), want.end()).size(), 2u);
  for (int intra : {1, 2}) {
    std::string out;
    ASSERT_EQ(run_cli(fmt::format("generate {} --prompt-ids 3,17,5,29 --max-new-tokens 12 --intra {} --json",
                                  model.string(), intra),
                      &out),
              0)
        << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["generated_ids"].get<std::vector<int64_t>>(), want) << "at intra " << intra;
    EXPECT_EQ(j["intra_threads"], intra);
    EXPECT_EQ(j["decode_steps"], 11);
    EXPECT_GT(j["decode_p50_ms"].get<double>(), 0.0);
    EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(j["prefill_ms"].get<double>(), 0.0);
  }
  std::string text;
  ASSERT_EQ(run_cli(fmt::format("generate {} --prompt-ids 3,17,5,29 --max-new-tokens 3", model.string()), &text), 0);
  EXPECT_NE(text.find(fmt::format("generated  {},{},{}", want[0], want[1], want[2])), std::string::npos) << text;
  EXPECT_NE(text.find("ms per token"), std::string::npos) << text;
  EXPECT_NE(text.find("tokens/s"), std::string::npos) << text;
}

TEST(Generate, BadPromptsAndNonDecodersGiveClearErrors) {
  const auto model = write_decoder();
  std::string out;
  EXPECT_EQ(run_cli(fmt::format("generate {} --prompt-ids 3,x,5", model.string()), &out), 1);
  EXPECT_NE(out.find("--prompt-ids '3,x,5': 'x' is not a token id"), std::string::npos) << out;
  EXPECT_EQ(run_cli(fmt::format("generate {} --prompt-ids 3 --max-new-tokens 0", model.string()), &out), 1);
  EXPECT_NE(out.find("--max-new-tokens 0: expected at least 1"), std::string::npos) << out;
  EXPECT_EQ(run_cli(fmt::format("generate {} --prompt-ids 3,99", model.string()), &out), 1);  // id past the vocabulary
  EXPECT_NE(out.find("spindle: error:"), std::string::npos) << out;

  testing::ModelBuilder b(17);
  b.input("x", {1, 4}).output("y", {1, 4});
  b.node("Relu", {"x"}, {"y"});
  const auto path = temp_dir() / "not_a_decoder.onnx";
  const auto bytes = b.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(run_cli(fmt::format("generate {} --prompt-ids 1,2", path.string()), &out), 1);
  EXPECT_NE(out.find("model input x is none of input_ids"), std::string::npos) << out;
}

}  // namespace
}  // namespace spindle
