// qgrouped.cpp — packing the weights of the narrow grouped convolution
// (qgrouped.h).
#include "primitives/quant/qgrouped.h"

namespace spindle::kernels {

bool qgrouped_fits(int64_t m, int64_t cg, int64_t group) {
  return group > 1 && m > 0 && m % group == 0 && m / group == cg && (cg == 4 || cg == 8 || cg == 16);
}

QGroupedWeights qgrouped_pack(const int8_t* w, int64_t m, int64_t cg, int64_t taps) {
  QGroupedWeights p;
  p.m = m;
  p.cg = cg;
  p.taps = taps;
  const int64_t blocks = (m + kQGroupedLanes - 1) / kQGroupedLanes, steps = cg / 4;
  p.packed.assign(static_cast<size_t>(blocks * taps * steps * kQGroupedLanes * 4), 0);
  p.sums.assign(static_cast<size_t>(m), 0);
  for (int64_t oc = 0; oc < m; ++oc) {
    const int64_t b = oc / kQGroupedLanes, lane = oc % kQGroupedLanes;
    int32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < cg; ++c) {
        const int8_t v = w[(oc * cg + c) * taps + t];
        sum += v;
        p.packed[static_cast<size_t>((((b * taps + t) * steps + c / 4) * kQGroupedLanes + lane) * 4 + c % 4)] = v;
      }
    p.sums[static_cast<size_t>(oc)] = sum;
  }
  return p;
}

}  // namespace spindle::kernels
