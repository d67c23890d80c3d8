// moments_isa.h — a row's mean and variance, and its normalization, per ISA
// level (moments.isa.cpp), for the normalization kernels (kernels/nn/norm.cpp).
//
//   row_moments:   the mean and (biased) variance of x[0, n), accumulated in
//                  double; centered = false takes the mean as 0
//                  (RMSNormalization). Each sum runs in 8 partial sums
//                  (element i into sum i % 8, then the fixed tree
//                  ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))): the
//                  order depends on n alone, and every level (8 double
//                  lanes, two vectors of 4, or 8 scalars) adds the same
//                  values in the same order: the same bits.
//   normalize_row: y[i] = (x[i] - mean) * inv * scale[i] (+ bias[i]), each
//                  step rounded (no fused multiply-add), at every level.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

SPINDLE_ISA_DECLARE(void, row_moments, (const float* x, int64_t n, bool centered, double* mean, double* var));
SPINDLE_ISA_DECLARE(void, normalize_row,
                    (const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                     const float* bias));
