// blocked.cpp — kernels of the blocked channel layout NCHW8c, domain
// "spindle", opset 1, which the optimizer writes for a chain of 1x1,
// depthwise and grouped convolutions (src/graph/passes/blocked_layout.cpp) that
// runs blocked, entered and left once. A model may write them too: every
// input is checked as for any other kernel.
//
// Layout: a blocked tensor of an NCHW tensor [N, C, H, W] (C a multiple of
// 8) is [N, C/8, H, W, 8], float32: element (n, c, h, w) lives at
// [n][c / 8][h][w][c % 8]. One pixel of a block of 8 channels is one AVX2
// vector, so depthwise taps and 1x1 products need no gathers and small
// planes (7x7, 14x14) cost no more per output than large ones.
//
//   ReorderToBlocked(X) -> Y    X [N, C, H, W], C % 8 == 0 -> Y [N, C/8, H, W, 8].
//   ReorderFromBlocked(X) -> Y  X [N, Cb, H, W, 8] -> Y [N, Cb * 8, H, W].
//   BlockedGlobalAveragePool(X) -> Y
//                               X [N, C/8, H, W, 8] -> Y [N, C, 1, 1] (NCHW;
//                               the same memory order as [N, C/8, 1, 1, 8]):
//                               per channel 0 + x[0] + x[1] + ... in
//                               row-major pixel order, divided by H * W as
//                               a float.
//   BlockedConv(X, W, B?, R?, S?) -> Y
//                               Conv with attributes group, kernel_shape,
//                               strides, pads (top, left, bottom, right),
//                               dilations (all 1), auto_pad (NOTSET only)
//                               and the fused activation (Activation::
//                               from_attrs). X blocked [N, C/8, H, W, 8],
//                               or NCHW [N, C, H, W] (the NCHW-input mode
//                               below; X's rank picks the mode); W
//                               float [OC, C/group, KH, KW] as for Conv; B
//                               [OC]; R blocked, Y's shape (fused residual
//                               Add); S [N or 1, C, 1, 1], a per-input-
//                               channel scale in NCHW order (squeeze-excite):
//                               Y = act(conv(X * S) + B + R), blocked
//                               [N, OC/8, OH, OW, 8]; OH / OW by the ONNX
//                               formula. Per output element: acc = B, plus
//                               the products, then + R, then the activation.
//   Three shapes of a blocked X, and one of an NCHW X, checked at creation
//   when W is constant (else at each call). A constant W that no mode takes
//   fails at creation; one only the NCHW-input mode takes fails with a
//   blocked X at the call (and the reverse), naming X's and W's shapes.
//     pointwise  group 1, 1x1 kernel, strides >= 1, no pads, C and OC
//                multiples of 8. Weights packed per group of 1-3 output
//                blocks as [ic][MB][8] (blocked.isa.cpp's tiles). Strides
//                other than 1 first gather the input pixels (oh * sh, ow *
//                sw) of each image into a blocked scratch [C/8][OH * OW][8]
//                (every channel block in parallel) and run the stride-1
//                path on it. Per output element: bias, then the input
//                channels in order.
//     grouped    C / group and OC / group both multiples of 8 (RegNet's
//                group width 8 / 16...; group 1 with a kernel other than 1x1
//                is one group: PP-OCR det's 3x3 96 -> 24), any kernel size, strides
//                >= 1, pads >= 0. Output block ob belongs to group g = ob *
//                8 / (OC / group) and reads that group's C / group / 8 input
//                blocks. Weights packed as [OC/8][C/group][KH * KW][8]. Per
//                output element: bias, then for each input channel of the
//                group in order its taps (kh, kw) inside the plane in
//                row-major order (taps in the padding skipped), acc += w *
//                x. 3x3 at stride 1 / 2 with pads <= 1 takes the
//                register-tiled path at AVX2 (up to 12 pixels of one output
//                block in a tile), everything else a generic path with
//                bounds checks (same order, so the same bits at a level).
//     depthwise  group == C == OC, C a multiple of 8, any kernel size,
//                strides >= 1, pads >= 0. Weights packed as [C/8][KH*KW][8].
//                3x3 / 5x5 at stride 1 / 2 with pads <= K / 2 take the
//                register-tiled path at AVX2, everything else a generic
//                path with bounds checks.
//     NCHW input (a network's stem, so the conversion to blocked after it
//                disappears): X rank 4 [N, C, H, W], group 1, C <= 64 (stems
//                have 3), OC a multiple of 8, any kernel size, strides >= 1,
//                pads >= 0. Output blocks in groups of 1-3 (as pointwise),
//                weights packed per group as [C][KH][KW][mb][8] (at creation
//                when only this mode takes W, else at each call with an
//                NCHW X). Per output element: bias, then for each input
//                channel in order its taps (kh, kw) inside the plane in
//                row-major order (taps in the padding skipped), acc += w *
//                x. At AVX2, column strides 1 / 2 take the register-tiled
//                path (tiles of 1 x 8, 2 x 6, 3 x 4 output blocks x
//                neighbouring pixels of a row; 3-wide kernels unrolled),
//                pixels with taps left / right of the plane and other
//                strides a generic path with bounds checks (same order). S
//                runs as the Mul it stands for on X (NCHW), then the
//                convolution (the optimizer writes none for a stem).
//   Anything else is kUnsupported.
//   S multiplies, into a scratch buffer before the blocks run, whichever is
//   smaller: the weights (once per image of S; conv(X * S) = conv with
//   w[oc][ic] * s[ic]; C x OC floats pointwise, C x KH x KW depthwise, OC x
//   C / group x KH x KW grouped) or X (C x H x W per image, after a strided
//   pointwise gather: the 7x7 projections of 960 or 1152 channels, whose
//   weights are larger than L2).
//
// Blocks (parallel_for): reorders, the pool and the strided pointwise
// gather (image, channel block); depthwise (image, channel block, band of
// output rows); grouped (image, output block, band of output rows, costed
// as a GEMM of 8 x band pixels x C/group * KH * KW); NCHW input (image,
// band of output rows, group of output blocks, costed as a GEMM of the
// group's channels x band pixels x C * KH * KW); pointwise (image,
// pixel chunk, group of output blocks), the input channels in kc blocks in
// order inside a block. Block sizes come from the shape only and each
// output element's sum is computed by the same sequence wherever its block
// starts, so results are bitwise identical for any thread count. The
// residual and the activation run on each finished block while it is in
// cache.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "primitives/conv/blocked.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn {

namespace {

constexpr int64_t kBlock = 8;  // channels per block
// Most input channels of the NCHW-input mode (stems have 3; a wider
// convolution runs better as a reorder and the blocked modes).
constexpr int64_t kMaxNchwChannels = 64;

std::string shape_of(const Tensor& t) { return shape_to_string(t.shape()); }

// A blocked input: float32, rank 5, last dim 8.
void require_blocked(const NodeInfo& node, const Tensor& t, const char* name) {
  require_float(node, t, name);
  if (t.rank() != 5 || t.dim(4) != kBlock)
    fail(node, fmt::format("input {} has shape {}, expected a blocked tensor N x C/8 x H x W x 8 (rank 5, last dim 8)",
                           name, shape_of(t)));
}

// ---------------------------------------------------------------- reorders and the pool

// ReorderToBlocked (kToBlocked) and ReorderFromBlocked: each (image, channel
// block) item turns 8 planes into one plane block or back, at the same
// offset on both sides.
template <bool kToBlocked>
class ReorderKernel final : public OpKernel {
 public:
  explicit ReorderKernel(const NodeInfo&) {}
  void compute(KernelContext& ctx) const override {
    static const auto fn = kToBlocked ? SPINDLE_ISA_SELECT(blocked_pack8) : SPINDLE_ISA_SELECT(blocked_unpack8);
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    int64_t Cb = 0;
    if constexpr (kToBlocked) {
      require_float(node, X, "X");
      if (X.rank() != 4 || X.dim(1) % kBlock != 0)
        fail(node, fmt::format("input X has shape {}, expected rank 4 (N x C x H x W) with C a multiple of 8",
                               shape_of(X)));
      Cb = X.dim(1) / kBlock;
    } else {
      require_blocked(node, X, "X");
      Cb = X.dim(1);
    }
    const int64_t N = X.dim(0), P = X.dim(2) * X.dim(3);
    const Shape ys = kToBlocked ? Shape{N, Cb, X.dim(2), X.dim(3), kBlock} : Shape{N, Cb * kBlock, X.dim(2), X.dim(3)};
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const int64_t items = N * Cb;
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(static_cast<double>(P * kBlock))),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) fn(x + i * kBlock * P, P, y + i * kBlock * P);
                 });
  }
};

class BlockedGlobalAveragePoolKernel final : public OpKernel {
 public:
  explicit BlockedGlobalAveragePoolKernel(const NodeInfo&) {}
  void compute(KernelContext& ctx) const override {
    static const auto gap = SPINDLE_ISA_SELECT(blocked_gap8);
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_blocked(node, X, "X");
    const int64_t N = X.dim(0), Cb = X.dim(1), P = X.dim(2) * X.dim(3);
    if (P == 0) fail(node, fmt::format("input X has shape {}, expected H x W > 0 to average", shape_of(X)));
    Tensor& Y = ctx.output(0, DataType::kFloat32, {N, Cb * kBlock, 1, 1});
    if (Y.numel() == 0) return;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const int64_t items = N * Cb;
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(static_cast<double>(P * kBlock))),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) gap(x + i * kBlock * P, P, y + i * kBlock);
                 });
  }
};

// ---------------------------------------------------------------- BlockedConv

// W's shape, checked against the attributes, and its packed form.
struct BlockedWeights {
  bool pointwise = false;
  bool grouped = false;                    // group > 1, not depthwise
  bool nchw = false;                       // the NCHW-input mode (X rank 4)
  int64_t C = 0, OC = 0, KH = 1, KW = 1;
  int64_t Cg = 1, Mg = 1;                  // grouped: input / output channels of a group
  // Pointwise: groups of mb[g] output blocks from block ob[g], packed at
  // off[g] as [C][mb[g]][8]; NCHW input: the same groups, packed at off[g]
  // as [C][KH][KW][mb[g]][8].
  std::vector<int> mb;
  std::vector<int64_t> ob, off;
  // Pointwise as above; depthwise [C/8][KH * KW][8]; grouped
  // [OC/8][Cg][KH * KW][8].
  std::vector<float> w;
  int64_t size() const { return static_cast<int64_t>(w.size()); }
};

class BlockedConvKernel final : public OpKernel {
 public:
  explicit BlockedConvKernel(const NodeInfo& node)
      : group_(node.attrs.get_int("group", 1)), act_(activation_from_attrs(node)) {
    if (group_ <= 0) fail(node, fmt::format("attribute group is {}, expected >= 1", group_));
    const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET")
      fail_unsupported(node, fmt::format("attribute auto_pad is '{}', expected NOTSET (explicit pads)", auto_pad));
    kernel_shape_ = node.attrs.get_ints("kernel_shape", {});
    if (!kernel_shape_.empty() && kernel_shape_.size() != 2)
      fail(node, fmt::format("attribute kernel_shape has {} values, expected 2 (KH, KW)", kernel_shape_.size()));
    strides_ = node.attrs.get_ints("strides", {1, 1});
    if (strides_.size() != 2 || strides_[0] < 1 || strides_[1] < 1)
      fail(node, fmt::format("attribute strides is [{}], expected 2 values >= 1", fmt::join(strides_, ", ")));
    pads_ = node.attrs.get_ints("pads", {0, 0, 0, 0});
    if (pads_.size() != 4 || std::any_of(pads_.begin(), pads_.end(), [](int64_t p) { return p < 0; }))
      fail(node, fmt::format("attribute pads is [{}], expected 4 values >= 0 (top, left, bottom, right)",
                             fmt::join(pads_, ", ")));
    const std::vector<int64_t> dilations = node.attrs.get_ints("dilations", {1, 1});
    if (dilations.size() != 2 || dilations[0] != 1 || dilations[1] != 1)
      fail_unsupported(node, fmt::format("attribute dilations is [{}], expected [1, 1] (the blocked kernels have no "
                                         "dilation)",
                                         fmt::join(dilations, ", ")));
    int64_t oc = -1;  // W's output channels when W is constant
    if (const Tensor* w = node.const_input(1)) {
      // A shape neither mode takes fails at creation. W is packed for the
      // blocked modes when they take it, else for the NCHW-input mode (a W
      // both take is packed for that one at each call with a rank-4 X).
      validate_weights(node, *w);
      const std::string blocked_why = blocked_unsupported(node, *w), nchw_why = nchw_unsupported(*w);
      if (!blocked_why.empty() && !nchw_why.empty())
        fail_unsupported(node, fmt::format("{}; nor as the convolution of an NCHW input X (rank 4): {}", blocked_why,
                                           nchw_why));
      if (node.prepack) {
        if (blocked_why.empty()) packed_ = std::make_shared<BlockedWeights>(pack(*w));
        else packed_nchw_ = std::make_shared<BlockedWeights>(pack_nchw(*w));
        // The packed form replaces W (the plan frees the original). A call
        // in the other mode fails as it would with W given, or, when both
        // modes take W (the NCHW-input one unpacked for), packs W for it
        // from the blocked packing, as it would from W.
        owned_ = true;
        w_shape_ = w->shape();
        other_mode_why_ = blocked_why.empty() ? nchw_why : blocked_why;
      }
      oc = w->dim(0);
    }
    if (const Tensor* b = node.const_input(2)) {
      require_float(node, *b, "B");
      if (oc >= 0 && b->numel() != oc)
        fail(node, fmt::format("input B has shape {}, expected {} values (one per output channel)", shape_of(*b), oc));
      bias_.assign(b->data<float>(), b->data<float>() + b->numel());
    }
  }

  bool owns_constant_input(int i) const override { return i == 1 && owned_; }
  size_t packed_bytes() const override {
    return (packed_ ? packed_->w.size() * sizeof(float) : 0) + (packed_nchw_ ? packed_nchw_->w.size() * sizeof(float) : 0);
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    if (X.rank() == 4) return compute_nchw(ctx, X);
    if (X.rank() != 5 || X.dim(4) != kBlock)
      fail(node, fmt::format("input X has shape {}, expected a blocked tensor N x C/8 x H x W x 8 (rank 5, last dim "
                             "8) or an NCHW tensor N x C x H x W (rank 4)",
                             shape_of(X)));
    BlockedWeights local;
    if (!packed_ && owned_ && !ctx.has_input(1))
      fail_unsupported(node, fmt::format("input X has shape {} (blocked) and W has shape {}, which BlockedConv takes "
                                         "only with an NCHW input X (rank 4): {}",
                                         shape_of(X), shape_to_string(w_shape_), other_mode_why_));
    if (!packed_) {
      const Tensor& w = ctx.input(1);
      validate_weights(node, w);
      const std::string why = blocked_unsupported(node, w);
      if (!why.empty())
        fail_unsupported(node, fmt::format("input X has shape {} (blocked) and W has shape {}, which BlockedConv "
                                           "takes only with an NCHW input X (rank 4): {}",
                                           shape_of(X), shape_of(w), why));
      local = pack(w);
    }
    const BlockedWeights& pw = packed_ ? *packed_ : local;
    if (ctx.has_input(4)) {
      const Tensor& S = ctx.input(4);
      require_float(node, S, "S (the input scale)");
      const int64_t N = X.dim(0);
      if (S.rank() != 4 || (S.dim(0) != 1 && S.dim(0) != N) || S.dim(1) != pw.C || S.dim(2) != 1 || S.dim(3) != 1) {
        // Not one scale per input channel: the Mul the optimizer folded in
        // runs as written, with broadcasting, on X in NCHW (a path no
        // exported squeeze-excite takes).
        const Tensor scaled = scale_by_mul(ctx, X, S);
        return convolve(ctx, pw, scaled, nullptr);
      }
      return convolve(ctx, pw, X, &S);
    }
    convolve(ctx, pw, X, nullptr);
  }

 private:
  // The NCHW-input mode: X [N, C, H, W], output blocked.
  void compute_nchw(KernelContext& ctx, const Tensor& X) const {
    const NodeInfo& node = ctx.node();
    BlockedWeights local;
    if (!packed_nchw_ && owned_ && !ctx.has_input(1) && !other_mode_why_.empty())
      fail_unsupported(node, fmt::format("input X has shape {} (NCHW, rank 4) and W has shape {} with group {}: "
                                         "BlockedConv takes an NCHW input X only as {}",
                                         shape_of(X), shape_to_string(w_shape_), group_, other_mode_why_));
    if (!packed_nchw_) {
      const Tensor& w = owned_ && !ctx.has_input(1) ? unpack(*packed_, w_shape_) : ctx.input(1);
      validate_weights(node, w);
      const std::string why = nchw_unsupported(w);
      if (!why.empty())
        fail_unsupported(node, fmt::format("input X has shape {} (NCHW, rank 4) and W has shape {} with group {}: "
                                           "BlockedConv takes an NCHW input X only as {}",
                                           shape_of(X), shape_of(w), group_, why));
      local = pack_nchw(w);
    }
    const BlockedWeights& pw = packed_nchw_ ? *packed_nchw_ : local;
    if (X.dim(1) != pw.C)
      fail(node, fmt::format("input X has shape {} (NCHW, {} channels) but W has shape [{}, {}, {}, {}] ({} input "
                             "channels): expected X of shape N x {} x H x W",
                             shape_of(X), X.dim(1), pw.OC, pw.C, pw.KH, pw.KW, pw.C, pw.C));
    if (ctx.has_input(4)) {
      // An input scale (which the optimizer does not write for a stem): the
      // Mul it stands for, with broadcasting, then the convolution.
      const Tensor& S = ctx.input(4);
      require_float(node, S, "S (the input scale)");
      Tensor m;
      try {
        m = run_kernel_once("Mul", 14, Attributes(), {X, S}, 1, ctx.pool())[0];
      } catch (const Error& e) {
        fail(node, fmt::format("input S has shape {}, which does not scale X (NCHW {}): {}", shape_of(S), shape_of(X),
                               e.what()));
      }
      if (m.rank() != 4 || m.dim(1) != pw.C)
        fail(node, fmt::format("input S has shape {}: X ({}) times S has shape {}, expected N x {} x H x W",
                               shape_of(S), shape_of(X), shape_of(m), pw.C));
      return convolve_nchw(ctx, pw, m);
    }
    convolve_nchw(ctx, pw, X);
  }

  // What convolve and convolve_nchw share: the bias (B or zeros), OH / OW,
  // R checked against Y's shape, and Y.
  struct Frame {
    const float* bias;
    const float* res;  // or null
    int64_t OH, OW;
    Tensor* Y;
  };
  Frame frame(KernelContext& ctx, const Tensor& X, int64_t N, int64_t H, int64_t W, int64_t OC, int64_t KH,
              int64_t KW) const {
    const NodeInfo& node = ctx.node();
    // Bias (zeros when absent): it starts the accumulators. A constant one
    // was copied at creation.
    if (!bias_.empty() && static_cast<int64_t>(bias_.size()) != OC)
      fail(node, fmt::format("input B has {} values, expected {} (one per output channel)", bias_.size(), OC));
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    if (!bias) {
      float* b = scratch_floats(0, static_cast<size_t>(OC));
      std::fill_n(b, OC, 0.0f);
      if (ctx.has_input(2)) {
        const Tensor& B = ctx.input(2);
        require_float(node, B, "B");
        if (B.numel() != OC)
          fail(node, fmt::format("input B has shape {}, expected {} values (one per output channel)", shape_of(B), OC));
        std::memcpy(b, B.data<float>(), static_cast<size_t>(OC) * sizeof(float));
      }
      bias = b;
    }
    const int64_t span_h = size_add(node, size_add(node, H, pads_[0], "padded height"), pads_[2], "padded height") - KH;
    const int64_t span_w = size_add(node, size_add(node, W, pads_[1], "padded width"), pads_[3], "padded width") - KW;
    if (span_h < 0 || span_w < 0)
      fail(node, fmt::format("input X has shape {} (H {}, W {}); with pads [{}] a {}x{} kernel gives an empty output",
                             shape_of(X), H, W, fmt::join(pads_, ", "), KH, KW));
    const int64_t OH = span_h / strides_[0] + 1, OW = span_w / strides_[1] + 1;
    const Shape ys = {N, OC / kBlock, OH, OW, kBlock};
    const float* res = nullptr;
    if (ctx.has_input(3)) {
      const Tensor& R = ctx.input(3);
      require_float(node, R, "R (the fused residual Add's other input)");
      if (R.shape() != ys)
        fail(node, fmt::format("input R has shape {}, expected the output's shape {}", shape_of(R),
                               shape_to_string(ys)));
      res = R.data<float>();
    }
    return Frame{bias, res, OH, OW, &ctx.output(0, DataType::kFloat32, ys)};
  }

  // Y = act(conv(X) + B + R), X NCHW.
  void convolve_nchw(KernelContext& ctx, const BlockedWeights& pw, const Tensor& X) const {
    const int64_t N = X.dim(0), H = X.dim(2), W = X.dim(3);
    const Frame f = frame(ctx, X, N, H, W, pw.OC, pw.KH, pw.KW);
    if (f.Y->numel() == 0) return;
    run_nchw(ctx, pw, Run{X.data<float>(), pw.w.data(), 0, f.bias, f.res, f.Y->mutable_data<float>(), N, H, W, f.OH,
                          f.OW});
  }

  // X * S by the Mul's rules (broadcasting), X in NCHW, blocked again; the
  // product must keep X's channel count.
  static Tensor scale_by_mul(KernelContext& ctx, const Tensor& X, const Tensor& S) {
    static const auto pack8 = SPINDLE_ISA_SELECT(blocked_pack8);
    static const auto unpack8 = SPINDLE_ISA_SELECT(blocked_unpack8);
    const int64_t N = X.dim(0), Cb = X.dim(1), P = X.dim(2) * X.dim(3);
    Tensor x(DataType::kFloat32, {N, Cb * kBlock, X.dim(2), X.dim(3)});
    for (int64_t i = 0; i < N * Cb; ++i)
      unpack8(X.data<float>() + i * kBlock * P, P, x.mutable_data<float>() + i * kBlock * P);
    Tensor m;
    try {
      m = run_kernel_once("Mul", 14, Attributes(), {x, S}, 1, ctx.pool())[0];
    } catch (const Error& e) {
      fail(ctx.node(), fmt::format("input S has shape {}, which does not scale X (NCHW {}): {}", shape_of(S),
                                   shape_of(x), e.what()));
    }
    if (m.rank() != 4 || m.dim(1) != Cb * kBlock)
      fail(ctx.node(), fmt::format("input S has shape {}: X (NCHW {}) times S has shape {}, expected N x {} x H x W",
                                   shape_of(S), shape_of(x), shape_of(m), Cb * kBlock));
    const int64_t Pm = m.dim(2) * m.dim(3);
    Tensor out(DataType::kFloat32, {m.dim(0), Cb, m.dim(2), m.dim(3), kBlock});
    for (int64_t i = 0; i < m.dim(0) * Cb; ++i)
      pack8(m.data<float>() + i * kBlock * Pm, Pm, out.mutable_data<float>() + i * kBlock * Pm);
    return out;
  }

  // Y = act(conv(X * S) + B + R); S null or one scale per input channel.
  void convolve(KernelContext& ctx, const BlockedWeights& pw, const Tensor& X, const Tensor* S) const {
    const NodeInfo& node = ctx.node();
    const int64_t N = X.dim(0), Cb = X.dim(1), H = X.dim(2), W = X.dim(3);
    const int64_t C = pw.C;
    if (Cb * kBlock != C)
      fail(node, fmt::format("input X has shape {} ({} channels in {} blocks of 8) but W has {} input channels "
                             "(group {}): expected X of shape N x {} x H x W x 8",
                             shape_of(X), Cb * kBlock, Cb, C, group_, C / kBlock));
    const Frame f = frame(ctx, X, N, H, W, pw.OC, pw.KH, pw.KW);
    const float* bias = f.bias;
    const float* res = f.res;
    const int64_t OH = f.OH, OW = f.OW, sh = strides_[0], sw = strides_[1];
    const float* scale = S ? S->data<float>() : nullptr;
    const int64_t scale_images = S ? S->dim(0) : 0;
    Tensor& Y = *f.Y;
    if (Y.numel() == 0) return;
    // S multiplies whichever is smaller: the weights (once per image of
    // S) or X (at 7x7 the input of a 960 -> 160 projection is a third of
    // its weights, which are larger than L2).
    const float* wts = pw.w.data();
    const float* xin = X.data<float>();
    int64_t xh = H, xw = W;  // the plane xin holds
    if (pw.pointwise && (sh != 1 || sw != 1)) {
      // Strided 1x1: the pixels it reads, gathered into [N][C/8][OH][OW][8].
      float* xg = scratch_floats(kSharedInputSlot, static_cast<size_t>(N * Cb * OH * OW * kBlock));
      const int64_t planes = N * Cb;
      parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(static_cast<double>(OH * OW * kBlock))),
                   [&](int64_t i0, int64_t i1) {
                     for (int64_t i = i0; i < i1; ++i) {
                       float* __restrict d = xg + i * OH * OW * kBlock;
                       const float* src = xin + i * H * W * kBlock;
                       for (int64_t oh = 0; oh < OH; ++oh) {
                         const float* __restrict row = src + oh * sh * W * kBlock;
                         for (int64_t ow = 0; ow < OW; ++ow, d += kBlock)
                           std::memcpy(d, row + ow * sw * kBlock, kBlock * sizeof(float));
                       }
                     }
                   });
      xin = xg;
      xh = OH;
      xw = OW;
    }
    int64_t image_stride = 0;  // floats between two images' weights
    if (scale) {
      const int64_t x_size = N * Cb * xh * xw * kBlock;
      if (x_size < scale_images * pw.size()) {
        float* xs = scratch_floats(kSharedScratchSlot, static_cast<size_t>(x_size));
        const int64_t P = xh * xw;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t cb = 0; cb < Cb; ++cb) {
            const float* s = scale + (scale_images == 1 ? 0 : n) * C + cb * kBlock;
            const int64_t o = (n * Cb + cb) * P * kBlock;
            for (int64_t p = 0; p < P; ++p)
              for (int64_t l = 0; l < kBlock; ++l) xs[o + p * kBlock + l] = xin[o + p * kBlock + l] * s[l];
          }
        xin = xs;
      } else {
        float* scaled = scratch_floats(kSharedScratchSlot, static_cast<size_t>(scale_images * pw.size()));
        for (int64_t n = 0; n < scale_images; ++n) scale_weights(pw, scale + n * C, scaled + n * pw.size());
        wts = scaled;
        image_stride = scale_images == 1 ? 0 : pw.size();
      }
    }
    const Run run{xin, wts, image_stride, bias, res, Y.mutable_data<float>(), N, xh, xw, OH, OW};
    if (pw.pointwise) run_pointwise(ctx, pw, run);
    else if (pw.grouped) run_grouped(ctx, pw, run);
    else run_depthwise(ctx, pw, run);
  }

  struct Run {
    const float* x;        // [N][C/8][H][W][8] (strided pointwise: the gathered [N][C/8][OH][OW][8])
    const float* w;        // image n's weights at w + n * w_stride
    int64_t w_stride;
    const float* bias;     // [OC]
    const float* res;      // Y's shape, or null
    float* y;
    int64_t N, H, W, OH, OW;
  };

  // Fails unless W is a float tensor OC x C/group x KH x KW of dims >= 1
  // that matches kernel_shape.
  void validate_weights(const NodeInfo& node, const Tensor& w) const {
    require_float(node, w, "W");
    if (w.rank() != 4)
      fail(node, fmt::format("input W has shape {}, expected rank 4 (OC x C/group x KH x KW)", shape_of(w)));
    const int64_t OC = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
    if (!kernel_shape_.empty() && (kernel_shape_[0] != KH || kernel_shape_[1] != KW))
      fail(node, fmt::format("attribute kernel_shape [{}] does not match input W of shape {}",
                             fmt::join(kernel_shape_, ", "), shape_of(w)));
    if (KH < 1 || KW < 1 || OC < 1 || Cg < 1)
      fail(node, fmt::format("input W has shape {}, expected every dim >= 1", shape_of(w)));
  }

  // Empty when a blocked X can run with W (one of the three shapes for
  // these attributes), else why not. Fails for output channels that group
  // does not divide.
  std::string blocked_unsupported(const NodeInfo& node, const Tensor& w) const {
    const int64_t OC = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
    if (group_ == 1 && KH == 1 && KW == 1) {
      if (std::any_of(pads_.begin(), pads_.end(), [](int64_t p) { return p; }))
        return fmt::format("a 1x1 BlockedConv of a blocked X takes no pads, got pads [{}]", fmt::join(pads_, ", "));
      if (Cg % kBlock != 0 || OC % kBlock != 0)
        return fmt::format("input W has shape {}: a 1x1 BlockedConv of a blocked X takes input and output channels "
                           "that are multiples of 8",
                           shape_of(w));
      return {};
    }
    if (Cg == 1 && OC == group_) {
      if (OC % kBlock != 0)
        return fmt::format("input W has shape {} (group {}): a depthwise BlockedConv takes a channel count that is a "
                           "multiple of 8",
                           shape_of(w), group_);
      return {};
    }
    // Grouped, and a KxK convolution of one group as a single group.
    if (OC % group_ != 0)
      fail(node, fmt::format("input W has shape {}: {} output channels are not divisible by group {}", shape_of(w), OC,
                             group_));
    const int64_t Mg = OC / group_;
    if (Cg % kBlock != 0 || Mg % kBlock != 0)
      return fmt::format("input W has shape {} with group {}: a grouped BlockedConv (or one of one group) takes groups "
                         "of input and output channels that are multiples of 8, got {} input and {} output channels "
                         "a group",
                         shape_of(w), group_, Cg, Mg);
    return {};
  }

  // Empty when an NCHW X (rank 4) can run with W, else why not.
  std::string nchw_unsupported(const Tensor& w) const {
    if (group_ != 1 || w.dim(0) % kBlock != 0 || w.dim(1) > kMaxNchwChannels)
      return fmt::format("group 1, W of OC x C x KH x KW with OC a multiple of 8 and C <= {} (got W {}, group {})",
                         kMaxNchwChannels, shape_of(w), group_);
    return {};
  }

  // The NCHW-input mode's groups of output blocks (as the pointwise ones:
  // threes, then twos, a single block alone) packed as [C][KH][KW][mb][8].
  static BlockedWeights pack_nchw(const Tensor& w) {
    BlockedWeights p;
    p.nchw = true;
    p.OC = w.dim(0);
    p.C = w.dim(1);
    p.KH = w.dim(2);
    p.KW = w.dim(3);
    split_groups(p);
    const float* src = w.data<float>();
    const int64_t T = p.KH * p.KW;
    p.w.resize(static_cast<size_t>(w.numel()));
    for (size_t g = 0; g < p.mb.size(); ++g)
      for (int64_t ic = 0; ic < p.C; ++ic)
        for (int64_t t = 0; t < T; ++t)
          for (int m = 0; m < p.mb[g]; ++m)
            for (int64_t l = 0; l < kBlock; ++l)
              p.w[static_cast<size_t>(p.off[g] + ((ic * T + t) * p.mb[g] + m) * kBlock + l)] =
                  src[(((p.ob[g] + m) * kBlock + l) * p.C + ic) * T + t];
    return p;
  }

  // Groups of 3 output blocks, the rest as 2s (one 1 only for a single
  // block): 3 x 4 and 2 x 6 tiles of accumulators fill the registers. Sets
  // mb, ob and off (p.C * p.KH * p.KW * mb * 8 floats a group).
  static void split_groups(BlockedWeights& p) {
    const int64_t n = p.OC / kBlock;
    int64_t twos = n == 1 ? 0 : n % 3 == 2 ? 1 : n % 3 == 1 ? 2 : 0;
    int64_t threes = n == 1 ? 0 : (n - 2 * twos) / 3;
    // An even number of groups: on 7x7 planes a group is one parallel item,
    // and 17 items on two threads leave one idle for the last (RegNet's
    // 400 channels: 16 threes and a two become 14 threes and 4 twos).
    if ((threes + twos) % 2 != 0 && threes >= 2) {
      threes -= 2;
      twos += 3;
    }
    if (n == 1) p.mb.push_back(1);
    for (int64_t i = 0; i < threes; ++i) p.mb.push_back(3);
    for (int64_t i = 0; i < twos; ++i) p.mb.push_back(2);
    int64_t ob = 0, off = 0;
    for (int m : p.mb) {
      p.ob.push_back(ob);
      p.off.push_back(off);
      ob += m;
      off += p.C * p.KH * p.KW * m * kBlock;
    }
  }

  // W packed for a blocked X (blocked_unsupported(w) empty).
  BlockedWeights pack(const Tensor& w) const {
    BlockedWeights p = layout_of(w.shape());
    const float* src = w.data<float>();
    p.w.resize(static_cast<size_t>(w.numel()));
    for_each_weight(p, [&](int64_t packed, int64_t onnx) { p.w[static_cast<size_t>(packed)] = src[onnx]; });
    return p;
  }
  // W in its ONNX layout (shape ws) back from the blocked modes' packing: exact.
  Tensor unpack(const BlockedWeights& p, const Shape& ws) const {
    Tensor w(DataType::kFloat32, ws);
    float* dst = w.mutable_data<float>();
    for_each_weight(p, [&](int64_t packed, int64_t onnx) { dst[onnx] = p.w[static_cast<size_t>(packed)]; });
    return w;
  }
  // The blocked modes' geometry of a W of shape ws (p.w left empty).
  BlockedWeights layout_of(const Shape& ws) const {
    BlockedWeights p;
    p.OC = ws[0];
    p.KH = ws[2];
    p.KW = ws[3];
    if (group_ == 1 && p.KH == 1 && p.KW == 1) {
      p.pointwise = true;
      p.C = ws[1];
      split_groups(p);  // KH = KW = 1: [C][mb][8] a group
    } else if (!(ws[1] == 1 && p.OC == group_)) {
      p.grouped = true;
      p.Cg = ws[1];
      p.Mg = p.OC / group_;
      p.C = p.Cg * group_;
    } else {
      p.C = p.OC;
    }
    return p;
  }
  // f(index in p.w, index in W's ONNX layout) for every weight.
  template <class F>
  static void for_each_weight(const BlockedWeights& p, F&& f) {
    const int64_t T = p.KH * p.KW;
    if (p.pointwise) {
      for (size_t g = 0; g < p.mb.size(); ++g)
        for (int64_t ic = 0; ic < p.C; ++ic)
          for (int m = 0; m < p.mb[g]; ++m)
            for (int64_t l = 0; l < kBlock; ++l)
              f(p.off[g] + (ic * p.mb[g] + m) * kBlock + l, ((p.ob[g] + m) * kBlock + l) * p.C + ic);
    } else if (p.grouped) {
      // Grouped: [OC/8][Cg][T][8], lane l of block ob output channel ob * 8 + l.
      for (int64_t oc = 0; oc < p.OC; ++oc)
        for (int64_t ic = 0; ic < p.Cg; ++ic)
          for (int64_t t = 0; t < T; ++t)
            f((((oc / kBlock) * p.Cg + ic) * T + t) * kBlock + oc % kBlock, (oc * p.Cg + ic) * T + t);
    } else {
      for (int64_t c = 0; c < p.C; ++c)
        for (int64_t t = 0; t < T; ++t) f(((c / kBlock) * T + t) * kBlock + c % kBlock, c * T + t);
    }
  }

  // out = the packed weights with input channel ic's multiplied by s[ic].
  static void scale_weights(const BlockedWeights& p, const float* s, float* out) {
    const float* w = p.w.data();
    if (p.pointwise) {
      for (size_t g = 0; g < p.mb.size(); ++g) {
        const int64_t row = p.mb[g] * kBlock;  // [ic][mb][8]: one input channel's row
        for (int64_t ic = 0; ic < p.C; ++ic) {
          const int64_t o = p.off[g] + ic * row;
          for (int64_t j = 0; j < row; ++j) out[o + j] = w[o + j] * s[ic];
        }
      }
      return;
    }
    const int64_t T = p.KH * p.KW;
    if (p.grouped) {
      const int64_t row = T * kBlock;  // one input channel of one output block
      for (int64_t ob = 0; ob < p.OC / kBlock; ++ob) {
        const float* sg = s + (ob * kBlock / p.Mg) * p.Cg;  // the group's input channels
        for (int64_t ic = 0; ic < p.Cg; ++ic) {
          const int64_t o = (ob * p.Cg + ic) * row;
          for (int64_t j = 0; j < row; ++j) out[o + j] = w[o + j] * sg[ic];
        }
      }
      return;
    }
    for (int64_t cb = 0; cb < p.C / kBlock; ++cb)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t l = 0; l < kBlock; ++l) {
          const int64_t o = (cb * T + t) * kBlock + l;
          out[o] = w[o] * s[cb * kBlock + l];
        }
  }

  // R added and the activation applied to a finished run y[0, n) of the output.
  void epilogue(const Run& r, float* p, int64_t n) const {
    if (r.res) {
      const float* __restrict src = r.res + (p - r.y);
      float* __restrict d = p;
      for (int64_t i = 0; i < n; ++i) d[i] += src[i];
    }
    if (!act_.is_none()) act_.apply(p, n);
  }

  // Items (image, channel block, band of output rows); a band is as many
  // rows as make ~64K multiply-adds.
  void run_depthwise(KernelContext& ctx, const BlockedWeights& p, const Run& r) const {
    static const auto band_fn = SPINDLE_ISA_SELECT(blocked_dw_band);
    const int64_t Cb = p.C / kBlock, T = p.KH * p.KW, OH = r.OH, OW = r.OW;
    const double row_work = static_cast<double>(OW * kBlock * T);
    const int64_t band_rows = std::clamp<int64_t>(static_cast<int64_t>(65536.0 / row_work), 1, OH);
    const int64_t nbands = ceil_div(OH, band_rows);
    const int64_t items = r.N * Cb * nbands;
    const int64_t in_plane = r.H * r.W * kBlock, out_plane = OH * OW * kBlock;
    // No cost hint: a depthwise band runs far below the FMA peak a
    // multiply-add count would assume (it is bound by loads), so every
    // loop of more than one block takes the pool's threads, as Conv's
    // depthwise path does.
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(row_work * static_cast<double>(band_rows))),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t band = i % nbands, nc = i / nbands, n = nc / Cb, cb = nc % Cb;
                     const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
                     float* yb = r.y + nc * out_plane;
                     band_fn({.x = r.x + nc * in_plane, .H = r.H, .W = r.W,
                              .wk = r.w + n * r.w_stride + cb * T * kBlock, .KH = p.KH, .KW = p.KW, .sh = strides_[0],
                              .sw = strides_[1], .pt = pads_[0], .pl = pads_[1], .pb = pads_[2], .pr = pads_[3],
                              .bias = r.bias + cb * kBlock, .y = yb, .OW = OW, .oh0 = oh0, .oh1 = oh1});
                     epilogue(r, yb + oh0 * OW * kBlock, (oh1 - oh0) * OW * kBlock);
                   }
                 });
  }

  // Items (image, output block, band of output rows); a band is as many
  // rows as make ~128K multiply-adds. Every output element is computed
  // whole by the one item of its (block, row).
  void run_grouped(KernelContext& ctx, const BlockedWeights& p, const Run& r) const {
    static const auto band_fn = SPINDLE_ISA_SELECT(blocked_gc_band);
    const int64_t OCb = p.OC / kBlock, Cb = p.C / kBlock, T = p.KH * p.KW, OH = r.OH, OW = r.OW;
    const int64_t red = p.Cg * T;  // multiply-adds per output element
    const double row_work = static_cast<double>(OW * kBlock * red);
    const int64_t band_rows = std::clamp<int64_t>(static_cast<int64_t>(131072.0 / row_work), 1, OH);
    const int64_t nbands = ceil_div(OH, band_rows);
    const int64_t items = r.N * OCb * nbands;
    const int64_t in_plane = r.H * r.W * kBlock, out_plane = OH * OW * kBlock;
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(row_work * static_cast<double>(band_rows))),
                 gemm_cost(kBlock, band_rows * OW, red), [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t band = i % nbands, nb = i / nbands, n = nb / OCb, ob = nb % OCb;
                     const int64_t g = ob * kBlock / p.Mg;
                     const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
                     float* yb = r.y + nb * out_plane;
                     band_fn({.x = r.x + (n * Cb + g * (p.Cg / kBlock)) * in_plane, .H = r.H, .W = r.W, .Cg = p.Cg,
                              .wk = r.w + n * r.w_stride + ob * red * kBlock, .KH = p.KH, .KW = p.KW, .sh = strides_[0],
                              .sw = strides_[1], .pt = pads_[0], .pl = pads_[1], .pb = pads_[2], .pr = pads_[3],
                              .bias = r.bias + ob * kBlock, .y = yb, .OW = OW, .oh0 = oh0, .oh1 = oh1});
                     epilogue(r, yb + oh0 * OW * kBlock, (oh1 - oh0) * OW * kBlock);
                   }
                 });
  }

  // Items (image, pixel chunk, group of output blocks), the groups of one
  // chunk next to each other so a thread's consecutive items read the same
  // input chunk. Input channels in kc blocks (<= 256 channels, equal sizes)
  // so a group's weight panel stays in L1; chunks of pc pixels so the
  // chunk's kc input channels stay in L2 (~256 KB), made smaller (down to
  // 24 pixels) when there would be fewer blocks than blocks_for_cost asks.
  void run_pointwise(KernelContext& ctx, const BlockedWeights& p, const Run& r) const {
    static const auto block_fn = SPINDLE_ISA_SELECT(blocked_pw_block);
    const int64_t P = r.OH * r.OW, cin = p.C, OCb = p.OC / kBlock;
    const int64_t kblocks = ceil_div(cin, 256);
    const int64_t kc = round_up(ceil_div(cin, kblocks), kBlock);
    const int64_t groups = static_cast<int64_t>(p.mb.size());
    int64_t pc = std::max<int64_t>(24, 65536 / kc / 24 * 24);
    const int64_t wanted = blocks_for_cost(r.N * P, fma_cost(static_cast<double>(cin * p.OC)));
    if (r.N * groups * ceil_div(P, pc) < wanted)
      pc = std::min(pc, std::max<int64_t>(24, round_up(ceil_div(P, ceil_div(wanted, r.N * groups)), 8)));
    const int64_t chunks = ceil_div(P, pc);
    const int64_t items = r.N * chunks * groups;
    const double item_work = static_cast<double>(std::min(P, pc) * cin * 3 * kBlock);
    // The GEMM's cost model (multiply-adds plus the bytes streamed), as
    // Conv's GEMM path uses: at peak-FMA cost alone a 7x7 layer of 60-70 us
    // looked too small for a second thread.
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(item_work)),
                 gemm_cost(3 * kBlock, std::min(P, pc), cin),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t g = i % groups, chunk = (i / groups) % chunks, n = i / (groups * chunks);
                     const int64_t p0 = chunk * pc, p1 = std::min(P, p0 + pc);
                     const int mb = p.mb[static_cast<size_t>(g)];
                     const int64_t ob = p.ob[static_cast<size_t>(g)];
                     float* yg = r.y + (n * OCb + ob) * P * kBlock;
                     // The next item's group (same pixels) is asked for ahead.
                     const bool next = g + 1 < groups;
                     const float* wn = next ? r.w + n * r.w_stride + p.off[static_cast<size_t>(g + 1)] : nullptr;
                     block_fn({.x = r.x + n * (cin / kBlock) * P * kBlock, .xs = P * kBlock, .cin = cin, .kc = kc,
                               .w = r.w + n * r.w_stride + p.off[static_cast<size_t>(g)], .mb = mb,
                               .bias = r.bias + ob * kBlock, .y = yg, .ys = P * kBlock, .p0 = p0, .p1 = p1,
                               .w_next = wn, .mb_next = next ? p.mb[static_cast<size_t>(g + 1)] : 0});
                     for (int m = 0; m < mb; ++m) epilogue(r, yg + (m * P + p0) * kBlock, (p1 - p0) * kBlock);
                   }
                 });
  }

  // The NCHW-input mode. Items (image, band of output rows, group of output
  // blocks), the groups of one band next to each other so they read the
  // same input rows; a band is as many rows as make ~128K multiply-adds for
  // the widest group. Every output element is computed whole by the one
  // item of its (group, row). Costed as a GEMM of the group's channels x
  // the band's pixels x C * KH * KW.
  void run_nchw(KernelContext& ctx, const BlockedWeights& p, const Run& r) const {
    static const auto band_fn = SPINDLE_ISA_SELECT(blocked_nchw_band);
    const int64_t OCb = p.OC / kBlock, OH = r.OH, OW = r.OW, red = p.C * p.KH * p.KW;
    const int64_t groups = static_cast<int64_t>(p.mb.size());
    const int64_t widest = *std::max_element(p.mb.begin(), p.mb.end()) * kBlock;
    const double row_work = static_cast<double>(OW * widest * red);
    const int64_t band_rows = std::clamp<int64_t>(static_cast<int64_t>(131072.0 / row_work), 1, OH);
    const int64_t nbands = ceil_div(OH, band_rows);
    const int64_t items = r.N * nbands * groups;
    const int64_t in_image = p.C * r.H * r.W, out_plane = OH * OW * kBlock;
    parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(row_work * static_cast<double>(band_rows))),
                 gemm_cost(widest, band_rows * OW, red), [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t g = i % groups, band = (i / groups) % nbands, n = i / (groups * nbands);
                     const int mb = p.mb[static_cast<size_t>(g)];
                     const int64_t ob = p.ob[static_cast<size_t>(g)];
                     const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
                     float* yg = r.y + (n * OCb + ob) * out_plane;
                     band_fn({.x = r.x + n * in_image, .C = p.C, .H = r.H, .W = r.W,
                              .wg = r.w + p.off[static_cast<size_t>(g)], .mb = mb, .KH = p.KH, .KW = p.KW,
                              .sh = strides_[0], .sw = strides_[1], .pt = pads_[0], .pl = pads_[1],
                              .bias = r.bias + ob * kBlock, .y = yg, .ys = out_plane, .OW = OW, .oh0 = oh0,
                              .oh1 = oh1});
                     for (int m = 0; m < mb; ++m)
                       epilogue(r, yg + m * out_plane + oh0 * OW * kBlock, (oh1 - oh0) * OW * kBlock);
                   }
                 });
  }

  int64_t group_;
  Activation act_;
  std::vector<int64_t> kernel_shape_, strides_, pads_;
  std::shared_ptr<const BlockedWeights> packed_;       // constant W packed at creation (NodeInfo::prepack)
  std::shared_ptr<const BlockedWeights> packed_nchw_;  // the same for the NCHW-input mode when only it takes W
  bool owned_ = false;  // the packed form replaces W (one mode takes it): the input is dropped
  Shape w_shape_;       // W's shape when owned
  std::string other_mode_why_;  // when owned: why the other mode does not take W
  std::vector<float> bias_;                       // constant B, checked against W when both are constant
};

}  // namespace

void register_blocked(KernelRegistry& r) {
  r.add("spindle", "ReorderToBlocked", 1, 1, factory_of<ReorderKernel<true>>());
  r.add("spindle", "ReorderFromBlocked", 1, 1, factory_of<ReorderKernel<false>>());
  r.add("spindle", "BlockedConv", 1, 1, factory_of<BlockedConvKernel>());
  r.add("spindle", "BlockedGlobalAveragePool", 1, 1, factory_of<BlockedGlobalAveragePoolKernel>());
}

}  // namespace spindle::kernels::nn
