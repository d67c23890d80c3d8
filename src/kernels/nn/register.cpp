// register.cpp — registers the kernels of src/kernels/nn (one entry point per
// file: conv.cpp (its drivers in conv/), conv_transpose.cpp, pool.cpp, norm.cpp, gemm.cpp, resize.cpp, col2im.cpp,
// rnn.cpp, qlinear.cpp, dequantized_matmul.cpp, qlinear_contrib.cpp, qoperator.cpp, matmul_nbits.cpp, transformer.cpp, attention.cpp, blocked.cpp).
#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"

namespace spindle::kernels {

void register_nn_kernels(KernelRegistry& r) {
  nn::register_conv(r);
  nn::register_conv_transpose(r);
  nn::register_pool(r);
  nn::register_norm(r);
  nn::register_gemm(r);
  nn::register_resize(r);
  nn::register_col2im(r);
  nn::register_rnn(r);
  nn::register_qlinear(r);
  nn::register_dequantized_matmul(r);
  nn::register_qlinear_contrib(r);
  nn::register_qoperator(r);
  nn::register_matmul_nbits(r);
  nn::register_transformer(r);
  nn::register_attention(r);
  nn::register_blocked(r);
}

}  // namespace spindle::kernels
