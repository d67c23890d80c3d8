// blocked_test.cpp — the NCHW8c kernels of src/kernels/nn/blocked.cpp
// (domain "spindle"): reorders against the layout's index formula,
// BlockedConv against Conv on the NCHW tensors (pointwise at stride 1 and
// strided, depthwise, grouped with group widths of multiples of 8, the
// register-tiled and the generic depthwise / grouped paths, with bias,
// residual, input scale and fused activations; the NCHW-input mode of stems,
// fast and generic paths), BlockedGlobalAveragePool against
// GlobalAveragePool, bitwise determinism across thread counts and errors
// for bad shapes and attributes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/kernel.h"
#include "kernel_errors.h"

namespace spindle {
namespace {

using kernels::NodeInfo;
using testing::error_of;

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DataType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// NCHW -> [N, C/8, H, W, 8] by the layout's definition.
Tensor to_blocked(const Tensor& x) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  Tensor y(DataType::kFloat32, {N, C / 8, H, W, 8});
  const float* s = x.data<float>();
  float* d = y.mutable_data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          d[(((n * (C / 8) + c / 8) * H + h) * W + w) * 8 + c % 8] = s[((n * C + c) * H + h) * W + w];
  return y;
}

Tensor from_blocked(const Tensor& y) {
  const int64_t N = y.dim(0), C = y.dim(1) * 8, H = y.dim(2), W = y.dim(3);
  Tensor x(DataType::kFloat32, {N, C, H, W});
  const float* s = y.data<float>();
  float* d = x.mutable_data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          d[((n * C + c) * H + h) * W + w] = s[(((n * (C / 8) + c / 8) * H + h) * W + w) * 8 + c % 8];
  return x;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && (a.numel() == 0 ||
         std::memcmp(a.data<float>(), b.data<float>(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0);
}

using testing::spindle_node;

Tensor run_spindle(const std::string& op, const Tensor& x, ThreadPool* pool = nullptr) {
  return kernels::run_kernel_once(spindle_node(op, {}, 1), {x}, pool)[0];
}

// One convolution: NCHW tensors and the attributes both ops share.
struct ConvSetup {
  Tensor X, W, B, R, S;  // R in NCHW (the reference's layout); B, R, S may be undefined
  Attributes attrs;      // group, kernel_shape, strides, pads, activation...
  bool nchw_input = false;  // BlockedConv takes X as it is (the NCHW-input mode), else blocked

  // BlockedConv on the blocked input, its output back in NCHW. W constant
  // (pre-packed) unless const_w is false.
  Tensor blocked(ThreadPool* pool = nullptr, bool const_w = true, Tensor* raw = nullptr) const {
    std::vector<Tensor> in = {nchw_input ? X : to_blocked(X), W, B, R.defined() ? to_blocked(R) : Tensor(), S};
    while (!in.back().defined()) in.pop_back();
    NodeInfo node = spindle_node("BlockedConv", attrs, static_cast<int>(in.size()));
    node.const_inputs = {nullptr, const_w ? &W : nullptr};
    Tensor y = kernels::run_kernel_once(node, in, pool)[0];
    if (raw) *raw = y;
    return from_blocked(y);
  }

  // Conv on X * S (NCHW), with R as the Conv kernel's fused residual.
  Tensor reference() const {
    Tensor xs = X;
    if (S.defined()) {
      xs = Tensor(DataType::kFloat32, X.shape());
      const int64_t N = X.dim(0), C = X.dim(1), P = X.dim(2) * X.dim(3);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t p = 0; p < P; ++p)
            xs.mutable_data<float>()[(n * C + c) * P + p] =
                X.data<float>()[(n * C + c) * P + p] * S.data<float>()[(S.dim(0) == 1 ? 0 : n) * C + c];
    }
    std::vector<Tensor> in = {xs, W, B, R};
    while (!in.back().defined()) in.pop_back();
    return kernels::run_kernel_once("Conv", 11, attrs, in)[0];
  }
};

// |got - ref| <= 1e-5 |ref| + 1e-5 everywhere.
void expect_close(const Tensor& got, const Tensor& ref, const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  const float* g = got.data<float>();
  const float* r = ref.data<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < ref.numel(); ++i)
    if (!(std::abs(g[i] - r[i]) <= 1e-5f * std::abs(r[i]) + 1e-5f) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", Conv gives " << r[i];
}

// The fused activations the tests cycle through ("" = none).
struct Act {
  const char* name;
  std::vector<float> params;
};
const Act kActs[] = {{"", {}}, {"Relu", {}}, {"HardSwish", {}}, {"Silu", {}}, {"Clip", {0.0f, 6.0f}},
                     {"HardSigmoid", {0.2f, 0.5f}}};

void set_act(Attributes& attrs, const Act& a) {
  if (!*a.name) return;
  attrs.set("activation", std::string(a.name));
  if (!a.params.empty()) attrs.set("activation_params", a.params);
}

ConvSetup pointwise(int64_t N, int64_t C, int64_t OC, int64_t H, int64_t W, bool b, bool r, bool s, const Act& act,
                    uint32_t seed) {
  ConvSetup c;
  c.X = random_tensor({N, C, H, W}, seed);
  c.W = random_tensor({OC, C, 1, 1}, seed + 1);
  if (b) c.B = random_tensor({OC}, seed + 2);
  if (r) c.R = random_tensor({N, OC, H, W}, seed + 3);
  if (s) c.S = random_tensor({N, C, 1, 1}, seed + 4, 0.0f, 1.0f);
  c.attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
  set_act(c.attrs, act);
  return c;
}

// Depthwise, pads {top, left, bottom, right}.
ConvSetup depthwise(int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t stride,
                    std::vector<int64_t> pads, bool b, bool r, bool s, const Act& act, uint32_t seed) {
  ConvSetup c;
  c.X = random_tensor({N, C, H, W}, seed);
  c.W = random_tensor({C, 1, KH, KW}, seed + 1);
  if (b) c.B = random_tensor({C}, seed + 2);
  const int64_t OH = (H + pads[0] + pads[2] - KH) / stride + 1, OW = (W + pads[1] + pads[3] - KW) / stride + 1;
  if (r) c.R = random_tensor({N, C, OH, OW}, seed + 3);
  if (s) c.S = random_tensor({1, C, 1, 1}, seed + 4, 0.0f, 1.0f);
  c.attrs.set("group", C);
  c.attrs.set("kernel_shape", std::vector<int64_t>{KH, KW});
  c.attrs.set("strides", std::vector<int64_t>{stride, stride});
  c.attrs.set("pads", std::move(pads));
  set_act(c.attrs, act);
  return c;
}

// Pointwise with strides {sh, sw} (no pads).
ConvSetup strided_pointwise(int64_t N, int64_t C, int64_t OC, int64_t H, int64_t W, int64_t sh, int64_t sw, bool b,
                            bool r, bool s, const Act& act, uint32_t seed) {
  ConvSetup c = pointwise(N, C, OC, H, W, b, false, s, act, seed);
  c.attrs.set("strides", std::vector<int64_t>{sh, sw});
  if (r) c.R = random_tensor({N, OC, (H - 1) / sh + 1, (W - 1) / sw + 1}, seed + 3);
  return c;
}

// Grouped (C / group and OC / group input / output channels a group), pads
// {top, left, bottom, right}.
ConvSetup grouped(int64_t N, int64_t C, int64_t OC, int64_t group, int64_t H, int64_t W, int64_t KH, int64_t KW,
                  int64_t stride, std::vector<int64_t> pads, bool b, bool r, bool s, const Act& act, uint32_t seed) {
  ConvSetup c;
  c.X = random_tensor({N, C, H, W}, seed);
  c.W = random_tensor({OC, C / group, KH, KW}, seed + 1);
  if (b) c.B = random_tensor({OC}, seed + 2);
  const int64_t OH = (H + pads[0] + pads[2] - KH) / stride + 1, OW = (W + pads[1] + pads[3] - KW) / stride + 1;
  if (r) c.R = random_tensor({N, OC, OH, OW}, seed + 3);
  if (s) c.S = random_tensor({N, C, 1, 1}, seed + 4, 0.0f, 1.0f);
  c.attrs.set("group", group);
  c.attrs.set("kernel_shape", std::vector<int64_t>{KH, KW});
  c.attrs.set("strides", std::vector<int64_t>{stride, stride});
  c.attrs.set("pads", std::move(pads));
  set_act(c.attrs, act);
  return c;
}

// A convolution of an NCHW input of C channels (a stem) into OC blocked
// channels: strides {sh, sw}, pads {top, left, bottom, right}.
ConvSetup stem(int64_t N, int64_t C, int64_t OC, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh,
               int64_t sw, std::vector<int64_t> pads, bool b, bool r, const Act& act, uint32_t seed) {
  ConvSetup c;
  c.nchw_input = true;
  c.X = random_tensor({N, C, H, W}, seed);
  c.W = random_tensor({OC, C, KH, KW}, seed + 1);
  if (b) c.B = random_tensor({OC}, seed + 2);
  const int64_t OH = (H + pads[0] + pads[2] - KH) / sh + 1, OW = (W + pads[1] + pads[3] - KW) / sw + 1;
  if (r) c.R = random_tensor({N, OC, OH, OW}, seed + 3);
  c.attrs.set("kernel_shape", std::vector<int64_t>{KH, KW});
  c.attrs.set("strides", std::vector<int64_t>{sh, sw});
  c.attrs.set("pads", std::move(pads));
  set_act(c.attrs, act);
  return c;
}

// The activations stems use, and none.
const Act kStemActs[] = {{"", {}}, {"HardSwish", {}}, {"Silu", {}}, {"Relu", {}}};

// ---------------------------------------------------------------- reorders and the pool

TEST(BlockedReorder, RoundTripIsExactAndFollowsTheLayout) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (const Shape& s : {Shape{1, 8, 1, 1}, Shape{2, 16, 7, 5}, Shape{1, 24, 13, 11}, Shape{2, 72, 56, 56},
                         Shape{1, 8, 0, 3}}) {
    const Tensor X = random_tensor(s, 5);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      const Tensor Y = run_spindle("ReorderToBlocked", X, p);
      EXPECT_TRUE(bitwise_equal(Y, to_blocked(X))) << shape_to_string(s);
      const Tensor back = run_spindle("ReorderFromBlocked", Y, p);
      EXPECT_TRUE(bitwise_equal(back, X)) << shape_to_string(s);
    }
  }
}

TEST(BlockedReorder, BadShapesFailNamingThem) {
  const std::string c12 = error_of([] { run_spindle("ReorderToBlocked", random_tensor({1, 12, 4, 4}, 1)); });
  EXPECT_NE(c12.find("ReorderToBlocked"), std::string::npos) << c12;
  EXPECT_NE(c12.find("1x12x4x4"), std::string::npos) << c12;
  EXPECT_NE(c12.find("multiple of 8"), std::string::npos) << c12;
  const std::string rank3 = error_of([] { run_spindle("ReorderToBlocked", random_tensor({8, 4, 4}, 1)); });
  EXPECT_NE(rank3.find("8x4x4"), std::string::npos) << rank3;
  const std::string lanes = error_of([] { run_spindle("ReorderFromBlocked", random_tensor({1, 2, 4, 4, 4}, 1)); });
  EXPECT_NE(lanes.find("1x2x4x4x4"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("last dim 8"), std::string::npos) << lanes;
}

// The blocked pool sums each channel in row-major pixel order from 0 and
// divides by H * W as a float: the same bits as that loop. GlobalAveragePool
// keeps eight partial sums, so the two differ by float rounding, which grows
// with the plane: within 1e-6 relative up to 13x11 here; a 56x56 plane (3136
// terms of one sign, summed one after another) was 1.6e-6 off, so it gets
// 1e-5.
TEST(BlockedPool, GlobalAverageMatchesNchw) {
  for (const Shape& s : {Shape{1, 8, 1, 1}, Shape{2, 16, 7, 7}, Shape{1, 72, 13, 11}, Shape{2, 24, 56, 56}}) {
    const Tensor X = random_tensor(s, 9, 0.0f, 1.0f);
    const Tensor got = run_spindle("BlockedGlobalAveragePool", to_blocked(X));
    const Tensor ref = kernels::run_kernel_once("GlobalAveragePool", 1, {}, {X})[0];
    ASSERT_EQ(got.shape(), ref.shape());
    const int64_t P = s[2] * s[3];
    const float rel = P <= 13 * 11 ? 1e-6f : 1e-5f;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      float sum = 0.0f;
      for (int64_t p = 0; p < P; ++p) sum += X.data<float>()[i * P + p];
      EXPECT_EQ(got.data<float>()[i], sum / static_cast<float>(P)) << shape_to_string(s) << " channel " << i;
      EXPECT_LE(std::abs(got.data<float>()[i] - ref.data<float>()[i]), rel * std::abs(ref.data<float>()[i]))
          << shape_to_string(s) << " channel " << i;
    }
  }
  const std::string e = error_of([] { run_spindle("BlockedGlobalAveragePool", random_tensor({1, 8, 4, 4}, 1)); });
  EXPECT_NE(e.find("1x8x4x4"), std::string::npos) << e;
}

// ---------------------------------------------------------------- BlockedConv

TEST(BlockedConv, PointwiseMatchesConv) {
  struct Case {
    int64_t C, OC, H, W;
  };
  uint32_t seed = 100;
  int variant = 0;
  for (const Case& c : {Case{8, 8, 7, 7}, Case{8, 16, 13, 11}, Case{16, 24, 56, 56}, Case{24, 72, 7, 7},
                        Case{72, 24, 13, 11}, Case{264, 16, 7, 7}, Case{16, 264, 13, 11}, Case{264, 264, 7, 7},
                        Case{264, 72, 13, 11}, Case{72, 264, 1, 1}, Case{24, 8, 56, 56}})
    for (int v = 0; v < 4; ++v, ++variant, seed += 10) {
      const bool b = v != 1, r = v >= 2, s = v == 1 || v == 3;
      const Act& act = kActs[variant % std::size(kActs)];
      const ConvSetup setup = pointwise(2, c.C, c.OC, c.H, c.W, b, r, s, act, seed);
      expect_close(setup.blocked(), setup.reference(),
                   "pw " + std::to_string(c.C) + "->" + std::to_string(c.OC) + " " + std::to_string(c.H) + "x" +
                       std::to_string(c.W) + " B " + std::to_string(b) + " R " + std::to_string(r) + " S " +
                       std::to_string(s) + " " + act.name);
    }
}

TEST(BlockedConv, PointwiseWithOneScaleForAllImagesAndRuntimeWeights) {
  ConvSetup setup = pointwise(2, 24, 16, 5, 9, true, true, false, kActs[1], 7);
  setup.S = random_tensor({1, 24, 1, 1}, 8, 0.0f, 2.0f);
  expect_close(setup.blocked(), setup.reference(), "S of one image");
  expect_close(setup.blocked(nullptr, false), setup.reference(), "W at run time");
}

TEST(BlockedConv, DepthwiseFastPathMatchesConv) {
  struct Size {
    int64_t H, W;
  };
  uint32_t seed = 300;
  int variant = 0;
  for (int64_t k : {3, 5})
    for (int64_t s : {1, 2})
      for (const Size& sz : {Size{7, 7}, Size{14, 14}, Size{15, 9}, Size{1, 1}, Size{2, 3}, Size{9, 31}})
        for (int v = 0; v < 3; ++v, ++variant, seed += 10) {
          const bool b = v != 1, r = v >= 1, sc = v == 2;
          const Act& act = kActs[variant % std::size(kActs)];
          const int64_t p = k / 2;
          const ConvSetup setup = depthwise(2, 16, sz.H, sz.W, k, k, s, {p, p, p, p}, b, r, sc, act, seed);
          expect_close(setup.blocked(), setup.reference(),
                       "dw " + std::to_string(k) + "x" + std::to_string(k) + " s" + std::to_string(s) + " " +
                           std::to_string(sz.H) + "x" + std::to_string(sz.W) + " v" + std::to_string(v) + " " +
                           act.name);
        }
}

TEST(BlockedConv, DepthwiseGenericPathMatchesConv) {
  struct Case {
    int64_t H, W, KH, KW, stride;
    std::vector<int64_t> pads;
  };
  uint32_t seed = 500;
  int variant = 0;
  for (const Case& c : {Case{7, 7, 7, 7, 1, {3, 3, 3, 3}}, Case{14, 14, 7, 7, 2, {3, 3, 3, 3}},
                        Case{9, 8, 3, 3, 1, {0, 0, 0, 0}}, Case{15, 9, 3, 3, 3, {1, 1, 1, 1}},
                        Case{10, 11, 3, 5, 1, {1, 2, 1, 2}}, Case{8, 8, 3, 3, 1, {0, 1, 1, 0}},
                        Case{6, 6, 3, 3, 2, {2, 2, 2, 2}}, Case{5, 7, 1, 1, 1, {0, 0, 0, 0}},
                        Case{4, 4, 5, 5, 1, {3, 3, 3, 3}}})
    for (int v = 0; v < 2; ++v, ++variant, seed += 10) {
      const Act& act = kActs[(variant + 1) % std::size(kActs)];
      const ConvSetup setup = depthwise(2, 24, c.H, c.W, c.KH, c.KW, c.stride, c.pads, true, v == 1, v == 1, act, seed);
      expect_close(setup.blocked(), setup.reference(),
                   "dw " + std::to_string(c.KH) + "x" + std::to_string(c.KW) + " s" + std::to_string(c.stride) +
                       " on " + std::to_string(c.H) + "x" + std::to_string(c.W) + " v" + std::to_string(v));
    }
}

// Strided 1x1 (downsampling projections): the gathered input's pixels.
TEST(BlockedConv, StridedPointwiseMatchesConv) {
  struct Case {
    int64_t C, OC, H, W, sh, sw;
  };
  uint32_t seed = 1100;
  int variant = 0;
  for (const Case& c : {Case{16, 24, 14, 14, 2, 2}, Case{24, 16, 15, 9, 2, 2}, Case{32, 48, 14, 14, 2, 2},
                        Case{16, 8, 15, 9, 2, 1}, Case{8, 72, 13, 11, 3, 3}, Case{264, 16, 7, 7, 2, 2},
                        Case{24, 24, 1, 1, 2, 2}, Case{16, 16, 10, 7, 1, 3}})
    for (int v = 0; v < 4; ++v, ++variant, seed += 10) {
      const bool b = v != 1, r = v >= 2, s = v == 1 || v == 3;
      const Act& act = kActs[variant % std::size(kActs)];
      const ConvSetup setup = strided_pointwise(2, c.C, c.OC, c.H, c.W, c.sh, c.sw, b, r, s, act, seed);
      const std::string what = "pw " + std::to_string(c.C) + "->" + std::to_string(c.OC) + " " +
                               std::to_string(c.H) + "x" + std::to_string(c.W) + " s" + std::to_string(c.sh) + "," +
                               std::to_string(c.sw) + " v" + std::to_string(v) + " " + act.name;
      expect_close(setup.blocked(), setup.reference(), what);
      if (v == 3) expect_close(setup.blocked(nullptr, false), setup.reference(), what + " W at run time");
    }
}

// Group widths 8 (RegNet), 16 and input 16 / output 8 a group; 3x3, pads 1,
// strides 1 and 2 (the register-tiled path at AVX2).
TEST(BlockedConv, GroupedFastPathMatchesConv) {
  struct Group {
    int64_t C, OC, group;
  };
  struct Size {
    int64_t H, W;
  };
  uint32_t seed = 1300;
  int variant = 0;
  for (const Group& g : {Group{16, 16, 2}, Group{48, 48, 6}, Group{64, 64, 4}, Group{32, 16, 2}})
    for (int64_t st : {1, 2})
      for (const Size& sz : {Size{7, 7}, Size{14, 14}, Size{15, 9}, Size{56, 56}, Size{1, 1}, Size{2, 3}})
        for (int v = 0; v < 3; ++v, ++variant, seed += 10) {
          if (sz.H == 56 && v != 2) continue;  // one variant of the large plane keeps the test short
          const bool b = v != 1, r = v >= 1, sc = v == 2;
          const Act& act = kActs[variant % std::size(kActs)];
          const ConvSetup setup = grouped(2, g.C, g.OC, g.group, sz.H, sz.W, 3, 3, st, {1, 1, 1, 1}, b, r, sc, act,
                                          seed);
          expect_close(setup.blocked(), setup.reference(),
                       "grouped C " + std::to_string(g.C) + " OC " + std::to_string(g.OC) + " group " +
                           std::to_string(g.group) + " s" + std::to_string(st) + " " + std::to_string(sz.H) + "x" +
                           std::to_string(sz.W) + " v" + std::to_string(v) + " " + act.name);
        }
}

// Kernels, strides and pads the fast path does not take (5x5 pads 2, 3x3
// pads 0, asymmetric pads, stride 3, 1x1 grouped, 3x5), and W at run time.
TEST(BlockedConv, GroupedGenericPathMatchesConv) {
  struct Case {
    int64_t C, OC, group, H, W, KH, KW, stride;
    std::vector<int64_t> pads;
  };
  uint32_t seed = 1700;
  int variant = 0;
  for (const Case& c : {Case{16, 16, 2, 14, 14, 5, 5, 1, {2, 2, 2, 2}}, Case{48, 48, 6, 15, 9, 5, 5, 2, {2, 2, 2, 2}},
                        Case{16, 16, 2, 9, 8, 3, 3, 1, {0, 0, 0, 0}}, Case{32, 16, 2, 14, 14, 3, 3, 2, {0, 0, 0, 0}},
                        Case{24, 24, 3, 8, 8, 3, 3, 1, {0, 1, 1, 0}}, Case{16, 32, 2, 15, 9, 3, 3, 3, {1, 1, 1, 1}},
                        Case{32, 32, 4, 7, 7, 1, 1, 1, {0, 0, 0, 0}}, Case{16, 16, 2, 10, 11, 3, 5, 1, {1, 2, 1, 2}},
                        Case{16, 16, 2, 6, 6, 3, 3, 2, {2, 2, 2, 2}}})
    for (int v = 0; v < 2; ++v, ++variant, seed += 10) {
      const Act& act = kActs[(variant + 1) % std::size(kActs)];
      const ConvSetup setup = grouped(2, c.C, c.OC, c.group, c.H, c.W, c.KH, c.KW, c.stride, c.pads, true, v == 1,
                                      v == 1, act, seed);
      const std::string what = "grouped " + std::to_string(c.KH) + "x" + std::to_string(c.KW) + " s" +
                               std::to_string(c.stride) + " C " + std::to_string(c.C) + " group " +
                               std::to_string(c.group) + " on " + std::to_string(c.H) + "x" + std::to_string(c.W) +
                               " v" + std::to_string(v);
      expect_close(setup.blocked(), setup.reference(), what);
      if (v == 1) expect_close(setup.blocked(nullptr, false), setup.reference(), what + " W at run time");
    }
}

// S of one image for all, and S large enough that X is scaled rather than
// the weights (weights C/group x OC x 9 floats, X C x 1 x 1).
TEST(BlockedConv, GroupedInputScaleOfOneImageAndOnX) {
  ConvSetup a = grouped(2, 32, 32, 2, 9, 9, 3, 3, 1, {1, 1, 1, 1}, true, true, false, kActs[1], 1900);
  a.S = random_tensor({1, 32, 1, 1}, 1901, 0.0f, 2.0f);
  expect_close(a.blocked(), a.reference(), "grouped S of one image");
  const ConvSetup x = grouped(2, 128, 128, 8, 1, 1, 3, 3, 1, {1, 1, 1, 1}, true, false, true, kActs[2], 1902);
  expect_close(x.blocked(), x.reference(), "grouped S on X");
  const ConvSetup sp = strided_pointwise(2, 64, 64, 3, 3, 2, 2, true, true, true, kActs[3], 1903);
  expect_close(sp.blocked(), sp.reference(), "strided pointwise S on X");
}

TEST(BlockedConv, DepthwiseRuntimeWeightsMatchConv) {
  const ConvSetup setup = depthwise(2, 16, 9, 9, 3, 3, 1, {1, 1, 1, 1}, true, true, true, kActs[2], 900);
  expect_close(setup.blocked(nullptr, false), setup.reference(), "W at run time");
}

// Big enough for many blocks: the same bits from 1, 2 and 3 threads as
// inline.
TEST(BlockedConv, BitwiseIdenticalAcrossThreadCounts) {
  const ConvSetup cases[] = {
      pointwise(2, 264, 72, 56, 56, true, true, true, kActs[2], 40),
      pointwise(2, 24, 48, 56, 56, true, false, false, kActs[3], 41),
      depthwise(2, 72, 56, 56, 3, 3, 1, {1, 1, 1, 1}, true, true, true, kActs[4], 42),
      depthwise(2, 48, 57, 57, 5, 5, 2, {2, 2, 2, 2}, true, false, false, kActs[1], 43),
      depthwise(2, 16, 30, 30, 7, 7, 1, {3, 3, 3, 3}, true, true, false, kActs[0], 44),
      grouped(2, 208, 208, 26, 28, 28, 3, 3, 1, {1, 1, 1, 1}, true, true, true, kActs[2], 45),
      grouped(2, 104, 104, 13, 56, 56, 3, 3, 2, {1, 1, 1, 1}, true, false, false, kActs[1], 46),
      grouped(2, 64, 64, 4, 30, 30, 5, 5, 1, {2, 2, 2, 2}, true, true, false, kActs[3], 47),
      strided_pointwise(2, 48, 104, 56, 56, 2, 2, true, true, true, kActs[1], 48),
  };
  for (const ConvSetup& c : cases) {
    Tensor serial;
    c.blocked(nullptr, true, &serial);
    for (int threads : {1, 2, 3}) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
      Tensor par;
      c.blocked(pool.get(), true, &par);
      EXPECT_TRUE(bitwise_equal(serial, par)) << threads << " threads, W " << shape_to_string(c.W.shape());
    }
  }
}

// S other than one scale per input channel (a Mul the optimizer folded in,
// of any broadcasting shape): the product is taken as the Mul takes it,
// then convolved; the result is Conv(Mul(X, S)).
TEST(BlockedConv, InputScaleOfAnyBroadcastingShapeActsAsTheMul) {
  const ConvSetup pw = pointwise(1, 16, 8, 4, 4, true, false, false, kActs[1], 70);
  for (const Shape& s : {Shape{1, 16, 4, 4}, Shape{3, 16, 1, 1}, Shape{4}, Shape{1, 1, 4, 1}}) {
    const Tensor S = random_tensor(s, 71);
    NodeInfo node = spindle_node("BlockedConv", pw.attrs, 5);
    node.const_inputs = {nullptr, &pw.W};
    const Tensor got = from_blocked(kernels::run_kernel_once(node, {to_blocked(pw.X), pw.W, pw.B, Tensor(), S})[0]);
    const Tensor xs = kernels::run_kernel_once("Mul", 14, Attributes(), {pw.X, S})[0];
    const Tensor want = kernels::run_kernel_once("Conv", 11, pw.attrs, {xs, pw.W, pw.B})[0];
    expect_close(got, want, "S " + shape_to_string(s));
  }
}

// The NCHW-input mode's register-tiled path (3x3, stride 1 / 2, pads 1):
// input channels 1 / 3 / 4 / 12, output blocks in groups of 1, 2, 3 and
// 2 + 2, planes with inside tiles, tails and only border pixels, and a
// 224x224 stem.
TEST(BlockedConv, NchwInputFastPathMatchesConv) {
  struct Size {
    int64_t H, W;
  };
  uint32_t seed = 2100;
  int variant = 0;
  for (int64_t C : {1, 3, 4, 12})
    for (int64_t OC : {8, 16, 32, 24})
      for (int64_t st : {2, 1})
        for (const Size& sz : {Size{33, 31}, Size{7, 7}, Size{1, 1}, Size{2, 3}}) {
          const int v = variant++;
          seed += 10;
          const bool b = v % 3 != 1, r = v % 2 == 1;
          const Act& act = kStemActs[v % std::size(kStemActs)];
          const ConvSetup setup = stem(2, C, OC, sz.H, sz.W, 3, 3, st, st, {1, 1, 1, 1}, b, r, act, seed);
          expect_close(setup.blocked(), setup.reference(),
                       "stem C " + std::to_string(C) + " OC " + std::to_string(OC) + " s" + std::to_string(st) + " " +
                           std::to_string(sz.H) + "x" + std::to_string(sz.W) + " B " + std::to_string(b) + " R " +
                           std::to_string(r) + " " + act.name);
        }
  for (int64_t OC : {16, 32}) {
    const ConvSetup big = stem(2, 3, OC, 224, 224, 3, 3, 2, 2, {1, 1, 1, 1}, true, OC == 32, kStemActs[1], 2090);
    expect_close(big.blocked(), big.reference(), "stem 3 -> " + std::to_string(OC) + " 224x224 s2");
  }
}

// Kernels, strides and pads other than the stems' (5x5 pads 2, 7x7 stride
// 2 pads 3, 3x3 pads 0, stride 3, asymmetric pads and strides, 1x1, 3x5,
// pads beyond K / 2), W at run time, an input of 16 channels (a W the
// blocked modes take too) and an input scale (the Mul it stands for).
TEST(BlockedConv, NchwInputGenericPathMatchesConv) {
  struct Case {
    int64_t C, OC, H, W, KH, KW, sh, sw;
    std::vector<int64_t> pads;
  };
  uint32_t seed = 2500;
  int variant = 0;
  for (const Case& c : {Case{3, 16, 20, 17, 5, 5, 1, 1, {2, 2, 2, 2}}, Case{3, 64, 32, 29, 7, 7, 2, 2, {3, 3, 3, 3}},
                        Case{4, 16, 9, 8, 3, 3, 1, 1, {0, 0, 0, 0}}, Case{3, 24, 15, 14, 3, 3, 3, 3, {1, 1, 1, 1}},
                        Case{1, 8, 10, 11, 3, 3, 2, 2, {0, 1, 1, 0}}, Case{12, 32, 8, 9, 3, 3, 1, 2, {1, 0, 2, 1}},
                        Case{3, 40, 7, 6, 1, 1, 1, 1, {0, 0, 0, 0}}, Case{5, 16, 10, 11, 3, 5, 1, 1, {1, 2, 1, 2}},
                        Case{3, 16, 6, 6, 3, 3, 2, 2, {2, 2, 2, 2}}, Case{3, 8, 4, 4, 5, 5, 1, 1, {3, 3, 3, 3}},
                        Case{16, 16, 9, 9, 1, 1, 1, 1, {0, 0, 0, 0}}, Case{16, 24, 9, 9, 3, 3, 2, 2, {1, 1, 1, 1}}})
    for (int v = 0; v < 2; ++v, ++variant, seed += 10) {
      const Act& act = kStemActs[variant % std::size(kStemActs)];
      const ConvSetup setup =
          stem(2, c.C, c.OC, c.H, c.W, c.KH, c.KW, c.sh, c.sw, c.pads, v == 0 || variant % 3 == 0, v == 1, act, seed);
      const std::string what = "stem " + std::to_string(c.KH) + "x" + std::to_string(c.KW) + " s" +
                               std::to_string(c.sh) + "," + std::to_string(c.sw) + " C " + std::to_string(c.C) +
                               " OC " + std::to_string(c.OC) + " on " + std::to_string(c.H) + "x" +
                               std::to_string(c.W) + " v" + std::to_string(v) + " " + act.name;
      expect_close(setup.blocked(), setup.reference(), what);
      if (v == 1) expect_close(setup.blocked(nullptr, false), setup.reference(), what + " W at run time");
    }
  ConvSetup scaled = stem(2, 3, 16, 9, 10, 3, 3, 2, 2, {1, 1, 1, 1}, true, true, kStemActs[1], 2490);
  scaled.S = random_tensor({2, 3, 1, 1}, 2491, 0.0f, 2.0f);
  expect_close(scaled.blocked(), scaled.reference(), "stem with S");
}

// A 3 -> 32 stride-2 stem on 112x112: the same bits from 1, 2 and 3
// threads as inline.
TEST(BlockedConv, NchwInputBitwiseIdenticalAcrossThreadCounts) {
  for (const ConvSetup& c : {stem(2, 3, 32, 112, 112, 3, 3, 2, 2, {1, 1, 1, 1}, true, true, kStemActs[1], 2700),
                             stem(1, 3, 24, 112, 112, 3, 3, 1, 1, {1, 1, 1, 1}, true, false, kStemActs[2], 2701)}) {
    Tensor serial;
    c.blocked(nullptr, true, &serial);
    for (int threads : {1, 2, 3}) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
      Tensor par;
      c.blocked(pool.get(), true, &par);
      EXPECT_TRUE(bitwise_equal(serial, par)) << threads << " threads, W " << shape_to_string(c.W.shape());
    }
  }
}

TEST(BlockedConv, NchwInputBadInputsFailNamingThem) {
  const ConvSetup st = stem(1, 3, 16, 8, 8, 3, 3, 2, 2, {1, 1, 1, 1}, true, false, kStemActs[0], 2900);
  auto run = [&](const Tensor& W, std::vector<Tensor> in, Attributes attrs, bool const_w = true) {
    NodeInfo node = spindle_node("BlockedConv", std::move(attrs), static_cast<int>(in.size()));
    node.const_inputs = {nullptr, const_w ? &W : nullptr};
    kernels::run_kernel_once(node, in, nullptr);
  };
  auto expect = [](const std::string& msg, const std::vector<std::string>& needles) {
    EXPECT_NE(msg.find("BlockedConv"), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  };
  // A blocked X with a W of 3 input channels (constant or not).
  const Tensor Xb = to_blocked(random_tensor({1, 8, 8, 8}, 2901));
  for (bool const_w : {true, false}) {
    StatusCode code = StatusCode::kOk;
    expect(error_of([&] { run(st.W, {Xb, st.W}, st.attrs, const_w); }, &code), {"1x1x8x8x8", "16x3x3x3"});
    EXPECT_EQ(code, StatusCode::kUnsupported);
  }
  // An NCHW X of 4 channels for a W of 3.
  for (bool const_w : {true, false}) {
    const Tensor X4 = random_tensor({1, 4, 8, 8}, 2902);
    expect(error_of([&] { run(st.W, {X4, st.W}, st.attrs, const_w); }), {"1x4x8x8", "3 input channels"});
  }
  // An NCHW X with a depthwise W (group 16): not the NCHW-input mode.
  const ConvSetup dw = depthwise(1, 16, 8, 8, 3, 3, 1, {1, 1, 1, 1}, true, false, false, kActs[0], 2903);
  StatusCode code = StatusCode::kOk;
  expect(error_of([&] { run(dw.W, {dw.X, dw.W}, dw.attrs); }, &code), {"1x16x8x8", "16x1x3x3", "group 1"});
  EXPECT_EQ(code, StatusCode::kUnsupported);
  // X of rank 3.
  expect(error_of([&] { run(st.W, {random_tensor({3, 8, 8}, 2904), st.W}, st.attrs); }), {"3x8x8", "rank 4"});
  // A W of 3 input channels and 12 output ones (not a multiple of 8), and
  // one of 72 input channels and one group (too wide for the NCHW input,
  // not a shape of the blocked modes): neither mode, at creation.
  for (const Shape& ws : {Shape{12, 3, 3, 3}, Shape{16, 72, 3, 3}}) {
    const Tensor Wbad = random_tensor(ws, 2905);
    code = StatusCode::kOk;
    expect(error_of([&] { run(Wbad, {st.X, Wbad}, st.attrs); }, &code), {shape_to_string(ws), "NCHW"});
    EXPECT_EQ(code, StatusCode::kUnsupported);
  }
}

// A 3x3 convolution of one group (PP-OCR det's 96 -> 24 head) runs as the
// grouped kernel with a single group.
TEST(BlockedConv, OneGroup3x3MatchesConv) {
  int variant = 0;
  for (int64_t stride : {1, 2})
    for (auto [C, OC] : {std::pair<int64_t, int64_t>{96, 24}, {16, 16}, {8, 24}}) {
      const ConvSetup setup = grouped(2, C, OC, 1, 13, 11, 3, 3, stride, {1, 1, 1, 1}, true, stride == 1, false,
                                      kActs[variant % std::size(kActs)], 500 + variant);
      expect_close(setup.blocked(), setup.reference(),
                   "one group " + std::to_string(C) + " -> " + std::to_string(OC) + " s" + std::to_string(stride));
      ++variant;
    }
}

// The packed weights stand in for W when the plan dropped the constant
// (the kernel then sees W absent): bitwise the outputs of W given, in both
// modes, an NCHW input included for a W packed for the blocked modes (W
// rebuilt from that packing, then packed for the NCHW-input mode); the mode
// W's packing does not serve fails as with W given.
TEST(BlockedConv, PackedWeightsStandInForAnAbsentW) {
  auto run = [](const ConvSetup& c, const Tensor& x, bool given) {
    std::vector<Tensor> in = {x, given ? c.W : Tensor(), c.B};
    while (!in.back().defined()) in.pop_back();
    NodeInfo node = spindle_node("BlockedConv", c.attrs, static_cast<int>(in.size()));
    node.const_inputs = {nullptr, &c.W};
    return kernels::run_kernel_once(node, in, nullptr)[0];
  };
  // Ws both modes take: 1x1 16 -> 16, one group 3x3 16 -> 24.
  for (const ConvSetup& c : {pointwise(2, 16, 16, 9, 9, true, false, false, kActs[0], 3100),
                             grouped(2, 16, 24, 1, 9, 9, 3, 3, 1, {1, 1, 1, 1}, true, false, false, kActs[0], 3110)})
    for (bool nchw_x : {false, true}) {
      const Tensor x = nchw_x ? c.X : to_blocked(c.X);
      const Tensor owned = run(c, x, false);
      EXPECT_TRUE(bitwise_equal(owned, run(c, x, true))) << "W " << shape_to_string(c.W.shape()) << " X " << shape_to_string(x.shape());
      expect_close(from_blocked(owned), c.reference(), "W absent, X " + shape_to_string(x.shape()));
    }
  // A stem's W (3 input channels) serves the NCHW-input mode only.
  const ConvSetup st = stem(1, 3, 16, 8, 8, 3, 3, 1, 1, {1, 1, 1, 1}, true, false, kStemActs[0], 3120);
  EXPECT_TRUE(bitwise_equal(run(st, st.X, false), run(st, st.X, true)));
  const Tensor blocked_x = random_tensor({1, 1, 8, 8, 8}, 3121);
  std::string given, absent;
  try {
    run(st, blocked_x, true);
  } catch (const Error& e) {
    given = e.what();
  }
  try {
    run(st, blocked_x, false);
  } catch (const Error& e) {
    absent = e.what();
  }
  EXPECT_NE(absent.find("16x3x3x3"), std::string::npos) << absent;
  EXPECT_EQ(absent, given);
}

TEST(BlockedConv, BadInputsFailNamingThem) {
  const ConvSetup pw = pointwise(1, 16, 8, 4, 4, true, false, false, kActs[0], 60);
  auto run = [&](const ConvSetup& c, std::vector<Tensor> in, Attributes attrs) {
    NodeInfo node = spindle_node("BlockedConv", std::move(attrs), static_cast<int>(in.size()));
    node.const_inputs = {nullptr, &c.W};
    kernels::run_kernel_once(node, in, nullptr);
  };
  const Tensor Xb = to_blocked(pw.X);
  auto expect = [](const std::string& msg, const std::vector<std::string>& needles) {
    EXPECT_NE(msg.find("BlockedConv"), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  };
  // X of rank 4 with 16 channels runs as the NCHW-input mode (W is
  // packed for it at the call); X of rank 4 with a blocked last dim too.
  expect_close(from_blocked(kernels::run_kernel_once(
                   [&] {
                     NodeInfo node = spindle_node("BlockedConv", pw.attrs, 3);
                     node.const_inputs = {nullptr, &pw.W};
                     return node;
                   }(),
                   {pw.X, pw.W, pw.B})[0]),
               pw.reference(), "NCHW X of 16 channels");
  expect(error_of([&] { run(pw, {random_tensor({2, 8, 4, 8}, 61), pw.W}, pw.attrs); }), {"2x8x4x8", "16 input"});
  // X with 24 channels for a W of 16.
  const Tensor X24 = to_blocked(random_tensor({1, 24, 4, 4}, 61));
  expect(error_of([&] { run(pw, {X24, pw.W}, pw.attrs); }), {"1x3x4x4x8", "16 input channels"});
  // R not of Y's shape.
  const Tensor Rbad = random_tensor({1, 1, 4, 3, 8}, 62);
  expect(error_of([&] { run(pw, {Xb, pw.W, pw.B, Rbad}, pw.attrs); }), {"R", "1x1x4x3x8", "1x1x4x4x8"});
  // S that does not broadcast against X (in NCHW) as the folded Mul would.
  for (const Shape& s : {Shape{1, 16}, Shape{1, 8, 1, 1}, Shape{2, 16, 4, 1, 1}}) {
    const Tensor S = random_tensor(s, 63);
    expect(error_of([&] { run(pw, {Xb, pw.W, pw.B, Tensor(), S}, pw.attrs); }), {"input S", shape_to_string(s)});
  }
  // Dilations 2.
  const ConvSetup dw = depthwise(1, 16, 8, 8, 3, 3, 1, {1, 1, 1, 1}, true, false, false, kActs[0], 64);
  Attributes dil = dw.attrs;
  dil.set("dilations", std::vector<int64_t>{2, 2});
  StatusCode code = StatusCode::kOk;
  expect(error_of([&] { run(dw, {to_blocked(dw.X), dw.W}, dil); }, &code), {"dilations"});
  EXPECT_EQ(code, StatusCode::kUnsupported);
  // A 3x3 convolution of one group whose input channels are not a multiple
  // of 8: no blocked shape (and not the NCHW-input mode with a blocked X).
  const Tensor w12 = random_tensor({16, 12, 3, 3}, 65);
  Attributes one_group = dw.attrs;
  one_group.set("group", int64_t{1});
  expect(error_of([&] { run(dw, {to_blocked(dw.X), w12}, one_group); }, &code), {"16x12x3x3"});
  EXPECT_EQ(code, StatusCode::kUnsupported);
  // Group width 4 (C 24, group 6) and input 8 / output 4 a group (C 16,
  // OC 8, group 2): not multiples of 8.
  for (const auto& [C, OC, G, wshape] : {std::tuple<int64_t, int64_t, int64_t, std::string>{24, 24, 6, "24x4x3x3"},
                                         std::tuple<int64_t, int64_t, int64_t, std::string>{16, 8, 2, "8x8x3x3"}}) {
    const ConvSetup g = grouped(1, C, OC, G, 8, 8, 3, 3, 1, {1, 1, 1, 1}, true, false, false, kActs[0], 67);
    code = StatusCode::kOk;
    expect(error_of([&] { run(g, {to_blocked(g.X), g.W}, g.attrs); }, &code), {wshape, "group " + std::to_string(G)});
    EXPECT_EQ(code, StatusCode::kUnsupported);
  }
  // A strided 1x1 with pads.
  Attributes padded = pw.attrs;
  padded.set("strides", std::vector<int64_t>{2, 2});
  padded.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  code = StatusCode::kOk;
  expect(error_of([&] { run(pw, {Xb, pw.W}, padded); }, &code), {"pads"});
  EXPECT_EQ(code, StatusCode::kUnsupported);
  // A kernel larger than the padded plane: an empty output.
  const Tensor tiny = to_blocked(random_tensor({1, 16, 1, 1}, 66));
  Attributes nopad = dw.attrs;
  nopad.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  expect(error_of([&] { run(dw, {tiny, dw.W}, nopad); }), {"1x2x1x1x8", "empty output"});
}

}  // namespace
}  // namespace spindle
