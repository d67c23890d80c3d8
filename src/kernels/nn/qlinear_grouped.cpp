// qlinear_grouped.cpp — QLinearConvNhwc's narrow grouped path
// (qlinear_grouped.h).
#include "kernels/nn/qlinear_grouped.h"

#include <type_traits>
#include <vector>

#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

template <class T>
void qgrouped_conv(KernelContext& ctx, const QGroupedWeights& w, const Tensor& X, const Window3& g, int32_t x_zp,
                   const ChannelRequant& r, T* y) {
  static const auto row_fn = SPINDLE_ISA_SELECT(qgrouped_row);
  static const auto requant_fn = SPINDLE_ISA_SELECT(requant_row);
  static const bool vnni = qgrouped_vnni();
  const int64_t N = X.dim(0), H = X.dim(1), W = X.dim(2), C = X.dim(3), OH = g.out[1], OW = g.out[2];
  // The per-channel terms repeated along a row: one requantization per row.
  std::vector<int32_t> bias_row(static_cast<size_t>(OW * C));
  std::vector<double> scale_row(static_cast<size_t>(OW * C));
  for (int64_t i = 0; i < OW * C; ++i) {
    bias_row[static_cast<size_t>(i)] = r.bias[i % C];
    scale_row[static_cast<size_t>(i)] = r.scale[i % C];
  }
  const auto* xdata = static_cast<const uint8_t*>(X.raw_data());
  parallel_for(ctx.pool(), 0, N * OH, grain_for_work(N * OH, static_cast<double>(OW * C * w.taps * w.cg) / 16),
               [&](int64_t r0, int64_t r1) {
    int32_t* acc = reinterpret_cast<int32_t*>(scratch_floats(3, static_cast<size_t>(OW * C)));
    QGroupedRow a;
    a.x_signed = X.dtype() == DataType::kInt8;
    a.x_zp = x_zp;
    a.H = H;
    a.W = W;
    a.C = C;
    a.OW = OW;
    a.kh = g.k[1];
    a.kw = g.k[2];
    a.sh = g.s[1];
    a.sw = g.s[2];
    a.dh = g.d[1];
    a.dw = g.d[2];
    a.ph = g.pb[1];
    a.pw = g.pb[2];
    a.w = &w;
    a.vnni = vnni;
    a.acc = acc;
    RequantRow rq;
    rq.acc = acc;
    rq.n = OW * C;
    rq.bias = bias_row.data();
    rq.scale = scale_row.data();
    rq.zp = r.zp;
    rq.lo = r.lo;
    rq.hi = r.hi;
    rq.y_signed = std::is_same_v<T, int8_t>;
    for (int64_t row = r0; row < r1; ++row) {
      a.x = xdata + (row / OH) * H * W * C;
      a.oh = row % OH;
      row_fn(a);
      rq.y = y + row * OW * C;
      requant_fn(rq);
    }
  });
}

template void qgrouped_conv<uint8_t>(KernelContext&, const QGroupedWeights&, const Tensor&, const Window3&, int32_t,
                                     const ChannelRequant&, uint8_t*);
template void qgrouped_conv<int8_t>(KernelContext&, const QGroupedWeights&, const Tensor&, const Window3&, int32_t,
                                    const ChannelRequant&, int8_t*);

}  // namespace spindle::kernels::nn
