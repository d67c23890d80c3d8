"""Writes single-layer Conv (+ Relu) models of the shapes the convolution
networks spend their time in, for per-layer A/B timing of spindle's Conv
paths (`spindle bench LAYER.onnx --intra 1 --json`, CPU ms per inference)
and side by side with ONNX Runtime (bench/models/side_by_side.js). Seeded
random weights; needs python3-onnx and python3-numpy (scripts/setup-deps.sh).

Usage: /usr/bin/python3 bench/models/conv_layers.py OUT_DIR

  resnet_56  3x3,  64 ->  64 at 56x56 (ResNet stage 1)
  resnet_28  3x3, 128 -> 128 at 28x28
  resnet_14  3x3, 256 -> 256 at 14x14
  resnet_7   3x3, 512 -> 512 at 7x7   (few positions, many rows)
  stem       7x7 stride 2, 3 -> 64 at 224x224
  dense_56   3x3, 128 -> 32 at 56x56 (DenseNet layer: few output channels)
  pw_56      1x1,  64 -> 256 at 56x56
  pw_14      1x1, 672 -> 112 at 14x14
  dw3_112    depthwise 3x3, 96 channels at 112x112
  dw5s2_56   depthwise 5x5 stride 2, 144 channels at 56x56
  stem3      3x3 stride 2, 3 -> 16 at 224x224 (MobileNetV3 / EfficientNet stem)
  grp8_112   3x3 stride 2, 48 -> 48 at 112x112, group width 8 (RegNetY-400MF)
  grp8_28    3x3, 104 -> 104 at 28x28, group width 8
  grp8_7     3x3, 440 -> 440 at 7x7, group width 8
  grp8_14    3x3, 208 -> 208 at 14x14, group width 8
  grp8_s2_14 3x3 stride 2, 440 -> 440 at 14x14, group width 8 (RegNetY's last stage entry)
  grp16_28   3x3, 144 -> 144 at 28x28, group width 16 (RegNetY-800MF)
  grp16_14   3x3, 320 -> 320 at 14x14, group width 16
  grp16_7    3x3, 784 -> 784 at 7x7, group width 16
  sq_stem    3x3 stride 2, 3 -> 64 at 224x224, no padding (SqueezeNet 1.1 stem)
  fire_55    3x3, 16 -> 64 at 55x55 (SqueezeNet expand: few input channels)
  cls_13     1x1, 512 -> 1000 at 13x13 (SqueezeNet classifier: many rows, few columns)
  fire1_55   1x1, 16 -> 64 at 55x55 (SqueezeNet expand: a short reduction)
  fire_27    3x3, 32 -> 128 at 27x27 (SqueezeNet expand, middle stage)
  fire_13    3x3, 64 -> 256 at 13x13 (SqueezeNet expand, last stage: 4x4 Winograd tiles)
  dense_28   3x3, 128 -> 32 at 28x28 (DenseNet block 2)
  dense_14   3x3, 128 -> 32 at 14x14 (DenseNet block 3: the input transform outweighs the GEMMs)
  pw440_7    1x1, 440 -> 440 at 7x7 (RegNetY-400MF's last stage: 49 columns)
  dw5_7      depthwise 5x5, 1152 channels at 7x7 (EfficientNet's last stages: small planes)
  dw3s2_28   depthwise 3x3 stride 2, 240 channels at 28x28
  pw16_112   1x1, 16 -> 64 at 112x112 (MobileNetV3's first expansion: short reduction, large output)
  res_s2_56  3x3 stride 2, 64 -> 128 at 56x56 (ResNet's downsampling 3x3)
  silu_pw16_112  1x1, 16 -> 96 at 112x112, then SiLU (EfficientNet-B0's first expansion)
  silu_dw3_112   depthwise 3x3, 32 channels at 112x112, then SiLU (EfficientNet-B0's first block)
  dw3s2_112  depthwise 3x3 stride 2, 64 channels at 112x112 (MobileNetV3's first stride-2 block)
  pw1024_14  1x1, 1024 -> 256 at 14x14 (ResNet-50 stage 3: row blocks share one packed input)
  pw2048_7   1x1, 2048 -> 512 at 7x7 (ResNet-50 stage 4)
  dense_7    3x3, 128 -> 32 at 7x7 (DenseNet block 4: short output rows)
  pw72_24_56 1x1, 72 -> 24 at 56x56 (MobileNetV3 projection: few rows, B read in place)
  pw16_16_112  1x1, 16 -> 16 at 112x112 (MobileNetV3's first block)
  pw32_48_112  1x1, 32 -> 48 at 112x112 (RegNetY: 32 input planes 49 KB apart share L1 sets)
  proj_s2_112  1x1 stride 2, 32 -> 48 at 112x112 (RegNetY's first projection: a strided 1x1)
  proj_s2_56   1x1 stride 2, 256 -> 512 at 56x56 (ResNet-50's stage-2 projection)
  bn_t3      BatchNormalization, Relu, 1x1 1024 -> 512 at 14x14 (DenseNet-121's transition 3)
  bn_14      BatchNormalization, Relu, 1x1 992 -> 128 at 14x14 (DenseNet-121 block 3)
  bn_56      BatchNormalization, Relu, 1x1 224 -> 128 at 56x56 (DenseNet-121 block 1)

  The int8 depthwise layers (quantized by quantize_qdq.py for QLinearConv; docs/benchmarks.md, "Depthwise rows on VNNI"):
  sh116_28   depthwise 3x3, 116 channels at 28x28 (ShuffleNetV2 stage 2)
  sh232_14   depthwise 3x3, 232 channels at 14x14 (ShuffleNetV2 stage 3)
  sh116s2_28 depthwise 3x3 stride 2, 116 channels at 28x28
  sh232s2_14 depthwise 3x3 stride 2, 232 channels at 14x14
  mb16_112   depthwise 3x3, 16 channels at 112x112 (MobileNetV3's first block: several pixels a vector)
  mb72s2_56  depthwise 5x5 stride 2, 72 channels at 56x56
  mb120_28   depthwise 5x5, 120 channels at 28x28
  mb240s2_28 depthwise 3x3 stride 2, 240 channels at 28x28
  mb480_14   depthwise 3x3, 480 channels at 14x14
  mb672_14   depthwise 5x5, 672 channels at 14x14
  mb960_7    depthwise 5x5, 960 channels at 7x7
  stem24     3x3 stride 2, 3 -> 24 at 224x224 (ShuffleNetV2 stem)

Every layer is Conv + Relu, except the silu_ ones: Conv, Sigmoid, Mul (x * sigmoid(x), as exported),
and the bn_ ones: BatchNormalization (seeded statistics) and Relu before the Conv, none after.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS = {
    # name: (C, M, H, kernel, stride, pad, group)
    "resnet_56": (64, 64, 56, 3, 1, 1, 1),
    "resnet_28": (128, 128, 28, 3, 1, 1, 1),
    "resnet_14": (256, 256, 14, 3, 1, 1, 1),
    "resnet_7": (512, 512, 7, 3, 1, 1, 1),
    "stem": (3, 64, 224, 7, 2, 3, 1),
    "dense_56": (128, 32, 56, 3, 1, 1, 1),
    "pw_56": (64, 256, 56, 1, 1, 0, 1),
    "pw_14": (672, 112, 14, 1, 1, 0, 1),
    "dw3_112": (96, 96, 112, 3, 1, 1, 96),
    "dw5s2_56": (144, 144, 56, 5, 2, 2, 144),
    "stem3": (3, 16, 224, 3, 2, 1, 1),
    "grp8_112": (48, 48, 112, 3, 2, 1, 6),
    "grp8_28": (104, 104, 28, 3, 1, 1, 13),
    "grp8_7": (440, 440, 7, 3, 1, 1, 55),
    "grp8_14": (208, 208, 14, 3, 1, 1, 26),
    "grp8_s2_14": (440, 440, 14, 3, 2, 1, 55),
    "grp16_28": (144, 144, 28, 3, 1, 1, 9),
    "grp16_14": (320, 320, 14, 3, 1, 1, 20),
    "grp16_7": (784, 784, 7, 3, 1, 1, 49),
    "sq_stem": (3, 64, 224, 3, 2, 0, 1),
    "fire_55": (16, 64, 55, 3, 1, 1, 1),
    "cls_13": (512, 1000, 13, 1, 1, 0, 1),
    "fire1_55": (16, 64, 55, 1, 1, 0, 1),
    "fire_27": (32, 128, 27, 3, 1, 1, 1),
    "fire_13": (64, 256, 13, 3, 1, 1, 1),
    "dense_28": (128, 32, 28, 3, 1, 1, 1),
    "dense_14": (128, 32, 14, 3, 1, 1, 1),
    "pw440_7": (440, 440, 7, 1, 1, 0, 1),
    "dw5_7": (1152, 1152, 7, 5, 1, 2, 1152),
    "dw3s2_28": (240, 240, 28, 3, 2, 1, 240),
    "pw16_112": (16, 64, 112, 1, 1, 0, 1),
    "res_s2_56": (64, 128, 56, 3, 2, 1, 1),
    "silu_pw16_112": (16, 96, 112, 1, 1, 0, 1),
    "silu_dw3_112": (32, 32, 112, 3, 1, 1, 32),
    "dw3s2_112": (64, 64, 112, 3, 2, 1, 64),
    "pw1024_14": (1024, 256, 14, 1, 1, 0, 1),
    "pw2048_7": (2048, 512, 7, 1, 1, 0, 1),
    "dense_7": (128, 32, 7, 3, 1, 1, 1),
    "pw72_24_56": (72, 24, 56, 1, 1, 0, 1),
    "pw16_16_112": (16, 16, 112, 1, 1, 0, 1),
    "pw32_48_112": (32, 48, 112, 1, 1, 0, 1),
    "proj_s2_112": (32, 48, 112, 1, 2, 0, 1),
    "proj_s2_56": (256, 512, 56, 1, 2, 0, 1),
    "sh116_28": (116, 116, 28, 3, 1, 1, 116),
    "sh232_14": (232, 232, 14, 3, 1, 1, 232),
    "sh116s2_28": (116, 116, 28, 3, 2, 1, 116),
    "sh232s2_14": (232, 232, 14, 3, 2, 1, 232),
    "mb16_112": (16, 16, 112, 3, 1, 1, 16),
    "mb72s2_56": (72, 72, 56, 5, 2, 2, 72),
    "mb120_28": (120, 120, 28, 5, 1, 2, 120),
    "mb240s2_28": (240, 240, 28, 3, 2, 1, 240),
    "mb480_14": (480, 480, 14, 3, 1, 1, 480),
    "mb672_14": (672, 672, 14, 5, 1, 2, 672),
    "mb960_7": (960, 960, 7, 5, 1, 2, 960),
    "stem24": (3, 24, 224, 3, 2, 1, 1),
    "bn_t3": (1024, 512, 14, 1, 1, 0, 1),
    "bn_14": (992, 128, 14, 1, 1, 0, 1),
    "bn_56": (224, 128, 56, 1, 1, 0, 1),
}


def layer(name, c, m, h, k, s, p, g, rng):
    w = numpy_helper.from_array((rng.standard_normal((m, c // g, k, k)) * 0.05).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "B")
    inits = [w, b]
    pre = []
    if name.startswith("bn_"):
        for pname, values in (("s", rng.uniform(0.5, 1.5, c)), ("t", rng.standard_normal(c)),
                              ("m", rng.standard_normal(c)), ("v", rng.uniform(0.5, 2.0, c))):
            inits.append(numpy_helper.from_array(values.astype(np.float32), pname))
        pre = [helper.make_node("BatchNormalization", ["x", "s", "t", "m", "v"], ["n"]),
               helper.make_node("Relu", ["n"], ["r"])]
    out = (h + 2 * p - k) // s + 1
    conv = helper.make_node("Conv", ["r" if pre else "x", "W", "B"], ["y" if pre else "c"], kernel_shape=[k, k],
                            strides=[s, s], pads=[p] * 4, group=g)
    if pre:
        acts = []
    elif name.startswith("silu_"):
        acts = [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    else:
        acts = [helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(pre + [conv] + acts, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, out, out])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, shape in LAYERS.items():
        onnx.save(layer(name, *shape, rng), os.path.join(out, name + ".onnx"))
        print(name)


if __name__ == "__main__":
    main()
