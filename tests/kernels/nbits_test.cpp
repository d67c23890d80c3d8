// nbits_test.cpp — com.microsoft MatMulNBits (4- and 8-bit block-quantized
// weights) against an independent reference: the weights dequantized one by
// one, then the product summed in double. Shapes cover the fused path of
// few rows (1, 3, 6; float A up to 6 rows) and the prefill path of more rows
// (7, batched [2, 5, K] = 10, 17 to 301: B dequantized into the SGEMM's
// packed panels; one and several
// column blocks, rows split; block sizes 16 to 128), odd M, N and K, K not a
// multiple of block_size (the last block padded),
// packed uint8 and float32 zero points, the default zero point, a bias, and
// constant weights kept by the kernel (the originals absent at run time).
// One and two intra-op threads give the same bits. At accuracy_level 4 a
// product of any row count quantizes A per block to int8 and takes integer
// dot products (fused over the 4-bit codes up to 4 rows, an int8 GEMM on
// unpacked panels from 5): checked against a reference that quantizes A
// itself (max|a| / 127, round half to even), sums the integer products and
// scales per block; the int8 GEMM's primitives at every ISA level against
// its arithmetic written out.
// Bad attributes and inputs give errors naming what was wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "primitives/gemm/nbits.h"
#include "primitives/gemm/qgemm.h"
#include "spindle/cpu.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

// kFloatWide: float32 zero points that are integers, some above 15.
enum class Zp { kNone, kPacked, kFloat, kFloatWide };

struct Quantized {
  int64_t N, K, bs, bits, k_blocks, blob;
  std::vector<uint8_t> b;      // [N, k_blocks, blob]
  std::vector<float> scales;   // N * k_blocks
  std::vector<uint8_t> zp_packed;
  std::vector<float> zp_float;
  std::vector<double> w;       // dequantized, [N][K]
};

// Random codes, scales and zero points; w holds (q - zp) * scale per value.
Quantized make_weights(int64_t N, int64_t K, int64_t bs, int64_t bits, Zp zp, uint32_t seed) {
  Quantized q{N, K, bs, bits, (K + bs - 1) / bs, bs * bits / 8, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  const int qmax = (1 << bits) - 1;
  std::uniform_int_distribution<int> code(0, qmax);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  q.b.assign(static_cast<size_t>(N * q.k_blocks * q.blob), 0);
  q.scales.resize(static_cast<size_t>(N * q.k_blocks));
  const int64_t zp_row = (q.k_blocks * bits + 7) / 8;
  q.zp_packed.assign(static_cast<size_t>(N * zp_row), 0);
  q.zp_float.resize(static_cast<size_t>(N * q.k_blocks));
  q.w.assign(static_cast<size_t>(N * K), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < q.k_blocks; ++blk) {
      const size_t bi = static_cast<size_t>(n * q.k_blocks + blk);
      q.scales[bi] = scale(rng);
      float z = static_cast<float>(1 << (bits - 1));
      if (zp == Zp::kPacked) {
        const int zi = code(rng);
        z = static_cast<float>(zi);
        uint8_t& byte = q.zp_packed[static_cast<size_t>(n * zp_row + (bits == 8 ? blk : blk / 2))];
        byte = static_cast<uint8_t>(bits == 8 ? zi : (blk % 2 == 0 ? (byte & 0xF0) | zi : (byte & 0x0F) | (zi << 4)));
      } else if (zp == Zp::kFloat) {
        z = static_cast<float>(code(rng)) + 0.25f;
      } else if (zp == Zp::kFloatWide) {
        z = static_cast<float>(code(rng) * 9);
      }
      q.zp_float[bi] = z;
      for (int64_t j = 0; j < bs; ++j) {
        const int c = code(rng);  // padding past K gets codes too
        const int64_t k = blk * bs + j;
        uint8_t* blob = &q.b[static_cast<size_t>(bi * q.blob)];
        if (bits == 8) blob[j] = static_cast<uint8_t>(c);
        else blob[j / 2] |= static_cast<uint8_t>(j % 2 == 0 ? c : c << 4);
        if (k < K) q.w[static_cast<size_t>(n * K + k)] = (static_cast<double>(c) - z) * q.scales[bi];
      }
    }
  return q;
}

kernels::NodeInfo nbits_node(int64_t K, int64_t N, int64_t bs, int64_t bits, int64_t accuracy_level = 0) {
  kernels::NodeInfo node;
  node.op_type = "MatMulNBits";
  node.domain = "com.microsoft";
  node.opset = 1;
  node.num_inputs = 6;
  node.num_outputs = 1;
  node.attrs.set("K", K);
  node.attrs.set("N", N);
  node.attrs.set("block_size", bs);
  node.attrs.set("bits", bits);
  node.attrs.set("accuracy_level", accuracy_level);
  return node;
}

// Activations in [-1, 1]: a sine of the index, its frequency and phase set by `seed`.
std::vector<float> activations(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  const double f = 0.7 + 0.13 * seed;
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(0.999 * std::sin(f * static_cast<double>(i) + seed));
  return v;
}

struct Case {
  Shape a_shape;
  int64_t N, K, bs, bits;
  Zp zp;
  bool bias;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "A" << shape_to_string(c.a_shape) << " N=" << c.N << " K=" << c.K << " bs=" << c.bs << " bits=" << c.bits
      << " zp=" << static_cast<int>(c.zp) << " bias=" << c.bias;
}

// Two and three threads (column blocks not a multiple of the thread count),
// and constant weights kept by the kernel (absent at run time): the same
// bits as y.
void expect_same_bits_threaded_and_kept(const kernels::NodeInfo& node, const std::vector<Tensor>& inputs,
                                        const std::vector<float>& y) {
  auto three = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  EXPECT_EQ(kernels::run_kernel_once(node, inputs, three.get())[0].to_vector<float>(), y) << "3 threads";
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  EXPECT_EQ(kernels::run_kernel_once(node, inputs, pool.get())[0].to_vector<float>(), y);
  kernels::NodeInfo owned = node;
  owned.const_inputs = {nullptr, &inputs[1], &inputs[2], inputs[3].defined() ? &inputs[3] : nullptr};
  std::vector<Tensor> dropped = inputs;
  dropped[1] = dropped[2] = dropped[3] = Tensor();
  EXPECT_EQ(kernels::run_kernel_once(owned, dropped, pool.get())[0].to_vector<float>(), y);
  EXPECT_EQ(kernels::run_kernel_once(owned, dropped)[0].to_vector<float>(), y);
}

class MatMulNBitsCase : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulNBitsCase, MatchesDequantizedReferenceAtAnyThreadCount) {
  const Case& c = GetParam();
  const Quantized q = make_weights(c.N, c.K, c.bs, c.bits, c.zp, 7u + static_cast<uint32_t>(c.N * 31 + c.K));
  const auto a = activations(static_cast<size_t>(shape_numel(c.a_shape)), 11);
  const auto bias = activations(static_cast<size_t>(c.N), 13);
  const int64_t rows = shape_numel(c.a_shape) / c.K;

  std::vector<Tensor> inputs = {Tensor::from_vector<float>(c.a_shape, a),
                                Tensor::from_vector<uint8_t>({c.N, q.k_blocks, q.blob}, q.b),
                                Tensor::from_vector<float>({c.N * q.k_blocks}, q.scales), Tensor(), Tensor(), Tensor()};
  if (c.zp == Zp::kPacked)
    inputs[3] = Tensor::from_vector<uint8_t>({static_cast<int64_t>(q.zp_packed.size())}, q.zp_packed);
  if (c.zp == Zp::kFloat) inputs[3] = Tensor::from_vector<float>({c.N, q.k_blocks}, q.zp_float);
  if (c.bias) inputs[5] = Tensor::from_vector<float>({c.N}, bias);
  const kernels::NodeInfo node = nbits_node(c.K, c.N, c.bs, c.bits);

  const auto got = kernels::run_kernel_once(node, inputs);
  Shape ys = c.a_shape;
  ys.back() = c.N;
  ASSERT_EQ(got[0].shape(), ys);
  const auto y = got[0].to_vector<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = c.bias ? bias[static_cast<size_t>(n)] : 0.0, mag = std::abs(want);
      for (int64_t k = 0; k < c.K; ++k) {
        const double t = static_cast<double>(a[static_cast<size_t>(r * c.K + k)]) * q.w[static_cast<size_t>(n * c.K + k)];
        want += t;
        mag += std::abs(t);
      }
      ASSERT_NEAR(y[static_cast<size_t>(r * c.N + n)], want, 1e-5 * mag + 1e-6) << "at (" << r << ", " << n << ")";
    }

  expect_same_bits_threaded_and_kept(node, inputs, y);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulNBitsCase,
    ::testing::Values(Case{{1, 64}, 32, 64, 32, 4, Zp::kPacked, false},      // decode, whole blocks
                      Case{{1, 100}, 37, 100, 32, 4, Zp::kPacked, true},     // odd N, last block padded, odd block count
                      Case{{3, 100}, 37, 100, 16, 4, Zp::kNone, false},      // default zero point 8
                      Case{{3, 100}, 39, 100, 32, 4, Zp::kFloat, true},      // 3 rows, blocks of 32
                      Case{{1, 77}, 19, 77, 64, 4, Zp::kFloat, true},        // float zero points
                      Case{{2, 5, 136}, 45, 136, 32, 4, Zp::kPacked, true},  // batched A, 10 rows: SGEMM
                      Case{{6, 136}, 45, 136, 32, 4, Zp::kPacked, true},     // 6 rows: the last fused
                      Case{{7, 136}, 45, 136, 32, 4, Zp::kFloat, false},     // 7 rows: the first SGEMM
                      Case{{37, 200}, 67, 200, 32, 4, Zp::kPacked, true},    // many rows: dequantize + SGEMM
                      Case{{37, 40}, 300, 40, 128, 4, Zp::kNone, false},     // one padded block, many columns
                      Case{{1, 520}, 1500, 520, 32, 4, Zp::kPacked, false},  // several column blocks
                      Case{{1, 512}, 4001, 512, 32, 4, Zp::kPacked, true},   // decode, split over threads
                      Case{{3, 90}, 21, 90, 32, 8, Zp::kPacked, true},       // 8 bits
                      Case{{37, 90}, 21, 90, 16, 8, Zp::kNone, false},       // 8 bits, default zero point 128
                      Case{{100}, 9, 100, 32, 4, Zp::kPacked, false},        // 1-D A
                      // Prefill: B dequantized into the SGEMM's packed panels.
                      Case{{17, 33}, 35, 33, 16, 4, Zp::kPacked, true},      // 17 rows, blocks of 16, ragged panel
                      Case{{45, 77}, 67, 77, 32, 4, Zp::kNone, false},       // odd M, N, K; default zero point
                      Case{{33, 130}, 300, 130, 64, 4, Zp::kPacked, false},  // several column blocks, K % 64 = 2
                      Case{{29, 300}, 131, 300, 128, 4, Zp::kFloat, true},   // blocks of 128, the last padded
                      Case{{301, 200}, 40, 200, 64, 4, Zp::kPacked, true},   // one column block, rows split
                      Case{{3, 7, 96}, 1025, 96, 32, 4, Zp::kNone, true},    // batched A, 21 rows, wide N
                      Case{{19, 70}, 50, 70, 64, 8, Zp::kPacked, false},     // 8 bits, blocks of 64
                      Case{{23, 260}, 33, 260, 128, 8, Zp::kFloat, true}));  // 8 bits, blocks of 128

// More than 6 rows of float A run the SGEMM on B dequantized into its packed panels:
// the same bits as the float MatMul kernel over the weights dequantized in
// float32 ((q - zero) * scale), at one and two threads.
TEST(MatMulNBits, PrefillGivesMatMulBitsOverDequantizedWeights) {
  for (const int64_t bs : {16, 32, 64, 128}) {
    const int64_t M = 41, N = 70, K = 150;
    const Quantized q = make_weights(N, K, bs, 4, Zp::kPacked, 5u + static_cast<uint32_t>(bs));
    std::vector<float> w(static_cast<size_t>(K * N));  // [K, N] for MatMul
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const size_t bi = static_cast<size_t>(n * q.k_blocks + k / bs);
        const uint8_t byte = q.b[bi * static_cast<size_t>(q.blob) + static_cast<size_t>((k % bs) / 2)];
        const int code = (k % bs) % 2 == 0 ? byte & 0x0F : byte >> 4;
        w[static_cast<size_t>(k * N + n)] = (static_cast<float>(code) - q.zp_float[bi]) * q.scales[bi];
      }
    const Tensor a = Tensor::from_vector<float>({M, K}, activations(static_cast<size_t>(M * K), 3));
    const std::vector<Tensor> inputs = {a, Tensor::from_vector<uint8_t>({N, q.k_blocks, q.blob}, q.b),
                                        Tensor::from_vector<float>({N * q.k_blocks}, q.scales),
                                        Tensor::from_vector<uint8_t>({static_cast<int64_t>(q.zp_packed.size())}, q.zp_packed)};
    kernels::NodeInfo matmul;
    matmul.op_type = "MatMul";
    matmul.opset = 13;
    matmul.num_inputs = 2;
    matmul.num_outputs = 1;
    const auto want = kernels::run_kernel_once(matmul, {a, Tensor::from_vector<float>({K, N}, w)})[0].to_vector<float>();
    EXPECT_EQ(kernels::run_kernel_once(nbits_node(K, N, bs, 4), inputs)[0].to_vector<float>(), want) << "bs " << bs;
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
    EXPECT_EQ(kernels::run_kernel_once(nbits_node(K, N, bs, 4), inputs, pool.get())[0].to_vector<float>(), want)
        << "bs " << bs;
  }
}

// accuracy_level 4, few rows: int8 activations against the 4-bit codes.
class MatMulNBitsInt8Case : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulNBitsInt8Case, MatchesInt8ReferenceAtAnyThreadCount) {
  const Case& c = GetParam();
  const Quantized q = make_weights(c.N, c.K, c.bs, 4, c.zp, 3u + static_cast<uint32_t>(c.N * 7 + c.K));
  auto a = activations(static_cast<size_t>(shape_numel(c.a_shape)), 5);
  for (size_t i = 0; i < a.size(); i += 7) a[i] *= 3.0f;  // uneven magnitudes across a block
  if (a.size() > 40) std::fill(a.begin() + 8, a.begin() + 40, 0.0f);  // an all-zero block (scale 0)
  const auto bias = activations(static_cast<size_t>(c.N), 2);
  const int64_t rows = shape_numel(c.a_shape) / c.K, kb = q.k_blocks;

  std::vector<Tensor> inputs = {Tensor::from_vector<float>(c.a_shape, a),
                                Tensor::from_vector<uint8_t>({c.N, kb, q.blob}, q.b),
                                Tensor::from_vector<float>({c.N, kb}, q.scales), Tensor(), Tensor(), Tensor()};
  if (c.zp == Zp::kPacked)
    inputs[3] = Tensor::from_vector<uint8_t>({static_cast<int64_t>(q.zp_packed.size())}, q.zp_packed);
  if (c.zp == Zp::kFloatWide) inputs[3] = Tensor::from_vector<float>({c.N * kb}, q.zp_float);
  if (c.bias) inputs[5] = Tensor::from_vector<float>({c.N}, bias);
  const kernels::NodeInfo node = nbits_node(c.K, c.N, c.bs, 4, 4);
  const auto y = kernels::run_kernel_once(node, inputs)[0].to_vector<float>();
  ASSERT_EQ(y.size(), static_cast<size_t>(rows * c.N));

  // Reference: A quantized per block, codes read back from B.
  std::vector<int> qa(static_cast<size_t>(rows * kb * c.bs), 0);
  std::vector<float> sa(static_cast<size_t>(rows * kb));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < kb; ++b) {
      float amax = 0.0f;
      for (int64_t k = b * c.bs; k < std::min(c.K, (b + 1) * c.bs); ++k)
        amax = std::max(amax, std::fabs(a[static_cast<size_t>(r * c.K + k)]));
      sa[static_cast<size_t>(r * kb + b)] = amax / 127.0f;
      for (int64_t k = b * c.bs; k < std::min(c.K, (b + 1) * c.bs); ++k)
        qa[static_cast<size_t>(r * kb * c.bs + k)] =
            amax == 0.0f ? 0 : static_cast<int>(std::nearbyint(a[static_cast<size_t>(r * c.K + k)] * (127.0f / amax)));
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = c.bias ? bias[static_cast<size_t>(n)] : 0.0, mag = std::abs(want);
      for (int64_t b = 0; b < kb; ++b) {
        const size_t bi = static_cast<size_t>(n * kb + b);
        int64_t dot = 0;
        for (int64_t j = 0; j < c.bs && b * c.bs + j < c.K; ++j) {
          const uint8_t byte = q.b[bi * static_cast<size_t>(q.blob) + static_cast<size_t>(j / 2)];
          const int code = j % 2 == 0 ? byte & 0x0F : byte >> 4;
          dot += (code - static_cast<int>(q.zp_float[bi])) * qa[static_cast<size_t>(r * kb * c.bs + b * c.bs + j)];
        }
        const double t = static_cast<double>(dot) * sa[static_cast<size_t>(r * kb + b)] * q.scales[bi];
        want += t;
        mag += std::abs(t);
      }
      ASSERT_NEAR(y[static_cast<size_t>(r * c.N + n)], want, 2e-6 * mag + 1e-7) << "at (" << r << ", " << n << ")";
    }

  // Not the float product: the int8 rounding of A shows.
  const auto y_float = kernels::run_kernel_once(nbits_node(c.K, c.N, c.bs, 4, 0), inputs)[0].to_vector<float>();
  EXPECT_NE(y_float, y);
  expect_same_bits_threaded_and_kept(node, inputs, y);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulNBitsInt8Case,
    ::testing::Values(Case{{1, 64}, 32, 64, 32, 4, Zp::kPacked, false},      // whole blocks
                      Case{{1, 100}, 37, 100, 32, 4, Zp::kPacked, true},     // odd N, last block padded
                      Case{{3, 100}, 37, 100, 16, 4, Zp::kNone, false},      // blocks of 16, default zero point
                      Case{{5, 77}, 19, 77, 16, 4, Zp::kPacked, true},       // 5 rows: groups of 4 and 1
                      Case{{2, 200}, 41, 200, 64, 4, Zp::kNone, true},       // blocks of 64, K % 64 = 8
                      Case{{1, 300}, 1500, 300, 128, 4, Zp::kPacked, false}, // several column blocks
                      Case{{1, 512}, 4001, 512, 32, 4, Zp::kPacked, true},   // decode, split over threads
                      Case{{2, 8, 130}, 23, 130, 128, 4, Zp::kPacked, true}, // batched A, 16 rows
                      Case{{1, 520}, 9, 520, 256, 4, Zp::kNone, false},      // blocks of 256
                      // The int8 GEMM: rows in tiles of 4 and a rest, columns in pairs of 16-column panels
                      // and a rest, column blocks and row blocks over the threads.
                      Case{{40, 100}, 37, 100, 32, 4, Zp::kPacked, true},
                      Case{{33, 77}, 50, 77, 16, 4, Zp::kNone, false},
                      Case{{2, 10, 200}, 16, 200, 64, 4, Zp::kPacked, true},
                      Case{{64, 300}, 1500, 300, 128, 4, Zp::kPacked, false},
                      Case{{7, 520}, 33, 520, 256, 4, Zp::kPacked, true},
                      Case{{129, 96}, 70, 96, 32, 4, Zp::kNone, true},
                      // Zero points above 15 (float32 integers): the fused int8 product at any row count.
                      Case{{20, 96}, 21, 96, 32, 4, Zp::kFloatWide, true}));

// The int8 arithmetic of NbitsQ8Gemm and NbitsQ4A written out: for rows
// r and columns [n0, N), block after block, the integer sum of qa(r, p) *
// (code - zero) over A's layout positions p (per group of min(32, bs)
// values, the even k then the odd k), then acc = fma(float(sum), sa * sb,
// acc); plus the bias. Columns below n0 are -1.
std::vector<float> int8_reference(const Quantized& q, const std::vector<uint8_t>& zint, int64_t N, int64_t bs,
                                  int64_t rows, int64_t n0, const std::function<int32_t(int64_t, int64_t)>& qa,
                                  const std::vector<float>& sa, const std::vector<float>& bias) {
  const int64_t kb = q.k_blocks, G = std::min<int64_t>(bs, 32), half = G / 2;
  std::vector<float> want(static_cast<size_t>(rows * N), -1.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = n0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        const size_t bi = static_cast<size_t>(n * kb + b);
        int32_t dot = 0;
        for (int64_t p = 0; p < bs; ++p) {
          const int64_t i = p % G, k = p / G * G + 2 * (i % half) + i / half;
          const uint8_t byte = q.b[bi * static_cast<size_t>(q.blob) + static_cast<size_t>(k / 2)];
          const int32_t code = k % 2 == 0 ? byte & 0x0F : byte >> 4;
          dot += qa(r, b * bs + p) * (code - zint[bi]);
        }
        acc = std::fma(static_cast<float>(dot), sa[static_cast<size_t>(r * kb + b)] * q.scales[bi], acc);
      }
      want[static_cast<size_t>(r * N + n)] = acc + bias[static_cast<size_t>(n)];
    }
  return want;
}

// The int8 GEMM's primitives (nbits.h's NbitsQ8Gemm) at every ISA level the
// CPU has, against their arithmetic written out: a block's integer sum of
// (u - 128) * (code - zero) over A's layout (per group of min(32, bs)
// values, the even k then the odd k), then acc = fma(float(sum), sa * sb,
// acc) block after block, plus the bias. AVX2 and AVX-512 (with and without
// VNNI) give those bits; the baseline (separate multiply and add) is within
// rounding. Columns from an offset (n0 > 0) land at their own index.
TEST(MatMulNBitsQ8Gemm, EveryIsaLevelComputesItsArithmetic) {
  using PackFn = void (*)(const kernels::NbitsWeights&, const uint8_t*, int64_t, int64_t, uint8_t*);
  using GemmFn = void (*)(const kernels::NbitsWeights&, const uint8_t*, int64_t, int64_t, const kernels::NbitsQ8Gemm&);
  struct Level {
    PackFn pack;
    GemmFn gemm;
    const char* name;
    bool exact;
  };
  std::vector<Level> levels = {{&kernels::baseline::nbits_q8_pack, &kernels::baseline::nbits_q8_gemm, "baseline", false}};
  if (detected_isa_level() >= IsaLevel::kAvx2)
    levels.push_back({&kernels::avx2::nbits_q8_pack, &kernels::avx2::nbits_q8_gemm, "avx2", true});
  if (detected_isa_level() >= IsaLevel::kAvx512)
    levels.push_back({&kernels::avx512::nbits_q8_pack, &kernels::avx512::nbits_q8_gemm, "avx512", true});

  for (const int64_t bs : {16, 32, 64, 256}) {
    const int64_t N = 53, K = bs == 256 ? 300 : 200, rows = 13, n0 = 5;
    const Quantized q = make_weights(N, K, bs, 4, Zp::kPacked, static_cast<uint32_t>(bs));
    const int64_t kb = q.k_blocks, ld = kb * bs;
    std::vector<uint8_t> zint(q.zp_float.begin(), q.zp_float.end());
    kernels::NbitsWeights w;
    w.b = q.b.data(), w.scale = q.scales.data(), w.zero = q.zp_float.data();
    w.N = N, w.K = K, w.k_blocks = kb, w.block_size = bs, w.blob = q.blob, w.bits = 4;
    std::mt19937 rng(static_cast<uint32_t>(bs + 1));
    std::vector<uint8_t> u(static_cast<size_t>(rows * ld));
    for (auto& v : u) v = static_cast<uint8_t>(1 + rng() % 255);  // qa in [-127, 127]
    std::vector<float> sa = activations(static_cast<size_t>(rows * kb), 3), bias = activations(N, 4);
    for (auto& v : sa) v = std::fabs(v) * 0.01f;

    const std::vector<float> want = int8_reference(
        q, zint, N, bs, rows, n0, [&](int64_t r, int64_t p) { return u[static_cast<size_t>(r * ld + p)] - 128; }, sa,
        bias);

    for (const Level& level : levels)
      for (const bool vnni : {false, true}) {
        if (vnni && (std::string(level.name) != "avx512" || !kernels::nn::cpu_has_avx512_vnni())) continue;
        std::vector<uint8_t> packed(static_cast<size_t>((N - n0 + 15) / 16 * kernels::nbits_q8_panel_bytes(kb, bs)));
        level.pack(w, zint.data(), n0, N, packed.data());
        std::vector<float> y(static_cast<size_t>(rows * N), -1.0f);
        kernels::NbitsQ8Gemm p;
        p.a = u.data(), p.a_scale = sa.data(), p.ld = ld, p.rows = rows, p.bias = bias.data();
        p.y = y.data(), p.ldy = N, p.vnni = vnni;
        level.gemm(w, packed.data(), n0, N, p);
        for (size_t i = 0; i < y.size(); ++i) {
          if (level.exact) ASSERT_EQ(y[i], want[i]) << level.name << " vnni " << vnni << " bs " << bs << " at " << i;
          else ASSERT_NEAR(y[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << level.name << " bs " << bs << " at " << i;
        }
      }
  }
}

// The kept 4-bit panels (nbits.h's NbitsQ4Panels) at every ISA level: the
// few-row product against the arithmetic written out (integer sum of qa *
// (code - zero), then acc = fma(float(sum), sa * sb, acc) block after
// block, plus the bias), exact at AVX-512 with and without VNNI and within
// rounding at the plain-loop levels; and the panels unpacked for the int8
// GEMM give the GEMM the bits of the few-row product, so a row's result does
// not depend on how many rows share its call. Zero points up to 255 (the
// few-row product's range), 1 to 4 rows, columns from a panel boundary.
TEST(MatMulNBitsQ4Panels, EveryIsaLevelComputesItsArithmetic) {
  using PackFn = void (*)(const kernels::NbitsWeights&, const uint8_t*, uint8_t*);
  using GemvFn = void (*)(const kernels::NbitsQ4Panels&, const kernels::NbitsQ4A&, int64_t, int64_t);
  using ToQ8Fn = void (*)(const kernels::NbitsQ4Panels&, int64_t, int64_t, uint8_t*);
  using GemmFn = void (*)(const kernels::NbitsWeights&, const uint8_t*, int64_t, int64_t, const kernels::NbitsQ8Gemm&);
  struct Level {
    PackFn pack;
    GemvFn gemv;
    ToQ8Fn to_q8;
    GemmFn gemm;
    const char* name;
    bool exact;
  };
  std::vector<Level> levels = {{&kernels::baseline::nbits_q4_pack, &kernels::baseline::nbits_q4_gemv,
                                &kernels::baseline::nbits_q4_to_q8, &kernels::baseline::nbits_q8_gemm, "baseline",
                                false}};
  if (detected_isa_level() >= IsaLevel::kAvx2)
    levels.push_back({&kernels::avx2::nbits_q4_pack, &kernels::avx2::nbits_q4_gemv, &kernels::avx2::nbits_q4_to_q8,
                      &kernels::avx2::nbits_q8_gemm, "avx2", false});
  if (detected_isa_level() >= IsaLevel::kAvx512)
    levels.push_back({&kernels::avx512::nbits_q4_pack, &kernels::avx512::nbits_q4_gemv,
                      &kernels::avx512::nbits_q4_to_q8, &kernels::avx512::nbits_q8_gemm, "avx512", true});

  for (const int64_t bs : {16, 32, 64, 256})
    for (const bool wide : {false, true}) {
      const int64_t N = 150, K = bs == 256 ? 300 : 200, n0 = 16;
      const Quantized q = make_weights(N, K, bs, 4, Zp::kPacked, static_cast<uint32_t>(bs) + (wide ? 50u : 0u));
      const int64_t kb = q.k_blocks, ld = kb * bs;
      std::vector<uint8_t> zint(q.zp_float.begin(), q.zp_float.end());
      if (wide)
        for (size_t i = 0; i < zint.size(); i += 3) zint[i] = static_cast<uint8_t>(100 + i % 156);
      kernels::NbitsWeights w;
      w.b = q.b.data(), w.scale = q.scales.data();
      w.N = N, w.K = K, w.k_blocks = kb, w.block_size = bs, w.blob = q.blob, w.bits = 4;
      std::mt19937 rng(static_cast<uint32_t>(bs + 7));
      const int64_t rows = 4;
      std::vector<int8_t> qa(static_cast<size_t>(rows * ld));
      for (auto& v : qa) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      std::vector<int32_t> sum(static_cast<size_t>(rows * kb), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p < ld; ++p) sum[static_cast<size_t>(r * kb + p / bs)] += qa[static_cast<size_t>(r * ld + p)];
      std::vector<float> sa = activations(static_cast<size_t>(rows * kb), 3), bias = activations(N, 4);
      for (auto& v : sa) v = std::fabs(v) * 0.01f;

      const std::vector<float> want = int8_reference(
          q, zint, N, bs, rows, n0, [&](int64_t r, int64_t p) { return int32_t{qa[static_cast<size_t>(r * ld + p)]}; },
          sa, bias);

      for (const Level& level : levels)
        for (const bool vnni : {false, true}) {
          if (vnni && (std::string(level.name) != "avx512" || !kernels::nn::cpu_has_avx512_vnni())) continue;
          std::vector<uint8_t> panels(static_cast<size_t>((N + 15) / 16 * kernels::nbits_q4_panel_bytes(kb, bs)));
          level.pack(w, zint.data(), panels.data());
          const kernels::NbitsQ4Panels pw{panels.data(), N, kb, bs};
          for (int64_t R = 1; R <= rows; ++R) {
            std::vector<float> y(static_cast<size_t>(rows * N), -1.0f);
            kernels::NbitsQ4A p;
            p.q = qa.data(), p.scale = sa.data(), p.sum = sum.data(), p.ld = ld, p.rows = R;
            p.bias = bias.data(), p.y = y.data(), p.ldy = N, p.vnni = vnni;
            level.gemv(pw, p, n0, N);
            for (int64_t i = 0; i < R * N; ++i) {
              const size_t at = static_cast<size_t>(i);
              if (i % N < n0) ASSERT_EQ(y[at], -1.0f) << level.name << " wrote column " << i % N;
              else if (level.exact) ASSERT_EQ(y[at], want[at]) << level.name << " vnni " << vnni << " bs " << bs << " R " << R << " at " << i;
              else ASSERT_NEAR(y[at], want[at], 1e-5f * (1.0f + std::fabs(want[at]))) << level.name << " bs " << bs << " at " << i;
            }
          }
          if (wide) continue;  // (the GEMM's panels hold code - zero as int8: zero points up to 15)
          std::vector<uint8_t> q8(static_cast<size_t>((N - n0 + 15) / 16 * kernels::nbits_q8_panel_bytes(kb, bs)));
          level.to_q8(pw, n0, N, q8.data());
          std::vector<uint8_t> u(qa.size());
          for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<uint8_t>(qa[i] + 128);
          std::vector<float> y(static_cast<size_t>(rows * N), -1.0f);
          kernels::NbitsQ8Gemm g;
          g.a = u.data(), g.a_scale = sa.data(), g.ld = ld, g.rows = rows, g.bias = bias.data();
          g.y = y.data(), g.ldy = N, g.vnni = vnni;
          level.gemm(w, q8.data(), n0, N, g);
          for (int64_t i = 0; i < rows * N; ++i) {
            const size_t at = static_cast<size_t>(i);
            if (i % N < n0) continue;
            if (level.exact) ASSERT_EQ(y[at], want[at]) << level.name << " GEMM vnni " << vnni << " bs " << bs << " at " << i;
            else ASSERT_NEAR(y[at], want[at], 1e-5f * (1.0f + std::fabs(want[at]))) << level.name << " GEMM bs " << bs << " at " << i;
          }
        }
    }
}

// accuracy_level 4 with what the int8 path does not cover runs the float
// product: non-integer float zero points, 8 bits.
TEST(MatMulNBits, Int8LevelFallsBackToFloatWhereNotCovered) {
  struct Fallback {
    int64_t rows, bits;
    Zp zp;
  };
  for (const Fallback f : {Fallback{1, 4, Zp::kFloat}, Fallback{20, 4, Zp::kFloat}, Fallback{2, 8, Zp::kPacked}}) {
    const int64_t N = 13, K = 96, bs = 32;
    const Quantized q = make_weights(N, K, bs, f.bits, f.zp, 9u);
    std::vector<Tensor> inputs = {Tensor::from_vector<float>({f.rows, K}, activations(static_cast<size_t>(f.rows * K), 1)),
                                  Tensor::from_vector<uint8_t>({N, q.k_blocks, q.blob}, q.b),
                                  Tensor::from_vector<float>({N * q.k_blocks}, q.scales), Tensor()};
    if (f.zp == Zp::kFloat) inputs[3] = Tensor::from_vector<float>({N * q.k_blocks}, q.zp_float);
    else inputs[3] = Tensor::from_vector<uint8_t>({static_cast<int64_t>(q.zp_packed.size())}, q.zp_packed);
    EXPECT_EQ(kernels::run_kernel_once(nbits_node(K, N, bs, f.bits, 4), inputs)[0].to_vector<float>(),
              kernels::run_kernel_once(nbits_node(K, N, bs, f.bits, 0), inputs)[0].to_vector<float>())
        << "rows " << f.rows << " bits " << f.bits;
  }
}

TEST(MatMulNBits, BadAttributesAndInputsGiveClearErrors) {
  const int64_t N = 5, K = 40, bs = 16;
  const Quantized q = make_weights(N, K, bs, 4, Zp::kPacked, 3);
  const std::vector<Tensor> good = {Tensor::from_vector<float>({2, K}, activations(2 * K, 1)),
                                    Tensor::from_vector<uint8_t>({N, q.k_blocks, q.blob}, q.b),
                                    Tensor::from_vector<float>({N * q.k_blocks}, q.scales),
                                    Tensor::from_vector<uint8_t>({static_cast<int64_t>(q.zp_packed.size())}, q.zp_packed)};
  EXPECT_EQ(kernels::run_kernel_once(nbits_node(K, N, bs, 4), good)[0].shape(), (Shape{2, N}));
  auto error = [&](const kernels::NodeInfo& node, const std::vector<Tensor>& in, StatusCode* code = nullptr) {
    return testing::error_of([&] { kernels::run_kernel_once(node, in); }, code);
  };
  auto has = [](const std::string& msg, const std::string& needle) {
    EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
  };
  StatusCode code = StatusCode::kOk;
  has(error(nbits_node(K, N, bs, 3), good, &code), "bits=3 is not supported");
  EXPECT_EQ(code, StatusCode::kUnsupported);
  has(error(nbits_node(K, N, 10, 4), good), "block_size=10 is invalid: expected a power of 2 >= 16");
  has(error(nbits_node(K, N, 8, 4), good), "block_size=8");
  kernels::NodeInfo no_k = nbits_node(K, N, bs, 4);
  no_k.attrs = Attributes{{"N", N}, {"block_size", bs}};
  has(error(no_k, good), "attribute K is required");

  std::vector<Tensor> bad = good;
  bad[1] = Tensor::from_vector<uint8_t>({N, q.k_blocks + 1, q.blob}, std::vector<uint8_t>(static_cast<size_t>(N * (q.k_blocks + 1) * q.blob)));
  has(error(nbits_node(K, N, bs, 4), bad), "input B is uint8 5x4x8, expected uint8 5x3x8");
  bad = good;
  bad[2] = Tensor::from_vector<float>({N * q.k_blocks - 1}, std::vector<float>(static_cast<size_t>(N * q.k_blocks - 1), 1.0f));
  has(error(nbits_node(K, N, bs, 4), bad), "input scales has shape 14, expected 15 or 5x3");
  bad = good;
  bad[3] = Tensor::from_vector<uint8_t>({3}, {1, 2, 3});
  has(error(nbits_node(K, N, bs, 4), bad), "input zero_points is uint8 3, expected uint8 with 10 values");
  bad = good;
  bad[0] = Tensor::from_vector<float>({2, K + 1}, activations(2 * (K + 1), 2));
  has(error(nbits_node(K, N, bs, 4), bad), "expected [..., 40] (attribute K)");
  bad = good;
  bad.push_back(Tensor::from_vector<int32_t>({K}, std::vector<int32_t>(static_cast<size_t>(K), 0)));
  has(error(nbits_node(K, N, bs, 4), bad, &code), "g_idx");
  EXPECT_EQ(code, StatusCode::kUnsupported);
  bad.push_back(Tensor::from_vector<float>({3}, {1, 2, 3}));
  bad[4] = Tensor();
  has(error(nbits_node(K, N, bs, 4), bad), "input bias has shape 3, expected 5");
  // Attributes naming a huge B against small data: an error, nothing allocated from them.
  has(error(nbits_node(int64_t{1} << 39, int64_t{1} << 40, bs, 4), good), "N * k_blocks");
  bad = good;
  bad[0] = Tensor::from_vector<float>({1, 1 << 20}, std::vector<float>(size_t{1} << 20, 0.0f));
  has(error(nbits_node(int64_t{1} << 20, int64_t{1} << 40, bs, 4), bad), "input B is uint8 5x3x8");
  has(error(nbits_node(int64_t{1} << 41, N, bs, 4), good), "expected 1 <= K <= 2^40");
  // A bad constant B is refused when the kernel is created.
  kernels::NodeInfo const_bad = nbits_node(K, N, bs, 4);
  const Tensor small_b = Tensor::from_vector<uint8_t>({N, 1, q.blob}, std::vector<uint8_t>(static_cast<size_t>(N * q.blob)));
  const_bad.const_inputs = {nullptr, &small_b, &good[2]};
  has(error(const_bad, good), "input B is uint8 5x1x8");
}

}  // namespace
}  // namespace spindle
