// qgemm.cpp — the 8-bit integer GEMM (qgemm.h): packing B into the
// micro-kernels' panels (qgemm_isa.h), the zero-point terms and the choice
// of the per-ISA kernels (qgemm.isa.cpp).
//
// The kernels multiply uint8 by int8. int8 A is read as a' = a + 128 (its
// bytes with the top bit flipped) with zero point za + 128; uint8 B is
// packed as b' = b - 128 (same flip) with zero points zb - 128 and column
// sums colsum - 128 K. Differences a' - za' and b' - zb' are the given ones,
// so C does not change:
//   C = dot(a', b') - zb'[j] * (rowsum(a')[i] - K za') - za' colsum(b')[j]
#include "primitives/gemm/qgemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "spindle/thread_pool.h"

#include "primitives/gemm/qgemm_isa.h"

namespace spindle::kernels::nn {

namespace {

using KernelFn = void (*)(const QGemmKernelArgs&);
using RowSumsFn = void (*)(const uint8_t*, int64_t, uint8_t, int64_t, int64_t, int32_t*);
using ColTermsFn = void (*)(const int32_t*, int64_t, uint32_t, uint32_t, int32_t*);

struct Level {
  KernelFn kernel;
  RowSumsFn row_sums;
  ColTermsFn col_terms;
  bool vnni;
  const char* name;
};

Level level_of(int level, bool vnni) {
#ifndef SPINDLE_ISA_BASELINE_ONLY
  switch (level) {
    case 2:
      return {&avx512::qgemm_kernel, &avx512::qgemm_row_sums, &avx512::qgemm_col_terms, vnni,
              vnni ? "avx512-vnni" : "avx512"};
    case 1: return {&avx2::qgemm_kernel, &avx2::qgemm_row_sums, &avx2::qgemm_col_terms, false, "avx2"};
    default: break;
  }
#endif
  (void)level;
  (void)vnni;
  return {&baseline::qgemm_kernel, &baseline::qgemm_row_sums, &baseline::qgemm_col_terms, false, "baseline"};
}

const Level& active_level() {
  static const Level level = [] {
    const IsaLevel l = active_isa_level();
    const int n = l == IsaLevel::kAvx512 ? 2 : l == IsaLevel::kAvx2 ? 1 : 0;
    return level_of(n, n == 2 && cpu_has_avx512_vnni());
  }();
  return level;
}

void run(const QGemmArgs& args, const Level& level);

// Indirect A the kernel does not read in place: its rows gathered into a
// buffer (m x K), then the plain call.
void run_gathered(const QGemmArgs& args, const Level& level) {
  const int64_t k = args.b->k, len = k / args.a_taps;
  thread_local std::vector<uint8_t> rows;
  rows.resize(static_cast<size_t>(args.m * k));
  for (int64_t i = 0; i < args.m; ++i)
    for (int64_t t = 0; t < args.a_taps; ++t)
      std::memcpy(rows.data() + i * k + t * len, args.a_rows[i * args.a_taps + t], static_cast<size_t>(len));
  QGemmArgs plain = args;
  plain.a_rows = nullptr;
  plain.a = rows.data();
  plain.lda = k;
  run(plain, level);
}

void run(const QGemmArgs& args, const Level& level) {
  const QGemmPackedB& b = *args.b;
  const int64_t k = b.k;
  const int64_t col_end = args.col_end < 0 ? b.n : args.col_end;
  const int64_t n = col_end - args.col_begin;
  if (args.m <= 0 || n <= 0) return;
  if (args.a_rows && (args.a_taps <= 0 || k % args.a_taps != 0))
    throw std::invalid_argument("qgemm: indirect A's K is not a multiple of its taps");
  // Indirect A goes to the kernels' tiles of 2 to 6 rows: one row alone is gathered.
  if (args.a_rows && args.m == 1) {
    run_gathered(args, level);
    return;
  }
  if (args.col_begin % b.panel_columns != 0 || col_end > b.n || args.col_begin < 0)
    throw std::invalid_argument("qgemm: column range does not start at a panel or ends past n");
  thread_local std::vector<int32_t> terms;
  terms.resize(static_cast<size_t>(args.m + 2 * n));
  int32_t* row_terms = terms.data();
  int32_t* col_terms = row_terms + args.m;
  int32_t* zb = col_terms + n;
  // Unsigned arithmetic: the sums wrap as int32 accumulators do.
  const uint32_t uk = static_cast<uint32_t>(k);
  const uint32_t za = static_cast<uint32_t>(args.a_zero_point + (args.a_signed ? 128 : 0));
  const int32_t zb_shift = b.b_signed ? 0 : 128;
  // Plain loops over arrays (vectorized): the zero points, whether one is
  // not 0 (for one value, that value), the column terms (at the ISA level:
  // a recurrence's step calls this for its one row).
  const int32_t* cs = b.column_sums.data() + args.col_begin;
  const uint32_t cs_shift = b.b_signed ? 0u : 128u * uk;
  bool any_zb = false;
  if (args.b_zero_points == nullptr || !args.per_column_b_zero_points) {
    const int32_t z = (args.b_zero_points == nullptr ? 0 : args.b_zero_points[0]) - zb_shift;
    any_zb = z != 0;
    std::fill(zb, zb + n, z);
  } else {
    const int32_t* bz = args.b_zero_points + args.col_begin;
    for (int64_t j = 0; j < n; ++j) zb[j] = bz[j] - zb_shift;
    int32_t zb_or = 0;
    for (int64_t j = 0; j < n; ++j) zb_or |= zb[j];
    any_zb = zb_or != 0;
  }
  level.col_terms(cs, n, za, cs_shift, col_terms);
  if (args.a_rows && (any_zb || !args.requant || !level.vnni || (k / args.a_taps) % 4 != 0)) {
    run_gathered(args, level);
    return;
  }
  // The row terms only meet B's zero points: int8 weights quantized
  // symmetrically (every zb 0) need no row sums of A.
  if (any_zb) {
    level.row_sums(static_cast<const uint8_t*>(args.a), args.lda, args.a_signed ? 0x80 : 0, args.m, k, row_terms);
    for (int64_t i = 0; i < args.m; ++i)
      row_terms[i] = static_cast<int32_t>(static_cast<uint32_t>(row_terms[i]) - uk * za);
  } else {
    std::fill(row_terms, row_terms + args.m, 0);
  }
  QGemmKernelArgs p;
  p.a = static_cast<const uint8_t*>(args.a);
  p.lda = args.lda;
  p.a_rows = args.a_rows;
  p.a_taps = args.a_taps;
  p.a_flip = args.a_signed ? 0x80 : 0;
  p.m = args.m;
  p.k = k;
  p.pb = reinterpret_cast<const int8_t*>(b.data.data()) + (args.col_begin / kQGemmPanel) * ((k + 3) / 4) * 64;
  p.n = n;
  p.row_terms = row_terms;
  p.col_terms = col_terms;
  p.zb = zb;
  p.c = args.c;
  p.ldc = args.ldc;
  if (args.y) {
    p.y = args.y;
    p.ldy = args.ldy;
    p.per_column_scale = args.per_column_scale;
    p.scale = args.per_column_scale ? args.scale + args.col_begin : args.scale;
    p.bias = args.bias ? args.bias + args.col_begin : nullptr;
  }
  RequantRow rq;
  if (args.requant) {  // the columns from col_begin on
    rq = *args.requant;
    rq.bias += args.col_begin;
    rq.scale += args.col_begin;
    p.requant = &rq;
    p.yq = static_cast<uint8_t*>(args.yq);
    p.ldyq = args.ldyq;
  }
  p.vnni = level.vnni;
  p.zb_any = any_zb;
  level.kernel(p);
}

}  // namespace

QGemmPackedB qgemm_pack_b(const void* b, bool b_signed, int64_t k, int64_t n, int64_t ldb, bool trans_b) {
  QGemmPackedB packed;
  packed.k = k;
  packed.n = n;
  packed.b_signed = b_signed;
  packed.panel_columns = kQGemmPanel;
  packed.column_sums.assign(static_cast<size_t>(n), 0);
  const int64_t groups = (k + 3) / 4, panels = (n + kQGemmPanel - 1) / kQGemmPanel;
  packed.data.assign(static_cast<size_t>(panels * groups * 64), 0);
  const uint8_t* src = static_cast<const uint8_t*>(b);
  const uint8_t flip = b_signed ? 0 : 0x80;
  for (int64_t j = 0; j < n; ++j) {
    uint8_t* panel = packed.data.data() + (j / kQGemmPanel) * groups * 64 + (j % kQGemmPanel) * 4;
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const uint8_t v = src[trans_b ? j * ldb + p : p * ldb + j];
      sum += b_signed ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
      panel[(p / 4) * 64 + (p % 4)] = static_cast<uint8_t>(v ^ flip);
    }
    packed.column_sums[static_cast<size_t>(j)] = sum;
  }
  return packed;
}

void qgemm(const QGemmArgs& args) { run(args, active_level()); }

DynamicQuantization dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, ThreadPool* pool) {
  static const auto min_max = SPINDLE_ISA_SELECT(quantize_min_max);
  static const auto quantize = SPINDLE_ISA_SELECT(quantize_u8);
  // Chunks of 16K values (64 KB): the first pass's ranges, one per chunk,
  // then their union.
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = pool != nullptr && n > kChunk ? (n + kChunk - 1) / kChunk : 1;
  Cost per_chunk;
  per_chunk.bytes_loaded = static_cast<double>(4 * std::min(n, kChunk));
  per_chunk.compute_cycles = static_cast<double>(std::min(n, kChunk)) / 4;
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  if (chunks == 1) {
    min_max(x, n, &lo, &hi);
  } else {
    std::vector<float> ranges(static_cast<size_t>(2 * chunks), 0.0f);
    parallel_for(pool, 0, chunks, 1, per_chunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        min_max(x + c * kChunk, std::min(kChunk, n - c * kChunk), &ranges[static_cast<size_t>(2 * c)],
                &ranges[static_cast<size_t>(2 * c + 1)]);
    });
    for (int64_t c = 0; c < chunks; ++c) {
      lo = std::min(lo, ranges[static_cast<size_t>(2 * c)]);
      hi = std::max(hi, ranges[static_cast<size_t>(2 * c + 1)]);
    }
  }
  DynamicQuantization q;
  q.scale = (hi - lo) / 255.0f;
  if (q.scale == 0.0f) {
    if (n > 0) std::memset(y, 0, static_cast<size_t>(n));  // y may be null when n is 0
    return q;
  }
  const float z = -lo / q.scale;  // NaN (an infinite range) -> 0
  q.zero_point = std::isnan(z) ? 0 : static_cast<uint8_t>(std::clamp(std::nearbyint(static_cast<double>(z)), 0.0, 255.0));
  const float zero = static_cast<float>(q.zero_point);
  if (chunks == 1) {
    quantize(x, n, q.scale, zero, y);
  } else {
    parallel_for(pool, 0, chunks, 1, per_chunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) quantize(x + c * kChunk, std::min(kChunk, n - c * kChunk), q.scale, zero, y + c * kChunk);
    });
  }
  return q;
}

const char* qgemm_kernel_name() { return active_level().name; }

bool qgemm_reads_indirect_a() { return active_level().vnni; }

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

void qgemm_at_level(const QGemmArgs& args, int level, bool vnni) { run(args, level_of(level, vnni)); }

}  // namespace spindle::kernels::nn
