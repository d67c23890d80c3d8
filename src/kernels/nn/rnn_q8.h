// rnn_q8.h — the 8-bit weights of com.microsoft DynamicQuantizeLSTM, the
// LSTM of ONNX Runtime's quantize_dynamic format (rnn.cpp runs the cell).
//
// W [directions, input_size, 4 * hidden_size] and R [directions,
// hidden_size, 4 * hidden_size] are int8 or uint8, stored transposed from
// LSTM's, with W_scale / R_scale of shape [directions] (one per direction)
// or [directions, 4 * hidden_size] (one per gate unit) and zero points of
// the same shapes and the weights' type (inputs 8 to 11). Both products are
// ONNX Runtime's quantized ones:
//   X W:      X's rows of the run quantized as one block as DynamicQuantizeLinear
//             does (uint8, its own scale and zero point), the int32 product,
//             then float(acc) * (x_scale * w_scale[j]);
//   H_{t-1} R: the same, H_{t-1} [batch, hidden] quantized at every step,
//             and its float(acc) * (h_scale * r_scale[j]) added to X W's row.
// The gate sums are then (X W + H R) + (Wb + Rb), in that order.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "primitives/gemm/qgemm.h"

namespace spindle::kernels::nn {

// One direction's weights and parameters for one run.
struct Q8RnnDirection {
  const QGemmPackedB* w = nullptr;   // [input_size, 4H] for qgemm
  const QGemmPackedB* r = nullptr;   // [H, 4H]
  std::vector<float> w_scale, r_scale;  // 1 or 4H values
  std::vector<int32_t> w_zp, r_zp;      // 4H values each
};

class Q8RnnWeights {
 public:
  // Packs constant W and R (inputs 1 and 2) when the kernel is created, when
  // their shapes fit `dirs` and `gh` (4 * hidden_size); the rest is left to
  // bind() to report.
  void prepack(const NodeInfo& node, int64_t dirs, int64_t gh);
  // Whether input i (1: W, 2: R) was packed, so the plan may drop it.
  bool packed(int i) const { return i == 1 ? !w_shape_.empty() : i == 2 && !r_shape_.empty(); }
  size_t packed_bytes() const;

  // This run's weights of every direction, checked: W [dirs, I, gh] and R
  // [dirs, H, gh] of one 8-bit type (the packed constants, or packed for
  // this call into `local`), scales and zero points (inputs 8-11).
  std::vector<Q8RnnDirection> bind(KernelContext& ctx, int64_t dirs, int64_t I, int64_t H, int64_t gh,
                                   std::vector<QGemmPackedB>& local) const;

 private:
  std::vector<QGemmPackedB> w_, r_;  // per direction, when constant
  const void* const_w_ = nullptr;
  const void* const_r_ = nullptr;
  Shape w_shape_, r_shape_;
  DataType w_type_ = DataType::kUndefined, r_type_ = DataType::kUndefined;
};

// xw [rows, gh] = X [rows, I] W as above (x quantized over its rows * I values).
void q8_project(ThreadPool* pool, const float* x, int64_t rows, int64_t I, const Q8RnnDirection& d, int64_t gh,
                float* xw);

// out[b] = xg[b] + float(acc) * (h_scale * r_scale[j]) for the B rows of h
// [B, H] (quantized as one block; `hq` has room for B * H bytes). out has
// row stride gh; xg[b] null for a row whose sequence has ended.
void q8_recurrence(ThreadPool* pool, const float* h, int64_t B, int64_t H, const Q8RnnDirection& d, int64_t gh,
                   const float* const* xg, uint8_t* hq, float* out);

}  // namespace spindle::kernels::nn
