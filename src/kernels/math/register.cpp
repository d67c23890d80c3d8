// register.cpp — registers the kernels of src/kernels/math.
#include "kernels/kernel.h"
#include "kernels/math/math_ops.h"

namespace spindle::kernels {

void register_math_kernels(KernelRegistry& r) {
  math::register_binary(r);
  math::register_compare(r);
  math::register_unary(r);
  math::register_cast(r);
  math::register_gradient_ops(r);
  math::register_optimizers(r);
}

}  // namespace spindle::kernels
