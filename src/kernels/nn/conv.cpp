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
//
// This file creates the kernel (attributes, constant weights and what each
// algorithm prepares from them, shape checks) and chooses the path for
// each call; each path's driver is its own file under conv/ (conv_gemm.cpp,
// conv_winograd.cpp, conv_depthwise.cpp, conv_grouped.cpp, conv_taps.cpp,
// conv_direct1d.cpp), declared with its prepared state in
// conv/conv_algorithms.h.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/nn/activation.h"
#include "kernels/nn/conv/conv_algorithms.h"
#include "kernels/nn/nn_util.h"
#include "primitives/conv/grouped.h"
#include "primitives/gemm/sgemm.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn {

namespace {

using conv::ConvArgs;
using conv::Epilogue;
using conv::InScale;

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
      prepare_static_winograd(node, *w);
      // Constant weights of the GEMM paths are packed once, per group, into
      // the micro-kernel's A panels (depthwise weights stay as they are).
      const bool depthwise = w->dim(1) == 1 && w->rank() <= 4 && !one_channel_1d(static_cast<int>(w->rank()) - 2, group_, w->dim(0));
      if (node.prepack && !depthwise && !wino_static_) {
        const int64_t Mg = w->dim(0) / group_, K = w->numel() / w->dim(0);
        packed_w_ = PackedMatrix::pack_a(false, Mg, K, 1.0f, w->data<float>(), K, group_, Mg * K);
      }
      if (node.prepack && grouped8_fits(static_cast<int>(w->rank()) - 2, group_, w->dim(0) / group_, w->dim(1),
                                         w->rank() == 4 ? w->dim(2) : 0))
        grouped_w_ = conv::prepare_grouped8(*w, group_);
      if (node.prepack && w->rank() == 3 && group_ == 1 && w->dim(2) > 1) direct_w_ = conv::prepare_direct1d(*w);
      // The packed panels replace W: every path that reads W's own layout
      // (the matrix-vector product, Winograd's U) reads the panels instead,
      // and the plan frees the original (owns_constant_input). w_ then
      // keeps W's shape over no data.
      if (!packed_w_.empty() || wino_static_) w_ = Tensor::borrow(DataType::kFloat32, w->shape(), nullptr);
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

  bool owns_constant_input(int i) const override { return i == 1 && (!packed_w_.empty() || wino_static_); }
  size_t packed_bytes() const override {
    return packed_w_.bytes() + (direct_w_.w.size() + grouped_w_.w.size()) * sizeof(float) + wino_bytes_.load();
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& Wt = w_.defined() ? w_ : ctx.input(1);
    Tensor scaled;
    InScale in_scale;
    const Tensor& X = folded_input(ctx, Wt, scaled, in_scale);
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
  // X as the convolution reads it, after what the optimizer folded into its
  // input. Returns input 0, or scaled when a fold runs first as its own
  // kernel; in_scale is set when the one-group 1x1 paths apply it themselves.
  const Tensor& folded_input(KernelContext& ctx, const Tensor& Wt, Tensor& scaled, InScale& in_scale) const {
    const NodeInfo& node = ctx.node();
    // A Mul folded in by the optimizer (fuse_input_scales): X = input 0 *
    // input 4. A per-channel scale of a one-group 1x1 convolution is applied
    // as B is packed (InScale); any other shape is multiplied first, with
    // the Mul kernel itself.
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
    return *xin;
  }


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
    const int64_t C = X.dim(1), M = Wt.dim(0), G = group_;
    // W packed: the paths read the panels, or W as given where a path reads
    // its own layout and the plan kept the original (read elsewhere too);
    // wd null when the panels are the only copy.
    const float* wd = &Wt != &w_ || packed_w_.empty() ? Wt.data<float>()
                      : ctx.has_input(1)             ? ctx.input(1).data<float>()
                                                     : nullptr;
    const ConvArgs a{.ctx = ctx, .x = X.data<float>(), .wd = wd, .bias = bias, .y = y, .N = X.dim(0),
                     .C = C, .M = M, .G = G, .w = w, .ep = ep};
    if (wino_static_ && &Wt == &w_ && !winograd_applies(w, G, C, M))
      fail(ctx.node(), fmt::format("internal: input X has shape {}, but the kernel holds W only for the Winograd path "
                                   "of the static input shape {}",
                                   shape_to_string(X.shape()), shape_to_string(wino_shape_)));
    if (Wt.dim(1) == 1 && G == C && w.nd <= 2 && !one_channel_1d(w.nd, G, M)) {
      if (!wd) fail(ctx.node(), "internal: depthwise weights were packed");
      conv::run_depthwise(a);
      return;
    }
    run_dense(a, &Wt == &w_, in_scale);
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

  // The paths other than depthwise, chosen from the shapes. constant_w: W
  // is w_, so what the kernel prepared from it applies. in_scale (a fused
  // Mul; only with G = 1 and a 1x1 kernel, stride 1, no pads): X's channels
  // multiplied as B is packed, or first for the matrix-vector product.
  void run_dense(const ConvArgs& a, bool constant_w, const InScale& in_scale) const {
    const Window3& w = a.w;
    const int64_t N = a.N, C = a.C, M = a.M, G = a.G;
    const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
    const bool pointwise = w.k_size() == 1 && w.s[0] == 1 && w.s[1] == 1 && w.s[2] == 1 && w.pb[0] == 0 &&
                           w.pb[1] == 0 && w.pb[2] == 0 && w.pe[0] == 0 && w.pe[1] == 0 && w.pe[2] == 0;
    if (in_scale.s && !(pointwise && G == 1))
      fail(a.ctx.node(), "internal: an input scale reached a convolution path that does not apply it");
    // A strided 1x1 convolution without pads (ResNet / RegNet projections)
    // is the pointwise one on the subsampled input: the input positions it
    // reads, copied once into a buffer the blocks share, then the same GEMM
    // (in place for few output channels) instead of an im2col per tile.
    if (w.k_size() == 1 && !pointwise && !in_scale.s && w.pb[0] == 0 && w.pb[1] == 0 && w.pb[2] == 0 &&
        w.pe[0] == 0 && w.pe[1] == 0 && w.pe[2] == 0) {
      Window3 sub;
      const float* xs = conv::subsample_input(a, sub);
      run_dense({.ctx = a.ctx, .x = xs, .wd = a.wd, .bias = a.bias, .y = a.y, .N = N, .C = C, .M = M, .G = G,
                 .w = sub, .ep = a.ep},
                constant_w, in_scale);
      return;
    }
    const PackedMatrix* packed = !packed_w_.empty() && constant_w ? &packed_w_ : nullptr;
    if (pointwise && P == 1) {
      run_gemv(a, packed, in_scale);
      return;
    }
    if (w.nd == 1 && G == 1 && w.s[2] == 1 && !direct_w_.w.empty() && constant_w && P <= kDirect1dMaxLen) {
      conv::run_direct1d(a, direct_w_);
      return;
    }
    if (winograd_applies(w, G, C, M)) {
      conv::run_winograd(a, packed || (constant_w && wino_static_) ? &wino_ : nullptr, packed);
      if (packed) wino_bytes_.store(wino_.u.bytes());
      return;
    }
    if (!grouped_w_.w.empty() && constant_w && w.nd == 2) {
      conv::run_grouped8(a, grouped_w_);
      return;
    }
    // Narrow groups (RegNet's group width 8 / 16) and stems of few channels: the
    // im2col would copy each input value k_size times for little GEMM work
    // per copy; an implicit GEMM reads the taps from phase planes instead.
    if (!pointwise && w.nd == 2 && (G > 1 || Cg <= kTapsMaxStemChannels) && K <= kSgemmKC && packed) {
      conv::run_taps(a, *packed);
      return;
    }
    // The im2col column tile (K x nt floats) stays near 1 MB, in L2.
    const int64_t max_nt = pointwise ? P : conv::im2col_tile(K);
    GemmBlocks gb = choose_gemm_blocks(N * G, Mg, P, K, max_nt);
    // Column tiles alone give at least half the blocks the work asks for
    // (large outputs: 56x56, 112x112): keep every row in one block, so each
    // tile's im2col is built once and used by all rows while it is in L2.
    // With several threads also when the tiles give each thread one of at
    // least 64 output positions: the shared columns of the two-pass path
    // are written by every thread and read by every other, from the other
    // core's cache (3x3 stride-2 convolutions of 128 channels at 56x56 / 256
    // at 28x28, intra 2: 1.21-1.25 -> 0.85-0.91 and 1.14-1.34 -> 1.02-1.04
    // ms in `spindle bench`; one thread keeps the two-pass path, 8-13%
    // faster there; a 7x7 output in two tiles of 32 and 17 columns was
    // slower). The bits are the same: only where B is packed changes.
    const int dop = a.ctx.pool() ? a.ctx.pool()->dop() : 1;
    if (!pointwise && gb.m_blocks > 1 && N * G * gb.n_blocks > 1 &&
        (2 * N * G * gb.n_blocks >=
             blocks_for_cost(N * G * Mg, fma_cost(static_cast<double>(P) * static_cast<double>(K))) ||
         (dop > 1 && N * G * gb.n_blocks >= dop && P >= 64 * dop))) {
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
      conv::run_gemm_shared_columns(a, packed, pointwise, in_scale);
      return;
    }
    conv::run_gemm_blocks(a, packed, gb, pointwise, in_scale);
  }

  // 1x1 convolution of a 1x1 input (squeeze-excite blocks): a matrix-vector
  // product on W's ONNX layout, on X multiplied by a fused Mul's scale first.
  void run_gemv(const ConvArgs& a, const PackedMatrix* packed, const InScale& in_scale) const {
    if (in_scale.shift) fail(a.ctx.node(), "internal: a folded BatchNormalization reached the matrix-vector path");
    if (in_scale.s) {  // N x C values: x * s, as the Mul would give them
      const int64_t N = a.N, C = a.C;
      std::vector<float> xs(static_cast<size_t>(N * C));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          xs[static_cast<size_t>(n * C + c)] = a.x[n * C + c] * in_scale.s[n * in_scale.image_stride + c];
      conv::run_gemv({.ctx = a.ctx, .x = xs.data(), .wd = a.wd, .bias = a.bias, .y = a.y, .N = N, .C = C, .M = a.M,
                      .G = a.G, .w = a.w, .ep = a.ep},
                     packed);
      return;
    }
    conv::run_gemv(a, packed);
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

  // An input shape known at creation (NodeInfo::input_shapes) for which
  // Winograd applies: U is packed now rather than on the first run, in
  // place of the GEMM panels (no other path is taken with that shape).
  // A fused Mul (input 4) may make X its other operand: left to the runs.
  void prepare_static_winograd(const NodeInfo& node, const Tensor& w) {
    const Shape* xs = node.input_shape(0);
    if (!node.prepack || !xs || node.num_inputs > 4 || xs->size() != 4 || w.rank() != 4 || group_ != 1 ||
        (*xs)[1] != w.dim(1))
      return;
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != Shape(w.shape().begin() + 2, w.shape().end())) return;
    Window3 win;
    try {
      win = forward_window(node, attrs_, *xs, {w.dim(2), w.dim(3)});
    } catch (const Error&) {
      return;  // the runs report it
    }
    if (!winograd_applies(win, group_, w.dim(1), w.dim(0))) return;
    conv::prepare_winograd(w.data<float>(), w.dim(0), w.dim(1), wino_);
    wino_bytes_.store(wino_.u.bytes());
    wino_static_ = true;
    wino_shape_ = *xs;
  }

  // Winograd F(4x4, 3x3) (winograd.isa.cpp) for 3x3, stride 1, dilation 1,
  // one group, enough channels and a large enough output (docs/gemm.md has
  // the measurements behind the thresholds).
  static bool winograd_applies(const Window3& w, int64_t G, int64_t C, int64_t M) {
    return w.nd == 2 && G == 1 && w.k[1] == 3 && w.k[2] == 3 && w.s[1] == 1 && w.s[2] == 1 && w.d[1] == 1 &&
           w.d[2] == 1 && C >= kWinogradMinChannels && M >= kWinogradMinOutputChannels &&
           winograd_tiles_ok(w.out[1], w.out[2]) &&
           36 * C * ceil_div(w.out[1], 4) * ceil_div(w.out[2], 4) <= conv::kWinogradMaxV;
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

  // Longest output the direct 1-D path takes; longer ones amortize the
  // im2col over a larger product and use the SGEMM's cache blocking.
  static constexpr int64_t kDirect1dMaxLen = 128;
  // Most input channels of a non-grouped convolution for the implicit GEMM
  // (measured: 1.25x at 8 -> 16 channels, 160x160; even at 16 and 24).
  static constexpr int64_t kTapsMaxStemChannels = 8;

  // Largest shared packed-column buffer (floats, 32 MB); larger problems
  // keep the one-pass path.
  static constexpr double kMaxSharedColumns = 8.0 * 1024 * 1024;
  // A 1x1 convolution packs its input once for all row blocks when there
  // are at least 3 of them and each block's columns (K x nt floats) are
  // 128 KB or more: below that each block packs its own columns from cache
  // for less than the extra pass costs (measured: docs/benchmarks.md).
  static constexpr int64_t kPointwiseSharedRowBlocks = 3;
  static constexpr double kPointwiseSharedPanelBytes = 131072.0;

  WindowAttrs attrs_;
  int64_t group_;
  Activation act_;
  // Constant W / B (pre-validated), undefined when given at run time; a
  // packed W (packed_w_) leaves w_ with its shape and no data.
  Tensor w_, b_;
  // A folded input BatchNormalization: its epsilon, its Relu, and a (C
  // values) then b (C values) when its parameters are constants, else empty.
  float in_epsilon_ = 1e-5f;
  bool in_relu_ = false;
  std::vector<float> in_ab_;
  // What the paths prepare from constant weights (each empty when it does
  // not apply or session.disable_prepacking = 1; NodeInfo::prepack):
  PackedMatrix packed_w_;  // w_ in sgemm's A panels, per group (GEMM paths)
  conv::Direct1dWeights direct_w_;  // 1-D w_ of one group (direct 1-D path)
  conv::Grouped8Weights grouped_w_;  // narrow groups of 8 output channels
  // U of w_ for the Winograd path, packed on its first call.
  mutable conv::WinogradWeights wino_;
  mutable std::atomic<size_t> wino_bytes_{0};  // wino_.u's size once packed
  // U packed at creation for the static input shape wino_shape_, the only
  // form of W the kernel keeps.
  bool wino_static_ = false;
  Shape wino_shape_;
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
