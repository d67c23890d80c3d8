// passes.h — the optimizer's passes (src/graph/optimizer.cpp runs them from
// its table, in order, by level). Each rewrites the graph in place, counts
// its rewrites in `record` (and may add a detail), keeps the graph's use
// index current when it rewires a node in place (Graph::reindex), and
// removes what it replaced with one compact(): linear in the node count.
// Internal to the graph layer.
#pragma once

#include "graph/graph.h"

namespace spindle::graph::passes {

// folding.cpp. With keep_quantized_weights, a DequantizeLinear of a constant
// 8-bit or int32 tensor is left for QDQFusion (which folds what it leaves).
Status fold_constants(Graph& g, PassRecord& record, const LoadLimits& limits, bool keep_quantized_weights = false);
void remove_identities(Graph& g, PassRecord& record);
void fold_batchnorms(Graph& g, PassRecord& record);
void fold_conv_affine(Graph& g, PassRecord& record);
// activation_fusion.cpp
void fuse_hardswish(Graph& g, PassRecord& record);
void fuse_activations(Graph& g, PassRecord& record);
// conv_input_fusion.cpp
void fuse_residual_adds(Graph& g, PassRecord& record);
void fuse_input_scales(Graph& g, PassRecord& record);
void fuse_input_batchnorms(Graph& g, PassRecord& record);
// pattern_fusion.cpp
void fuse_gelu(Graph& g, PassRecord& record);
void fuse_gelu_tanh(Graph& g, PassRecord& record);
void fuse_layer_norm(Graph& g, PassRecord& record);
void fuse_rms_norm(Graph& g, PassRecord& record);
void fuse_matmul_bias(Graph& g, PassRecord& record);
void fuse_matmul_binary(Graph& g, PassRecord& record);
void fuse_matmul_siblings(Graph& g, PassRecord& record);
// qdq_fusion.cpp: QDQ node units as integer operators (QLinearConv,
// com.microsoft QLinearAdd / QLinearGlobalAveragePool / QGemm, MaxPool and
// reshapes on the quantized tensors); `status` takes constant folding's.
void fuse_qdq(Graph& g, PassRecord& record, const LoadLimits& limits, Status& status);
// DequantizeLinear -> unary element-wise op -> QuantizeLinear as one
// spindle.QLinearLookup with a 256-entry table (qdq_fusion.cpp).
void fuse_qdq_lookups(Graph& g, PassRecord& record);
// DequantizeLinear -> unary op -> Mul(., DequantizeLinear(x)) -> QuantizeLinear
// (a squeeze-excite scaling) as one spindle.QLinearGateMul (qdq_fusion.cpp).
void fuse_qdq_gates(Graph& g, PassRecord& record);
// attention_fusion.cpp
void fuse_attention(Graph& g, PassRecord& record);
// rotary_fusion.cpp: rotate_half rotary embeddings as one spindle.RotaryHalf
void fuse_rotary_half(Graph& g, PassRecord& record);
// quant_fusion.cpp
void fuse_dynamic_quantize_matmul(Graph& g, PassRecord& record);
// blocked_layout.cpp: chains of 1x1 and depthwise Convs become
// spindle.BlockedConv nodes on NCHW8c tensors, with spindle.ReorderToBlocked
// / ReorderFromBlocked at the chains' ends.
void use_blocked_layout(Graph& g, PassRecord& record);
// Chains of 8-bit QLinearConv / MaxPool / QLinearAdd / QLinearLookup /
// QLinearGateMul in NHWC (qdq_nhwc.cpp).
void use_nhwc_layout(Graph& g, PassRecord& record);
// cse.cpp: a node computing what an earlier one computes (same standard
// operator, attributes and inputs, small constants compared by content)
// reads as that one.
void eliminate_common_subexpressions(Graph& g, PassRecord& record);

}  // namespace spindle::graph::passes
