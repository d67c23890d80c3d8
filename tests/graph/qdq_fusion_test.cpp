// qdq_fusion_test.cpp — the QDQFusion pass: per pattern, a small QDQ model
// built here; the fused operators are checked in the optimizer's summary
// and the outputs against the same model with the pass disabled
// (optimization.disable_specified_optimizers): integer arithmetic is exact,
// and where a float value lies on a rounding tie before a quantization the
// fused path may be one quantization step away, on few elements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
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

// value -> Q -> DQ with parameters `p` into `out` (a graph output).
void quantized_output(ModelBuilder& b, const std::string& value, const std::string& p, const std::string& out) {
  b.node("QuantizeLinear", {value, p + "_s", p + "_z"}, {value + "_q"});
  b.node("DequantizeLinear", {value + "_q", p + "_s", p + "_z"}, {out});
}

// Per-channel int8 weights W (axis `axis`) and an int32 bias with scale
// x_scale * w_scale, behind DequantizeLinear nodes; their names start with
// `p` (the float weights are pW, the bias pB).
void weights(ModelBuilder& b, const std::vector<int64_t>& dims, int64_t axis, float x_scale, uint32_t seed,
             const std::string& p = "") {
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
  typed_initializer<int8_t>(b, p + "Wq", dims, w, onnx::TensorProto::INT8);
  b.initializer(p + "W_s", {channels}, ws);
  typed_initializer<int8_t>(b, p + "W_z", {channels}, std::vector<int8_t>(static_cast<size_t>(channels), 0),
                            onnx::TensorProto::INT8);
  auto& dw = b.node("DequantizeLinear", {p + "Wq", p + "W_s", p + "W_z"}, {p + "W"});
  ModelBuilder::attr_int(dw, "axis", axis);
  typed_initializer<int32_t>(b, p + "Bq", {channels}, bias, onnx::TensorProto::INT32);
  b.initializer(p + "B_s", {channels}, bs);
  auto& db = b.node("DequantizeLinear", {p + "Bq", p + "B_s"}, {p + "B"});
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
  EXPECT_EQ(r.nodes, 5) << r.summary;  // Q(x), ToNhwc, QLinearConvNhwc, FromNhwc, DQ(y)
  expect_within_one_step(r, 0.03f);
  // The Relu is applied: nothing below 0.
  for (float v : r.fused) EXPECT_GE(v, 0.0f);
}

// A float bias (no DequantizeLinear; exporters share bias constants, which
// quantizers then leave float) is quantized to int32 with scale x_scale *
// w_scale and fused, as ONNX Runtime does; the result stays within a step.
TEST(QDQFusion, ConvFloatBiasBecomesQLinearConv) {
  ModelBuilder b(13);
  b.input("x", {1, 8, 1, 1}).output("y", {1, 16, 1, 1});
  act_params(b, "px", 0.02f, 128);
  act_params(b, "py", 0.03f, 0);
  weights(b, {16, 8, 1, 1}, 0, 0.02f, 1);
  b.initializer("Bf", {16}, random_values(16, 5, -0.5f, 0.5f));
  const std::string xd = qdq(b, "x", "px");
  b.node("Conv", {xd, "W", "Bf"}, {"c"});
  b.node("Relu", {"c"}, {"r"});
  b.node("QuantizeLinear", {"r", "py_s", "py_z"}, {"rq"});
  b.node("DequantizeLinear", {"rq", "py_s", "py_z"}, {"y"});
  const Runs r = run_both(b.bytes(), {{"x", random_input({1, 8, 1, 1}, 2, -2.5f, 2.5f)}});
  EXPECT_THAT(r.summary, ::testing::HasSubstr("1 QLinearConv"));
  expect_within_one_step(r, 0.03f, 0.2);
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
  // QLinearAdd computes ONNX Runtime's QLinearAdd arithmetic: at most one
  // step from the unfused float operations, where a sum sits on a tie.
  expect_within_one_step(r, 0.025f);
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

// Concat of three quantized tensors with their own parameters -> QDQ: a
// com.microsoft.QLinearConcat, the same bits as DQ, Concat, Q (each input
// requantized by the same float operations); with every input quantized as
// the output (y and a again), a Concat of the 8-bit tensors. Its output is
// cut by a Slice (QDQ with the same parameters: moved onto the 8-bit
// tensor) whose end is read from Shape(DQ(...)) (then Shape of the 8-bit
// tensor, and that DequantizeLinear goes).
TEST(QDQFusion, ConcatBecomesQLinearConcatOrQuantizedConcat) {
  ModelBuilder b(13);
  b.input("a", {1, 2, 3, 4}).input("c", {1, 3, 3, 4}).input("d", {1, 1, 3, 4}).output("y", {1, 6, 3, 4});
  b.output("z", {1, 3, 3, 4});
  act_params(b, "pa", 0.02f, 120);
  act_params(b, "pc", 0.035f, 90);
  act_params(b, "pd", 0.011f, 200);
  act_params(b, "py", 0.03f, 128);
  b.initializer_i64("zero", {1}, {0}).initializer_i64("one", {1}, {1}).initializer_i64("two", {1}, {2});
  auto& cat = b.node("Concat", {qdq(b, "a", "pa"), qdq(b, "c", "pc"), qdq(b, "d", "pd")}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", -3);
  quantized_output(b, "cat", "py", "y");
  // The same parameters everywhere: a Concat of the 8-bit tensors, then a Slice.
  auto& cat2 = b.node("Concat", {qdq(b, "y", "pa"), "a_dq"}, {"cat2"});
  ModelBuilder::attr_int(cat2, "axis", 1);
  const std::string c2 = qdq(b, "cat2", "pa");
  b.node("Shape", {c2}, {"sh"});
  b.node("Gather", {"sh", "one"}, {"ch"});
  b.node("Div", {"ch", "two"}, {"half"});
  b.node("Sub", {"half", "one"}, {"end"});
  b.node("Slice", {c2, "zero", "end", "one"}, {"sl"});
  quantized_output(b, "sl", "pa", "z");
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"a", random_input({1, 2, 3, 4}, 8, -2, 2)},
                                                             {"c", random_input({1, 3, 3, 4}, 9, -3, 4)},
                                                             {"d", random_input({1, 1, 3, 4}, 10, -2, 0.5f)}};
  SessionOptions off;
  off.add_config_entry("optimization.disable_specified_optimizers", "QDQFusion");
  const std::vector<Tensor> want = InferenceSession::create_from_bytes(b.bytes(), off)->run(feeds);
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.intra_op_num_threads = threads;
    auto s = InferenceSession::create_from_bytes(b.bytes(), o);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("2 Concat, 2 on quantized tensors"));
    const std::vector<Tensor> got = s->run(feeds);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
      EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << " threads " << threads;
    }
  }
  const std::vector<float> y = want[0].to_vector<float>();
  EXPECT_NE(*std::min_element(y.begin(), y.end()), *std::max_element(y.begin(), y.end()));
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

// ---------------------------------------------------------------- NhwcTransformer

// The second convolution of the NHWC chain below.
struct Conv2 {
  int64_t m, group, k, stride, dilation;
  std::vector<int64_t> pads;  // begin h, w, end h, w
};

// The residual Add at the end of the chain below: the third convolution's
// groups (0: depthwise), whether its output is the Add's first operand, and
// the Relu after the Add.
struct AddTail {
  int64_t c3_group = 0;
  bool conv_first = true;
  bool relu = true;
};

// x [1, 5, 13, 11] -> Conv 3x3 + Relu (12 channels) -> MaxPool 3x3 / 2 ->
// Conv `c` -> depthwise Conv 3x3 -> Add of the two -> Relu: output y, and
// its GlobalAveragePool: output g; QDQ around each. The chain: every
// QLinearConv, the MaxPool and the QLinearAdd in NHWC, the Add folded into
// the third convolution.
std::vector<uint8_t> nhwc_chain_model(const Conv2& c, const AddTail& tail = {}) {
  const int64_t h1 = 7, w1 = 6;  // after the pool
  const int64_t ek = c.dilation * (c.k - 1) + 1;
  const int64_t h2 = (h1 + c.pads[0] + c.pads[2] - ek) / c.stride + 1, w2 = (w1 + c.pads[1] + c.pads[3] - ek) / c.stride + 1;
  ModelBuilder b(13);
  b.input("x", {1, 5, 13, 11}).output("y", {1, c.m, h2, w2}).output("g", {1, c.m, 1, 1});
  act_params(b, "p0", 0.02f, 131);
  act_params(b, "p1", 0.03f, 0);
  act_params(b, "p2", 0.04f, 119);
  act_params(b, "p3", 0.05f, 127);
  act_params(b, "p4", 0.06f, 0);
  act_params(b, "p5", 0.01f, 3);
  weights(b, {12, 5, 3, 3}, 0, 0.02f, 11, "c1");
  weights(b, {c.m, 12 / c.group, c.k, c.k}, 0, 0.03f, 12, "c2");
  const int64_t g3 = tail.c3_group ? tail.c3_group : c.m;
  weights(b, {c.m, c.m / g3, 3, 3}, 0, 0.04f, 13, "c3");
  auto& c1 = b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  ModelBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Relu", {"a"}, {"ar"});
  auto& mp = b.node("MaxPool", {qdq(b, "ar", "p1")}, {"m"});
  ModelBuilder::attr_ints(mp, "kernel_shape", {3, 3});
  ModelBuilder::attr_ints(mp, "strides", {2, 2});
  ModelBuilder::attr_ints(mp, "pads", {1, 1, 1, 1});
  auto& c2 = b.node("Conv", {qdq(b, "m", "p1"), "c2W", "c2B"}, {"b"});
  ModelBuilder::attr_ints(c2, "pads", c.pads);
  ModelBuilder::attr_ints(c2, "strides", {c.stride, c.stride});
  ModelBuilder::attr_ints(c2, "dilations", {c.dilation, c.dilation});
  ModelBuilder::attr_int(c2, "group", c.group);
  const std::string bd = qdq(b, "b", "p2");
  auto& c3 = b.node("Conv", {bd, "c3W", "c3B"}, {"d"});
  ModelBuilder::attr_ints(c3, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_int(c3, "group", g3);
  const std::string dd = qdq(b, "d", "p3");
  b.node("Add", {tail.conv_first ? dd : bd, tail.conv_first ? bd : dd}, {"s"});
  if (tail.relu) b.node("Relu", {"s"}, {"sr"});
  b.node("QuantizeLinear", {tail.relu ? "sr" : "s", "p4_s", "p4_z"}, {"sq"});
  b.node("DequantizeLinear", {"sq", "p4_s", "p4_z"}, {"y"});
  b.node("GlobalAveragePool", {"y"}, {"ga"});
  b.node("QuantizeLinear", {"ga", "p5_s", "p5_z"}, {"gq"});
  b.node("DequantizeLinear", {"gq", "p5_s", "p5_z"}, {"g"});
  return b.bytes();
}

// Every output of the model with NhwcTransformer, at 1 and 2 threads and
// without prepacked weights (the NHWC kernel's plain loops), bitwise equal
// to the outputs without it (the NCHW kernels).
void expect_nhwc_same_bits(const std::vector<uint8_t>& bytes, const std::string& summary_has) {
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({1, 5, 13, 11}, 21, -1.5f, 3.0f)}};
  SessionOptions nchw;
  nchw.add_config_entry("optimization.disable_specified_optimizers", "NhwcTransformer");
  const std::vector<Tensor> want = InferenceSession::create_from_bytes(bytes, nchw)->run(feeds);
  ASSERT_EQ(want.size(), 2u);
  const std::vector<float> y = want[0].to_vector<float>();
  EXPECT_NE(*std::min_element(y.begin(), y.end()), *std::max_element(y.begin(), y.end()));  // not constant
  for (int variant = 0; variant < 3; ++variant) {
    SessionOptions o;
    o.intra_op_num_threads = variant == 1 ? 2 : 1;
    if (variant == 2) o.add_config_entry("session.disable_prepacking", "1");
    auto s = InferenceSession::create_from_bytes(bytes, o);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr(summary_has)) << "variant " << variant;
    const std::vector<Tensor> got = s->run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << "output " << i << " variant " << variant;
      EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << " variant " << variant;
    }
  }
}

// Three QLinearConvs, the MaxPool and the QLinearAdd: one ToNhwc (x), one
// FromNhwc (y) and one after the channels-last QLinearGlobalAveragePool.
TEST(NhwcTransformer, ChainSameBitsAsNchw3x3) {
  expect_nhwc_same_bits(nhwc_chain_model({9, 1, 3, 1, 1, {1, 1, 1, 1}}), "NhwcTransformer 5 (2 conversions)");
}
// The residual Add folded into a convolution of one group (each block added
// as it is requantized; without prepacked weights, expect_nhwc_same_bits'
// third variant, the plain loops' output, then the Add): the convolution as
// the Add's first or second operand, with and without the Relu after the
// Add. A grouped or depthwise convolution (the chain tests above) keeps its
// Add.
TEST(NhwcTransformer, ResidualAddFoldedIntoTheConvolutionSameBits) {
  for (bool conv_first : {true, false})
    for (bool relu : {true, false}) {
      SCOPED_TRACE(::testing::Message() << (conv_first ? "conv first" : "conv second") << (relu ? ", Relu" : ""));
      expect_nhwc_same_bits(nhwc_chain_model({9, 1, 3, 1, 1, {1, 1, 1, 1}}, {1, conv_first, relu}),
                            "NhwcTransformer 5 (2 conversions, 1 residual adds)");
    }
  expect_nhwc_same_bits(nhwc_chain_model({9, 1, 3, 1, 1, {1, 1, 1, 1}}, {3, true, true}), "NhwcTransformer 5 (2 conversions)");
}
TEST(NhwcTransformer, ChainSameBitsStride2AsymmetricPads) {
  expect_nhwc_same_bits(nhwc_chain_model({7, 1, 3, 2, 1, {0, 1, 2, 0}}), "NhwcTransformer 5");
}
TEST(NhwcTransformer, ChainSameBitsDilation2) {
  expect_nhwc_same_bits(nhwc_chain_model({12, 1, 3, 1, 2, {2, 2, 2, 2}}), "NhwcTransformer 5");
}
TEST(NhwcTransformer, ChainSameBitsGrouped) {
  expect_nhwc_same_bits(nhwc_chain_model({9, 3, 3, 1, 1, {1, 0, 1, 2}}), "NhwcTransformer 5");
}
// A model in ONNX Runtime's QOperator format: x (4 channels) ->
// QuantizeLinear -> QLinearConv 3x3 and QLinearConv 1x1 (16 channels each)
// -> com.microsoft QLinearAdd of the two -> DequantizeLinear; `qdq_add`: the
// Add as DequantizeLinear, DequantizeLinear, Add, QuantizeLinear instead.
std::vector<uint8_t> qoperator_residual_model(bool qdq_add) {
  const int64_t c = 16;
  ModelBuilder b(13);
  b.opset("com.microsoft", 1);
  b.input("x", {1, 4, 12, 12}).output("y", {1, c, 12, 12});
  // The Add's output scale twice its operands': half the sums are ties
  // mathematically, on which the two arithmetics' roundings decide.
  act_params(b, "p0", 0.03f, 128);
  act_params(b, "p1", 0.03f, 119);
  act_params(b, "p2", 0.06f, 131);
  weights(b, {c, 4, 3, 3}, 0, 0.03f, 17, "a");
  weights(b, {c, 4, 1, 1}, 0, 0.03f, 18, "b");
  b.node("QuantizeLinear", {"x", "p0_s", "p0_z"}, {"xq"});
  auto& conv = b.node("QLinearConv", {"xq", "p0_s", "p0_z", "aWq", "aW_s", "aW_z", "p1_s", "p1_z", "aBq"}, {"cq"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("QLinearConv", {"xq", "p0_s", "p0_z", "bWq", "bW_s", "bW_z", "p0_s", "p0_z", "bBq"}, {"rq"});
  if (qdq_add) {
    b.node("DequantizeLinear", {"cq", "p1_s", "p1_z"}, {"cf"});
    b.node("DequantizeLinear", {"rq", "p0_s", "p0_z"}, {"rf"});
    b.node("Add", {"cf", "rf"}, {"sf"});
    b.node("QuantizeLinear", {"sf", "p2_s", "p2_z"}, {"sq"});
  } else {
    b.node("QLinearAdd", {"cq", "p1_s", "p1_z", "rq", "p0_s", "p0_z", "p2_s", "p2_z"}, {"sq"}).set_domain("com.microsoft");
  }
  b.node("DequantizeLinear", {"sq", "p2_s", "p2_z"}, {"y"});
  return b.bytes();
}

// The QOperator model's QLinearAdd computes ONNX Runtime's arithmetic (the
// scales' ratios, fused multiply-adds); folded into the NHWC convolution it
// gives the same bits, at 1 and 2 threads, and so does the Add written as a
// QDQ unit (QDQFusion makes it that QLinearAdd). The unfused float ops round
// some of the ties the other way: one step apart there.
TEST(NhwcTransformer, QOperatorResidualAddFoldedKeepsItsArithmetic) {
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({1, 4, 12, 12}, 5, -2.0f, 2.5f)}};
  const std::vector<uint8_t> qop = qoperator_residual_model(false), qdq = qoperator_residual_model(true);
  SessionOptions plain;
  plain.add_config_entry("optimization.disable_specified_optimizers", "NhwcTransformer");
  const std::vector<float> want = InferenceSession::create_from_bytes(qop, plain)->run(feeds)[0].to_vector<float>();
  for (const auto* bytes : {&qop, &qdq})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << (bytes == &qop ? "QLinearAdd" : "QDQ Add") << ", " << threads << " threads");
      SessionOptions o;
      o.intra_op_num_threads = threads;
      auto s = InferenceSession::create_from_bytes(*bytes, o);
      EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("1 residual adds"));
      EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want);
    }
  SessionOptions unfused;
  unfused.add_config_entry("optimization.disable_specified_optimizers", "QDQFusion,NhwcTransformer");
  Runs r;
  r.fused = want;
  r.unfused = InferenceSession::create_from_bytes(qdq, unfused)->run(feeds)[0].to_vector<float>();
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += want[i] != r.unfused[i];
  EXPECT_GT(differ, 0u) << "the two arithmetics gave the same bits: the test does not tell them apart";
  expect_within_one_step(r, 0.06f, 0.5);
}

TEST(NhwcTransformer, ChainSameBitsPointwise) {
  expect_nhwc_same_bits(nhwc_chain_model({13, 1, 1, 1, 1, {0, 0, 0, 0}}), "NhwcTransformer 5");
}
TEST(NhwcTransformer, ChainSameBitsDepthwise5x5Stride2) {
  expect_nhwc_same_bits(nhwc_chain_model({12, 12, 5, 2, 1, {2, 2, 2, 2}}), "NhwcTransformer 5");
}

// A lone depthwise QLinearConv runs NHWC too, between two conversions.
TEST(NhwcTransformer, LoneDepthwiseSameBits) {
  ModelBuilder b(13);
  b.input("x", {1, 5, 13, 11}).output("y", {1, 5, 13, 11}).output("g", {1, 5, 13, 11});
  act_params(b, "px", 0.02f, 128);
  act_params(b, "py", 0.03f, 0);
  weights(b, {5, 1, 3, 3}, 0, 0.02f, 31);
  auto& conv = b.node("Conv", {qdq(b, "x", "px"), "W", "B"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_int(conv, "group", 5);
  b.node("QuantizeLinear", {"c", "py_s", "py_z"}, {"cq"});
  b.node("DequantizeLinear", {"cq", "py_s", "py_z"}, {"y"});
  b.node("HardSwish", {"y"}, {"g"});  // a float reader
  expect_nhwc_same_bits(b.bytes(), "NhwcTransformer 1 (2 conversions)");
}

// Input x [1, 5, 13, 11], outputs y [1, 6, 13, 11] and `second`,
// activation parameters p0 .. p`params - 1` (scales 0.02, 0.03, ...; zero
// points 120, 0, 120 ...), the weights of three convolutions c1W / c1B ...
void three_conv_model(ModelBuilder& b, const std::pair<std::string, std::vector<int64_t>>& second, int params,
                      const std::vector<std::vector<int64_t>>& convs) {
  b.input("x", {1, 5, 13, 11}).output("y", {1, 6, 13, 11}).output(second.first, second.second);
  for (int i = 0; i < params; ++i)
    act_params(b, "p" + std::to_string(i), 0.02f + 0.01f * static_cast<float>(i), i % 2 ? 0 : 120);
  for (size_t i = 0; i < convs.size(); ++i)
    weights(b, convs[i], 0, 0.02f + 0.02f * static_cast<float>(i), 41 + static_cast<uint32_t>(i), "c" + std::to_string(i + 1));
}

// A BatchNormalization over `c` channels of `in`: parameters `p`_scale ...
void batchnorm(ModelBuilder& b, const std::string& in, const std::string& out, int64_t c, uint32_t seed) {
  const std::string p = out + "_";
  b.initializer(p + "scale", {c}, random_values(static_cast<size_t>(c), seed, 0.5f, 1.5f));
  b.initializer(p + "B", {c}, random_values(static_cast<size_t>(c), seed + 1, -0.5f, 0.5f));
  b.initializer(p + "mean", {c}, random_values(static_cast<size_t>(c), seed + 2, -0.3f, 0.3f));
  b.initializer(p + "var", {c}, random_values(static_cast<size_t>(c), seed + 3, 0.5f, 2.0f));
  b.node("BatchNormalization", {in, p + "scale", p + "B", p + "mean", p + "var"}, {out});
}

// DenseNet's pre-activation layers: x [1, 5, 13, 11] -> Conv 1x1 (4
// channels); Concat(x, its DequantizeLinear) -> BatchNormalization -> Relu
// -> QDQ -> Conv 3x3 (3 channels); Concat(that, its output) (axis -3) ->
// BatchNormalization -> Relu -> QDQ -> Conv 1x1 (6 channels): output y,
// and the second Concat: output c. The float islands run NHWC too: x enters
// twice (uint8 for the first Conv, float for the Concat), y and c leave
// once each; no conversion around the islands.
TEST(NhwcTransformer, PreActivationIslandsSameBits) {
  ModelBuilder b(13);
  three_conv_model(b, {"c", {1, 12, 13, 11}}, 6, {{4, 5, 1, 1}, {3, 9, 3, 3}, {6, 12, 1, 1}});
  b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  auto& cat1 = b.node("Concat", {"x", qdq(b, "a", "p1")}, {"cat1"});
  ModelBuilder::attr_int(cat1, "axis", 1);
  batchnorm(b, "cat1", "n1", 9, 51);
  b.node("Relu", {"n1"}, {"r1"});
  auto& c2 = b.node("Conv", {qdq(b, "r1", "p2"), "c2W", "c2B"}, {"d"});
  ModelBuilder::attr_ints(c2, "pads", {1, 1, 1, 1});
  auto& cat2 = b.node("Concat", {"cat1", qdq(b, "d", "p3")}, {"c"});
  ModelBuilder::attr_int(cat2, "axis", -3);
  batchnorm(b, "c", "n2", 12, 61);
  b.node("Relu", {"n2"}, {"r2"});
  b.node("Conv", {qdq(b, "r2", "p4"), "c3W", "c3B"}, {"e"});
  quantized_output(b, "e", "p5", "y");
  expect_nhwc_same_bits(b.bytes(), "(4 conversions)");
}

// A pre-activation reading a DequantizeLinear straight (DenseNet quantized
// as ONNX Runtime's quantizer does it, its Concats quantized): x -> Conv 1x1
// (4 channels) -> QDQ -> BatchNormalization -> Relu: output c; -> QDQ ->
// Conv 3x3 (6 channels): output y. The BatchNormalizationNhwc reads the
// 8-bit tensor and dequantizes it itself (the DequantizeLinear goes), the
// same bits as the DequantizeLinear before it.
TEST(NhwcTransformer, PreActivationReadsTheQuantizedTensorSameBits) {
  ModelBuilder b(13);
  three_conv_model(b, {"c", {1, 4, 13, 11}}, 3, {{4, 5, 1, 1}, {6, 4, 3, 3}});
  b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  batchnorm(b, qdq(b, "a", "p1"), "n1", 4, 71);
  b.node("Relu", {"n1"}, {"r1"});
  b.node("Identity", {"r1"}, {"c"});
  auto& c2 = b.node("Conv", {qdq(b, "r1", "p2"), "c2W", "c2B"}, {"e"});
  ModelBuilder::attr_ints(c2, "pads", {1, 1, 1, 1});
  quantized_output(b, "e", "p1", "y");
  expect_nhwc_same_bits(b.bytes(), "(3 conversions)");
  // The optimized graph: the BatchNormalizationNhwc reads a_q, no DequantizeLinear does.
  const std::string path = ::testing::TempDir() + "qdq_fusion_preactivation_" + std::to_string(getpid()) + ".onnx";
  SessionOptions o;
  o.optimized_model_filepath = path;
  InferenceSession::create_from_bytes(b.bytes(), o);
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&in));
  std::remove(path.c_str());
  int bn_reads_q = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "DequantizeLinear") EXPECT_NE(n.input(0), "a_q");
    if (n.op_type() == "BatchNormalizationNhwc") bn_reads_q += n.input_size() == 9 && n.input(0).rfind("a_q", 0) == 0;
  }
  EXPECT_EQ(bn_reads_q, 1);
}

// ShuffleNet's split: x -> Conv 1x1 (c1, 8 channels) -> QDQ (p1) -> halves
// "lo" and "hi" along the channels by Slices whose bounds come from Shape ->
// Gather (the index also the Slices' axes) -> Div; the shuffle's shapes
// shape5 / shape4.
void channel_split(ModelBuilder& b) {
  b.initializer_i64("one", {1}, {1}).initializer_i64("two", {1}, {2}).initializer_i64("zero", {1}, {0});
  b.initializer_i64("shape5", {5}, {1, 2, 4, 13, 11}).initializer_i64("shape4", {4}, {1, -1, 13, 11});
  b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  const std::string ad = qdq(b, "a", "p1");
  b.node("Shape", {ad}, {"sh"});
  b.node("Gather", {"sh", "one"}, {"ch"});
  b.node("Div", {"ch", "two"}, {"half"});
  b.node("Slice", {ad, "zero", "half", "one"}, {"lo"});
  b.node("Slice", {ad, "half", "ch", "one"}, {"hi"});
}

// ShuffleNet's unit: x [1, 5, 13, 11] -> Conv 1x1 (8 channels) -> QDQ ->
// split in two halves along the channels by Slices whose bounds come from
// Shape -> Gather (the index also the Slices' axes) -> Div; the second half
// -> Conv 1x1 -> QDQ; Concat with the first half -> channel shuffle
// (Reshape [1, 2, 4, 13, 11], Transpose (0, 2, 1, 3, 4), Reshape
// [1, -1, 13, 11]): output s; -> Conv 1x1 (6 channels) -> QDQ: output y.
// All of it NHWC: one conversion in (x), one out for each output.
TEST(NhwcTransformer, ChannelSplitAndShuffleSameBits) {
  ModelBuilder b(13);
  three_conv_model(b, {"s", {1, 8, 13, 11}}, 5, {{8, 5, 1, 1}, {4, 4, 1, 1}, {6, 8, 1, 1}});
  channel_split(b);
  b.node("Conv", {qdq(b, "hi", "p2"), "c2W", "c2B"}, {"h2"});
  auto& cat = b.node("Concat", {"lo", qdq(b, "h2", "p3")}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", 1);
  b.node("Reshape", {"cat", "shape5"}, {"r5"});
  auto& tr = b.node("Transpose", {"r5"}, {"t5"});
  ModelBuilder::attr_ints(tr, "perm", {0, 2, 1, 3, 4});
  b.node("Reshape", {"t5", "shape4"}, {"s"});
  b.node("Conv", {qdq(b, "s", "p4"), "c3W", "c3B"}, {"e"});
  quantized_output(b, "e", "p1", "y");
  expect_nhwc_same_bits(b.bytes(), "(3 conversions)");
}

// The same unit quantized as ONNX Runtime's quantizer does it: QDQ after
// the Slices, the Concat (its own parameters: a QLinearConcat) and each step
// of the shuffle (their input's parameters: moved onto the 8-bit tensors).
// The whole unit runs on 8-bit NHWC tensors: one conversion in, one out for
// each output.
// The quantized unit's split, Conv 1x1 of the second half (its input
// keeps the Slice's, p1's, parameters), QLinearConcat and shuffle, each
// step on 8-bit tensors; returns the shuffled tensor's DequantizeLinear.
std::string quantized_shuffle_unit(ModelBuilder& b) {
  channel_split(b);
  weights(b, {4, 4, 1, 1}, 0, 0.03f, 77, "d2");
  b.node("Conv", {qdq(b, "hi", "p1"), "d2W", "d2B"}, {"h2"});
  auto& cat = b.node("Concat", {qdq(b, "lo", "p1"), qdq(b, "h2", "p3")}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", 1);
  b.node("Reshape", {qdq(b, "cat", "p5"), "shape5"}, {"r5"});
  auto& tr = b.node("Transpose", {qdq(b, "r5", "p5")}, {"t5"});
  ModelBuilder::attr_ints(tr, "perm", {0, 2, 1, 3, 4});
  b.node("Reshape", {qdq(b, "t5", "p5"), "shape4"}, {"r4"});
  return qdq(b, "r4", "p5");
}

TEST(NhwcTransformer, QuantizedSplitConcatAndShuffleSameBits) {
  ModelBuilder b(13);
  three_conv_model(b, {"s", {1, 8, 13, 11}}, 6, {{8, 5, 1, 1}, {4, 4, 1, 1}, {6, 8, 1, 1}});
  weights(b, {6, 8, 1, 1}, 0, 0.07f, 78, "d3");  // p5's
  const std::string sd = quantized_shuffle_unit(b);
  b.node("Identity", {sd}, {"s"});
  b.node("Conv", {sd, "d3W", "d3B"}, {"e"});
  quantized_output(b, "e", "p1", "y");
  expect_nhwc_same_bits(b.bytes(), "(3 conversions)");
  SessionOptions o;
  const std::string summary = InferenceSession::create_from_bytes(b.bytes(), o)->optimization_summary();
  EXPECT_THAT(summary, ::testing::HasSubstr("3 QLinearConv, "));
  EXPECT_THAT(summary, ::testing::HasSubstr("1 Concat, 6 on quantized tensors"));
}

// The quantized unit above and the next unit: Shape -> Gather -> Div
// bounds (minus one with `odd`) split the shuffled 8-bit tensor into lo2
// and hi2 -> Conv 1x1; their QLinearConcat is output s and, through a Conv
// 1x1, y. The shuffle and the Slices become one
// spindle.ChannelShuffleSplitNhwc (the Shape reads the unshuffled tensor):
// halves at whole channel pairs are written straight from the unshuffled
// tensor, odd bounds take the kernel's fallback (the shuffle, then Slice).
// Same bits either way.
void expect_shuffle_split_same_bits(bool odd) {
  SCOPED_TRACE(odd ? "odd bounds" : "halves");
  const int64_t lo = odd ? 3 : 4;
  ModelBuilder b(13);
  three_conv_model(b, {"s", {1, 8, 13, 11}}, 6, {{8, 5, 1, 1}, {4, 4, 1, 1}, {6, 8, 1, 1}});
  weights(b, {8 - lo, 8 - lo, 1, 1}, 0, 0.07f, 78, "d3");
  weights(b, {6, 8, 1, 1}, 0, 0.07f, 79, "d4");
  const std::string sd = quantized_shuffle_unit(b);
  b.node("Shape", {sd}, {"sh2"});
  b.node("Gather", {"sh2", "one"}, {"ch2"});
  b.node("Div", {"ch2", "two"}, {odd ? "half2e" : "half2"});
  if (odd) b.node("Sub", {"half2e", "one"}, {"half2"});
  b.node("Slice", {sd, "zero", "half2", "one"}, {"lo2"});
  b.node("Slice", {sd, "half2", "ch2", "one"}, {"hi2"});
  b.node("Conv", {qdq(b, "hi2", "p5"), "d3W", "d3B"}, {"e2"});
  auto& cat2 = b.node("Concat", {qdq(b, "lo2", "p5"), qdq(b, "e2", "p3")}, {"cat2"});
  ModelBuilder::attr_int(cat2, "axis", 1);
  const std::string c2 = qdq(b, "cat2", "p4");
  b.node("Identity", {c2}, {"s"});
  b.node("Conv", {c2, "d4W", "d4B"}, {"e"});
  quantized_output(b, "e", "p1", "y");
  expect_nhwc_same_bits(b.bytes(), "1 shuffle splits)");
}

TEST(NhwcTransformer, ShuffleThenSplitAsOneNodeSameBits) {
  expect_shuffle_split_same_bits(false);
  expect_shuffle_split_same_bits(true);
}

// ---------------------------------------------------------------- QLinearLookupFusion

// Scale and zero point `prefix`_s / `prefix`_z of type uint8 or int8.
void act_params_typed(ModelBuilder& b, const std::string& prefix, float scale, int zp, bool is_signed) {
  b.initializer(prefix + "_s", {}, {scale});
  if (is_signed) typed_initializer<int8_t>(b, prefix + "_z", {}, {static_cast<int8_t>(zp)}, onnx::TensorProto::INT8);
  else typed_initializer<uint8_t>(b, prefix + "_z", {}, {static_cast<uint8_t>(zp)}, onnx::TensorProto::UINT8);
}

// Output 0 of the model run with optimizer pass `pass` disabled (not
// constant); `nodes` takes the session's node count.
std::vector<float> output_without(const std::vector<uint8_t>& bytes,
                                  const std::vector<std::pair<std::string, Tensor>>& feeds, const char* pass,
                                  int* nodes = nullptr) {
  SessionOptions off;
  off.add_config_entry("optimization.disable_specified_optimizers", pass);
  auto plain = InferenceSession::create_from_bytes(bytes, off);
  if (nodes) *nodes = plain->num_nodes();
  const std::vector<float> y = plain->run(feeds)[0].to_vector<float>();
  EXPECT_NE(*std::min_element(y.begin(), y.end()), *std::max_element(y.begin(), y.end()));
  return y;
}

std::unique_ptr<InferenceSession> session_with_threads(const std::vector<uint8_t>& bytes, int threads) {
  SessionOptions o;
  o.intra_op_num_threads = threads;
  return InferenceSession::create_from_bytes(bytes, o);
}

struct LookupCase {
  std::string op;
  std::function<void(ModelBuilder&, onnx::NodeProto&)> setup;  // attributes, constant inputs
};

// x [2, 3, 7, 5] -> Q -> DQ -> op -> Q -> DQ -> y: the unit becomes one
// spindle.QLinearLookup whose output bits equal the unfused chain's, for
// every input code (the input's range covers past both ends).
void expect_lookup_same_bits(const LookupCase& c, bool is_signed, bool out_signed) {
  ModelBuilder b(20);
  b.input("x", {2, 3, 7, 5}).output("y", {2, 3, 7, 5});
  act_params_typed(b, "p0", 0.06f, is_signed ? 3 : 131, is_signed);
  act_params_typed(b, "p1", 0.045f, out_signed ? -20 : 100, out_signed);
  std::vector<std::string> in = {qdq(b, "x", "p0")};
  b.node(c.op, in, {"f"});
  auto& f = *b.proto().mutable_graph()->mutable_node(b.proto().graph().node_size() - 1);
  if (c.setup) c.setup(b, f);
  b.node("QuantizeLinear", {"f", "p1_s", "p1_z"}, {"fq"});
  b.node("DequantizeLinear", {"fq", "p1_s", "p1_z"}, {"y"});
  const std::vector<uint8_t> bytes = b.bytes();
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({2, 3, 7, 5}, 5, -9.0f, 9.0f)}};
  int plain_nodes = 0;
  const std::vector<float> want = output_without(bytes, feeds, "QLinearLookupFusion", &plain_nodes);
  for (int threads : {1, 2}) {
    auto s = session_with_threads(bytes, threads);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearLookupFusion 1")) << c.op;
    EXPECT_EQ(s->num_nodes(), plain_nodes - 2) << c.op;
    EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want)
        << c.op << (is_signed ? " int8" : " uint8") << (out_signed ? " -> int8" : " -> uint8") << " threads " << threads;
  }
}

std::vector<LookupCase> lookup_cases() {
  auto alpha = [](float a) {
    return [a](ModelBuilder&, onnx::NodeProto& n) { ModelBuilder::attr_float(n, "alpha", a); };
  };
  return {
      {"Relu", nullptr},
      {"LeakyRelu", alpha(0.13f)},
      {"Sigmoid", nullptr},
      {"HardSigmoid", [](ModelBuilder&, onnx::NodeProto& n) {
         ModelBuilder::attr_float(n, "alpha", 0.25f);
         ModelBuilder::attr_float(n, "beta", 0.4f);
       }},
      {"HardSwish", nullptr},
      {"Tanh", nullptr},
      {"Clip", [](ModelBuilder& b, onnx::NodeProto& n) {
         b.initializer("lo", {}, {-1.5f});
         b.initializer("hi", {}, {2.25f});
         n.add_input("lo");
         n.add_input("hi");
       }},
      {"Elu", alpha(0.7f)},
      {"Selu", nullptr},
      {"Gelu", nullptr},
      {"Gelu", [](ModelBuilder&, onnx::NodeProto& n) { ModelBuilder::attr_string(n, "approximate", "tanh"); }},
      {"Exp", nullptr},
      {"Neg", nullptr},
      {"Abs", nullptr},
      {"Softplus", nullptr},  // (Identity is removed before: EliminateIdentity)
  };
}

TEST(QLinearLookupFusion, EachOpSameBitsUint8) {
  for (const LookupCase& c : lookup_cases()) expect_lookup_same_bits(c, false, false);
}
TEST(QLinearLookupFusion, EachOpSameBitsInt8) {
  for (const LookupCase& c : lookup_cases()) expect_lookup_same_bits(c, true, true);
}
// uint8 in, int8 out and the reverse (the table has the output's type).
TEST(QLinearLookupFusion, MixedTypesSameBits) {
  for (const LookupCase& c : lookup_cases()) {
    expect_lookup_same_bits(c, false, true);
    expect_lookup_same_bits(c, true, false);
  }
}

// A float value read by another node too (the op's output, then the
// DequantizeLinear's) keeps its unit unfused.
TEST(QLinearLookupFusion, SharedFloatValueIsNotFused) {
  for (const char* shared : {"f", "x_dq"}) {
    ModelBuilder b(20);
    b.input("x", {4, 6}).output("y", {4, 6}).output("z", {4, 6});
    act_params(b, "p0", 0.05f, 128);
    act_params(b, "p1", 0.05f, 10);
    b.node("Sigmoid", {qdq(b, "x", "p0")}, {"f"});
    b.node("QuantizeLinear", {"f", "p1_s", "p1_z"}, {"fq"});
    b.node("DequantizeLinear", {"fq", "p1_s", "p1_z"}, {"y"});
    b.node("Neg", {shared}, {"z"});
    auto s = InferenceSession::create_from_bytes(b.bytes(), {});
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearLookupFusion 0")) << shared;
  }
}

// Conv -> HardSwish -> Conv -> HardSigmoid with QDQ around each: the lookups
// join the NHWC chain (one ToNhwc, one FromNhwc), same bits as without the
// fusion and as without the NHWC layout, at 1 and 2 threads.
TEST(QLinearLookupFusion, LookupsStayInsideNhwcChain) {
  ModelBuilder b(20);
  b.input("x", {1, 5, 13, 11}).output("y", {1, 7, 13, 11});
  const std::pair<float, uint8_t> params[] = {{0.02f, 131}, {0.03f, 120}, {0.025f, 40}, {0.04f, 128}, {0.005f, 0}};
  for (size_t i = 0; i < std::size(params); ++i) act_params(b, "p" + std::to_string(i), params[i].first, params[i].second);
  weights(b, {12, 5, 3, 3}, 0, 0.02f, 41, "c1");
  weights(b, {7, 12, 1, 1}, 0, 0.025f, 42, "c2");
  auto& c1 = b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  ModelBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("HardSwish", {qdq(b, "a", "p1")}, {"h"});
  b.node("Conv", {qdq(b, "h", "p2"), "c2W", "c2B"}, {"c"});
  b.node("HardSigmoid", {qdq(b, "c", "p3")}, {"s"});
  b.node("QuantizeLinear", {"s", "p4_s", "p4_z"}, {"sq"});
  b.node("DequantizeLinear", {"sq", "p4_s", "p4_z"}, {"y"});
  const std::vector<uint8_t> bytes = b.bytes();
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({1, 5, 13, 11}, 43, -1.5f, 3.0f)}};
  const std::vector<float> want = output_without(bytes, feeds, "QLinearLookupFusion");
  EXPECT_EQ(output_without(bytes, feeds, "NhwcTransformer"), want);
  for (int threads : {1, 2}) {
    auto s = session_with_threads(bytes, threads);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearLookupFusion 2"));
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("NhwcTransformer 4 (2 conversions)"));
    EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want) << "threads " << threads;
  }
}

// ---------------------------------------------------------------- QLinearGateMulFusion

struct GateCase {
  std::string f;     // the gate's activation
  Shape x, s;        // the Mul's operands
  bool gate_first;   // Mul(f, x) or Mul(x, f)
  bool is_signed;
};

// x -> Q -> DQ; s -> Q -> DQ -> f; Mul -> Q -> DQ -> y: one
// spindle.QLinearGateMul whose output bits equal the unfused chain's, at 1
// and 2 threads.
void expect_gate_same_bits(const GateCase& c) {
  ModelBuilder b(20);
  Shape y = c.x;
  if (c.s.size() == c.x.size())
    for (size_t d = 0; d < y.size(); ++d) y[d] = std::max(c.x[d], c.s[d]);
  b.input("x", c.x).input("s", c.s).output("y", y);
  act_params_typed(b, "px", 0.04f, c.is_signed ? -5 : 120, c.is_signed);
  act_params_typed(b, "ps", 0.07f, c.is_signed ? 2 : 128, c.is_signed);
  act_params_typed(b, "py", 0.03f, c.is_signed ? 1 : 125, c.is_signed);
  b.node(c.f, {qdq(b, "s", "ps")}, {"g"});
  const std::string xd = qdq(b, "x", "px");
  b.node("Mul", c.gate_first ? std::vector<std::string>{"g", xd} : std::vector<std::string>{xd, "g"}, {"m"});
  b.node("QuantizeLinear", {"m", "py_s", "py_z"}, {"mq"});
  b.node("DequantizeLinear", {"mq", "py_s", "py_z"}, {"y"});
  const std::vector<uint8_t> bytes = b.bytes();
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input(c.x, 81, -3.0f, 6.0f)},
                                                             {"s", random_input(c.s, 82, -6.0f, 6.0f)}};
  int plain_nodes = 0;
  const std::vector<float> want = output_without(bytes, feeds, "QLinearGateMulFusion", &plain_nodes);
  for (int threads : {1, 2}) {
    auto s = session_with_threads(bytes, threads);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearGateMulFusion 1")) << c.f;
    // The activation, the Q and the two DequantizeLinears go.
    EXPECT_EQ(s->num_nodes(), plain_nodes - 4) << c.f;
    EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want) << c.f << " threads " << threads;
  }
}

TEST(QLinearGateMulFusion, SqueezeExciteSameBits) {
  const GateCase cases[] = {
      {"HardSigmoid", {2, 6, 5, 7}, {2, 6, 1, 1}, true, false},
      {"Sigmoid", {2, 6, 5, 7}, {2, 6, 1, 1}, false, false},
      {"Sigmoid", {2, 6, 5, 7}, {1, 6, 1, 1}, true, true},
      {"HardSigmoid", {2, 6, 5, 7}, {6, 1, 1}, false, true},
      {"Tanh", {2, 6, 5, 7}, {1, 1, 5, 7}, true, false},
      {"Sigmoid", {2, 6, 1, 1}, {2, 6, 5, 7}, true, false},
  };
  for (const GateCase& c : cases) expect_gate_same_bits(c);
}

// x -> Q -> DQ -> f -> Mul with the same DQ (SiLU: x * Sigmoid(x), either
// operand order) -> Q -> DQ -> y: one spindle.QLinearLookup (a function of
// one byte), the output bits the unfused chain's for every input code, at 1
// and 2 threads; uint8 and int8.
TEST(QLinearGateMulFusion, SelfGateBecomesOneLookupSameBits) {
  for (const bool is_signed : {false, true})
    for (const bool gate_first : {false, true})
      for (const char* f : {"Sigmoid", "HardSigmoid", "Tanh"}) {
        ModelBuilder b(20);
        b.input("x", {2, 6, 9, 7}).output("y", {2, 6, 9, 7});
        act_params_typed(b, "px", 0.05f, is_signed ? -3 : 125, is_signed);
        act_params_typed(b, "py", 0.028f, is_signed ? -100 : 22, is_signed);
        const std::string xd = qdq(b, "x", "px");
        b.node(f, {xd}, {"g"});
        b.node("Mul", gate_first ? std::vector<std::string>{"g", xd} : std::vector<std::string>{xd, "g"}, {"m"});
        b.node("QuantizeLinear", {"m", "py_s", "py_z"}, {"mq"});
        b.node("DequantizeLinear", {"mq", "py_s", "py_z"}, {"y"});
        const std::vector<uint8_t> bytes = b.bytes();
        const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({2, 6, 9, 7}, 83, -8.0f, 8.0f)}};
        int plain_nodes = 0;
        const std::vector<float> want = output_without(bytes, feeds, "QLinearGateMulFusion", &plain_nodes);
        // The optimized graph: one QLinearLookup, no QLinearGateMul.
        const std::string path = ::testing::TempDir() + "qdq_fusion_self_gate_" + std::to_string(getpid()) + ".onnx";
        SessionOptions o;
        o.optimized_model_filepath = path;
        InferenceSession::create_from_bytes(bytes, o);
        onnx::ModelProto m;
        std::ifstream in(path, std::ios::binary);
        ASSERT_TRUE(m.ParseFromIstream(&in));
        std::remove(path.c_str());
        std::vector<std::string> ops;
        for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
        EXPECT_THAT(ops, ::testing::ElementsAre("QuantizeLinear", "QLinearLookup", "DequantizeLinear")) << f;
        for (int threads : {1, 2}) {
          auto s = session_with_threads(bytes, threads);
          EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearGateMulFusion 1")) << f;
          // The activation, the Mul, the Q and the DequantizeLinear become one lookup.
          EXPECT_EQ(s->num_nodes(), plain_nodes - 3) << f;
          EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want)
              << f << (is_signed ? " int8" : " uint8") << (gate_first ? " Mul(f, x)" : " Mul(x, f)") << " threads " << threads;
        }
      }
}

// The activation's output read elsewhere too, or the Mul's: not fused.
TEST(QLinearGateMulFusion, SharedFloatValueIsNotFused) {
  for (const char* shared : {"g", "m"}) {
    ModelBuilder b(20);
    b.input("x", {1, 4, 3, 3}).input("s", {1, 4, 1, 1}).output("y", {1, 4, 3, 3}).output("z", {});
    act_params(b, "px", 0.05f, 128);
    act_params(b, "ps", 0.05f, 128);
    act_params(b, "py", 0.05f, 10);
    b.node("Sigmoid", {qdq(b, "s", "ps")}, {"g"});
    b.node("Mul", {"g", qdq(b, "x", "px")}, {"m"});
    b.node("QuantizeLinear", {"m", "py_s", "py_z"}, {"mq"});
    b.node("DequantizeLinear", {"mq", "py_s", "py_z"}, {"y"});
    b.node("ReduceSum", {shared}, {"z"});
    ModelBuilder::attr_int(b.proto().mutable_graph()->mutable_node(b.proto().graph().node_size() - 1)[0], "keepdims", 0);
    auto s = InferenceSession::create_from_bytes(b.bytes(), {});
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearGateMulFusion 0")) << shared;
  }
}

// A MobileNetV3-style block: Conv + Relu, the squeeze-excite (global pool,
// Conv + Relu, Conv, HardSigmoid, Mul) and a 1x1 Conv with QDQ around
// each: the gate joins the NHWC chain with its X and G from QLinearConvs
// (NHWC conversions only at the model's ends), same bits as without the
// fusion and as without the NHWC layout, at 1 and 2 threads.
TEST(QLinearGateMulFusion, GateStaysInsideNhwcChain) {
  ModelBuilder b(20);
  b.input("x", {1, 5, 13, 11}).output("y", {1, 7, 13, 11});
  const std::pair<float, uint8_t> params[] = {{0.02f, 131}, {0.03f, 0}, {0.025f, 3}, {0.02f, 0}, {0.06f, 128},
                                              {0.015f, 2},  {0.04f, 128}};
  for (size_t i = 0; i < std::size(params); ++i) act_params(b, "p" + std::to_string(i), params[i].first, params[i].second);
  weights(b, {12, 5, 3, 3}, 0, 0.02f, 91, "c1");
  weights(b, {4, 12, 1, 1}, 0, 0.025f, 92, "f1");
  weights(b, {12, 4, 1, 1}, 0, 0.02f, 93, "f2");
  weights(b, {7, 12, 1, 1}, 0, 0.015f, 94, "c2");
  auto& c1 = b.node("Conv", {qdq(b, "x", "p0"), "c1W", "c1B"}, {"a"});
  ModelBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Relu", {"a"}, {"ar"});
  const std::string ad = qdq(b, "ar", "p1");
  b.node("GlobalAveragePool", {ad}, {"gp"});
  b.node("Conv", {qdq(b, "gp", "p2"), "f1W", "f1B"}, {"e"});
  b.node("Relu", {"e"}, {"er"});
  b.node("Conv", {qdq(b, "er", "p3"), "f2W", "f2B"}, {"f"});
  b.node("HardSigmoid", {qdq(b, "f", "p4")}, {"h"});
  b.node("Mul", {"h", ad}, {"m"});
  b.node("Conv", {qdq(b, "m", "p5"), "c2W", "c2B"}, {"c"});
  b.node("QuantizeLinear", {"c", "p6_s", "p6_z"}, {"cq"});
  b.node("DequantizeLinear", {"cq", "p6_s", "p6_z"}, {"y"});
  const std::vector<uint8_t> bytes = b.bytes();
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", random_input({1, 5, 13, 11}, 95, -1.5f, 3.0f)}};
  const std::vector<float> want = output_without(bytes, feeds, "QLinearGateMulFusion");
  EXPECT_EQ(output_without(bytes, feeds, "NhwcTransformer"), want);
  for (int threads : {1, 2}) {
    auto s = session_with_threads(bytes, threads);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("QLinearGateMulFusion 1"));
    // Four QLinearConvs and the gate; x in, y out, and the pool's output
    // (taken back to NCHW after it) into the squeeze Conv.
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("NhwcTransformer 5 (3 conversions)"));
    EXPECT_EQ(s->run(feeds)[0].to_vector<float>(), want) << "threads " << threads;
  }
}

}  // namespace
}  // namespace spindle
