// sgemm.cpp — the cache-blocked SGEMM driver and PackedMatrix (sgemm.h) over
// the active ISA level's micro-kernel and packing (sgemm.isa.cpp).
#include "primitives/gemm/sgemm.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "primitives/gemm/packing_scope.h"
#include "primitives/gemm/sgemm_isa.h"
#include "primitives/scratch.h"
#include "spindle/status.h"
#include "spindle/tensor.h"  // checked_mul

namespace spindle::kernels::nn {

namespace {

const auto geometry_fn = SPINDLE_ISA_SELECT(sgemm_geometry);
const auto block_fn = SPINDLE_ISA_SELECT(sgemm_block);
const auto taps_block_fn = SPINDLE_ISA_SELECT(sgemm_taps_block);
const auto pack_a_fn = SPINDLE_ISA_SELECT(sgemm_pack_a);
const auto pack_b_fn = SPINDLE_ISA_SELECT(sgemm_pack_b);

const SgemmGeometry& geometry() {
  static const SgemmGeometry g = geometry_fn();
  return g;
}

// Rows of A per cache block: the packed A block (mc x kc) stays in L2 while
// the B panels stream past it. Columns per block: the packed B block
// (kc x nc) stays in L3 / the outer L2.
constexpr int64_t kMC = 168;  // a multiple of 4, 6 and 12 (every MR)
constexpr int64_t kNC = 1024;

// The k blocks of a reduction of length K: ceil(K / kSgemmKC) blocks of
// (almost) equal size, from K alone.
int64_t k_block(int64_t K) {
  const int64_t nk = ceil_div(K, kSgemmKC);
  return ceil_div(K, nk);
}

}  // namespace

int64_t sgemm_mr() { return geometry().mr; }
int64_t sgemm_nr() { return geometry().nr; }

namespace {
std::shared_ptr<float> alloc_panels(size_t n) {
  const size_t bytes = std::max<size_t>(round_up(static_cast<int64_t>(n * sizeof(float)), 64), 64);
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p)
    throw Error(StatusCode::kResourceExhausted, fmt::format("cannot allocate {} bytes for pre-packed weights", bytes));
  return std::shared_ptr<float>(p, [](float* q) { std::free(q); });
}
}  // namespace

namespace {
thread_local PackingScope* current_scope = nullptr;
}  // namespace

PackingScope::PackingScope() : previous_(current_scope) { current_scope = this; }
PackingScope::~PackingScope() { current_scope = previous_; }
PackingScope* PackingScope::current() { return current_scope; }

void PackingScope::remove_source(const void* data) {
  sources_.erase(data);
  for (auto it = packed_.lower_bound(Key{data, 0, false, 0, 0, 0, 0, 0, 0});
       it != packed_.end() && std::get<0>(it->first) == data;)
    it = packed_.erase(it);
}

const PackedMatrix* PackingScope::find(const Key& key) const {
  auto it = packed_.find(key);
  return it == packed_.end() ? nullptr : &it->second;
}

void PackingScope::remember(const Key& key, const PackedMatrix& packed) {
  if (sources_.count(std::get<0>(key))) packed_.emplace(key, packed);
}

PackedMatrix PackedMatrix::pack_a(bool trans, int64_t m, int64_t K, float alpha, const float* a, int64_t lda,
                                  int64_t groups, int64_t group_offset) {
  PackingScope* scope = PackingScope::current();
  const PackingScope::Key key{a, 'a', trans, m, K, std::bit_cast<uint32_t>(alpha), lda, groups, group_offset};
  if (scope)
    if (const PackedMatrix* done = scope->find(key)) return *done;
  const int64_t tile = sgemm_mr(), stride = round_up(m, tile) * K;
  PackedMatrix pm = pack_a_filled(m, K, groups, [&](float* panels) {
    for (int64_t g = 0; g < groups; ++g)
      pack_a_fn(trans, m, 0, K, alpha, a + g * group_offset, lda, panels + g * stride, K * tile);
  });
  if (scope) scope->remember(key, pm);
  return pm;
}

PackedMatrix PackedMatrix::pack_a_filled(int64_t m, int64_t K, int64_t groups, const std::function<void(float*)>& fill) {
  PackedMatrix pm;
  pm.k_ = K;
  pm.tile_ = sgemm_mr();
  pm.group_stride_ = round_up(m, pm.tile_) * K;
  const std::optional<int64_t> size = checked_mul(pm.group_stride_, groups);
  if (!size)
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("pre-packed weights of {} groups x {} x {} floats overflow int64", groups, m, K));
  pm.size_ = static_cast<size_t>(*size);
  pm.data_ = alloc_panels(pm.size_);
  fill(pm.data_.get());
  return pm;
}

PackedMatrix PackedMatrix::pack_b(bool trans, int64_t n, int64_t K, const float* b, int64_t ldb) {
  PackingScope* scope = PackingScope::current();
  const PackingScope::Key key{b, 'b', trans, n, K, 0, ldb, 1, 0};
  if (scope)
    if (const PackedMatrix* done = scope->find(key)) return *done;
  PackedMatrix pm;
  pm.k_ = K;
  pm.tile_ = sgemm_nr();
  pm.group_stride_ = round_up(n, pm.tile_) * K;
  pm.size_ = static_cast<size_t>(pm.group_stride_);
  pm.data_ = alloc_panels(pm.size_);
  pack_b_fn(trans, n, 0, K, b, ldb, pm.data_.get(), K * pm.tile_, nullptr);
  if (scope) scope->remember(key, pm);
  return pm;
}

namespace {

// Relu, Clip, HardSigmoid and HardSwish run in the micro-kernel's store
// (StoreAct); other activations, and any with a scalar affine after it,
// take a pass.
StoreAct store_act(const Activation* act) {
  if (!act || act->affine) return StoreAct::kNone;
  switch (act->kind) {
    case Activation::kRelu:
    case Activation::kClip:
      return StoreAct::kClamp;
    case Activation::kHardSigmoid:
      return StoreAct::kHardSigmoid;
    case Activation::kHardSwish:
      return StoreAct::kHardSwish;
    default:
      return StoreAct::kNone;
  }
}
template <class Block>
void set_store_act(const Activation& act, StoreAct kind, Block& blk) {
  blk.act = kind;
  switch (kind) {
    case StoreAct::kClamp:
      blk.lo = act.kind == Activation::kRelu ? 0.0f : act.a;
      blk.hi = act.kind == Activation::kRelu ? std::numeric_limits<float>::infinity() : act.b;
      break;
    case StoreAct::kHardSigmoid:
      blk.lo = act.a, blk.hi = act.b;
      break;
    case StoreAct::kHardSwish:
      blk.lo = 1.0f / 6.0f, blk.hi = 0.5f;
      break;
    case StoreAct::kNone:
      break;
  }
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const SgemmExtras& x) {
  if (m <= 0 || n <= 0) return;
  const int64_t MR = geometry().mr, NR = geometry().nr;
  if (beta != 0.0f && beta != 1.0f)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= beta;
  if (K <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      const float v = x.row_bias ? x.row_bias[i] : 0.0f;
      if (beta == 0.0f) std::fill(row, row + n, v);
      else if (x.row_bias) for (int64_t j = 0; j < n; ++j) row[j] += v;
      if (x.residual)
        for (int64_t j = 0; j < n; ++j) row[j] += x.residual[i * ldc + j];
      if (x.act) x.act->apply(row, n);
    }
    return;
  }
  // Relu, Clip, HardSigmoid and HardSwish are applied by the micro-kernel
  // as it stores the last k block; other activations take a pass over each
  // finished row.
  const StoreAct at_store = store_act(x.act);
  const Activation* act_pass = at_store != StoreAct::kNone ? nullptr : x.act;
  const int64_t kcb = k_block(K);
  const int64_t mc_max = std::min(kMC, round_up(m, MR)), nc_max = std::min(kNC, round_up(n, NR));
  float* buf_b = x.packed_b ? nullptr : scratch_floats(3, static_cast<size_t>(kcb * nc_max));
  float* buf_a = x.packed_a ? nullptr : scratch_floats(4, static_cast<size_t>(kcb * mc_max));
  for (int64_t jc = 0; jc < n; jc += kNC) {
    const int64_t nc = std::min(kNC, n - jc);
    for (int64_t pc = 0; pc < K; pc += kcb) {
      const int64_t kc = std::min(kcb, K - pc);
      const bool last_k = pc + kc == K;
      SgemmBlock blk{};
      blk.kc = kc;
      blk.n = nc;
      blk.ldc = ldc;
      blk.accumulate = pc > 0 || beta != 0.0f;
      blk.b_ahead = x.packed_b != nullptr && x.b_constant;
      if (x.packed_b) {
        const int64_t bk = x.packed_b_k > 0 ? x.packed_b_k : K;
        blk.pb = x.packed_b + (jc / NR) * bk * NR + pc * NR;
        blk.pb_stride = bk * NR;
      } else {
        pack_b_fn(trans_b, nc, pc, kc, trans_b ? b + jc * ldb : b + jc, ldb, buf_b, kc * NR, &x.b_rows);
        blk.pb = buf_b;
        blk.pb_stride = kc * NR;
      }
      for (int64_t ic = 0; ic < m; ic += kMC) {
        const int64_t mc = std::min(kMC, m - ic);
        if (x.packed_a) {
          blk.pa = x.packed_a + (ic / MR) * K * MR + pc * MR;
          blk.pa_stride = K * MR;
        } else {
          pack_a_fn(trans_a, mc, pc, kc, alpha, trans_a ? a + ic : a + ic * lda, lda, buf_a, kc * MR);
          blk.pa = buf_a;
          blk.pa_stride = kc * MR;
        }
        blk.m = mc;
        blk.c = c + ic * ldc + jc;
        blk.row_bias = pc == 0 && x.row_bias && beta == 0.0f ? x.row_bias + ic : nullptr;
        blk.res = last_k && x.residual ? x.residual + ic * ldc + jc : nullptr;
        if (last_k && at_store != StoreAct::kNone) set_store_act(*x.act, at_store, blk);
        block_fn(blk);
        if (last_k && act_pass)
          for (int64_t i = 0; i < mc; ++i) act_pass->apply(blk.c + i * ldc, nc);
      }
    }
  }
}

void sgemm_pack_a_panels(bool trans, int64_t m, int64_t K, float alpha, const float* a, int64_t lda, int64_t p0,
                         int64_t p1, float* dst) {
  const int64_t MR = geometry().mr;
  const int64_t r0 = p0 * MR, r1 = std::min(m, p1 * MR);
  if (r0 >= r1) return;
  pack_a_fn(trans, r1 - r0, 0, K, alpha, trans ? a + r0 : a + r0 * lda, lda, dst + p0 * K * MR, K * MR);
}

void sgemm_pack_b(bool trans, int64_t n, int64_t K, const float* b, int64_t ldb, float* dst) {
  if (n > 0 && K > 0) pack_b_fn(trans, n, 0, K, b, ldb, dst, K * geometry().nr, nullptr);
}

void sgemm_pack_b_rows(int64_t n, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* dst, int64_t dst_stride,
                       const SgemmRowAffine& rows) {
  if (n > 0 && kc > 0) pack_b_fn(false, n, k0, kc, b, ldb, dst, dst_stride, &rows);
}

void sgemm_taps(int64_t m, int64_t n, int64_t K, const float* packed_a, const float* const* taps,
                const float* row_bias, float* c, int64_t ldc, const float* residual, const Activation* act) {
  if (m <= 0 || n <= 0) return;
  if (K > kSgemmKC)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("sgemm_taps: a reduction of {} exceeds one k block ({})", K, kSgemmKC));
  SgemmTapsBlock blk{m, n, K, packed_a, K * geometry().mr, taps, c, ldc, row_bias};
  blk.res = residual;
  const StoreAct at_store = store_act(act);
  if (at_store != StoreAct::kNone) set_store_act(*act, at_store, blk);
  taps_block_fn(blk);
  if (act && at_store == StoreAct::kNone)
    for (int64_t i = 0; i < m; ++i) act->apply(c + i * ldc, n);
}

}  // namespace spindle::kernels::nn
