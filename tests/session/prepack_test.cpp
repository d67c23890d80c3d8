// prepack_test.cpp — the session.disable_prepacking config key: "1" keeps
// constant weights as given (Conv, MatMul, Gemm), outputs are bitwise the
// same either way, and a value other than 0 / 1 is an error naming the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

// x [1, 8, 10, 10] -> Conv (W 12x8x3x3, pads 1, bias) -> MatMul (B 10x20):
// a pre-packed A side (Conv) and a pre-packed B side (MatMul).
std::vector<uint8_t> conv_matmul_model() {
  ModelBuilder b;
  b.input("x", {1, 8, 10, 10}).output("y", {1, 12, 10, 20});
  std::vector<float> w(12 * 8 * 9), m(10 * 20), bias(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 37 % 23) - 11) * 0.03f;
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(static_cast<int>(i * 11 % 17) - 8) * 0.05f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i);
  b.initializer("w", {12, 8, 3, 3}, w);
  b.initializer("bias", {12}, bias);
  b.initializer("m", {10, 20}, m);
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w", "bias"}, {"c"}), "pads", {1, 1, 1, 1});
  b.node("MatMul", {"c", "m"}, {"y"});
  return b.bytes();
}

Tensor run_with(const std::string& disable) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  if (!disable.empty()) o.add_config_entry("session.disable_prepacking", disable);
  auto s = InferenceSession::create_from_bytes(conv_matmul_model(), o);
  std::vector<float> x(800);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.07f;
  return s->run({{"x", Tensor::from_vector<float>({1, 8, 10, 10}, x)}})[0];
}

TEST(SessionPrepacking, DisablingGivesBitwiseTheSameOutputs) {
  const Tensor packed = run_with(""), off = run_with("1"), on = run_with("0");
  ASSERT_EQ(packed.shape(), (Shape{1, 12, 10, 20}));
  EXPECT_EQ(0, std::memcmp(packed.raw_data(), off.raw_data(), packed.nbytes()));
  EXPECT_EQ(0, std::memcmp(packed.raw_data(), on.raw_data(), packed.nbytes()));
}

TEST(SessionPrepacking, BadValueNamesTheKey) {
  try {
    run_with("yes");
    FAIL() << "no error for session.disable_prepacking=yes";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("session.disable_prepacking"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("yes"));
  }
}

}  // namespace
}  // namespace spindle
