// qlinear_gate_test.cpp — spindle.QLinearGateMul: Y = Q(table[G] * DQ(X)),
// checked against the float kernels composed (DequantizeLinear of G ->
// HardSigmoid -> Mul by DequantizeLinear of X, with its broadcasting ->
// QuantizeLinear), bit for bit: per-channel gates, gates broadcast over the
// batch or of a lower rank, gates broadcast over the spatial dimensions,
// an output larger than X; NCHW and NHWC (X, and G in either layout); 1
// and 2 threads; bad inputs name what was expected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <type_traits>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;

template <class T>
Tensor random_q8(const Shape& s, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(std::is_same_v<T, int8_t> ? -128 : 0, std::is_same_v<T, int8_t> ? 127 : 255);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(d(rng));
  return Tensor::from_vector<T>(s, v);
}

template <class T>
Tensor scalar_of(int v) {
  return Tensor::from_vector<T>({}, {static_cast<T>(v)});
}

Tensor f32(float v) { return Tensor::from_vector<float>({}, {v}); }

Attributes hard_sigmoid_attrs() {
  Attributes a;
  a.set("alpha", 0.2f);
  a.set("beta", 0.45f);
  return a;
}

// The gate table: HardSigmoid(DQ(b)) for each byte b of G, by the kernels.
template <class G>
Tensor gate_table(float sg, int zg) {
  Tensor codes(std::is_same_v<G, int8_t> ? DataType::kInt8 : DataType::kUInt8, Shape{256});
  auto* c = static_cast<uint8_t*>(codes.raw_mutable_data());
  for (int b = 0; b < 256; ++b) c[b] = static_cast<uint8_t>(b);
  const Tensor d = run_kernel_once("DequantizeLinear", 13, {}, {codes, f32(sg), scalar_of<G>(zg)})[0];
  return run_kernel_once("HardSigmoid", 6, hard_sigmoid_attrs(), {d})[0];
}

struct Params {
  float sx = 0.037f, sg = 0.05f, sy = 0.021f;
  int zx = 7, zg = 3, zy = 11;
};

// The unfused chain on NCHW tensors.
template <class Q, class G>
Tensor composed(const Tensor& x, const Tensor& g, const Params& p) {
  const Tensor xd = run_kernel_once("DequantizeLinear", 13, {}, {x, f32(p.sx), scalar_of<Q>(p.zx)})[0];
  const Tensor gd = run_kernel_once("DequantizeLinear", 13, {}, {g, f32(p.sg), scalar_of<G>(p.zg)})[0];
  const Tensor h = run_kernel_once("HardSigmoid", 6, hard_sigmoid_attrs(), {gd})[0];
  const Tensor m = run_kernel_once("Mul", 14, {}, {h, xd})[0];
  return run_kernel_once("QuantizeLinear", 13, {}, {m, f32(p.sy), scalar_of<Q>(p.zy)})[0];
}

Tensor nhwc(const Tensor& t) {
  return run_kernel_once(testing::spindle_node("ToNhwc", {}, 1), {t})[0];
}

template <class Q, class G>
Tensor gate_mul(const Tensor& x, const Tensor& g, const Params& p, int channels_last, int gate_last,
                ThreadPool* pool) {
  Attributes a;
  a.set("channels_last", int64_t{channels_last});
  a.set("gate_channels_last", int64_t{gate_last});
  return run_kernel_once(testing::spindle_node("QLinearGateMul", a, 7),
                         {x, f32(p.sx), scalar_of<Q>(p.zx), g, gate_table<G>(p.sg, p.zg), f32(p.sy), scalar_of<Q>(p.zy)},
                         pool)[0];
}

template <class Q, class G>
void expect_same_bits(const Shape& xs, const Shape& gs) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const Params p;
  const Tensor x = random_q8<Q>(xs, 61), g = random_q8<G>(gs, 62);
  const Tensor want = composed<Q, G>(x, g, p);
  const std::vector<Q> wv = want.to_vector<Q>();
  // Not all saturated or all alike.
  ASSERT_NE(*std::min_element(wv.begin(), wv.end()), *std::max_element(wv.begin(), wv.end()));
  const bool four = xs.size() == 4 && gs.size() == 4 && want.rank() == 4;
  for (ThreadPool* tp : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
    const Tensor got = gate_mul<Q, G>(x, g, p, 0, 0, tp);
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.to_vector<Q>(), wv) << "NCHW " << shape_to_string(xs) << " * " << shape_to_string(gs);
    if (!four) continue;
    const Tensor want_nhwc = nhwc(want);
    for (int gate_last : {0, 1}) {
      const Tensor y = gate_mul<Q, G>(nhwc(x), gate_last ? nhwc(g) : g, p, 1, gate_last, tp);
      EXPECT_EQ(y.shape(), want_nhwc.shape());
      EXPECT_EQ(y.to_vector<Q>(), want_nhwc.to_vector<Q>())
          << "NHWC gate_channels_last " << gate_last << " " << shape_to_string(xs) << " * " << shape_to_string(gs);
    }
  }
}

const std::vector<std::pair<Shape, Shape>>& shape_cases() {
  static const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 6, 5, 7}, {2, 6, 1, 1}},       // one gate per (n, c)
      {{2, 6, 5, 7}, {1, 6, 1, 1}},       // shared by the batch
      {{2, 6, 5, 7}, {2, 1, 1, 1}},       // one per image
      {{2, 6, 5, 7}, {6, 1, 1}},          // lower rank (NCHW only)
      {{2, 6, 5, 7}, {1, 1, 5, 7}},       // over the spatial dimensions
      {{2, 6, 1, 1}, {2, 6, 5, 7}},       // an output larger than X
      {{1, 40, 33, 29}, {1, 40, 1, 1}},   // several blocks per thread
      {{3, 9, 17}, {3, 9, 1}},            // rank 3
      {{2, 19, 6, 5}, {2, 19, 6, 5}},     // one gate per value (a Swish), odd channels
  };
  return cases;
}

TEST(QLinearGateMul, EqualsTheComposedKernelsUint8) {
  for (const auto& [xs, gs] : shape_cases()) expect_same_bits<uint8_t, uint8_t>(xs, gs);
}
TEST(QLinearGateMul, EqualsTheComposedKernelsInt8AndMixedGate) {
  for (const auto& [xs, gs] : shape_cases()) {
    expect_same_bits<int8_t, int8_t>(xs, gs);
    expect_same_bits<uint8_t, int8_t>(xs, gs);
  }
}

TEST(QLinearGateMul, BadInputsNameWhatWasExpected) {
  const Params p;
  const Tensor x = random_q8<uint8_t>({1, 4, 3, 3}, 71), g = random_q8<uint8_t>({1, 4, 1, 1}, 72);
  const Tensor table = gate_table<uint8_t>(p.sg, p.zg);
  auto run = [&](std::vector<Tensor> in, Attributes a = {}) {
    const int count = static_cast<int>(in.size());
    return testing::error_of(
        [&] { run_kernel_once(testing::spindle_node("QLinearGateMul", a, count), std::move(in)); });
  };
  const Tensor two_scales = Tensor::from_vector<float>({2}, {0.1f, 0.2f});
  EXPECT_THAT(run({x, two_scales, scalar_of<uint8_t>(0), g, table, f32(0.1f), scalar_of<uint8_t>(0)}),
              ::testing::HasSubstr("input x_scale is"));
  EXPECT_THAT(run({x, f32(0.1f), scalar_of<uint8_t>(0), g, table, f32(0.1f), scalar_of<int8_t>(0)}),
              ::testing::HasSubstr("input y_zero_point is"));
  EXPECT_THAT(run({x, f32(0.1f), Tensor::from_vector<uint8_t>({4}, {0, 0, 0, 0}), g, table, f32(0.1f)}),
              ::testing::HasSubstr("expected one uint8 value"));
  const Tensor short_table = Tensor::from_vector<float>({255}, std::vector<float>(255, 0.5f));
  EXPECT_THAT(run({x, f32(0.1f), scalar_of<uint8_t>(0), g, short_table, f32(0.1f)}),
              ::testing::HasSubstr("expected 256 float32 values"));
  const Tensor gf = Tensor::from_vector<float>({1, 4, 1, 1}, {1, 2, 3, 4});
  EXPECT_THAT(run({x, f32(0.1f), scalar_of<uint8_t>(0), gf, table, f32(0.1f)}), ::testing::HasSubstr("input G is"));
  const Tensor g3 = random_q8<uint8_t>({3, 1, 1}, 73);
  EXPECT_THAT(run({x, f32(0.1f), scalar_of<uint8_t>(0), g3, table, f32(0.1f)}),
              ::testing::HasSubstr("cannot be broadcast"));
  Attributes last;
  last.set("channels_last", int64_t{1});
  last.set("gate_channels_last", int64_t{1});
  const Tensor g_rank3 = random_q8<uint8_t>({1, 1, 4}, 74);
  EXPECT_THAT(run({x, f32(0.1f), scalar_of<uint8_t>(0), g_rank3, table, f32(0.1f)}, last),
              ::testing::HasSubstr("expected X's rank 4"));
  const Tensor x2 = random_q8<uint8_t>({4, 9}, 75);
  EXPECT_THAT(run({x2, f32(0.1f), scalar_of<uint8_t>(0), g_rank3, table, f32(0.1f)}, last),
              ::testing::HasSubstr("expected rank >= 3"));
}

}  // namespace
}  // namespace spindle
