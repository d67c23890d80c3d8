// batchnorm_nhwc.isa.cpp — the loop of spindle.BatchNormalizationNhwc
// (kernels/nn/norm.cpp), compiled once per ISA level
// (src/primitives/isa/dispatch.h) like affine_activation, the NCHW loop
// (primitives/math/activation.isa.cpp): the same expression x * a + b under
// the same flags (a fused multiply-add where that level contracts one) and
// the same activation, so each element is the NCHW kernel's bits.
//   affine_channels_activation: for each of `pixels` rows of C values,
//     y[c] = act(x[c] * a[c] + b[c]).
#include <cstdint>

#include "primitives/math/activation.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

void affine_channels_activation(const Activation& act, const float* x, const float* a, const float* b, float* y,
                                int64_t pixels, int64_t C) {
  for (int64_t p = 0; p < pixels; ++p) {
    const float* __restrict xs = x + p * C;
    float* __restrict ys = y + p * C;
    for (int64_t c = 0; c < C; ++c) ys[c] = xs[c] * a[c] + b[c];
    if (!act.is_none()) apply_activation(act, ys, C);
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
