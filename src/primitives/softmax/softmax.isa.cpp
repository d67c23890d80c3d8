// softmax.isa.cpp — Softmax / LogSoftmax / Hardmax over one row or one chunk
// of columns (softmax.cpp splits the tensor), compiled once per ISA level
// (src/primitives/isa/dispatch.h).
//
// Rows: max with 32 accumulator lanes, then exp(x - max) (vec_math
// polynomial for float32) stored and summed in lanes, then one scaling pass.
// Columns: the same steps vectorized across the chunk. The lanes fix the
// summation order, so a row's result does not depend on the vector width
// beyond the exp polynomial's rounding.
#include <type_traits>

#include "primitives/math/vec_exp.h"
#include "primitives/math/vec_math.h"
#include "primitives/softmax/softmax_isa.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

using reduce::SoftmaxKind;

template <class T>
inline T nan_max(T a, T b) {
  return (a > b || a != a) ? a : b;
}

constexpr int kLanes = 32;
// float32 rows run their 32 lanes as four 8-lane vectors (AVX2 and up).
#if defined(SPINDLE_VEC_EXP_AVX2)
template <class T>
constexpr bool kVectorRows = std::is_same_v<T, float>;
#else
template <class T>
constexpr bool kVectorRows = false;
#endif

#if defined(SPINDLE_VEC_EXP_AVX2)
// nan_max on lanes: a where a > b or a is NaN, else b.
inline __m256 nan_max8(__m256 a, __m256 b) {
  return _mm256_blendv_ps(b, a, _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
}
inline __m128 nan_max4(__m128 a, __m128 b) {
  return _mm_blendv_ps(b, a, _mm_or_ps(_mm_cmp_ps(a, b, _CMP_GT_OQ), _mm_cmp_ps(a, a, _CMP_UNORD_Q)));
}
// The 32 lanes' tree of the scalar loop (lanes[j] op= lanes[j + w] for w =
// 16, 8, 4, 2, 1) on the four vectors holding them: the same pairs in the
// same order.
template <class Op8, class Op4>
inline float lanes_tree(const float* lanes, Op8 op8, Op4 op4) {
  const __m256 h = op8(op8(_mm256_loadu_ps(lanes), _mm256_loadu_ps(lanes + 16)),
                       op8(_mm256_loadu_ps(lanes + 8), _mm256_loadu_ps(lanes + 24)));
  __m128 q = op4(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));  // w = 4
  q = op4(q, _mm_movehl_ps(q, q));                                            // w = 2
  q = op4(q, _mm_shuffle_ps(q, q, 1));                                        // w = 1
  return _mm_cvtss_f32(q);
}
#endif

template <class T>
T row_max(const T* __restrict x, int64_t n) {
  T m = -__builtin_inf();
  if (n < kLanes) {
    for (int64_t i = 0; i < n; ++i) m = nan_max(m, x[i]);
    return m;
  }
  T lanes[kLanes];
  int64_t i = 0;
  if constexpr (kVectorRows<T>) {
#if defined(SPINDLE_VEC_EXP_AVX2)
    // Lane j of the 32 is element j % 8 of vector j / 8.
    __m256 acc[kLanes / 8];
    for (int v = 0; v < kLanes / 8; ++v) acc[v] = _mm256_set1_ps(m);
    for (; i + kLanes <= n; i += kLanes)
      for (int v = 0; v < kLanes / 8; ++v) acc[v] = nan_max8(acc[v], _mm256_loadu_ps(x + i + 8 * v));
    for (int v = 0; v < kLanes / 8; ++v) _mm256_storeu_ps(lanes + 8 * v, acc[v]);
#endif
  } else {
    for (int j = 0; j < kLanes; ++j) lanes[j] = m;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] = nan_max(lanes[j], x[i + j]);
  }
  for (int j = 0; i + j < n; ++j) lanes[j] = nan_max(lanes[j], x[i + j]);
#if defined(SPINDLE_VEC_EXP_AVX2)
  if constexpr (kVectorRows<T>)
    return lanes_tree(lanes, [](__m256 a, __m256 b) { return nan_max8(a, b); },
                      [](__m128 a, __m128 b) { return nan_max4(a, b); });
#endif
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] = nan_max(lanes[j], lanes[j + w]);
  return lanes[0];
}

// exp(d) for d = x - max <= 0 (or NaN): float32 through vec_exp.h's
// single-scale exp with d floored at -87.3, below which the term is 0 (it
// would be under 1e-38 next to the max's 1); NaN passes through. The 8-lane
// form gives the same bits. float64: libm.
inline double row_exp(double d) { return vm::t_exp(d); }
inline float row_exp(float d) {
  const float a = d > -87.3f ? d : -87.3f;
  const float e = vm::exp_normal(a < 88.3f ? a : 88.3f);
  return d != d ? d : d < -87.3f ? 0.0f : e;
}
#if defined(SPINDLE_VEC_EXP_AVX2)
// Over V = __m256 or vm::Lanes<N> (N vectors of chains in flight), or
// vm::Wide<N> at the AVX-512 level.
template <class V>
__attribute__((always_inline)) inline V row_exp_v(V d) {
  using namespace vm;
  const V a = l_min(l_max(d, l_set1<V>(-87.3f)), l_set1<V>(88.3f));
  const V e = l_andnot(l_lt(d, l_set1<V>(-87.3f)), exp_normal_v(a));
  return l_blendv(e, d, l_unord(d, d));
}
#endif

// y[i] = exp(x[i] - m) (when Store) and returns the sum of those.
template <class T, bool Store>
T row_exp_sum(const T* __restrict x, T* __restrict y, int64_t n, T m) {
  T lanes[kLanes];
  int64_t i = 0;
  if constexpr (!kVectorRows<T>) {
    for (int j = 0; j < kLanes; ++j) lanes[j] = T(0);
  } else {
#if defined(SPINDLE_VEC_EXP_AVX2)
    // Lane j of the 32 is element j of the vectors side by side (two of
    // 16 at AVX-512, four of 8 at AVX2: their exp chains in flight
    // together): the same sums as the loop below.
#if defined(__AVX512F__)
    using V = vm::Wide<kLanes / 16>;
#else
    using V = vm::Lanes<kLanes / 8>;
#endif
    V acc = vm::l_set1<V>(0.0f);
    const V mv = vm::l_set1<V>(m);
    for (; i + kLanes <= n; i += kLanes) {
      const V e = row_exp_v(vm::l_sub(vm::l_load<V>(x + i), mv));
      if constexpr (Store) vm::l_store(y + i, e);
      acc = vm::l_add(acc, e);
    }
    vm::l_store(lanes, acc);
#endif
  }
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const T e = row_exp(x[i + j] - m);
      if constexpr (Store) y[i + j] = e;
      lanes[j] += e;
    }
  for (int j = 0; i + j < n; ++j) {
    const T e = row_exp(x[i + j] - m);
    if constexpr (Store) y[i + j] = e;
    lanes[j] += e;
  }
#if defined(SPINDLE_VEC_EXP_AVX2)
  if constexpr (kVectorRows<T>)
    return lanes_tree(lanes, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); },
                      [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
#endif
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  return lanes[0];
}

template <class T>
void row(SoftmaxKind kind, const T* __restrict xr, T* __restrict yr, int64_t D) {
  if (kind == SoftmaxKind::kHardmax) {
    int64_t best = 0;
    for (int64_t i = 1; i < D; ++i)
      if (xr[i] > xr[best]) best = i;
    for (int64_t i = 0; i < D; ++i) yr[i] = T(0);
    yr[best] = T(1);
    return;
  }
  const T m = row_max(xr, D);
  if (kind == SoftmaxKind::kSoftmax) {
    const T s = row_exp_sum<T, true>(xr, yr, D, m);
    const T inv = T(1) / s;
    for (int64_t i = 0; i < D; ++i) yr[i] *= inv;
  } else {
    const T s = row_exp_sum<T, false>(xr, yr, D, m);
    const T sub = m + vm::f_log(s);
    for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] - sub;
  }
}

template <class T>
void cols(SoftmaxKind kind, const T* xb, T* yb, int64_t D, int64_t inner, int64_t n) {
  T m[reduce::kSoftmaxChunk], s[reduce::kSoftmaxChunk];
  for (int64_t j = 0; j < n; ++j) m[j] = xb[j];
  if (kind == SoftmaxKind::kHardmax) {
    int64_t idx[reduce::kSoftmaxChunk];
    for (int64_t j = 0; j < n; ++j) idx[j] = 0;
    for (int64_t d = 1; d < D; ++d) {
      const T* xr = xb + d * inner;
      for (int64_t j = 0; j < n; ++j)
        if (xr[j] > m[j]) {
          m[j] = xr[j];
          idx[j] = d;
        }
    }
    for (int64_t d = 0; d < D; ++d) {
      T* yr = yb + d * inner;
      for (int64_t j = 0; j < n; ++j) yr[j] = idx[j] == d ? T(1) : T(0);
    }
    return;
  }
  for (int64_t d = 1; d < D; ++d) {
    const T* __restrict xr = xb + d * inner;
    for (int64_t j = 0; j < n; ++j) m[j] = nan_max(m[j], xr[j]);
  }
  for (int64_t j = 0; j < n; ++j) s[j] = T(0);
  for (int64_t d = 0; d < D; ++d) {
    const T* __restrict xr = xb + d * inner;
    T* __restrict yr = yb + d * inner;
    for (int64_t j = 0; j < n; ++j) {
      const T ev = vm::t_exp(xr[j] - m[j]);
      if (kind == SoftmaxKind::kSoftmax) yr[j] = ev;
      s[j] += ev;
    }
  }
  if (kind == SoftmaxKind::kSoftmax) {
    for (int64_t j = 0; j < n; ++j) s[j] = T(1) / s[j];
    for (int64_t d = 0; d < D; ++d) {
      T* __restrict yr = yb + d * inner;
      for (int64_t j = 0; j < n; ++j) yr[j] *= s[j];
    }
  } else {
    for (int64_t j = 0; j < n; ++j) s[j] = m[j] + vm::f_log(s[j]);
    for (int64_t d = 0; d < D; ++d) {
      const T* __restrict xr = xb + d * inner;
      T* __restrict yr = yb + d * inner;
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - s[j];
    }
  }
}

}  // namespace

void softmax_row_float(SoftmaxKind kind, const float* x, float* y, int64_t D) { row<float>(kind, x, y, D); }
void softmax_row_double(SoftmaxKind kind, const double* x, double* y, int64_t D) { row<double>(kind, x, y, D); }
void softmax_cols_float(SoftmaxKind kind, const float* x, float* y, int64_t D, int64_t inner, int64_t n) {
  cols<float>(kind, x, y, D, inner, n);
}
void softmax_cols_double(SoftmaxKind kind, const double* x, double* y, int64_t D, int64_t inner, int64_t n) {
  cols<double>(kind, x, y, D, inner, n);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
