// sgemm.isa.cpp — the per-ISA part of spindle's packed SGEMM (sgemm.h): the
// register-blocked micro-kernel, the loop over micro-tiles of one cache
// block (several B panels side by side for blocks of 1-3 rows), the same
// tiles over B rows given as pointers (sgemm_taps_block: convolution
// without im2col), and the packing of A and B into the panel formats.
//
// Compiled once per ISA level (src/primitives/isa/dispatch.h). The code is
// written once over a small width-generic vector layer (Vec, kW lanes):
//   baseline  SSE2, 4 lanes, multiply + add:   MR x NR =  4 x 8
//   avx2      AVX2 + FMA, 8 lanes:             MR x NR =  6 x 16
//   avx512    AVX-512F, 16 lanes:              MR x NR = 12 x 32
// NR is always two vectors; MR fills the register file (MR * 2 accumulators
// + 2 B vectors + 1 broadcast A value), except at AVX-512, where 14 rows
// (31 of 32 zmm) left GCC spilling two accumulators to the stack in the
// k loop: 12 x 32 runs the same sums 8-20% faster (docs/gemm.md).
//
// Panel formats (K = the full reduction length of the packed operand):
//   A: panels of MR rows; panel p holds dst[p*K*MR + k*MR + i] =
//      alpha * op(A)[p*MR + i][k], rows past m are zero.
//   B: panels of NR columns; panel q holds dst[q*K*NR + k*NR + j] =
//      op(B)[k][q*NR + j], columns past n are zero.
// A k-range [k0, k0 + kc) of a panel is the contiguous run starting at
// k0 * MR (k0 * NR), so a panel packed over the full K serves any KC block.
//
// Reduction order: every output element accumulates its k terms one at a
// time in increasing k inside the micro-kernel; the caller chooses k blocks
// from the shape only. The result therefore depends on the shape and the ISA
// level, never on how rows and columns were split between threads.
//
// Per the dispatch rule, everything here has internal linkage except the
// functions declared in sgemm.h, and no out-of-line std:: template is used.
#include <cstdint>
#include <cstring>

#include "primitives/gemm/sgemm_isa.h"
#include "primitives/isa/dispatch.h"
#include "primitives/isa/simd.h"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

#define SG_INLINE inline __attribute__((always_inline))

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kW = 16;
constexpr int kMR = 12;
SG_INLINE Vec vzero() { return _mm512_setzero_ps(); }
SG_INLINE Vec vset1(float v) { return _mm512_set1_ps(v); }
SG_INLINE Vec vload(const float* p) { return _mm512_loadu_ps(p); }
SG_INLINE void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
SG_INLINE Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
// a > b ? a : b, a < b ? a : b (NaN: b). The all-lanes mask forms: GCC 12's
// unmasked ones pass an "undefined" vector that -Wmaybe-uninitialized flags.
SG_INLINE Vec vmax(Vec a, Vec b) { return _mm512_mask_max_ps(b, 0xFFFF, a, b); }
SG_INLINE Vec vmin(Vec a, Vec b) { return _mm512_mask_min_ps(b, 0xFFFF, a, b); }
// The first kMR floats at p, zeros above (reads nothing past p + kMR).
SG_INLINE Vec vload_mr(const float* p) { return _mm512_maskz_loadu_ps((1u << kMR) - 1u, p); }
constexpr bool kColumnEdge = true;
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kW = 8;
constexpr int kMR = 6;
SG_INLINE Vec vzero() { return _mm256_setzero_ps(); }
SG_INLINE Vec vset1(float v) { return _mm256_set1_ps(v); }
SG_INLINE Vec vload(const float* p) { return _mm256_loadu_ps(p); }
SG_INLINE void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
SG_INLINE Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
SG_INLINE Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }  // a > b ? a : b (NaN: b)
SG_INLINE Vec vmin(Vec a, Vec b) { return _mm256_min_ps(a, b); }  // a < b ? a : b (NaN: b)
SG_INLINE Vec vload_mr(const float* p) { return _mm256_maskload_ps(p, _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0)); }
constexpr bool kColumnEdge = true;
#elif defined(__SSE2__)
using Vec = __m128;
constexpr int kW = 4;
constexpr int kMR = 4;
SG_INLINE Vec vzero() { return _mm_setzero_ps(); }
SG_INLINE Vec vset1(float v) { return _mm_set1_ps(v); }
SG_INLINE Vec vload(const float* p) { return _mm_loadu_ps(p); }
SG_INLINE void vstore(float* p, Vec v) { _mm_storeu_ps(p, v); }
SG_INLINE Vec vfma(Vec a, Vec b, Vec c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
SG_INLINE Vec vmax(Vec a, Vec b) { return _mm_max_ps(a, b); }  // a > b ? a : b (NaN: b)
SG_INLINE Vec vmin(Vec a, Vec b) { return _mm_min_ps(a, b); }  // a < b ? a : b (NaN: b)
SG_INLINE Vec vload_mr(const float* p) { return _mm_loadu_ps(p); }  // kMR == kW
constexpr bool kColumnEdge = true;
#else
// Plain C++ (non-x86 builds): one "lane" per vector.
using Vec = float;
constexpr int kW = 1;
constexpr int kMR = 4;
SG_INLINE Vec vzero() { return 0.0f; }
SG_INLINE Vec vset1(float v) { return v; }
SG_INLINE Vec vload(const float* p) { return *p; }
SG_INLINE void vstore(float* p, Vec v) { *p = v; }
SG_INLINE Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
SG_INLINE Vec vmax(Vec a, Vec b) { return a > b ? a : b; }
SG_INLINE Vec vmin(Vec a, Vec b) { return a < b ? a : b; }
SG_INLINE Vec vload_mr(const float* p) { return *p; }
constexpr bool kColumnEdge = false;  // a vector holds one row
#endif

constexpr int kNV = 2;  // vectors per row of a micro-tile

// What happens to a finished sum as it is stored (the last k block of a
// GEMM): the residual added (R at res, row stride ldr, located by the
// element's offset from the tile's first), then SgemmBlock's StoreAct with
// the pass's operations: max then min with the bound first, so a NaN sum
// stays NaN and -0 stays -0, as Activation's pass (v < lo ? lo : v, then
// v > hi ? hi : v) leaves them. The order is the unfused one:
// act(bias + sum + R).
struct Finish {
  StoreAct act = StoreAct::kNone;
  float lo = 0.0f, hi = 0.0f;
  const float* res = nullptr;
  int64_t ldr = 0;
  SG_INLINE Vec operator()(Vec v, int64_t i, int64_t j) const {
    if (res) v = v + vload(res + i * ldr + j);
    switch (act) {
      case StoreAct::kNone:
        return v;
      case StoreAct::kClamp:
        return vmin(vset1(hi), vmax(vset1(lo), v));
      case StoreAct::kHardSigmoid:
        return vmin(vset1(1.0f), vmax(vzero(), vfma(v, vset1(lo), vset1(hi))));
      case StoreAct::kHardSwish:
        return v * vmin(vset1(1.0f), vmax(vzero(), vfma(v, vset1(lo), vset1(hi))));
    }
    return v;
  }
};
constexpr int kNR = kNV * kW;

// One R x NR tile (R <= MR rows of an MR-row panel): c[i][j] = init[i][j] +
// sum_k pa[k*MR + i] * pb[k*NR + j]. init is C itself (accumulate), the row
// bias, or zero. c has row stride ldc and R full rows of NR columns (the
// caller handles ragged columns through a local tile).
// NV < kNV computes only the first NV vectors of columns (a ragged last
// tile of at most NV * kW columns); each computed element sees the same
// operations as with NV = kNV.
// Where a tile's B rows come from: a packed NR-column panel (row k at
// pb + k * NR), or one pointer per k (the implicit GEMM: taps[k] + j0).
// pf, when set, is another panel's k-range asked for into L2 as the tile
// runs (an A panel, MR floats per k: next_panel below; with kAheadB a B
// panel, NR / 2 floats per k (one 64-byte line at AVX-512): a constant B's
// next column panel, half of it during each of the first two row tiles,
// from memory in time (a 128 x 512 x 1408 product with caches flushed
// 1.54-1.90 -> 1.39-1.47 ms), all of it during the one row tile of a block
// of fewer rows (kAheadB 2: both halves at once); it changes no arithmetic.
struct PanelRows {
  const float* __restrict pb;
  SG_INLINE const float* row() const { return pb; }
  SG_INLINE void next() { pb += kNR; }
};
struct TapRows {
  const float* const* taps;
  int64_t j0;
  SG_INLINE const float* row() const { return *taps + j0; }
  SG_INLINE void next() { ++taps; }
};

template <int R, int NV = kNV, class Rows = PanelRows, int kAheadB = 0>
SG_INLINE void micro_tile(int64_t kc, const float* __restrict pa, Rows rows, float* c, int64_t ldc, bool accumulate,
                          const float* row_bias, Finish fin = {}, const float* pf = nullptr) {
  constexpr int64_t kPfStep = kAheadB ? kNR / 2 : kMR;  // floats per k of the panel pf reads
  const int64_t pf_half = (kc / 2) * kNR;               // kAheadB 2: the panel's second half
  Vec acc[R][NV];
  if (accumulate) {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = vload(c + i * ldc + v * kW);
  } else if (row_bias) {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = vset1(row_bias[i]);
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = vzero();
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const float* pb = rows.row();
    Vec b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) b[v] = vload(pb + v * kW);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const Vec a = vset1(pa[i]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = vfma(a, b[v], acc[i][v]);
    }
#if defined(__SSE2__)
    if (pf) {
      _mm_prefetch(reinterpret_cast<const char*>(pf + k * kPfStep), _MM_HINT_T1);
      if constexpr (kAheadB == 2) _mm_prefetch(reinterpret_cast<const char*>(pf + pf_half + k * kPfStep), _MM_HINT_T1);
    }
#endif
    pa += kMR;
    rows.next();
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) vstore(c + i * ldc + v * kW, fin(acc[i][v], i, v * kW));
}

// micro_tile<rows> for a run-time rows in [1, MR]: a row edge (and M = 1,
// FC layers at batch 1) computes only its rows. Every row's sum is the same
// sequence of operations whatever R is, so results do not depend on where a
// row falls in a panel.
template <int R = kMR, int NV = kNV, class Rows = PanelRows>
SG_INLINE void micro_rows(int rows, int64_t kc, const float* pa, Rows b, float* c, int64_t ldc, bool accumulate,
                          const float* row_bias, Finish fin = {}) {
  if constexpr (R > 1) {
    if (rows < R) return micro_rows<R - 1, NV, Rows>(rows, kc, pa, b, c, ldc, accumulate, row_bias, fin);
  }
  micro_tile<R, NV, Rows>(kc, pa, b, c, ldc, accumulate, row_bias, fin);
}

// Few rows (M = 1..3: FC layers at small batch, a row edge of 1..3 rows):
// an R x NR tile holds only 2R accumulators, too few to hide the FMA
// latency, so P panels of B (P * NR columns) run side by side, R * P * kNV
// independent accumulators fed by P streams of packed B. Each element sees
// exactly micro_tile's operations (init, then one multiply-add per k in
// increasing k), so the result is the same as through micro_tile.
template <int R, int P>
SG_INLINE void micro_wide(int64_t kc, const float* __restrict pa, const float* __restrict pb, int64_t pb_stride,
                          float* c, int64_t ldc, bool accumulate, const float* row_bias, Finish fin) {
  constexpr int kV = P * kNV;
  Vec acc[R][kV];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      float* cv = c + i * ldc + (v / kNV) * kNR + (v % kNV) * kW;
      acc[i][v] = accumulate ? vload(cv) : row_bias ? vset1(row_bias[i]) : vzero();
    }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    Vec a[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) a[i] = vset1(pa[i]);
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      const Vec b = vload(pb + (v / kNV) * pb_stride + (v % kNV) * kW);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i][v] = vfma(a[i], b, acc[i][v]);
    }
    pa += kMR;
    pb += kNR;
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      const int64_t j = (v / kNV) * kNR + (v % kNV) * kW;
      vstore(c + i * ldc + j, fin(acc[i][v], i, j));
    }
}

// The Finish of blk's tile at row i0, column j0 (an SgemmBlock or an
// SgemmTapsBlock).
template <class Block>
SG_INLINE Finish finish(const Block& blk, int64_t i0, int64_t j0) {
  return Finish{blk.act, blk.lo, blk.hi, blk.res ? blk.res + i0 * blk.ldc + j0 : nullptr, blk.ldc};
}

// The A panel to ask for while the tile of rows i0.. (panel pa) computes:
// during a block's first column tile, the next row panel's k-range, so the
// sweep down the rows finds each panel already on its way into L2 (packed
// weights are read from L3 or memory once per run: a 440 x 440 1x1
// convolution on 7x7, 0.939x with caches flushed; docs/benchmarks.md).
// Null otherwise: later column tiles find the panels in L2.
template <class Block>
SG_INLINE const float* next_panel(const Block& blk, bool first_columns, int64_t i0, const float* pa) {
  return first_columns && i0 + kMR < blk.m ? pa + blk.pa_stride : nullptr;
}

// The columns of a block of R <= 3 rows from j0 in groups of P full panels;
// returns the first column left (fewer than P full panels remain).
template <int R, int P>
int64_t wide_columns(const SgemmBlock& blk, int64_t j0 = 0) {
  for (; j0 + P * kNR <= blk.n; j0 += P * kNR)
    micro_wide<R, P>(blk.kc, blk.pa, blk.pb + (j0 / kNR) * blk.pb_stride, blk.pb_stride, blk.c + j0, blk.ldc,
                     blk.accumulate, blk.row_bias, finish(blk, 0, j0));
  return j0;
}

// Asks for the C lines of the tile to the right of the one at c (the same
// rows, the next NR columns): the loops below visit every row tile of a
// column panel before the next panel, so the lines arrive while the other
// row tiles compute. A layer whose output is not in cache (MobileNetV3's
// 16 -> 64 channel 1x1 at 112 x 112 writes 3.2 MB) otherwise waits for every
// line it stores into: that layer ran 0.79 -> 0.68 ms with its output
// evicted from cache before each run, the model 0.966x (docs/benchmarks.md).
// Harmless past the end of a row: a prefetch never faults.
SG_INLINE void prefetch_next_tile(const float* c, int64_t ldc, int64_t rows) {
#if defined(__SSE2__)
  for (int64_t i = 0; i < rows; ++i) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR), _MM_HINT_T0);
#else
  (void)c, (void)ldc, (void)rows;
#endif
}

// A ragged tail of one or two columns (a 7 x 7 output is 49 = 3 x 16 + 1
// columns) as matrix-vector products with the rows in the vector lanes: one
// vector holds the MR rows of an A panel at one k (the packed panel format),
// times the broadcast B value of the column, so a column costs one
// multiply-add per k and panel instead of the MR of a tile (a 1-column
// tile computes a whole vector of columns for it). 4 panels side by side
// hide the latency. Each element still gets micro_tile's operations (start
// value, then one multiply-add of A by B per k in increasing k), so the bits
// are those of the same column inside a full tile.
constexpr int64_t kEdgeColumns = 2;
constexpr int kEdgePanels = 4;

template <int P>
SG_INLINE void column_panels(const SgemmBlock& blk, int64_t i0, int64_t j) {
  const float* pb = blk.pb + (j / kNR) * blk.pb_stride + j % kNR;
  const int64_t kc = blk.kc;
  alignas(64) float col[kMR > kW ? kMR : kW];
  Vec acc[P];
  const float* pa[P];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
    const int64_t r0 = i0 + p * kMR, rows = blk.m - r0 < kMR ? blk.m - r0 : kMR;
    pa[p] = blk.pa + (r0 / kMR) * blk.pa_stride;
    if (blk.accumulate) {
      for (int64_t i = 0; i < kMR; ++i) col[i] = i < rows ? blk.c[(r0 + i) * blk.ldc + j] : 0.0f;
      acc[p] = vload_mr(col);
    } else if (blk.row_bias) {
      for (int64_t i = 0; i < kMR; ++i) col[i] = i < rows ? blk.row_bias[r0 + i] : 0.0f;
      acc[p] = vload_mr(col);
    } else {
      acc[p] = vzero();
    }
  }
  // Full-width loads read into the next k's rows; the last k loads only
  // its MR floats (the last panel ends there).
  int64_t k = 0;
  for (; k + 1 < kc; ++k) {
    const Vec b = vset1(pb[k * kNR]);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[p] = vfma(vload(pa[p] + k * kMR), b, acc[p]);
  }
  if (k < kc) {
    const Vec b = vset1(pb[k * kNR]);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[p] = vfma(vload_mr(pa[p] + k * kMR), b, acc[p]);
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
    const int64_t r0 = i0 + p * kMR, rows = blk.m - r0 < kMR ? blk.m - r0 : kMR;
    alignas(64) float out[kMR > kW ? kMR : kW];
    // The column's residual gathered into the lanes of its rows.
    Finish fin{blk.act, blk.lo, blk.hi, nullptr, 0};
    if (blk.res) {
      for (int64_t i = 0; i < kW; ++i) out[i] = i < rows ? blk.res[(r0 + i) * blk.ldc + j] : 0.0f;
      fin.res = out;
    }
    vstore(out, fin(acc[p], 0, 0));
    for (int64_t i = 0; i < rows; ++i) blk.c[(r0 + i) * blk.ldc + j] = out[i];
  }
}

void column_edge(const SgemmBlock& blk, int64_t j) {
  const int64_t panels = (blk.m + kMR - 1) / kMR;
  int64_t q = 0;
  for (; q + kEdgePanels <= panels; q += kEdgePanels) column_panels<kEdgePanels>(blk, q * kMR, j);
  for (; q < panels; ++q) column_panels<1>(blk, q * kMR, j);
}

constexpr int64_t kWideRows = 3;  // blocks (and row edges) of at most this many rows run micro_wide

// A tile of nr < NR columns (a ragged last tile): its rows run on a local
// copy (with accumulate, of C; with a residual, of R, zero past its
// columns), then the nr columns are copied out; at most one vector of
// columns (7x7 outputs: 49 = 3 x 16 + 1) computes one vector. fin.res is at
// the tile's first element of R, row stride fin.ldr.
template <class Rows>
inline void ragged_tile(Rows b, int64_t mr, int64_t nr, int64_t kc, const float* pa, float* c, int64_t ldc,
                        bool accumulate, const float* bias, Finish fin) {
  alignas(64) float tile[kMR * kNR];
  alignas(64) float res_tile[kMR * kNR];
  const size_t bytes = static_cast<size_t>(nr) * sizeof(float);
  if (accumulate)
    for (int64_t i = 0; i < mr; ++i) std::memcpy(tile + i * kNR, c + i * ldc, bytes);
  if (fin.res) {
    std::memset(res_tile, 0, sizeof(res_tile));
    for (int64_t i = 0; i < mr; ++i) std::memcpy(res_tile + i * kNR, fin.res + i * fin.ldr, bytes);
    fin.res = res_tile;
    fin.ldr = kNR;
  }
  if (nr <= kW) micro_rows<kMR, 1>(static_cast<int>(mr), kc, pa, b, tile, kNR, accumulate, bias, fin);
  else micro_rows(static_cast<int>(mr), kc, pa, b, tile, kNR, accumulate, bias, fin);
  for (int64_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, tile + i * kNR, bytes);
}

}  // namespace

SgemmGeometry sgemm_geometry() { return SgemmGeometry{kMR, kNR}; }

// The edge rows (1..3 below the full panels, panel pa) of the two column
// panels ending at column j_end (exclusive) of blk, while those panels are
// still in cache.
SG_INLINE void edge_pair(const SgemmBlock& blk, int64_t rows, int64_t full, int64_t j_end) {
  const int64_t j0 = j_end - 2 * kNR;
  const float* pa = blk.pa + (full / kMR) * blk.pa_stride;
  const float* pb = blk.pb + (j0 / kNR) * blk.pb_stride;
  float* c = blk.c + full * blk.ldc + j0;
  const float* bias = blk.row_bias ? blk.row_bias + full : nullptr;
  const Finish fin = finish(blk, full, j0);
  if (rows == 1) micro_wide<1, 2>(blk.kc, pa, pb, blk.pb_stride, c, blk.ldc, blk.accumulate, bias, fin);
  else if (rows == 2) micro_wide<2, 2>(blk.kc, pa, pb, blk.pb_stride, c, blk.ldc, blk.accumulate, bias, fin);
  else micro_wide<3, 2>(blk.kc, pa, pb, blk.pb_stride, c, blk.ldc, blk.accumulate, bias, fin);
}

void sgemm_block(const SgemmBlock& blk) {
  const int64_t kc = blk.kc, n = blk.n;
  int64_t m = blk.m, j_first = 0;
  // A row edge of 1..3 rows below full panels runs micro_wide over each pair
  // of column panels right after the full rows have used them (B read from
  // cache, not streamed again); its leftover columns run as a block of
  // their own at the end.
  int64_t edge_rows = 0;
  if (m <= kWideRows) {
    // One row: 4 panels at a time, then 2 (a decode product's column block
    // of 64 columns ran 2 accumulators a row tile: 1 x 512 x 1408 at 26
    // GB/s of weights where 1 x 1408 x 512 ran 36).
    j_first = m == 1 ? wide_columns<1, 2>(blk, wide_columns<1, 4>(blk))
              : m == 2 ? wide_columns<2, 2>(blk)
                       : wide_columns<3, 2>(blk);
  } else if (m % kMR != 0 && m % kMR <= kWideRows) {
    edge_rows = m % kMR;
    m -= edge_rows;
  }
  int64_t edge_done = 0;  // columns of the edge rows computed
  // Columns past the last full tile: 1-2 run as column_edge; one vector
  // and 1-2 more (7x7 outputs: 49 = 32 + 16 + 1) as a one-vector tile
  // stored in place, then column_edge, where a ragged tile would compute 32
  // columns for 17; any other tail as a ragged tile.
  const int64_t tail = (n - j_first) % kNR;
  const bool vector_tail = kColumnEdge && kNV == 2 && tail >= kW && tail - kW <= kEdgeColumns;
  const int64_t n_tiles = kColumnEdge && (tail <= kEdgeColumns || vector_tail) ? n - tail : n;
  for (int64_t j0 = j_first; j0 < n_tiles; j0 += kNR) {
    const int64_t nr = n - j0 < kNR ? n - j0 : kNR;
    const float* pb = blk.pb + (j0 / kNR) * blk.pb_stride;
    for (int64_t i0 = 0; i0 < m; i0 += kMR) {
      const int64_t mr = m - i0 < kMR ? m - i0 : kMR;
      const float* pa = blk.pa + (i0 / kMR) * blk.pa_stride;
      float* c = blk.c + i0 * blk.ldc + j0;
      const float* bias = blk.row_bias ? blk.row_bias + i0 : nullptr;
      if (nr == kNR) {
        prefetch_next_tile(c, blk.ldc, mr);
        const Finish fin = finish(blk, i0, j0);
        if (mr == kMR && blk.b_ahead && m < 2 * kMR && j0 + kNR < n_tiles)
          micro_tile<kMR, kNV, PanelRows, 2>(kc, pa, PanelRows{pb}, c, blk.ldc, blk.accumulate, bias, fin,
                                             pb + blk.pb_stride);
        else if (mr == kMR && blk.b_ahead && i0 < 2 * kMR && j0 + kNR < n_tiles)
          micro_tile<kMR, kNV, PanelRows, 1>(kc, pa, PanelRows{pb}, c, blk.ldc, blk.accumulate, bias, fin,
                                             pb + blk.pb_stride + (i0 / kMR) * (kc / 2) * kNR);
        else if (mr == kMR)
          micro_tile<kMR>(kc, pa, PanelRows{pb}, c, blk.ldc, blk.accumulate, bias, fin, next_panel(blk, j0 == j_first, i0, pa));
        else micro_rows(static_cast<int>(mr), kc, pa, PanelRows{pb}, c, blk.ldc, blk.accumulate, bias, fin);
        continue;
      }
      ragged_tile(PanelRows{pb}, mr, nr, kc, pa, c, blk.ldc, blk.accumulate, bias, finish(blk, i0, j0));
    }
    if (edge_rows && nr == kNR && j0 + kNR - edge_done == 2 * kNR) {
      edge_pair(blk, edge_rows, m, j0 + kNR);
      edge_done = j0 + kNR;
    }
  }
  int64_t j_edge = n_tiles;
  if (vector_tail && m > 0) {
    const float* pb = blk.pb + (n_tiles / kNR) * blk.pb_stride;
    for (int64_t i0 = 0; i0 < m; i0 += kMR) {
      const int rows = static_cast<int>(m - i0 < kMR ? m - i0 : kMR);
      micro_rows<kMR, 1>(rows, kc, blk.pa + (i0 / kMR) * blk.pa_stride, PanelRows{pb}, blk.c + i0 * blk.ldc + n_tiles,
                         blk.ldc, blk.accumulate, blk.row_bias ? blk.row_bias + i0 : nullptr, finish(blk, i0, n_tiles));
    }
    j_edge += kW;
  }
  if (j_edge < n && m > 0) {
    SgemmBlock rows = blk;
    rows.m = m;
    for (int64_t j = j_edge; j < n; ++j) column_edge(rows, j);
  }
  if (edge_rows) {
    SgemmBlock edge = blk;
    edge.m = edge_rows;
    edge.n = n - edge_done;
    edge.pa = blk.pa + (m / kMR) * blk.pa_stride;
    edge.pb = blk.pb + (edge_done / kNR) * blk.pb_stride;
    edge.c = blk.c + m * blk.ldc + edge_done;
    edge.row_bias = blk.row_bias ? blk.row_bias + m : nullptr;
    edge.res = blk.res ? blk.res + m * blk.ldc + edge_done : nullptr;
    if (edge.n > 0) sgemm_block(edge);
  }
}

void sgemm_taps_block(const SgemmTapsBlock& blk) {
  for (int64_t j0 = 0; j0 < blk.n; j0 += kNR) {
    const int64_t nr = blk.n - j0 < kNR ? blk.n - j0 : kNR;
    for (int64_t i0 = 0; i0 < blk.m; i0 += kMR) {
      const int rows = static_cast<int>(blk.m - i0 < kMR ? blk.m - i0 : kMR);
      const float* pa = blk.pa + (i0 / kMR) * blk.pa_stride;
      const float* bias = blk.row_bias ? blk.row_bias + i0 : nullptr;
      float* c = blk.c + i0 * blk.ldc + j0;
      const TapRows b{blk.taps, j0};
      const Finish fin = finish(blk, i0, j0);
      if (nr == kNR) {
        prefetch_next_tile(c, blk.ldc, rows);
        if (rows == kMR) {
          micro_tile<kMR, kNV, TapRows>(blk.K, pa, b, c, blk.ldc, false, bias, fin, next_panel(blk, j0 == 0, i0, pa));
          continue;
        }
        micro_rows(rows, blk.K, pa, b, c, blk.ldc, false, bias, fin);
        continue;
      }
      ragged_tile(b, rows, nr, blk.K, pa, c, blk.ldc, false, bias, fin);
    }
  }
}

void sgemm_pack_a(bool trans, int64_t m, int64_t k0, int64_t kc, float alpha, const float* a, int64_t lda,
                  float* dst, int64_t dst_stride) {
  for (int64_t p0 = 0; p0 < m; p0 += kMR) {
    const int64_t rows = m - p0 < kMR ? m - p0 : kMR;
    float* d = dst + (p0 / kMR) * dst_stride;
    if (!trans) {
      // Row i of the panel is a[(p0 + i) * lda + k]: read rows, write strided.
#if defined(__AVX2__) && !defined(__AVX512F__)
      // A full panel of 6 rows, 8 k at a time: the 6 rows' runs transposed
      // in registers (two rows of zeros), each k's 6 values one store of 8
      // whose last 2 the next k's store overwrites (the last k's store of a
      // chunk is cut to 6). The same products alpha * a, in place of 48
      // scattered scalar stores.
      if (rows == kMR && kc >= 8) {
        const Vec av = vset1(alpha);
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8) {
          Vec r[8];
          for (int i = 0; i < kMR; ++i) r[i] = vload(a + (p0 + i) * lda + k0 + k) * av;
          r[6] = r[7] = vzero();
          simd::transpose8(r);
          float* dk = d + k * kMR;
          for (int j = 0; j < 7; ++j) vstore(dk + j * kMR, r[j]);
          simd::store_first(dk + 7 * kMR, r[7], kMR);
        }
        for (; k < kc; ++k)
          for (int64_t i = 0; i < kMR; ++i) d[k * kMR + i] = alpha * a[(p0 + i) * lda + k0 + k];
        continue;
      }
#endif
#if defined(__AVX512F__)
      // A full panel of 12 rows, 8 k at a time: rows 0-7 and rows 8-11 (four
      // rows of zeros) transposed in 8-lane registers; each k's 12 values
      // are a store of 8 and one of 8 whose last 4 the next k's first store
      // overwrites (the last k's cut to 4). The same products alpha * a as
      // the scalar loop below, which wrote a decoder's 128 x 512 activations
      // (every MatMul's run-time A) at ~3 floats per ns in scattered stores.
      if (rows == kMR && kc >= 8) {
        const __m256 av = _mm256_set1_ps(alpha);
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8) {
          __m256 lo[8], hi[8];
          for (int i = 0; i < 8; ++i) lo[i] = _mm256_mul_ps(_mm256_loadu_ps(a + (p0 + i) * lda + k0 + k), av);
          for (int i = 0; i < kMR - 8; ++i)
            hi[i] = _mm256_mul_ps(_mm256_loadu_ps(a + (p0 + 8 + i) * lda + k0 + k), av);
          for (int i = kMR - 8; i < 8; ++i) hi[i] = _mm256_setzero_ps();
          simd::transpose8(lo);
          simd::transpose8(hi);
          float* dk = d + k * kMR;
          for (int j = 0; j < 7; ++j) {
            _mm256_storeu_ps(dk + j * kMR, lo[j]);
            _mm256_storeu_ps(dk + j * kMR + 8, hi[j]);
          }
          _mm256_storeu_ps(dk + 7 * kMR, lo[7]);
          simd::store_first(dk + 7 * kMR + 8, hi[7], kMR - 8);
        }
        for (; k < kc; ++k)
          for (int64_t i = 0; i < kMR; ++i) d[k * kMR + i] = alpha * a[(p0 + i) * lda + k0 + k];
        continue;
      }
#endif
      // A partial panel (a decode step's one row): the panel zeroed in one
      // contiguous run, then its rows written. Zeroing the padding rows
      // one strided element at a time was 13 x K scattered stores per
      // product, 2.3% of a decoder's decode step.
      if (rows < kMR) std::memset(d, 0, static_cast<size_t>(kc * kMR) * sizeof(float));
      for (int64_t i = 0; i < rows; ++i) {
        const float* src = a + (p0 + i) * lda + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * kMR + i] = alpha * src[k];
      }
    } else {
      // op(A)[i][k] = a[k * lda + i]: each k is a contiguous run of rows.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = a + (k0 + k) * lda + p0;
        float* dk = d + k * kMR;
        for (int64_t i = 0; i < rows; ++i) dk[i] = alpha * src[i];
        for (int64_t i = rows; i < kMR; ++i) dk[i] = 0.0f;
      }
    }
  }
}

namespace {

// Rows k0..k0+kc of one NR-column panel of B (cols columns, the rest
// zeros) through SgemmRowAffine's transform: one multiply as a Mul by a
// per-row scale computes it; x * a + b written as BatchNormalization's
// affine pass writes it (vfma is that expression's contraction, or a
// multiply and an add where the level has no FMA, as the scalar tail).
template <bool kShift, bool kRelu>
void pack_b_rows_affine(int64_t cols, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* d,
                        const float* scale, const float* shift) {
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = b + (k0 + k) * ldb;
    float* dk = d + k * kNR;
    const float sk = scale[k0 + k];
    const float tk = kShift ? shift[k0 + k] : 0.0f;
    if (cols == kNR) {
      const Vec sv = vset1(sk), tv = vset1(tk);
#pragma GCC unroll 2
      for (int v = 0; v < kNV; ++v) {
        Vec x = kShift ? vfma(vload(src + v * kW), sv, tv) : vload(src + v * kW) * sv;
        if (kRelu) x = vmax(vzero(), x);  // 0 > x ? 0 : x: NaN and -0 stay
        vstore(dk + v * kW, x);
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        float x = kShift ? src[j] * sk + tk : src[j] * sk;
        if (kRelu) x = x < 0.0f ? 0.0f : x;
        dk[j] = x;
      }
      for (int64_t j = cols; j < kNR; ++j) dk[j] = 0.0f;
    }
  }
}

}  // namespace

#if defined(__AVX2__) && !defined(__AVX512F__)
// B not transposed, row by row: each row of B read once, left to right, its
// NR-column pieces written into the panels (the ragged last one through
// masks, zeros past n), through the row transform when Affine.
template <bool Affine, bool kShift, bool kRelu>
void pack_b_by_rows(int64_t n, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* dst, int64_t dst_stride,
                    const float* scale, const float* shift) {
  const int64_t full = n / kNR, rem = n % kNR;
  const __m256i m0 = simd::tail_mask8(rem < kW ? static_cast<int>(rem) : kW);
  const __m256i m1 = simd::tail_mask8(rem > kW ? static_cast<int>(rem - kW) : 0);
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = b + (k0 + k) * ldb;
    float* dk = dst + k * kNR;
    Vec sv = vzero(), tv = vzero();
    if constexpr (Affine) sv = vset1(scale[k0 + k]), tv = vset1(kShift ? shift[k0 + k] : 0.0f);
    auto tf = [&](Vec x) {
      if constexpr (Affine) {
        x = kShift ? vfma(x, sv, tv) : x * sv;
        if (kRelu) x = vmax(vzero(), x);
      }
      return x;
    };
    for (int64_t q = 0; q < full; ++q) {
      vstore(dk + q * dst_stride, tf(vload(src + q * kNR)));
      vstore(dk + q * dst_stride + kW, tf(vload(src + q * kNR + kW)));
    }
    if (rem) {
      const float* sr = src + full * kNR;
      float* dr = dk + full * dst_stride;
      vstore(dr, _mm256_and_ps(tf(_mm256_maskload_ps(sr, m0)), _mm256_castsi256_ps(m0)));
      vstore(dr + kW, _mm256_and_ps(tf(_mm256_maskload_ps(sr + kW, m1)), _mm256_castsi256_ps(m1)));
    }
  }
}
#endif

void sgemm_pack_b(bool trans, int64_t n, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* dst,
                  int64_t dst_stride, const SgemmRowAffine* rows) {
#if defined(__AVX2__) && !defined(__AVX512F__)
  if (!trans) {
    const float* s = rows ? rows->scale : nullptr;
    const float* t = rows ? rows->shift : nullptr;
    if (!s) pack_b_by_rows<false, false, false>(n, k0, kc, b, ldb, dst, dst_stride, s, t);
    else if (!t) pack_b_by_rows<true, false, false>(n, k0, kc, b, ldb, dst, dst_stride, s, t);
    else if (rows->relu) pack_b_by_rows<true, true, true>(n, k0, kc, b, ldb, dst, dst_stride, s, t);
    else pack_b_by_rows<true, true, false>(n, k0, kc, b, ldb, dst, dst_stride, s, t);
    return;
  }
#endif
  for (int64_t q0 = 0; q0 < n; q0 += kNR) {
    const int64_t cols = n - q0 < kNR ? n - q0 : kNR;
    float* d = dst + (q0 / kNR) * dst_stride;
    if (!trans && rows && rows->scale) {
      const float* s = rows->scale;
      const float* t = rows->shift;
      if (!t) pack_b_rows_affine<false, false>(cols, k0, kc, b + q0, ldb, d, s, t);
      else if (rows->relu) pack_b_rows_affine<true, true>(cols, k0, kc, b + q0, ldb, d, s, t);
      else pack_b_rows_affine<true, false>(cols, k0, kc, b + q0, ldb, d, s, t);
    } else if (!trans) {
      if (cols == kNR) {
        for (int64_t k = 0; k < kc; ++k) {
          const float* src = b + (k0 + k) * ldb + q0;
#pragma GCC unroll 2
          for (int v = 0; v < kNV; ++v) vstore(d + k * kNR + v * kW, vload(src + v * kW));
        }
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          const float* src = b + (k0 + k) * ldb + q0;
          float* dk = d + k * kNR;
          for (int64_t j = 0; j < cols; ++j) dk[j] = src[j];
          for (int64_t j = cols; j < kNR; ++j) dk[j] = 0.0f;
        }
      }
    } else {
      // op(B)[k][j] = b[j * ldb + k]: read each column's run, write strided.
      for (int64_t j = 0; j < cols; ++j) {
        const float* src = b + (q0 + j) * ldb + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * kNR + j] = src[k];
      }
      for (int64_t j = cols; j < kNR; ++j)
        for (int64_t k = 0; k < kc; ++k) d[k * kNR + j] = 0.0f;
    }
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
