// blocked_layout.cpp — the optimizer's layout rewrite at level "all": chains
// of convolutions run in the blocked channel layout NCHW8c, converted once
// at the chain's ends (kernels/nn/blocked.cpp holds the kernels).
//
// A blocked tensor of an NCHW tensor [N, C, H, W] (C a multiple of 8) has
// shape [N, C/8, H, W, 8]: the eight channels of a block sit side by side,
// so a depthwise tap is one aligned vector of eight channels and a 1x1
// convolution's broadcast of one input channel at one pixel feeds eight
// output channels at once, with no transposes inside the kernels. The
// conversions cost about as much as a depthwise layer, so they pay only
// when a whole chain stays blocked (docs/benchmarks.md, "A blocked channel
// layout, measured").
//
// Candidates (after the other fusions, so activations, residual Adds and
// squeeze-excite scales are already inputs and attributes of the Conv):
//   pointwise  Conv 1x1, no pads, one group, C and M multiples of 8
//              (strides 2: ResNet / RegNet projections);
//   depthwise  group == C == M (a multiple of 8), 3x3 or 5x5, each pad at
//              most kernel / 2;
//   grouped    3x3, groups of a multiple of 8 input and output channels
//              (RegNet), pads at most 1; also one group of fewer than 32
//              outputs (which NCHW's Winograd does not take);
//   stem       3x3, one group, at most 16 input channels that are not a
//              multiple of 8 (an image's 3), pads at most 1, no fused
//              residual or scale: it reads X in NCHW and writes its output
//              blocked (ONNX Runtime's NCHWc convolution does the same), so
//              a chain starting at a stem needs no conversion in;
// each with equal strides of 1 or 2,
// 2-D with dilations 1, no auto_pad, constant float weights, no fused
// input normalization (inputs 6-9), and a fused residual only when the
// residual is itself produced by a candidate or is the input of the
// candidate producing X (so it is blocked, of the output's shape). Candidates joined by a value one produces and another
// reads as X or residual form a chain. A chain is rewritten when it holds
// at least kMinChain convolutions and at most one conversion (into or out
// of the layout) per kConvsPerReorder of them: a GlobalAveragePool reading
// a blocked value becomes spindle.BlockedGlobalAveragePool (NCHW output,
// no conversion); any other reader, a graph output or a value read as the
// scale / weights of a Conv gets the NCHW tensor back from one
// spindle.ReorderFromBlocked per value. Models whose convolutions do not
// chain (ResNet's 3x3s between 1x1s) keep NCHW: there every 1x1 would pay
// two conversions.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

constexpr int64_t kBlock = 8;
constexpr int kMinChain = 3;
constexpr int kConvsPerReorder = 4;

std::vector<int64_t> ints_or(const Node& n, const char* name, std::vector<int64_t> def) {
  return n.attrs.has(name) ? n.attrs.get_ints(name) : def;
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

enum Kind { kNo = 0, kBlockedInput, kNchwInput, kOneGroup3x3 };

// Whether Conv node n (residual aside) can run as spindle.BlockedConv, and
// on which input layout.
Kind blockable_conv(const Graph& g, const Node& n) {
  if (n.op_type != "Conv" || !n.domain.empty() || n.inputs.size() < 2 || n.outputs.size() != 1) return kNo;
  for (size_t i = 5; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0) return kNo;  // fused input batch normalization
  if (n.inputs[0] < 0) return kNo;
  const Tensor* w = g.initializer(n.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->shape().size() != 4) return kNo;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor* b = g.initializer(n.inputs[2]);
    if (b && b->dtype() != DataType::kFloat32) return kNo;
  }
  if (n.attrs.has("auto_pad") && n.attrs.get_string("auto_pad") != "NOTSET") return kNo;
  const Shape& ws = w->shape();
  const int64_t M = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t group = n.attrs.has("group") ? n.attrs.get_int("group") : 1;
  const std::vector<int64_t> kernel = ints_or(n, "kernel_shape", {KH, KW});
  const std::vector<int64_t> strides = ints_or(n, "strides", {1, 1});
  const std::vector<int64_t> pads = ints_or(n, "pads", {0, 0, 0, 0});
  const std::vector<int64_t> dilations = ints_or(n, "dilations", {1, 1});
  if (kernel != std::vector<int64_t>{KH, KW} || strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 ||
      !all_equal(dilations, 1) || M <= 0 || M % kBlock != 0)
    return kNo;
  const bool stride_1_or_2 = strides[0] == strides[1] && (strides[0] == 1 || strides[0] == 2);
  auto pads_within = [&](int64_t most) {
    return std::all_of(pads.begin(), pads.end(), [most](int64_t p) { return p >= 0 && p <= most; });
  };
  auto kind_if = [](bool ok) { return ok ? kBlockedInput : kNo; };
  if (group == 1 && KH == 1 && KW == 1)
    return kind_if(Cg > 0 && Cg % kBlock == 0 && stride_1_or_2 && all_equal(pads, 0));
  if (group == M && Cg == 1 && KH == KW && (KH == 3 || KH == 5) && stride_1_or_2) return kind_if(pads_within(KH / 2));
  if (group > 1 && M % group == 0 && (M / group) % kBlock == 0 && Cg % kBlock == 0 && KH == 3 && KW == 3 &&
      stride_1_or_2)
    return kind_if(pads_within(1));
  // A 3x3 of one group with fewer than 32 outputs (PP-OCR det's 96 -> 24
  // head convolutions at 80x80): NCHW has no Winograd for it (>= 32 output
  // channels), and its im2col + GEMM of 24 rows ran at 29 GMAC/s; blocked,
  // it is the grouped kernel with one group.
  if (group == 1 && Cg % kBlock == 0 && M < 32 && KH == 3 && KW == 3 && stride_1_or_2)
    return pads_within(1) ? kOneGroup3x3 : kNo;
  // A stem: a 3x3 convolution of a few NCHW channels (images: 3) that
  // writes its output blocked, so the chain after it needs no conversion.
  const bool fused_extra = (n.inputs.size() > 3 && n.inputs[3] >= 0) || (n.inputs.size() > 4 && n.inputs[4] >= 0);
  if (group == 1 && Cg % kBlock != 0 && Cg <= 16 && KH == 3 && KW == 3 && stride_1_or_2 && pads_within(1) &&
      !fused_extra)
    return kNchwInput;
  return kNo;
}

// A malformed attribute (wrong type) leaves the node to the Conv kernel,
// which reports it.
Kind blockable(const Graph& g, const Node& n) {
  try {
    return blockable_conv(g, n);
  } catch (const std::exception&) {
    return kNo;
  }
}

int find_root(std::vector<int>& parent, int i) {
  while (parent[static_cast<size_t>(i)] != i) i = parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
  return i;
}

// The pass's steps over one graph. Who writes and reads a value comes from
// the graph's use index, asked before any node is rewritten (until then a
// candidate's inputs only swap places); each step is linear in the nodes.
class BlockedLayout {
 public:
  explicit BlockedLayout(Graph& g)
      : g_(g), nn_(static_cast<int>(g.nodes.size())), cand_(size(), false), stem_(size(), false),
        heavy_(size(), false), parent_(size()) {}

  void run(PassRecord& record) {
    find_candidates();
    orient_scales();
    drop_unfed_residuals();
    join_chains();
    count_chains();
    const std::vector<std::pair<int, int>> pools = pool_producers();
    for (auto& [root, c] : chains_)
      if (pays(c)) rewrite(c, record);
    convert_pools(pools);
    for (Node& r : added_) g_.nodes.push_back(std::move(r));
    if (record.count) g_.opsets.emplace("spindle", 1);
    if (conversions_) record.detail = fmt::format("{} reorders", conversions_);
  }

 private:
  struct Chain {
    int convs = 0;
    int heavy = 0;             // one-group 3x3s: each pays for two conversions alone
    std::vector<int> members;  // its candidates, in node order
    std::vector<int> entries;  // NCHW values converted into the layout
    std::vector<int> exits;    // blocked values converted back
  };

  size_t size() const { return static_cast<size_t>(nn_); }
  Node& node(int i) { return g_.nodes[static_cast<size_t>(i)]; }
  bool cand(int i) const { return cand_[static_cast<size_t>(i)]; }
  int producer(int v) const { return v < 0 ? -1 : g_.producer(v); }
  int input(int i, size_t slot) const {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    return slot < n.inputs.size() ? n.inputs[slot] : -1;
  }
  // The inputs a candidate reads blocked: X (but a stem's is NCHW) and the
  // residual.
  bool blocked_slot(int i, size_t slot) const { return slot == 3 || (slot == 0 && !stem_[static_cast<size_t>(i)]); }
  bool is_gap(int i) const {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    return n.op_type == "GlobalAveragePool" && n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1;
  }
  bool pooled(int v) const {
    const std::vector<int> r = g_.consumers(v);
    return std::any_of(r.begin(), r.end(), [this](int i) { return is_gap(i); });
  }
  int root(int i) { return find_root(parent_, i); }

  void find_candidates() {
    for (int i = 0; i < nn_; ++i) {
      const Kind k = blockable(g_, node(i));
      cand_[static_cast<size_t>(i)] = k != kNo;
      stem_[static_cast<size_t>(i)] = k == kNchwInput;
      heavy_[static_cast<size_t>(i)] = k == kOneGroup3x3;
    }
  }

  void orient_scales() {
    for (int i = 0; i < nn_; ++i) {
      if (!cand(i)) continue;
      Node& n = node(i);
      // A squeeze-excite's own 1x1 Convs (on the pooled [N, C, 1, 1]) are
      // matrix-vector products: they stay NCHW, off the chain.
      const int px = producer(n.inputs[0]);
      if (px >= 0 && is_gap(px)) {
        cand_[static_cast<size_t>(i)] = false;
        continue;
      }
      // A folded squeeze-excite Mul keeps its operands' order: Conv(s, W, B,
      // R, x) when the model wrote Mul(s, x). X * S is X times S either way:
      // the operand the squeeze-excite pools (the large one) becomes X, the
      // per-channel scale S (BlockedConv multiplies its weights or X by it,
      // whichever is smaller; the NCHW Conv, should the chain be rejected,
      // takes either order).
      const int s = input(i, 4);
      if (s >= 0 && pooled(s) && !pooled(n.inputs[0])) std::swap(n.inputs[0], n.inputs[4]);
    }
  }

  // A residual must come blocked from another candidate (its shape is then
  // the output's), or be the input of the candidate producing X (an
  // inverted-residual block right after a stem, MobileNetV3's first:
  // depthwise then 1x1 on the same plane, the residual the block's input,
  // converted once for both); drop other candidates with a residual, until
  // stable.
  void drop_unfed_residuals() {
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = 0; i < nn_; ++i) {
        const int r = input(i, 3);
        if (!cand(i) || r < 0) continue;
        const int p = producer(r);
        const int px = producer(input(i, 0));
        const bool from_chain = p >= 0 && cand(p);
        const bool block_input = px >= 0 && cand(px) && !stem_[static_cast<size_t>(px)] && input(px, 0) == r;
        if (!from_chain && !block_input) {
          cand_[static_cast<size_t>(i)] = false;
          changed = true;
        }
      }
    }
  }

  // Chains: candidates joined through X or the residual.
  void join_chains() {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (int i = 0; i < nn_; ++i) {
      if (!cand(i)) continue;
      for (size_t slot : {size_t{0}, size_t{3}}) {
        const int v = input(i, slot);
        if (v < 0 || !blocked_slot(i, slot)) continue;
        const int p = producer(v);
        if (p >= 0 && cand(p)) parent_[static_cast<size_t>(root(i))] = root(p);
      }
    }
  }

  bool blocked_use(int reader, size_t slot, int chain) {
    return cand(reader) && root(reader) == chain && blocked_slot(reader, slot);
  }
  // Whether value v (produced in `chain`) is needed in NCHW: read otherwise
  // than as a blocked X / residual or by a GlobalAveragePool, or an output.
  bool needs_nchw(int v, int chain) {
    if (g_.is_graph_output(v)) return true;
    for (int r : g_.consumers(v)) {
      const Node& n = node(r);
      for (size_t s = 0; s < n.inputs.size(); ++s)
        if (n.inputs[s] == v && !blocked_use(r, s, chain) && !is_gap(r)) return true;
    }
    return false;
  }

  // Each chain's convolutions and conversions.
  void count_chains() {
    for (int i = 0; i < nn_; ++i) {
      if (!cand(i)) continue;
      const int r = root(i);
      Chain& c = chains_[r];
      ++c.convs;
      c.members.push_back(i);
      if (heavy_[static_cast<size_t>(i)]) ++c.heavy;
      for (size_t slot : {size_t{0}, size_t{3}}) {
        const int x = input(i, slot);
        if (x < 0 || !blocked_slot(i, slot)) continue;
        const int px = producer(x);
        if ((px < 0 || !cand(px) || root(px) != r) && std::find(c.entries.begin(), c.entries.end(), x) == c.entries.end())
          c.entries.push_back(x);
      }
      const int y = node(i).outputs[0];
      if (y >= 0 && needs_nchw(y, r)) c.exits.push_back(y);
    }
  }

  static bool pays(const Chain& c) {
    const int reorders = static_cast<int>(c.entries.size() + c.exits.size());
    const bool long_enough = c.convs >= kMinChain && reorders * kConvsPerReorder <= c.convs;
    return long_enough || reorders <= 2 * c.heavy;
  }

  // Each pool's input's producer, asked before the chains are rewritten.
  std::vector<std::pair<int, int>> pool_producers() {
    std::vector<std::pair<int, int>> pools;  // (pool node, producer of its input)
    for (int i = 0; i < nn_; ++i)
      if (is_gap(i) && node(i).inputs[0] >= 0) pools.emplace_back(i, producer(node(i).inputs[0]));
    return pools;
  }

  void rewrite(const Chain& c, PassRecord& record) {
    for (int x : c.entries) {
      if (to_blocked_.count(x)) continue;
      to_blocked_[x] = fresh_value(g_, g_.value_name(x) + "/blocked");
      added_.push_back(reorder_node("ReorderToBlocked", g_.value_name(x) + "/ToBlocked", x, to_blocked_[x]));
      ++conversions_;
    }
    for (int i : c.members) {
      Node& n = node(i);
      const int y = n.outputs[0];
      const int yb = fresh_value(g_, g_.value_name(y) + "/blocked");
      to_blocked_[y] = yb;
      n.outputs[0] = yb;
      const bool exit = std::find(c.exits.begin(), c.exits.end(), y) != c.exits.end();
      // Readers of y: blocked uses and pools switch to yb (below, once all
      // outputs of the chain have their blocked copies); the rest keep y,
      // which a ReorderFromBlocked now produces.
      if (exit) {
        added_.push_back(reorder_node("ReorderFromBlocked", g_.value_name(y) + "/FromBlocked", yb, y));
        ++conversions_;
      }
      n.op_type = "BlockedConv";
      n.domain = "spindle";
      n.opset = 1;
      n.attrs.erase("auto_pad");
      ++record.count;
    }
    for (int i : c.members) {
      Node& n = node(i);
      for (size_t slot : {size_t{0}, size_t{3}})
        if (slot < n.inputs.size() && n.inputs[slot] >= 0 && blocked_slot(i, slot))
          n.inputs[slot] = to_blocked_.at(n.inputs[slot]);
    }
  }

  // Pools reading a blocked value read it in place.
  void convert_pools(const std::vector<std::pair<int, int>>& pools) {
    for (auto [i, p] : pools) {
      Node& n = node(i);
      if (p < 0 || node(p).op_type != "BlockedConv") continue;
      n.inputs[0] = to_blocked_.at(n.inputs[0]);
      n.op_type = "BlockedGlobalAveragePool";
      n.domain = "spindle";
      n.opset = 1;
    }
  }

  Graph& g_;
  const int nn_;
  std::vector<bool> cand_, stem_, heavy_;
  std::vector<int> parent_;  // union-find over candidates
  std::map<int, Chain> chains_;    // by root
  std::map<int, int> to_blocked_;  // NCHW value -> its blocked copy
  std::vector<Node> added_;
  int conversions_ = 0;  // reorder nodes added
};

}  // namespace

void use_blocked_layout(Graph& g, PassRecord& record) { BlockedLayout(g).run(record); }

}  // namespace spindle::graph::passes
