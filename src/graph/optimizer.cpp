// optimizer.cpp — the optimizer as a table of passes: each with its name
// (ONNX Runtime's where a pass does what its transformer of that name does),
// the lowest level that runs it and what it rewrites, run in table order.
// The passes are in src/graph/passes/, by family: folding, activation,
// Conv-input, pattern and attention fusions, the blocked layout. Weight
// pre-packing happens in the kernels, when they are created.
#include <algorithm>

#include <fmt/format.h>

#include "graph/graph.h"
#include "graph/passes/passes.h"

namespace spindle::graph {
namespace {

// What a pass may ask besides the graph: the load limits, and whether
// QDQFusion is to run (constant folding then leaves quantized weights for it).
struct PassContext {
  const LoadLimits& limits;
  bool qdq_fusion = false;
};

using Run = Status (*)(Graph&, PassRecord&, const PassContext&);

template <void (*F)(Graph&, PassRecord&)>
Status plain(Graph& g, PassRecord& record, const PassContext&) {
  F(g, record);
  return Status::ok();
}

Status fold(Graph& g, PassRecord& record, const PassContext& c) {
  return passes::fold_constants(g, record, c.limits, c.qdq_fusion);
}

Status qdq(Graph& g, PassRecord& record, const PassContext& c) {
  Status status = Status::ok();
  passes::fuse_qdq(g, record, c.limits, status);
  return status;
}

constexpr const char* kQdqFusion = "QDQFusion";

struct Pass {
  PassInfo info;
  Run run;
};

// The passes in the order they run. Each is linear in the node count (or
// n log n): the graph's use index answers who reads and writes a value, and
// removed nodes go in one compact() per pass. Order matters where a pass
// wants another's result (or its absence): fuse_residual_adds wants a Conv
// of at most 3 inputs; fuse_input_scales and fuse_input_batchnorms run after
// the activations are fused (an exported SiLU is then its Conv's
// activation, not a Mul folded into the next Conv).
const std::vector<Pass>& table() {
  using L = OptimizationLevel;
  static const std::vector<Pass> passes = {
      {{"ConstantFolding", L::kBasic, "nodes whose inputs are all constant, run once at load"}, fold},
      {{"EliminateIdentity", L::kBasic, "Identity, inference Dropout and Pad of zeros forward their input"},
       plain<passes::remove_identities>},
      {{kQdqFusion, L::kBasic,
        "QDQ node units as QLinearConv (+ Relu), QLinearAdd (+ Relu), QLinearGlobalAveragePool, QGemm; MaxPool and "
        "reshapes on the quantized tensors"},
       qdq},
      {{"QLinearLookupFusion", L::kBasic,
        "DequantizeLinear -> unary element-wise op -> QuantizeLinear as one 256-entry table lookup"},
       plain<passes::fuse_qdq_lookups>},
      {{"QLinearGateMulFusion", L::kBasic,
        "DequantizeLinear -> unary op -> Mul by a DequantizeLinear (squeeze-excite) -> QuantizeLinear as one "
        "spindle.QLinearGateMul; x * f(x) (SiLU) as one spindle.QLinearLookup"},
       plain<passes::fuse_qdq_gates>},
      {{"ConvBNFusion", L::kExtended, "Conv + constant BatchNormalization as one Conv"}, plain<passes::fold_batchnorms>},
      {{"ConvAffineFusion", L::kExtended, "Conv + constant per-channel Mul / Add folded into its weights and bias"},
       plain<passes::fold_conv_affine>},
      {{"HardSwishFusion", L::kExtended, "x * Clip(x + 3, 0, 6) / 6 as one HardSwish"}, plain<passes::fuse_hardswish>},
      {{"GeluFusion", L::kExtended, "x * 0.5 * (1 + Erf(x / sqrt 2)) as one Gelu"}, plain<passes::fuse_gelu>},
      {{"FastGeluFusion", L::kExtended, "GELU's tanh approximation, in any arrangement, as one Gelu (tanh)"},
       plain<passes::fuse_gelu_tanh>},
      {{"LayerNormFusion", L::kExtended, "exported layer normalization over the last axis as one LayerNormalization"},
       plain<passes::fuse_layer_norm>},
      {{"RMSNormFusion", L::kExtended, "exported RMS normalization over the last axis as one RMSNormalization"},
       plain<passes::fuse_rms_norm>},
      {{"RotaryFusion", L::kExtended,
        "rotary position embedding written with rotate_half (Slice, Neg, Concat, Mul, Add) as one spindle.RotaryHalf"},
       plain<passes::fuse_rotary_half>},
      {{"AttentionFusion", L::kExtended, "scaled dot-product attention as one spindle.FusedAttention, K / V heads repeated by Unsqueeze -> Expand -> "
        "Reshape read in place"},
       plain<passes::fuse_attention>},
      {{"ConvResidualAddFusion", L::kExtended, "Add(Conv(..), r) as Conv(.., r), r added per output block"},
       plain<passes::fuse_residual_adds>},
      {{"MatMulAddFusion", L::kExtended, "MatMul by constant weights + constant bias vector as one MatMul"},
       plain<passes::fuse_matmul_bias>},
      {{"MatMulBinaryFusion", L::kExtended,
        "MatMul by constant weights + Add / Mul of another tensor (a residual, SwiGLU's gate) as one MatMul"},
       plain<passes::fuse_matmul_binary>},
      {{"DynamicQuantizeMatMulFusion", L::kExtended,
        "DynamicQuantizeLinear + MatMulInteger (constant B) + Cast + Mul by the scales (+ constant bias Add) as one "
        "com.microsoft DynamicQuantizeMatMul"},
       plain<passes::fuse_dynamic_quantize_matmul>},
      {{"ActivationFusion", L::kExtended,
        "Conv / ConvTranspose / Gemm / MatMul / BatchNormalization + activation (+ scalar Mul / Add) as one node"},
       plain<passes::fuse_activations>},
      {{"MatMulSiblingFusion", L::kExtended,
        "MatMuls of one A by constant weights (a decoder's query / key / value projections) as one spindle.MatMulGroup; "
        "DynamicQuantizeMatMuls and MatMulNBits of one A likewise"},
       plain<passes::fuse_matmul_siblings>},
      {{"ConvInputScaleFusion", L::kExtended, "a squeeze-excite Mul read only by a Conv, applied by the Conv"},
       plain<passes::fuse_input_scales>},
      {{"ConvInputBatchNormFusion", L::kExtended, "a BatchNormalization (+ Relu) read only by a Conv, applied by the Conv"},
       plain<passes::fuse_input_batchnorms>},
      {{"CommonSubexpressionElimination", L::kExtended,
        "a node that computes what an earlier one does (same operator, attributes and inputs; small constants by "
        "content) removed, its readers reading the earlier one"},
       plain<passes::eliminate_common_subexpressions>},
      {{"NhwcTransformer", L::kAll,
        "chains of 8-bit QLinearConv / MaxPool / QLinearAdd / QLinearLookup / QLinearGateMul with their activations in "
        "NHWC"},
       plain<passes::use_nhwc_layout>},
      {{"NchwcTransformer", L::kAll, "chains of 1x1 / depthwise / grouped Convs in the blocked layout NCHW8c"},
       plain<passes::use_blocked_layout>},
  };
  return passes;
}

}  // namespace

const PassRecord* OptimizerStats::find(const std::string& name) const {
  for (const PassRecord& r : passes)
    if (r.name == name) return &r;
  return nullptr;
}

const std::vector<PassInfo>& optimizer_passes() {
  static const std::vector<PassInfo> infos = [] {
    std::vector<PassInfo> v;
    for (const Pass& p : table()) v.push_back(p.info);
    return v;
  }();
  return infos;
}

Status check_pass_names(const std::vector<std::string>& names, const std::string& key) {
  std::vector<std::string> unknown, known;
  for (const PassInfo& p : optimizer_passes()) known.push_back(p.name);
  for (const std::string& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end()) unknown.push_back(n);
  if (unknown.empty()) return Status::ok();
  return invalid_argument(fmt::format("{}: no optimizer pass is named {}; the passes are: {}", key,
                                      fmt::join(unknown, ", "), fmt::join(known, ", ")));
}

Result<OptimizerStats> optimize(Graph& g, OptimizationLevel level, const LoadLimits& limits,
                                const std::vector<std::string>& disabled) {
  SPINDLE_RETURN_IF_ERROR(check_pass_names(disabled, "disabled optimizers"));
  OptimizerStats stats;
  if (level == OptimizationLevel::kDisableAll) return stats;
  g.invalidate_uses();
  PassContext context{limits};
  context.qdq_fusion = std::find(disabled.begin(), disabled.end(), kQdqFusion) == disabled.end();
  for (const Pass& pass : table()) {
    if (level < pass.info.level ||
        std::find(disabled.begin(), disabled.end(), pass.info.name) != disabled.end())
      continue;
    SPINDLE_RETURN_IF_ERROR(limits.check("", pass.info.name));
    PassRecord record;
    record.name = pass.info.name;
    SPINDLE_RETURN_IF_ERROR(pass.run(g, record, context));
    stats.passes.push_back(std::move(record));
  }
  SPINDLE_RETURN_IF_ERROR(g.topological_sort());
  return stats;
}

}  // namespace spindle::graph
