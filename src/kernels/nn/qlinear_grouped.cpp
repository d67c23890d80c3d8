// qlinear_grouped.cpp — QLinearConvNhwc's narrow grouped path
// (qlinear_grouped.h).
#include "kernels/nn/qlinear_grouped.h"

#include <string_view>
#include <type_traits>

#include "primitives/gemm/qgemm.h"

namespace spindle::kernels::nn {

RowRequant::RowRequant(const ChannelRequant& r, int64_t OW, int64_t C, bool y_signed)
    : r_(r), bias_(static_cast<size_t>(OW * C)), scale_(static_cast<size_t>(OW * C)), y_signed_(y_signed) {
  for (int64_t i = 0; i < OW * C; ++i) {
    bias_[static_cast<size_t>(i)] = r.bias[i % C];
    scale_[static_cast<size_t>(i)] = r.scale[i % C];
  }
}

RequantRow RowRequant::row(const int32_t* acc, void* y) const {
  RequantRow rq;
  rq.acc = acc;
  rq.n = static_cast<int64_t>(bias_.size());
  rq.bias = bias_.data();
  rq.scale = scale_.data();
  rq.zp = r_.zp;
  rq.lo = r_.lo;
  rq.hi = r_.hi;
  rq.y = y;
  rq.y_signed = y_signed_;
  return rq;
}

template <class T>
void qgrouped_conv(KernelContext& ctx, const QGroupedWeights& w, const Tensor& X, const Window3& g, int32_t x_zp,
                   const ChannelRequant& r, T* y) {
  static const auto row_fn = SPINDLE_ISA_SELECT(qgrouped_row);
  static const auto requant_fn = SPINDLE_ISA_SELECT(requant_row);
  // The row loop uses VNNI at the level whose GEMM does.
  static const bool vnni = std::string_view(qgemm_kernel_name()) == "avx512-vnni";
  const int64_t N = X.dim(0), H = X.dim(1), W = X.dim(2), C = X.dim(3), OH = g.out[1], OW = g.out[2];
  const RowRequant rr(r, OW, C, std::is_same_v<T, int8_t>);
  const auto* xdata = static_cast<const uint8_t*>(X.raw_data());
  parallel_for(ctx.pool(), 0, N * OH, grain_for_cost(ops_cost(static_cast<double>(OW * C * w.taps * w.cg) / 16)),
               [&](int64_t r0, int64_t r1) {
    int32_t* acc = reinterpret_cast<int32_t*>(scratch_floats(3, static_cast<size_t>(OW * C)));
    QGroupedRow a;
    set_row_geometry(a, X, g);
    a.x_zp = x_zp;
    a.w = &w;
    a.vnni = vnni;
    a.acc = acc;
    for (int64_t row = r0; row < r1; ++row) {
      a.x = xdata + (row / OH) * H * W * C;
      a.oh = row % OH;
      row_fn(a);
      requant_fn(rr.row(acc, y + row * OW * C));
    }
  });
}

template void qgrouped_conv<uint8_t>(KernelContext&, const QGroupedWeights&, const Tensor&, const Window3&, int32_t,
                                     const ChannelRequant&, uint8_t*);
template void qgrouped_conv<int8_t>(KernelContext&, const QGroupedWeights&, const Tensor&, const Window3&, int32_t,
                                    const ChannelRequant&, int8_t*);

}  // namespace spindle::kernels::nn
