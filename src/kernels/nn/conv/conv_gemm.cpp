// conv_gemm.cpp — the GEMM convolution drivers: the im2col written straight
// into the SGEMM's packed B panels, a 1x1 convolution's input read in place
// (or through sgemm_taps), one-pass blocks or columns shared by the row
// blocks, the matrix-vector product of a 1x1 input, and the subsampled
// input of a strided 1x1 convolution.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/nn/conv/conv_algorithms.h"

namespace spindle::kernels::nn::conv {

namespace {

// One row of the im2col tile (len columns) into the SGEMM's B panels of NR
// columns over the full K (PackedMatrix's B format, sgemm.h): row k of panel
// q is dst[q * K * NR + k * NR ..]; columns past len are zero.
// kNR > 0: NR known at compile time (fixed-size copies); 0: NR = nr.
template <int kNR>
inline void scatter_row(const float* row, int64_t len, int64_t k, int64_t K, int64_t nr, float* dst) {
  const int64_t NR = kNR > 0 ? kNR : nr;
  float* d = dst + k * NR;
  int64_t j = 0;
  for (; j + NR <= len; j += NR, d += K * NR) std::memcpy(d, row + j, static_cast<size_t>(NR) * sizeof(float));
  if (j < len) {
    std::memcpy(d, row + j, static_cast<size_t>(len - j) * sizeof(float));
    std::memset(d + (len - j), 0, static_cast<size_t>(NR - (len - j)) * sizeof(float));
  }
}

// Columns [p0, p1) of the im2col matrix of input planes [c0, c1) of a
// group of Cg (rows ordered c, kd, kh, kw like W; the rows of these planes
// are k = c * k_size .. (c1 * k_size) - 1 of K = Cg * k_size), written
// straight into the SGEMM's B panels at dst (PackedMatrix's B format over the
// full K, ceil(len / NR) panels), so the SGEMM packs nothing. The KW rows of
// one (c, kd, kh) are built together in per-thread row buffers as runs of
// output positions sharing (od, oh), then cut into the panels. With stride 2
// each input row of a run is first split into its even and odd columns, so
// every tap's run is a contiguous copy.
inline void copy_floats(float* dst, const float* src, int64_t n) {
  if (n >= 16) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// Scatters the KW rows rows[kw * stride ..] (len floats each) into the
// panels as B rows k .. k + KW - 1.
inline void scatter_rows(const float* rows, int64_t stride, int64_t KW, int64_t len, int64_t k, int64_t K, float* dst) {
  const int64_t NR = sgemm_nr();
  for (int64_t kw = 0; kw < KW; ++kw) {
    const float* row = rows + kw * stride;
    switch (NR) {
      case 8: scatter_row<8>(row, len, k + kw, K, NR, dst); break;
      case 16: scatter_row<16>(row, len, k + kw, K, NR, dst); break;
      case 32: scatter_row<32>(row, len, k + kw, K, NR, dst); break;
      default: scatter_row<0>(row, len, k + kw, K, NR, dst); break;
    }
  }
}

// Output rows at most this wide take im2col_short_rows.
constexpr int64_t kShortRow = 16;

// im2col_panels for 2-D windows of column stride 1 over short output rows
// (7x7 and 14x14 planes): there the general path's clamps and zero fills
// around every run of a few floats cost more than the copies (55% of a
// 3x3, 128 -> 32 layer at 7x7). Each input plane is first copied into
// zero-padded rows wide enough for every tap, so each tap's run over an
// output row is one copy, done in whole 8-float chunks: the row buffers
// and the padded rows have room for the overrun, and a run's overrun is
// overwritten by the next run of its row.
void im2col_short_rows(const float* x, int64_t Cg, const Window3& w, int64_t p0, int64_t p1, float* dst, int64_t c0,
                       int64_t c1) {
  constexpr int64_t kChunk = 8;
  const int64_t len = p1 - p0;
  const int64_t KH = w.k[1], KW = w.k[2];
  const int64_t OW = w.out[2], H = w.in[1], W = w.in[2];
  const int64_t pw = OW + (KW - 1) * w.d[2];  // padded columns any tap reads
  const int64_t row_w = round_up(pw + kChunk, kChunk);
  const int64_t stride = round_up(len, kChunk) + kChunk;
  // The input rows the tile's output rows read: [ih0, ih1).
  const int64_t oh0 = p0 / OW, oh1 = (p1 - 1) / OW;
  const int64_t ih0 = std::clamp<int64_t>(oh0 * w.s[1] - w.pb[1], 0, H);
  const int64_t ih1 = std::clamp<int64_t>(oh1 * w.s[1] - w.pb[1] + (KH - 1) * w.d[1] + 1, ih0, H);
  float* rows = scratch_floats(2, static_cast<size_t>(KW * stride + (ih1 - ih0) * row_w));
  float* padded = rows + KW * stride;  // padded row ih at padded + (ih - ih0) * row_w
  const int64_t left = std::min(w.pb[2], pw), mid = std::clamp<int64_t>(pw - left, 0, W);
  const int64_t K = Cg * KH * KW;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    for (int64_t ih = ih0; ih < ih1; ++ih) {
      float* pr = padded + (ih - ih0) * row_w;
      std::fill(pr, pr + left, 0.0f);
      std::memcpy(pr + left, xc + ih * W, static_cast<size_t>(mid) * sizeof(float));
      std::fill(pr + left + mid, pr + row_w, 0.0f);
    }
    for (int64_t kh = 0; kh < KH; ++kh) {
      int64_t oh = p0 / OW, ow = p0 - oh * OW;
      for (int64_t j = 0; j < len;) {
        const int64_t q = std::min(len - j, OW - ow);
        const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
        for (int64_t kw = 0; kw < KW; ++kw) {
          float* out = rows + kw * stride + j;
          if (ih < 0 || ih >= H) {
            for (int64_t i = 0; i < q; i += kChunk) std::fill(out + i, out + i + kChunk, 0.0f);
          } else {
            const float* src = padded + (ih - ih0) * row_w + ow + kw * w.d[2];
            for (int64_t i = 0; i < q; i += kChunk) std::memcpy(out + i, src + i, kChunk * sizeof(float));
          }
        }
        j += q;
        ow = 0;
        ++oh;
      }
      scatter_rows(rows, stride, KW, len, (c * KH + kh) * KW, K, dst);
    }
  }
}

void im2col_panels(const float* x, int64_t Cg, const Window3& w, int64_t p0, int64_t p1, float* dst, int64_t c0 = 0,
                   int64_t c1 = -1) {
  if (c1 < 0) c1 = Cg;
  if (w.nd == 2 && w.s[2] == 1 && w.out[2] <= kShortRow) {
    im2col_short_rows(x, Cg, w, p0, p1, dst, c0, c1);
    return;
  }
  const int64_t len = p1 - p0;
  const int64_t KW = w.k[2];
  const int64_t OH = w.out[1], OW = w.out[2], D = w.in[0], H = w.in[1], W = w.in[2];
  const int64_t s2 = w.s[2];
  const bool split = s2 == 2;
  float* rows = scratch_floats(2, static_cast<size_t>(KW * len + (split ? W + 2 : 0)));
  float* phases = rows + KW * len;  // even columns, then odd ones (split rows only)
  const int64_t half = (W + 1) / 2;
  const int64_t plane = w.in_size();
  const int64_t K = Cg * w.k_size();
  // The tile's segments: runs of output positions sharing (od, oh).
  struct Segment {
    int64_t od, oh, ow, q, j;
  };
  Segment stack_segs[64];
  std::vector<Segment> heap_segs;
  Segment* segs = stack_segs;
  int64_t nseg = 0;
  {
    int64_t od = p0 / (OH * OW), rem = p0 - od * OH * OW, oh = rem / OW, ow = rem - oh * OW;
    for (int64_t p = p0; p < p1;) {
      const int64_t q = std::min(p1 - p, OW - ow);
      if (nseg == 64) {
        heap_segs.assign(stack_segs, stack_segs + 64);
        segs = nullptr;
      }
      if (segs) segs[nseg] = {od, oh, ow, q, p - p0};
      else heap_segs.push_back({od, oh, ow, q, p - p0});
      ++nseg;
      p += q;
      ow = 0;
      if (++oh == OH) oh = 0, ++od;
    }
    if (!segs) segs = heap_segs.data();
  }
  // Per tap column kw: the input column offset and the output columns whose
  // input column ow * s2 + off lies inside [0, W).
  struct TapCols {
    int64_t off, lo, hi;
  };
  TapCols stack_cols[16];
  std::vector<TapCols> heap_cols;
  TapCols* cols = stack_cols;
  if (KW > 16) {
    heap_cols.resize(static_cast<size_t>(KW));
    cols = heap_cols.data();
  }
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * w.d[2] - w.pb[2];
    cols[kw] = {off, off >= 0 ? 0 : ceil_div(-off, s2), W - 1 - off < 0 ? 0 : std::min(OW, (W - 1 - off) / s2 + 1)};
  }
  int64_t k = c0 * w.k_size();
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * plane;
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh, k += KW) {
        for (int64_t si = 0; si < nseg; ++si) {
          const Segment& sg = segs[si];
          const int64_t id = sg.od * w.s[0] - w.pb[0] + kd * w.d[0];
          const int64_t ih = sg.oh * w.s[1] - w.pb[1] + kh * w.d[1];
          const int64_t e = sg.ow + sg.q;
          if (id < 0 || id >= D || ih < 0 || ih >= H) {
            for (int64_t kw = 0; kw < KW; ++kw)
              std::memset(rows + kw * len + sg.j, 0, static_cast<size_t>(sg.q) * sizeof(float));
            continue;
          }
          const float* src = xc + (id * H + ih) * W;
          if (split) {
            float* __restrict ev = phases;
            float* __restrict odd = phases + half;
            for (int64_t i = 0; i < W / 2; ++i) {
              ev[i] = src[2 * i];
              odd[i] = src[2 * i + 1];
            }
            if (W & 1) ev[W / 2] = src[W - 1];
          }
          for (int64_t kw = 0; kw < KW; ++kw) {
            float* out = rows + kw * len + sg.j - sg.ow;  // out[ow] for ow in [sg.ow, e)
            const int64_t kw_off = cols[kw].off;
            const int64_t a = std::clamp(cols[kw].lo, sg.ow, e), b = std::clamp(cols[kw].hi, a, e);
            for (int64_t o = sg.ow; o < a; ++o) out[o] = 0.0f;
            if (s2 == 1) {
              copy_floats(out + a, src + kw_off + a, b - a);
            } else if (split) {
              // Input column 2 * o + kw_off: phase (kw_off mod 2), index o + floor(kw_off / 2).
              const int64_t par = kw_off & 1, shift = (kw_off - par) / 2;
              copy_floats(out + a, phases + par * half + shift + a, b - a);
            } else {
              const float* s0 = src + kw_off;
              for (int64_t o = a; o < b; ++o) out[o] = s0[o * s2];
            }
            for (int64_t o = b; o < e; ++o) out[o] = 0.0f;
          }
        }
        scatter_rows(rows, len, KW, len, k, K, dst);
      }
  }
}

// The K input rows the in-place 1x1 path reads together (a cache line of
// each, P floats apart) spread over few L1 sets when P * 4 bytes is a
// multiple of a large power of two lines: 112 x 112 planes (49 KB apart)
// fall in 4 of the 64 sets, so 32 rows are 8 a set and evict each other
// (measured 1.18x slower than packing; 16 rows, 4 a set: 0.88x). At most
// 5 rows a set (a 32 KB, 8-way L1 of 64-byte lines).
bool taps_rows_share_l1_sets(int64_t K, int64_t P) {
  const int64_t lines = (P * 4 / 64) % 64;
  const int64_t sets = lines == 0 ? 1 : 64 / std::gcd<int64_t>(lines, 64);
  return ceil_div(K, sets) <= 5;
}
// Most output channels (per group) of a 1x1 convolution that reads its
// input in place (run_gemm_blocks; 64 rows measured 1.23x slower than
// packing).
constexpr int64_t kPointwiseTapsMaxRows = 48;

}  // namespace


// 1x1 convolution of a 1x1 input (squeeze-excite blocks): y = W x + b per
std::vector<float> unpack_weights(const PackedMatrix& packed, int64_t groups, int64_t rows) {
  const int64_t K = packed.k(), MR = sgemm_mr();
  std::vector<float> w(static_cast<size_t>(groups * rows * K));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t m = 0; m < rows; ++m) {
      const float* src = packed.panel(m - m % MR, g) + m % MR;
      float* dst = w.data() + (g * rows + m) * K;
      for (int64_t k = 0; k < K; ++k) dst[k] = src[k * MR];
    }
  return w;
}

// Most rows of a packed panel run_gemv sums at once (sgemm_mr() at most,
// else one row at a time).
constexpr int64_t kMaxPanelLanes = 16;

void run_gemv(const ConvArgs& a, const PackedMatrix* packed) {
  KernelContext& ctx = a.ctx;
  const float* x = a.x;
  const float* wd = a.wd;
  const float* bias = a.bias;
  float* y = a.y;
  const int64_t N = a.N, C = a.C, M = a.M, G = a.G;
  const Epilogue& ep = a.ep;
  const int64_t Cg = C / G, Mg = M / G;
  const int64_t rows = N * M;
  if (!wd && !packed) fail(ctx.node(), "internal: a matrix-vector product without weights");
  const int64_t MR = sgemm_mr();
  // Row m of W: Cg weights `step` floats apart, in W's layout or in its panel.
  auto dot = [&](const float* wr, auto step, const float* xv) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = 0;
    for (; k + 8 <= Cg; k += 8)
      for (int i = 0; i < 8; ++i) acc[i] += wr[(k + i) * step] * xv[k + i];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; k < Cg; ++k) sum += wr[k * step] * xv[k];
    return sum;
  };
  // A row streams Cg weights that nothing else reads in a run (from L3
  // or memory: ~1 cycle a float measured, RegNet's 440 x 110 squeeze-
  // excite convolutions 15 us), so the loop is costed by them and a
  // spinning worker takes half of a large one.
  Cost cost;
  cost.bytes_loaded = 4.0 * static_cast<double>(Cg);
  cost.compute_cycles = static_cast<double>(Cg);
  // Lanes [lane0, lane0 + cnt) of a packed panel (row l's weight k at
  // pw[k * MR + l]) at once, each row's sums in dot's order: the panel's
  // weights stream contiguously instead of MR floats apart.
  auto panel_dots = [&](const float* pw, int64_t lane0, int64_t cnt, const float* xv, float* out) {
    float acc[8][kMaxPanelLanes] = {};
    int64_t k = 0;
    for (; k + 8 <= Cg; k += 8)
      for (int i = 0; i < 8; ++i) {
        const float xk = xv[k + i];
        const float* wk = pw + (k + i) * MR + lane0;
        for (int64_t l = 0; l < cnt; ++l) acc[i][l] += wk[l] * xk;
      }
    for (int64_t l = 0; l < cnt; ++l) {
      float sum = ((acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])) + ((acc[4][l] + acc[5][l]) + (acc[6][l] + acc[7][l]));
      for (int64_t t = k; t < Cg; ++t) sum += pw[t * MR + lane0 + l] * xv[t];
      out[l] = sum;
    }
  };
  parallel_for(ctx.pool(), rows, cost, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1;) {
      const int64_t n = r / M, m = r % M, g = m / Mg;
      const float* xv = x + n * C + g * Cg;
      // Eight partial sums in a fixed order (vectorizable).
      if (wd) {
        y[r] = (bias ? bias[m] : 0.0f) + dot(wd + m * Cg, std::integral_constant<int64_t, 1>(), xv);
        ++r;
        continue;
      }
      const int64_t mg = m % Mg, lane0 = mg % MR;
      if (MR > kMaxPanelLanes) {
        y[r] = (bias ? bias[m] : 0.0f) + dot(packed->panel(mg - lane0, g) + lane0, MR, xv);
        ++r;
        continue;
      }
      // The rows of this panel (and group) in the range, together.
      const int64_t cnt = std::min({r1 - r, MR - lane0, Mg - mg});
      float sums[kMaxPanelLanes];
      panel_dots(packed->panel(mg - lane0, g), lane0, cnt, xv, sums);
      for (int64_t l = 0; l < cnt; ++l) y[r + l] = (bias ? bias[m + l] : 0.0f) + sums[l];
      r += cnt;
    }
    if (!ep.empty()) ep.run(y + r0, r1 - r0);
  });
}

// A strided 1x1 convolution without pads (ResNet / RegNet projections) is
// the pointwise one on the subsampled input: the input positions it reads,
// copied once into a buffer the blocks share, then the same GEMM (in place
// for few output channels) instead of an im2col per tile.
const float* subsample_input(const ConvArgs& a, Window3& sub) {
  KernelContext& ctx = a.ctx;
  const Window3& w = a.w;
  const float* x = a.x;
  const int64_t N = a.N, C = a.C, P = w.out_size();
  const int64_t in_plane = w.in_size(), H = w.in[1], W = w.in[2], OD = w.out[0], OH = w.out[1], OW = w.out[2];
  float* xs = scratch_floats(kSharedInputSlot, static_cast<size_t>(N * C * P));
  const int64_t planes = N * C;
  parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(static_cast<double>(P))), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* __restrict d = xs + i * P;
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh, d += OW) {
          const float* __restrict src = x + i * in_plane + (od * w.s[0] * H + oh * w.s[1]) * W;
          if (w.s[2] == 2) {
            for (int64_t ow = 0; ow < OW; ++ow) d[ow] = src[2 * ow];
          } else {
            for (int64_t ow = 0; ow < OW; ++ow) d[ow] = src[ow * w.s[2]];
          }
        }
    }
  });
  sub = w;
  for (int i = 0; i < 3; ++i) sub.in[i] = w.out[i], sub.s[i] = 1;
  return xs;
}

// One SGEMM per block of gb: (batch, group, row tile, column tile).
void run_gemm_blocks(const ConvArgs& args, const PackedMatrix* packed, const GemmBlocks& gb, bool pointwise,
                     const InScale& in_scale) {
  KernelContext& ctx = args.ctx;
  const float* x = args.x;
  const float* wd = args.wd;
  const float* bias = args.bias;
  float* y = args.y;
  const int64_t N = args.N, C = args.C, M = args.M, G = args.G;
  const Window3& w = args.w;
  const Epilogue& ep = args.ep;
  const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
  const int64_t per_ng = gb.m_blocks * gb.n_blocks;
  const int64_t blocks = N * G * per_ng;
  const double block_work = static_cast<double>(gb.mt * gb.nt * std::max<int64_t>(K, 1));
  const int64_t in_plane = w.in_size();
  // A 1x1 convolution of few output channels reads B in place (sgemm_taps:
  // one pointer per input plane) instead of packing it: with <= 48 rows the
  // packing is a large share of the work and B stays in L1 for the few
  // row panels that read it (16 / 24 rows at 112x112 / 56x56: 0.88x).
  const bool taps_pointwise = pointwise && packed && !in_scale.s && K <= kSgemmKC && Mg <= kPointwiseTapsMaxRows &&
                              taps_rows_share_l1_sets(K, P);
  parallel_for(ctx.pool(), 0, blocks, grain_for_cost(ops_cost(block_work)), gemm_cost(gb.mt, gb.nt, K), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t ng = b / per_ng, rem = b % per_ng;
      const int64_t n = ng / G, g = ng % G;
      const int64_t m0 = (rem / gb.n_blocks) * gb.mt, m1 = std::min(Mg, m0 + gb.mt);
      const int64_t p0 = (rem % gb.n_blocks) * gb.nt, p1 = std::min(P, p0 + gb.nt);
      const int64_t len = p1 - p0;
      const float* xg = x + (n * C + g * Cg) * in_plane;
      float* yb = y + (n * M + g * Mg + m0) * P + p0;
      SgemmExtras ex;
      ex.packed_a = packed ? packed->panel(m0, g) : nullptr;
      ex.row_bias = bias ? bias + g * Mg + m0 : nullptr;
      ep.to_sgemm(yb, ex);
      const float* a = wd ? wd + (g * Mg + m0) * K : nullptr;  // null: W packed (ex.packed_a)
      if (pointwise && taps_pointwise) {
        // B read in place through one pointer per input plane; the last
        // plane's full-width loads past the input from a padded copy.
        const float* taps[kSgemmKC];
        for (int64_t k = 0; k < K; ++k) taps[k] = xg + k * P + p0;
        const int64_t width = round_up(len, sgemm_nr());
        if (p0 + width > P) {
          float* last = scratch_floats(1, static_cast<size_t>(width));
          std::memcpy(last, taps[K - 1], static_cast<size_t>(len) * sizeof(float));
          std::fill(last + len, last + width, 0.0f);
          taps[K - 1] = last;
        }
        sgemm_taps(m1 - m0, len, K, packed->panel(m0, g), taps, ex.row_bias, yb, P, ex.residual, ex.act);
        continue;
      }
      if (pointwise) {
        // B = the tile's columns of the Cg input planes, read in place.
        if (in_scale.s) ex.b_rows = {in_scale.s + n * in_scale.image_stride, in_scale.shift, in_scale.relu};
        sgemm(false, false, m1 - m0, len, K, 1.0f, a, K, xg + p0, P, 0.0f, yb, P, ex);
      } else {
        float* col = scratch_floats(1, static_cast<size_t>(K * round_up(len, sgemm_nr())));
        im2col_panels(xg, Cg, w, p0, p1, col);
        ex.packed_b = col;
        sgemm(false, false, m1 - m0, len, K, 1.0f, a, K, nullptr, 0, 0.0f, yb, P, ex);
      }
    }
  });
}

// The im2col path in two passes, for convolutions whose GEMM blocks split
// the output rows: first the im2col of every column tile, packed once into
// the SGEMM's B panels (a buffer on the calling thread shared by the
// blocks), then one SGEMM per (batch, group, row tile, column tile) on
// those panels. Same sums in the same order as the one-pass path: only
// where B is packed changes.
// A 1x1 convolution (pointwise) packs its input rows instead, through
// in_scale's transform (as the one-pass path's sgemm would).
void run_gemm_shared_columns(const ConvArgs& a, const PackedMatrix* packed, bool pointwise, const InScale& in_scale) {
  KernelContext& ctx = a.ctx;
  const float* x = a.x;
  const float* wd = a.wd;
  const float* bias = a.bias;
  float* y = a.y;
  const int64_t N = a.N, C = a.C, M = a.M, G = a.G;
  const Window3& w = a.w;
  const Epilogue& ep = a.ep;
  const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
  const int64_t NR = sgemm_nr();
  const int64_t per_ng = K * round_up(P, NR);  // floats of one (batch, group)'s packed columns
  float* panels = scratch_floats(kSharedScratchSlot, static_cast<size_t>(N * G * per_ng));
  const int64_t in_plane = w.in_size();
  const int64_t tile = im2col_tile(K);
  const int64_t tiles = ceil_div(P, tile);
  // Items (batch, group, column tile, channel chunk): a 7x7 output is one
  // tile, so its channels are split too (chunks of ~32K floats).
  const int64_t chunk_c = std::clamp<int64_t>(32768 / std::max<int64_t>(w.k_size() * std::min(P, tile), 1), 1, Cg);
  const int64_t chunks = ceil_div(Cg, chunk_c);
  const int64_t items = N * G * tiles * chunks;
  parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(static_cast<double>(chunk_c * w.k_size() * tile))),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t ch = i % chunks, t = (i / chunks) % tiles, ng = i / (chunks * tiles);
                   const int64_t p0 = t * tile, p1 = std::min(P, p0 + tile);
                   const int64_t n = ng / G, g = ng % G;
                   const float* xg = x + (n * C + g * Cg) * in_plane;
                   float* dst = panels + ng * per_ng + (p0 / NR) * K * NR;
                   const int64_t c0 = ch * chunk_c, c1 = std::min(Cg, (ch + 1) * chunk_c);
                   if (pointwise) {
                     SgemmRowAffine rows;
                     if (in_scale.s)
                       rows = {in_scale.s + n * in_scale.image_stride, in_scale.shift, in_scale.relu};
                     sgemm_pack_b_rows(p1 - p0, c0, c1 - c0, xg + p0, P, dst + c0 * NR, K * NR, rows);
                   } else {
                     im2col_panels(xg, Cg, w, p0, p1, dst, c0, c1);
                   }
                 }
               });
  const GemmBlocks gb = choose_gemm_blocks(N * G, Mg, P, K, P);
  const int64_t per_block = gb.m_blocks * gb.n_blocks;
  const int64_t blocks = N * G * per_block;
  parallel_for(ctx.pool(), 0, blocks, grain_for_cost(ops_cost(static_cast<double>(gb.mt * gb.nt * K))),
               gemm_cost(gb.mt, gb.nt, K), [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) {
                   const int64_t ng = b / per_block, rem = b % per_block;
                   const int64_t n = ng / G, g = ng % G;
                   const int64_t m0 = (rem / gb.n_blocks) * gb.mt, m1 = std::min(Mg, m0 + gb.mt);
                   const int64_t p0 = (rem % gb.n_blocks) * gb.nt, p1 = std::min(P, p0 + gb.nt);
                   SgemmExtras ex;
                   ex.packed_a = packed ? packed->panel(m0, g) : nullptr;
                   ex.packed_b = panels + ng * per_ng + (p0 / NR) * K * NR;
                   ex.row_bias = bias ? bias + g * Mg + m0 : nullptr;
                   float* yb = y + (n * M + g * Mg + m0) * P + p0;
                   ep.to_sgemm(yb, ex);
                   sgemm(false, false, m1 - m0, p1 - p0, K, 1.0f, wd ? wd + (g * Mg + m0) * K : nullptr, K, nullptr,
                         0, 0.0f, yb, P, ex);
                 }
               });
}

}  // namespace spindle::kernels::nn::conv
