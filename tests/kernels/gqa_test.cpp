// gqa_test.cpp — com.microsoft GroupQueryAttention and
// SkipSimplifiedLayerNormalization against references computed here in
// double (the shared key / value heads repeated explicitly, the rotation and
// the causal softmax written out), at one, two and three intra-op threads
// with the same bits; bad attributes and inputs give errors naming what was
// wrong. (tests/opsets checks the same operators against ONNX Runtime.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A com.microsoft node (opset 1).
kernels::NodeInfo ms_node(const std::string& op, Attributes attrs, int inputs, int outputs) {
  kernels::NodeInfo node = testing::spindle_node(op, std::move(attrs), inputs);
  node.domain = "com.microsoft";
  node.num_outputs = outputs;
  return node;
}

struct GqaCase {
  int64_t B, S, P, Hq, Hkv, D, half;  // half: rotary dim / 2 (0: no rotary)
  int64_t window;
  float softcap;
};

// Output, present key and present value of one GroupQueryAttention step in
// double, every batch item holding P past tokens.
struct Ref {
  std::vector<double> y, pk, pv;
};
Ref reference(const GqaCase& c, const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
              const std::vector<float>& past_k, const std::vector<float>& past_v, const std::vector<float>& cs,
              const std::vector<float>& sn) {
  const int64_t T = c.P + c.S, D = c.D;
  auto rotate = [&](std::vector<double>& row, int64_t pos) {
    for (int64_t i = 0; i < c.half; ++i) {
      const double co = cs[static_cast<size_t>(pos * c.half + i)], si = sn[static_cast<size_t>(pos * c.half + i)];
      const double a = row[static_cast<size_t>(i)], b = row[static_cast<size_t>(i + c.half)];
      row[static_cast<size_t>(i)] = co * a - si * b;
      row[static_cast<size_t>(i + c.half)] = si * a + co * b;
    }
  };
  Ref r;
  r.pk.assign(static_cast<size_t>(c.B * c.Hkv * T * D), 0.0);
  r.pv = r.pk;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hkv; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> kr(static_cast<size_t>(D)), vr(static_cast<size_t>(D));
        for (int64_t d = 0; d < D; ++d) {
          const size_t past_at = static_cast<size_t>(((b * c.Hkv + h) * c.P + t) * D + d);
          const size_t new_at = static_cast<size_t>(((b * c.S + t - c.P) * c.Hkv + h) * D + d);
          kr[static_cast<size_t>(d)] = t < c.P ? past_k[past_at] : k[new_at];
          vr[static_cast<size_t>(d)] = t < c.P ? past_v[past_at] : v[new_at];
        }
        if (t >= c.P && c.half) rotate(kr, t);
        for (int64_t d = 0; d < D; ++d) {
          r.pk[static_cast<size_t>(((b * c.Hkv + h) * T + t) * D + d)] = kr[static_cast<size_t>(d)];
          r.pv[static_cast<size_t>(((b * c.Hkv + h) * T + t) * D + d)] = vr[static_cast<size_t>(d)];
        }
      }
  r.y.assign(static_cast<size_t>(c.B * c.S * c.Hq * D), 0.0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h) {
      const int64_t hk = h * c.Hkv / c.Hq;  // the key / value head of query head h
      for (int64_t i = 0; i < c.S; ++i) {
        std::vector<double> qr(static_cast<size_t>(D));
        for (int64_t d = 0; d < D; ++d) qr[static_cast<size_t>(d)] = q[static_cast<size_t>(((b * c.S + i) * c.Hq + h) * D + d)];
        if (c.half) rotate(qr, c.P + i);
        const int64_t last = c.P + i;
        const int64_t first = c.window > 0 ? std::max<int64_t>(0, last - c.window + 1) : 0;
        std::vector<double> w;
        double best = -1e300;
        for (int64_t t = first; t <= last; ++t) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += qr[static_cast<size_t>(d)] * r.pk[static_cast<size_t>(((b * c.Hkv + hk) * T + t) * D + d)];
          s /= std::sqrt(static_cast<double>(D));
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          w.push_back(s);
          best = std::max(best, s);
        }
        double sum = 0;
        for (double& s : w) sum += (s = std::exp(s - best));
        for (int64_t t = first; t <= last; ++t)
          for (int64_t d = 0; d < D; ++d)
            r.y[static_cast<size_t>(((b * c.S + i) * c.Hq + h) * D + d)] +=
                w[static_cast<size_t>(t - first)] / sum * r.pv[static_cast<size_t>(((b * c.Hkv + hk) * T + t) * D + d)];
      }
    }
  return r;
}

class GroupQueryAttentionCase : public ::testing::TestWithParam<GqaCase> {};

TEST_P(GroupQueryAttentionCase, MatchesReferenceWithSameBitsAtAnyThreadCount) {
  const GqaCase& c = GetParam();
  const int64_t T = c.P + c.S;
  const auto q = random_values(static_cast<size_t>(c.B * c.S * c.Hq * c.D), 1);
  const auto k = random_values(static_cast<size_t>(c.B * c.S * c.Hkv * c.D), 2);
  const auto v = random_values(static_cast<size_t>(c.B * c.S * c.Hkv * c.D), 3);
  const auto past_k = random_values(static_cast<size_t>(c.B * c.Hkv * c.P * c.D), 4);
  const auto past_v = random_values(static_cast<size_t>(c.B * c.Hkv * c.P * c.D), 5);
  std::vector<float> cs, sn;
  for (int64_t p = 0; p < T + 3; ++p)
    for (int64_t i = 0; i < c.half; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(i) / static_cast<double>(c.half));
      cs.push_back(static_cast<float>(std::cos(angle)));
      sn.push_back(static_cast<float>(std::sin(angle)));
    }
  Attributes attrs;
  attrs.set("num_heads", c.Hq);
  attrs.set("kv_num_heads", c.Hkv);
  if (c.window > 0) attrs.set("local_window_size", c.window);
  if (c.softcap > 0) attrs.set("softcap", c.softcap);
  if (c.half) attrs.set("do_rotary", int64_t{1});
  const auto node = ms_node("GroupQueryAttention", attrs, c.half ? 9 : 7, 3);
  std::vector<Tensor> inputs = {
      Tensor::from_vector<float>({c.B, c.S, c.Hq * c.D}, q), Tensor::from_vector<float>({c.B, c.S, c.Hkv * c.D}, k),
      Tensor::from_vector<float>({c.B, c.S, c.Hkv * c.D}, v), Tensor(), Tensor(),
      Tensor::from_vector<int32_t>({c.B}, std::vector<int32_t>(static_cast<size_t>(c.B), static_cast<int32_t>(T - 1))),
      Tensor::from_vector<int32_t>({}, {static_cast<int32_t>(T)})};
  if (c.P > 0) {
    inputs[3] = Tensor::from_vector<float>({c.B, c.Hkv, c.P, c.D}, past_k);
    inputs[4] = Tensor::from_vector<float>({c.B, c.Hkv, c.P, c.D}, past_v);
  }
  if (c.half) {
    inputs.push_back(Tensor::from_vector<float>({T + 3, c.half}, cs));
    inputs.push_back(Tensor::from_vector<float>({T + 3, c.half}, sn));
  }
  const auto got = kernels::run_kernel_once(node, inputs);
  const Ref want = reference(c, q, k, v, past_k, past_v, cs, sn);
  ASSERT_EQ(got[0].shape(), (Shape{c.B, c.S, c.Hq * c.D}));
  ASSERT_EQ(got[1].shape(), (Shape{c.B, c.Hkv, T, c.D}));
  ASSERT_EQ(got[2].shape(), (Shape{c.B, c.Hkv, T, c.D}));
  const std::vector<double>* refs[] = {&want.y, &want.pk, &want.pv};
  for (int o = 0; o < 3; ++o) {
    const auto g = got[static_cast<size_t>(o)].to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], (*refs[o])[i], 2e-5) << "output " << o << " element " << i;
  }
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const auto again = kernels::run_kernel_once(node, inputs, pool.get());
    for (int o = 0; o < 3; ++o)
      EXPECT_EQ(again[static_cast<size_t>(o)].to_vector<float>(), got[static_cast<size_t>(o)].to_vector<float>())
          << "output " << o << " at " << threads << " threads";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GroupQueryAttentionCase,
    ::testing::Values(GqaCase{1, 1, 9, 8, 2, 16, 0, 0, 0},    // decode: 4 query heads per key / value head
                      GqaCase{2, 6, 0, 8, 2, 16, 8, 0, 0},    // first prompt, rotary over the whole head
                      GqaCase{2, 3, 5, 6, 3, 12, 4, 0, 0},    // new tokens after a past, partial rotary
                      GqaCase{1, 4, 7, 4, 4, 20, 0, 3, 0},    // one head per key / value head, local window
                      GqaCase{3, 2, 4, 4, 1, 9, 2, 0, 2.5f},  // one shared head, odd head size, softcap
                      GqaCase{1, 1, 40, 8, 2, 64, 32, 0, 0}));

TEST(GroupQueryAttention, BadAttributesAndInputsGiveClearErrors) {
  auto run = [](Attributes attrs, std::vector<Tensor> inputs) {
    return testing::error_of([&] {
      kernels::run_kernel_once(ms_node("GroupQueryAttention", std::move(attrs), static_cast<int>(inputs.size()), 3), inputs);
    });
  };
  Attributes ok;
  ok.set("num_heads", int64_t{4});
  ok.set("kv_num_heads", int64_t{2});
  auto inputs = [](int64_t P, int32_t seqlen, int32_t total) {
    std::vector<Tensor> in = {Tensor::from_vector<float>({1, 1, 32}, std::vector<float>(32, 0.5f)),
                              Tensor::from_vector<float>({1, 1, 16}, std::vector<float>(16, 0.5f)),
                              Tensor::from_vector<float>({1, 1, 16}, std::vector<float>(16, 0.5f)),
                              Tensor::from_vector<float>({1, 2, P, 8}, std::vector<float>(static_cast<size_t>(16 * P), 1.0f)),
                              Tensor::from_vector<float>({1, 2, P, 8}, std::vector<float>(static_cast<size_t>(16 * P), 1.0f)),
                              Tensor::from_vector<int32_t>({1}, {seqlen}), Tensor::from_vector<int32_t>({}, {total})};
    return in;
  };
  EXPECT_EQ(run(ok, inputs(3, 3, 4)), "<no error>");
  Attributes bad_heads = ok;
  bad_heads.set("kv_num_heads", int64_t{3});
  EXPECT_NE(run(bad_heads, inputs(3, 3, 4)).find("kv_num_heads dividing num_heads"), std::string::npos);
  EXPECT_NE(run(ok, inputs(3, 9, 10)).find("seqlens_k[0] is 9"), std::string::npos);  // 9 past tokens of 3
  EXPECT_NE(run(ok, inputs(3, 3, 0)).find("total_sequence_length 0 is less than the sequence length 1"),
            std::string::npos);
  Attributes smooth = ok;
  smooth.set("smooth_softmax", int64_t{1});
  EXPECT_NE(run(smooth, inputs(3, 3, 4)).find("smooth_softmax = 1 is not supported"), std::string::npos);
  Attributes rotary = ok;
  rotary.set("do_rotary", int64_t{1});
  EXPECT_NE(run(rotary, inputs(3, 3, 4)).find("needs the inputs cos_cache and sin_cache"), std::string::npos);
  auto wrong_key = inputs(3, 3, 4);
  wrong_key[1] = Tensor::from_vector<float>({1, 1, 8}, std::vector<float>(8, 0.5f));
  EXPECT_NE(run(ok, wrong_key).find("input key is"), std::string::npos);
}

TEST(SkipSimplifiedLayerNormalization, MatchesReferenceWithSameBitsAtAnyThreadCount) {
  const int64_t rows = 37, H = 96;
  const auto x = random_values(static_cast<size_t>(rows * H), 7);
  const auto skip = random_values(static_cast<size_t>(rows * H), 8);
  const auto gamma = random_values(static_cast<size_t>(H), 9);
  const auto bias = random_values(static_cast<size_t>(H), 10);
  Attributes attrs;
  attrs.set("epsilon", 1e-6f);
  const auto node = ms_node("SkipSimplifiedLayerNormalization", attrs, 4, 4);
  const std::vector<Tensor> inputs = {Tensor::from_vector<float>({1, rows, H}, x), Tensor::from_vector<float>({1, rows, H}, skip),
                                      Tensor::from_vector<float>({H}, gamma), Tensor::from_vector<float>({H}, bias)};
  const auto got = kernels::run_kernel_once(node, inputs);
  const auto y = got[0].to_vector<float>(), inv = got[2].to_vector<float>(), sum = got[3].to_vector<float>();
  ASSERT_EQ(got[2].shape(), (Shape{1, rows, 1}));
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < H; ++i) {
      const size_t at = static_cast<size_t>(r * H + i);
      const double s = static_cast<double>(x[at]) + skip[at] + bias[static_cast<size_t>(i)];
      ASSERT_NEAR(sum[at], s, 1e-6);
      sq += s * s;
    }
    const double want_inv = 1.0 / std::sqrt(sq / static_cast<double>(H) + 1e-6);
    ASSERT_NEAR(inv[static_cast<size_t>(r)], want_inv, 1e-5 * want_inv);
    for (int64_t i = 0; i < H; ++i) {
      const size_t at = static_cast<size_t>(r * H + i);
      ASSERT_NEAR(y[at], sum[at] * want_inv * gamma[static_cast<size_t>(i)], 1e-5);
    }
  }
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const auto again = kernels::run_kernel_once(node, inputs, pool.get());
  for (size_t o : {0u, 2u, 3u}) EXPECT_EQ(again[o].to_vector<float>(), got[o].to_vector<float>());
  EXPECT_NE(testing::error_of([&] {
              kernels::run_kernel_once(node, {inputs[0], Tensor::from_vector<float>({5}, std::vector<float>(5, 1.0f)),
                                              inputs[2], inputs[3]});
            }).find("input skip is"),
            std::string::npos);
}

}  // namespace
}  // namespace spindle
