// gemm_bench.cpp — single-thread SGEMM throughput: spindle's packed SGEMM
// (src/primitives/gemm/sgemm.h, active ISA level; SPINDLE_ISA caps it) with the
// weights pre-packed as a session does, with nothing pre-packed, and serial
// BLIS (cblas_sgemm), on the GEMM shapes of CNN layers and FC layers.
// Counter GFLOPS = 2 M N K / time. Shapes: M x N x K with C = A (M x K,
// weights) * B (K x N, im2col columns or activations), Conv's orientation;
// FC layers are M x N x K (M <= 8) with the weights as B, and so are a
// transformer's 128-token products (from kFirstWeightsB on). peak_fma: the
// core's own ceiling for those figures, 12 independent chains of 8-lane
// fused multiply-adds in registers (AVX2 + FMA; skipped without them), and
// peak_fma512 the same with 16 lanes (AVX-512).
//
//   build/bench/kernels/bench_gemm --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <random>
#include <vector>

#include "primitives/gemm/sgemm.h"

namespace {

using spindle::kernels::nn::PackedMatrix;
using spindle::kernels::nn::sgemm;
using spindle::kernels::nn::SgemmExtras;

struct Shape3 {
  int64_t m, n, k;
};

// {M, N, K}: ResNet 3x3 im2col (stages 1..4 at 224x224), ResNet-50 / MobileNet
// 1x1 layers, PP-OCR det / rec layers, FC layers (M = 1) and small-M
// products (M <= 8: the weights are B), 1x1 with K = 16, conv stems,
// a decoder's 128-token products and the same without a 1..3-row edge.
const Shape3 kShapes[] = {
    {64, 3136, 576},  {128, 784, 1152}, {256, 196, 2304}, {512, 49, 4608},  // resnet 3x3
    {64, 3136, 256},  {256, 3136, 64},  {1024, 196, 256}, {96, 784, 576},   // 1x1 / mobilenet expand
    {48, 6400, 216},  {120, 480, 480},  {1, 1000, 512},   {1, 1000, 2048},  // ocr det / rec, FC
    {1, 1280, 960},   {1, 1000, 1280},  {2, 1000, 1280},  {4, 1000, 1280},  // mobilenet_v3 classifier, small M
    {8, 1000, 1280},  {64, 12544, 16},  {16, 12544, 27},  {64, 12544, 147}, // 1x1 small K, stems (3x3 s2, 7x7 s2)
    {440, 49, 440},   {440, 64, 440},   {208, 196, 208},  {48, 12544, 32},  // regnet_y_400mf 1x1
    {128, 1408, 512}, {128, 512, 1408}, {128, 512, 512},  {128, 8000, 512}, // decoder prefill (weights as B)
    {126, 1408, 512}, {140, 1408, 512}, {126, 1024, 512}, {126, 1024, 256}, // no row edge (126, 140 rows)
};
// Shapes from this index on are a transformer's MatMuls: activations as A,
// the weights pre-packed as B.
constexpr int kFirstWeightsB = 24;

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

enum Impl { kPacked, kUnpacked, kBlis };

void run(benchmark::State& st, Impl impl) {
  const Shape3 s = kShapes[st.range(0)];
  const auto a = random_floats(static_cast<size_t>(s.m * s.k));
  const auto b = random_floats(static_cast<size_t>(s.k * s.n));
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  const bool fc = s.m <= 8 || st.range(0) >= kFirstWeightsB;
  PackedMatrix packed = fc ? PackedMatrix::pack_b(false, s.n, s.k, b.data(), s.n)
                           : PackedMatrix::pack_a(false, s.m, s.k, 1.0f, a.data(), s.k);
  SgemmExtras ex;
  if (impl == kPacked) (fc ? ex.packed_b : ex.packed_a) = packed.panel(0);
  for (auto _ : st) {
    if (impl == kBlis)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f,
                  c.data(), s.n);
    else
      sgemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n, ex);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * s.m * s.n * s.k, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  st.SetLabel(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
}

#if defined(__x86_64__)
constexpr int64_t kPeakSteps = 1 << 20;
constexpr int kPeakChains = 12;  // 2 FMA pipes x 4-cycle latency, with room

__attribute__((target("avx2,fma"))) float fma_chains(float seed) {
  __m256 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_set1_ps(seed * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (int64_t s = 0; s < kPeakSteps; ++s)
#pragma GCC unroll 12
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  float sum = 0.0f;
  for (int i = 0; i < kPeakChains; ++i) sum += _mm256_cvtss_f32(acc[i]);
  return sum;
}

void peak_fma(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    st.SkipWithError("no AVX2 + FMA on this CPU");
    return;
  }
  float seed = 1.0f;
  for (auto _ : st) {
    seed = fma_chains(seed) * 1e-9f + 1.0f;
    benchmark::DoNotOptimize(seed);
  }
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * 8 * kPeakChains * kPeakSteps, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(peak_fma)->Unit(benchmark::kMillisecond);

// GCC 12's AVX-512 reductions pass an "undefined" vector that
// -Wuninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The same with 16-lane fused multiply-adds (AVX-512): the ceiling of
// spindle's AVX-512 SGEMM.
__attribute__((target("avx512f"))) float fma_chains512(float seed) {
  __m512 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_ps(seed * static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (int64_t s = 0; s < kPeakSteps; ++s)
#pragma GCC unroll 12
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  float sum = 0.0f;
  for (int i = 0; i < kPeakChains; ++i) sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

#pragma GCC diagnostic pop

void peak_fma512(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512f")) {
    st.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  float seed = 1.0f;
  for (auto _ : st) {
    seed = fma_chains512(seed) * 1e-9f + 1.0f;
    benchmark::DoNotOptimize(seed);
  }
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * 16 * kPeakChains * kPeakSteps, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(peak_fma512)->Unit(benchmark::kMillisecond);
#endif

void shapes(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kShapes)); ++i) b->Arg(i);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(run, spindle_prepacked, kPacked)->Apply(shapes);
BENCHMARK_CAPTURE(run, spindle, kUnpacked)->Apply(shapes);
BENCHMARK_CAPTURE(run, blis, kBlis)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
