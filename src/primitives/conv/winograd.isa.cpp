// winograd.isa.cpp — the transforms of Winograd F(4x4, 3x3) convolution
// (kernels/nn/conv/conv_winograd.cpp), compiled once per ISA level
// (src/primitives/isa/dispatch.h). The transforms run on vectors with one lane
// per tile: the input transform over 8 consecutive tiles of a plane with
// AVX2 (a row of tiles at the baseline), the output transform over a row of
// tiles, on work rows padded to whole vectors.
//
// A 3x3 stride-1 convolution computes each 4x4 output tile from a 6x6 input
// patch. With the interpolation points 0, 1, -1, 2, -2 and infinity:
//   U = G g G^T      (6x6, per output channel m and input channel c)
//   V = B^T d B      (6x6, per input channel and tile)
//   O[xi] = sum_c U[xi][m][c] V[xi][c][t]   (36 GEMMs, xi = 6 i + k)
//   Y = A^T O A      (4x4 outputs of the tile)
// which takes 36 multiply-adds per tile and channel pair where the direct
// sum takes 144.
//
//   B^T = | 4  0 -5  0  1  0 |   G = |  1/4     0     0  |   A^T = | 1  1  1  1  1  0 |
//         | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6  |         | 0  1 -1  2 -2  0 |
//         | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6  |         | 0  1  1  4  4  0 |
//         | 0 -2 -1  2  1  0 |       |  1/24  1/12  1/6  |         | 0  1 -1  8 -8  1 |
//         | 0  2 -1 -2  1  0 |       |  1/24 -1/12  1/6  |
//         | 0  4  0 -5  0  1 |       |  0     0     1    |
//
// Every element is computed by the same expression wherever its tile sits,
// so the result depends on the shapes only, never on how the caller splits
// the work.
#include <algorithm>
#include <cstdint>

#include "primitives/conv/winograd.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

using simd::VFloat;

// Applies `f` to lanes [0, n) in full vectors, then one masked tail: every
// element goes through the same vector operations.
template <class F>
inline void over_lanes(int64_t n, F f) {
  constexpr int W = simd::kWidth;
  int64_t t = 0;
  for (; t + W <= n; t += W) f(t, W);
  if (t < n) f(t, static_cast<int>(n - t));
}

inline VFloat ld(const float* p, int w) { return w == simd::kWidth ? simd::load(p) : simd::load_n(p, w); }
inline void st(float* p, VFloat v, int w) {
  if (w == simd::kWidth) simd::store(p, v);
  else simd::store_n(p, v, w);
}

// The six rows of B^T applied to a[0..5], on any vector type (one lane per
// tile): every path computes V by this one expression.
template <class V>
inline void bt6(const V* a, V* o, V two, V four, V five) {
  o[0] = four * a[0] - five * a[2] + a[4];
  o[1] = (a[3] + a[4]) - four * (a[1] + a[2]);
  o[2] = (a[4] - a[3]) + four * (a[1] - a[2]);
  o[3] = (a[4] - a[2]) + two * (a[3] - a[1]);
  o[4] = (a[4] - a[2]) + two * (a[1] - a[3]);
  o[5] = four * a[1] - five * a[3] + a[5];
}

#if !defined(__AVX2__)
// The six rows of B^T applied to d0..d5 (one lane per tile).
inline void bt_rows(const float* d0, const float* d1, const float* d2, const float* d3, const float* d4,
                    const float* d5, int64_t n, float* const* out) {
  const VFloat two = simd::set1(2.0f), four = simd::set1(4.0f), five = simd::set1(5.0f);
  over_lanes(n, [&](int64_t t, int w) {
    const VFloat a[6] = {ld(d0 + t, w), ld(d1 + t, w), ld(d2 + t, w), ld(d3 + t, w), ld(d4 + t, w), ld(d5 + t, w)};
    VFloat o[6];
    bt6(a, o, two, four, five);
    for (int k = 0; k < 6; ++k) st(out[k] + t, o[k], w);
  });
}
#endif

// The four rows of A^T applied to a[0..5], on any vector type: every path
// computes Y by this one expression.
template <class V>
inline void at4(const V* a, V* o, V two, V four, V eight) {
  const V s12 = a[1] + a[2], d12 = a[1] - a[2];
  const V s34 = a[3] + a[4], d34 = a[3] - a[4];
  o[0] = a[0] + s12 + s34;
  o[1] = d12 + two * d34;
  o[2] = s12 + four * s34;
  o[3] = d12 + eight * d34 + a[5];
}

#if !defined(__AVX2__)
// The four rows of A^T applied to o0..o5.
inline void at_rows(const float* o0, const float* o1, const float* o2, const float* o3, const float* o4,
                    const float* o5, int64_t n, float* const* out) {
  const VFloat two = simd::set1(2.0f), four = simd::set1(4.0f), eight = simd::set1(8.0f);
  over_lanes(n, [&](int64_t t, int w) {
    const VFloat a[6] = {ld(o0 + t, w), ld(o1 + t, w), ld(o2 + t, w), ld(o3 + t, w), ld(o4 + t, w), ld(o5 + t, w)};
    VFloat y[4];
    at4(a, y, two, four, eight);
    for (int k = 0; k < 4; ++k) st(out[k] + t, y[k], w);
  });
}
#endif

// Row length of the work arrays: TW rounded up to whole vectors, so the
// transforms run on full vectors only (the extra lanes are computed and
// never stored; masked loads and stores are slow on some cores).
inline int64_t lanes(int64_t TW) { return (TW + simd::kWidth - 1) / simd::kWidth * simd::kWidth; }

}  // namespace

// V of the tiles in tile rows [ty0, ty1) of one input plane x (H x W,
// padded by pt rows on top and pl columns on the left; outside the input
// reads 0), written straight into the SGEMM's B panels: the tile at tile
// row ty, column tx (input row 4 ty - pt, column 4 tx - pl) is column
// t = (ty - ty0) TW + tx, and its V[xi] goes to
// v + xi * xi_stride + (t / nr) * kp + t % nr (kp = panel floats: the
// channels times nr; the caller offsets v by its channel times nr; nr is a
// multiple of 8). The last panel's columns past the last tile get zeros.
#if defined(__AVX2__)
// Floats of `work` winograd_input_plane needs for TR rows of TW tiles: the
// zero-padded rows they read, then 6 zero rows and 8 floats of slack.
int64_t winograd_input_work(int64_t TR, int64_t TW) { return (4 * TR + 8) * (4 * TW + 4) + 8; }

// Lanes are 8 consecutive tiles of the plane, across tile rows, so a 14x14
// plane (4x4 tiles) fills two vectors: the rows the tiles read are copied
// into a zero-padded plane, each tile's 6x6 patch is loaded one patch row
// per vector and 8 tiles are transposed into lanes (lane t of vector j =
// column j of tile t's patch row), and V[xi] of the 8 tiles is one store
// into a panel. Lanes past the last tile read zero rows, and the rest of
// the last panel gets zero stores.
void winograd_input_plane(const ::spindle::kernels::WinogradInputPlane& args) {
  const float* x = args.x;
  int64_t H = args.H;
  int64_t W = args.W;
  int64_t pt = args.pt;
  int64_t pl = args.pl;
  int64_t ty0 = args.ty0;
  int64_t ty1 = args.ty1;
  int64_t TW = args.TW;
  float* v = args.v;
  int64_t xi_stride = args.xi_stride;
  int64_t nr = args.nr;
  int64_t kp = args.kp;
  float* work = args.work;
  const int64_t TR = ty1 - ty0, rows = 4 * TR + 2, Wp = 4 * TW + 4, tiles = TR * TW;
  // Row i of the padded plane: input row 4 ty0 - pt + i, column j at j + pl.
  // Written in whole vectors (short loops of scalar zeros become memset
  // calls): a row's last stores run up to 8 floats into the next row, which
  // is written after it (the buffer has 8 floats of slack at its end).
  const __m256 zv = _mm256_setzero_ps();
  for (int64_t i = 0; i < rows; ++i) {
    float* dst = work + i * Wp;
    const int64_t ih = 4 * ty0 - pt + i;
    int64_t j = 0;  // next padded column to write
    if (ih >= 0 && ih < H) {
      const float* src = x + ih * W;
      for (; j < pl; j += 8) _mm256_storeu_ps(dst + j, zv);
      int64_t c = 0;
      for (; c + 8 <= W; c += 8) _mm256_storeu_ps(dst + pl + c, _mm256_loadu_ps(src + c));
      // The last W - c (< 8) columns, zeros after them.
      _mm256_storeu_ps(dst + pl + c, _mm256_maskload_ps(src + c, simd::tail_mask8(static_cast<int>(W - c))));
      j = pl + c + 8;
    }
    for (; j < Wp; j += 8) _mm256_storeu_ps(dst + j, zv);
  }
  // Six zero rows for the lanes past the last tile.
  float* zero = work + rows * Wp;
  if (tiles % 8 != 0)
    for (int64_t j = 0; j < 6 * Wp; j += 8) _mm256_storeu_ps(zero + j, zv);
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
  int64_t ty = 0, tx = 0;  // of the next tile to place in a lane
  // Groups past the last tile up to the panel's end are zeros (the last
  // panel's unused columns).
  const int64_t groups_end = (tiles + nr - 1) / nr * nr;
  for (int64_t t0 = (tiles + 7) / 8 * 8; t0 < groups_end; t0 += 8) {
    float* dst = v + (t0 / nr) * kp + t0 % nr;
    for (int64_t xi = 0; xi < 36; ++xi) _mm256_storeu_ps(dst + xi * xi_stride, zv);
  }
  for (int64_t t0 = 0; t0 < tiles; t0 += 8) {
    const float* base[8];
    for (int l = 0; l < 8; ++l) {
      if (t0 + l < tiles) {
        base[l] = work + 4 * ty * Wp + 4 * tx;
        if (++tx == TW) tx = 0, ++ty;
      } else {
        base[l] = zero;
      }
    }
    __m256 rt[6][6];  // B^T along patch row r: rt[r][k]
    for (int64_t r = 0; r < 6; ++r) {
      __m256 d[8];
      for (int l = 0; l < 8; ++l) d[l] = _mm256_loadu_ps(base[l] + r * Wp);
      simd::transpose8(d);
      bt6(d, rt[r], two, four, five);
    }
    float* dst = v + (t0 / nr) * kp + t0 % nr;
    for (int64_t k = 0; k < 6; ++k) {
      const __m256 c[6] = {rt[0][k], rt[1][k], rt[2][k], rt[3][k], rt[4][k], rt[5][k]};
      __m256 o[6];
      bt6(c, o, two, four, five);
      for (int64_t i = 0; i < 6; ++i) _mm256_storeu_ps(dst + (6 * i + k) * xi_stride, o[i]);
    }
  }
}
#else
// Floats of `work` winograd_input_plane needs for TR rows of TW tiles.
int64_t winograd_input_work(int64_t /*TR*/, int64_t TW) { return 6 * 4 * (lanes(TW) + 1) + 72 * lanes(TW); }

void winograd_input_plane(const ::spindle::kernels::WinogradInputPlane& args) {
  const float* x = args.x;
  int64_t H = args.H;
  int64_t W = args.W;
  int64_t pt = args.pt;
  int64_t pl = args.pl;
  int64_t ty0 = args.ty0;
  int64_t ty1 = args.ty1;
  int64_t TW = args.TW;
  float* v = args.v;
  int64_t xi_stride = args.xi_stride;
  int64_t nr = args.nr;
  int64_t kp = args.kp;
  float* work = args.work;
  const int64_t S = lanes(TW);
  const int64_t Q = S + 1;   // columns of a phase row: tile tx reads q = tx and tx + 1
  float* phase = work;       // [6 rows][4 phases][Q]: phase p, entry q = padded column 4 q + p
  float* trow = work + 24 * Q;  // [6 rows][6 k][S]: B^T along the row
  float* col = trow + 36 * S;   // [36 xi = 6 i + k][S]: B^T down the columns
  // Entries q in [qa, qb) read four input columns 4 q - pl .. 4 q + 3 - pl, all inside.
  const int64_t qa = (pl + 3) / 4;
  const int64_t qb = W - 4 + pl >= 0 ? std::int64_t((W - 4 + pl) / 4 + 1) : 0;
  const int64_t lo = qa < Q ? qa : Q, hi = qb < lo ? lo : (qb < Q ? qb : Q);
  for (int64_t ty = ty0; ty < ty1; ++ty) {
    // Lanes are the tiles of one tile row.
    // The phases of all six rows first, then B^T along them: the vector
    // loads of a phase row then come well after its scalar stores (a load
    // right behind them waits for each store to forward).
    for (int64_t r = 0; r < 6; ++r) {
      const int64_t ih = 4 * ty - pt + r;
      float* __restrict ph = phase + r * 4 * Q;
      if (ih < 0 || ih >= H) {
        for (int64_t i = 0; i < 4 * Q; ++i) ph[i] = 0.0f;
      } else {
        const float* __restrict row = x + ih * W;
        auto edge = [&](int64_t q) {
          for (int64_t p = 0; p < 4; ++p) {
            const int64_t iw = 4 * q + p - pl;
            ph[p * Q + q] = iw >= 0 && iw < W ? row[iw] : 0.0f;
          }
        };
        for (int64_t q = 0; q < lo; ++q) edge(q);
        const float* __restrict src = row - pl;
        float* __restrict p0 = ph;
        float* __restrict p1 = ph + Q;
        float* __restrict p2 = ph + 2 * Q;
        float* __restrict p3 = ph + 3 * Q;
        for (int64_t q = lo; q < hi; ++q) {
          p0[q] = src[4 * q];
          p1[q] = src[4 * q + 1];
          p2[q] = src[4 * q + 2];
          p3[q] = src[4 * q + 3];
        }
        for (int64_t q = hi; q < Q; ++q) edge(q);
      }
    }
    for (int64_t r = 0; r < 6; ++r) {
      const float* ph = phase + r * 4 * Q;
      // d_j of tile tx = padded column 4 tx + j = phase (j % 4), entry tx + j / 4.
      float* out[6];
      for (int k = 0; k < 6; ++k) out[k] = trow + (r * 6 + k) * S;
      bt_rows(ph, ph + Q, ph + 2 * Q, ph + 3 * Q, ph + 1, ph + Q + 1, S, out);
    }
    for (int64_t k = 0; k < 6; ++k) {
      float* out[6];
      for (int i = 0; i < 6; ++i) out[i] = col + (i * 6 + k) * S;
      const float* c = trow + k * S;  // row r at c + r * 6 * S
      bt_rows(c, c + 6 * S, c + 12 * S, c + 18 * S, c + 24 * S, c + 30 * S, S, out);
    }
    // Into the panels: runs of consecutive columns within one panel, each
    // found once and copied for all 36 V[xi].
    for (int64_t j = 0, t = (ty - ty0) * TW; j < TW;) {
      const int64_t o = t % nr, len = nr - o < TW - j ? nr - o : TW - j;
      float* dst = v + (t / nr) * kp + o;
      for (int64_t xi = 0; xi < 36; ++xi) {
        float* __restrict d = dst + xi * xi_stride;
        const float* __restrict from = col + xi * S + j;
        for (int64_t l = 0; l < len; ++l) d[l] = from[l];
      }
      j += len;
      t += len;
    }
  }
  // Zeros in the last panel's columns past the last tile.
  const int64_t tiles = (ty1 - ty0) * TW;
  for (int64_t t = tiles; t % nr != 0; ++t)
    for (int64_t xi = 0; xi < 36; ++xi) v[xi * xi_stride + (t / nr) * kp + t % nr] = 0.0f;
}

#endif

// One output channel's TR rows of TW tiles: o[xi * xi_stride + t] holds
// O[xi] of tile t = ty TW + tx (read in whole vectors: up to 16 floats past
// the last tile must be readable); the tile's outputs plus `bias` go to
// rows 4 ty .. 4 ty + 3 below `rows` and columns 4 tx .. 4 tx + 3 below OW
// of y (row stride OW).
#if defined(__AVX2__)
// Floats of `work` winograd_output_plane needs (none: the tiles stay in
// registers).
int64_t winograd_output_work(int64_t /*TW*/) { return 0; }

// Lanes are 8 consecutive tiles, as in the input transform: A^T O A of 8
// tiles, then 4x4 transposes within each 128-bit half turn the 4 vectors of
// an output row i' (k' = 0..3) into each tile's 4 floats.
void winograd_output_plane(const ::spindle::kernels::WinogradOutputPlane& args) {
  const float* o = args.o;
  int64_t xi_stride = args.xi_stride;
  int64_t TR = args.TR;
  int64_t TW = args.TW;
  float bias = args.bias;
  float* y = args.y;
  int64_t rows = args.rows;
  int64_t OW = args.OW;
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), eight = _mm256_set1_ps(8.0f);
  const __m256 bv = _mm256_set1_ps(bias);
  const int64_t tiles = TR * TW;
  int64_t ty = 0, tx = 0;  // of the group's first tile
  for (int64_t t0 = 0; t0 < tiles; t0 += 8) {
    __m256 z[6][4];  // A^T along tile row i: z[i][k']
    for (int64_t i = 0; i < 6; ++i) {
      __m256 a[6];
      for (int64_t k = 0; k < 6; ++k) a[k] = _mm256_loadu_ps(o + (6 * i + k) * xi_stride + t0);
      at4(a, z[i], two, four, eight);
    }
    __m256 yt[4][4];  // outputs: yt[i'][k']
    for (int64_t k = 0; k < 4; ++k) {
      const __m256 c[6] = {z[0][k], z[1][k], z[2][k], z[3][k], z[4][k], z[5][k]};
      __m256 r[4];
      at4(c, r, two, four, eight);
      for (int64_t i = 0; i < 4; ++i) yt[i][k] = r[i];
    }
    const int n = static_cast<int>(std::min<int64_t>(8, tiles - t0));
    for (int64_t i = 0; i < 4; ++i) {
      const __m256 a0 = yt[i][0] + bv, a1 = yt[i][1] + bv, a2 = yt[i][2] + bv, a3 = yt[i][3] + bv;
      const __m256 t0l = _mm256_unpacklo_ps(a0, a1), t0h = _mm256_unpackhi_ps(a0, a1);
      const __m256 t1l = _mm256_unpacklo_ps(a2, a3), t1h = _mm256_unpackhi_ps(a2, a3);
      // Lane l of the group: half l / 4 of q[l % 4].
      const __m256 q[4] = {_mm256_shuffle_ps(t0l, t1l, 0x44), _mm256_shuffle_ps(t0l, t1l, 0xEE),
                           _mm256_shuffle_ps(t0h, t1h, 0x44), _mm256_shuffle_ps(t0h, t1h, 0xEE)};
      int64_t ry = ty, rx = tx;
      for (int l = 0; l < n; ++l) {
        const int64_t oy = 4 * ry + i;
        if (oy < rows) {
          const __m128 v = l < 4 ? _mm256_castps256_ps128(q[l]) : _mm256_extractf128_ps(q[l - 4], 1);
          float* dst = y + oy * OW + 4 * rx;
          const int64_t cols = OW - 4 * rx;
          if (cols >= 4) {
            _mm_storeu_ps(dst, v);
          } else {
            alignas(16) float f[4];
            _mm_store_ps(f, v);
            for (int64_t c = 0; c < cols; ++c) dst[c] = f[c];
          }
        }
        if (++rx == TW) rx = 0, ++ry;
      }
    }
    for (int l = 0; l < n; ++l)
      if (++tx == TW) tx = 0, ++ty;
  }
}
#else
namespace {

// One row of TW tiles (o[xi * xi_stride + tx]) into y rows 0..rows-1.
void output_row(const float* o, int64_t xi_stride, int64_t TW, float bias, float* y, int64_t OW,
                         int64_t rows, float* work) {
  const int64_t S = lanes(TW);
  float* z = work;            // [6 i][4 k'][S]: A^T along the row
  float* yt = work + 24 * S;  // [4 i'][4 k'][S]
  for (int64_t i = 0; i < 6; ++i) {
    float* out[4];
    for (int k = 0; k < 4; ++k) out[k] = z + (i * 4 + k) * S;
    const float* r = o + i * 6 * xi_stride;
    at_rows(r, r + xi_stride, r + 2 * xi_stride, r + 3 * xi_stride, r + 4 * xi_stride, r + 5 * xi_stride, S, out);
  }
  for (int64_t k = 0; k < 4; ++k) {
    float* out[4];
    for (int i = 0; i < 4; ++i) out[i] = yt + (i * 4 + k) * S;
    const float* c = z + k * S;  // row i at c + i * 4 * S
    at_rows(c, c + 4 * S, c + 8 * S, c + 12 * S, c + 16 * S, c + 20 * S, S, out);
  }
  for (int64_t i = 0; i < rows; ++i) {
    float* __restrict yr = y + i * OW;
    const float* y0 = yt + (i * 4) * S;
    const float* y1 = y0 + S;
    const float* y2 = y1 + S;
    const float* y3 = y2 + S;
    const int64_t full = OW / 4;  // tiles whose four columns are all inside
    for (int64_t tx = 0; tx < full; ++tx) {
      yr[4 * tx] = y0[tx] + bias;
      yr[4 * tx + 1] = y1[tx] + bias;
      yr[4 * tx + 2] = y2[tx] + bias;
      yr[4 * tx + 3] = y3[tx] + bias;
    }
    for (int64_t ox = 4 * full; ox < OW; ++ox) yr[ox] = yt[(i * 4 + ox % 4) * S + full] + bias;
  }
}

}  // namespace

int64_t winograd_output_work(int64_t TW) { return 40 * lanes(TW); }

void winograd_output_plane(const ::spindle::kernels::WinogradOutputPlane& args) {
  const float* o = args.o;
  int64_t xi_stride = args.xi_stride;
  int64_t TR = args.TR;
  int64_t TW = args.TW;
  float bias = args.bias;
  float* y = args.y;
  int64_t rows = args.rows;
  int64_t OW = args.OW;
  float* work = args.work;
  for (int64_t ty = 0; ty < TR; ++ty)
    output_row(o + ty * TW, xi_stride, TW, bias, y + 4 * ty * OW, OW, std::min<int64_t>(4, rows - 4 * ty), work);
}
#endif

// U = G g G^T of each 3x3 filter w[m][c] (M x C filters of 9 floats), stored
// as u[xi][m][c] (36 matrices of M x C). Filters go in blocks of 16,
// transposed so that the loops over a block's lanes vectorize; each element
// comes from the same expression as with one filter at a time (same bits).
void winograd_weights(const float* w, int64_t M, int64_t C, float* u) {
  const float g[6][3] = {{0.25f, 0.0f, 0.0f},
                         {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                         {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                         {1.0f / 24, 1.0f / 12, 1.0f / 6},
                         {1.0f / 24, -1.0f / 12, 1.0f / 6},
                         {0.0f, 0.0f, 1.0f}};
  const int64_t MC = M * C;
  constexpr int64_t kLanes = 16;  // filters per block, transposed so the lane loops vectorize
  for (int64_t mc0 = 0; mc0 < MC; mc0 += kLanes) {
    const int64_t n = std::min(kLanes, MC - mc0);
    float f[9][kLanes] = {};
    for (int64_t l = 0; l < n; ++l)
      for (int e = 0; e < 9; ++e) f[e][l] = w[(mc0 + l) * 9 + e];
    float t[6][3][kLanes];  // G g
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 3; ++j)
        for (int64_t l = 0; l < kLanes; ++l) t[i][j][l] = g[i][0] * f[j][l] + g[i][1] * f[3 + j][l] + g[i][2] * f[6 + j][l];
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < 6; ++k) {
        float r[kLanes];
        for (int64_t l = 0; l < kLanes; ++l) r[l] = t[i][0][l] * g[k][0] + t[i][1][l] * g[k][1] + t[i][2][l] * g[k][2];
        float* out = u + (i * 6 + k) * MC + mc0;
        for (int64_t l = 0; l < n; ++l) out[l] = r[l];
      }
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
