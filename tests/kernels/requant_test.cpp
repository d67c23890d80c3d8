// requant_test.cpp — requant_row (primitives/quant/requant.h) at every ISA
// level this CPU runs, against its definition written out per element, ONNX
// Runtime's arithmetic: clamp(round_half_even(float(acc + bias) * scale) +
// zp, lo, hi) with the sum wrapping in int32 and the product in float32, a
// NaN product giving lo. Ties (scale 0.5 and 0.25 on odd sums), saturation both
// ways (int32 extremes, huge scales), infinite and NaN scales, int8 and
// uint8 outputs, a Relu's raised lower bound, per-value and per-row terms,
// lengths around the vector widths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "primitives/quant/requant.h"
#include "spindle/cpu.h"

namespace spindle::kernels {
namespace {

using RowFn = void (*)(const RequantRow&);

std::vector<std::pair<RowFn, const char*>> levels() {
  std::vector<std::pair<RowFn, const char*>> fns = {{&baseline::requant_row, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx2) fns.push_back({&avx2::requant_row, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512) fns.push_back({&avx512::requant_row, "avx512"});
  return fns;
}

int32_t defined(int32_t acc, int32_t bias, float scale, float zp, float lo, float hi) {
  const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias));
  const float v = static_cast<float>(sum) * scale;
  if (std::isnan(v)) return static_cast<int32_t>(lo);
  return static_cast<int32_t>(std::clamp(std::nearbyint(static_cast<double>(v)) + zp, double{lo}, double{hi}));
}

TEST(RequantRow, EveryLevelMatchesTheDefinition) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> small(-3000, 3000), any(std::numeric_limits<int32_t>::min(),
                                                                  std::numeric_limits<int32_t>::max());
  std::uniform_real_distribution<float> sd(1e-4f, 0.2f);
  const float specials[] = {0.5f, 0.25f, 1e30f, -0.5f, std::numeric_limits<float>::infinity(), std::nanf(""), 0.0f};
  for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 64, 100}) {
    for (int variant = 0; variant < 8; ++variant) {
      const bool y_signed = variant & 1, relu = variant & 2, per_value = !(variant & 4);
      std::vector<int32_t> acc(static_cast<size_t>(n)), bias(static_cast<size_t>(n));
      std::vector<float> scale(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        acc[i] = i % 9 == 4 ? any(rng) : small(rng);
        bias[i] = i % 5 == 1 ? any(rng) / 2 : small(rng);
        scale[i] = i % 6 == 2 ? specials[(i / 6 + variant) % 7] : sd(rng);
      }
      const float zp = y_signed ? -7 : 129;
      const float lo = relu ? zp : y_signed ? -128 : 0, hi = y_signed ? 127 : 255;
      for (const auto& [fn, name] : levels()) {
        std::vector<uint8_t> y(static_cast<size_t>(n + 1), 0x3C);
        fn(RequantRow{.acc = acc.data(), .n = n, .bias = bias.data(), .scale = scale.data(), .per_value = per_value,
                      .zp = zp, .lo = lo, .hi = hi, .y = y.data(), .y_signed = y_signed});
        for (int64_t i = 0; i < n; ++i) {
          const int64_t t = per_value ? i : 0;
          const int32_t want = defined(acc[i], bias[t], scale[t], zp, lo, hi);
          const int32_t got = y_signed ? int32_t{static_cast<int8_t>(y[i])} : int32_t{y[i]};
          ASSERT_EQ(got, want) << name << " n=" << n << " variant " << variant << " at " << i << ": acc " << acc[i]
                               << " bias " << bias[t] << " scale " << scale[t];
        }
        ASSERT_EQ(y[n], 0x3C) << name << " wrote past n=" << n;
      }
    }
  }
}

// Values where float32 and double give different results: 2^24 + 1
// converts to 2^24 (then a tie at 0.5), INT32_MAX + 1 wraps to INT32_MIN, and
// 3 * float(1/6) is exactly 0.5 in float32. Every level gives the float32
// results, ONNX Runtime's.
TEST(RequantRow, FloatArithmeticAtEveryLevel) {
  const std::vector<int32_t> acc = {16777217, std::numeric_limits<int32_t>::max(), 3, -16777217};
  const std::vector<int32_t> bias = {0, 1, 0, 0};
  const std::vector<float> scale = {0x1p-25f, 0x1p-31f, 1.0f / 6.0f, 0x1p-25f};
  const std::vector<int32_t> want = {10, 9, 10, 10};
  for (const auto& [fn, name] : levels()) {
    std::vector<uint8_t> y(4, 0);
    fn(RequantRow{.acc = acc.data(), .n = 4, .bias = bias.data(), .scale = scale.data(), .per_value = true, .zp = 10,
                  .lo = 0, .hi = 255, .y = y.data(), .y_signed = false});
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(int32_t{y[i]}, want[i]) << name << " at " << i;
  }
}

}  // namespace
}  // namespace spindle::kernels
