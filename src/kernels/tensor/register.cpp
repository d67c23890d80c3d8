// register.cpp — registers the kernels of src/kernels/tensor (one entry point
// per file; see tensor_util.h).
#include "kernels/kernel.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels {

void register_tensor_kernels(KernelRegistry& r) {
  tensor::register_basic(r);
  tensor::register_transpose(r);
  tensor::register_concat(r);
  tensor::register_slice(r);
  tensor::register_gather(r);
  tensor::register_expand(r);
  tensor::register_generate(r);
  tensor::register_select(r);
  tensor::register_unique(r);
  tensor::register_sequence(r);
  tensor::register_random(r);
}

}  // namespace spindle::kernels
