// conv_transpose.cpp — ConvTranspose (ai.onnx opsets 1..17), 1-D / 2-D / 3-D,
// with groups, strides, dilations, pads, output_padding, output_shape,
// auto_pad, optional bias and a fused activation.
//
// Y = col2im(W_g^T * X_g): per block (batch, group, tile of output channels)
// and per chunk of input rows, one GEMM (nn_util.h) produces the columns of
// those channels (channels x kernel taps rows, input positions columns) in a
// per-thread scratch, then col2im adds them into the block's output planes,
// which start as the bias. Every output plane belongs to one block and is
// summed in a fixed order (chunk, tap, input position; chunks are chosen from
// the shape), so results do not depend on the thread count.
// The GEMM reads W_g^T transposed from the ONNX layout (C x M/g x k...) and
// X_g in place.
#include <cstring>

#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"

namespace spindle::kernels::nn {

namespace {

// Scatter-adds the columns of one output channel for input rows [r0, r1)
// (row r = id * IH + ih; kk rows of ld floats, column 0 = input row r0) into
// its output plane.
void col2im_rows(const float* col, int64_t ld, const Window3& w, int64_t r0, int64_t r1, float* plane) {
  const int64_t IH = w.in[1], IW = w.in[2];
  const int64_t OD = w.out[0], OH = w.out[1], OW = w.out[2];
  for (int64_t kd = 0; kd < w.k[0]; ++kd)
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw = 0; kw < w.k[2]; ++kw, col += ld) {
        const int64_t kw_off = kw * w.d[2] - w.pb[2];
        // Input columns iw with 0 <= iw * s + kw_off < OW.
        const int64_t iw_lo = kw_off >= 0 ? 0 : ceil_div(-kw_off, w.s[2]);
        const int64_t iw_hi = OW - 1 - kw_off < 0 ? 0 : std::min(IW, (OW - 1 - kw_off) / w.s[2] + 1);
        if (iw_lo >= iw_hi) continue;  // a tap that lands outside every output row
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t id = r / IH, ih = r - id * IH;
          const int64_t od = id * w.s[0] - w.pb[0] + kd * w.d[0];
          const int64_t oh = ih * w.s[1] - w.pb[1] + kh * w.d[1];
          if (od < 0 || od >= OD || oh < 0 || oh >= OH) continue;
          const float* src = col + (r - r0) * IW;
          // The output row, indexed by kw_off + iw * s (inside [0, OW) for
          // iw in [iw_lo, iw_hi)): no pointer outside the row is formed.
          float* row = plane + (od * OH + oh) * OW;
          if (w.s[2] == 1) {
            for (int64_t iw = iw_lo; iw < iw_hi; ++iw) row[kw_off + iw] += src[iw];
          } else if (w.s[2] == 2) {
            for (int64_t iw = iw_lo; iw < iw_hi; ++iw) row[kw_off + 2 * iw] += src[iw];
          } else {
            const int64_t s = w.s[2];
            for (int64_t iw = iw_lo; iw < iw_hi; ++iw) row[kw_off + iw * s] += src[iw];
          }
        }
      }
}

class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const NodeInfo& node)
      : attrs_(WindowAttrs::parse(node, true, false)),
        group_(node.attrs.get_int("group", 1)),
        output_padding_(node.attrs.get_ints("output_padding", {})),
        output_shape_(node.attrs.get_ints("output_shape", {})),
        act_(activation_from_attrs(node)) {
    if (group_ <= 0) fail(node, fmt::format("attribute group is {}, expected >= 1", group_));
    if (const Tensor* w = node.const_input(1)) {
      require_float(node, *w, "W");
      w_ = *w;
    }
    if (const Tensor* b = node.const_input(2)) {
      require_float(node, *b, "B");
      b_ = *b;
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& Wt = w_.defined() ? w_ : ctx.input(1);
    require_float(node, X, "X");
    require_float(node, Wt, "W");
    const Shape& xs = X.shape();
    const Shape& ws = Wt.shape();
    if (X.rank() < 3 || X.rank() > 5)
      fail(node, fmt::format("input X has shape {}, expected rank 3..5 (N x C x spatial...)", shape_to_string(xs)));
    if (Wt.rank() != X.rank())
      fail(node, fmt::format("input W has shape {} but input X has shape {}: expected W of rank {}",
                             shape_to_string(ws), shape_to_string(xs), X.rank()));
    const int64_t N = xs[0], C = xs[1], G = group_;
    if (ws[0] != C || C % G != 0)
      fail(node, fmt::format("input W has shape {} but input X has shape {} with {} channels and group {}: expected "
                             "W.dim(0) == C and C divisible by group",
                             shape_to_string(ws), shape_to_string(xs), C, G));
    const int64_t Cg = C / G, Mg = ws[1], M = Mg * G;
    const int nd = static_cast<int>(X.rank() - 2);
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)
      fail(node, fmt::format("attribute kernel_shape {} does not match input W of shape {}",
                             shape_to_string(attrs_.kernel_shape), shape_to_string(ws)));
    const Window3 w = geometry(node, xs, kernel, nd);
    const float* bias = nullptr;
    if (b_.defined() || ctx.has_input(2)) {
      const Tensor& B = b_.defined() ? b_ : ctx.input(2);
      require_float(node, B, "B");
      if (B.numel() != M)
        fail(node, fmt::format("input B has shape {}, expected {} values (one per output channel)",
                               shape_to_string(B.shape()), M));
      bias = B.data<float>();
    }
    Shape ys = {N, M};
    for (int i = 0; i < nd; ++i) ys.push_back(w.out[3 - nd + i]);
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;

    const float* x = X.data<float>();
    const float* wd = Wt.data<float>();
    float* y = Y.mutable_data<float>();
    const int64_t kk = w.k_size(), P_in = w.in_size(), P_out = w.out_size();
    const int64_t in_rows = w.in[0] * w.in[1], IW = w.in[2];
    if (w.in[0] == 1 && w.k[0] == 1 && w.s[1] == w.k[1] && w.s[2] == w.k[2] && w.d[1] == 1 && w.d[2] == 1 &&
        w.pb[1] == 0 && w.pb[2] == 0) {
      run_tiling(ctx, x, wd, bias, y, N, C, M, G, w);
      return;
    }
    // Channels per block: large problems are split into several blocks.
    const double work_per_channel =
        static_cast<double>(kk * P_in) * static_cast<double>(std::max<int64_t>(Cg, 1));
    const int64_t want = blocks_for_cost(N * G * Mg, fma_cost(work_per_channel));
    const int64_t ct = std::max<int64_t>(1, ceil_div(Mg, std::max<int64_t>(1, ceil_div(want, N * G))));
    const int64_t ctiles = ceil_div(Mg, ct);
    const int64_t blocks = N * G * ctiles;
    // Inside a block, input rows go in chunks whose columns (ct * kk x
    // chunk floats) stay near 256 KB, so the GEMM output is still in L2 when
    // col2im adds it to the output planes.
    const int64_t chunk_rows =
        std::clamp<int64_t>(65536 / std::max<int64_t>(ct * kk * IW, 1), 1, std::max<int64_t>(in_rows, 1));
    parallel_for(ctx.pool(), 0, blocks, grain_for_cost(ops_cost(work_per_channel * static_cast<double>(ct))),
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t ng = b / ctiles, n = ng / G, g = ng % G;
                     const int64_t c0 = (b % ctiles) * ct, c1 = std::min(Mg, c0 + ct);
                     const int64_t rows = (c1 - c0) * kk;
                     const float* xg = x + (n * C + g * Cg) * P_in;
                     const float* wg = wd + g * Cg * Mg * kk;
                     float* yb = y + (n * M + g * Mg) * P_out;
                     for (int64_t co = c0; co < c1; ++co)
                       std::fill(yb + co * P_out, yb + (co + 1) * P_out, bias ? bias[g * Mg + co] : 0.0f);
                     for (int64_t r0 = 0; r0 < in_rows; r0 += chunk_rows) {
                       const int64_t r1 = std::min(in_rows, r0 + chunk_rows), len = (r1 - r0) * IW;
                       float* col = scratch_floats(2, static_cast<size_t>(rows * len));
                       gemm(true, false, rows, len, Cg, 1.0f, wg + c0 * kk, Mg * kk, xg + r0 * IW, P_in, 0.0f, col,
                            len);
                       for (int64_t co = c0; co < c1; ++co)
                         col2im_rows(col + (co - c0) * kk * len, len, w, r0, r1, yb + co * P_out);
                     }
                     if (!act_.is_none())
                       for (int64_t co = c0; co < c1; ++co) act_.apply(yb + co * P_out, P_out);
                   }
                 });
  }

 private:
  // 1-D / 2-D with stride == kernel, no dilation, no leading pads (e.g. the
  // 2x2 stride-2 upsampling of the OCR detector): every output pixel gets at
  // most one tap, so input-row chunks write disjoint output rows. Blocks are
  // (batch, group, chunk of input rows) with all output channels; each output
  // is written once as bias + column value, in place of the fill-then-add of
  // the general path (same value, one pass over the output).
  void run_tiling(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y, int64_t N,
                  int64_t C, int64_t M, int64_t G, const Window3& w) const {
    const int64_t Cg = C / G, Mg = M / G, KH = w.k[1], KW = w.k[2], kk = KH * KW;
    const int64_t IH = w.in[1], IW = w.in[2], OH = w.out[1], OW = w.out[2], P_in = w.in_size(), P_out = w.out_size();
    const int64_t rows = Mg * kk;
    // Output rows / columns no input reaches (output_padding, output_shape).
    const int64_t cov_h = std::min(OH, IH * KH), cov_w = std::min(OW, IW * KW);
    for (int64_t p = 0; p < N * M; ++p) {
      float* plane = y + p * P_out;
      const float b = bias ? bias[p % M] : 0.0f;
      for (int64_t oh = 0; oh < cov_h; ++oh) std::fill(plane + oh * OW + cov_w, plane + (oh + 1) * OW, b);
      std::fill(plane + cov_h * OW, plane + P_out, b);
      if (!act_.is_none() && cov_h < OH) act_.apply(plane + cov_h * OW, (OH - cov_h) * OW);
    }
    // Chunks: columns (rows x chunk floats) near 256 KB, and enough blocks.
    int64_t chunk = std::clamp<int64_t>(65536 / std::max<int64_t>(rows * IW, 1), 1, IH);
    const Cost image_cost = fma_cost(static_cast<double>(rows * P_in) * static_cast<double>(Cg));
    const int64_t want = blocks_for_cost(N * G, image_cost);
    if (N * G * ceil_div(IH, chunk) < want) chunk = std::max<int64_t>(1, ceil_div(IH, ceil_div(want, N * G)));
    const int64_t nchunks = ceil_div(IH, chunk);
    const int64_t blocks = N * G * nchunks;
    const double block_work = static_cast<double>(rows * chunk * IW * std::max<int64_t>(Cg, 1));
    parallel_for(ctx.pool(), 0, blocks, grain_for_cost(ops_cost(block_work)), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t ng = b / nchunks, n = ng / G, g = ng % G;
        const int64_t r0 = (b % nchunks) * chunk, r1 = std::min(IH, r0 + chunk), len = (r1 - r0) * IW;
        const float* xg = x + (n * C + g * Cg) * P_in;
        float* col = scratch_floats(2, static_cast<size_t>(rows * len));
        // B = the chunk's columns of the Cg input planes, read in place.
        gemm(true, false, rows, len, Cg, 1.0f, wd + g * Cg * rows, rows, xg + r0 * IW, P_in, 0.0f, col, len);
        const int64_t oh_end = std::min(OH, r1 * KH);
        for (int64_t co = 0; co < Mg; ++co) {
          const int64_t m = g * Mg + co;
          const float bm = bias ? bias[m] : 0.0f;
          float* plane = y + (n * M + m) * P_out;
          // Output row oh = ih * KH + kh interleaves the KW tap rows of (co, kh).
          for (int64_t kh = 0; kh < KH; ++kh) {
            const float* src = col + (co * KH + kh) * KW * len;
            for (int64_t ih = r0; ih < r1; ++ih) {
              const int64_t oh = ih * KH + kh;
              if (oh >= OH) break;
              const float* sr = src + (ih - r0) * IW;
              float* dst = plane + oh * OW;
              if (KW == 2 && 2 * IW <= OW) {
                const float* s1 = sr + len;
                for (int64_t iw = 0; iw < IW; ++iw) {
                  dst[2 * iw] = bm + sr[iw];
                  dst[2 * iw + 1] = bm + s1[iw];
                }
              } else {
                for (int64_t iw = 0; iw < IW; ++iw)
                  for (int64_t kw = 0; kw < KW && iw * KW + kw < OW; ++kw) dst[iw * KW + kw] = bm + sr[kw * len + iw];
              }
            }
          }
          if (!act_.is_none() && r0 * KH < oh_end)
            act_.apply(plane + r0 * KH * OW, (oh_end - r0 * KH) * OW);
        }
      }
    });
  }

  Window3 geometry(const NodeInfo& node, const Shape& xs, const std::vector<int64_t>& kernel, int nd) const {
    auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
      if (!v.empty() && v.size() != want)
        fail(node, fmt::format("attribute {} has {} values, expected {} for input X of shape {}", name, v.size(), want,
                               shape_to_string(xs)));
    };
    check_len(attrs_.strides, nd, "strides");
    check_len(attrs_.dilations, nd, "dilations");
    check_len(attrs_.pads, 2 * static_cast<size_t>(nd), "pads");
    check_len(output_padding_, nd, "output_padding");
    if (!output_shape_.empty() && output_shape_.size() != static_cast<size_t>(nd) &&
        output_shape_.size() != static_cast<size_t>(nd) + 2)
      fail(node, fmt::format("attribute output_shape has {} values, expected {}", output_shape_.size(), nd));
    Window3 w;
    w.nd = nd;
    const int off = 3 - nd;
    for (int i = 0; i < nd; ++i) {
      const int j = off + i;
      const size_t si = static_cast<size_t>(i);
      w.in[j] = xs[si + 2];
      w.k[j] = kernel[si];
      w.s[j] = attrs_.strides.empty() ? 1 : attrs_.strides[si];
      w.d[j] = attrs_.dilations.empty() ? 1 : attrs_.dilations[si];
      const int64_t adj = output_padding_.empty() ? 0 : output_padding_[si];
      // Strides, dilations, pads and output padding come from the model: the
      // arithmetic is overflow-checked (a stride of 2^62 overflowed,
      // fuzz_graph); a negative result is the error below.
      auto mul = [&](int64_t a, int64_t b) {
        int64_t r = 0;
        if (__builtin_mul_overflow(a, b, &r))
          fail(node, fmt::format("{} x {} in spatial dim {} does not fit in 64 bits (strides, dilations or input size)",
                                 a, b, i));
        return r;
      };
      auto add = [&](int64_t a, int64_t b) {
        int64_t r = 0;
        if (__builtin_add_overflow(a, b, &r))
          fail(node, fmt::format("{} + {} in spatial dim {} does not fit in 64 bits (pads or output padding)", a, b, i));
        return r;
      };
      const int64_t dk = add(mul(w.k[j] - 1, w.d[j]), 1);
      const int64_t natural = add(add(mul(w.s[j], w.in[j] - 1), adj), dk);
      int64_t out = -1;
      if (!output_shape_.empty()) out = output_shape_[output_shape_.size() - static_cast<size_t>(nd) + si];
      else if (attrs_.auto_pad == AutoPad::kSameUpper || attrs_.auto_pad == AutoPad::kSameLower)
        out = mul(w.in[j], w.s[j]);
      if (out >= 0) {
        // Total padding implied by the requested size; an output larger than
        // the natural one just leaves its tail at the bias.
        const int64_t total = natural > out ? natural - out : 0;
        const int64_t small = total / 2, big = total - total / 2;
        const bool upper = attrs_.auto_pad == AutoPad::kSameUpper;
        w.pb[j] = upper ? small : big;
        w.pe[j] = upper ? big : small;
        w.out[j] = out;
      } else {
        w.pb[j] = attrs_.pads.empty() || attrs_.auto_pad == AutoPad::kValid ? 0 : attrs_.pads[si];
        w.pe[j] = attrs_.pads.empty() || attrs_.auto_pad == AutoPad::kValid ? 0 : attrs_.pads[si + static_cast<size_t>(nd)];
        const int64_t pads = add(w.pb[j], w.pe[j]);
        if (__builtin_sub_overflow(natural, pads, &w.out[j]))
          fail(node, fmt::format("output size {} - pads {} in spatial dim {} does not fit in 64 bits", natural, pads, i));
      }
      if (w.out[j] < 0)
        fail(node, fmt::format("input X of shape {} gives a negative output size {} in spatial dim {}",
                               shape_to_string(xs), w.out[j], i));
    }
    return w;
  }

  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
  Activation act_;
  Tensor w_, b_;
};

}  // namespace

void register_conv_transpose(KernelRegistry& r) {
  r.add("", "ConvTranspose", 1, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ConvTransposeKernel>(node);
  });
}

}  // namespace spindle::kernels::nn
