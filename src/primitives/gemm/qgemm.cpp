// qgemm.cpp — the 8-bit integer GEMM (qgemm.h): packing and the portable
// driver.
#include "primitives/gemm/qgemm.h"

#include <algorithm>
#include <cstring>

namespace spindle::kernels::nn {

namespace {

int32_t load(const void* p, bool is_signed, int64_t index) {
  return is_signed ? static_cast<const int8_t*>(p)[index] : static_cast<const uint8_t*>(p)[index];
}

}  // namespace

QGemmPackedB qgemm_pack_b(const void* b, bool b_signed, int64_t k, int64_t n, int64_t ldb, bool trans_b) {
  QGemmPackedB packed;
  packed.k = k;
  packed.n = n;
  packed.b_signed = b_signed;
  packed.panel_columns = 1;
  packed.column_sums.assign(static_cast<size_t>(n), 0);
  // Portable layout: column-major (one panel per column, K contiguous).
  packed.data.resize(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < n; ++j) {
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int64_t index = trans_b ? j * ldb + p : p * ldb + j;
      const int32_t v = load(b, b_signed, index);
      sum += v;
      packed.data[static_cast<size_t>(j * k + p)] = static_cast<uint8_t>(v);
    }
    packed.column_sums[static_cast<size_t>(j)] = sum;
  }
  return packed;
}

void qgemm(const QGemmArgs& args) {
  const QGemmPackedB& b = *args.b;
  const int64_t k = b.k;
  const int64_t col_end = args.col_end < 0 ? b.n : args.col_end;
  for (int64_t i = 0; i < args.m; ++i) {
    int32_t row_sum = 0;
    for (int64_t p = 0; p < k; ++p) row_sum += load(args.a, args.a_signed, i * args.lda + p);
    for (int64_t j = args.col_begin; j < col_end; ++j) {
      const uint8_t* column = b.data.data() + j * k;
      int32_t dot = 0;
      for (int64_t p = 0; p < k; ++p) {
        const int32_t bv = b.b_signed ? static_cast<int8_t>(column[p]) : column[p];
        dot += load(args.a, args.a_signed, i * args.lda + p) * bv;
      }
      const int32_t zb = args.b_zero_points == nullptr ? 0
                         : args.per_column_b_zero_points ? args.b_zero_points[j]
                                                         : args.b_zero_points[0];
      const int32_t za = args.a_zero_point;
      args.c[i * args.ldc + (j - args.col_begin)] =
          dot - zb * row_sum - za * b.column_sums[static_cast<size_t>(j)] + static_cast<int32_t>(k) * za * zb;
    }
  }
}

}  // namespace spindle::kernels::nn
