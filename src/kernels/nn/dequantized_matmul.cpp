// dequantized_matmul.cpp — the integer products with a float output:
// com.microsoft DynamicQuantizeMatMul and MatMulIntegerToFloat (one product
// each) and spindle.DynamicQuantizeMatMulGroup (MatMulSiblingFusion: the
// DynamicQuantizeMatMuls of one A, A quantized once, their blocks in one
// parallel loop). Each runs the 8-bit GEMM (primitives/gemm/qgemm.h) with
// the dequantizing epilogue; the operand checks are qlinear_operands.h's.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_operands.h"
#include "primitives/gemm/qgemm.h"

namespace spindle::kernels::nn {

namespace {

using namespace qoperands;

// Where a DequantizeMatMul-like product's operands are: DynamicQuantizeMatMul
// (A, B, b_scale, b_zero_point?, bias?) or MatMulIntegerToFloat (A, B,
// a_scale, b_scale, a_zero_point?, b_zero_point?, bias?).
struct DequantInputs {
  int b, b_scale, b_zp, bias;
};
constexpr DequantInputs kDynamicQuantizeInputs{1, 2, 3, 4};
constexpr DequantInputs kIntegerToFloatInputs{1, 3, 5, 6};

// One float-output product of such a node: B (2-D, A's last dimension of
// rows), its scale (one or one per column), zero point and bias, written
// into output `out` of A's shape with N last. check() validates them and
// makes the output; finish() sets the GEMM's arguments once A's scale is
// known (`base` holds A's fields).
struct DequantProduct {
  DequantProduct() = default;
  DequantProduct(const DequantProduct&) = delete;  // args.b may point into it
  DequantProduct& operator=(const DequantProduct&) = delete;
  int64_t N = 0;
  bool empty = false;  // the output has no values
  std::vector<float> scale;
  std::vector<int32_t> b_zp;
  QGemmArgs args;

  void check(KernelContext& ctx, const DequantInputs& in, const PrepackedB& pre, const Shape& a_shape, int out) {
    const NodeInfo& node = ctx.node();
    const Tensor& B = ctx.input(in.b);
    require_q8(node, B, "B");
    const int64_t K = a_shape.back();
    if (B.rank() != 2 || B.dim(0) != K)
      fail(node, fmt::format("inputs A {} and B {}: expected a 2-D B of {} rows (A's last dimension)",
                             shape_to_string(a_shape), shape_to_string(B.shape()), K));
    N = B.dim(1);
    scale = scales(ctx, in.b_scale, "b_scale", N, "one per column of B");
    per_column_scale_ = ctx.input(in.b_scale).numel() != 1;
    if (!per_column_scale_) scale.resize(1);
    b_zp = zero_points(ctx, in.b_zp, "b_zero_point", B.dtype(), N, "one per column of B");
    if (ctx.has_input(in.bias)) {
      const Tensor& bt = ctx.input(in.bias);
      require_float(node, bt, "bias");
      if (bt.rank() != 1 || bt.dim(0) != N)
        fail(node, fmt::format("input bias has shape {}, expected [{}] (the columns of B)", shape_to_string(bt.shape()), N));
      args.bias = bt.data<float>();
    }
    Shape ys = a_shape;
    ys.back() = N;
    Tensor& Y = ctx.output(out, DataType::kFloat32, ys);
    empty = Y.numel() == 0;
    args.y = Y.mutable_data<float>();
    args.ldy = N;
    args.lda = K;
    if (pre.data == nullptr || pre.data != B.raw_data()) {
      local_ = qgemm_pack_b(B.raw_data(), B.dtype() == DataType::kInt8, K, N, N);
      args.b = &local_;
    } else {
      args.b = &pre.packed;
    }
  }

  void finish(float a_scale, const QGemmArgs& base) {
    for (float& v : scale) v = a_scale * v;
    args.a = base.a;
    args.a_signed = base.a_signed;
    args.a_zero_point = base.a_zero_point;
    args.b_zero_points = b_zp.data();
    args.per_column_b_zero_points = true;
    args.scale = scale.data();
    args.per_column_scale = per_column_scale_;
  }

 private:
  bool per_column_scale_ = false;
  QGemmPackedB local_;  // B packed for this run when the kernel did not pack it
};

// A's fields of a DequantizeMatMul-like product: quantized here as
// DynamicQuantizeLinear does (uint8, its own scale and zero point) into the
// calling thread's shared scratch (read by every block), or 8-bit as given
// with a_scale (input 2) and a_zero_point (input 4). Returns A's scale.
float dequant_a(KernelContext& ctx, const Tensor& A, bool quantize, QGemmArgs& args) {
  if (quantize) {
    uint8_t* qa = reinterpret_cast<uint8_t*>(scratch_floats(kSharedScratchSlot, static_cast<size_t>(ceil_div(A.numel(), 4))));
    const DynamicQuantization q = dynamic_quantize_u8(A.data<float>(), A.numel(), qa, ctx.pool());
    args.a = qa;
    args.a_zero_point = q.zero_point;
    return q.scale;
  }
  const std::vector<float> sa = scales(ctx, 2, "a_scale", 1, "one value");
  args.a = A.raw_data();
  args.a_signed = A.dtype() == DataType::kInt8;
  args.a_zero_point = zero_points(ctx, 4, "a_zero_point", A.dtype(), 1, "one value")[0];
  return sa[0];
}

// com.microsoft DynamicQuantizeMatMul (A float, B, b_scale, b_zero_point?,
// bias?) and MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point?,
// b_zero_point?, bias?): the int32 product of the (quantized) A and B, then
//   Y = float(acc) * (a_scale * b_scale[j])  (+ bias[j])
// one float rounding at a time: what DynamicQuantizeLinear, MatMulInteger,
// Cast, Mul(a_scale, b_scale), Mul and Add compute, which the optimizer's
// DynamicQuantizeMatMulFusion turns into DynamicQuantizeMatMul. DynamicQuantizeMatMul
// quantizes A as DynamicQuantizeLinear does (uint8, its own scale and zero
// point). B is 2-D; a constant B is packed when the kernel is created.
class DequantizedMatMulKernel final : public OpKernel {
 public:
  DequantizedMatMulKernel(const NodeInfo& node, bool quantize_a)
      : quantize_a_(quantize_a), act_(activation_from_attrs(node)) {
    pre_.pack(node, 1);
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    if (quantize_a_) require_float(node, A, "A");
    else require_q8(node, A, "A");
    if (A.rank() < 1)
      fail(node, fmt::format("input A has shape {}: expected rank >= 1", shape_to_string(A.shape())));
    DequantProduct p;
    p.check(ctx, quantize_a_ ? kDynamicQuantizeInputs : kIntegerToFloatInputs, pre_, A.shape(), 0);
    if (p.empty) return;
    QGemmArgs base;
    p.finish(dequant_a(ctx, A, quantize_a_, base), base);
    const int64_t rows = shape_numel(Shape(A.shape().begin(), A.shape().end() - 1));
    parallel_qgemm(ctx.pool(), p.args, rows, p.N, &act_);
  }

 private:
  bool quantize_a_;
  Activation act_;  // fused by ActivationFusion (applied to each block)
  PrepackedB pre_;
};

// spindle.DynamicQuantizeMatMulGroup (MatMulSiblingFusion): the
// DynamicQuantizeMatMuls of one A (a dynamically quantized decoder's query /
// key / value projections, or its gate and up projections). Inputs A, then
// for member i: B_i, b_scale_i, b_zero_point_i, bias_i (the last two
// optional) at 1 + 4i..; attribute `activations` (one per member, "" for
// none: ActivationFusion's without parameters). A is quantized once; the
// members' blocks (each product's own, as parallel_qgemm chooses them) run
// in one parallel loop. Each output has the member node's bits.
class DynamicQuantizeMatMulGroupKernel final : public OpKernel {
 public:
  explicit DynamicQuantizeMatMulGroupKernel(const NodeInfo& node)
      : n_(node.num_outputs), pre_(static_cast<size_t>(n_)), acts_(static_cast<size_t>(n_)) {
    const std::vector<std::string> acts = node.attrs.get_strings("activations");
    if (n_ < 1 || static_cast<int>(acts.size()) != n_ || node.num_inputs < 3 + 4 * (n_ - 1) ||
        node.num_inputs > 1 + 4 * n_)
      fail(node, fmt::format("has {} inputs, {} outputs and {} activations: expected A, then B, b_scale, "
                             "b_zero_point and bias per output, and one activation each",
                             node.num_inputs, n_, acts.size()));
    for (int i = 0; i < n_; ++i) {
      pre_[static_cast<size_t>(i)].pack(node, 1 + 4 * i);
      NodeInfo one;
      one.op_type = node.op_type;
      one.name = node.name;
      if (!acts[static_cast<size_t>(i)].empty()) one.attrs.set("activation", acts[static_cast<size_t>(i)]);
      acts_[static_cast<size_t>(i)] = activation_from_attrs(one);
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    require_float(ctx.node(), A, "A");
    if (A.rank() < 1)
      fail(ctx.node(), fmt::format("input A has shape {}: expected rank >= 1", shape_to_string(A.shape())));
    std::vector<DequantProduct> products(static_cast<size_t>(n_));
    bool any = false;
    for (int i = 0; i < n_; ++i) {
      const int b = 1 + 4 * i;
      products[static_cast<size_t>(i)].check(ctx, DequantInputs{b, b + 1, b + 2, b + 3}, pre_[static_cast<size_t>(i)],
                                             A.shape(), i);
      any |= !products[static_cast<size_t>(i)].empty;
    }
    if (!any) return;
    QGemmArgs base;
    const float a_scale = dequant_a(ctx, A, true, base);
    const int64_t rows = shape_numel(Shape(A.shape().begin(), A.shape().end() - 1));
    std::vector<QGemmBlocks> geometry(static_cast<size_t>(n_));
    std::vector<int64_t> first(static_cast<size_t>(n_) + 1, 0);
    double cycles = 0;
    for (size_t i = 0; i < products.size(); ++i) {
      DequantProduct& p = products[i];
      p.finish(a_scale, base);
      if (!p.empty) {
        geometry[i] = qgemm_blocks(p.args, rows, p.N);
        cycles += cycles_of(geometry[i].blocks(), gemm_cost(geometry[i].mb, geometry[i].nb, std::max<int64_t>(p.args.b->k / 4, 1)));
      }
      first[i + 1] = first[i] + (p.empty ? 0 : geometry[i].blocks());
    }
    const int64_t blocks = first.back();
    parallel_for(ctx.pool(), 0, blocks, 1, Cost{0, 0, cycles / static_cast<double>(blocks)}, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        size_t i = products.size() - 1;
        while (blk < first[i]) --i;
        run_qgemm_block(products[i].args, geometry[i], rows, products[i].N, blk - first[i], &acts_[i]);
      }
    });
  }

 private:
  int n_;
  std::vector<PrepackedB> pre_;
  std::vector<Activation> acts_;
};

}  // namespace

void register_dequantized_matmul(KernelRegistry& r) {
  r.add("com.microsoft", "DynamicQuantizeMatMul", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<DequantizedMatMulKernel>(node, true);
  });
  r.add("com.microsoft", "MatMulIntegerToFloat", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<DequantizedMatMulKernel>(node, false);
  });
  r.add("spindle", "DynamicQuantizeMatMulGroup", 1, 1, factory_of<DynamicQuantizeMatMulGroupKernel>());
}

}  // namespace spindle::kernels::nn
