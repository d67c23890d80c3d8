// qgemm_bench.cpp — single-thread 8-bit integer GEMM throughput
// (src/primitives/gemm/qgemm.h): uint8 activations (m x K) times int8
// weights (K x n) packed once as a session does, int32 out, at each ISA
// level this CPU runs (AVX-512 with and without VNNI), on transformer
// shapes: decode-like (m = 1..16 rows) and prefill-like (m = 128), and on
// ResNet-50's 3x3 convolutions (whole, and in QLinearConv's 24 x 64 calls),
// and on ResNet-50's convolutions requantized to uint8 as QLinearConv runs
// them (its row blocks, "/requant"), and on the int8 encoder's projections
// dequantized to float as DynamicQuantizeMatMul runs them ("/float"). Counter GOPS = 2 m n K / time (a
// multiply and an add per product).
//
//   build/bench/kernels/bench_qgemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "primitives/gemm/qgemm.h"
#include "spindle/cpu.h"

namespace {

using spindle::kernels::nn::QGemmArgs;
using spindle::kernels::nn::QGemmPackedB;

struct Shape3 {
  int64_t m, n, k;
  int64_t rows = 0, cols = 0;  // calls of at most rows x cols (0: the whole product in one call)
  bool requant = false;        // QLinearConv's requantizing epilogue (uint8 out, weight zero points 0)
  bool dequant = false;        // DynamicQuantizeMatMul's float epilogue (scale and bias per column)
};

// Encoder / decoder projections (hidden 256 .. 768, FFN 4x) at 1, 4, 16
// and 128 rows.
const Shape3 kShapes[] = {
    {1, 768, 768},   {1, 3072, 768},  {1, 768, 3072},  {1, 1024, 256},  {4, 768, 768},   {16, 768, 768},
    {16, 3072, 768}, {128, 256, 256}, {128, 1024, 256}, {128, 256, 1024}, {128, 768, 768}, {128, 3072, 768},
    // ResNet-50's 3x3 convolutions as im2col GEMMs (M pixels, N output
    // channels, K = 9 x input channels).
    {3136, 64, 576}, {784, 128, 1152}, {196, 256, 2304}, {49, 512, 4608},
    // The same in calls of 24 rows x 64 columns, as QLinearConv's parallel
    // blocks split them (src/kernels/nn/qlinear.cpp).
    {3136, 64, 576, 24, 64}, {784, 128, 1152, 24, 64}, {196, 256, 2304, 24, 64}, {49, 512, 4608, 24, 64},
    // ResNet-50's int8 convolutions as QLinearConv runs them: requantized to
    // uint8 in the GEMM's epilogue, in its row blocks (3x3 as im2col, 1x1
    // straight on the NHWC input).
    {3136, 64, 576, 54, 64, true}, {3136, 256, 64, 120, 256, true}, {784, 512, 128, 60, 512, true},
    {784, 128, 1152, 54, 128, true}, {3136, 128, 256, 114, 128, true}, {196, 1024, 256, 24, 1024, true},
    // The int8 encoder's projections (hidden 384, 128 tokens) to float, in
    // DynamicQuantizeMatMul's blocks of at most 96 rows x 64 columns.
    {128, 1152, 384, 96, 64, false, true}, {128, 384, 384, 96, 64, false, true},
    {128, 1536, 384, 96, 64, false, true}, {128, 384, 1536, 96, 64, false, true},
};

void run(benchmark::State& state, Shape3 s, int level, bool vnni) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
  for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
  const QGemmPackedB packed = spindle::kernels::nn::qgemm_pack_b(b.data(), true, s.k, s.n, s.n);
  std::vector<int32_t> c(static_cast<size_t>(s.m * s.n));
  const int32_t zb = s.requant ? 0 : 3;
  QGemmArgs args;
  args.a = a.data();
  args.lda = s.k;
  args.a_zero_point = 128;
  args.m = s.m;
  args.b = &packed;
  args.b_zero_points = &zb;
  args.c = c.data();
  args.ldc = s.n;
  std::vector<float> scale(static_cast<size_t>(s.n), 1.0f / 4096.0f);
  std::vector<int32_t> bias(static_cast<size_t>(s.n), 100);
  std::vector<uint8_t> yq(static_cast<size_t>(s.m * s.n));
  spindle::kernels::RequantRow rq;
  rq.bias = bias.data();
  rq.scale = scale.data();
  rq.zp = 3;
  rq.lo = 0;
  rq.hi = 255;
  if (s.requant) {
    args.requant = &rq;
    args.ldyq = s.n;
  }
  std::vector<float> y(s.dequant ? static_cast<size_t>(s.m * s.n) : 0), fbias(static_cast<size_t>(s.n), 0.5f);
  if (s.dequant) {
    args.scale = scale.data();
    args.per_column_scale = true;
    args.bias = fbias.data();
    args.ldy = s.n;
  }
  const int64_t rb = s.rows > 0 ? s.rows : s.m, cb = s.cols > 0 ? s.cols : s.n;
  for (auto _ : state) {
    for (int64_t r0 = 0; r0 < s.m; r0 += rb)
      for (int64_t c0 = 0; c0 < s.n; c0 += cb) {
        QGemmArgs part = args;
        part.a = a.data() + r0 * s.k;
        part.m = std::min(rb, s.m - r0);
        part.col_begin = c0;
        part.col_end = std::min(s.n, c0 + cb);
        part.c = c.data() + r0 * s.n + c0;
        part.yq = yq.data() + r0 * s.n + c0;
        if (s.dequant) part.y = y.data() + r0 * s.n + c0;
        spindle::kernels::nn::qgemm_at_level(part, level, vnni);
      }
    benchmark::DoNotOptimize(c.data());
    benchmark::DoNotOptimize(yq.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * static_cast<double>(s.m * s.n * s.k) * state.iterations(),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

#if defined(__x86_64__)
// GCC 12's AVX-512 reductions pass an "undefined" vector that
// -Wuninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The core's own ceiling for the GOPS above: 12 independent chains of
// vpdpbusd (64 multiply-adds each) in registers, no loads.
constexpr int kPeakChains = 12;
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t vnni_chains(int64_t steps, int32_t seed) {
  __m512i acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_epi32(seed + i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  for (int64_t s = 0; s < steps; ++s)
#pragma GCC unroll 12
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  int32_t sum = 0;
  for (int i = 0; i < kPeakChains; ++i) sum += _mm512_reduce_add_epi32(acc[i]);
  return sum;
}

#pragma GCC diagnostic pop

void peak_vnni(benchmark::State& state) {
  constexpr int64_t kSteps = 1 << 20;
  int32_t seed = 1;
  for (auto _ : state) {
    seed = vnni_chains(kSteps, seed) & 7;
    benchmark::DoNotOptimize(seed);
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * 64 * kPeakChains * kSteps * state.iterations(),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
#endif

int register_all() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512vnni")) benchmark::RegisterBenchmark("peak_vnni", peak_vnni)->Unit(benchmark::kMillisecond);
#endif
  struct L {
    int level;
    bool vnni;
    const char* name;
  };
  std::vector<L> levels = {{0, false, "baseline"}};
  if (spindle::detected_isa_level() >= spindle::IsaLevel::kAvx2) levels.push_back({1, false, "avx2"});
  if (spindle::detected_isa_level() >= spindle::IsaLevel::kAvx512) {
    levels.push_back({2, false, "avx512bw"});
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni")) levels.push_back({2, true, "avx512vnni"});
  }
  for (const L& l : levels)
    for (const Shape3& s : kShapes) {
      const std::string name = std::string("qgemm/") + l.name + "/" + std::to_string(s.m) + "x" +
                               std::to_string(s.n) + "x" + std::to_string(s.k) +
                               (s.rows > 0 ? "/in" + std::to_string(s.rows) + "x" + std::to_string(s.cols) : "") +
                               (s.requant ? "/requant" : "") + (s.dequant ? "/float" : "");
      benchmark::RegisterBenchmark(name.c_str(), run, s, l.level, l.vnni);
    }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
