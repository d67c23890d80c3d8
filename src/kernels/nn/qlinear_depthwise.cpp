// qlinear_depthwise.cpp — QLinearConvNhwc's depthwise path
// (qlinear_depthwise.h).
#include "kernels/nn/qlinear_depthwise.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "primitives/gemm/qgemm.h"
#include "primitives/quant/requant.h"
#include "spindle/cpu.h"

namespace spindle::kernels::nn {

namespace {

// The VNNI rows run at the level whose GEMM uses VNNI.
bool vnni_rows() {
  static const bool vnni = std::string_view(qgemm_kernel_name()) == "avx512-vnni";
  return vnni;
}

// The padded, phase-split rows dw_q8_row reads (dw_q8.h): `phases` phases of
// `pixels` pixels of C bytes each, then 64 bytes that a row's last block
// may read past its end.
struct PaddedRows {
  int64_t C, W, pad, phases, pixels, bytes;
  bool flip;    // int8 input: stored with the top bit flipped
  uint8_t fill; // the zero point as stored

  // Input row `src` (W pixels) into `dst` (bytes).
  void build(const uint8_t* src, uint8_t* dst) const {
    for (int64_t p = 0; p < phases; ++p) {
      uint8_t* d = dst + p * pixels * C;
      if (phases == 1) {  // one run: left padding, the row, right padding
        const int64_t left = std::min(pad, pixels), inside = std::clamp<int64_t>(W, 0, pixels - left);
        std::memset(d, fill, static_cast<size_t>(left * C));
        copy(src, d + left * C, inside * C);
        std::memset(d + (left + inside) * C, fill, static_cast<size_t>((pixels - left - inside) * C));
        continue;
      }
      for (int64_t m = 0; m < pixels; ++m) {
        const int64_t iw = p + phases * m - pad;
        if (iw >= 0 && iw < W) copy(src + iw * C, d + m * C, C);
        else std::memset(d + m * C, fill, static_cast<size_t>(C));
      }
    }
    std::memset(dst + phases * pixels * C, fill, 64);
  }

  // n bytes (flipped for int8 input): a pixel's channels at a time for the
  // strided phases, so 16-byte moves the compiler inlines rather than a
  // library call per pixel; the last move overlaps the one before.
  void copy(const uint8_t* s, uint8_t* d, int64_t n) const {
    if (!flip && n > 256) {
      std::memcpy(d, s, static_cast<size_t>(n));
      return;
    }
    if (n < 16) {
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(s[i] ^ (flip ? 0x80 : 0));
      return;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) move16(s + i, d + i);
    if (i < n) move16(s + n - 16, d + n - 16);
  }

  void move16(const uint8_t* s, uint8_t* d) const {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + 8, 8);
    if (flip) {
      a ^= 0x8080808080808080ull;
      b ^= 0x8080808080808080ull;
    }
    std::memcpy(d, &a, 8);
    std::memcpy(d + 8, &b, 8);
  }
};

}  // namespace

QDepthwise::QDepthwise(const Tensor& w, const Tensor* w_zp, bool strided)
    : w_(w), w_signed_(w.dtype() == DataType::kInt8) {
  const int64_t C = w.dim(0), taps = w.numel() / std::max<int64_t>(C, 1);
  if (!vnni_rows() || !w_zp || w_zp->dtype() != w.dtype() || (w_zp->numel() != 1 && w_zp->numel() != C)) return;
  q8_zp_.resize(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t i = w_zp->numel() == 1 ? 0 : c;
    q8_zp_[static_cast<size_t>(c)] =
        w_signed_ ? int32_t{w_zp->data<int8_t>()[i]} : int32_t{w_zp->data<uint8_t>()[i]};
  }
  q8_ = dw_q8_pack(w.raw_data(), w_signed_, q8_zp_.data(), C, taps, strided);
}

int32_t QDepthwise::weight(int64_t i) const {
  return w_signed_ ? int32_t{static_cast<const int8_t*>(w_.raw_data())[i]}
                   : int32_t{static_cast<const uint8_t*>(w_.raw_data())[i]};
}

template <class T>
void QDepthwise::run(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp,
                     const std::vector<int32_t>& w_zp, const ChannelRequant& r, T* y) const {
  if (X.dim(0) <= 0 || X.dim(3) <= 0 || g.out[1] <= 0 || g.out[2] <= 0) return;  // an empty output
  if (!q8_.empty() && w_zp == q8_zp_) run_q8(ctx, X, g, x_zp, r, y);
  else run_rows(ctx, X, g, x_zp, w_zp, r, y);
}

// Each output row: its taps' runs on the padded rows (a ring of the last
// (kh - 1) * dh + 1 input rows per block, built as they are first needed;
// rows outside the input read one row of zero points), then dw_q8_row.
template <class T>
void QDepthwise::run_q8(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const ChannelRequant& r,
                        T* y) const {
  static const auto row_fn = SPINDLE_ISA_SELECT(dw_q8_row);
  const int64_t N = X.dim(0), H = X.dim(1), W = X.dim(2), C = X.dim(3), OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], taps = KH * KW;
  const bool x_signed = X.dtype() == DataType::kInt8;
  // Padded columns read: stride * (OW - 1) + (KW - 1) * dilation + 1; in
  // stride phases when blocks tile the run, else one row (blocks of one
  // pixel read a strided tap's pixels stride * C bytes apart).
  const bool pixel_blocks = q8_.step == C;
  const int64_t phases = pixel_blocks ? 1 : g.s[2], columns = g.s[2] * (OW - 1) + (KW - 1) * g.d[2] + 1;
  const int64_t pixels = ceil_div(columns, phases);
  const PaddedRows rows{C,      W,        g.pb[2], phases, pixels, phases * pixels * C + 64, x_signed,
                        static_cast<uint8_t>(x_signed ? x_zp + 128 : x_zp)};
  const std::vector<uint8_t> zp_row(static_cast<size_t>(rows.bytes), rows.fill);
  std::vector<int32_t> bias_lanes(static_cast<size_t>(q8_.blocks * 64));
  std::vector<float> scale_lanes(static_cast<size_t>(q8_.blocks * 64));
  dw_q8_lanes(q8_, r.bias, r.scale, x_zp, x_signed, bias_lanes.data(), scale_lanes.data());
  const int64_t ring = (KH - 1) * g.d[1] + 1;
  const auto* xdata = static_cast<const uint8_t*>(X.raw_data());
  parallel_for(ctx.pool(), 0, N * OH, grain_for_cost(ops_cost(static_cast<double>(OW * taps * C) / 8)),
               [&](int64_t r0, int64_t r1) {
    auto* band = reinterpret_cast<uint8_t*>(scratch_floats(0, static_cast<size_t>(ceil_div(ring * rows.bytes, 4))));
    std::vector<int64_t> held(static_cast<size_t>(ring), -1);  // the input row (n * H + ih) in each slot
    std::vector<const uint8_t*> runs(static_cast<size_t>(taps));
    DwQ8Row a;
    a.runs = runs.data();
    a.w = &q8_;
    a.n = OW * C;
    a.in_step = pixel_blocks ? g.s[2] * C : q8_.step;
    a.bias_lanes = bias_lanes.data();
    a.scale_lanes = scale_lanes.data();
    a.zp = r.zp;
    a.lo = r.lo;
    a.hi = r.hi;
    a.y_signed = std::is_same_v<T, int8_t>;
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / OH, oh = row % OH;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
        const uint8_t* base = zp_row.data();
        if (ih >= 0 && ih < H) {
          const int64_t slot = ih % ring;
          base = band + slot * rows.bytes;
          if (held[static_cast<size_t>(slot)] != n * H + ih) {
            rows.build(xdata + (n * H + ih) * W * C, band + slot * rows.bytes);
            held[static_cast<size_t>(slot)] = n * H + ih;
          }
        }
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t o = kw * g.d[2];
          runs[static_cast<size_t>(kh * KW + kw)] = base + (o % phases) * pixels * C + (o / phases) * C;
        }
      }
      a.y = y + row * OW * C;
      row_fn(a);
    }
  });
}

// Each output pixel's C accumulators at once, a tap adding (x - x_zp) *
// (w - w_zp) over the channel vector (taps outside the input add nothing,
// as padding with x_zp does).
template <class T>
void QDepthwise::run_rows(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp,
                          const std::vector<int32_t>& w_zp, const ChannelRequant& r, T* y) const {
  const int64_t N = X.dim(0), C = X.dim(3), H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t taps = g.k_size();
  std::vector<int32_t> wt(static_cast<size_t>(taps * C));  // [tap][channel], w - w_zp
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t)
      wt[static_cast<size_t>(t * C + c)] = weight(c * taps + t) - w_zp[static_cast<size_t>(c)];
  static const auto dw_fn = SPINDLE_ISA_SELECT(dw_requant_row);
  // Few channels, below AVX-512 (whose row loop keeps its sums in
  // registers): the weights repeated along a row, so that a tap's
  // stride-1 columns are one run.
  std::vector<int32_t> w_rows;
  if (g.s[2] == 1 && C < 64 && active_isa_level() != IsaLevel::kAvx512) {
    w_rows.resize(static_cast<size_t>(taps * OW * C));
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t i = 0; i < OW * C; ++i)
        w_rows[static_cast<size_t>(t * OW * C + i)] = wt[static_cast<size_t>(t * C + i % C)];
  }
  parallel_for(ctx.pool(), 0, N * OH, grain_for_cost(ops_cost(static_cast<double>(OW * taps * C))),
               [&](int64_t r0, int64_t r1) {
    DwRequantRow dr;
    set_row_geometry(dr.row, X, g);
    dr.row.x_zp = x_zp;
    dr.row.w = wt.data();
    dr.row.w_rows = w_rows.empty() ? nullptr : w_rows.data();
    dr.row.acc = reinterpret_cast<int32_t*>(scratch_floats(3, static_cast<size_t>(OW * C)));
    dr.bias = r.bias;
    dr.scale = r.scale;
    dr.zp = r.zp;
    dr.lo = r.lo;
    dr.hi = r.hi;
    dr.y_signed = std::is_same_v<T, int8_t>;
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / OH;
      dr.row.x = static_cast<const uint8_t*>(X.raw_data()) + n * H * W * C;
      dr.row.oh = row % OH;
      dr.y = y + row * OW * C;
      dw_fn(dr);
    }
  });
}

template void QDepthwise::run<uint8_t>(KernelContext&, const Tensor&, const Window3&, int32_t,
                                       const std::vector<int32_t>&, const ChannelRequant&, uint8_t*) const;
template void QDepthwise::run<int8_t>(KernelContext&, const Tensor&, const Window3&, int32_t,
                                      const std::vector<int32_t>&, const ChannelRequant&, int8_t*) const;

}  // namespace spindle::kernels::nn
