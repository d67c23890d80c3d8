// weights_once_test.cpp — kernels that pack constant weights hold them only
// packed: the loader's storage of each weight is freed when the plan is
// compiled (the plan's resident initializer bytes drop to what is read as
// given), for every convolution path (im2col, Winograd, pointwise, strided
// pointwise, the matrix-vector product of a 1x1 input, narrow groups, taps,
// direct 1-D), the blocked layout's convolutions, LSTM / GRU (W and R, both
// batch regimes) and QLinearConv (depthwise held in its 8-bit form). The
// outputs are bitwise those of the same model whose weights are also graph
// outputs (so the originals stay and the kernels read them as before), at
// one and two intra-op threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "graph/graph.h"
#include "model_builder.h"
#include "primitives/gemm/qgemm.h"
#include "primitives/quant/dw_q8.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

std::vector<float> values(size_t n, int mod, float scale, size_t salt = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 37 + salt * 11) % static_cast<size_t>(mod)) - mod / 2) * scale;
  return v;
}

// A model and its weights; `keep` adds every weight as a graph output, so
// the plan must keep the originals.
struct TestModel {
  ModelBuilder b;
  std::vector<std::string> weights;
  std::map<std::string, Shape> weight_shapes;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> outputs;

  void weight(const std::string& name, const Shape& shape, int mod, float scale) {
    b.initializer(name, shape, values(static_cast<size_t>(shape_numel(shape)), mod, scale, weights.size()));
    weights.push_back(name);
    weight_shapes[name] = shape;
  }
  void feed(const std::string& name, const Shape& shape) {
    b.input(name, shape);
    feeds[name] = Tensor::from_vector<float>(shape, values(static_cast<size_t>(shape_numel(shape)), 29, 0.07f, feeds.size()));
  }
  void output(const std::string& name, const Shape& shape) {
    b.output(name, shape);
    outputs.push_back(name);
  }
  std::vector<uint8_t> bytes(bool keep) {
    ModelBuilder m = b;
    if (keep)
      for (const std::string& w : weights) m.output(w, weight_shapes[w]);
    return m.bytes();
  }
};

struct Outcome {
  std::vector<bool> freed;  // per weight: the loader's storage is gone
  size_t initializer_bytes = 0, packed_bytes = 0;
  std::vector<std::vector<char>> outputs;
};

Outcome compile_and_run(TestModel& t, bool keep, int threads, graph::OptimizationLevel level, bool prepack = true) {
  auto loaded = graph::load_model_bytes(t.bytes(keep), "weights_once", ".");
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  graph::Graph g = std::move(loaded).value();
  const auto optimized = graph::optimize(g, level);
  EXPECT_TRUE(optimized.is_ok()) << optimized.status().to_string();
  std::vector<std::weak_ptr<Buffer>> storage;
  for (const std::string& w : t.weights) storage.push_back(g.initializer(g.value_id(w))->buffer());
  auto compiled = exec::Plan::compile(std::move(g), level, prepack);
  EXPECT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  if (!compiled.is_ok()) return {};
  const std::unique_ptr<exec::Plan> plan = std::move(compiled).value();
  Outcome o;
  for (const auto& s : storage) o.freed.push_back(s.expired());
  o.initializer_bytes = plan->constant_bytes().initializers;
  o.packed_bytes = plan->constant_bytes().packed;
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
  for (int run = 0; run < 2; ++run) {  // the second run reads what the first one packed lazily (Winograd's U)
    exec::Frame frame(*plan);
    const graph::Graph& pg = plan->graph();
    frame.begin_run();
    for (const auto& [name, value] : t.feeds) frame.values()[static_cast<size_t>(pg.value_id(name))] = value;
    exec::run_sequential(*plan, frame, pool.get(), {});
    o.outputs.clear();
    for (const std::string& name : t.outputs) {
      const Tensor& y = frame.values()[static_cast<size_t>(pg.value_id(name))];
      const char* p = static_cast<const char*>(y.raw_data());
      o.outputs.emplace_back(p, p + y.nbytes());
    }
    frame.end_run();
  }
  return o;
}

// Owned (weights freed) against kept (weights also outputs, read as given)
// at 1 and 2 threads: every output bitwise the same.
void expect_weights_once(TestModel& t, graph::OptimizationLevel level) {
  const Outcome kept = compile_and_run(t, true, 1, level);
  ASSERT_EQ(kept.outputs.size(), t.outputs.size());
  for (size_t i = 0; i < t.weights.size(); ++i) EXPECT_FALSE(kept.freed[i]) << t.weights[i] << " is a graph output";
  for (int threads : {1, 2}) {
    const Outcome owned = compile_and_run(t, false, threads, level);
    ASSERT_EQ(owned.outputs.size(), t.outputs.size());
    for (size_t i = 0; i < t.weights.size(); ++i) EXPECT_TRUE(owned.freed[i]) << t.weights[i] << " still resident";
    EXPECT_GT(owned.packed_bytes, 0u);
    EXPECT_LT(owned.initializer_bytes, kept.initializer_bytes);
    for (size_t i = 0; i < t.outputs.size(); ++i) {
      ASSERT_FALSE(owned.outputs[i].empty()) << t.outputs[i];
      EXPECT_EQ(owned.outputs[i], kept.outputs[i]) << t.outputs[i] << " at " << threads << " threads";
    }
  }
}

void conv(TestModel& t, const std::string& x, const std::string& w, const std::string& y, int64_t group,
          std::vector<int64_t> pads, std::vector<int64_t> strides, bool bias) {
  std::vector<std::string> in = {x, w};
  if (bias) {
    const int64_t m = t.weight_shapes[w][0];
    t.b.initializer(w + "_b", {m}, values(static_cast<size_t>(m), 13, 0.05f));
    in.push_back(w + "_b");
  }
  onnx::NodeProto& n = t.b.node("Conv", in, {y});
  if (group != 1) ModelBuilder::attr_int(n, "group", group);
  if (!pads.empty()) ModelBuilder::attr_ints(n, "pads", pads);
  if (!strides.empty()) ModelBuilder::attr_ints(n, "strides", strides);
}

TEST(WeightsOnce, ConvPathsHoldWeightsOnlyPacked) {
  TestModel t;
  t.feed("x", {1, 16, 14, 14});
  t.feed("xs", {1, 16, 1, 1});
  t.feed("x1", {1, 6, 30});
  t.weight("wa", {32, 16, 3, 3}, 23, 0.03f);   // Winograd: 3x3, 16 -> 32, 14x14
  t.weight("wb", {16, 32, 3, 3}, 19, 0.02f);   // im2col: stride 2
  t.weight("wc", {24, 16, 1, 1}, 17, 0.05f);   // pointwise
  t.weight("wd", {16, 12, 3, 3}, 21, 0.04f);   // group 2 of 8 output channels (grouped8)
  t.weight("we", {8, 4, 3, 3}, 15, 0.05f);     // group 4 of 4 input channels (taps)
  t.weight("wf", {8, 16, 1, 1}, 11, 0.06f);    // strided 1x1 (subsampled input)
  t.weight("wg", {40, 8, 1, 1}, 27, 0.03f);    // 1x1 input: matrix-vector product, group 2 of 20 rows
  t.weight("wh", {10, 6, 5}, 13, 0.05f);       // 1-D, direct path
  conv(t, "x", "wa", "a", 1, {1, 1, 1, 1}, {}, true);
  conv(t, "a", "wb", "bb", 1, {1, 1, 1, 1}, {2, 2}, true);
  conv(t, "bb", "wc", "c", 1, {}, {}, false);
  conv(t, "c", "wd", "d", 2, {1, 1, 1, 1}, {}, true);
  conv(t, "d", "we", "y1", 4, {1, 1, 1, 1}, {}, true);
  conv(t, "x", "wf", "y2", 1, {}, {2, 2}, false);
  conv(t, "xs", "wg", "y3", 2, {}, {}, true);
  conv(t, "x1", "wh", "y4", 1, {2, 2}, {}, true);
  t.output("a", {1, 32, 14, 14});
  t.output("y1", {1, 8, 7, 7});
  t.output("y2", {1, 8, 7, 7});
  t.output("y3", {1, 40, 1, 1});
  t.output("y4", {1, 10, 30});
  expect_weights_once(t, graph::OptimizationLevel::kBasic);
  // Biases stay as given (read in place): the only initializers left.
  const Outcome o = compile_and_run(t, false, 1, graph::OptimizationLevel::kBasic);
  EXPECT_EQ(o.initializer_bytes, (32 + 16 + 16 + 8 + 40 + 10) * sizeof(float));
}

TEST(WeightsOnce, MatrixVectorProductOfPackedWeightsMatchesByHand) {
  // y[m] = b[m] + sum_k W[m][k] x[k] over W's panels, checked against a
  // double sum (one group, 13 rows: a partial panel).
  TestModel t;
  t.feed("xs", {1, 24, 1, 1});
  t.weight("w", {13, 24, 1, 1}, 23, 0.03f);
  conv(t, "xs", "w", "y", 1, {}, {}, false);
  t.output("y", {1, 13, 1, 1});
  const Outcome o = compile_and_run(t, false, 2, graph::OptimizationLevel::kBasic);
  ASSERT_EQ(o.outputs.size(), 1u);
  EXPECT_TRUE(o.freed[0]);
  const std::vector<float> w = values(13 * 24, 23, 0.03f, 0), x = t.feeds["xs"].to_vector<float>();
  std::vector<float> y(13);
  std::memcpy(y.data(), o.outputs[0].data(), y.size() * sizeof(float));
  for (int m = 0; m < 13; ++m) {
    double want = 0;
    for (int k = 0; k < 24; ++k) want += static_cast<double>(w[static_cast<size_t>(m * 24 + k)]) * x[static_cast<size_t>(k)];
    EXPECT_NEAR(y[static_cast<size_t>(m)], want, 1e-4) << "row " << m;
  }
}

TEST(WeightsOnce, BlockedConvolutionsHoldWeightsOnlyPacked) {
  // A stem (3 NCHW channels in, blocked out), 1x1, depthwise 3x3, 1x1, then
  // a global average pool: one chain in the blocked layout at level all,
  // with no conversion.
  TestModel t;
  t.feed("x", {1, 3, 12, 12});
  t.weight("w0", {16, 3, 3, 3}, 17, 0.05f);
  t.weight("w1", {32, 16, 1, 1}, 17, 0.05f);
  t.weight("w2", {32, 1, 3, 3}, 13, 0.07f);
  t.weight("w3", {16, 32, 1, 1}, 19, 0.04f);
  conv(t, "x", "w0", "h0", 1, {1, 1, 1, 1}, {}, true);
  t.b.node("Relu", {"h0"}, {"r0"});
  conv(t, "r0", "w1", "h1", 1, {}, {}, true);
  t.b.node("Relu", {"h1"}, {"r1"});
  conv(t, "r1", "w2", "h2", 32, {1, 1, 1, 1}, {}, true);
  t.b.node("Relu", {"h2"}, {"r2"});
  conv(t, "r2", "w3", "h3", 1, {}, {}, true);
  t.b.node("GlobalAveragePool", {"h3"}, {"y"});
  t.output("y", {1, 16, 1, 1});
  expect_weights_once(t, graph::OptimizationLevel::kAll);
  auto loaded = graph::load_model_bytes(t.bytes(false), "blocked", ".");
  ASSERT_TRUE(loaded.is_ok());
  graph::Graph g = std::move(loaded).value();
  ASSERT_TRUE(graph::optimize(g, graph::OptimizationLevel::kAll).is_ok());
  int blocked = 0;
  for (const graph::Node& n : g.nodes) blocked += n.op_type == "BlockedConv";
  EXPECT_EQ(blocked, 4) << "the chain did not take the blocked layout";
}

// One weight read by three MatMuls (one through an Identity) and a Gemm (a
// weight tied across layers): packed once for the MatMuls (same packing),
// freed, and each product as with the weight kept.
TEST(WeightsOnce, KernelsReadingOneWeightShareItsPacking) {
  TestModel t;
  t.feed("x", {3, 16});
  t.weight("w", {16, 16}, 23, 0.04f);
  t.b.node("Identity", {"w"}, {"w_layer2"});  // as exporters tie weights across layers
  t.b.node("MatMul", {"x", "w"}, {"h1"});
  t.b.node("MatMul", {"h1", "w_layer2"}, {"h2"});
  t.b.node("MatMul", {"h2", "w"}, {"y"});
  ModelBuilder::attr_int(t.b.node("Gemm", {"x", "w"}, {"z"}), "transB", 1);
  t.output("y", {3, 16});
  t.output("z", {3, 16});
  expect_weights_once(t, graph::OptimizationLevel::kBasic);
  const Outcome o = compile_and_run(t, false, 1, graph::OptimizationLevel::kBasic);
  ASSERT_EQ(o.outputs.size(), 2u);
  // The product by hand: y = ((x w) w) w.
  std::vector<double> h(48);
  const std::vector<float> w = values(256, 23, 0.04f, 0), x = t.feeds["x"].to_vector<float>();
  for (int i = 0; i < 48; ++i) h[static_cast<size_t>(i)] = x[static_cast<size_t>(i)];
  for (int layer = 0; layer < 3; ++layer) {
    std::vector<double> next(48, 0.0);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 16; ++c)
        for (int k = 0; k < 16; ++k)
          next[static_cast<size_t>(r * 16 + c)] += h[static_cast<size_t>(r * 16 + k)] * w[static_cast<size_t>(k * 16 + c)];
    h = next;
  }
  std::vector<float> y(48);
  std::memcpy(y.data(), o.outputs[0].data(), sizeof(float) * 48);
  for (int i = 0; i < 48; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], h[static_cast<size_t>(i)], 1e-4) << i;
}

// LSTM and GRU (linear_before_reset 0: R_h apart), forward / bidirectional,
// batch 2 (packed matrix-vector recurrence) and 6 (GEMM recurrence, R
// rebuilt from its panels when only those are kept).
void recurrent_model(TestModel& t, const std::string& op, int64_t batch, bool bidirectional) {
  const int64_t T = 5, I = 12, H = 10, G = op == "LSTM" ? 4 : 3, D = bidirectional ? 2 : 1;
  t.feed("x", {T, batch, I});
  t.weight("w", {D, G * H, I}, 23, 0.04f);
  t.weight("r", {D, G * H, H}, 19, 0.05f);
  t.b.initializer("bias", {D, 2 * G * H}, values(static_cast<size_t>(D * 2 * G * H), 11, 0.03f));
  onnx::NodeProto& n = t.b.node(op, {"x", "w", "r", "bias"}, {"y", "yh"});
  ModelBuilder::attr_int(n, "hidden_size", H);
  if (bidirectional) ModelBuilder::attr_string(n, "direction", "bidirectional");
  t.output("y", {T, D, batch, H});
  t.output("yh", {D, batch, H});
}

TEST(WeightsOnce, RecurrentWeightsHeldOnlyPacked) {
  for (const std::string op : {"LSTM", "GRU"})
    for (int64_t batch : {2, 6})
      for (bool bidirectional : {false, true}) {
        SCOPED_TRACE(op + " batch " + std::to_string(batch) + (bidirectional ? " bidirectional" : ""));
        TestModel t;
        recurrent_model(t, op, batch, bidirectional);
        expect_weights_once(t, graph::OptimizationLevel::kBasic);
      }
}

// The int8 weights of qconv_model, n of them.
std::string qconv_weights(int64_t n) {
  std::string raw(static_cast<size_t>(n), '\0');
  for (int64_t i = 0; i < n; ++i) raw[static_cast<size_t>(i)] = static_cast<char>(static_cast<int>(i * 37 % 101) - 50);
  return raw;
}

// The bytes a depthwise QLinearConv packs beside W for dw_q8_row: none
// unless the int8 GEMM uses AVX512-VNNI (weight zero points 0).
size_t depthwise_packing(const std::string& w, int64_t C, int64_t taps) {
  if (std::string(kernels::nn::qgemm_kernel_name()) != "avx512-vnni") return 0;
  const std::vector<int32_t> zp(static_cast<size_t>(C), 0);
  return kernels::dw_q8_pack(w.data(), true, zp.data(), C, taps).bytes();
}

// x [1, 8, 6, 6] uint8 -> QLinearConv depthwise 3x3 (int8 W, per-channel
// scales) -> y uint8; with `depthwise` false a 1x1 of 8 -> 8 channels (qgemm).
std::vector<uint8_t> qconv_model(bool depthwise, bool keep) {
  ModelBuilder b;
  b.input("x", {1, 8, 6, 6}, onnx::TensorProto::UINT8).output("y", {1, 8, 6, 6}, onnx::TensorProto::UINT8);
  if (keep) b.output("w", depthwise ? std::vector<int64_t>{8, 1, 3, 3} : std::vector<int64_t>{8, 8, 1, 1}, onnx::TensorProto::INT8);
  const int64_t n = depthwise ? 72 : 64;
  const std::string raw = qconv_weights(n);
  auto* w = b.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : depthwise ? std::vector<int64_t>{8, 1, 3, 3} : std::vector<int64_t>{8, 8, 1, 1}) w->add_dims(d);
  w->set_raw_data(raw);
  b.initializer("xs", {}, {0.02f}).initializer_u8("xz", {}, {128});
  b.initializer("ys", {}, {0.05f}).initializer_u8("yz", {}, {120});
  std::vector<float> ws(8);
  for (int i = 0; i < 8; ++i) ws[static_cast<size_t>(i)] = 0.003f + 0.001f * static_cast<float>(i);
  b.initializer("ws", {8}, ws);
  auto* wz = b.proto().mutable_graph()->add_initializer();
  wz->set_name("wz");
  wz->set_data_type(onnx::TensorProto::INT8);
  wz->add_dims(8);
  wz->set_raw_data(std::string(8, '\0'));
  onnx::NodeProto& q = b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  if (depthwise) {
    ModelBuilder::attr_int(q, "group", 8);
    ModelBuilder::attr_ints(q, "pads", {1, 1, 1, 1});
  }
  return b.bytes();
}

TEST(WeightsOnce, QLinearConvWeightsHeldOnceInTheirEightBitForm) {
  std::vector<uint8_t> x(288);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 53 % 256);
  for (bool depthwise : {true, false}) {
    SCOPED_TRACE(depthwise ? "depthwise" : "1x1");
    std::vector<std::vector<uint8_t>> outs;
    for (bool keep : {false, true})
      for (int threads : {1, 2}) {
        auto loaded = graph::load_model_bytes(qconv_model(depthwise, keep), "qconv", ".");
        ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
        graph::Graph g = std::move(loaded).value();
        const size_t w_bytes = g.initializer(g.value_id("w"))->nbytes();
        auto plan = exec::Plan::compile(std::move(g), graph::OptimizationLevel::kBasic, true);
        ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
        const auto bytes = (*plan)->constant_bytes();
        // W is no longer an initializer of the plan unless it is an output;
        // depthwise keeps it as loaded (one byte a weight), not widened, and
        // where the int8 GEMM uses VNNI the rows' packing (dw_q8.h) beside it.
        EXPECT_EQ((*plan)->graph().is_initializer((*plan)->graph().value_id("w")), keep);
        if (depthwise) EXPECT_EQ(bytes.packed, w_bytes + depthwise_packing(qconv_weights(8 * 9), 8, 9));
        else EXPECT_GT(bytes.packed, 0u);
        auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
        exec::Frame frame(**plan);
        const graph::Graph& pg = (*plan)->graph();
        frame.begin_run();
        Tensor xt(DataType::kUInt8, {1, 8, 6, 6});
        std::memcpy(xt.raw_mutable_data(), x.data(), x.size());
        frame.values()[static_cast<size_t>(pg.value_id("x"))] = xt;
        exec::run_sequential(**plan, frame, pool.get(), {});
        const Tensor& y = frame.values()[static_cast<size_t>(pg.outputs[0])];
        const uint8_t* p = static_cast<const uint8_t*>(y.raw_data());
        outs.emplace_back(p, p + y.nbytes());
        frame.end_run();
      }
    for (size_t i = 1; i < outs.size(); ++i) EXPECT_EQ(outs[i], outs[0]);
    // Not all one value: the product is really there.
    EXPECT_NE(std::count(outs[0].begin(), outs[0].end(), outs[0][0]), static_cast<std::ptrdiff_t>(outs[0].size()));
  }
}

}  // namespace
}  // namespace spindle
