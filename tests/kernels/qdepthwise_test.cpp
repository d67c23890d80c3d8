// qdepthwise_test.cpp — the depthwise int8 convolution on NHWC input
// (dw_requant_row, primitives/quant/requant.h): the row at every ISA level
// against a direct sum requantized in float32, and QLinearConvNhwc with
// depthwise weights against the reference QLinearConv (weights given at run
// time), bitwise, at 1 and 3 threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "primitives/quant/dw_q8.h"
#include "primitives/quant/requant.h"
#include "spindle/cpu.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

struct DwCase {
  int64_t C, kh, kw, stride, dilation, H, W;
  int64_t pads[4];  // top, left, bottom, right
  bool x_signed, w_signed, y_signed, relu;
  bool per_channel;  // w_scale and w_zero_point one per channel (else one value)
};

const DwCase kCases[] = {
    {16, 3, 3, 1, 1, 14, 13, {1, 1, 1, 1}, false, true, false, true, true},    // one register of channels
    {17, 3, 3, 2, 1, 11, 12, {1, 1, 1, 1}, false, true, false, false, true},   // a 1-channel tail, stride 2
    {3, 3, 3, 1, 1, 7, 9, {1, 1, 1, 1}, true, true, true, false, false},       // fewer channels than a register
    {40, 5, 5, 2, 1, 13, 15, {2, 2, 2, 2}, false, false, false, true, true},   // 5x5, uint8 weights
    {33, 3, 3, 1, 2, 10, 11, {2, 2, 2, 2}, true, false, true, true, false},    // dilation 2
    {72, 3, 3, 1, 1, 6, 7, {0, 1, 1, 0}, false, true, true, false, true},      // uneven pads, int8 output
    {20, 7, 7, 1, 1, 5, 6, {3, 3, 3, 3}, false, true, false, false, true},     // kernel wider than the image
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

int64_t out_size(int64_t in, int64_t k, const DwCase& c, int64_t pad_sum) {
  return (in + pad_sum - c.dilation * (k - 1) - 1) / c.stride + 1;
}

int32_t value(uint8_t b, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
}

TEST(QDepthwise, RowsMatchADirectSumRequantizedAtEveryLevel) {
  using RowFn = void (*)(const kernels::DwRequantRow&);
  std::vector<std::pair<RowFn, const char*>> fns = {{&kernels::baseline::dw_requant_row, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx2) fns.push_back({&kernels::avx2::dw_requant_row, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512) fns.push_back({&kernels::avx512::dw_requant_row, "avx512"});
  for (const DwCase& c : kCases) {
    const int64_t taps = c.kh * c.kw;
    const int64_t OH = out_size(c.H, c.kh, c, c.pads[0] + c.pads[2]), OW = out_size(c.W, c.kw, c, c.pads[1] + c.pads[3]);
    const std::vector<uint8_t> x = random_bytes(static_cast<size_t>(c.H * c.W * c.C), 7);
    std::vector<int32_t> w(static_cast<size_t>(taps * c.C)), bias(static_cast<size_t>(c.C));
    std::vector<float> scale(static_cast<size_t>(c.C));
    std::mt19937 rng(9);
    for (auto& v : w) v = static_cast<int32_t>(rng() % 511) - 255;  // w - w_zp spans both types' range
    for (int64_t m = 0; m < c.C; ++m) {
      bias[static_cast<size_t>(m)] = static_cast<int32_t>(rng() % 40001) - 20000;
      scale[static_cast<size_t>(m)] = 0.0001f * static_cast<float>(m + 1) + 0.00003f;
    }
    const int32_t x_zp = c.x_signed ? -9 : 140;
    const float zp = c.y_signed ? -3 : 120, lo = c.y_signed ? -128 : 0, hi = c.y_signed ? 127 : 255;
    for (int64_t oh = 0; oh < OH; ++oh) {
      std::vector<uint8_t> want(static_cast<size_t>(OW * c.C));
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t m = 0; m < c.C; ++m) {
          int32_t s = 0;
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              const int64_t ih = oh * c.stride - c.pads[0] + i * c.dilation, iw = ow * c.stride - c.pads[1] + j * c.dilation;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              s += (value(x[static_cast<size_t>((ih * c.W + iw) * c.C + m)], c.x_signed) - x_zp) *
                   w[static_cast<size_t>((i * c.kw + j) * c.C + m)];
            }
          // requant.h's definition: the product in float32.
          const float f = static_cast<float>(s + bias[static_cast<size_t>(m)]) * scale[static_cast<size_t>(m)];
          const double v = std::nearbyint(static_cast<double>(f)) + zp;
          want[static_cast<size_t>(ow * c.C + m)] =
              static_cast<uint8_t>(static_cast<int32_t>(std::clamp(v, double{lo}, double{hi})));
        }
      for (const auto& [fn, name] : fns) {
        std::vector<uint8_t> got(static_cast<size_t>(OW * c.C) + 1, 0xA5);  // one guard byte past the row
        std::vector<int32_t> acc(static_cast<size_t>(OW * c.C));
        kernels::DwRequantRow a;
        a.row.x = x.data();
        a.row.x_signed = c.x_signed;
        a.row.x_zp = x_zp;
        a.row.H = c.H;
        a.row.W = c.W;
        a.row.C = c.C;
        a.row.oh = oh;
        a.row.OW = OW;
        a.row.kh = c.kh;
        a.row.kw = c.kw;
        a.row.sh = a.row.sw = c.stride;
        a.row.dh = a.row.dw = c.dilation;
        a.row.ph = c.pads[0];
        a.row.pw = c.pads[1];
        a.row.w = w.data();
        a.row.acc = acc.data();
        a.bias = bias.data();
        a.scale = scale.data();
        a.zp = zp;
        a.lo = lo;
        a.hi = hi;
        a.y = got.data();
        a.y_signed = c.y_signed;
        fn(a);
        EXPECT_EQ(got.back(), 0xA5) << name << " wrote past the row";
        got.pop_back();
        ASSERT_EQ(got, want) << name << " C " << c.C << " k " << c.kh << " row " << oh;
      }
    }
  }
}

Tensor to_nhwc(const Tensor& x) {
  return kernels::run_kernel_once(testing::spindle_node("ToNhwc", {}, 1), {x})[0];
}

template <class T>
Tensor bytes_tensor(const Shape& s, const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size());
  std::memcpy(v.data(), b.data(), b.size());
  return Tensor::from_vector<T>(s, v);
}

// QLinearConvNhwc against the reference QLinearConv. centered: weight zero
// points that leave every w - w_zp inside int8 (0 for int8 weights, 128 for
// uint8), given as constants when the kernel is created, as dw_q8's
// packing needs; otherwise nonzero ones given at run time.
void expect_reference_bits(const DwCase& c, bool centered) {
  {
    const Shape xs = {2, c.C, c.H, c.W}, ws = {c.C, 1, c.kh, c.kw};
    const int64_t nq = c.per_channel ? c.C : 1;
    const std::vector<uint8_t> xb = random_bytes(static_cast<size_t>(shape_numel(xs)), 21);
    const std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(shape_numel(ws)), 22);
    const std::vector<uint8_t> zb = random_bytes(static_cast<size_t>(nq), 23);
    const Tensor x = c.x_signed ? bytes_tensor<int8_t>(xs, xb) : bytes_tensor<uint8_t>(xs, xb);
    const Tensor w = c.w_signed ? bytes_tensor<int8_t>(ws, wb) : bytes_tensor<uint8_t>(ws, wb);
    std::vector<uint8_t> zps(static_cast<size_t>(nq));
    for (size_t i = 0; i < zps.size(); ++i)  // nonzero: -8..7 for int8, 120..135 for uint8
      zps[i] = c.w_signed ? static_cast<uint8_t>(static_cast<int8_t>(zb[i] % 16) - 8) : static_cast<uint8_t>(120 + zb[i] % 16);
    if (centered) std::fill(zps.begin(), zps.end(), c.w_signed ? 0 : 128);
    const Shape zs = c.per_channel ? Shape{c.C} : Shape{};
    const Tensor wzp = c.w_signed ? bytes_tensor<int8_t>(zs, zps) : bytes_tensor<uint8_t>(zs, zps);
    const Tensor xzp = c.x_signed ? Tensor::from_vector<int8_t>({}, {-4}) : Tensor::from_vector<uint8_t>({}, {120});
    const Tensor yzp = c.y_signed ? Tensor::from_vector<int8_t>({}, {5}) : Tensor::from_vector<uint8_t>({}, {90});
    std::vector<float> wsc(static_cast<size_t>(nq));
    for (int64_t m = 0; m < nq; ++m) wsc[static_cast<size_t>(m)] = 0.0011f * static_cast<float>(m % 7 + 3);
    std::vector<int32_t> bias(static_cast<size_t>(c.C));
    for (int64_t m = 0; m < c.C; ++m) bias[static_cast<size_t>(m)] = static_cast<int32_t>(m * 97 % 4001) - 2000;
    std::vector<Tensor> inputs = {x, Tensor::from_vector<float>({}, {0.04f}), xzp, w, Tensor::from_vector<float>(zs, wsc),
                                  wzp, Tensor::from_vector<float>({}, {0.6f}), yzp, Tensor::from_vector<int32_t>({c.C}, bias)};
    Attributes attrs;
    attrs.set("group", c.C);
    attrs.set("strides", std::vector<int64_t>{c.stride, c.stride});
    attrs.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    attrs.set("pads", std::vector<int64_t>(std::begin(c.pads), std::end(c.pads)));
    const Tensor want_nchw = kernels::run_kernel_once("QLinearConv", 10, attrs, inputs)[0];
    // The reference output is not constant (the case exercises requantization).
    const uint8_t* r = static_cast<const uint8_t*>(want_nchw.raw_data());
    const auto [rlo, rhi] = std::minmax_element(r, r + want_nchw.numel());
    ASSERT_NE(*rlo, *rhi);
    if (c.relu) attrs.set("activation", std::string("Relu"));
    // The fused Relu: the reference output clamped below at y_zero_point.
    Tensor want = to_nhwc(want_nchw);
    if (c.relu) {
      uint8_t* p = static_cast<uint8_t*>(want.raw_mutable_data());
      for (int64_t i = 0; i < want.numel(); ++i)
        if (c.y_signed) p[i] = static_cast<uint8_t>(std::max<int8_t>(static_cast<int8_t>(p[i]), 5));
        else p[i] = std::max<uint8_t>(p[i], 90);
    }
    kernels::NodeInfo node = testing::spindle_node("QLinearConvNhwc", attrs, 9);
    node.const_inputs = {nullptr, nullptr, nullptr, &w};
    if (centered) node.const_inputs = {nullptr, nullptr, nullptr, &w, nullptr, &wzp};
    inputs[0] = to_nhwc(x);
    for (int threads : {1, 3}) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
      const Tensor got = kernels::run_kernel_once(node, inputs, pool.get())[0];
      ASSERT_EQ(got.shape(), want.shape());
      ASSERT_EQ(got.dtype(), want.dtype());
      ASSERT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), static_cast<size_t>(got.numel())))
          << "C " << c.C << " k " << c.kh << " stride " << c.stride << " threads " << threads
          << (centered ? " centered weights" : "");
    }
  }
}

TEST(QDepthwise, QLinearConvNhwcMatchesTheReferenceBitwise) {
  for (const DwCase& c : kCases) expect_reference_bits(c, false);
}

// The shapes of MobileNet / ShuffleNet / EfficientNet layers and the edges
// of dw_q8's runs: channel counts with 2 to 6 factors of 2 (weight periods
// of 1 to 16 blocks), several pixels to a block, a row's last block partial,
// strides 1 to 3 (phases), dilation, pads wider than the kernel's reach,
// channel counts dw_q8 does not take (odd, 2 mod 4).
const DwCase kCenteredCases[] = {
    {16, 3, 3, 1, 1, 12, 12, {1, 1, 1, 1}, false, true, false, true, true},
    {24, 3, 3, 2, 1, 13, 14, {1, 1, 1, 1}, false, true, false, false, true},
    {72, 5, 5, 2, 1, 14, 15, {2, 2, 2, 2}, true, true, true, true, true},
    {960, 5, 5, 1, 1, 7, 7, {2, 2, 2, 2}, false, true, false, true, true},
    {120, 5, 5, 1, 1, 9, 6, {2, 2, 2, 2}, false, false, false, false, false},
    {36, 3, 3, 3, 1, 10, 11, {1, 1, 1, 1}, true, true, false, false, true},
    {40, 3, 3, 1, 2, 9, 10, {2, 2, 2, 2}, false, true, true, true, true},
    {48, 3, 3, 1, 1, 4, 5, {3, 3, 0, 1}, false, true, false, false, true},
    {64, 7, 7, 2, 1, 11, 9, {3, 3, 3, 3}, true, false, true, false, true},
    {17, 3, 3, 1, 1, 6, 7, {1, 1, 1, 1}, false, true, false, false, true},
    {58, 3, 3, 2, 1, 12, 11, {1, 1, 1, 1}, true, true, false, true, true},
    {116, 3, 3, 1, 1, 7, 8, {1, 1, 1, 1}, false, true, true, false, true},
    {6, 3, 3, 2, 1, 8, 9, {1, 1, 1, 1}, false, true, false, false, true},
};

TEST(QDepthwise, CenteredWeightsMatchTheReferenceBitwise) {
  for (const DwCase& c : kCenteredCases) expect_reference_bits(c, true);
  for (const DwCase& c : kCases) expect_reference_bits(c, true);
}

// A window wider than the unpadded image: an empty output (or the
// window's own error), never a crash, with the weights packed.
TEST(QDepthwise, WindowWiderThanTheImageIsEmptyOrAnError) {
  const Tensor x = Tensor::from_vector<uint8_t>({1, 2, 2, 16}, std::vector<uint8_t>(64, 7));
  const Tensor w = Tensor::from_vector<int8_t>({16, 1, 3, 3}, std::vector<int8_t>(144, 3));
  const Tensor wzp = Tensor::from_vector<int8_t>({16}, std::vector<int8_t>(16, 0));
  Attributes attrs;
  attrs.set("group", int64_t{16});
  kernels::NodeInfo node = testing::spindle_node("QLinearConvNhwc", attrs, 8);
  node.const_inputs = {nullptr, nullptr, nullptr, &w, nullptr, &wzp};
  const std::vector<Tensor> inputs = {x,   Tensor::from_vector<float>({}, {0.1f}), Tensor::from_vector<uint8_t>({}, {3}),
                                      w,   Tensor::from_vector<float>({16}, std::vector<float>(16, 0.01f)), wzp,
                                      Tensor::from_vector<float>({}, {0.2f}), Tensor::from_vector<uint8_t>({}, {9})};
  try {
    const Tensor y = kernels::run_kernel_once(node, inputs)[0];
    EXPECT_EQ(y.numel(), 0);
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("QLinearConvNhwc"));
  }
}

// dw_q8_row at every ISA level against a direct sum: runs into one padded
// input row per tap (stride 1, no padding), weights packed by dw_q8_pack.
TEST(QDepthwise, PackedRowsMatchADirectSumAtEveryLevel) {
  using RowFn = void (*)(const kernels::DwQ8Row&);
  std::vector<std::pair<RowFn, const char*>> fns = {{&kernels::baseline::dw_q8_row, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx2) fns.push_back({&kernels::avx2::dw_q8_row, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512) fns.push_back({&kernels::avx512::dw_q8_row, "avx512"});
  {  // a block would hold mostly padding: not packed
    const std::vector<uint8_t> wb(36, 1);
    const std::vector<int32_t> wzp(12, 0);
    EXPECT_TRUE(kernels::dw_q8_pack(wb.data(), true, wzp.data(), 12, 3).empty());
    EXPECT_TRUE(kernels::dw_q8_pack(wb.data(), true, wzp.data(), 3, 9).empty());
  }
  // Blocks tiling the run (4, 16, 24, 40, 72) and blocks of one pixel (58,
  // 64, 116, 200, 960).
  for (const int64_t C : {4, 16, 24, 40, 58, 64, 72, 116, 200, 960}) {
    const int64_t taps = 9, OW = 11, n = OW * C;
    const std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(C * taps), 31);
    const std::vector<int32_t> wzp(static_cast<size_t>(C), 0);
    const kernels::DwQ8Weights w = kernels::dw_q8_pack(wb.data(), true, wzp.data(), C, taps);
    ASSERT_FALSE(w.empty()) << "C " << C;
    // Tap t reads bytes [t * C, t * C + n) of x (x padded for the last block).
    const std::vector<uint8_t> x = random_bytes(static_cast<size_t>(taps * C + n + 64), 32);
    std::vector<const uint8_t*> runs;
    for (int64_t t = 0; t < taps; ++t) runs.push_back(x.data() + t * C);
    std::vector<int32_t> bias(static_cast<size_t>(C)), bias_lanes(static_cast<size_t>(w.blocks * 64));
    std::vector<float> scale(static_cast<size_t>(C)), scale_lanes(static_cast<size_t>(w.blocks * 64));
    for (int64_t c = 0; c < C; ++c) {
      bias[static_cast<size_t>(c)] = static_cast<int32_t>(c * 131 % 5001) - 2500;
      scale[static_cast<size_t>(c)] = 0.0007f * static_cast<float>(c % 5 + 1);
    }
    const int32_t x_zp = 100;
    kernels::dw_q8_lanes(w, bias.data(), scale.data(), x_zp, false, bias_lanes.data(), scale_lanes.data());
    std::vector<uint8_t> want(static_cast<size_t>(n));
    for (int64_t f = 0; f < n; ++f) {
      const int64_t c = f % C;
      int32_t s = bias[static_cast<size_t>(c)];
      for (int64_t t = 0; t < taps; ++t)
        s += (int32_t{x[static_cast<size_t>(t * C + f)]} - x_zp) * static_cast<int8_t>(wb[static_cast<size_t>(c * taps + t)]);
      const float v = static_cast<float>(s) * scale[static_cast<size_t>(c)];
      want[static_cast<size_t>(f)] = static_cast<uint8_t>(std::clamp(std::nearbyint(double{v}) + 7, 0.0, 255.0));
    }
    for (const auto& [fn, name] : fns) {
      std::vector<uint8_t> got(static_cast<size_t>(n) + 1, 0xA5);
      kernels::DwQ8Row a;
      a.runs = runs.data();
      a.w = &w;
      a.n = n;
      a.in_step = w.step;  // the runs in the output's order
      a.bias_lanes = bias_lanes.data();
      a.scale_lanes = scale_lanes.data();
      a.zp = 7;
      a.lo = 0;
      a.hi = 255;
      a.y = got.data();
      fn(a);
      EXPECT_EQ(got.back(), 0xA5) << name << " wrote past the row";
      got.pop_back();
      ASSERT_EQ(got, want) << name << " C " << C;
    }
  }
}

}  // namespace
}  // namespace spindle
