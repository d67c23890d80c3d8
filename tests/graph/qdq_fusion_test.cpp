// qdq_fusion_test.cpp — the QDQFusion pass: per pattern, a small QDQ model
// built here; the fused operators are checked in the optimizer's summary
// and the outputs against the same model with the pass disabled
// (optimization.disable_specified_optimizers): integer arithmetic is exact,
// and where a float value lies on a rounding tie before a quantization the
// fused path may be one quantization step away, on few elements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "../session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

std::vector<float> random_values(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// An initializer of any type from raw bytes.
template <class T>
void typed_initializer(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<T>& values, int elem) {
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

// Scale and uint8 zero point `prefix`_s / `prefix`_z.
void act_params(ModelBuilder& b, const std::string& prefix, float scale, uint8_t zp) {
  b.initializer(prefix + "_s", {}, {scale});
  typed_initializer<uint8_t>(b, prefix + "_z", {}, {zp}, onnx::TensorProto::UINT8);
}

// value -> Q -> DQ with parameters `p`; returns the DQ's output name.
std::string qdq(ModelBuilder& b, const std::string& value, const std::string& p) {
  b.node("QuantizeLinear", {value, p + "_s", p + "_z"}, {value + "_q"});
  b.node("DequantizeLinear", {value + "_q", p + "_s", p + "_z"}, {value + "_dq"});
  return value + "_dq";
}

// Per-channel int8 weights W (axis `axis`) and an int32 bias with scale
// x_scale * w_scale, behind DequantizeLinear nodes.
void weights(ModelBuilder& b, const std::vector<int64_t>& dims, int64_t axis, float x_scale, uint32_t seed) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  const int64_t channels = dims[static_cast<size_t>(axis)];
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> wd(-127, 127), bd(-3000, 3000);
  std::vector<int8_t> w(static_cast<size_t>(total));
  for (auto& v : w) v = static_cast<int8_t>(wd(rng));
  std::vector<float> ws(static_cast<size_t>(channels)), bs(static_cast<size_t>(channels));
  std::vector<int32_t> bias(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    ws[static_cast<size_t>(c)] = 0.002f + 0.0005f * static_cast<float>(c);
    bs[static_cast<size_t>(c)] = x_scale * ws[static_cast<size_t>(c)];
    bias[static_cast<size_t>(c)] = bd(rng);
  }
  typed_initializer<int8_t>(b, "Wq", dims, w, onnx::TensorProto::INT8);
  b.initializer("W_s", {channels}, ws);
  typed_initializer<int8_t>(b, "W_z", {channels}, std::vector<int8_t>(static_cast<size_t>(channels), 0),
                            onnx::TensorProto::INT8);
  auto& dw = b.node("DequantizeLinear", {"Wq", "W_s", "W_z"}, {"W"});
  ModelBuilder::attr_int(dw, "axis", axis);
  typed_initializer<int32_t>(b, "Bq", {channels}, bias, onnx::TensorProto::INT32);
  b.initializer("B_s", {channels}, bs);
  auto& db = b.node("DequantizeLinear", {"Bq", "B_s"}, {"B"});
  ModelBuilder::attr_int(db, "axis", 0);
}

struct Runs {
  std::string summary;
  int nodes = 0;
  std::vector<float> fused, unfused;
};

Runs run_both(const std::vector<uint8_t>& bytes, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  Runs r;
  SessionOptions off;
  off.add_config_entry("optimization.disable_specified_optimizers", "QDQFusion");
  auto plain = InferenceSession::create_from_bytes(bytes, off);
  auto fused = InferenceSession::create_from_bytes(bytes, {});
  r.summary = fused->optimization_summary();
  r.nodes = fused->num_nodes();
  r.fused = fused->run(feeds)[0].to_vector<float>();
  r.unfused = plain->run(feeds)[0].to_vector<float>();
  // Any thread count gives the same bits.
  for (int threads : {1, 3}) {
    SessionOptions o;
    o.intra_op_num_threads = threads;
    EXPECT_EQ(InferenceSession::create_from_bytes(bytes, o)->run(feeds)[0].to_vector<float>(), r.fused);
  }
  return r;
}

// At most one quantization step apart, and on at most `max_share` of the elements.
void expect_within_one_step(const Runs& r, float step, double max_share = 0.02) {
  ASSERT_EQ(r.fused.size(), r.unfused.size());
  size_t differ = 0;
  for (size_t i = 0; i < r.fused.size(); ++i) {
    const float d = std::fabs(r.fused[i] - r.unfused[i]);
    EXPECT_LE(d, step * 1.0001f) << "element " << i;
    if (d != 0) ++differ;
  }
  EXPECT_LE(static_cast<double>(differ), max_share * static_cast<double>(r.fused.size()) + 1) << differ << " differ";
  // The outputs are not trivially constant.
  EXPECT_NE(*std::min_element(r.fused.begin(), r.fused.end()), *std::max_element(r.fused.begin(), r.fused.end()));
}

Tensor random_input(const Shape& shape, uint32_t seed, float lo, float hi) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector<float>(shape, random_values(static_cast<size_t>(n), seed, lo, hi));
}

TEST(QDQFusion, ConvBiasReluBecomesQLinearConv) {
  ModelBuilder b(13);
  b.input("x", {1, 8, 10, 10}).output("y", {1, 16, 10, 10});
  act_params(b, "px", 0.02f, 128);
  act_params(b, "py", 0.03f, 0);
  weights(b, {16, 8, 3, 3}, 0, 0.02f, 1);
  const std::string xd = qdq(b, "x", "px");
  auto& conv = b.node("Conv", {xd, "W", "B"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("QuantizeLinear", {"r", "py_s", "py_z"}, {"rq"});
  b.node("DequantizeLinear", {"rq", "py_s", "py_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"x", random_input({1, 8, 10, 10}, 2, -2.5f, 2.5f)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("1 QLinearConv"));
  EXPECT_EQ(r.nodes, 3) << r.summary;  // Q(x), QLinearConv, DQ(y)
  expect_within_one_step(r, 0.03f);
  // The Relu is applied: nothing below 0.
  for (float v : r.fused) EXPECT_GE(v, 0.0f);
}

TEST(QDQFusion, ConvOutputReadElsewhereIsNotFused) {
  ModelBuilder b(13);
  b.input("x", {1, 4, 6, 6}).output("y", {1, 8, 6, 6}).output("c", {1, 8, 6, 6});
  act_params(b, "px", 0.02f, 128);
  act_params(b, "py", 0.03f, 100);
  weights(b, {8, 4, 1, 1}, 0, 0.02f, 3);
  const std::string xd = qdq(b, "x", "px");
  b.node("Conv", {xd, "W", "B"}, {"c"});
  b.node("QuantizeLinear", {"c", "py_s", "py_z"}, {"cq"});
  b.node("DequantizeLinear", {"cq", "py_s", "py_z"}, {"y"});
  SessionOptions o;
  auto s = InferenceSession::create_from_bytes(b.bytes(), o);
  EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("0 QLinearConv"));
  // The weights were folded to float once the pass had left them.
  EXPECT_EQ(s->num_nodes(), 5) << s->optimization_summary();
}

TEST(QDQFusion, AddReluBecomesQLinearAdd) {
  ModelBuilder b(13);
  b.input("a", {2, 3, 5, 7}).input("c", {2, 3, 5, 7}).output("y", {2, 3, 5, 7});
  act_params(b, "pa", 0.02f, 120);
  act_params(b, "pc", 0.015f, 140);
  act_params(b, "py", 0.025f, 90);
  const std::string ad = qdq(b, "a", "pa"), cd = qdq(b, "c", "pc");
  b.node("Add", {ad, cd}, {"s"});
  b.node("Relu", {"s"}, {"r"});
  b.node("QuantizeLinear", {"r", "py_s", "py_z"}, {"rq"});
  b.node("DequantizeLinear", {"rq", "py_s", "py_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"a", random_input({2, 3, 5, 7}, 4, -2, 2)}, {"c", random_input({2, 3, 5, 7}, 5, -2, 2)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("1 QLinearAdd"));
  EXPECT_EQ(r.nodes, 4) << r.summary;
  // QLinearAdd computes the unfused float operations: the same bits.
  EXPECT_EQ(r.fused, r.unfused);
  for (float v : r.fused) EXPECT_GE(v, 0.0f);
}

TEST(QDQFusion, GlobalAveragePoolBecomesQLinearGlobalAveragePool) {
  ModelBuilder b(13);
  b.input("x", {2, 6, 7, 7}).output("y", {2, 6, 1, 1});
  act_params(b, "px", 0.05f, 128);
  act_params(b, "py", 0.004f, 128);
  const std::string xd = qdq(b, "x", "px");
  b.node("GlobalAveragePool", {xd}, {"g"});
  b.node("QuantizeLinear", {"g", "py_s", "py_z"}, {"gq"});
  b.node("DequantizeLinear", {"gq", "py_s", "py_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"x", random_input({2, 6, 7, 7}, 6, -3, 3)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("1 QLinearGlobalAveragePool"));
  expect_within_one_step(r, 0.004f, 0.2);
}

TEST(QDQFusion, MaxPoolAndFlattenRunOnQuantizedTensors) {
  ModelBuilder b(13);
  b.input("x", {1, 4, 8, 8}).output("y", {1, 64});
  act_params(b, "px", 0.02f, 128);
  const std::string xd = qdq(b, "x", "px");
  auto& mp = b.node("MaxPool", {xd}, {"m"});
  ModelBuilder::attr_ints(mp, "kernel_shape", {3, 3});
  ModelBuilder::attr_ints(mp, "strides", {2, 2});
  ModelBuilder::attr_ints(mp, "pads", {1, 1, 1, 1});
  const std::string md = qdq(b, "m", "px");
  b.node("Flatten", {md}, {"f"});
  b.node("QuantizeLinear", {"f", "px_s", "px_z"}, {"fq"});
  b.node("DequantizeLinear", {"fq", "px_s", "px_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"x", random_input({1, 4, 8, 8}, 7, -2, 2)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("2 on quantized tensors"));
  EXPECT_EQ(r.nodes, 4) << r.summary;  // Q, MaxPool, Flatten, DQ
  EXPECT_EQ(r.fused, r.unfused);        // moving and selecting values is exact
}

TEST(QDQFusion, GemmWithBiasBecomesQGemm) {
  ModelBuilder b(13);
  b.input("x", {3, 32}).output("y", {3, 10});
  act_params(b, "px", 0.02f, 128);
  act_params(b, "py", 0.05f, 110);
  weights(b, {10, 32}, 0, 0.02f, 8);
  const std::string xd = qdq(b, "x", "px");
  auto& gemm = b.node("Gemm", {xd, "W", "B"}, {"g"});
  ModelBuilder::attr_int(gemm, "transB", 1);
  b.node("QuantizeLinear", {"g", "py_s", "py_z"}, {"gq"});
  b.node("DequantizeLinear", {"gq", "py_s", "py_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"x", random_input({3, 32}, 9, -2.5f, 2.5f)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("1 QGemm"));
  EXPECT_EQ(r.nodes, 3) << r.summary;
  expect_within_one_step(r, 0.05f, 0.1);
}

}  // namespace
}  // namespace spindle
