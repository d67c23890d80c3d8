// conv.cpp — Conv (ai.onnx opsets 1..17), 1-D / 2-D / 3-D, with groups,
// strides, dilations, pads, auto_pad, optional bias and a fused activation
// (node attributes "activation" / "activation_params" set by the optimizer).
// A fourth input R, which only the optimizer writes (the loader accepts 2 or 3
// inputs), is a fused residual Add: Y = act(conv(X) + B + R). With R of Y's
// shape it is added to each output block while the block is in cache; any
// other shape takes the unfused route (conv, then Add with broadcasting,
// then the activation), so the result is the Add's.
//
// Seven paths, chosen per call from the shapes:
//   depthwise  group == C, one input channel per group, 1-D or 2-D (but not a
//              1-D convolution of one channel into several): a direct
//              kernel. Each block copies the input rows it needs into
//              zero-padded phase planes (rows and columns split by stride
//              phase), so every tap reads contiguous memory at a constant
//              offset and a whole band is one vectorized loop.
//   pointwise  1x1 kernel, stride 1, no pads: Y_g = W_g * X_g, one packed
//              SGEMM (sgemm.h) per block on X_g in place, no im2col (1x1
//              inputs: a matrix-vector product). A strided 1x1 without
//              pads takes it on its subsampled input.
//   direct 1-D  1-D, stride 1, one group, a constant kernel of 2+ taps and a
//              short output (<= kDirect1dMaxLen positions): each input row
//              is copied once into a zero-padded row and a register-tiled
//              kernel reads it in place for every tap (conv1d.isa.cpp), no
//              im2col; the weights are packed for it at kernel creation.
//   grouped    2-D groups of 8 output and <= 16 input channels with
//              constant weights (RegNet): a direct kernel with the 8 output
//              channels of a block in the vector lanes (grouped.isa.cpp) on
//              zero-padded input planes; the weights packed for it at kernel
//              creation. Same bits as the taps path.
//   taps       narrow groups and stems of <= 8 input channels (2-D, K <=
//              256, weights pre-packed): an implicit GEMM (sgemm_taps) whose
//              B rows are pointers into the group's phase planes, laid out
//              as for depthwise; no im2col.
//   winograd   3x3, stride 1, one group, >= 16 / 32 input / output
//              channels, >= 13x13 outputs: Winograd F(4x4, 3x3)
//              (winograd.isa.cpp, run_winograd), 36 GEMMs on transformed
//              tiles; U packed on the first call with constant weights.
//   im2col     everything else: im2col of a column tile (output positions)
//              written straight into the SGEMM's packed B panels, a
//              per-thread scratch of K x tile floats that stays in L2, then
//              one SGEMM on them. When the blocks split the output rows
//              (few positions, many channels: 7x7 and 14x14 layers), every
//              tile's panels are built once into a buffer the row blocks
//              share instead.
// Constant weights of the two GEMM paths are packed into the SGEMM's A
// panels once, when the kernel is created (unless the session sets
// session.disable_prepacking = 1; NodeInfo::prepack).
// Blocks: (batch, group, output-channel tile, column tile) for the GEMM paths
// and (plane, band of output rows) for depthwise, chosen from the shape
// (Winograd's channel blocks also from the thread count); an output
// element's sums do not depend on its block, so results do not depend on
// the thread count. The bias starts the
// SGEMM's accumulators; the residual and a Relu / Clip are applied by the
// micro-kernel as it stores each finished tile, other activations on each
// cache block of the output right after its last k block (SgemmExtras).
// Other paths add R and apply the activation to each finished block.
#include <array>
#include <cstring>
#include <mutex>
#include <numeric>

#include "kernels/broadcast.h"
#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "primitives/conv/conv1d.h"
#include "primitives/conv/depthwise.h"
#include "primitives/conv/grouped.h"
#include "primitives/conv/winograd.h"
#include "primitives/gemm/sgemm.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn {

namespace {

// What runs on each finished block of the output: R added (same layout as
// the output, located by the block's offset from y), then the activation.
struct Epilogue {
  const float* y = nullptr;    // the output's first element
  const float* res = nullptr;  // residual of the output's shape, or null
  const Activation* act = nullptr;

  bool empty() const { return !res && !act; }
  // Block p[0, n) of the output.
  void run(float* p, int64_t n) const {
    if (res) {
      const float* __restrict r = res + (p - y);
      float* __restrict d = p;
      for (int64_t i = 0; i < n; ++i) d[i] += r[i];
    }
    if (act) act->apply(p, n);
  }
  // The SGEMM extras of a GEMM block whose output starts at p: the SGEMM
  // adds R and applies the activation as it stores each finished tile.
  void to_sgemm(const float* p, SgemmExtras& ex) const {
    ex.residual = res ? res + (p - y) : nullptr;
    ex.act = act;
  }
};

// ---------------------------------------------------------------- depthwise

// Fills one padded input row: padded column j holds input column j - pl (0
// outside the input), stored at dst[(j % sw) * phase_stride + j / sw].
inline void fill_padded_row(const float* src, int64_t W, int64_t pl, int64_t NW, int64_t sw, int64_t phase_stride,
                            float* dst) {
  const int64_t jlo = std::clamp<int64_t>(pl, 0, NW);         // first j inside the input
  const int64_t jhi = std::clamp<int64_t>(pl + W, jlo, NW);  // one past the last
  if (sw == 1) {
    for (int64_t j = 0; j < jlo; ++j) dst[j] = 0.0f;
    std::memcpy(dst + jlo, src + (jlo - pl), static_cast<size_t>(jhi - jlo) * sizeof(float));
    for (int64_t j = jhi; j < NW; ++j) dst[j] = 0.0f;
    return;
  }
  if (sw == 2) {
    float* ph[2] = {dst, dst + phase_stride};
    for (int64_t j = 0; j < jlo; ++j) ph[j & 1][j >> 1] = 0.0f;
    int64_t j = jlo;
    if (j & 1) ph[1][j >> 1] = src[j - pl], ++j;
    // Interior pairs (j even, j + 1) both inside [jlo, jhi): a plain deinterleave.
    float* ev = ph[0] + (j >> 1);
    float* od = ph[1] + (j >> 1);
    const float* s = src + (j - pl);
    const int64_t pairs = (jhi - j) / 2;
    for (int64_t t = 0; t < pairs; ++t) {
      ev[t] = s[2 * t];
      od[t] = s[2 * t + 1];
    }
    for (j += 2 * pairs; j < jhi; ++j) ph[j & 1][j >> 1] = src[j - pl];
    for (; j < NW; ++j) ph[j & 1][j >> 1] = 0.0f;
    return;
  }
  for (int64_t j = 0; j < NW; ++j)
    dst[(j % sw) * phase_stride + j / sw] = j >= jlo && j < jhi ? src[j - pl] : 0.0f;
}

// The phase planes of a band of output rows (band rows): sh x sw planes of
// prow rows x L columns each (one input plane).
struct PhasePlanes {
  int64_t L, prow, psize, nphases;
  PhasePlanes(const Window3& w, int64_t band) {
    // Strides and dilations come from the model: a stride of 2^62 overflowed
    // these products (fuzz_graph). Checked; the scratch they size is bounded
    // by scratch_floats.
    auto checked = [](int64_t a, int64_t b, bool product) {
      int64_t r = 0;
      if (product ? __builtin_mul_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r))
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("convolution phase planes: {} {} {} does not fit in 64 bits (strides or dilations "
                                "too large)", a, product ? "x" : "+", b));
      return r;
    };
    auto mul = [&](int64_t a, int64_t b) { return checked(a, b, true); };
    auto add = [&](int64_t a, int64_t b) { return checked(a, b, false); };
    const int64_t NW = add(add(mul(w.out[2] - 1, w.s[2]), mul(w.k[2] - 1, w.d[2])), 1);
    L = NW / w.s[2] + (NW % w.s[2] != 0 ? 1 : 0);
    // Rows per phase plane: the band plus the largest row offset of a tap, +1
    // so full-width vector loads of the last flat outputs stay inside.
    prow = add(band + 2, mul(w.k[1] - 1, w.d[1]) / w.s[1]);
    psize = mul(prow, L);
    nphases = mul(w.s[1], w.s[2]);
    mul(nphases, psize);  // the scratch of all phases
  }
  // Offset of tap (kh, kw) from the first plane.
  int64_t tap(const Window3& w, int64_t kh, int64_t kw) const {
    const int64_t rr = kh * w.d[1], cc = kw * w.d[2], sh = w.s[1], sw = w.s[2];
    return ((rr % sh) * sw + cc % sw) * psize + (rr / sh) * L + cc / sw;
  }
};

// Fills the phase planes (buf, pp.nphases * pp.psize floats) of one input
// plane x for the band of output rows [oh0, oh0 + band).
void fill_phase_planes(const float* x, const Window3& w, int64_t oh0, int64_t band, const PhasePlanes& pp, float* buf) {
  const int64_t H = w.in[1], W = w.in[2], sh = w.s[1], sw = w.s[2];
  const int64_t rows = (band - 1) * sh + (w.k[1] - 1) * w.d[1] + 1;
  const int64_t NW = (w.out[2] - 1) * sw + (w.k[2] - 1) * w.d[2] + 1;
  const int64_t L = pp.L, psize = pp.psize;
  const int64_t r0 = oh0 * sh - w.pb[1];
  // Every element a tap can read is written (input, padding or zero), so
  // the flat loop never meets stale scratch values (e.g. denormals).
  for (int64_t r = 0, a = 0, i = 0; r < pp.prow * sh; ++r) {  // r = i * sh + a
    const int64_t ih = r0 + r;
    float* dst = buf + a * sw * psize + i * L;
    if (++a == sh) a = 0, ++i;
    if (r >= rows || ih < 0 || ih >= H) {
      for (int64_t q = 0; q < sw; ++q) std::memset(dst + q * psize, 0, static_cast<size_t>(L) * sizeof(float));
      continue;
    }
    fill_padded_row(x + ih * W, W, w.pb[2], NW, sw, psize, dst);
    for (int64_t q = NW % sw; q > 0 && q < sw; ++q) dst[q * psize + L - 1] = 0.0f;  // phases one short
  }
}

// Output rows [oh0, oh1) of one depthwise plane (spatial dims 1 and 2 of w).
//
// The padded input rows of the band are split into sh x sw phase planes
// (row phase r % sh, column phase j % sw) of L = ceil(NW / sw) columns.
// Output (oh, ow) is computed at the flat index f = (oh - oh0) * L + ow, and
// tap (kh, kw) then reads its phase plane at f plus a constant offset, so
// the whole band is one long vectorized loop (depthwise.isa.cpp); columns
// ow >= OW of the flat output are discarded when the rows are copied out.
void depthwise_band(const float* x, const float* wk, float bias, float* y, const Window3& w, int64_t oh0, int64_t oh1,
                    const Epilogue& ep) {
  const int64_t OW = w.out[2], KH = w.k[1], KW = w.k[2];
  const int64_t band = oh1 - oh0;
  const PhasePlanes pp(w, band);
  const int64_t L = pp.L;
  float* buf = scratch_floats(0, static_cast<size_t>(pp.nphases * pp.psize));
  fill_phase_planes(x, w, oh0, band, pp, buf);

  const int nt = static_cast<int>(KH * KW);
  constexpr int kStackTaps = 64;
  std::array<const float*, kStackTaps> tap_stack;
  std::vector<const float*> tap_heap;
  const float** taps = tap_stack.data();
  if (nt > kStackTaps) {
    tap_heap.resize(static_cast<size_t>(nt));
    taps = tap_heap.data();
  }
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) taps[kh * KW + kw] = buf + pp.tap(w, kh, kw);

  const int64_t n = band * L;
  float* out = OW == L ? y + oh0 * OW : scratch_floats(2, static_cast<size_t>(n));
  static const auto flat_fn = SPINDLE_ISA_SELECT(depthwise_flat);
  flat_fn(taps, nt, wk, bias, out, n);
  if (OW != L)
    for (int64_t i = 0; i < band; ++i)
      std::memcpy(y + (oh0 + i) * OW, out + i * L, static_cast<size_t>(OW) * sizeof(float));
  if (!ep.empty()) ep.run(y + oh0 * OW, band * OW);
}

// ---------------------------------------------------------------- im2col

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

// ---------------------------------------------------------------- kernel

class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const NodeInfo& node)
      : attrs_(WindowAttrs::parse(node, true, false)),
        group_(node.attrs.get_int("group", 1)),
        act_(activation_from_attrs(node)) {
    if (group_ <= 0) fail(node, fmt::format("attribute group is {}, expected >= 1", group_));
    if (const Tensor* w = node.const_input(1)) {
      require_float(node, *w, "W");
      if (w->rank() < 3 || w->rank() > 5)
        fail(node, fmt::format("input W has shape {}, expected rank 3..5 (M x C/group x k...)", shape_to_string(w->shape())));
      if (w->dim(0) % group_ != 0)
        fail(node, fmt::format("input W has shape {}: {} output channels are not divisible by group {}",
                               shape_to_string(w->shape()), w->dim(0), group_));
      w_ = *w;
      // Constant weights of the GEMM paths are packed once, per group, into
      // the micro-kernel's A panels (depthwise weights stay as they are).
      const bool depthwise = w->dim(1) == 1 && w->rank() <= 4 && !one_channel_1d(static_cast<int>(w->rank()) - 2, group_, w->dim(0));
      if (node.prepack && !depthwise) {
        const int64_t Mg = w->dim(0) / group_, K = w->numel() / w->dim(0);
        packed_w_ = PackedMatrix::pack_a(false, Mg, K, 1.0f, w->data<float>(), K, group_, Mg * K);
      }
      if (node.prepack && grouped8_fits(static_cast<int>(w->rank()) - 2, group_, w->dim(0) / group_, w->dim(1),
                                         w->rank() == 4 ? w->dim(2) : 0)) {
        // [g][block of 8 output channels][c][kh][kw][8]
        const int64_t Mg = w->dim(0) / group_, Cg = w->dim(1), KK = w->dim(2) * w->dim(3);
        const float* src = w->data<float>();
        grouped_w_.resize(static_cast<size_t>(w->numel()));
        for (int64_t m = 0; m < w->dim(0); ++m) {
          const int64_t g = m / Mg, mb = (m % Mg) / 8, l = m % 8;
          for (int64_t ck = 0; ck < Cg * KK; ++ck)
            grouped_w_[static_cast<size_t>((((g * (Mg / 8) + mb) * Cg * KK) + ck) * 8 + l)] = src[m * Cg * KK + ck];
        }
      }
      if (node.prepack && w->rank() == 3 && group_ == 1 && w->dim(2) > 1) {
        static const auto rows_fn = SPINDLE_ISA_SELECT(conv1d_block_rows);
        static const auto pack_fn = SPINDLE_ISA_SELECT(conv1d_pack);
        const int64_t M = w->dim(0), CK = w->dim(1) * w->dim(2);
        direct_w_.resize(static_cast<size_t>(ceil_div(M, rows_fn()) * rows_fn() * CK));
        pack_fn(w->data<float>(), M, CK, direct_w_.data());
      }
    }
    if (const Tensor* b = node.const_input(2)) {
      require_float(node, *b, "B");
      b_ = *b;
    }
    // A BatchNormalization folded into the input (fuse_input_batchnorms):
    // inputs 5-8 are its scale, B, mean and var; y = x * a + b computed once.
    if (node.num_inputs > 8) {
      in_epsilon_ = node.attrs.get_float("input_epsilon", 1e-5f);
      const std::string act = node.attrs.get_string("input_activation", "");
      if (!act.empty() && act != "Relu")
        fail(node, fmt::format("attribute input_activation is '{}', expected Relu or none", act));
      in_relu_ = !act.empty();
      const Tensor* p[4] = {node.const_input(5), node.const_input(6), node.const_input(7), node.const_input(8)};
      bool usable = true;
      for (const Tensor* t : p)
        usable = usable && t && t->dtype() == DataType::kFloat32 && t->rank() == 1 && t->numel() == p[0]->numel();
      if (usable) {
        const int64_t C = p[0]->numel();
        in_ab_.resize(static_cast<size_t>(2 * C));
        batchnorm_coefficients(p[0]->data<float>(), p[1]->data<float>(), p[2]->data<float>(), p[3]->data<float>(),
                               in_epsilon_, C, in_ab_.data(), in_ab_.data() + C);
      }
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    // A Mul folded in by the optimizer (fuse_input_scales): X = input 0 *
    // input 4. A per-channel scale of a one-group 1x1 convolution is applied
    // as B is packed (InScale); any other shape is multiplied first, with
    // the Mul kernel itself.
    const Tensor& Wt = w_.defined() ? w_ : ctx.input(1);
    Tensor scaled;
    InScale in_scale;
    const Tensor* xin = &ctx.input(0);
    if (ctx.has_input(4)) {
      const Tensor* a = xin;
      const Tensor* s = &ctx.input(4);
      require_float(node, *a, "X (the fused Mul's first input)");
      require_float(node, *s, "the fused Mul's second input");
      if (per_channel_scale(*a, *s)) {
        xin = a;
      } else if (per_channel_scale(*s, *a)) {
        xin = s;
        s = a;
      } else {
        s = nullptr;
      }
      if (s && Wt.dtype() == DataType::kFloat32 && pointwise_one_group(node, *xin, Wt)) {
        in_scale.s = s->data<float>();
        in_scale.image_stride = s->dim(0) == 1 ? 0 : xin->dim(1);
      } else {
        scaled = run_kernel_once("Mul", 14, Attributes(), {ctx.input(0), ctx.input(4)}, 1, ctx.pool())[0];
        xin = &scaled;
      }
    }
    if (ctx.has_input(5)) {
      if (ctx.has_input(4))
        fail(node, "internal: a folded Mul and a folded BatchNormalization on one Conv input");
      // A BatchNormalization (+ Relu) folded in by the optimizer
      // (fuse_input_batchnorms): applied as B is packed by a one-group 1x1
      // convolution of more than one position, else first, by the
      // BatchNormalization kernel itself.
      const Tensor& a = *xin;
      require_float(node, a, "X (the fused BatchNormalization's input)");
      const int64_t C = a.rank() >= 3 ? a.dim(1) : -1;
      const int64_t positions = C > 0 && a.dim(0) > 0 ? a.numel() / (a.dim(0) * C) : 0;
      if (static_cast<int64_t>(in_ab_.size()) == 2 * C && positions > 1 && Wt.dtype() == DataType::kFloat32 &&
          pointwise_one_group(node, a, Wt)) {
        in_scale.s = in_ab_.data();
        in_scale.shift = in_ab_.data() + C;
        in_scale.relu = in_relu_;
      } else {
        Attributes bn;
        bn.set("epsilon", in_epsilon_);
        if (in_relu_) bn.set("activation", std::string("Relu"));
        scaled = run_kernel_once("BatchNormalization", 15, std::move(bn),
                                 {a, ctx.input(5), ctx.input(6), ctx.input(7), ctx.input(8)}, 1, ctx.pool())[0];
        xin = &scaled;
      }
    }
    const Tensor& X = *xin;
    require_float(node, X, "X");
    require_float(node, Wt, "W");
    const Shape& xs = X.shape();
    const Shape& ws = Wt.shape();
    if (X.rank() < 3)
      fail(node, fmt::format("input X has shape {}, expected rank >= 3 (N x C x spatial...)", shape_to_string(xs)));
    if (Wt.rank() != X.rank())
      fail(node, fmt::format("input W has shape {} but input X has shape {}: expected W of rank {}",
                             shape_to_string(ws), shape_to_string(xs), X.rank()));
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1], G = group_;
    if (Cg * G != C)
      fail(node, fmt::format("input W has shape {} ({} input channels per group) but input X has shape {} with {} "
                             "channels and group {}: expected W.dim(1) * group == C",
                             shape_to_string(ws), Cg, shape_to_string(xs), C, G));
    if (M % G != 0)
      fail(node, fmt::format("input W has shape {}: {} output channels are not divisible by group {}",
                             shape_to_string(ws), M, G));
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)
      fail(node, fmt::format("attribute kernel_shape {} does not match input W of shape {}",
                             shape_to_string(attrs_.kernel_shape), shape_to_string(ws)));
    const float* bias = nullptr;
    if (b_.defined() || ctx.has_input(2)) {
      const Tensor& B = b_.defined() ? b_ : ctx.input(2);
      require_float(node, B, "B");
      if (B.numel() != M)
        fail(node, fmt::format("input B has shape {}, expected {} values (one per output channel of W {})",
                               shape_to_string(B.shape()), M, shape_to_string(ws)));
      bias = B.data<float>();
    }
    const Window3 w = forward_window(node, attrs_, xs, kernel);
    Shape ys = {N, M};
    for (int i = 0; i < w.nd; ++i) ys.push_back(w.out[3 - w.nd + i]);
    Epilogue ep;
    ep.act = act_.is_none() ? nullptr : &act_;
    if (ctx.has_input(3)) {
      const Tensor& R = ctx.input(3);
      require_float(node, R, "R (the fused residual Add's other input)");
      if (R.shape() != ys) {
        add_residual_unfused(ctx, X, Wt, bias, R, ys, w, in_scale);
        return;
      }
      ep.res = R.data<float>();
    }
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;
    float* y = Y.mutable_data<float>();
    ep.y = y;
    run_paths(ctx, X, Wt, bias, y, ep, w, in_scale);
  }

 private:
  // A per-channel input scale (fuse_input_scales): channel c of image n is
  // multiplied by s[n * image_stride + c]; with shift (a folded
  // BatchNormalization), x * s[c] + shift[c], then Relu when relu.
  struct InScale {
    const float* s = nullptr;
    int64_t image_stride = 0;
    const float* shift = nullptr;
    bool relu = false;
  };

  // s has shape [1 or N, C, 1, ...] for x of shape [N, C, ...] (same rank).
  static bool per_channel_scale(const Tensor& x, const Tensor& s) {
    if (x.rank() < 3 || s.rank() != x.rank() || s.dim(1) != x.dim(1) || (s.dim(0) != 1 && s.dim(0) != x.dim(0)))
      return false;
    for (int i = 2; i < s.rank(); ++i)
      if (s.dim(i) != 1) return false;
    return true;
  }

  // A 1x1 kernel, stride 1, no pads, one group: the paths that read X as
  // the GEMM's B (run_gemm's pointwise branch and run_gemv).
  bool pointwise_one_group(const NodeInfo& node, const Tensor& x, const Tensor& Wt) const {
    if (group_ != 1 || x.rank() < 3 || Wt.rank() != x.rank()) return false;
    std::vector<int64_t> kernel(Wt.shape().begin() + 2, Wt.shape().end());
    for (int64_t k : kernel)
      if (k != 1) return false;
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) return false;
    const Window3 w = forward_window(node, attrs_, x.shape(), kernel);
    return w.k_size() == 1 && w.s[0] == 1 && w.s[1] == 1 && w.s[2] == 1 && w.pb[0] == 0 && w.pb[1] == 0 &&
           w.pb[2] == 0 && w.pe[0] == 0 && w.pe[1] == 0 && w.pe[2] == 0 && Wt.dim(1) != 1;
  }
  // A 1-D convolution of one input channel into several (an audio front
  // end's first layer: 1 -> 64 channels, kernel 5, stride 4) takes the GEMM
  // path: its im2col is kernel x length floats, built once for all output
  // channels, where the depthwise path would rebuild its padded input for
  // each of them.
  static bool one_channel_1d(int nd, int64_t group, int64_t M) { return nd == 1 && group == 1 && M > 1; }

  void run_paths(KernelContext& ctx, const Tensor& X, const Tensor& Wt, const float* bias, float* y, const Epilogue& ep,
                 const Window3& w, const InScale& in_scale) const {
    const float* x = X.data<float>();
    const int64_t N = X.dim(0), C = X.dim(1), M = Wt.dim(0), G = group_;
    if (Wt.dim(1) == 1 && G == C && w.nd <= 2 && !one_channel_1d(w.nd, G, M)) {
      run_depthwise(ctx, x, Wt.data<float>(), bias, y, N, C, M, w, ep);
      return;
    }
    run_gemm(ctx, x, Wt, bias, y, N, C, M, G, w, ep, in_scale);
  }

  // A residual R whose shape differs from the output's: the Conv alone,
  // then the Add as the model wrote it (with broadcasting), then the
  // activation.
  void add_residual_unfused(KernelContext& ctx, const Tensor& X, const Tensor& Wt, const float* bias, const Tensor& R,
                            const Shape& ys, const Window3& w, const InScale& in_scale) const {
    const Shape shapes[2] = {ys, R.shape()};
    broadcast_shapes(ctx.node(), shapes);  // throws naming both shapes
    Tensor conv(DataType::kFloat32, ys);
    Epilogue none;
    none.y = conv.mutable_data<float>();
    if (conv.numel() > 0) run_paths(ctx, X, Wt, bias, conv.mutable_data<float>(), none, w, in_scale);
    Tensor sum = run_kernel_once("Add", 14, Attributes(), {conv, R}, 1, ctx.pool())[0];
    if (!act_.is_none()) act_.apply(sum.mutable_data<float>(), sum.numel());
    ctx.set_output(0, std::move(sum));
  }

  void run_depthwise(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y, int64_t N,
                     int64_t C, int64_t M, const Window3& w, const Epilogue& ep) const {
    static const bool blocks_available = SPINDLE_ISA_SELECT(depthwise_block_available)();
    const bool blocks = blocks_available && M == C && w.k[0] == 1 && w.k_size() <= kDwMaxTaps && C >= kDwLanes;
    if (blocks) run_depthwise_blocks(ctx, x, wd, bias, y, N, C, w, ep);
    const int64_t c_first = blocks ? C - C % kDwLanes : 0;
    if (c_first < C) run_depthwise_planes(ctx, x, wd, bias, y, N, C, M, w, ep, c_first);
  }

  // Depthwise (multiplier 1) in blocks of kDwLanes channels (depthwise.h):
  // items (batch, channel block, band of output rows), the band as many rows
  // as keep its interleaved input under ~64 KB. Channels past the last full
  // block are left to run_depthwise_planes.
  void run_depthwise_blocks(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y,
                            int64_t N, int64_t C, const Window3& w, const Epilogue& ep) const {
    static const auto block_fn = SPINDLE_ISA_SELECT(depthwise_block);
    const int64_t OH = w.out[1], OW = w.out[2], T = w.k_size();
    const int64_t Wp = depthwise_block_width(OW, w.k[2], w.s[2], w.d[2]);
    constexpr int64_t kBufFloats = 16384;
    const int64_t fit_rows = std::max<int64_t>(kBufFloats / (Wp * kDwLanes), 1);
    const int64_t band_rows =
        std::clamp<int64_t>((fit_rows - (w.k[1] - 1) * w.d[1] - 1) / w.s[1] + 1, 1, OH);
    const int64_t nbands = ceil_div(OH, band_rows);
    const int64_t blocks = C / kDwLanes;
    const int64_t items = N * blocks * nbands;
    const int64_t in_plane = w.in_size(), out_plane = w.out_size();
    const int64_t buf_rows = depthwise_block_rows(band_rows, w.k[1], w.s[1], w.d[1]);
    const Activation* act = ep.res ? nullptr : ep.act;
    parallel_for(ctx.pool(), 0, items, grain_for_work(items, static_cast<double>(kDwLanes * band_rows * OW * T)),
                 [&](int64_t i0, int64_t i1) {
                   float* in_buf = scratch_floats(0, static_cast<size_t>(buf_rows * Wp * kDwLanes));
                   float* out_buf = scratch_floats(2, static_cast<size_t>((OW + 8) * kDwLanes));
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t nb = i / nbands, band = i % nbands;
                     const int64_t n = nb / blocks, c0 = (nb % blocks) * kDwLanes;
                     const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
                     DwBlockArgs a{};
                     a.x = x + (n * C + c0) * in_plane;
                     a.in_plane = in_plane;
                     a.w = wd + c0 * T;
                     a.taps = T;
                     a.bias = bias ? bias + c0 : nullptr;
                     a.y = y + (n * C + c0) * out_plane;
                     a.out_plane = out_plane;
                     a.H = w.in[1], a.W = w.in[2], a.OH = OH, a.OW = OW, a.KH = w.k[1], a.KW = w.k[2];
                     a.sh = w.s[1], a.sw = w.s[2], a.dh = w.d[1], a.dw = w.d[2], a.pt = w.pb[1], a.pl = w.pb[2];
                     a.oh0 = oh0, a.oh1 = oh1;
                     a.act = act;
                     a.in_buf = in_buf;
                     a.out_buf = out_buf;
                     block_fn(a);
                     if (ep.res)
                       for (int64_t l = 0; l < kDwLanes; ++l) ep.run(a.y + l * out_plane + oh0 * OW, (oh1 - oh0) * OW);
                   }
                 });
  }

  // Depthwise one plane at a time (phase planes, depthwise_band), for the
  // channels from c_first on.
  void run_depthwise_planes(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y, int64_t N,
                            int64_t C, int64_t M, const Window3& w, const Epilogue& ep, int64_t c_first) const {
    const int64_t mult = M / C;
    const int64_t OH = w.out[1], OW = w.out[2], T = w.k_size();
    const int64_t in_plane = w.in_size(), out_plane = w.out_size();
    const double row_work = static_cast<double>(OW * T);
    // Bands of output rows: a plane is split only when it is large (> ~256K
    // FMAs), so the duplicated halo rows stay a small fraction.
    const int64_t bands = std::clamp<int64_t>(
        static_cast<int64_t>(row_work * static_cast<double>(OH) / (4.0 * 65536.0)), 1, OH);
    const int64_t band_rows = ceil_div(OH, bands);
    const int64_t nbands = ceil_div(OH, band_rows);
    const int64_t m_first = c_first * mult, planes = M - m_first;  // output planes of an image from m_first on
    const int64_t items = N * planes * nbands;
    const int64_t grain = grain_for_work(items, row_work * static_cast<double>(band_rows));
    parallel_for(ctx.pool(), 0, items, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t n = i / (planes * nbands), m = m_first + (i / nbands) % planes, band = i % nbands;
        const int64_t plane = n * M + m, c = m / mult;
        const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
        depthwise_band(x + (n * C + c) * in_plane, wd + m * T, bias ? bias[m] : 0.0f, y + plane * out_plane, w, oh0,
                       oh1, ep);
      }
    });
  }

  // 1x1 convolution of a 1x1 input (squeeze-excite blocks): y = W x + b per
  // (batch, group), a matrix-vector product on W's ONNX layout.
  void run_gemv(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y, int64_t N,
                int64_t C, int64_t M, int64_t G, const Epilogue& ep) const {
    const int64_t Cg = C / G, Mg = M / G;
    const int64_t rows = N * M;
    // A row streams Cg weights that nothing else reads in a run (from L3
    // or memory: ~1 cycle a float measured, RegNet's 440 x 110 squeeze-
    // excite convolutions 15 us), so the loop is costed by them and a
    // spinning worker takes half of a large one.
    Cost cost;
    cost.bytes_loaded = 4.0 * static_cast<double>(Cg);
    cost.compute_cycles = static_cast<double>(Cg);
    parallel_for(ctx.pool(), rows, cost, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / M, m = r % M, g = m / Mg;
        const float* xv = x + n * C + g * Cg;
        const float* wr = wd + m * Cg;
        // Eight partial sums in a fixed order (vectorizable).
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t k = 0;
        for (; k + 8 <= Cg; k += 8)
          for (int i = 0; i < 8; ++i) acc[i] += wr[k + i] * xv[k + i];
        float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; k < Cg; ++k) sum += wr[k] * xv[k];
        y[r] = (bias ? bias[m] : 0.0f) + sum;
      }
      if (!ep.empty()) ep.run(y + r0, r1 - r0);
    });
  }

  // in_scale (a fused Mul; only with G = 1 and a 1x1 kernel, stride 1, no
  // pads): X's channels multiplied as B is packed, or first for run_gemv.
  void run_gemm(KernelContext& ctx, const float* x, const Tensor& Wt, const float* bias, float* y, int64_t N,
                int64_t C, int64_t M, int64_t G, const Window3& w, const Epilogue& ep, const InScale& in_scale) const {
    const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
    const bool pointwise = w.k_size() == 1 && w.s[0] == 1 && w.s[1] == 1 && w.s[2] == 1 && w.pb[0] == 0 &&
                           w.pb[1] == 0 && w.pb[2] == 0 && w.pe[0] == 0 && w.pe[1] == 0 && w.pe[2] == 0;
    if (in_scale.s && !(pointwise && G == 1))
      fail(ctx.node(), "internal: an input scale reached a convolution path that does not apply it");
    // A strided 1x1 convolution without pads (ResNet / RegNet projections)
    // is the pointwise one on the subsampled input: the input positions it
    // reads, copied once into a buffer the blocks share, then the same GEMM
    // (in place for few output channels) instead of an im2col per tile.
    if (w.k_size() == 1 && !pointwise && !in_scale.s && w.pb[0] == 0 && w.pb[1] == 0 && w.pb[2] == 0 &&
        w.pe[0] == 0 && w.pe[1] == 0 && w.pe[2] == 0) {
      const int64_t in_plane = w.in_size(), H = w.in[1], W = w.in[2], OD = w.out[0], OH = w.out[1], OW = w.out[2];
      float* xs = scratch_floats(kSharedInputSlot, static_cast<size_t>(N * C * P));
      const int64_t planes = N * C;
      parallel_for(ctx.pool(), 0, planes, grain_for_work(planes, static_cast<double>(P)), [&](int64_t i0, int64_t i1) {
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
      Window3 sub = w;
      for (int i = 0; i < 3; ++i) sub.in[i] = w.out[i], sub.s[i] = 1;
      run_gemm(ctx, xs, Wt, bias, y, N, C, M, G, sub, ep, in_scale);
      return;
    }
    const float* wd = Wt.data<float>();
    if (pointwise && P == 1) {
      if (in_scale.shift)
        fail(ctx.node(), "internal: a folded BatchNormalization reached the matrix-vector path");
      if (in_scale.s) {  // N x C values: x * s, as the Mul would give them
        std::vector<float> xs(static_cast<size_t>(N * C));
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c)
            xs[static_cast<size_t>(n * C + c)] = x[n * C + c] * in_scale.s[n * in_scale.image_stride + c];
        run_gemv(ctx, xs.data(), wd, bias, y, N, C, M, G, ep);
        return;
      }
      run_gemv(ctx, x, wd, bias, y, N, C, M, G, ep);
      return;
    }
    if (w.nd == 1 && G == 1 && w.s[2] == 1 && !direct_w_.empty() && &Wt == &w_ && P <= kDirect1dMaxLen) {
      run_direct_1d(ctx, x, bias, y, N, C, M, w, ep);
      return;
    }
    if (winograd_applies(w, G, C, M)) {
      run_winograd(ctx, x, Wt, bias, y, N, C, M, w, ep);
      return;
    }
    if (!grouped_w_.empty() && &Wt == &w_ && w.nd == 2) {
      run_grouped8(ctx, x, bias, y, N, C, M, G, w, ep);
      return;
    }
    // Narrow groups (RegNet's group width 8 / 16) and stems of few channels: the
    // im2col would copy each input value k_size times for little GEMM work
    // per copy; an implicit GEMM reads the taps from phase planes instead.
    if (!pointwise && w.nd == 2 && (G > 1 || Cg <= kTapsMaxStemChannels) && K <= kSgemmKC && !packed_w_.empty() &&
        &Wt == &w_) {
      run_taps(ctx, x, bias, y, N, C, M, G, w, ep);
      return;
    }
    // The im2col column tile (K x nt floats) stays near 1 MB, in L2.
    const int64_t max_nt = pointwise ? P : im2col_tile(K);
    GemmBlocks gb = choose_gemm_blocks(N * G, Mg, P, K, max_nt);
    // Column tiles alone give at least half the blocks the work asks for
    // (large outputs: 56x56, 112x112): keep every row in one block, so each
    // tile's im2col is built once and used by all rows while it is in L2.
    if (!pointwise && gb.m_blocks > 1 && N * G * gb.n_blocks > 1 &&
        2 * N * G * gb.n_blocks >= blocks_for_work(static_cast<double>(N * G) * static_cast<double>(Mg) *
                                                   static_cast<double>(P) * static_cast<double>(K))) {
      gb.mt = Mg;
      gb.m_blocks = 1;
    }
    // Few output positions and many rows (deep layers: 7x7, 14x14): the
    // blocks split the rows, and each would redo the im2col of its columns
    // (a 1x1 convolution: the packing of its input, and a folded
    // normalization's arithmetic with it).
    const bool share_input = gb.m_blocks >= kPointwiseSharedRowBlocks &&
                             4.0 * static_cast<double>(K) * static_cast<double>(gb.nt) >= kPointwiseSharedPanelBytes;
    if (gb.m_blocks > 1 && (!pointwise || share_input) &&
        static_cast<double>(N * G) * static_cast<double>(K) * static_cast<double>(round_up(P, sgemm_nr())) <=
            kMaxSharedColumns) {
      run_gemm_shared_columns(ctx, x, Wt, bias, y, N, C, M, G, w, ep, pointwise, in_scale);
      return;
    }
    const int64_t per_ng = gb.m_blocks * gb.n_blocks;
    const int64_t blocks = N * G * per_ng;
    const double block_work = static_cast<double>(gb.mt * gb.nt * std::max<int64_t>(K, 1));
    const int64_t in_plane = w.in_size();
    const bool packed = !packed_w_.empty() && &Wt == &w_;
    // A 1x1 convolution of few output channels reads B in place (sgemm_taps:
    // one pointer per input plane) instead of packing it: with <= 48 rows the
    // packing is a large share of the work and B stays in L1 for the few
    // row panels that read it (16 / 24 rows at 112x112 / 56x56: 0.88x).
    const bool taps_pointwise = pointwise && packed && !in_scale.s && K <= kSgemmKC && Mg <= kPointwiseTapsMaxRows &&
                                taps_rows_share_l1_sets(K, P);
    parallel_for(ctx.pool(), 0, blocks, grain_for_work(blocks, block_work), gemm_cost(gb.mt, gb.nt, K), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t ng = b / per_ng, rem = b % per_ng;
        const int64_t n = ng / G, g = ng % G;
        const int64_t m0 = (rem / gb.n_blocks) * gb.mt, m1 = std::min(Mg, m0 + gb.mt);
        const int64_t p0 = (rem % gb.n_blocks) * gb.nt, p1 = std::min(P, p0 + gb.nt);
        const int64_t len = p1 - p0;
        const float* xg = x + (n * C + g * Cg) * in_plane;
        float* yb = y + (n * M + g * Mg + m0) * P + p0;
        SgemmExtras ex;
        ex.packed_a = packed ? packed_w_.panel(m0, g) : nullptr;
        ex.row_bias = bias ? bias + g * Mg + m0 : nullptr;
        ep.to_sgemm(yb, ex);
        const float* a = wd + (g * Mg + m0) * K;
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
          sgemm_taps(m1 - m0, len, K, packed_w_.panel(m0, g), taps, ex.row_bias, yb, P, ex.residual, ex.act);
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

  // The direct 1-D path (conv1d.isa.cpp): input rows copied once into
  // zero-padded rows (a buffer on the calling thread the blocks share), then
  // blocks of (batch, conv1d_block_rows() output channels), all positions.
  void run_direct_1d(KernelContext& ctx, const float* x, const float* bias, float* y, int64_t N, int64_t C, int64_t M,
                     const Window3& w, const Epilogue& ep) const {
    static const auto rows_fn = SPINDLE_ISA_SELECT(conv1d_block_rows);
    static const auto slack_fn = SPINDLE_ISA_SELECT(conv1d_slack);
    static const auto block_fn = SPINDLE_ISA_SELECT(conv1d_block);
    const int64_t L = w.in[2], P = w.out[2], k = w.k[2], dil = w.d[2], pb = w.pb[2];
    const int64_t ldx = round_up(P + (k - 1) * dil + slack_fn(), 16);
    float* xp = scratch_floats(kSharedScratchSlot, static_cast<size_t>(N * C * ldx));
    // Padded column j holds input column j - pb (0 outside the input).
    const int64_t lo = std::min(pb, ldx), hi = std::clamp<int64_t>(pb + L, lo, ldx);
    for (int64_t r = 0; r < N * C; ++r) {
      float* row = xp + r * ldx;
      std::fill(row, row + lo, 0.0f);
      std::memcpy(row + lo, x + r * L + (lo - pb), static_cast<size_t>(hi - lo) * sizeof(float));
      std::fill(row + hi, row + ldx, 0.0f);
    }
    const int64_t R = rows_fn(), blocks_per_n = ceil_div(M, R), items = N * blocks_per_n, CK = C * k;
    // The cost lets a convolution too small to pay for waking a parked
    // worker (an audio front end's 64 -> 64 channels over 128 steps, ~35 us)
    // run on the caller (threads_for_cost); the blocks stay the same.
    const double item_work = static_cast<double>(R * P * CK);
    parallel_for(ctx.pool(), 0, items, grain_for_work(items, item_work), fma_cost(item_work),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t n = i / blocks_per_n, b = i % blocks_per_n, m0 = b * R;
                     const int64_t rows = std::min(R, M - m0);
                     float* yb = y + (n * M + m0) * P;
                     block_fn({.xp = xp + n * C * ldx, .ldx = ldx, .C = C, .k = k, .dil = dil,
                               .wp = direct_w_.data() + b * R * CK, .bias = bias ? bias + m0 : nullptr, .rows = rows,
                               .y = yb, .ldy = P, .P = P});
                     if (!ep.empty()) ep.run(yb, rows * P);
                   }
                 });
  }

  // Narrow groups of 8 output channels (RegNet's group width 8):
  // grouped8_rows (grouped.isa.cpp) with the 8 output channels of a block in
  // the vector lanes, on zero-padded input planes of the group per band of
  // output rows. Same sums in the same order as run_taps, so the same bits.
  static bool grouped8_fits(int nd, int64_t G, int64_t Mg, int64_t Cg, int64_t KH) {
    static const auto max_rows_fn = SPINDLE_ISA_SELECT(grouped8_max_rows);
    return nd == 2 && G > 1 && Mg == 8 && Cg <= kGrouped8MaxChannels && Cg * KH <= max_rows_fn();
  }
  // Groups of 16 (RegNetY-800MF, RegNetX-400MF) measured 1.16x slower here
  // than the taps path at 28x28 and 14x14 (its 16-row GEMM is efficient).
  static constexpr int64_t kGrouped8MaxChannels = 16;

  void run_grouped8(KernelContext& ctx, const float* x, const float* bias, float* y, int64_t N, int64_t C,
                    int64_t M, int64_t G, const Window3& w, const Epilogue& ep) const {
    static const auto rows_fn = SPINDLE_ISA_SELECT(grouped8_rows);
    const int64_t Cg = C / G, Mg = M / G, OH = w.out[1], OW = w.out[2], P = w.out_size();
    const int64_t H = w.in[1], W = w.in[2], KH = w.k[1], KW = w.k[2], in_plane = w.in_size();
    const int64_t sh = w.s[1], sw = w.s[2], dh = w.d[1], dw = w.d[2];
    const int64_t WP = (OW - 1) * sw + (KW - 1) * dw + 1;
    const double total = static_cast<double>(N * M) * static_cast<double>(P) * static_cast<double>(Cg * KH * KW);
    const int64_t bands = std::clamp<int64_t>(ceil_div(blocks_for_work(total), N * G), 1, OH);
    const int64_t band_rows = ceil_div(OH, bands), nbands = ceil_div(OH, band_rows);
    const int64_t items = N * G * nbands;
    parallel_for(ctx.pool(), 0, items,
                 grain_for_work(items, static_cast<double>(Mg * band_rows * OW) * static_cast<double>(Cg * KH * KW)),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t ng = i / nbands, n = ng / G, g = ng % G;
                     const int64_t oh0 = (i % nbands) * band_rows, band = std::min(OH, oh0 + band_rows) - oh0;
                     const int64_t HP = (band - 1) * sh + (KH - 1) * dh + 1, cstride = HP * WP;
                     float* planes = scratch_floats(0, static_cast<size_t>(Cg * cstride));
                     const float* xg = x + (n * C + g * Cg) * in_plane;
                     for (int64_t c = 0; c < Cg; ++c)
                       for (int64_t r = 0; r < HP; ++r) {
                         const int64_t ih = oh0 * sh - w.pb[1] + r;
                         float* dst = planes + c * cstride + r * WP;
                         if (ih < 0 || ih >= H) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(WP));
                         else fill_padded_row(xg + c * in_plane + ih * W, W, w.pb[2], WP, 1, 0, dst);
                       }
                     for (int64_t mb = 0; mb < Mg / 8; ++mb) {
                       const int64_t m0 = g * Mg + mb * 8;
                       float* ym = y + (n * M + m0) * P + oh0 * OW;
                       rows_fn({.xp = planes, .cstride = cstride, .WP = WP, .Cg = Cg, .KH = KH, .KW = KW, .sh = sh,
                                .sw = sw, .dh = dh, .dw = dw, .rows = band, .OW = OW,
                                .wp = grouped_w_.data() + (g * (Mg / 8) + mb) * Cg * KH * KW * 8,
                                .bias = bias ? bias + m0 : nullptr, .y = ym, .ystride = P, .ldy = OW});
                       if (!ep.empty())
                         for (int64_t l = 0; l < 8; ++l) ep.run(ym + l * P, band * OW);
                     }
                   }
                 });
  }

  // The implicit-GEMM path (sgemm_taps): blocks of (batch, group, band of
  // output rows). A block lays its Cg input planes out as phase planes (as
  // the depthwise path does), so the B value of reduction index k = (c, kh,
  // kw) for flat output f is taps[k][f] with one pointer per k, and runs
  // every output channel of the group over the band's flat outputs; the
  // rows are then copied out without the flat layout's extra columns.
  // Each element is the same sum as on the im2col path (bias, then k in
  // increasing order, one k block), so the two give the same bits.
  void run_taps(KernelContext& ctx, const float* x, const float* bias, float* y, int64_t N, int64_t C, int64_t M,
                int64_t G, const Window3& w, const Epilogue& ep) const {
    const int64_t Cg = C / G, Mg = M / G, OH = w.out[1], OW = w.out[2], P = w.out_size(), K = Cg * w.k_size();
    const int64_t KH = w.k[1], KW = w.k[2], in_plane = w.in_size();
    const double total = static_cast<double>(N * G * Mg) * static_cast<double>(P) * static_cast<double>(K);
    const int64_t bands = std::clamp<int64_t>(ceil_div(blocks_for_work(total), N * G), 1, OH);
    const int64_t band_rows = ceil_div(OH, bands), nbands = ceil_div(OH, band_rows);
    const int64_t items = N * G * nbands;
    const int64_t NR = sgemm_nr();
    parallel_for(ctx.pool(), 0, items,
                 grain_for_work(items, static_cast<double>(Mg * band_rows * OW) * static_cast<double>(K)),
                 [&](int64_t i0, int64_t i1) {
                   const float* taps[kSgemmKC];
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t ng = i / nbands, n = ng / G, g = ng % G;
                     const int64_t oh0 = (i % nbands) * band_rows, band = std::min(OH, oh0 + band_rows) - oh0;
                     const PhasePlanes pp(w, band);
                     const int64_t cstride = pp.nphases * pp.psize;
                     // NR spare floats: the last tile's full-width loads of the last plane.
                     float* planes = scratch_floats(0, static_cast<size_t>(Cg * cstride + NR));
                     std::memset(planes + Cg * cstride, 0, sizeof(float) * static_cast<size_t>(NR));
                     const float* xg = x + (n * C + g * Cg) * in_plane;
                     for (int64_t c = 0; c < Cg; ++c) {
                       fill_phase_planes(xg + c * in_plane, w, oh0, band, pp, planes + c * cstride);
                       for (int64_t kh = 0; kh < KH; ++kh)
                         for (int64_t kw = 0; kw < KW; ++kw)
                           taps[(c * KH + kh) * KW + kw] = planes + c * cstride + pp.tap(w, kh, kw);
                     }
                     const int64_t nf = band * pp.L;
                     float* out = scratch_floats(2, static_cast<size_t>(Mg * nf));
                     sgemm_taps(Mg, nf, K, packed_w_.panel(0, g), taps, bias ? bias + g * Mg : nullptr, out, nf);
                     for (int64_t m = 0; m < Mg; ++m) {
                       float* ym = y + (n * M + g * Mg + m) * P + oh0 * OW;
                       for (int64_t r = 0; r < band; ++r)
                         std::memcpy(ym + r * OW, out + m * nf + r * pp.L, sizeof(float) * static_cast<size_t>(OW));
                       if (!ep.empty()) ep.run(ym, band * OW);
                     }
                   }
                 });
  }

  // Winograd F(4x4, 3x3) (winograd.isa.cpp) for 3x3, stride 1, dilation 1,
  // one group, enough channels and a large enough output (docs/gemm.md has
  // the measurements behind the thresholds).
  static bool winograd_applies(const Window3& w, int64_t G, int64_t C, int64_t M) {
    return w.nd == 2 && G == 1 && w.k[1] == 3 && w.k[2] == 3 && w.s[1] == 1 && w.s[2] == 1 && w.d[1] == 1 &&
           w.d[2] == 1 && C >= kWinogradMinChannels && M >= kWinogradMinOutputChannels &&
           winograd_tiles_ok(w.out[1], w.out[2]) &&
           36 * C * ceil_div(w.out[1], 4) * ceil_div(w.out[2], 4) <= kWinogradMaxV;
  }
  // At least 3 tiles each way and 16 in all (outputs of 13x13 and more): the
  // GEMMs' columns are the tiles, and 7x7 (2x2 tiles) measured 1.8x slower
  // than im2col.
  static bool winograd_tiles_ok(int64_t OH, int64_t OW) {
    const int64_t TH = ceil_div(OH, 4), TW = ceil_div(OW, 4);
    return TH >= 3 && TW >= 3 && TH * TW >= 16;
  }
  // With few output channels the input transform (and writing V) is most
  // of the work: DenseNet's 128 -> 32 layers gain ~20%; fewer keep im2col.
  static constexpr int64_t kWinogradMinChannels = 16;
  static constexpr int64_t kWinogradMinOutputChannels = 32;
  // Largest V buffer (floats, 32 MB; images are transformed in chunks under it).
  static constexpr int64_t kWinogradMaxV = int64_t{8} << 20;
  // Output channels of a block, and the largest V of one image (floats,
  // ~1 MB) that the blocks share (run_winograd).
  static constexpr int64_t kWinogradBlockChannels = 32;
  static constexpr int64_t kWinogradPrivateV = 262144;
  // The input transform's cost in FMA-equivalents (the unit of fma_cost,
  // 16 a cycle): ~60 cycles a tile and ~500 a row of tiles, measured on
  // 55x55 (14 tiles a row) and 13x13 / 14x14 (4) planes. At the 100 a tile
  // once assumed, 16 planes of 55x55 looked like 20K cycles and ran on one
  // thread for 130 us of the layer's 490.
  static constexpr double kWinogradInputTileWork = 1000.0;
  static constexpr double kWinogradInputRowWork = 8000.0;
  static constexpr int64_t kWinogradMinItems = 4;
  // The 36 V[xi] (and O[xi]) lie `stride` floats apart and the transforms
  // touch all 36 per tile row: a stride of an even number of cache lines
  // maps them onto few L1 sets (8 KB apart: one set, 36 lines in 8 ways),
  // and every store missed. An odd number of lines spreads them over 36
  // sets: the input transform of 128 planes at 14x14 went from 320 to 190
  // us (129 with the transform's other changes).
  static int64_t spread_stride(int64_t floats) {
    const int64_t lines = ceil_div(floats, int64_t{16});
    return (lines % 2 == 0 ? lines + 1 : lines) * 16;
  }

  // V = B^T d B of each input plane goes straight into the SGEMM's B
  // panels (V[xi]: C x tiles, NR tiles per panel); the 36 GEMMs
  // O[xi] = U[xi] V[xi] of a block go to a per-thread buffer, then
  // Y = A^T O A + bias into the output and the epilogue on the block's rows.
  // Large images run in bands of tile rows with a private V each; smaller
  // ones share one V and split the output channels (see below).
  // U = G g G^T is packed into the SGEMM's A panels on the first call with
  // constant weights (36 x M x C floats, 4x the 3x3 weights, so only for
  // layers that take this path), or computed per call from run-time weights.
  void run_winograd(KernelContext& ctx, const float* x, const Tensor& Wt, const float* bias, float* y, int64_t N,
                    int64_t C, int64_t M, const Window3& w, const Epilogue& ep) const {
    static const auto input_fn = SPINDLE_ISA_SELECT(winograd_input_plane);
    static const auto input_work_fn = SPINDLE_ISA_SELECT(winograd_input_work);
    static const auto output_fn = SPINDLE_ISA_SELECT(winograd_output_plane);
    static const auto output_work_fn = SPINDLE_ISA_SELECT(winograd_output_work);
    static const auto weights_fn = SPINDLE_ISA_SELECT(winograd_weights);
    const int64_t H = w.in[1], W = w.in[2], OH = w.out[1], OW = w.out[2], P = OH * OW;
    const int64_t TH = ceil_div(OH, 4), TW = ceil_div(OW, 4), tiles = TH * TW;
    const bool packed = !packed_w_.empty() && &Wt == &w_;
    std::vector<float> u_run;
    if (packed) {
      std::call_once(wino_once_, [&] {
        std::vector<float> u(static_cast<size_t>(36 * M * C));
        weights_fn(w_.data<float>(), M, C, u.data());
        wino_w_ = PackedMatrix::pack_a(false, M, C, 1.0f, u.data(), C, 36, M * C);
      });
    } else {
      u_run.resize(static_cast<size_t>(36 * M * C));
      weights_fn(Wt.data<float>(), M, C, u_run.data());
    }
    const float* u = packed ? nullptr : u_run.data();
    const int64_t MR = sgemm_mr();
    const int64_t mt = std::min(M, round_up(ceil_div(M, ceil_div(M, kWinogradBlockChannels)), MR));
    const int64_t m_blocks = ceil_div(M, mt);
    // V is written straight into the SGEMM's B panels (NR columns of the C
    // channels each); a block's tiles start at a panel boundary, and the
    // last panel's unused columns are zero (the input transform writes them).
    const int64_t NR = sgemm_nr(), kp = C * NR;
    // The 36 GEMMs of output channels [m0, m0 + mm) over the tiles of tile
    // rows [ty0, ty1) of image n, whose V[xi] panels start at vb + xi *
    // xi_stride, then Y = A^T O A + bias and the epilogue.
    auto gemms_and_output = [&](int64_t n, int64_t ty0, int64_t ty1, int64_t m0, int64_t mm, const float* vb,
                                int64_t xi_stride) {
      const int64_t tb = (ty1 - ty0) * TW;
      // (+64: the output transform reads its rows in whole vectors.)
      const int64_t os = spread_stride(mm * tb);  // floats between O[xi] and O[xi + 1]
      float* o = scratch_floats(2, static_cast<size_t>(36 * os + 64));
      for (int64_t xi = 0; xi < 36; ++xi) {
        SgemmExtras ex;
        ex.packed_a = packed ? wino_w_.panel(m0, xi) : nullptr;
        ex.packed_b = vb + xi * xi_stride;
        // (A packed or B packed is not read; W / V stand in for them.)
        sgemm(false, false, mm, tb, C, 1.0f, u ? u + (xi * M + m0) * C : Wt.data<float>(), C, vb, tb, 0.0f,
              o + xi * os, tb, ex);
      }
      float* work = scratch_floats(0, static_cast<size_t>(output_work_fn(TW)));
      const int64_t oy0 = 4 * ty0, oy1 = std::min(OH, 4 * ty1);
      for (int64_t m = 0; m < mm; ++m) {
        float* ym = y + (n * M + m0 + m) * P;
        output_fn({.o = o + m * tb, .xi_stride = os, .TR = ty1 - ty0, .TW = TW, .bias = bias ? bias[m0 + m] : 0.0f,
                   .y = ym + oy0 * OW, .rows = oy1 - oy0, .OW = OW, .work = work});
        if (!ep.empty()) ep.run(ym + oy0 * OW, (oy1 - oy0) * OW);
      }
    };
    const double tile_work = 36.0 * static_cast<double>(M * C) +
                             (kWinogradInputTileWork + kWinogradInputRowWork / static_cast<double>(TW)) *
                                 static_cast<double>(C);
    if (36 * C * tiles > kWinogradPrivateV) {
      // Large images: bands of tile rows, each transforming its own input
      // tiles into a private V (at most ~1 MB) and running every output
      // channel on them; no block reads what another thread wrote.
      const int64_t band = ceil_div(TH, ceil_div(36 * C * tiles, kWinogradPrivateV));
      const int64_t bands = ceil_div(TH, band);
      const int64_t items = N * bands;
      const double item_work = tile_work * static_cast<double>(band * TW);
      parallel_for(ctx.pool(), 0, items, grain_for_work(items, item_work), fma_cost(item_work),
                   [&](int64_t b0, int64_t b1) {
                     for (int64_t b = b0; b < b1; ++b) {
                       const int64_t n = b / bands, ty0 = (b % bands) * band, ty1 = std::min(TH, ty0 + band);
                       const int64_t tb = (ty1 - ty0) * TW, xi_stride = spread_stride(round_up(tb, NR) * C);
                       float* vb = scratch_floats(1, static_cast<size_t>(36 * xi_stride));
                       float* work = scratch_floats(0, static_cast<size_t>(input_work_fn(ty1 - ty0, TW)));
                       for (int64_t c = 0; c < C; ++c)
                         input_fn({.x = x + (n * C + c) * H * W, .H = H, .W = W, .pt = w.pb[1], .pl = w.pb[2],
                                   .ty0 = ty0, .ty1 = ty1, .TW = TW, .v = vb + c * NR, .xi_stride = xi_stride, .nr = NR,
                                   .kp = kp, .work = work});
                       for (int64_t m0 = 0; m0 < M; m0 += mt)
                         gemms_and_output(n, ty0, ty1, m0, std::min(M, m0 + mt) - m0, vb, xi_stride);
                     }
                   });
      return;
    }
    // Smaller images: V of every plane once, into a buffer the blocks share
    // (chunks of images under kWinogradMaxV), then blocks of ~32 output
    // channels by image, which split the channels among threads.
    const int64_t image_v = round_up(tiles, NR) * C;  // floats of one image's V[xi] panels
    const int64_t chunk = std::clamp<int64_t>(kWinogradMaxV / (36 * image_v), 1, N);
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = std::min(chunk, N - n0), xi_stride = spread_stride(nc * image_v);
      float* v = scratch_floats(kSharedScratchSlot, static_cast<size_t>(36 * xi_stride));
      const int64_t planes = nc * C;
      const double plane_work =
          static_cast<double>(TH) * (kWinogradInputRowWork + kWinogradInputTileWork * static_cast<double>(TW));
      parallel_for(ctx.pool(), 0, planes, grain_for_work(planes, plane_work), fma_cost(plane_work),
                   [&](int64_t i0, int64_t i1) {
                     float* work = scratch_floats(0, static_cast<size_t>(input_work_fn(TH, TW)));
                     for (int64_t i = i0; i < i1; ++i) {
                       const int64_t n = i / C, c = i % C;
                       input_fn({.x = x + ((n0 + n) * C + c) * H * W, .H = H, .W = W, .pt = w.pb[1], .pl = w.pb[2],
                                 .ty0 = 0, .ty1 = TH, .TW = TW, .v = v + n * image_v + c * NR, .xi_stride = xi_stride,
                                 .nr = NR, .kp = kp, .work = work});
                     }
                   });
      // With several threads, at least kWinogradMinItems blocks where the
      // channels allow: with two blocks, a worker that wakes late leaves the
      // caller waiting for most of one (64 output channels at 55x55). Sizes
      // are rounded down to whole register tiles: 32 channels in blocks of
      // 12 were 3 blocks, run 2 : 1 by two threads (dense_28 0.92x with
      // blocks of 6). One thread keeps whole blocks (each block reads all of
      // V: blocks of 6 were 1.06x there). The bits are the same either way:
      // an output channel's sums do not depend on its block.
      int64_t bt = mt;
      if (ctx.pool() && ctx.pool()->dop() > 1 && nc * m_blocks < kWinogradMinItems)
        bt = std::min(M, std::max(MR, M / ceil_div(kWinogradMinItems, nc) / MR * MR));
      const int64_t bm = ceil_div(M, bt), items = nc * bm;
      const double item_work = 36.0 * static_cast<double>(bt * tiles * C);
      parallel_for(ctx.pool(), 0, items, grain_for_work(items, item_work), fma_cost(item_work),
                   [&](int64_t b0, int64_t b1) {
                     for (int64_t b = b0; b < b1; ++b) {
                       const int64_t n = b / bm, m0 = (b % bm) * bt;
                       gemms_and_output(n0 + n, 0, TH, m0, std::min(M, m0 + bt) - m0, v + n * image_v, xi_stride);
                     }
                   });
    }
  }

  // Longest output the direct 1-D path takes; longer ones amortize the
  // im2col over a larger product and use the SGEMM's cache blocking.
  static constexpr int64_t kDirect1dMaxLen = 128;
  // Most input channels of a non-grouped convolution for the implicit GEMM
  // (measured: 1.25x at 8 -> 16 channels, 160x160; even at 16 and 24).
  static constexpr int64_t kTapsMaxStemChannels = 8;

  // Columns per im2col tile: K x tile floats near 1 MB (in L2), whole
  // multiples of kGemmTileN.
  static int64_t im2col_tile(int64_t K) {
    return std::max<int64_t>(kGemmTileN, 262144 / std::max<int64_t>(K, 1) / kGemmTileN * kGemmTileN);
  }

  // The im2col path in two passes, for convolutions whose GEMM blocks split
  // the output rows: first the im2col of every column tile, packed once into
  // the SGEMM's B panels (a buffer on the calling thread shared by the
  // blocks), then one SGEMM per (batch, group, row tile, column tile) on
  // those panels. Same sums in the same order as the one-pass path: only
  // where B is packed changes.
  // A 1x1 convolution (pointwise) packs its input rows instead, through
  // in_scale's transform (as the one-pass path's sgemm would).
  void run_gemm_shared_columns(KernelContext& ctx, const float* x, const Tensor& Wt, const float* bias, float* y,
                               int64_t N, int64_t C, int64_t M, int64_t G, const Window3& w, const Epilogue& ep,
                               bool pointwise, const InScale& in_scale) const {
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
    parallel_for(ctx.pool(), 0, items, grain_for_work(items, static_cast<double>(chunk_c * w.k_size() * tile)),
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
    const bool packed = !packed_w_.empty() && &Wt == &w_;
    const float* wd = Wt.data<float>();
    parallel_for(ctx.pool(), 0, blocks, grain_for_work(blocks, static_cast<double>(gb.mt * gb.nt * K)),
                 gemm_cost(gb.mt, gb.nt, K), [&](int64_t b0, int64_t b1) {
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t ng = b / per_block, rem = b % per_block;
                     const int64_t n = ng / G, g = ng % G;
                     const int64_t m0 = (rem / gb.n_blocks) * gb.mt, m1 = std::min(Mg, m0 + gb.mt);
                     const int64_t p0 = (rem % gb.n_blocks) * gb.nt, p1 = std::min(P, p0 + gb.nt);
                     SgemmExtras ex;
                     ex.packed_a = packed ? packed_w_.panel(m0, g) : nullptr;
                     ex.packed_b = panels + ng * per_ng + (p0 / NR) * K * NR;
                     ex.row_bias = bias ? bias + g * Mg + m0 : nullptr;
                     float* yb = y + (n * M + g * Mg + m0) * P + p0;
                     ep.to_sgemm(yb, ex);
                     sgemm(false, false, m1 - m0, p1 - p0, K, 1.0f, wd + (g * Mg + m0) * K, K, nullptr, 0, 0.0f, yb,
                           P, ex);
                   }
                 });
  }

  // Largest shared packed-column buffer (floats, 32 MB); larger problems
  // keep the one-pass path.
  static constexpr double kMaxSharedColumns = 8.0 * 1024 * 1024;
  // A 1x1 convolution packs its input once for all row blocks when there
  // are at least 3 of them and each block's columns (K x nt floats) are
  // 128 KB or more: below that each block packs its own columns from cache
  // for less than the extra pass costs (measured: docs/benchmarks.md).
  static constexpr int64_t kPointwiseSharedRowBlocks = 3;
  static constexpr double kPointwiseSharedPanelBytes = 131072.0;
  // The K input rows the in-place 1x1 path reads together (a cache line of
  // each, P floats apart) spread over few L1 sets when P * 4 bytes is a
  // multiple of a large power of two lines: 112 x 112 planes (49 KB apart)
  // fall in 4 of the 64 sets, so 32 rows are 8 a set and evict each other
  // (measured 1.18x slower than packing; 16 rows, 4 a set: 0.88x). At most
  // 5 rows a set (a 32 KB, 8-way L1 of 64-byte lines).
  static bool taps_rows_share_l1_sets(int64_t K, int64_t P) {
    const int64_t lines = (P * 4 / 64) % 64;
    const int64_t sets = lines == 0 ? 1 : 64 / std::gcd<int64_t>(lines, 64);
    return ceil_div(K, sets) <= 5;
  }
  // Most output channels (per group) of a 1x1 convolution that reads its
  // input in place (run_gemm; 64 rows measured 1.23x slower than packing).
  static constexpr int64_t kPointwiseTapsMaxRows = 48;

  WindowAttrs attrs_;
  int64_t group_;
  Activation act_;
  Tensor w_, b_;  // constant W / B (pre-validated), undefined when given at run time
  // A folded input BatchNormalization: its epsilon, its Relu, and a (C
  // values) then b (C values) when its parameters are constants, else empty.
  float in_epsilon_ = 1e-5f;
  bool in_relu_ = false;
  std::vector<float> in_ab_;
  PackedMatrix packed_w_;  // w_ in sgemm's A panels, per group (GEMM paths; empty when not packed)
  std::vector<float> direct_w_;  // 1-D w_ of one group in conv1d_pack blocks (direct 1-D path; else empty)
  std::vector<float> grouped_w_;  // w_ in grouped8_rows' blocks (narrow groups; else empty)
  // U of w_ in sgemm's A panels, 36 groups of M x C (Winograd path), packed
  // on its first call.
  mutable std::once_flag wino_once_;
  mutable PackedMatrix wino_w_;
};

}  // namespace

void register_conv(KernelRegistry& r) {
  // Conv-1 and Conv-11 differ only in the default of auto_pad/pads handling,
  // which this kernel implements for both.
  r.add("", "Conv", 1, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ConvKernel>(node);
  });
}

}  // namespace spindle::kernels::nn
