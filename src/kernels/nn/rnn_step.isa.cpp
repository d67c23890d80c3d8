// rnn_step.isa.cpp — the recurrent product of RNN / GRU / LSTM for small
// batches, compiled once per ISA level (src/kernels/isa/dispatch.h).
//
// One step multiplies the previous hidden state h [H] by the recurrence
// weights R [rows, H] (row-major, as the model stores them): out[j] =
// dot(R[j, :], h). A general GEMM would pack R on every step (for a GRU of
// 128 that is 196 KB copied per step); rows of R are already contiguous, so a
// dot product per row reads R once, straight from the cache.
//
// When R is a constant, the kernel packs it once at creation as R^T [H,
// rows] and a step is out[j] = sum_k h[k] R^T[k, j]: blocks of 64 outputs
// stay in registers while k runs, each R^T row is read once, contiguously,
// and no horizontal sums are needed (matvec_packed). Each out[j] is summed
// in k order, whatever the block it falls in.
//
// The gate non-linearities (sigmoid, tanh over a gate vector) are here too,
// so they run at the level's vector width.
//
// Determinism: each out[j] is summed in a fixed order (8 lanes, then the
// lanes pairwise, then the tail), independent of threads; levels may differ
// in the last bits.
#include <algorithm>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "kernels/isa/dispatch.h"
#include "kernels/math/vec_math.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

#if defined(__AVX2__) && defined(__FMA__)
// The 8 lanes of v summed as ((0+4)+(2+6)) + ((1+5)+(3+7)).
inline float lane_sum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
#endif

// A scalar tail of the dot product, in index order.
inline float tail_dot(const float* r, const float* x, int64_t k, int64_t len, float acc) {
  for (; k < len; ++k) acc += r[k] * x[k];
  return acc;
}

}  // namespace

void matvec_rows(const float* r, int64_t rows, int64_t len, const float* x, float* out) {
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const int64_t vec_len = len / 8 * 8;
  for (; j + 4 <= rows; j += 4) {
    const float* r0 = r + j * len;
    const float* r1 = r0 + len;
    const float* r2 = r1 + len;
    const float* r3 = r2 + len;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t k = 0; k < vec_len; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + k);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + k), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + k), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + k), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + k), xv, a3);
    }
    out[j] = tail_dot(r0, x, vec_len, len, lane_sum(a0));
    out[j + 1] = tail_dot(r1, x, vec_len, len, lane_sum(a1));
    out[j + 2] = tail_dot(r2, x, vec_len, len, lane_sum(a2));
    out[j + 3] = tail_dot(r3, x, vec_len, len, lane_sum(a3));
  }
  for (; j < rows; ++j) {
    const float* rj = r + j * len;
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < vec_len; k += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(rj + k), _mm256_loadu_ps(x + k), a);
    out[j] = tail_dot(rj, x, vec_len, len, lane_sum(a));
  }
#else
  // Four partial sums per row (k mod 4), which the compiler keeps in one
  // SSE register.
  const int64_t vec_len = len / 4 * 4;
  for (; j < rows; ++j) {
    const float* rj = r + j * len;
    float s[4] = {0, 0, 0, 0};
    for (int64_t k = 0; k < vec_len; k += 4)
      for (int l = 0; l < 4; ++l) s[l] += rj[k + l] * x[k + l];
    out[j] = tail_dot(rj, x, vec_len, len, (s[0] + s[2]) + (s[1] + s[3]));
  }
#endif
}

void matvec_packed(const float* rt, int64_t ld, int64_t cols, int64_t len, const float* x, float* out) {
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; j + 64 <= cols; j += 64) {
    __m256 a[8];
    for (auto& v : a) v = _mm256_setzero_ps();
    for (int64_t k = 0; k < len; ++k) {
      const __m256 xk = _mm256_broadcast_ss(x + k);
      const float* row = rt + k * ld + j;
      for (int l = 0; l < 8; ++l) a[l] = _mm256_fmadd_ps(_mm256_loadu_ps(row + 8 * l), xk, a[l]);
    }
    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(out + j + 8 * l, a[l]);
  }
  for (; j + 8 <= cols; j += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < len; ++k) a = _mm256_fmadd_ps(_mm256_loadu_ps(rt + k * ld + j), _mm256_broadcast_ss(x + k), a);
    _mm256_storeu_ps(out + j, a);
  }
#endif
  // The rest (all of it below AVX2): k outer so the j loop vectorizes.
  if (j == cols) return;
  std::fill(out + j, out + cols, 0.0f);
  for (int64_t k = 0; k < len; ++k) {
    const float xk = x[k];
    const float* row = rt + k * ld;
    for (int64_t i = j; i < cols; ++i) out[i] += row[i] * xk;
  }
}

void sigmoid_inplace(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_sigmoid(v[i]);
}

void tanh_inplace(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_tanh(v[i]);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
