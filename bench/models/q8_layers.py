#!/usr/bin/python3
"""Writes single-layer float models of the int8 depthwise and stem shapes
(ShuffleNetV2, MobileNetV3), each Conv + Relu with seeded random weights, to
be quantized by quantize_qdq.py and timed per layer: the time of the
QLinearConvNhwc node, from `spindle profile` (bench/models/node_time.py).

    /usr/bin/python3 bench/models/q8_layers.py OUT_DIR
    # then, per layer NAME with its input shape printed here:
    /usr/bin/python3 bench/models/quantize_qdq.py OUT_DIR/NAME.onnx OUT_DIR/NAME_q.onnx --shape x=1xCxHxH
    build/spindle profile OUT_DIR/NAME_q.onnx --shape x=1xCxHxH --intra 1 --runs 200 --warmup 20 --trace T.json
    /usr/bin/python3 bench/models/node_time.py T.json QLinearConvNhwc

Layers (name, channels, input size, kernel, stride; depthwise unless stem):
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name, input channels, output channels, H (= W), kernel, stride, group
LAYERS = [
    ("sh116_28", 116, 116, 28, 3, 1, 116),
    ("sh232_14", 232, 232, 14, 3, 1, 232),
    ("sh116s2_28", 116, 116, 28, 3, 2, 116),
    ("sh232s2_14", 232, 232, 14, 3, 2, 232),
    ("mb16_112", 16, 16, 112, 3, 1, 16),
    ("mb64s2_112", 64, 64, 112, 3, 2, 64),
    ("mb72s2_56", 72, 72, 56, 5, 2, 72),
    ("mb120_28", 120, 120, 28, 5, 1, 120),
    ("mb240s2_28", 240, 240, 28, 3, 2, 240),
    ("mb480_14", 480, 480, 14, 3, 1, 480),
    ("mb672_14", 672, 672, 14, 5, 1, 672),
    ("mb960_7", 960, 960, 7, 5, 1, 960),
    ("stem24", 3, 24, 224, 3, 2, 1),
    ("stem16", 3, 16, 224, 3, 2, 1),
]


def layer(name, c, m, h, k, s, group, rng):
    w = (rng.standard_normal((m, c // group, k, k)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(m) * 0.1).astype(np.float32)
    out = (h - 1) // s + 1
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, kernel_shape=[k, k], strides=[s, s],
                            pads=[k // 2] * 4)
    relu = helper.make_node("Relu", ["c"], ["y"])
    graph = helper.make_graph([conv, relu], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, out, out])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, c, m, h, k, s, group in LAYERS:
        onnx.save(layer(name, c, m, h, k, s, group, rng), os.path.join(out, name + ".onnx"))
        print(f"{name} x=1x{c}x{h}x{h}")


if __name__ == "__main__":
    main()
