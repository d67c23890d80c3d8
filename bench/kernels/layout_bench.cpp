// layout_bench.cpp — would a blocked channel layout (NCHW8c: channels in
// blocks of 8, each block [H][W][8] floats) make depthwise and 1x1
// convolutions faster than spindle's Conv on NCHW? One thread, N = 1, on
// the depthwise and pointwise layers of MobileNetV3-Large / EfficientNet-B0
// at 224x224 (kLayers):
//   spindle_nchw           spindle's Conv kernel from the registry, created
//                          once as a session creates it (weights pre-packed),
//                          on NCHW input. Without an output allocator
//                          ctx.output() allocates a fresh zero-filled output
//                          on every call.
//   spindle_nchw_recycled  the same with the output handed back from one
//                          buffer, as the session's frame recycles buffers
//                          (no allocation, no zero fill).
//   nchwc                  AVX2 + FMA NCHW8c kernels written here: input
//                          [C/8][H][W][8], weights arranged for them
//                          beforehand, output [Cout/8][OH][OW][8], plus bias.
//   reorder                the layer's NCHW input to NCHW8c plus its NCHW8c
//                          output back to NCHW: entering and leaving a
//                          blocked chain once.
// Before nchwc is timed, its output (back in NCHW) is checked against
// spindle's (1e-4 relative; both sum bias, then the taps / input channels in
// order, so they have come out the same bits). Counter GFLOPS = 2 MACs / time; the label names
// the layer. This file is compiled with -mavx2 -mfma (CMakeLists.txt): on
// x86-64 it needs such a CPU; elsewhere only spindle_nchw* is registered.
//
//   build/bench/kernels/bench_layout --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <new>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#if defined(__x86_64__)
#define SPINDLE_ISA_NS avx2  // this file is compiled with -mavx2 -mfma: simd.h's AVX2 helpers, in their namespace
#include "kernels/isa/simd.h"
#endif
#include "spindle/tensor.h"

namespace {

using spindle::Buffer;
using spindle::DataType;
using spindle::Shape;
using spindle::Tensor;
namespace sk = spindle::kernels;

// Depthwise: group = c = cout. Pointwise: k = 1, s = 1, no pads. Pads k / 2.
struct Layer {
  bool dw;
  int64_t c, h, k, s, cout;
  int64_t pad() const { return k / 2; }
  int64_t oh() const { return (h + 2 * pad() - k) / s + 1; }
  // Multiply-adds: C x OH x OW x k x k (depthwise), Cin x Cout x OH x OW (pointwise).
  double macs() const { return static_cast<double>(oh() * oh()) * static_cast<double>(dw ? c * k * k : c * cout); }
  std::string label() const {
    const std::string hs = std::to_string(h);
    if (dw)
      return "dw" + std::to_string(k) + "x" + std::to_string(k) + " s" + std::to_string(s) + " C" + std::to_string(c) +
             " " + hs + "x" + hs;
    return "pw " + std::to_string(c) + "->" + std::to_string(cout) + " " + hs + "x" + hs;
  }
};

Layer dw(int64_t c, int64_t h, int64_t k, int64_t s) { return {true, c, h, k, s, c}; }
Layer pw(int64_t c, int64_t cout, int64_t h) { return {false, c, h, 1, 1, cout}; }

const Layer kLayers[] = {
    dw(64, 112, 3, 2),  dw(72, 56, 3, 1),   dw(72, 56, 5, 2),    dw(120, 28, 5, 1),   dw(240, 28, 3, 2),
    dw(480, 14, 3, 1),  dw(672, 14, 5, 1),  dw(960, 7, 5, 1),    dw(144, 56, 3, 1),   dw(1152, 7, 5, 1),
    pw(16, 64, 112),    pw(72, 24, 56),     pw(24, 72, 56),      pw(120, 40, 28),     pw(240, 40, 28),
    pw(480, 80, 14),    pw(80, 480, 14),    pw(672, 112, 14),    pw(672, 160, 7),     pw(960, 160, 7),
    pw(160, 960, 7),    pw(1152, 192, 7),   pw(192, 1152, 7),
};

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// One layer: its tensors and spindle's kernel for it.
struct SpindleConv {
  Layer L;
  Tensor X, W, B;
  sk::NodeInfo info;
  std::unique_ptr<sk::OpKernel> kernel;
  std::vector<Tensor> inputs, outputs{1};
  std::shared_ptr<Buffer> recycled;  // the output's buffer for spindle_nchw_recycled
  sk::OutputAllocator allocator;

  explicit SpindleConv(const Layer& l) : L(l) {
    X = random_tensor({1, L.c, L.h, L.h}, 1);
    W = random_tensor({L.cout, L.dw ? 1 : L.c, L.k, L.k}, 2);
    B = random_tensor({L.cout}, 3);
    info.op_type = "Conv";
    info.opset = 13;
    info.attrs.set("group", int64_t{L.dw ? L.c : 1});
    info.attrs.set("kernel_shape", std::vector<int64_t>{L.k, L.k});
    info.attrs.set("pads", std::vector<int64_t>{L.pad(), L.pad(), L.pad(), L.pad()});
    info.attrs.set("strides", std::vector<int64_t>{L.s, L.s});
    info.num_inputs = 3;
    info.num_outputs = 1;
    info.const_inputs = {nullptr, &W, &B};
    info.prepack = true;
    const sk::KernelFactory* factory = sk::KernelRegistry::global().find("", "Conv", 13);
    if (!factory) throw std::runtime_error("no Conv kernel at opset 13");
    kernel = (*factory)(info);
    inputs = {X, W, B};
    recycled = Buffer::allocate(static_cast<size_t>(L.cout * L.oh() * L.oh()) * sizeof(float));
    allocator = [this](DataType dtype, const Shape& shape) { return Tensor(dtype, shape, recycled); };
  }
  // outputs[0] is replaced on every call (ctx.output() makes a new tensor).
  void run(bool recycle) {
    sk::KernelContext ctx(info, std::span<const Tensor>(inputs), std::span<Tensor>(outputs), nullptr,
                          recycle ? &allocator : nullptr);
    kernel->compute(ctx);
  }
};

void set_counters(benchmark::State& st, const Layer& L, bool flops) {
  if (flops)
    st.counters["GFLOPS"] = benchmark::Counter(2.0 * L.macs(), benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
  st.SetLabel(L.label());
}

void spindle_run(benchmark::State& st, bool recycle) {
  const Layer& L = kLayers[st.range(0)];
  std::unique_ptr<SpindleConv> conv;
  try {
    conv = std::make_unique<SpindleConv>(L);
    conv->run(recycle);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  for (auto _ : st) {
    conv->run(recycle);
    benchmark::DoNotOptimize(conv->outputs[0].raw_data());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, true);
}

void spindle_nchw(benchmark::State& st) { spindle_run(st, false); }
void spindle_nchw_recycled(benchmark::State& st) { spindle_run(st, true); }

#if defined(__x86_64__)

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};

// 64-byte aligned, zero-filled floats.
class Floats {
 public:
  explicit Floats(size_t n)
      : p_(static_cast<float*>(std::aligned_alloc(64, std::max<size_t>((n * sizeof(float) + 63) / 64 * 64, 64)))) {
    if (!p_) throw std::bad_alloc();
    std::fill_n(p_.get(), n, 0.0f);
  }
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }

 private:
  std::unique_ptr<float, FreeFloats> p_;
};

using spindle::kernels::avx2::simd::transpose8;

// ---------------------------------------------------------------- reorders

// x [C][P] -> y [C/8][P][8] (C a multiple of 8).
void to_nchwc(const float* x, int64_t C, int64_t P, float* y) {
  for (int64_t cb = 0; cb < C / 8; ++cb) {
    const float* src = x + cb * 8 * P;
    float* dst = y + cb * P * 8;
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
      __m256 r[8];
      for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(src + l * P + p);
      transpose8(r);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (p + j) * 8, r[j]);
    }
    for (; p < P; ++p)
      for (int l = 0; l < 8; ++l) dst[p * 8 + l] = src[l * P + p];
  }
}

// y [C/8][P][8] -> x [C][P].
void from_nchwc(const float* y, int64_t C, int64_t P, float* x) {
  for (int64_t cb = 0; cb < C / 8; ++cb) {
    const float* src = y + cb * P * 8;
    float* dst = x + cb * 8 * P;
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (p + j) * 8);
      transpose8(r);
      for (int l = 0; l < 8; ++l) _mm256_storeu_ps(dst + l * P + p, r[l]);
    }
    for (; p < P; ++p)
      for (int l = 0; l < 8; ++l) dst[l * P + p] = src[p * 8 + l];
  }
}

// ---------------------------------------------------------------- depthwise
//
// One channel block at a time, one output row at a time. A row is split
// into groups of at most NB neighbouring output pixels, of nearly equal
// sizes (dw_row_plan, made once per layer). A group keeps one accumulator
// per pixel and loads each input vector of a kernel row once, for every
// accumulator that uses it. The group's columns left of the row (CL) and
// right of it (CR) are template arguments, so border groups skip those
// loads and taps at no cost and no pixel takes a checked path; kernel rows
// in the top / bottom padding are skipped. The weight vectors stay in
// registers when they fit beside the accumulators (3x3, <= 6 pixels), else
// a kernel row's K are loaded once per group.

struct DwGeom {
  int64_t H, W, OH, OW, pad, k, s;
};

// rows[kh]: input row oh * S - pad + kh ([W][8]; only kh in [kh0, kh1) is
// inside the plane), ix: the input column of the group's first pixel's
// first tap, wk [K * K][8], b [8], out: the group's first output pixel.
using DwGroupFn = void (*)(const float* const* rows, int kh0, int kh1, int64_t ix, const float* wk, const float* b,
                           float* out);

template <int K, int S, int N, int CL, int CR>
void dw_group(const float* const* rows, int kh0, int kh1, int64_t ix, const float* wk, const float* b, float* out) {
  constexpr int kIn = (N - 1) * S + K;  // input columns the group reads, from ix on
  constexpr bool kRegW = K * K + N + 1 <= 16;  // all weights, the accumulators and an input in registers
  __m256 wr[kRegW ? K * K : 1];
  if constexpr (kRegW)
#pragma GCC unroll 9
    for (int t = 0; t < K * K; ++t) wr[t] = _mm256_loadu_ps(wk + t * 8);
  const __m256 bias = _mm256_loadu_ps(b);
  __m256 acc[N];
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) acc[j] = bias;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
    if (kh < kh0 || kh >= kh1) continue;
    const float* r = rows[kh] + (ix + CL) * 8;  // input column ix + CL
    __m256 wv[K];
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      if constexpr (kRegW) wv[kw] = wr[kh * K + kw];
      else wv[kw] = _mm256_loadu_ps(wk + (kh * K + kw) * 8);
    }
#pragma GCC unroll 64
    for (int q = CL; q < kIn - CR; ++q) {
      const __m256 v = _mm256_loadu_ps(r + (q - CL) * 8);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) {
        const int kw = q - j * S;
        if (kw >= 0 && kw < K) acc[j] = _mm256_fmadd_ps(v, wv[kw], acc[j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) _mm256_storeu_ps(out + j * 8, acc[j]);
}

// dw_group<K, S, n, cl, cr> for n in [1, N], cl and cr in [0, K / 2].
template <int K, int S, int N, int CL, int CR = K / 2>
DwGroupFn dw_pick_cr(int cr) {
  if constexpr (CR < 0) return nullptr;
  else return cr == CR ? &dw_group<K, S, N, CL, CR> : dw_pick_cr<K, S, N, CL, CR - 1>(cr);
}
template <int K, int S, int N, int CL = K / 2>
DwGroupFn dw_pick_cl(int cl, int cr) {
  if constexpr (CL < 0) return nullptr;
  else return cl == CL ? dw_pick_cr<K, S, N, CL>(cr) : dw_pick_cl<K, S, N, CL - 1>(cl, cr);
}
template <int K, int S, int N>
DwGroupFn dw_pick(int n, int cl, int cr) {
  if constexpr (N < 1) return nullptr;
  else return n == N ? dw_pick_cl<K, S, N>(cl, cr) : dw_pick<K, S, N - 1>(n, cl, cr);
}

// Most pixels per group (10 accumulators, K weights, an input: 16 registers
// for 5x5; for 3x3 too, 10 ran faster than 6 with all 9 weights kept).
constexpr int kDwGroup3 = 10, kDwGroup5 = 10;

struct DwGroup {
  int64_t ow;
  DwGroupFn fn;
};

// The groups of an output row; empty when K / S has no kernel here.
std::vector<DwGroup> dw_row_plan(const DwGeom& g) {
  const int64_t nb = g.k == 3 ? kDwGroup3 : kDwGroup5;
  const int64_t groups = (g.OW + nb - 1) / nb;
  std::vector<DwGroup> plan;
  int64_t ow = 0;
  for (int64_t i = 0; i < groups; ++i) {
    const int64_t n = g.OW / groups + (i < g.OW % groups ? 1 : 0);
    const int64_t ix = ow * g.s - g.pad;
    const int cl = static_cast<int>(std::max<int64_t>(0, -ix));
    const int cr = static_cast<int>(std::max<int64_t>(0, ix + (n - 1) * g.s + g.k - g.W));
    const int ni = static_cast<int>(n);
    DwGroupFn fn = nullptr;
    if (g.k == 3 && g.s == 1) fn = dw_pick<3, 1, kDwGroup3>(ni, cl, cr);
    if (g.k == 3 && g.s == 2) fn = dw_pick<3, 2, kDwGroup3>(ni, cl, cr);
    if (g.k == 5 && g.s == 1) fn = dw_pick<5, 1, kDwGroup5>(ni, cl, cr);
    if (g.k == 5 && g.s == 2) fn = dw_pick<5, 2, kDwGroup5>(ni, cl, cr);
    if (!fn) return {};
    plan.push_back({ow, fn});
    ow += n;
  }
  return plan;
}

// x [C/8][H][W][8], wk [C/8][K * K][8], b [C], y [C/8][OH][OW][8].
void dw_nchwc(const float* x, const float* wk, const float* b, float* y, int64_t C, const DwGeom& g,
              const std::vector<DwGroup>& plan) {
  const int64_t T = g.k * g.k;
  for (int64_t cb = 0; cb < C / 8; ++cb) {
    const float* xb = x + cb * g.H * g.W * 8;
    float* yb = y + cb * g.OH * g.OW * 8;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t ih0 = oh * g.s - g.pad;
      const int kh0 = static_cast<int>(std::max<int64_t>(0, -ih0));
      const int kh1 = static_cast<int>(std::min<int64_t>(g.k, g.H - ih0));
      const float* rows[5] = {};
      for (int kh = kh0; kh < kh1; ++kh) rows[kh] = xb + (ih0 + kh) * g.W * 8;
      float* out = yb + oh * g.OW * 8;
      for (const DwGroup& grp : plan)
        grp.fn(rows, kh0, kh1, grp.ow * g.s - g.pad, wk + cb * T * 8, b + cb * 8, out + grp.ow * 8);
    }
  }
}

// ---------------------------------------------------------------- pointwise
//
// out[ob][p][:] = bias + sum_ic in[ic/8][p][ic%8] * w[ob][ic][:]. A tile is
// MB output blocks (8 channels each) x NP pixels of accumulators; per input
// channel, MB weight vectors and NP broadcasts feed MB * NP multiply-adds.
// Weights are packed per group of MB output blocks as [ic][MB][8]. The
// input channels go in blocks of kc (<= 256) and the pixels in chunks of pc
// so that a group's weight panel (kc x MB x 8) stays in L1 and the input
// chunk (kc x pc) in L2 while every group runs over it; later kc blocks add
// to the output.

template <int MB, int NP>
__attribute__((always_inline)) inline void pw_tile(const float* x, int64_t xs, int64_t kb, const float* w,
                                                   const float* bias, float* y, int64_t ys, bool accumulate) {
  __m256 acc[MB][NP];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p)
      acc[m][p] = accumulate ? _mm256_loadu_ps(y + m * ys + p * 8) : _mm256_loadu_ps(bias + m * 8);
  for (int64_t b = 0; b < kb; ++b, x += xs, w += 64 * MB) {
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) {
      __m256 wv[MB];
#pragma GCC unroll 4
      for (int m = 0; m < MB; ++m) wv[m] = _mm256_loadu_ps(w + (l * MB + m) * 8);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        const __m256 bx = _mm256_broadcast_ss(x + p * 8 + l);
#pragma GCC unroll 4
        for (int m = 0; m < MB; ++m) acc[m][p] = _mm256_fmadd_ps(wv[m], bx, acc[m][p]);
      }
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) _mm256_storeu_ps(y + m * ys + p * 8, acc[m][p]);
}

template <int MB, int N>
void pw_tail(int n, const float* x, int64_t xs, int64_t kb, const float* w, const float* bias, float* y, int64_t ys,
             bool accumulate) {
  if constexpr (N > 0) {
    if (n == N) pw_tile<MB, N>(x, xs, kb, w, bias, y, ys, accumulate);
    else pw_tail<MB, N - 1>(n, x, xs, kb, w, bias, y, ys, accumulate);
  }
}

// Pixels [p0, p1) of one group of MB output blocks.
template <int MB, int NP>
void pw_pixels(const float* x, int64_t xs, int64_t kb, const float* w, const float* bias, float* y, int64_t ys,
               int64_t p0, int64_t p1, bool accumulate) {
  int64_t p = p0;
  for (; p + NP <= p1; p += NP) pw_tile<MB, NP>(x + p * 8, xs, kb, w, bias, y + p * 8, ys, accumulate);
  if (p < p1) pw_tail<MB, NP - 1>(static_cast<int>(p1 - p), x + p * 8, xs, kb, w, bias, y + p * 8, ys, accumulate);
}

struct PwPlan {
  int64_t cin, cout, P, kc, pc;
  std::vector<int> mb;          // output blocks per group
  std::vector<int64_t> ob, off;  // first output block, offset in the packed weights
};

// Groups of 3 output blocks, the rest as 2s (one 1 only for a single block).
PwPlan pw_plan(int64_t cin, int64_t cout, int64_t P) {
  PwPlan plan{cin, cout, P, 0, 0, {}, {}, {}};
  int64_t n = cout / 8;
  int64_t twos = n == 1 ? 0 : n % 3 == 2 ? 1 : n % 3 == 1 ? 2 : 0;
  int64_t threes = n == 1 ? 0 : (n - 2 * twos) / 3;
  if (n == 1) plan.mb.push_back(1);
  for (int64_t i = 0; i < threes; ++i) plan.mb.push_back(3);
  for (int64_t i = 0; i < twos; ++i) plan.mb.push_back(2);
  int64_t ob = 0, off = 0;
  for (int m : plan.mb) {
    plan.ob.push_back(ob);
    plan.off.push_back(off);
    ob += m;
    off += cin * m * 8;
  }
  const int64_t kblocks = (cin + 255) / 256;
  plan.kc = ((cin + kblocks - 1) / kblocks + 7) / 8 * 8;
  plan.pc = std::max<int64_t>(24, 65536 / plan.kc / 24 * 24);
  return plan;
}

// W [cout][cin] -> per group [ic][MB][8].
std::vector<float> pw_pack(const PwPlan& plan, const float* w) {
  std::vector<float> out(static_cast<size_t>(plan.cin * plan.cout));
  for (size_t g = 0; g < plan.mb.size(); ++g)
    for (int64_t ic = 0; ic < plan.cin; ++ic)
      for (int m = 0; m < plan.mb[g]; ++m)
        for (int l = 0; l < 8; ++l)
          out[static_cast<size_t>(plan.off[g] + (ic * plan.mb[g] + m) * 8 + l)] =
              w[((plan.ob[g] + m) * 8 + l) * plan.cin + ic];
  return out;
}

// x [cin/8][P][8], wp from pw_pack, bias [cout], y [cout/8][P][8].
void pw_nchwc(const float* x, const float* wp, const float* bias, float* y, const PwPlan& plan) {
  const int64_t P = plan.P, xs = P * 8, ys = P * 8;
  for (int64_t k0 = 0; k0 < plan.cin; k0 += plan.kc) {
    const int64_t kb = std::min(plan.kc, plan.cin - k0) / 8;
    const bool accumulate = k0 > 0;
    for (int64_t p0 = 0; p0 < P; p0 += plan.pc) {
      const int64_t p1 = std::min(P, p0 + plan.pc);
      for (size_t g = 0; g < plan.mb.size(); ++g) {
        const int mb = plan.mb[g];
        const float* xg = x + (k0 / 8) * xs;
        const float* wg = wp + plan.off[g] + k0 * mb * 8;
        const float* bg = bias + plan.ob[g] * 8;
        float* yg = y + plan.ob[g] * ys;
        if (mb == 3) pw_pixels<3, 4>(xg, xs, kb, wg, bg, yg, ys, p0, p1, accumulate);
        else if (mb == 2) pw_pixels<2, 6>(xg, xs, kb, wg, bg, yg, ys, p0, p1, accumulate);
        else pw_pixels<1, 8>(xg, xs, kb, wg, bg, yg, ys, p0, p1, accumulate);
      }
    }
  }
}

// ---------------------------------------------------------------- the blocked layer

struct BlockedConv {
  Layer L;
  int64_t P, OP;  // input and output pixels
  Floats x, y;    // NCHW8c input and output
  std::vector<float> wk, bias;
  DwGeom geom{};
  std::vector<DwGroup> row_plan;  // depthwise
  PwPlan plan{};                  // pointwise

  explicit BlockedConv(const SpindleConv& s)
      : L(s.L), P(L.h * L.h), OP(L.oh() * L.oh()), x(static_cast<size_t>(L.c * P)),
        y(static_cast<size_t>(L.cout * OP)), bias(s.B.data<float>(), s.B.data<float>() + L.cout) {
    to_nchwc(s.X.data<float>(), L.c, P, x.data());
    const float* w = s.W.data<float>();
    if (L.dw) {
      geom = {L.h, L.h, L.oh(), L.oh(), L.pad(), L.k, L.s};
      row_plan = dw_row_plan(geom);
      const int64_t T = L.k * L.k;
      wk.resize(static_cast<size_t>(L.c * T));
      for (int64_t c = 0; c < L.c; ++c)  // [C/8][T][8]
        for (int64_t t = 0; t < T; ++t) wk[static_cast<size_t>(((c / 8) * T + t) * 8 + c % 8)] = w[c * T + t];
    } else {
      plan = pw_plan(L.c, L.cout, P);
      wk = pw_pack(plan, w);
    }
  }
  void run() {
    if (L.dw) {
      dw_nchwc(x.data(), wk.data(), bias.data(), y.data(), L.c, geom, row_plan);
    } else {
      pw_nchwc(x.data(), wk.data(), bias.data(), y.data(), plan);
    }
  }
};

bool have_avx2_fma(benchmark::State& st) {
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return true;
  st.SkipWithError("no AVX2 + FMA on this CPU");
  return false;
}

// "" when y (NCHW) matches spindle's output within 1e-4 relative (of the
// larger of |reference| and 1), else where it does not.
std::string compare(const float* got, const Tensor& ref) {
  const float* r = ref.data<float>();
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float tol = 1e-4f * std::max(std::abs(r[i]), 1.0f);
    if (!(std::abs(got[i] - r[i]) <= tol))
      return "nchwc mismatch at " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs spindle " +
             std::to_string(r[i]);
  }
  return "";
}

void nchwc(benchmark::State& st) {
  if (!have_avx2_fma(st)) return;
  const Layer& L = kLayers[st.range(0)];
  std::unique_ptr<SpindleConv> conv;
  std::unique_ptr<BlockedConv> blocked;
  try {
    conv = std::make_unique<SpindleConv>(L);
    conv->run(true);
    blocked = std::make_unique<BlockedConv>(*conv);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  if (L.dw && blocked->row_plan.empty()) {
    st.SkipWithError("no blocked depthwise kernel for this kernel size / stride");
    return;
  }
  blocked->run();
  std::vector<float> back(static_cast<size_t>(L.cout * blocked->OP));
  from_nchwc(blocked->y.data(), L.cout, blocked->OP, back.data());
  const std::string error = compare(back.data(), conv->outputs[0]);
  if (!error.empty()) {
    st.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : st) {
    blocked->run();
    benchmark::DoNotOptimize(blocked->y.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, true);
}

void reorder(benchmark::State& st) {
  if (!have_avx2_fma(st)) return;
  const Layer& L = kLayers[st.range(0)];
  const int64_t P = L.h * L.h, OP = L.oh() * L.oh();
  const Tensor X = random_tensor({1, L.c, L.h, L.h}, 1);
  Floats xb(static_cast<size_t>(L.c * P)), yb(static_cast<size_t>(L.cout * OP)), y(static_cast<size_t>(L.cout * OP));
  for (auto _ : st) {
    to_nchwc(X.data<float>(), L.c, P, xb.data());
    from_nchwc(yb.data(), L.cout, OP, y.data());
    benchmark::DoNotOptimize(xb.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, false);
}
#endif

void layers(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kLayers)); ++i) b->Arg(i);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(spindle_nchw)->Apply(layers);
BENCHMARK(spindle_nchw_recycled)->Apply(layers);
#if defined(__x86_64__)
BENCHMARK(nchwc)->Apply(layers);
BENCHMARK(reorder)->Apply(layers);
#endif

}  // namespace

BENCHMARK_MAIN();
