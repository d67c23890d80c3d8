// qdq_nhwc.cpp — the optimizer's NhwcTransformer (level "all"): chains of
// the 8-bit operators QDQFusion made keep their activations pixel-major
// ([N, H, W, C], NHWC) between them, converted once at the chain's borders
// (kernels/nn/nhwc_u8.cpp, kernels/nn/qlinear.cpp hold the kernels).
//
// QLinearConv on NCHW transposes its input to pixel-major order for the
// 8-bit GEMM and its output back to channel planes; in NHWC it reads and
// writes the pixels as they are. Members of a chain:
//   QLinearConv  2-D (constant rank-4 int8 / uint8 W), any X: becomes
//                spindle.QLinearConvNhwc (same inputs and attributes);
//   MaxPool      2-D, one output, its X produced by a member: becomes
//                spindle.MaxPoolNhwc;
//   QLinearAdd   (com.microsoft) both operands produced by members: it is
//                element-wise, and two rank-4 operands permuted alike
//                broadcast alike, so it stays as it is; when one operand
//                is a one-group QLinearConvNhwc's output that only it
//                reads, it is folded into that convolution
//                (fold_residual_adds);
//   QLinearLookup  (spindle, QLinearLookupFusion) its X produced by a
//                member: a byte-wise table lookup, any layout;
//   QLinearGateMul (spindle, QLinearGateMulFusion) X produced by a member
//                (rank 4, a QLinearConv's): becomes channels_last = 1, and
//                gate_channels_last = 1 when a member produces G too (else
//                G is read as it is); the kernel broadcasts G against X
//                as the NCHW op would (a squeeze-excite gate [N, C, 1, 1]
//                scales each pixel's channels).
//   float islands between them (DequantizeLinear -> BatchNormalization ->
//   Relu -> QuantizeLinear, the pre-activation of DenseNet's layers, and
//   the Concat of their features):
//   DequantizeLinear / QuantizeLinear (per-tensor), Relu  X produced by a
//                member: element-wise, they stay as they are;
//   BatchNormalization  (inference; no fused activation, or Relu /
//                LeakyRelu / Clip) X produced by a member: becomes
//                spindle.BatchNormalizationNhwc, the same per-element
//                arithmetic (a per-tensor QuantizeLinear, its one reader,
//                folded into it: it writes the 8-bit tensor; a per-tensor
//                DequantizeLinear of an 8-bit X folded in too: it reads
//                the 8-bit tensor);
//   QLinearConcat  (com.microsoft) rank 4, as Concat below: the axis
//                renumbered, its X operands in the layout;
//   Concat       rank 4 (one operand produced by a member): the axis
//                becomes its NHWC number (channels: 1 -> 3), operands from
//                elsewhere enter the layout (a float one as float);
//   Slice        (opset 10 on) constant axes, X produced by a member: the
//                axes renumbered;
//   channel shuffle  Reshape [N, g, C / g, H, W] -> Transpose (0, 2, 1, 3,
//                4) -> Reshape [N, C, H, W] (constant shapes), X produced
//                by a member: the Reshapes keep [N, H, W, C], the
//                Transpose becomes spindle.ChannelShuffleNhwc (group g);
//                when only Slices (and Shapes) read its result, the
//                shuffle, the Reshape after it and the Slices become one
//                spindle.ChannelShuffleSplitNhwc (fuse_shuffle_splits);
//   Shape        of a member's output, every reader a Gather (axis 0) of
//                constant indices: the indices renumbered (ShuffleNet's
//                split takes its bounds from the channel count).
//   An op of these (not QuantizeLinear) whose result no member reads is
//   not a member: the chain then leaves the layout before it.
// Members joined through their data inputs form a chain. A value entering
// a chain (a QLinearConv's X from elsewhere) gets one spindle.ToNhwc; a
// member's output read otherwise (by a float island's DequantizeLinear, a
// graph output) gets the NCHW tensor back from one spindle.FromNhwc. A
// com.microsoft.QLinearGlobalAveragePool reading a member's output reads it
// in place (channels_last = 1; its [N, 1, 1, C] output, the same bytes as
// [N, C, 1, 1], then takes a FromNhwc). A chain is rewritten when its
// conversions are at most two per QLinearConv plus one per MaxPool (a
// QLinearConv on NCHW transposes its input and output itself; a depthwise
// one does not, but its NHWC loop, vectorized over the channels, gains
// more than two byte transposes cost: MobileNetV3's, docs/benchmarks.md).
// The integer results are the same bits in either layout.
#include <algorithm>
#include <map>
#include <optional>
#include <numeric>

#include <fmt/format.h>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

enum Kind { kNo = 0, kConv, kAdd, kPool, kLookup, kGate, kElem, kBn, kConcat, kQConcat, kSlice, kShuffle, kShape };

bool is_q8(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }

bool scalar_const(const Graph& g, int v) {
  const Tensor* t = v < 0 ? nullptr : g.initializer(v);
  return t && t->numel() == 1;
}

// The values of a constant int64 / int32 tensor of at most 8 elements (not
// one a run may replace), or nothing.
std::optional<std::vector<int64_t>> const_ints(const Graph& g, int v) {
  const Tensor* t = v < 0 ? nullptr : g.initializer(v);
  if (!t || t->numel() > 8 || std::find(g.overridable.begin(), g.overridable.end(), v) != g.overridable.end())
    return std::nullopt;
  std::vector<int64_t> out;
  if (t->dtype() == DataType::kInt64) out = t->to_vector<int64_t>();
  else if (t->dtype() == DataType::kInt32)
    for (int32_t x : t->to_vector<int32_t>()) out.push_back(x);
  else return std::nullopt;
  return out;
}

// An axis of a rank-4 NCHW tensor (or -1 when out of range) in NHWC: 0, 1, 2, 3 -> 0, 3, 1, 2.
int64_t nhwc_axis(int64_t a) {
  if (a < -4 || a > 3) return -1;
  const int64_t nchw = a < 0 ? a + 4 : a;
  return nchw == 0 ? 0 : nchw == 1 ? 3 : nchw - 1;
}

bool axes_ok(const std::optional<std::vector<int64_t>>& axes) {
  return axes && std::all_of(axes->begin(), axes->end(), [](int64_t a) { return nhwc_axis(a) >= 0; });
}

// Shape whose every reader is a Gather (axis 0) of constant indices: it
// reads an NHWC tensor, its readers get the NHWC dimension numbers.
bool shape_of_dims(const Graph& g, const Node& n) {
  if (n.attrs.has("start") || n.attrs.has("end") || n.outputs.size() != 1) return false;
  const std::vector<int> readers = g.consumers(n.outputs[0]);
  if (readers.empty() || g.is_graph_output(n.outputs[0])) return false;
  for (int r : readers) {
    const Node& m = g.nodes[static_cast<size_t>(r)];
    if (m.op_type != "Gather" || !m.domain.empty() || m.inputs.size() != 2 || m.inputs[0] != n.outputs[0] ||
        m.attrs.get_int("axis", 0) != 0 || !axes_ok(const_ints(g, m.inputs[1])))
      return false;
  }
  return true;
}

// The float ops of an island between 8-bit chain members (DequantizeLinear
// -> BatchNormalization (+ Relu) -> QuantizeLinear, Concat along channels):
// element-wise or per-channel, so they run on the NHWC tensors as well.
Kind island_kind(const Graph& g, const Node& n) {
  if (!n.domain.empty()) return kNo;
  if (n.op_type == "Relu") return kElem;
  if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") {  // per-tensor
    if (n.inputs.size() < 2 || !scalar_const(g, n.inputs[1])) return kNo;
    return n.inputs.size() < 3 || n.inputs[2] < 0 || scalar_const(g, n.inputs[2]) ? kElem : kNo;
  }
  if (n.op_type == "Concat") {
    const int64_t a = n.attrs.get_int("axis", 99);
    return a >= -4 && a < 4 && n.outputs.size() == 1 ? kConcat : kNo;
  }
  if (n.op_type == "Slice")  // constant axes (opset 10 on)
    return n.opset >= 10 && n.inputs.size() >= 4 && axes_ok(const_ints(g, n.inputs[3])) ? kSlice : kNo;
  if (n.op_type == "Shape") return shape_of_dims(g, n) ? kShape : kNo;
  if (n.op_type == "BatchNormalization") {
    if (n.inputs.size() != 5 || n.attrs.get_int("training_mode", 0) != 0) return kNo;
    if (n.opset < 9 && n.attrs.get_int("spatial", 1) == 0) return kNo;
    const std::string act = n.attrs.get_string("activation", "");  // the exact ones, any order of the channels
    return act.empty() || act == "Relu" || act == "LeakyRelu" || act == "Clip" ? kBn : kNo;
  }
  return kNo;
}

Kind member_kind(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty() || n.inputs[0] < 0) return kNo;
  if (n.op_type == "QLinearConv" && n.domain.empty()) {
    if (n.inputs.size() < 8) return kNo;
    const Tensor* w = g.initializer(n.inputs[3]);
    return w && is_q8(w->dtype()) && w->rank() == 4 ? kConv : kNo;
  }
  if (n.op_type == "QLinearAdd" && n.domain == "com.microsoft")
    return n.inputs.size() >= 8 && n.inputs[3] >= 0 ? kAdd : kNo;
  if (n.op_type == "QLinearConcat" && n.domain == "com.microsoft") {
    const int64_t a = n.attrs.get_int("axis", 99);
    return n.inputs.size() >= 5 && n.inputs.size() % 3 == 2 && a >= -4 && a < 4 ? kQConcat : kNo;
  }
  if (n.op_type == "QLinearLookup" && n.domain == "spindle") return n.inputs.size() == 2 ? kLookup : kNo;
  if (n.op_type == "QLinearGateMul" && n.domain == "spindle")
    return n.inputs.size() >= 6 && n.inputs[3] >= 0 && n.attrs.get_int("channels_last", 0) == 0 ? kGate : kNo;
  if (n.op_type == "MaxPool" && n.domain.empty()) {
    if (!n.attrs.has("kernel_shape") || n.attrs.get_ints("kernel_shape").size() != 2) return kNo;
    return n.attrs.get_int("storage_order", 0) == 0 ? kPool : kNo;
  }
  return island_kind(g, n);
}

bool is_gap(const Node& n) {
  return n.op_type == "QLinearGlobalAveragePool" && n.domain == "com.microsoft" && n.outputs.size() == 1 &&
         n.attrs.get_int("channels_last", 0) == 0;
}

class NhwcLayout {
 public:
  explicit NhwcLayout(Graph& g)
      : g_(g), nn_(static_cast<int>(g.nodes.size())), kind_(size(), kNo), gate_nhwc_(size(), false), parent_(size()) {}

  void run(PassRecord& record) {
    for (int i = 0; i < nn_; ++i) kind_[static_cast<size_t>(i)] = member_kind(g_, node(i));
    for (int i = 0; i < nn_; ++i) mark_shuffle(i);
    drop_unfed();
    for (int i = 0; i < nn_; ++i)
      if (kind_[static_cast<size_t>(i)] == kGate) {
        const int p = producer(node(i).inputs[3]);
        gate_nhwc_[static_cast<size_t>(i)] = p >= 0 && member(p);
      }
    std::iota(parent_.begin(), parent_.end(), 0);
    for (int i = 0; i < nn_; ++i)
      for (size_t slot : data_slots(i)) {
        const int p = producer(node(i).inputs[slot]);
        if (p >= 0 && member(p)) parent_[static_cast<size_t>(root(i))] = root(p);
      }
    for (int i = 0; i < nn_; ++i)
      if (member(i)) count(i);
    std::vector<int> gaps;
    for (int i = 0; i < nn_; ++i)
      if (is_gap(node(i))) gaps.push_back(i);
    for (auto& [r, c] : chains_)
      if (static_cast<int>(c.entries.size() + c.exits.size()) <= 2 * c.convs + c.pools) rewrite(c, record);
    for (int i : gaps) convert_gap(i);
    for (Node& r : added_) g_.nodes.push_back(std::move(r));
    fold_quantize();
    fold_dequantize();
    if (record.count) g_.opsets.emplace("spindle", 1);
    if (conversions_) record.detail = fmt::format("{} conversions", conversions_);
    fuse_shuffle_splits(record);
    fold_residual_adds(record);
  }

 private:
  struct Chain {
    int convs = 0, pools = 0;  // QLinearConvs, MaxPools
    std::vector<int> members;
    std::vector<int> entries;  // NCHW values converted into the layout
    std::vector<int> exits;    // member outputs converted back
  };

  size_t size() const { return static_cast<size_t>(nn_); }
  Node& node(int i) { return g_.nodes[static_cast<size_t>(i)]; }
  bool member(int i) const { return kind_[static_cast<size_t>(i)] != kNo; }
  int producer(int v) const { return v < 0 ? -1 : g_.producer(v); }
  int root(int i) { return find_root(i); }
  int find_root(int i) {
    while (parent_[static_cast<size_t>(i)] != i)
      i = parent_[static_cast<size_t>(i)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(i)])];
    return i;
  }
  // The inputs a member reads in NHWC.
  std::vector<size_t> data_slots(int i) const {
    switch (kind_[static_cast<size_t>(i)]) {
      case kNo: return {};
      case kAdd: return {0, 3};
      case kConcat: {
        std::vector<size_t> all(node_inputs(i));
        std::iota(all.begin(), all.end(), size_t{0});
        return all;
      }
      case kQConcat: {  // (y_scale, y_zero_point, then X, x_scale, x_zero_point per input)
        std::vector<size_t> xs;
        for (size_t s = 2; s < node_inputs(i); s += 3) xs.push_back(s);
        return xs;
      }
      case kGate:  // G in NHWC when a member makes it, else read as it is
        if (gate_nhwc_[static_cast<size_t>(i)]) return {0, 3};
        return {0};
      default: return {0};
    }
  }

  // Reshape [N, g, C / g, H, W] -> Transpose (0, 2, 1, 3, 4) -> Reshape
  // [N, C, H, W] (ShuffleNet's channel shuffle, shapes constant): in NHWC
  // Reshape [N, H, W, C] -> spindle.ChannelShuffleNhwc (group g) -> Reshape
  // [N, H, W, C] (each pixel's channels permuted alike).
  void mark_shuffle(int t) {
    const Node& tr = node(t);
    if (tr.op_type != "Transpose" || !tr.domain.empty() || tr.inputs.size() != 1 || tr.outputs.size() != 1 ||
        tr.attrs.get_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4})
      return;
    const int r1 = producer(tr.inputs[0]);
    const std::vector<int> after = g_.consumers(tr.outputs[0]);
    if (r1 < 0 || after.size() != 1 || g_.is_graph_output(tr.outputs[0]) || g_.consumers(tr.inputs[0]).size() != 1 ||
        g_.is_graph_output(tr.inputs[0]))
      return;
    const int r2 = after[0];
    const auto s5 = reshape_to(r1, 5), s4 = reshape_to(r2, 4);
    if (!s5 || !s4 || node(r2).inputs[0] != tr.outputs[0]) return;
    if (std::any_of(s5->begin() + 1, s5->end(), [](int64_t d) { return d <= 0; })) return;
    if (std::any_of(s4->begin() + 1, s4->end(), [](int64_t d) { return d == 0; })) return;
    for (int i : {r1, t, r2}) kind_[static_cast<size_t>(i)] = kShuffle;
    shuffle_group_[t] = (*s5)[1];
  }
  // The constant target shape of Reshape node i when it has `rank` values.
  std::optional<std::vector<int64_t>> reshape_to(int i, size_t rank) {
    const Node& n = node(i);
    if (n.op_type != "Reshape" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 ||
        n.attrs.get_int("allowzero", 0) != 0)
      return std::nullopt;
    auto s = const_ints(g_, n.inputs[1]);
    if (!s || s->size() != rank) return std::nullopt;
    return s;
  }
  // A new int64 constant of `shape` holding `v`.
  int constant(const std::string& base, const Shape& shape, const std::vector<int64_t>& v) {
    const int id = fresh_value(g_, base);
    g_.initializers.emplace(id, Tensor::from_vector<int64_t>(shape, v));
    return id;
  }
  // The NHWC numbers of the constant axes in input `slot` of node i.
  void renumber_axes(int i, size_t slot) {
    Node& n = node(i);
    std::vector<int64_t> a = *const_ints(g_, n.inputs[slot]);
    for (int64_t& x : a) x = nhwc_axis(x);
    n.inputs[slot] = constant(g_.value_name(n.inputs[slot]) + "/nhwc", g_.initializer(n.inputs[slot])->shape(), a);
    g_.reindex(i);
  }
  void rewrite_layout_op(int i) {
    Node& n = node(i);
    const Kind k = kind_[static_cast<size_t>(i)];
    if (k == kSlice) renumber_axes(i, 3);
    if (k == kShape)
      for (int r : g_.consumers(n.outputs[0])) renumber_axes(r, 1);
    if (k != kShuffle) return;
    if (n.op_type == "Transpose") {
      n.op_type = "ChannelShuffleNhwc";
      n.domain = "spindle";
      n.opset = 1;
      n.attrs.erase("perm");
      n.attrs.set("group", shuffle_group_.at(i));
      return;
    }
    const std::vector<int64_t> s = *const_ints(g_, n.inputs[1]);
    const std::vector<int64_t> t = s.size() == 5 ? std::vector<int64_t>{s[0], s[3], s[4], s[1] * s[2]}
                                                 : std::vector<int64_t>{s[0], s[2], s[3], s[1]};
    n.inputs[1] = constant(g_.value_name(n.inputs[1]) + "/nhwc", Shape{static_cast<int64_t>(t.size())}, t);
    g_.reindex(i);
  }

  size_t node_inputs(int i) const { return g_.nodes[static_cast<size_t>(i)].inputs.size(); }
  bool fed(int i, size_t slot) {
    const int p = producer(node(i).inputs[slot]);
    return p >= 0 && member(p);
  }
  // Members other than QLinearConvs whose operands do not all come from
  // members (their rank and type unknown; a Concat: none of them) are not
  // members; nor float island ops whose result no member reads (it would
  // leave the layout as float, not as the 8-bit tensor before it); until
  // stable.
  void drop_unfed() {
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = 0; i < nn_; ++i) {
        const Kind k = kind_[static_cast<size_t>(i)];
        if (k == kNo || k == kConv) continue;
        const std::vector<size_t> slots = data_slots(i);
        const auto is_fed = [&](size_t s) { return fed(i, s); };
        const bool ok = k == kConcat || k == kQConcat ? std::any_of(slots.begin(), slots.end(), is_fed)
                                     : std::all_of(slots.begin(), slots.end(), is_fed);
        if (!ok || (float_island(i) && !read_by_member(node(i).outputs[0]))) {
          kind_[static_cast<size_t>(i)] = kNo;
          changed = true;
        }
      }
    }
  }
  bool float_island(int i) const {
    const Kind k = kind_[static_cast<size_t>(i)];
    return k == kBn || k == kConcat || k == kSlice || k == kShuffle ||
           (k == kElem && g_.nodes[static_cast<size_t>(i)].op_type != "QuantizeLinear");
  }
  bool read_by_member(int v) {
    for (int r : g_.consumers(v)) {
      if (is_gap(node(r)) && node(r).inputs[0] == v) return true;
      if (!member(r)) continue;
      for (size_t s : data_slots(r))
        if (node(r).inputs[s] == v) return true;
    }
    return false;
  }

  bool nhwc_use(int reader, size_t slot, int chain) {
    if (!member(reader) || root(reader) != chain) return false;
    const std::vector<size_t> s = data_slots(reader);
    return std::find(s.begin(), s.end(), slot) != s.end();
  }
  // Whether member output v of `chain` is needed in NCHW.
  bool needs_nchw(int v, int chain) {
    if (g_.is_graph_output(v)) return true;
    for (int r : g_.consumers(v)) {
      const Node& n = node(r);
      for (size_t s = 0; s < n.inputs.size(); ++s)
        if (n.inputs[s] == v && !nhwc_use(r, s, chain) && !(s == 0 && is_gap(n))) return true;
    }
    return false;
  }

  void count(int i) {
    const int r = root(i);
    Chain& c = chains_[r];
    c.members.push_back(i);
    const Kind k = kind_[static_cast<size_t>(i)];
    if (k == kConv) ++c.convs;
    if (k == kPool) ++c.pools;
    for (size_t slot : data_slots(i)) {
      const int x = node(i).inputs[slot];
      const int p = producer(x);
      if ((p < 0 || !member(p) || root(p) != r) && std::find(c.entries.begin(), c.entries.end(), x) == c.entries.end())
        c.entries.push_back(x);
    }
    const int y = node(i).outputs[0];
    if (k != kShape && needs_nchw(y, r)) c.exits.push_back(y);
  }

  void rewrite(const Chain& c, PassRecord& record) {
    for (int x : c.entries) {
      if (to_nhwc_.count(x)) continue;
      to_nhwc_[x] = fresh_value(g_, g_.value_name(x) + "/nhwc");
      added_.push_back(reorder_node("ToNhwc", g_.value_name(x) + "/ToNhwc", x, to_nhwc_[x]));
      ++conversions_;
    }
    for (int i : c.members) {
      rewrite_layout_op(i);
      Node& n = node(i);
      if (kind_[static_cast<size_t>(i)] == kShape) {  // its output is the same dimensions, renumbered
        ++record.count;
        continue;
      }
      const int y = n.outputs[0];
      const int yn = fresh_value(g_, g_.value_name(y) + "/nhwc");
      to_nhwc_[y] = yn;
      n.outputs[0] = yn;
      if (std::find(c.exits.begin(), c.exits.end(), y) != c.exits.end()) {
        added_.push_back(reorder_node("FromNhwc", g_.value_name(y) + "/FromNhwc", yn, y));
        ++conversions_;
      }
      const Kind k = kind_[static_cast<size_t>(i)];
      if (k == kConv || k == kPool) {
        n.op_type = k == kPool ? "MaxPoolNhwc" : "QLinearConvNhwc";
        n.domain = "spindle";
        n.opset = 1;
      }
      if (k == kBn) {
        n.op_type = "BatchNormalizationNhwc";
        n.domain = "spindle";
        n.opset = 1;
      }
      if (k == kConcat || k == kQConcat) {  // NCHW axis 0, 1, 2, 3 is NHWC axis 0, 3, 1, 2
        const int64_t a = n.attrs.get_int("axis", 1);
        const int64_t nchw = a < 0 ? a + 4 : a;
        n.attrs.set("axis", nchw == 0 ? int64_t{0} : nchw == 1 ? int64_t{3} : nchw - 1);
      }
      if (k == kGate) {
        n.attrs.set("channels_last", int64_t{1});
        n.attrs.set("gate_channels_last", int64_t{gate_nhwc_[static_cast<size_t>(i)] ? 1 : 0});
      }
      ++record.count;
    }
    for (int i : c.members) {
      Node& n = node(i);
      for (size_t slot : data_slots(i)) n.inputs[slot] = to_nhwc_.at(n.inputs[slot]);
    }
  }

  // A BatchNormalizationNhwc whose one reader is a per-tensor
  // QuantizeLinear writes the 8-bit values itself (inputs 5, 6: y_scale,
  // y_zero_point); the QuantizeLinear goes.
  void fold_quantize() {
    std::vector<bool> dead(g_.nodes.size(), false);
    bool any = false;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& bn = g_.nodes[i];
      if (bn.op_type != "BatchNormalizationNhwc" || bn.domain != "spindle" || bn.inputs.size() != 5) continue;
      const int y = bn.outputs[0];
      const std::vector<int> readers = g_.consumers(y, 1);
      if (readers.size() != 1 || g_.is_graph_output(y)) continue;
      const Node& q = g_.nodes[static_cast<size_t>(readers[0])];
      if (q.op_type != "QuantizeLinear" || island_kind(g_, q) != kElem || q.inputs[0] != y || q.outputs.size() != 1)
        continue;
      bn.inputs.push_back(q.inputs[1]);
      bn.inputs.push_back(q.inputs.size() > 2 ? q.inputs[2] : -1);
      bn.outputs[0] = q.outputs[0];
      dead[static_cast<size_t>(readers[0])] = true;
      any = true;
      g_.invalidate_uses();
    }
    if (any) g_.compact(dead);
  }

  // A BatchNormalizationNhwc reading a per-tensor DequantizeLinear of an
  // 8-bit tensor reads that tensor (x_scale, x_zero_point: inputs 7 and 8)
  // and dequantizes it a few rows at a time as the DequantizeLinear would
  // (DenseNet's pre-activations: the Concat's 8-bit output, 1 byte a value
  // read in place of 4); the DequantizeLinear goes when nothing else reads it.
  void fold_dequantize() {
    std::vector<bool> dead(g_.nodes.size(), false);
    bool any = false;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& bn = g_.nodes[i];
      if (bn.op_type != "BatchNormalizationNhwc" || bn.domain != "spindle" || bn.inputs.size() > 7) continue;
      const int d = producer(bn.inputs[0]);
      if (d < 0) continue;
      const Node& dq = g_.nodes[static_cast<size_t>(d)];
      if (dq.op_type != "DequantizeLinear" || island_kind(g_, dq) != kElem || dq.outputs.size() != 1) continue;
      // The zero point's type says X is 8-bit (without one it may be int32).
      const Tensor* z = dq.inputs.size() > 2 && dq.inputs[2] >= 0 ? g_.initializer(dq.inputs[2]) : nullptr;
      if (!z || !is_q8(z->dtype())) continue;
      bn.inputs.resize(7, -1);
      bn.inputs.push_back(dq.inputs[1]);
      bn.inputs.push_back(dq.inputs[2]);
      const int x = dq.outputs[0];
      bn.inputs[0] = dq.inputs[0];
      g_.invalidate_uses();
      if (g_.consumers(x).empty() && !g_.is_graph_output(x)) dead[static_cast<size_t>(d)] = true;
      any = true;
    }
    if (any) g_.compact(dead);
  }

  // ChannelShuffleNhwc -> Reshape back to its input's shape -> Slices (the
  // split that starts ShuffleNet's next unit; any Shape of the shuffled
  // tensor reads the unshuffled one, of the same shape): one
  // spindle.ChannelShuffleSplitNhwc writing each Slice's channels from the
  // unshuffled tensor, one pass instead of two.
  void fuse_shuffle_splits(PassRecord& record) {
    std::vector<bool> dead(g_.nodes.size(), false);
    int fused = 0;
    for (size_t t = 0; t < g_.nodes.size(); ++t) {
      const Node& sh = g_.nodes[t];
      if (sh.op_type != "ChannelShuffleNhwc" || sh.domain != "spindle" || sh.inputs.size() != 1 ||
          sh.outputs.size() != 1 || g_.is_graph_output(sh.outputs[0]))
        continue;
      const int r1 = producer(sh.inputs[0]);
      const std::vector<int> after = g_.consumers(sh.outputs[0]);
      if (r1 < 0 || after.size() != 1) continue;
      const int r2 = after[0];
      const auto a = reshape_to(r1, 4), b = reshape_to(r2, 4);
      if (!a || !b || node(r2).inputs[0] != sh.outputs[0] || !same_target(*a, *b)) continue;
      const int x3 = node(r2).outputs[0];
      if (g_.is_graph_output(x3)) continue;
      std::vector<int> slices, shapes;
      bool ok = true;
      for (int r : g_.consumers(x3)) {
        const Node& m = node(r);
        const bool data_only = std::count(m.inputs.begin(), m.inputs.end(), x3) == 1 && m.inputs[0] == x3;
        if (m.domain.empty() && m.op_type == "Slice" && m.opset >= 10 && m.inputs.size() >= 4 &&
            m.inputs.size() <= 5 && m.inputs[1] >= 0 && m.inputs[2] >= 0 && m.inputs[3] >= 0 &&
            m.outputs.size() == 1 && data_only)
          slices.push_back(r);
        else if (m.domain.empty() && m.op_type == "Shape" && m.inputs.size() == 1 && data_only)
          shapes.push_back(r);
        else ok = false;
      }
      if (!ok || slices.empty()) continue;
      const int x1 = sh.inputs[0];
      for (int s : shapes) {
        node(s).inputs[0] = x1;
        g_.reindex(s);
      }
      Node f;
      f.name = sh.name.empty() ? g_.value_name(x3) + "/ChannelShuffleSplitNhwc" : sh.name + "/Split";
      f.op_type = "ChannelShuffleSplitNhwc";
      f.domain = "spindle";
      f.opset = 1;
      f.attrs.set("group", sh.attrs.get_int("group", 0));
      f.inputs = {x1};
      for (int s : slices) {
        const Node& m = node(s);
        for (size_t k = 1; k <= 4; ++k) f.inputs.push_back(k < m.inputs.size() ? m.inputs[k] : -1);
        f.outputs.push_back(m.outputs[0]);
        dead[static_cast<size_t>(s)] = true;
      }
      dead[static_cast<size_t>(r2)] = true;
      g_.nodes[t] = std::move(f);
      g_.reindex(static_cast<int>(t));
      ++fused;
    }
    if (!fused) return;
    g_.compact(dead);
    record.detail += fmt::format("{}{} shuffle splits", record.detail.empty() ? "" : ", ", fused);
  }
  // A QLinearAdd (an NHWC chain member: both operands members) one of
  // whose operands only it reads, made by a QLinearConvNhwc of one group: the Add folded
  // into the convolution (kernels/nn/qlinear_residual.h), which then writes
  // the Add's output (ResNet's residual Add after the block's last
  // convolution; the other operand, R, must be ready before the
  // convolution runs: the final topological sort orders it).
  void fold_residual_adds(PassRecord& record) {
    std::vector<bool> dead(g_.nodes.size(), false);
    int folded = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& add = g_.nodes[i];
      if (add.op_type != "QLinearAdd" || add.domain != "com.microsoft" || add.inputs.size() < 7 ||
          add.inputs.size() > 8 || add.outputs.size() != 1 || add.inputs[0] < 0 || add.inputs[3] < 0 ||
          add.inputs[0] == add.inputs[3])
        continue;
      const std::string act = add.attrs.get_string("activation", "");
      if (!act.empty() && act != "Relu") continue;
      for (int operand : {0, 1}) {
        const int v = add.inputs[operand == 0 ? 0 : 3];
        const int c = producer(v);
        if (c < 0 || dead[static_cast<size_t>(c)] || g_.is_graph_output(v) || g_.consumers(v).size() != 1) continue;
        Node& conv = node(c);
        // One group: the GEMM path, which adds each block as it is made (a
        // depthwise or grouped convolution would write its whole output,
        // then run the Add: nothing saved).
        if (conv.op_type != "QLinearConvNhwc" || conv.domain != "spindle" || conv.inputs.size() < 8 ||
            conv.inputs.size() > 9 || conv.outputs.size() != 1 || conv.attrs.get_int("group", 1) != 1)
          continue;
        const auto in = [&](size_t k) { return k < add.inputs.size() ? add.inputs[k] : -1; };
        const int r = operand == 0 ? 3 : 0;
        conv.inputs.resize(9, -1);
        for (int k : {in(static_cast<size_t>(r)), in(operand == 0 ? 1 : 4), in(operand == 0 ? 2 : 5),
                      in(static_cast<size_t>(r) + 1), in(static_cast<size_t>(r) + 2), in(6), in(7)})
          conv.inputs.push_back(k);
        conv.attrs.set("add_conv_operand", int64_t{operand});
        if (!act.empty()) conv.attrs.set("add_activation", act);
        conv.outputs[0] = add.outputs[0];
        dead[i] = true;
        g_.invalidate_uses();
        ++folded;
        break;
      }
    }
    if (!folded) return;
    g_.compact(dead);
    record.detail += fmt::format("{}{} residual adds", record.detail.empty() ? "" : ", ", folded);
  }

  // Whether Reshape targets a (before the shuffle) and b (after it) give
  // the same shape for every input a gives a shape to: equal, or b's last
  // dimension -1 (inferred, the same size) with its first known.
  static bool same_target(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    if (a[1] <= 0 || a[2] <= 0 || a[3] <= 0 || a[0] != b[0] || a[1] != b[1] || a[2] != b[2]) return false;
    return b[3] == a[3] || (b[3] == -1 && b[0] != -1);
  }

  // A pool reading a member's (now NHWC) output reads it in place.
  void convert_gap(int i) {
    Node& n = node(i);
    const auto it = to_nhwc_.find(n.inputs[0]);
    if (it == to_nhwc_.end()) return;
    n.inputs[0] = it->second;
    n.attrs.set("channels_last", int64_t{1});
    const int y = n.outputs[0];
    const int yn = fresh_value(g_, g_.value_name(y) + "/nhwc");
    n.outputs[0] = yn;
    added_.push_back(reorder_node("FromNhwc", g_.value_name(y) + "/FromNhwc", yn, y));
  }

  Graph& g_;
  const int nn_;
  std::vector<Kind> kind_;
  std::vector<bool> gate_nhwc_;     // a QLinearGateMul's G made by a member
  std::vector<int> parent_;         // union-find over members
  std::map<int, Chain> chains_;     // by root
  std::map<int, int> to_nhwc_;      // NCHW value -> its NHWC copy
  std::map<int, int64_t> shuffle_group_;  // a channel shuffle's Transpose -> its groups
  std::vector<Node> added_;
  int conversions_ = 0;
};

}  // namespace

void use_nhwc_layout(Graph& g, PassRecord& record) { NhwcLayout(g).run(record); }

}  // namespace spindle::graph::passes
