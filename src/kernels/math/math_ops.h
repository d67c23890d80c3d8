// math_ops.h — registration entry points of the files in src/kernels/math.
#pragma once

#include "kernels/kernel.h"

namespace spindle::kernels::math {

void register_binary(KernelRegistry& r);   // binary.cpp: Add Sub Mul Div Pow Mod Min Max Sum Mean PRelu
void register_compare(KernelRegistry& r);  // compare.cpp: Equal Less Greater ... And Or Xor Not Where
void register_unary(KernelRegistry& r);    // unary.cpp: Abs Neg Exp ... activations, Clip, IsNaN, IsInf
void register_cast(KernelRegistry& r);     // cast.cpp: Cast CastLike
void register_gradient_ops(KernelRegistry& r);
void register_optimizers(KernelRegistry& r);   // optimizers.cpp: Adagrad Momentum Adam (ai.onnx.preview.training)  // gradient_ops.cpp: spindle.ConstantLike, spindle.SumToShape

}  // namespace spindle::kernels::math
