// conv_input_fusion.cpp — what a Conv reads, folded into it: a residual Add
// after it, a squeeze-excite Mul and a pre-activation BatchNormalization
// before it (forms a model cannot write itself: the loader accepts Conv with
// 2 or 3 inputs).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

// The Conv (index) that alone reads `value`, once and as its X, holding at
// most X, W, B and a fused residual (so an input folded in can follow them);
// -1 when there is none.
int conv_reading_only_as_x(const Graph& g, int value, const std::vector<bool>& dead) {
  const int c = single_consumer(g, value);
  if (c < 0 || dead[static_cast<size_t>(c)]) return -1;
  const Node& conv = g.nodes[static_cast<size_t>(c)];
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() > 4 ||
      conv.inputs.size() < 2 || conv.inputs[0] != value || std::count(conv.inputs.begin(), conv.inputs.end(), value) != 1)
    return -1;
  return c;
}

}  // namespace

// Residual connections: Add(conv_out, r) where conv_out is read by nothing
// else becomes Conv(x, W, B, r), the kernel adding r to each output block
// while it is in cache (before an activation fused later). A model cannot
// write this form itself: the loader accepts Conv with 2 or 3 inputs only.
// The kernel checks at run time that r has the output's shape (else it adds
// with broadcasting, as the Add would have).
void fuse_residual_adds(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (dead[i] || add.op_type != "Add" || !add.domain.empty() || add.opset < 7 || add.inputs.size() != 2 ||
        add.outputs.size() != 1 || add.inputs[0] < 0 || add.inputs[1] < 0 || add.inputs[0] == add.inputs[1])
      continue;
    for (int k = 0; k < 2; ++k) {
      const int c = g.producer(add.inputs[static_cast<size_t>(k)]);
      if (c < 0 || dead[static_cast<size_t>(c)] || single_consumer(g, add.inputs[static_cast<size_t>(k)]) != static_cast<int>(i))
        continue;
      Node& conv = g.nodes[static_cast<size_t>(c)];
      if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() > 3 ||
          conv.attrs.has("activation") || conv.attrs.has("activation_affine"))
        continue;
      const int residual = add.inputs[static_cast<size_t>(1 - k)];
      conv.inputs.resize(3, -1);
      conv.inputs.push_back(residual);
      conv.outputs[0] = add.outputs[0];
      g.reindex(c);
      dead[i] = true;
      ++record.count;
      break;
    }
  }
  g.compact(dead);
}

// Squeeze-excite scaling: Mul(x, s) whose output only a float Conv reads (as
// its X; the Conv holding at most X, W, B and a fused residual) becomes
// Conv(x, W, B, R, s): the kernel computes x * s itself, as the Mul would
// have (with broadcasting), and for a 1x1 convolution of one group with s
// of shape [1 or N, C, 1, 1] it multiplies each input channel as it packs
// the GEMM's B, so the Mul's pass over x disappears (the same products, the
// same bits). Runs after fuse_residual_adds, which wants at most 3 inputs,
// and after fuse_activations, so that an exported SiLU (x * Sigmoid(x)) has
// become its Conv's activation instead of a Mul folded into the next Conv.
// A model cannot write this form: the loader accepts Conv with 2 or 3 inputs.
void fuse_input_scales(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mul = g.nodes[i];
    if (dead[i] || mul.op_type != "Mul" || !mul.domain.empty() || mul.opset < 7 || mul.inputs.size() != 2 ||
        mul.outputs.size() != 1 || mul.inputs[0] < 0 || mul.inputs[1] < 0 || mul.inputs[0] == mul.inputs[1] ||
        g.is_graph_output(mul.outputs[0]))
      continue;
    const int c = conv_reading_only_as_x(g, mul.outputs[0], dead);
    if (c < 0) continue;
    Node& conv = g.nodes[static_cast<size_t>(c)];
    conv.inputs[0] = mul.inputs[0];
    conv.inputs.resize(4, -1);
    conv.inputs.push_back(mul.inputs[1]);
    g.reindex(c);
    dead[i] = true;
    ++record.count;
  }
  g.compact(dead);
}

// Pre-activation blocks (DenseNet's BatchNormalization -> Relu -> 1x1 Conv
// on each concatenation): an inference BatchNormalization with constant
// parameters, with no activation or a fused Relu, read only by a float Conv
// (as its X; the Conv holding at most X, W, B and a fused residual) becomes
// Conv(x, W, B, R, -, scale, B, mean, var) with attributes input_epsilon and
// input_activation. A one-group 1x1 convolution applies x * a + b (and the
// Relu) per input channel as the GEMM packs B, so the normalization's pass
// over x disappears; other shapes run the BatchNormalization kernel first.
// Same bits either way. Runs after fuse_activations (the Relu is then the
// BatchNormalization's) and after fuse_input_scales, whose fifth input it
// leaves empty. A model cannot write this form: the loader accepts Conv with
// 2 or 3 inputs.
void fuse_input_batchnorms(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    if (dead[i] || bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 ||
        bn.outputs.size() != 1 || bn.inputs[0] < 0 || g.is_graph_output(bn.outputs[0]) ||
        bn.attrs.get_int("training_mode", 0) != 0 || (bn.opset < 9 && bn.attrs.get_int("spatial", 1) == 0) ||
        bn.attrs.has("activation_affine"))
      continue;
    const std::string act = bn.attrs.get_string("activation", "");
    if (!act.empty() && act != "Relu") continue;
    bool constant = true;
    for (size_t k = 1; k < 5; ++k) {
      const Tensor* t = bn.inputs[k] >= 0 ? g.initializer(bn.inputs[k]) : nullptr;
      constant = constant && t && t->dtype() == DataType::kFloat32 && t->rank() == 1 &&
                 t->numel() == g.initializer(bn.inputs[1])->numel();
    }
    if (!constant) continue;
    const int c = conv_reading_only_as_x(g, bn.outputs[0], dead);
    if (c < 0) continue;
    Node& conv = g.nodes[static_cast<size_t>(c)];
    conv.inputs[0] = bn.inputs[0];
    conv.inputs.resize(5, -1);
    for (size_t k = 1; k < 5; ++k) conv.inputs.push_back(bn.inputs[k]);
    g.reindex(c);
    conv.attrs.set("input_epsilon", bn.attrs.get_float("epsilon", 1e-5f));
    if (!act.empty()) conv.attrs.set("input_activation", act);
    dead[i] = true;
    ++record.count;
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
