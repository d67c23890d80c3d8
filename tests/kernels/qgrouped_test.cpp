// qgrouped_test.cpp — the narrow grouped int8 convolution
// (primitives/quant/qgrouped.h): the row loop at every ISA level against a
// direct sum over the unpacked weights, and QLinearConvNhwc taking that path
// for symmetric int8 weights with the bits of the reference QLinearConv.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "primitives/quant/qgrouped.h"
#include "spindle/cpu.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

struct GroupedCase {
  int64_t C, cg, k, stride, dilation, pad, H, W;
  bool x_signed;
};

const GroupedCase kCases[] = {
    {48, 8, 3, 1, 1, 1, 9, 10, false},  // RegNet's shape: 3 blocks of 16 lanes
    {24, 8, 3, 2, 1, 1, 11, 9, true},   // a half block, stride 2
    {32, 4, 3, 1, 2, 2, 8, 8, false},   // dilation 2
    {32, 16, 5, 2, 1, 2, 12, 13, true}, // 5x5, one group per block
    {20, 4, 1, 1, 1, 0, 5, 5, false},   // 1x1, a quarter block
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

int64_t out_size(int64_t in, const GroupedCase& c) {
  return (in + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
}

TEST(QGrouped, RowsMatchADirectSumAtEveryLevel) {
  using RowFn = void (*)(const kernels::QGroupedRow&);
  struct Fn {
    RowFn fn;
    bool vnni;
    const char* name;
  };
  std::vector<Fn> fns = {{&kernels::baseline::qgrouped_row, false, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx512) {
    fns.push_back({&kernels::avx512::qgrouped_row, false, "avx512"});
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni")) fns.push_back({&kernels::avx512::qgrouped_row, true, "avx512-vnni"});
  }
  for (const GroupedCase& c : kCases) {
    const int64_t taps = c.k * c.k, OH = out_size(c.H, c), OW = out_size(c.W, c);
    const std::vector<uint8_t> x = random_bytes(static_cast<size_t>(c.H * c.W * c.C), 7);
    const std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(c.C * c.cg * taps), 8);
    std::vector<int8_t> w(wb.size());
    std::memcpy(w.data(), wb.data(), w.size());
    const kernels::QGroupedWeights packed = kernels::qgrouped_pack(w.data(), c.C, c.cg, taps);
    const int32_t x_zp = c.x_signed ? -9 : 140;
    for (int64_t oh = 0; oh < OH; ++oh) {
      // The direct sum over taps inside the input.
      std::vector<int32_t> want(static_cast<size_t>(OW * c.C), 0);
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t m = 0; m < c.C; ++m) {
          int32_t s = 0;
          for (int64_t i = 0; i < c.k; ++i)
            for (int64_t j = 0; j < c.k; ++j) {
              const int64_t ih = oh * c.stride - c.pad + i * c.dilation, iw = ow * c.stride - c.pad + j * c.dilation;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              for (int64_t ch = 0; ch < c.cg; ++ch) {
                const uint8_t b = x[static_cast<size_t>((ih * c.W + iw) * c.C + m / c.cg * c.cg + ch)];
                const int32_t xv = c.x_signed ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
                s += (xv - x_zp) * w[static_cast<size_t>((m * c.cg + ch) * taps + i * c.k + j)];
              }
            }
          want[static_cast<size_t>(ow * c.C + m)] = s;
        }
      for (const Fn& f : fns) {
        std::vector<int32_t> got(static_cast<size_t>(OW * c.C), 12345);
        kernels::QGroupedRow a;
        a.x = x.data();
        a.x_signed = c.x_signed;
        a.x_zp = x_zp;
        a.H = c.H;
        a.W = c.W;
        a.C = c.C;
        a.oh = oh;
        a.OW = OW;
        a.kh = a.kw = c.k;
        a.sh = a.sw = c.stride;
        a.dh = a.dw = c.dilation;
        a.ph = a.pw = c.pad;
        a.w = &packed;
        a.vnni = f.vnni;
        a.acc = got.data();
        f.fn(a);
        ASSERT_EQ(got, want) << f.name << " C " << c.C << " cg " << c.cg << " row " << oh;
      }
    }
  }
}

Tensor to_nhwc(const Tensor& x) {
  return kernels::run_kernel_once(testing::spindle_node("ToNhwc", {}, 1), {x})[0];
}

TEST(QGrouped, QLinearConvNhwcTakesThePathWithTheReferenceBits) {
  for (const GroupedCase& c : kCases) {
    const int64_t taps = c.k * c.k;
    const Shape xs = {2, c.C, c.H, c.W}, ws = {c.C, c.cg, c.k, c.k};
    const std::vector<uint8_t> xb = random_bytes(static_cast<size_t>(shape_numel(xs)), 21);
    const std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(shape_numel(ws)), 22);
    std::vector<int8_t> wv(wb.size());
    std::memcpy(wv.data(), wb.data(), wv.size());
    Tensor x = c.x_signed ? Tensor::from_vector<int8_t>(xs, std::vector<int8_t>(xb.begin(), xb.end()))
                          : Tensor::from_vector<uint8_t>(xs, xb);
    const Tensor w = Tensor::from_vector<int8_t>(ws, wv);
    const Tensor xzp = c.x_signed ? Tensor::from_vector<int8_t>({}, {-4}) : Tensor::from_vector<uint8_t>({}, {120});
    const Tensor wzp = Tensor::from_vector<int8_t>({c.C}, std::vector<int8_t>(static_cast<size_t>(c.C), 0));
    std::vector<float> wsc(static_cast<size_t>(c.C));
    std::vector<int32_t> bias(static_cast<size_t>(c.C));
    for (int64_t m = 0; m < c.C; ++m) {
      wsc[static_cast<size_t>(m)] = 0.0007f * static_cast<float>(m + 3);
      bias[static_cast<size_t>(m)] = static_cast<int32_t>(m * 97 % 4001) - 2000;
    }
    const Tensor yzp = Tensor::from_vector<uint8_t>({}, {90});
    std::vector<Tensor> inputs = {x, Tensor::from_vector<float>({}, {0.04f}), xzp, w, Tensor::from_vector<float>({c.C}, wsc),
                                  wzp, Tensor::from_vector<float>({}, {0.6f}), yzp, Tensor::from_vector<int32_t>({c.C}, bias)};
    Attributes attrs;
    attrs.set("group", c.C / c.cg);
    attrs.set("strides", std::vector<int64_t>{c.stride, c.stride});
    attrs.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    attrs.set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
    const Tensor want = to_nhwc(kernels::run_kernel_once("QLinearConv", 10, attrs, inputs)[0]);
    kernels::NodeInfo node = testing::spindle_node("QLinearConvNhwc", attrs, 9);
    node.const_inputs = {nullptr, nullptr, nullptr, &w, nullptr, &wzp};
    // The grouped weights replace the GEMM's: the kernel's packed size is
    // theirs (for cg 4 and 8 the GEMM's panels, padded to 16 columns per
    // group, would be larger).
    const kernels::KernelFactory* factory = kernels::KernelRegistry::global().find("spindle", "QLinearConvNhwc", 1);
    ASSERT_NE(factory, nullptr);
    const size_t grouped_bytes = static_cast<size_t>((c.C + 15) / 16 * taps * (c.cg / 4) * 64 + c.C * 4);
    EXPECT_EQ((*factory)(node)->packed_bytes(), grouped_bytes);
    inputs[0] = to_nhwc(x);
    for (int threads : {1, 3}) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
      const Tensor got = kernels::run_kernel_once(node, inputs, pool.get())[0];
      ASSERT_EQ(got.shape(), want.shape());
      ASSERT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), static_cast<size_t>(got.numel())))
          << "C " << c.C << " cg " << c.cg << " threads " << threads;
    }
  }
}

}  // namespace
}  // namespace spindle
