// sgemm_test.cpp — spindle's packed SGEMM (src/primitives/gemm/sgemm.h): results
// against a double-precision reference over ragged shapes, transposes and
// alpha / beta; pre-packed operands, bias and activation epilogues equal to
// the plain path bit for bit; Conv / Gemm / MatMul with constant weights
// packed at creation or not (NodeInfo::prepack) bitwise equal; bitwise
// identical results for 1, 2 and 3 threads; a residual added at the store;
// blocks of 1..3 rows (the
// multi-panel path) equal to the same rows of a full tile bitwise; the baseline and AVX2 levels'
// micro-kernels called directly, and the whole reference test re-run in a
// child process with SPINDLE_ISA=baseline.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "primitives/gemm/packing_scope.h"
#include "primitives/gemm/sgemm.h"
#include "primitives/gemm/sgemm_isa.h"
#include "spindle/cpu.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::Activation;
using kernels::NodeInfo;
using kernels::nn::PackedMatrix;
using kernels::nn::sgemm;
using kernels::nn::SgemmExtras;

int64_t round_up_to(int64_t a, int64_t m) { return (a + m - 1) / m * m; }

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  const std::vector<float> v = random_floats(static_cast<size_t>(shape_numel(shape)), seed);
  return Tensor::from_vector<float>(shape, v);
}

// A GEMM problem with its operands stored as op() expects.
struct Problem {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  int64_t lda() const { return ta ? m : k; }
  int64_t ldb() const { return tb ? k : n; }
};

// op(A)[i][p] and op(B)[p][j] of row-major storage.
float at_a(const Problem& p, const std::vector<float>& a, int64_t i, int64_t q) {
  return p.ta ? a[static_cast<size_t>(q * p.m + i)] : a[static_cast<size_t>(i * p.k + q)];
}
float at_b(const Problem& p, const std::vector<float>& b, int64_t q, int64_t j) {
  return p.tb ? b[static_cast<size_t>(j * p.k + q)] : b[static_cast<size_t>(q * p.n + j)];
}

// Checks sgemm against a double reference; the bound is a few float ulps of
// sum |a||b| per element (the error of any summation order).
::testing::AssertionResult check_against_reference(const Problem& p, uint32_t seed) {
  const auto a = random_floats(static_cast<size_t>(p.m * p.k), seed);
  const auto b = random_floats(static_cast<size_t>(p.k * p.n), seed + 1);
  const auto c0 = random_floats(static_cast<size_t>(p.m * p.n), seed + 2);
  std::vector<float> c = c0;
  sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), p.lda(), b.data(), p.ldb(), p.beta, c.data(), p.n);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const double t = static_cast<double>(at_a(p, a, i, q)) * at_b(p, b, q, j);
        acc += t;
        mag += std::fabs(t);
      }
      const double c_in = c0[static_cast<size_t>(i * p.n + j)];
      const double want = p.alpha * acc + (p.beta == 0.0f ? 0.0 : p.beta * c_in);
      const double tol = 4e-7 * (static_cast<double>(p.k) + 4) * (std::fabs(p.alpha) * mag + std::fabs(p.beta * c_in)) + 1e-30;
      const double got = c[static_cast<size_t>(i * p.n + j)];
      if (!(std::fabs(got - want) <= tol))
        return ::testing::AssertionFailure()
               << "m=" << p.m << " n=" << p.n << " k=" << p.k << " transA=" << p.ta << " transB=" << p.tb
               << " alpha=" << p.alpha << " beta=" << p.beta << ": C[" << i << "][" << j << "] = " << got
               << ", expected " << want << " (tolerance " << tol << ", ISA " << isa_level_name(active_isa_level()) << ")";
    }
  return ::testing::AssertionSuccess();
}

// A PackingScope shares one packed copy between packings of a registered
// source with the same arguments, and only those: other arguments, an
// unregistered source, a source removed (its storage about to be freed) and
// packings outside the scope pack anew.
TEST(PackingScope, SharesPackingsOfARegisteredSourceOnly) {
  using kernels::nn::PackingScope;
  std::vector<float> w(40 * 24), other(40 * 24);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) - 8.0f, other[i] = w[i];
  const PackedMatrix outside = PackedMatrix::pack_b(false, 24, 40, w.data(), 24);
  {
    PackingScope scope;
    scope.add_source(w.data());
    const PackedMatrix b1 = PackedMatrix::pack_b(false, 24, 40, w.data(), 24);
    const PackedMatrix b2 = PackedMatrix::pack_b(false, 24, 40, w.data(), 24);
    EXPECT_EQ(b1.panel(0), b2.panel(0));
    EXPECT_NE(b1.panel(0), outside.panel(0));
    EXPECT_EQ(0, std::memcmp(b1.panel(0), outside.panel(0), outside.bytes()));
    EXPECT_NE(PackedMatrix::pack_b(true, 40, 24, w.data(), 24).panel(0), b1.panel(0));  // other arguments
    EXPECT_NE(PackedMatrix::pack_b(false, 24, 40, other.data(), 24).panel(0),
              PackedMatrix::pack_b(false, 24, 40, other.data(), 24).panel(0));  // not registered
    const PackedMatrix a1 = PackedMatrix::pack_a(false, 40, 24, 1.0f, w.data(), 24);
    EXPECT_EQ(a1.panel(0), PackedMatrix::pack_a(false, 40, 24, 1.0f, w.data(), 24).panel(0));
    EXPECT_NE(a1.panel(0), PackedMatrix::pack_a(false, 40, 24, 2.0f, w.data(), 24).panel(0));  // other alpha
    {
      PackingScope inner;  // a subgraph's: knows none of the outer sources
      EXPECT_NE(PackedMatrix::pack_b(false, 24, 40, w.data(), 24).panel(0), b1.panel(0));
    }
    EXPECT_EQ(PackedMatrix::pack_b(false, 24, 40, w.data(), 24).panel(0), b1.panel(0));
    scope.remove_source(w.data());
    EXPECT_NE(PackedMatrix::pack_b(false, 24, 40, w.data(), 24).panel(0), b1.panel(0));
  }
  EXPECT_EQ(PackingScope::current(), nullptr);
}

TEST(Sgemm, MatchesDoubleReferenceOnRaggedShapes) {
  // Sizes around every level's MR (4, 6, 14), NR (8, 16, 32), the k block
  // (256) and the cache blocks (MC 168, NC 1024).
  const int64_t ms[] = {1, 3, 5, 6, 7, 13, 14, 15, 29, 170};
  const int64_t ns[] = {1, 7, 8, 16, 17, 33, 65, 1030};
  const int64_t ks[] = {1, 2, 9, 255, 257, 600};
  uint32_t seed = 1;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        if (m * n * k > 6'000'000) continue;
        const int variant = static_cast<int>(seed % 4);
        const Problem p{variant == 1 || variant == 3, variant >= 2, m, n, k, seed % 3 == 0 ? 0.75f : 1.0f,
                        seed % 5 == 0 ? 0.0f : (seed % 5 == 1 ? 1.0f : -0.5f)};
        ASSERT_TRUE(check_against_reference(p, seed));
        ++seed;
      }
}

TEST(Sgemm, EveryTransposeAndScalingCombination) {
  uint32_t seed = 77;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float alpha : {1.0f, -2.0f})
        for (float beta : {0.0f, 1.0f, 0.25f}) ASSERT_TRUE(check_against_reference({ta, tb, 23, 45, 300, alpha, beta}, seed++));
}

TEST(Sgemm, BetaZeroIgnoresNanInC) {
  const int64_t m = 7, n = 19, k = 5;
  const auto a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  std::vector<float> c(m * n, NAN);
  sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  for (float v : c) ASSERT_FALSE(std::isnan(v));
}

TEST(Sgemm, ZeroDepthWritesBetaTimesCOrBias) {
  std::vector<float> c = {1, 2, 3, 4};
  const float bias[2] = {5, -6};
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  SgemmExtras ex;
  ex.row_bias = bias;
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2, ex);
  EXPECT_EQ(c, (std::vector<float>{5, 5, -6, -6}));
}

TEST(Sgemm, PrepackedOperandsAndEpiloguesEqualThePlainPathBitwise) {
  // Row blocks start at multiples of MR, column blocks at multiples of 32.
  const int64_t MR = kernels::nn::sgemm_mr();
  const int64_t m = 4 * MR + 3, n = 101, k = 530;
  const auto a = random_floats(m * k, 11), b = random_floats(k * n, 12), bias = random_floats(m, 13);
  std::vector<float> plain(m * n), packed(m * n);
  sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, plain.data(), n);
  // Bias then Relu by hand on the plain result (the fused order: bias starts
  // the sum, so add it before the product for the bitwise comparison).
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) want[i * n + j] = bias[i];
  sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 1.0f, want.data(), n);
  for (float& v : want) v = v > 0.0f ? v : 0.0f;

  const PackedMatrix pa = PackedMatrix::pack_a(false, m, k, 1.0f, a.data(), k);
  const PackedMatrix pb = PackedMatrix::pack_b(false, n, k, b.data(), n);
  Activation relu;
  relu.kind = Activation::kRelu;
  for (int64_t r0 : {int64_t{0}, MR, 3 * MR})
    for (int64_t c0 : {int64_t{0}, int64_t{32}, int64_t{96}}) {
      const int64_t rows = m - r0, cols = n - c0;
      SgemmExtras only_a, only_b, fused;
      only_a.packed_a = pa.panel(r0);
      only_b.packed_b = pb.panel(c0);
      fused.packed_a = pa.panel(r0);
      fused.row_bias = bias.data() + r0;
      fused.act = &relu;
      for (const SgemmExtras* ex : {&only_a, &only_b}) {
        std::fill(packed.begin(), packed.end(), 0.0f);
        sgemm(false, false, rows, cols, k, 1.0f, a.data() + r0 * k, k, b.data() + c0, n, 0.0f, packed.data() + r0 * n + c0,
              n, *ex);
        for (int64_t i = r0; i < m; ++i)
          ASSERT_EQ(0, std::memcmp(&packed[i * n + c0], &plain[i * n + c0], cols * sizeof(float)))
              << "row " << i << " r0 " << r0 << " c0 " << c0 << (ex == &only_a ? " packed A" : " packed B");
      }
      sgemm(false, false, rows, cols, k, 1.0f, nullptr, 0, b.data() + c0, n, 0.0f, packed.data() + r0 * n + c0, n, fused);
      for (int64_t i = r0; i < m; ++i)
        ASSERT_EQ(0, std::memcmp(&packed[i * n + c0], &want[i * n + c0], cols * sizeof(float)))
            << "bias + Relu, row " << i << " r0 " << r0 << " c0 " << c0;
    }
}

// Relu and Clip applied by the micro-kernel at the store of the last k block
// equal the sums followed by Activation's own pass bit for bit, NaN sums and
// -0 included, on full tiles, row edges (1..3 rows: the wide path) and
// ragged columns, with two k blocks.
TEST(Sgemm, StoreTimeReluAndClipEqualTheActivationPass) {
  const int64_t MR = kernels::nn::sgemm_mr();
  for (int64_t m : {2 * MR + 1, int64_t{2}, 3 * MR}) {
    const int64_t n = 37, k = 300;
    auto a = random_floats(m * k, 21);
    const auto b = random_floats(k * n, 22);
    auto bias = random_floats(m, 23);
    for (int64_t j = 0; j < k; ++j) a[j] = 0.0f;  // row 0: products of 0 ...
    bias[0] = -0.0f;                              // ... and a bias of -0
    std::vector<float> bneg(b);
    for (float& v : bneg) v = -std::fabs(v);      // ... give -0 sums
    a[k + 7] = NAN;                               // row 1 sums to NaN
    Activation relu, clip;
    relu.kind = Activation::kRelu;
    clip.kind = Activation::kClip;
    clip.a = -0.25f;
    clip.b = 0.25f;
    for (const Activation* act : {&relu, &clip}) {
      std::vector<float> want(m * n), got(m * n);
      SgemmExtras plain, fused;
      plain.row_bias = fused.row_bias = bias.data();
      fused.act = act;
      sgemm(false, false, m, n, k, 1.0f, a.data(), k, bneg.data(), n, 0.0f, want.data(), n, plain);
      act->apply(want.data(), m * n);
      sgemm(false, false, m, n, k, 1.0f, a.data(), k, bneg.data(), n, 0.0f, got.data(), n, fused);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
          << (act == &relu ? "Relu" : "Clip") << ", m " << m;
      EXPECT_TRUE(std::signbit(got[0]) && got[0] == 0.0f) << "a -0 sum stays -0";
      if (m > 1) {
        EXPECT_TRUE(std::isnan(got[n])) << "a NaN sum stays NaN";
      }
    }
  }
}

// A residual R (a Conv's fused Add) is added by the micro-kernel as it
// stores the last k block, before the activation: the result equals the
// sums, then + R, then Activation's pass, bit for bit, on every store path
// (full tiles, row edges of 1..3 rows and wider, blocks of 1..3 rows, one or
// two tail columns as matrix-vector products, a ragged last tile narrower
// and wider than a vector), with three k blocks, a packed B, and C and R
// rows padded past n (ldc > n). Relu, HardSigmoid and HardSwish are applied
// in the store too, Sigmoid by a pass: all equal Activation's pass.
TEST(Sgemm, StoreTimeResidualEqualsTheAddThenTheActivation) {
  const int64_t MR = kernels::nn::sgemm_mr(), NR = kernels::nn::sgemm_nr();
  const int64_t k = 700;
  Activation relu, sigmoid, hard_sigmoid, hard_swish;
  relu.kind = Activation::kRelu;
  sigmoid.kind = Activation::kSigmoid;
  hard_sigmoid.kind = Activation::kHardSigmoid;
  hard_sigmoid.a = 0.3f, hard_sigmoid.b = 0.4f;
  hard_swish.kind = Activation::kHardSwish;
  const Activation* const acts[] = {nullptr, &relu, &sigmoid, &hard_sigmoid, &hard_swish};
  auto act_name = [&](const Activation* act) {
    return act == &relu ? ", Relu" : act == &sigmoid ? ", Sigmoid" : act == &hard_sigmoid ? ", HardSigmoid"
                                   : act == &hard_swish ? ", HardSwish" : "";
  };
  for (int64_t m : {int64_t{1}, int64_t{3}, MR, MR + 2, 2 * MR + 5})
    for (int64_t n : {NR, 3 * NR + 1, 3 * NR + 2, 2 * NR + 5, 2 * NR + NR / 2 + 1, 2 * NR + NR / 2 + 3})
      for (const Activation* act : acts)
        for (bool packed : {false, true}) {
          const int64_t ldc = n + 3;
          const auto a = random_floats(m * k, 41), b = random_floats(k * n, 42), bias = random_floats(m, 43);
          const auto r = random_floats(m * ldc, 44);
          const PackedMatrix pb = PackedMatrix::pack_b(false, n, k, b.data(), n);
          SgemmExtras plain{.row_bias = bias.data()};
          if (packed) plain.packed_b = pb.panel(0);
          SgemmExtras fused = plain;
          fused.residual = r.data();
          fused.act = act;
          std::vector<float> want(m * ldc, 0.0f), got(m * ldc, 0.0f);
          sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(), ldc, plain);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) want[i * ldc + j] += r[i * ldc + j];
            if (act) act->apply(&want[i * ldc], n);
          }
          sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, got.data(), ldc, fused);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
              << m << " x " << n << act_name(act) << (packed ? ", packed B" : "");
        }
}

// The implicit GEMM (sgemm_taps: B's rows given as pointers) equals sgemm on
// the same rows bit for bit, with a bias, a residual added at the store and
// Relu or HardSwish (in the store) or Sigmoid (a pass), on full and ragged
// tiles and row edges.
TEST(Sgemm, TapsEqualThePackedPathWithResidualAndActivation) {
  const int64_t MR = kernels::nn::sgemm_mr(), NR = kernels::nn::sgemm_nr();
  Activation relu, sigmoid, hard_swish;
  relu.kind = Activation::kRelu;
  sigmoid.kind = Activation::kSigmoid;
  hard_swish.kind = Activation::kHardSwish;
  const Activation* const acts[] = {nullptr, &relu, &sigmoid, &hard_swish};
  for (int64_t m : {int64_t{1}, int64_t{5}, MR + 1, 2 * MR + 3})
    for (int64_t n : {NR, 3 * NR + 1, 2 * NR + 5})
      for (int64_t k : {7, 64})
        for (const Activation* act : acts)
          for (bool with_res : {false, true}) {
            const int64_t ldb = round_up_to(n, NR) + 3;  // rows readable past n, as sgemm_taps needs
            const auto a = random_floats(m * k, 51), b = random_floats(k * ldb, 52), bias = random_floats(m, 53);
            const auto r = random_floats(m * n, 54);
            const PackedMatrix pa = PackedMatrix::pack_a(false, m, k, 1.0f, a.data(), k);
            std::vector<const float*> taps(static_cast<size_t>(k));
            for (int64_t q = 0; q < k; ++q) taps[static_cast<size_t>(q)] = b.data() + q * ldb;
            SgemmExtras ex{.packed_a = pa.panel(0), .row_bias = bias.data()};
            ex.residual = with_res ? r.data() : nullptr;
            ex.act = act;
            std::vector<float> want(m * n), got(m * n);
            sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), ldb, 0.0f, want.data(), n, ex);
            kernels::nn::sgemm_taps(m, n, k, pa.panel(0), taps.data(), bias.data(), got.data(), n, ex.residual, act);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
                << m << " x " << n << " x " << k << (act == &relu ? ", Relu" : act ? ", Sigmoid" : "")
                << (with_res ? ", residual" : "");
          }
}

// Blocks of 1..3 rows (FC layers at small batch, row edges) run several B
// panels side by side; every element must still see the full-tile path's
// operations, so each row equals the same row computed in a block of MR + 1
// rows bit for bit, and matches the double reference.
TEST(Sgemm, FewRowsEqualTheSameRowsOfALargerBlockBitwise) {
  const int64_t MR = kernels::nn::sgemm_mr(), NR = kernels::nn::sgemm_nr();
  // One row runs 4 panels at a time, then 2: 9 panels leave one panel, 10
  // leave a pair for the 2-panel step.
  for (const int64_t n : {9 * NR + 5, 10 * NR + 5}) {
    const int64_t k = 530, big = MR + 3;
    const auto a = random_floats(big * k, 21), b = random_floats(k * n, 22), bias = random_floats(big, 23);
    const PackedMatrix pb = PackedMatrix::pack_b(false, n, k, b.data(), n);
    for (bool packed : {false, true})
      for (bool with_bias : {false, true}) {
        SgemmExtras ex;
        if (packed) ex.packed_b = pb.panel(0);
        if (with_bias) ex.row_bias = bias.data();
        std::vector<float> whole(big * n);
        sgemm(false, false, big, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, whole.data(), n, ex);
        for (int64_t rows = 1; rows <= 3; ++rows)
          for (int64_t r0 : {int64_t{0}, MR}) {
            SgemmExtras exr = ex;
            if (with_bias) exr.row_bias = bias.data() + r0;
            std::vector<float> few(rows * n, NAN);
            sgemm(false, false, rows, n, k, 1.0f, a.data() + r0 * k, k, b.data(), n, 0.0f, few.data(), n, exr);
            ASSERT_EQ(0, std::memcmp(few.data(), &whole[r0 * n], few.size() * sizeof(float)))
                << rows << " rows from row " << r0 << ", " << n << " columns" << (packed ? ", packed B" : "")
                << (with_bias ? ", bias" : "");
          }
      }
  }
  for (int64_t m : {1, 2, 3})
    for (int64_t nn : {4 * NR, 8 * NR + 1, 13 * NR - 3})
      for (bool tb : {false, true}) ASSERT_TRUE(check_against_reference({false, tb, m, nn, 300, 1.0f, m == 2 ? 1.0f : 0.0f}, 90));
}

// A row edge of 1..3 rows below full panels (M = MR + 1 .. MR + 3, and
// 2 MR + 2) runs beside each pair of column panels, its
// leftover columns (an odd panel, a ragged tile, a one-column tail) at the
// end: every row must equal the same row computed alone bit for bit, with a
// bias, a residual and Relu at the store, several k blocks and a packed
// (constant) B, and match the double reference.
TEST(Sgemm, RowEdgeBelowFullPanelsEqualsRowsAloneBitwise) {
  const int64_t MR = kernels::nn::sgemm_mr(), NR = kernels::nn::sgemm_nr();
  const int64_t k = 700;
  Activation relu;
  relu.kind = Activation::kRelu;
  for (int64_t n : {5 * NR + 3, 4 * NR, 3 * NR + 1})
    for (int64_t m : {MR + 1, MR + 2, MR + 3, 2 * MR + 2}) {
      const auto a = random_floats(m * k, 31), b = random_floats(k * n, 32), bias = random_floats(m, 33),
                 res = random_floats(m * n, 34);
      const PackedMatrix pb = PackedMatrix::pack_b(false, n, k, b.data(), n);
      for (bool packed : {false, true}) {
        SgemmExtras ex;
        if (packed) ex.packed_b = pb.panel(0);
        ex.b_constant = packed;
        ex.row_bias = bias.data();
        ex.residual = res.data();
        ex.act = &relu;
        std::vector<float> whole(m * n);
        sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, whole.data(), n, ex);
        for (int64_t r = 0; r < m; ++r) {
          SgemmExtras one = ex;
          one.row_bias = bias.data() + r;
          one.residual = res.data() + r * n;
          std::vector<float> row(n, NAN);
          sgemm(false, false, 1, n, k, 1.0f, a.data() + r * k, k, b.data(), n, 0.0f, row.data(), n, one);
          ASSERT_EQ(0, std::memcmp(row.data(), &whole[r * n], row.size() * sizeof(float)))
              << "row " << r << " of " << m << ", " << n << " columns" << (packed ? ", packed B" : "");
        }
      }
      ASSERT_TRUE(check_against_reference({false, false, m, n, k, 1.0f, 0.0f}, 35));
      ASSERT_TRUE(check_against_reference({true, true, m, n, 300, 0.5f, 1.0f}, 36));
    }
}

// A tail of one or two columns (7 x 7 outputs: 49 = 3 x 16 + 1) runs as
// matrix-vector products with the rows in the vector lanes, and a tail of one
// vector and 0-2 columns (49 = 32 + 16 + 1 at AVX-512) as a one-vector tile
// and those products; each element must still get the tile's operations, so
// the tail equals the same columns computed inside full tiles bit for bit: with a bias, Relu clamped at the
// store, three k blocks (the sums stored and loaded back), row counts that
// fill a panel, leave a 1..3-row edge or a wider one, and a packed B.
TEST(Sgemm, TailColumnsEqualTheSameColumnsInsideFullTilesBitwise) {
  const int64_t MR = kernels::nn::sgemm_mr(), NR = kernels::nn::sgemm_nr();
  const int64_t k = 700, wide = 4 * NR;
  Activation relu;
  relu.kind = Activation::kRelu;
  for (int64_t m : {int64_t{1}, int64_t{3}, MR + 2, 2 * MR + 5, 7 * MR})
    for (int64_t tail : {int64_t{1}, int64_t{2}, NR / 2, NR / 2 + 1, NR / 2 + 2})
      for (bool packed : {false, true}) {
        const int64_t n = 3 * NR + tail;
        const auto a = random_floats(m * k, 31), b = random_floats(k * wide, 32), bias = random_floats(m, 33);
        const PackedMatrix pb_wide = PackedMatrix::pack_b(false, wide, k, b.data(), wide);
        const PackedMatrix pb_n = PackedMatrix::pack_b(false, n, k, b.data(), wide);
        SgemmExtras ex{.row_bias = bias.data(), .act = &relu};
        std::vector<float> full(m * wide), part(m * n, NAN);
        if (packed) ex.packed_b = pb_wide.panel(0);
        sgemm(false, false, m, wide, k, 1.0f, a.data(), k, b.data(), wide, 0.0f, full.data(), wide, ex);
        if (packed) ex.packed_b = pb_n.panel(0);
        sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), wide, 0.0f, part.data(), n, ex);
        for (int64_t i = 0; i < m; ++i)
          ASSERT_EQ(0, std::memcmp(&part[i * n], &full[i * wide], n * sizeof(float)))
              << m << " rows, " << tail << " tail columns" << (packed ? ", packed B" : "") << ": row " << i;
        ASSERT_TRUE(check_against_reference({false, false, m, n, k, 1.0f, 0.0f}, 34));
      }
}

// The per-level micro-kernels called directly (one k block): every level this
// CPU runs, whatever SPINDLE_ISA says.
using GeometryFn = kernels::SgemmGeometry (*)();
using BlockFn = void (*)(const kernels::SgemmBlock&);
using PackAFn = void (*)(bool, int64_t, int64_t, int64_t, float, const float*, int64_t, float*, int64_t);
using PackBFn = void (*)(bool, int64_t, int64_t, int64_t, const float*, int64_t, float*, int64_t, const kernels::SgemmRowAffine*);

void check_level(const char* name, GeometryFn geometry, BlockFn block, PackAFn pack_a, PackBFn pack_b) {
  const kernels::SgemmGeometry g = geometry();
  for (int64_t m : {int64_t{2} * g.mr + 1, int64_t{1}, int64_t{2}, int64_t{3}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int64_t n = m <= 3 ? 9 * g.nr + 3 : 2 * g.nr + 3, k = 37;
        const Problem p{ta, tb, m, n, k, 1.0f, 0.0f};
        const auto a = random_floats(m * k, 5), b = random_floats(k * n, 6), bias = random_floats(m, 7);
        std::vector<float> pa((m + g.mr) * k), pb((n + g.nr) * k), c(m * n, NAN);
        pack_a(ta, m, 0, k, 1.0f, a.data(), p.lda(), pa.data(), k * g.mr);
        pack_b(tb, n, 0, k, b.data(), p.ldb(), pb.data(), k * g.nr, nullptr);
        block({m, n, k, pa.data(), k * g.mr, pb.data(), k * g.nr, c.data(), n, false, bias.data()});
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = bias[i];
            for (int64_t q = 0; q < k; ++q) want += static_cast<double>(at_a(p, a, i, q)) * at_b(p, b, q, j);
            ASSERT_NEAR(c[i * n + j], want, 1e-5) << name << " transA " << ta << " transB " << tb << " at " << i << "," << j;
          }
      }
  }
}

// A's panel format written exactly (alpha * a, rows past m zero) by each
// level's packing: full panels (the vector transposes) and a row edge, k
// runs with a tail, a row stride past K, a k range not starting at 0, and
// the panels packed in two row ranges into one buffer as the shared A is.
void check_pack_a(const char* name, GeometryFn geometry, PackAFn pack_a) {
  const int64_t MR = geometry().mr, m = 2 * MR + 3, K = 45, lda = 50, k0 = 3, kc = K - k0;
  const float alpha = 0.7f;
  const auto a = random_floats(m * lda, 9);
  const int64_t panels = (m + MR - 1) / MR;
  std::vector<float> d(static_cast<size_t>(panels * MR * kc + 64), NAN);
  // The later rows first: a store past the first panel's end would show.
  pack_a(false, m - MR, k0, kc, alpha, a.data() + MR * lda, lda, d.data() + kc * MR, kc * MR);
  pack_a(false, MR, k0, kc, alpha, a.data(), lda, d.data(), kc * MR);
  for (int64_t pnl = 0; pnl < panels; ++pnl)
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t i = 0; i < MR; ++i) {
        const int64_t row = pnl * MR + i;
        const float want = row < m ? alpha * a[static_cast<size_t>(row * lda + k0 + k)] : 0.0f;
        ASSERT_EQ(d[static_cast<size_t>(pnl * kc * MR + k * MR + i)], want)
            << name << " panel " << pnl << " k " << k << " row " << i;
      }
}

TEST(Sgemm, PackAWritesThePanelFormatExactlyAtEveryLevel) {
  check_pack_a("baseline", &kernels::baseline::sgemm_geometry, &kernels::baseline::sgemm_pack_a);
  if (detected_isa_level() >= IsaLevel::kAvx2)
    check_pack_a("avx2", &kernels::avx2::sgemm_geometry, &kernels::avx2::sgemm_pack_a);
  if (detected_isa_level() >= IsaLevel::kAvx512)
    check_pack_a("avx512", &kernels::avx512::sgemm_geometry, &kernels::avx512::sgemm_pack_a);
}

TEST(Sgemm, BaselineMicroKernelDirect) {
  check_level("baseline", &kernels::baseline::sgemm_geometry, &kernels::baseline::sgemm_block,
              &kernels::baseline::sgemm_pack_a, &kernels::baseline::sgemm_pack_b);
  EXPECT_EQ(kernels::baseline::sgemm_geometry().nr, 8);
}

TEST(Sgemm, Avx2MicroKernelDirect) {
  if (detected_isa_level() < IsaLevel::kAvx2) GTEST_SKIP() << "this CPU has no AVX2";
  check_level("avx2", &kernels::avx2::sgemm_geometry, &kernels::avx2::sgemm_block, &kernels::avx2::sgemm_pack_a,
              &kernels::avx2::sgemm_pack_b);
  EXPECT_EQ(kernels::avx2::sgemm_geometry().nr, 16);
}

TEST(Sgemm, Avx512MicroKernelDirect) {
  if (detected_isa_level() < IsaLevel::kAvx512) GTEST_SKIP() << "this CPU has no AVX-512";
  check_level("avx512", &kernels::avx512::sgemm_geometry, &kernels::avx512::sgemm_block,
              &kernels::avx512::sgemm_pack_a, &kernels::avx512::sgemm_pack_b);
}

TEST(Sgemm, WholeDriverAtBaselineInAChildProcess) {
  if (std::getenv("SPINDLE_ISA")) GTEST_SKIP() << "already a capped run (SPINDLE_ISA is set)";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("SPINDLE_ISA", "baseline", 1);
    const char* filter = "--gtest_filter=Sgemm.MatchesDoubleReference*:Sgemm.Every*:Sgemm.Prepacked*:SgemmOps.*:Sgemm.ActiveLevel*";
    ::execl("/proc/self/exe", "sgemm_child", filter, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the baseline child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the SGEMM tests failed with SPINDLE_ISA=baseline (output above)";
}

TEST(Sgemm, ActiveLevelHonoursTheCap) {
  const char* cap = std::getenv("SPINDLE_ISA");
  if (!cap || std::string(cap) != "baseline") GTEST_SKIP() << "run by WholeDriverAtBaselineInAChildProcess";
  EXPECT_EQ(kernels::nn::sgemm_mr(), 4);
  EXPECT_EQ(kernels::nn::sgemm_nr(), 8);
}

// ---------------------------------------------------------------- operators

NodeInfo make_node(const std::string& op, int opset, Attributes attrs, int num_inputs) {
  NodeInfo n;
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  n.num_inputs = num_inputs;
  return n;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

struct OpCase {
  std::string name, op;
  Attributes attrs;
  std::vector<Shape> shapes;
  int const_input;  // index of the weights input
};

std::vector<OpCase> op_cases() {
  const Attributes pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  return {
      {"conv3x3", "Conv", pad1, {{1, 24, 30, 31}, {40, 24, 3, 3}, {40}}, 1},
      {"conv3x3_relu", "Conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation", std::string("Relu")}},
       {{2, 16, 20, 20}, {33, 16, 3, 3}, {33}}, 1},
      {"conv1x1", "Conv", {}, {{1, 64, 28, 28}, {70, 64, 1, 1}, {70}}, 1},
      {"conv_groups", "Conv", {{"group", int64_t{4}}, {"strides", std::vector<int64_t>{2, 2}}}, {{1, 32, 21, 23}, {44, 8, 3, 3}}, 1},
      {"conv_k_blocks", "Conv", pad1, {{1, 300, 9, 10}, {20, 300, 3, 3}}, 1},
      // Implicit GEMM (narrow groups, 3-channel stems) against the im2col
      // path that runtime weights take: strides, pads, dilation, ragged rows.
      {"conv_narrow_groups", "Conv", {{"group", int64_t{6}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{2, 48, 17, 19}, {48, 8, 3, 3}, {48}}, 1},
      {"conv_narrow_groups_s2", "Conv",
       {{"group", int64_t{13}}, {"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
        {"activation", std::string("Relu")}},
       {{1, 208, 15, 14}, {208, 16, 3, 3}, {208}}, 1},
      {"conv_stem_s2", "Conv", {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{1, 3, 41, 39}, {16, 3, 3, 3}, {16}}, 1},
      {"conv_stem_7x7", "Conv", {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 2, 3, 1}}},
       {{1, 3, 30, 33}, {20, 3, 7, 7}}, 1},
      {"conv_groups_dilated", "Conv",
       {{"group", int64_t{4}}, {"dilations", std::vector<int64_t>{2, 3}}, {"pads", std::vector<int64_t>{2, 0, 1, 3}}},
       {{1, 16, 12, 13}, {12, 4, 3, 2}, {12}}, 1},
      {"matmul", "MatMul", {}, {{3, 37, 300}, {300, 150}}, 1},
      {"matmul_vector_rows", "MatMul", {}, {{1, 700}, {700, 1000}}, 1},
      {"matmul_two_rows", "MatMul", {}, {{2, 700}, {700, 1000}}, 1},
      {"gemm_fc_batch3", "Gemm", {{"transB", int64_t{1}}}, {{3, 960}, {1280, 960}, {1280}}, 1},
      {"gemm_fc_batch8", "Gemm", {{"transB", int64_t{1}}}, {{8, 640}, {500, 640}, {500}}, 1},
      {"gemm_transb", "Gemm", {{"transB", int64_t{1}}, {"alpha", 0.5f}}, {{57, 260}, {90, 260}, {90}}, 1},
      {"gemm", "Gemm", {{"beta", 2.0f}}, {{9, 33}, {33, 70}, {1, 70}}, 1},
  };
}

class SgemmOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(SgemmOps, PrepackedWeightsEqualRuntimeWeightsForAnyThreadCount) {
  const OpCase& c = GetParam();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) inputs.push_back(random_tensor(c.shapes[i], 40 + static_cast<uint32_t>(i)));
  NodeInfo node = make_node(c.op, 13, c.attrs, static_cast<int>(inputs.size()));
  const Tensor runtime = kernels::run_kernel_once(node, inputs)[0];
  node.const_inputs.assign(inputs.size(), nullptr);
  node.const_inputs[static_cast<size_t>(c.const_input)] = &inputs[static_cast<size_t>(c.const_input)];
  node.prepack = false;
  const Tensor unpacked = kernels::run_kernel_once(node, inputs)[0];
  EXPECT_TRUE(same_bits(runtime, unpacked)) << c.name << ": constant weights, prepacking off";
  node.prepack = true;
  for (int threads : {1, 2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const Tensor packed = kernels::run_kernel_once(node, inputs, pool.get())[0];
    EXPECT_TRUE(same_bits(runtime, packed)) << c.name << ": pre-packed weights, " << threads << " threads";
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, SgemmOps, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& i) { return i.param.name; });

}  // namespace
}  // namespace spindle
