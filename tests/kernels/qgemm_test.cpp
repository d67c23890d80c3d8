// qgemm_test.cpp — the 8-bit integer GEMM (primitives/gemm/qgemm.h) at every
// ISA level this CPU runs (AVX-512 with and without VNNI), against the
// scalar formula: random and edge shapes, int8 / uint8 A and B, per-tensor
// and per-column zero points, column ranges, the dequantizing and the
// requantizing epilogues.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "primitives/gemm/qgemm.h"
#include "primitives/gemm/qgemm_isa.h"
#include "spindle/cpu.h"
#include "spindle/thread_pool.h"

namespace spindle::kernels::nn {
namespace {

struct Level {
  int level;
  bool vnni;
  const char* name;
};

std::vector<Level> levels() {
  std::vector<Level> out = {{0, false, "baseline"}};
  if (detected_isa_level() >= IsaLevel::kAvx2) out.push_back({1, false, "avx2"});
  if (detected_isa_level() >= IsaLevel::kAvx512) {
    out.push_back({2, false, "avx512"});
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni")) out.push_back({2, true, "avx512-vnni"});
  }
  return out;
}

struct Problem {
  int64_t m, n, k;
  bool a_signed, b_signed, per_column;
  std::vector<uint8_t> a, b;  // bytes; int8 when signed
  int32_t za = 0;
  std::vector<int32_t> zb;

  int32_t av(int64_t i, int64_t p) const { return a_signed ? static_cast<int8_t>(a[i * k + p]) : a[i * k + p]; }
  int32_t bv(int64_t p, int64_t j) const { return b_signed ? static_cast<int8_t>(b[p * n + j]) : b[p * n + j]; }
  int32_t want(int64_t i, int64_t j) const {
    int64_t s = 0;
    const int32_t z = per_column ? zb[j] : zb[0];
    for (int64_t p = 0; p < k; ++p) s += static_cast<int64_t>(av(i, p) - za) * (bv(p, j) - z);
    return static_cast<int32_t>(s);
  }
};

Problem make(std::mt19937& rng, int64_t m, int64_t n, int64_t k, bool as, bool bs, bool per_column, bool extremes) {
  Problem p{m, n, k, as, bs, per_column, {}, {}, 0, {}};
  std::uniform_int_distribution<int> byte(0, 255), two(0, 1);
  p.a.resize(static_cast<size_t>(m * k));
  p.b.resize(static_cast<size_t>(k * n));
  // Extremes: every byte the most negative or largest value of its type
  // (where pmaddubsw would saturate).
  for (auto& v : p.a) v = static_cast<uint8_t>(extremes ? (two(rng) ? 0x7F : 0x80) ^ (as ? 0 : 0x80) : byte(rng));
  for (auto& v : p.b) v = static_cast<uint8_t>(extremes ? (two(rng) ? 0x7F : 0x80) ^ (bs ? 0 : 0x80) : byte(rng));
  auto zp = [&](bool is_signed) { return is_signed ? byte(rng) - 128 : byte(rng); };
  p.za = zp(as);
  p.zb.resize(static_cast<size_t>(per_column ? n : 1));
  for (auto& z : p.zb) z = zp(bs);
  return p;
}

// The problem's operands for qgemm, columns [c0, c1); no output set.
QGemmArgs args_for(const Problem& p, const QGemmPackedB& packed, int64_t c0, int64_t c1) {
  QGemmArgs args;
  args.a = p.a.data();
  args.a_signed = p.a_signed;
  args.lda = p.k;
  args.a_zero_point = p.za;
  args.m = p.m;
  args.b = &packed;
  args.b_zero_points = p.zb.data();
  args.per_column_b_zero_points = p.per_column;
  args.col_begin = c0;
  args.col_end = c1;
  return args;
}

// The requantizing epilogue's definition (requant.h) written out per
// element: clamp(round_half_even(float(acc + bias) * scale) + zp, lo, hi),
// the product in float32.
int32_t requantized(int32_t acc, int32_t bias, float scale, float zp, float lo, float hi) {
  const float v = static_cast<float>(acc + bias) * scale;
  return static_cast<int32_t>(std::clamp(std::nearbyint(static_cast<double>(v)) + zp, double{lo}, double{hi}));
}

// The requantizing epilogue's parameters for p: per-column scales from
// scale_of(j), biases in [-100, 100], output int8 when exactly one of A's
// sign and per-column weights holds, a Relu (lo = zero point) for signed B.
struct RequantParams {
  std::vector<float> scale;
  std::vector<int32_t> bias;
  RequantRow rq;
  RequantParams(const Problem& p, const std::function<float(int64_t)>& scale_of)
      : scale(static_cast<size_t>(p.n)), bias(static_cast<size_t>(p.n)) {
    for (int64_t j = 0; j < p.n; ++j) {
      scale[j] = scale_of(j);
      bias[j] = static_cast<int32_t>(j * 37 % 201) - 100;
    }
    const bool y_signed = p.a_signed != p.per_column, relu = p.b_signed;
    rq.bias = bias.data();
    rq.scale = scale.data();
    rq.zp = y_signed ? -5 : 131;
    rq.lo = relu ? rq.zp : y_signed ? -128 : 0;
    rq.hi = y_signed ? 127 : 255;
    rq.y_signed = y_signed;
  }
  RequantParams(const RequantParams&) = delete;  // rq points into the vectors
  RequantParams& operator=(const RequantParams&) = delete;
};

// The problem requantized at a level over column blocks of `step` columns,
// against requantized(): per-column scales (every fourth 0.5, where odd sums
// tie), biases, a zero point, int8 or uint8 output, a Relu's raised lower
// bound; the output's row stride wider than n, its padding untouched.
void check_requant(const Problem& p, const Level& lv, int64_t step, const QGemmPackedB& packed) {
  int64_t big = 1;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) big = std::max<int64_t>(big, std::abs(int64_t{p.want(i, j)}));
  const RequantParams params(p, [&](int64_t j) {
    return j % 4 == 0 ? 0.5f : static_cast<float>(150.0 * (1 + j % 5) / (3.0 * big));
  });
  const RequantRow& rq = params.rq;
  const bool y_signed = rq.y_signed;
  const int64_t ldy = p.n + 3;
  std::vector<uint8_t> y(static_cast<size_t>(p.m * ldy), 0xA5);
  for (int64_t c0 = 0; c0 < p.n; c0 += step) {
    QGemmArgs args = args_for(p, packed, c0, std::min(p.n, c0 + step));
    args.requant = &rq;
    args.yq = y.data() + c0;
    args.ldyq = ldy;
    qgemm_at_level(args, lv.level, lv.vnni);
  }
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const int32_t want = requantized(p.want(i, j), params.bias[j], params.scale[j], rq.zp, rq.lo, rq.hi);
      const uint8_t b = y[i * ldy + j];
      ASSERT_EQ(y_signed ? int32_t{static_cast<int8_t>(b)} : int32_t{b}, want)
          << lv.name << " requantized m=" << p.m << " n=" << p.n << " k=" << p.k << " at (" << i << ", " << j << ")";
    }
    for (int64_t j = p.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 0xA5) << "padding written at row " << i;
  }
}

// Runs the problem at a level over column blocks [c0, c1) of `step` columns
// and checks every element (int32, the float epilogue and the requantizing
// one).
void check(const Problem& p, const Level& lv, int64_t step) {
  const QGemmPackedB packed = qgemm_pack_b(p.b.data(), p.b_signed, p.k, p.n, p.n);
  ASSERT_EQ(step % packed.panel_columns, 0);
  std::vector<int32_t> c(static_cast<size_t>(p.m * p.n), 0x5A5A5A5A);
  std::vector<float> y(static_cast<size_t>(p.m * p.n), -1.0f), scale(static_cast<size_t>(p.n)), bias(static_cast<size_t>(p.n));
  for (int64_t j = 0; j < p.n; ++j) scale[j] = 0.001f * static_cast<float>(j + 1), bias[j] = 0.5f * static_cast<float>(j) - 3.0f;
  // The float epilogue with one scale or one per column, with and without a bias.
  const bool per_column_scale = (p.m + p.k) % 2 == 0, with_bias = (p.n + p.k) % 3 != 0;
  for (int64_t c0 = 0; c0 < p.n; c0 += step) {
    const int64_t c1 = std::min(p.n, c0 + step);
    QGemmArgs args = args_for(p, packed, c0, c1);
    args.c = c.data() + c0;
    args.ldc = p.n;
    qgemm_at_level(args, lv.level, lv.vnni);
    args.c = nullptr;
    args.y = y.data() + c0;
    args.ldy = p.n;
    args.scale = scale.data();
    args.per_column_scale = per_column_scale;
    args.bias = with_bias ? bias.data() : nullptr;
    qgemm_at_level(args, lv.level, lv.vnni);
  }
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      const int32_t w = p.want(i, j);
      ASSERT_EQ(c[i * p.n + j], w) << lv.name << " m=" << p.m << " n=" << p.n << " k=" << p.k << " A "
                                   << (p.a_signed ? "s8" : "u8") << " B " << (p.b_signed ? "s8" : "u8")
                                   << (p.per_column ? " per-column" : " per-tensor") << " at (" << i << ", " << j << ")";
      const float prod = static_cast<float>(w) * scale[per_column_scale ? j : 0];
      const float wy = with_bias ? prod + bias[j] : prod;
      ASSERT_EQ(y[i * p.n + j], wy) << lv.name << " dequantized at (" << i << ", " << j << ")"
                                    << (per_column_scale ? " scale per column" : " one scale")
                                    << (with_bias ? " with bias" : "");
    }
  check_requant(p, lv, step, packed);
}

TEST(QGemm, RandomShapesEveryLevelAndSignedness) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> md(1, 70), nd(1, 90), kd(1, 700);
  for (const Level& lv : levels()) {
    for (int t = 0; t < 24; ++t) {
      const bool as = t & 1, bs = (t >> 1) & 1, pc = (t >> 2) & 1;
      const Problem p = make(rng, md(rng), nd(rng), kd(rng), as, bs, pc, false);
      check(p, lv, 1 << 20);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(QGemm, EdgeShapes) {
  std::mt19937 rng(11);
  const int64_t ms[] = {1, 2, 5, 6, 7, 8, 13, 14, 70};
  const int64_t ns[] = {1, 15, 16, 17, 33, 64, 65};
  const int64_t ks[] = {1, 2, 3, 4, 5, 63, 64, 257, 700};
  for (const Level& lv : levels())
    for (int64_t m : ms)
      for (int64_t n : ns)
        for (int64_t k : ks) {
          const int sel = static_cast<int>((m + n + k) % 8);
          const Problem p = make(rng, m, n, k, sel & 1, sel & 2, sel & 4, false);
          check(p, lv, 1 << 20);
          if (HasFatalFailure()) return;
        }
}

TEST(QGemm, ExtremeValuesDoNotSaturate) {
  std::mt19937 rng(3);
  for (const Level& lv : levels())
    for (int t = 0; t < 8; ++t) {
      const Problem p = make(rng, 9, 40, 301, t & 1, t & 2, t & 4, true);
      check(p, lv, 1 << 20);
      if (HasFatalFailure()) return;
    }
}

TEST(QGemm, ColumnRangesMatchTheWholeProduct) {
  std::mt19937 rng(5);
  for (const Level& lv : levels())
    for (int64_t step : {16, 32, 48}) {
      const Problem p = make(rng, 11, 83, 130, false, true, true, false);
      check(p, lv, step);
      if (HasFatalFailure()) return;
    }
}

// Long K (up to ResNet-50's 3x3 convolutions' 4608, where a tile's packed B
// outgrows L1) on tiles of 1, 2 and 4 panels: partial last k groups, row
// counts past the 6-row tile, column ranges; int32, float and requantized
// out, and extreme values (exact without saturation).
TEST(QGemm, LongKEveryLevel) {
  std::mt19937 rng(17);
  const int64_t shapes[][3] = {{2, 16, 2500}, {7, 40, 1030},  {48, 64, 1027}, {49, 80, 768},
                               {97, 20, 1153}, {55, 130, 2305}, {13, 64, 4608}};
  for (const Level& lv : levels())
    for (int t = 0; t < 7; ++t) {
      const Problem p = make(rng, shapes[t][0], shapes[t][1], shapes[t][2], t & 1, t & 2, t & 4, false);
      check(p, lv, t == 5 ? 48 : 1 << 20);
      if (HasFatalFailure()) return;
    }
  const Problem x = make(rng, 19, 70, 1030, true, true, true, true);
  for (const Level& lv : levels()) check(x, lv, 1 << 20);
}

// Symmetric weights (every B zero point 0, the quantized models' int8
// weights), where the requantizing epilogue skips the row terms.
TEST(QGemm, SymmetricWeightsEveryLevel) {
  std::mt19937 rng(13);
  for (const Level& lv : levels())
    for (int t = 0; t < 8; ++t) {
      Problem p = make(rng, 1 + 9 * t, 16 * t + 5, 4 * t + 3 + 60 * (t & 1), t & 1, true, t & 2, false);
      std::fill(p.zb.begin(), p.zb.end(), 0);
      check(p, lv, 1 << 20);
      if (HasFatalFailure()) return;
    }
}

// Requantized with A given indirectly (qgemm.h's a_rows: a convolution's
// im2col rows as pointers to runs of K / taps bytes, here scattered over a
// pool and some shared, as padding taps are), against the scalar formula:
// full 64-column tiles and partial ones, m = 6 q + 1 (the last seven rows
// in tiles of 4 and 3) and m = 1 (gathered), weight zero points 0 (read in
// place at the VNNI level) and not (gathered), runs not whole k groups
// (gathered), scales below 1 (the VNNI kernel's saturating packs) and some
// above (its float clamp), int8 / uint8 out, Relu.
void check_requant_indirect(const Problem& p, const Level& lv, int64_t taps, bool big_scale, std::mt19937& rng) {
  const int64_t run = p.k / taps;
  std::vector<uint8_t> pool(static_cast<size_t>((p.m * taps + 3) * run));
  std::vector<int64_t> slot(static_cast<size_t>(p.m * taps));
  for (int64_t s = 0; s < p.m * taps; ++s) slot[s] = s;
  std::shuffle(slot.begin(), slot.end(), rng);
  std::vector<const uint8_t*> rows(static_cast<size_t>(p.m * taps));
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t t = 0; t < taps; ++t) {
      uint8_t* dst = pool.data() + slot[i * taps + t] * run;
      std::memcpy(dst, p.a.data() + i * p.k + t * run, static_cast<size_t>(run));
      rows[i * taps + t] = dst;
    }
  const QGemmPackedB packed = qgemm_pack_b(p.b.data(), p.b_signed, p.k, p.n, p.n);
  const RequantParams params(p, [&](int64_t j) {
    return big_scale && j % 7 == 3 ? 1.5f : j % 4 == 0 ? 0.5f : 0.003f * static_cast<float>(1 + j % 5);
  });
  const RequantRow& rq = params.rq;
  const bool y_signed = rq.y_signed;
  const int64_t ldy = p.n + 5;
  std::vector<uint8_t> y(static_cast<size_t>(p.m * ldy), 0xA5);
  QGemmArgs args = args_for(p, packed, 0, p.n);
  args.a = nullptr;
  args.a_rows = rows.data();
  args.a_taps = taps;
  args.requant = &rq;
  args.yq = y.data();
  args.ldyq = ldy;
  qgemm_at_level(args, lv.level, lv.vnni);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const int32_t want = requantized(p.want(i, j), params.bias[j], params.scale[j], rq.zp, rq.lo, rq.hi);
      const uint8_t b = y[i * ldy + j];
      ASSERT_EQ(y_signed ? int32_t{static_cast<int8_t>(b)} : int32_t{b}, want)
          << lv.name << " indirect m=" << p.m << " n=" << p.n << " k=" << p.k << " taps=" << taps << " at (" << i
          << ", " << j << ")";
    }
    for (int64_t j = p.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 0xA5) << "padding written at row " << i;
  }
}

TEST(QGemm, IndirectRequantizedEveryLevel) {
  std::mt19937 rng(23);
  // m, n, K, taps: 3x3 over 64 and 16 channels, 1x1 (one tap), runs of 6
  // bytes (not whole k groups), m = 6 q + 1 and m = 1.
  const int64_t shapes[][4] = {{54, 64, 576, 9}, {37, 128, 144, 9}, {13, 200, 256, 1}, {25, 64, 54, 9},
                               {1, 80, 576, 9},  {7, 64, 64, 1},    {49, 96, 1152, 9}, {6, 17, 36, 9}};
  for (const Level& lv : levels())
    for (int s = 0; s < 8; ++s)
      for (int t = 0; t < 4; ++t) {
        const bool as = (s + t) & 1, bs = (t & 2) || (s & 2), pc = s & 1;
        Problem p = make(rng, shapes[s][0], shapes[s][1], shapes[s][2], as, bs, pc, t == 3);
        if (t != 1) std::fill(p.zb.begin(), p.zb.end(), 0);
        check_requant_indirect(p, lv, shapes[s][3], t == 2 || t == 3, rng);
        if (HasFatalFailure()) return;
      }
}

TEST(QGemm, TransposedPackingEqualsPlain) {
  std::mt19937 rng(9);
  const Problem p = make(rng, 3, 37, 45, false, true, false, false);
  std::vector<uint8_t> bt(p.b.size());
  for (int64_t r = 0; r < p.k; ++r)
    for (int64_t j = 0; j < p.n; ++j) bt[j * p.k + r] = p.b[r * p.n + j];
  const QGemmPackedB x = qgemm_pack_b(p.b.data(), true, p.k, p.n, p.n);
  const QGemmPackedB y = qgemm_pack_b(bt.data(), true, p.k, p.n, p.k, true);
  EXPECT_EQ(x.data, y.data);
  EXPECT_EQ(x.column_sums, y.column_sums);
}

// DynamicQuantizeLinear's vectorized passes against ONNX's definition written
// out per element: ties (x / scale exactly half-way, both parities), NaN
// (skipped by min / max, quantized to 0), infinities, -0, all zeros, and
// lengths around the vector widths.
TEST(QGemm, DynamicQuantizeMatchesTheScalarDefinition) {
  auto reference = [](const std::vector<float>& x, std::vector<uint8_t>& y, float& scale, uint8_t& zero) {
    float lo = 0.0f, hi = 0.0f;
    for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
    scale = (hi - lo) / 255.0f;
    auto sat = [](double v) -> uint8_t {
      if (std::isnan(v)) return 0;
      return static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0));
    };
    zero = scale == 0.0f ? 0 : sat(-lo / scale);
    y.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = scale == 0.0f ? zero : sat(std::nearbyint(x[i] / scale) + zero);
  };
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> d(-3.0f, 5.0f);
  const float specials[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -0.0f, NAN, 127.5f};
  for (int64_t n : {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 100, 1000}) {
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<float> x(static_cast<size_t>(n));
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = variant == 3 ? 0.0f : d(rng);
        if (variant == 1 && i % 3 == 0) x[i] = specials[i % 8];
        // Scale 1 / 1: values that are exact halves tie.
        if (variant == 2) x[i] = static_cast<float>(static_cast<int>(i % 40) - 20) + 0.5f;
      }
      if (variant == 1 && n > 4) x[4] = INFINITY;
      std::vector<uint8_t> want, got(x.size());
      float ws = 0.0f;
      uint8_t wz = 0;
      reference(x, want, ws, wz);
      const DynamicQuantization q = dynamic_quantize_u8(x.data(), n, got.data());
      EXPECT_EQ(std::memcmp(&q.scale, &ws, sizeof(float)), 0) << "n=" << n << " variant " << variant;
      EXPECT_EQ(q.zero_point, wz) << "n=" << n << " variant " << variant;
      EXPECT_EQ(got, want) << "n=" << n << " variant " << variant;
    }
  }
}

// Each level's DynamicQuantizeLinear passes (called directly) give the
// active level's bytes, NaN and infinities included.
TEST(QGemm, DynamicQuantizePassesAgreeAcrossLevels) {
  using MinMax = void (*)(const float*, int64_t, float*, float*);
  using Quant = void (*)(const float*, int64_t, float, float, uint8_t*);
  std::vector<std::pair<MinMax, Quant>> fns = {{&kernels::baseline::quantize_min_max, &kernels::baseline::quantize_u8}};
  if (detected_isa_level() >= IsaLevel::kAvx2)
    fns.push_back({&kernels::avx2::quantize_min_max, &kernels::avx2::quantize_u8});
  if (detected_isa_level() >= IsaLevel::kAvx512)
    fns.push_back({&kernels::avx512::quantize_min_max, &kernels::avx512::quantize_u8});
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> d(-7.0f, 2.0f);
  for (int64_t n : {1, 5, 16, 23, 64, 257}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 11 == 3 ? NAN : i % 13 == 5 ? 2.5f : d(rng);
    if (n > 20) x[20] = -INFINITY;
    std::vector<uint8_t> want(x.size());
    const DynamicQuantization q = dynamic_quantize_u8(x.data(), n, want.data());
    for (const auto& [min_max, quant] : fns) {
      float lo = 0.0f, hi = 0.0f;
      min_max(x.data(), n, &lo, &hi);
      EXPECT_EQ((hi - lo) / 255.0f, q.scale) << "n=" << n;
      std::vector<uint8_t> got(x.size());
      quant(x.data(), n, q.scale, static_cast<float>(q.zero_point), got.data());
      EXPECT_EQ(got, want) << "n=" << n;
    }
  }
}

// With a pool, the passes run in chunks of 16K values on its threads: the
// same scale, zero point and bytes as one pass, wherever the extremes, NaNs
// and infinities fall (in the last, partial chunk too).
TEST(QGemm, DynamicQuantizeInChunksOnAPoolEqualsOnePass) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    for (int64_t n : {int64_t{16384}, int64_t{16385}, int64_t{3 * 16384 + 77}, int64_t{196608}}) {
      for (int extreme : {0, 1, 2}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = d(rng);
        x[static_cast<size_t>(n - 1)] = -9.5f;        // the minimum in the last chunk
        x[static_cast<size_t>(n / 2)] = extreme == 1 ? NAN : 7.25f;
        if (extreme == 2) x[static_cast<size_t>(n / 3)] = INFINITY;
        std::vector<uint8_t> want(x.size()), got(x.size(), 0xAB);
        const DynamicQuantization a = dynamic_quantize_u8(x.data(), n, want.data());
        const DynamicQuantization b = dynamic_quantize_u8(x.data(), n, got.data(), pool.get());
        EXPECT_EQ(a.scale, b.scale) << "n=" << n << " extreme=" << extreme;
        EXPECT_EQ(a.zero_point, b.zero_point) << "n=" << n << " extreme=" << extreme;
        EXPECT_EQ(want, got) << "n=" << n << " extreme=" << extreme << " threads=" << threads;
      }
    }
  }
}

TEST(QGemm, ActiveKernelIsNamed) {
  const std::string name = qgemm_kernel_name();
  EXPECT_TRUE(name == "baseline" || name == "avx2" || name == "avx512" || name == "avx512-vnni") << name;
}

}  // namespace
}  // namespace spindle::kernels::nn
