// qdq_row_test.cpp — qlinear_binary_row, qlinear_gate_row and quantize_row
// (primitives/quant/requant.h) at every ISA level this CPU runs, against
// the arithmetic written out per element: for the product and the gate the
// unfused QDQ ops (DequantizeLinear, the float Mul, then QuantizeLinear's
// float division, round half to even, zero point and saturation, NaN -> 0),
// for the sum ONNX Runtime's QLinearAdd (the scales' ratios and fused
// multiply-adds; NaN and values past int32 saturate low, one value for all
// of b as well as one per element). Every pair of 8-bit inputs, scales
// that put quotients exactly on half-integers (ties), random scales, an
// output scale whose reciprocal overflows, a Relu's raised lower bound,
// int8 and uint8, gates per value and per row with infinities and NaN.
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

using RowFn = void (*)(const QuantRow&);

std::vector<std::pair<RowFn, const char*>> levels(bool gate) {
  std::vector<std::pair<RowFn, const char*>> fns;
  fns.push_back({gate ? &baseline::qlinear_gate_row : &baseline::qlinear_binary_row, "baseline"});
  if (detected_isa_level() >= IsaLevel::kAvx2)
    fns.push_back({gate ? &avx2::qlinear_gate_row : &avx2::qlinear_binary_row, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512)
    fns.push_back({gate ? &avx512::qlinear_gate_row : &avx512::qlinear_binary_row, "avx512"});
  return fns;
}

// QuantizeLinear of a float value.
int32_t quantize_def(float v, float sy, float zy, float lo, float hi) {
  const float q = v / sy;
  if (std::isnan(q)) return 0;
  return static_cast<int32_t>(std::clamp(std::nearbyint(static_cast<double>(q)) + zy, double{lo}, double{hi}));
}

int32_t value(const std::vector<uint8_t>& x, int64_t i, bool sign) {
  return sign ? int32_t{static_cast<int8_t>(x[i])} : int32_t{x[i]};
}

struct Scales {
  float sa, sb, sy;
};

// ONNX Runtime's QLinearAdd of one pair (its x86 kernel as its build
// computes it): k = zy - fma(ra, za, rb zb), then fma(a, ra, fma(b, rb, k)),
// converted to int32 (NaN and values past int32: INT32_MIN), saturated.
int32_t onnx_runtime_add(float a, float b, const Scales& s, float za, float zb, float zy, float lo, float hi) {
  const float ra = s.sa / s.sy, rb = s.sb / s.sy;
  const float k = zy - std::fma(ra, za, rb * zb);
  const float r = std::nearbyint(std::fma(a, ra, std::fma(b, rb, k)));
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return static_cast<int32_t>(lo);
  return static_cast<int32_t>(std::clamp(r, lo, hi));
}

TEST(QdqRow, BinaryEveryPairEveryLevel) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> sd(1e-3f, 0.1f);
  // Ties: sy = 2 sa = 2 sb puts every other quotient on a half-integer.
  // Scales near the float maximum: infinite dequantized values, NaN sums
  // (inf - inf) and infinite quotients.
  std::vector<Scales> scales = {{0.05f, 0.05f, 0.1f}, {0.25f, 0.5f, 1.0f}, {0.02f, 0.03f, 1e-39f},
                                {3e36f, 3e36f, 1.0f},  {3e36f, 0.1f, 3e36f}};
  for (int t = 0; t < 4; ++t) scales.push_back({sd(rng), sd(rng), sd(rng)});
  std::vector<uint8_t> a(65536 + 5), b(65536 + 5);
  for (int64_t i = 0; i < 65536; ++i) a[i] = static_cast<uint8_t>(i & 255), b[i] = static_cast<uint8_t>(i >> 8);
  for (int64_t i = 65536; i < 65541; ++i) a[i] = static_cast<uint8_t>(i * 37), b[i] = static_cast<uint8_t>(i * 91);
  // Not multiples of 16: the masked tail too; 65501 = 64 * 1023 + 16 + 13
  // (AVX-512: 64 values a step, then 16, then masked).
  for (const int64_t n : {int64_t{65541}, int64_t{65501}})
  for (const Scales& s : scales)
    for (int variant = 0; variant < 8; ++variant) {
      const bool sign = variant & 1, multiply = variant & 2, relu = variant & 4;
      const float za = sign ? 3 : 131, zb = sign ? -9 : 120, zy = sign ? 5 : 128;
      const float lo = relu ? zy : sign ? -128 : 0, hi = sign ? 127 : 255;
      for (const auto& [fn, name] : levels(false)) {
        std::vector<uint8_t> y(static_cast<size_t>(n + 1), 0x3C);
        QuantRow row{.n = n, .sign = sign, .a = a.data(), .b = b.data(), .y = y.data(), .a_scale = s.sa, .a_zero = za,
                     .b_scale = s.sb, .b_zero = zb, .y_scale = s.sy, .y_zero = zy, .lo = lo, .hi = hi};
        row.multiply = multiply;
        fn(row);
        for (int64_t i = 0; i < n; ++i) {
          const float x = (static_cast<float>(value(a, i, sign)) - za) * s.sa;
          const float w = (static_cast<float>(value(b, i, sign)) - zb) * s.sb;
          const int32_t want = multiply ? quantize_def(x * w, s.sy, zy, lo, hi)
                                        : onnx_runtime_add(static_cast<float>(value(a, i, sign)),
                                                           static_cast<float>(value(b, i, sign)), s, za, zb, zy, lo, hi);
          ASSERT_EQ(value(y, i, sign), want) << name << " variant " << variant << " sy " << s.sy << " at " << i;
        }
        ASSERT_EQ(y[n], 0x3C) << name << " wrote past n";
      }
    }
}

// The sum with one b for every a (a row of a broadcast QLinearAdd): the
// same arithmetic, b's term computed once.
TEST(QdqRow, BinaryAddOneBEveryLevel) {
  const std::vector<Scales> scales = {{0.05f, 0.05f, 0.1f}, {0.013f, 0.041f, 0.029f}, {3e36f, 3e36f, 1.0f}};
  std::vector<uint8_t> a(4099);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 3);
  for (const Scales& s : scales)
    for (int variant = 0; variant < 4; ++variant) {
      const bool sign = variant & 1, relu = variant & 2;
      const float za = sign ? -4 : 125, zb = sign ? 7 : 131, zy = sign ? -2 : 120;
      const float lo = relu ? zy : sign ? -128 : 0, hi = sign ? 127 : 255;
      for (const uint8_t bv : {uint8_t{0}, uint8_t{97}, uint8_t{200}})
        for (const auto& [fn, name] : levels(false)) {
          std::vector<uint8_t> y(a.size() + 1, 0x3C);
          QuantRow row{.n = static_cast<int64_t>(a.size()), .sign = sign, .a = a.data(), .b = &bv, .y = y.data(),
                       .a_scale = s.sa, .a_zero = za, .b_scale = s.sb, .b_zero = zb, .y_scale = s.sy, .y_zero = zy,
                       .lo = lo, .hi = hi};
          row.b_scalar = true;
          fn(row);
          const std::vector<uint8_t> one{bv};
          for (size_t i = 0; i < a.size(); ++i)
            ASSERT_EQ(value(y, static_cast<int64_t>(i), sign),
                      onnx_runtime_add(static_cast<float>(value(a, static_cast<int64_t>(i), sign)),
                                       static_cast<float>(value(one, 0, sign)), s, za, zb, zy, lo, hi))
                << name << " variant " << variant << " b " << int{bv} << " at " << i;
          ASSERT_EQ(y[a.size()], 0x3C) << name << " wrote past n";
        }
    }
}

TEST(QdqRow, GateEveryLevel) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> gd(-2.0f, 2.0f);
  const int64_t n = 4099;
  std::vector<uint8_t> a(static_cast<size_t>(n));
  std::vector<float> gate(static_cast<size_t>(n));
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<uint8_t>(i * 53 + 7);
    gate[i] = i % 97 == 3 ? inf : i % 89 == 5 ? std::nanf("") : i % 7 == 0 ? 0.5f : gd(rng);
  }
  for (float sy : {0.05f, 0.0125f, 0.0371f, 1e-39f})
    for (int variant = 0; variant < 8; ++variant) {
      const bool sign = variant & 1, per_value = variant & 2, relu = variant & 4;
      const float sa = 0.025f, za = sign ? -4 : 125, zy = sign ? 2 : 126;
      const float lo = relu ? zy : sign ? -128 : 0, hi = sign ? 127 : 255;
      for (const auto& [fn, name] : levels(true)) {
        std::vector<uint8_t> y(static_cast<size_t>(n), 0);
        QuantRow row{.n = n, .sign = sign, .a = a.data(), .y = y.data(), .a_scale = sa, .a_zero = za, .y_scale = sy,
                     .y_zero = zy, .lo = lo, .hi = hi};
        row.gate = gate.data() + 1;
        row.gate_per_value = per_value;
        row.n = n - 1;
        fn(row);
        for (int64_t i = 0; i < n - 1; ++i) {
          const float g = per_value ? gate[i + 1] : gate[1];
          const int32_t want = quantize_def(g * ((static_cast<float>(value(a, i, sign)) - za) * sa), sy, zy, lo, hi);
          ASSERT_EQ(value(y, i, sign), want) << name << " variant " << variant << " sy " << sy << " at " << i;
        }
      }
    }
}

// quantize_row (QuantizeLinear per tensor): random values, half-integer
// quotients (ties), values far outside the range, infinities and NaN;
// 64-value steps, a 16-value step and the masked tail (n = 64 * 63 + 16 + 5).
TEST(QdqRow, QuantizeEveryLevel) {
  std::vector<std::pair<RowFn, const char*>> fns = {{&baseline::quantize_row, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx2) fns.push_back({&avx2::quantize_row, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512) fns.push_back({&avx512::quantize_row, "avx512"});
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> xd(-4.0f, 4.0f);
  const int64_t n = 64 * 63 + 16 + 5;
  const float inf = std::numeric_limits<float>::infinity();
  for (float sy : {0.05f, 0.0125f, 0.0371f, 1e-39f, 3e-3f})
    for (int variant = 0; variant < 4; ++variant) {
      const bool sign = variant & 1, relu = variant & 2;
      const float zy = sign ? -120 : 2;  // quotients up to about 250 in range: ties the product can miss
      const float lo = relu ? zy : sign ? -128 : 0, hi = sign ? 127 : 255;
      std::vector<float> a(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        // A half-integer quotient, about; about one a 64-value step, as a
        // step with an exact tie (or NaN) divides every lane.
        const float tie = (static_cast<float>(i * 7 % 600) - 300.0f + 0.5f) * sy;
        a[i] = i % 811 == 7 ? inf : i % 823 == 9 ? -inf : i % 827 == 11 ? std::nanf("") : i % 53 == 0 ? tie
             : i % 97 == 1 ? xd(rng) * 1e30f : xd(rng);
      }
      // The first 64 values with no tie, NaN or infinity: a whole step takes the clamp alone.
      for (int64_t i = 0; i < 64; ++i) a[i] = xd(rng) * 0.1f;
      for (const auto& [fn, name] : fns) {
        std::vector<uint8_t> y(static_cast<size_t>(n + 1), 0x3C);
        QuantRow row{.n = n, .sign = sign, .a = a.data(), .y = y.data(), .y_scale = sy, .y_zero = zy, .lo = lo,
                     .hi = hi};
        fn(row);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(value(y, i, sign), quantize_def(a[i], sy, zy, lo, hi))
              << name << " variant " << variant << " sy " << sy << " at " << i << " x " << a[i];
        ASSERT_EQ(y[n], 0x3C) << name << " wrote past n";
      }
    }
}

}  // namespace
}  // namespace spindle::kernels
