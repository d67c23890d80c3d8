#!/usr/bin/env python3
"""A model whose work sits in a Loop body, built with the ONNX helper API, for
bench/models/side_by_side.js: an audio-like feature map x [1, CH, FRAMES*LEN]
is cut into FRAMES frames of LEN steps; each Loop iteration slices its frame
and runs two 1-D convolutions with Relu (CH -> WIDTH, kernel 5; WIDTH ->
WIDTH, kernel 3; pads keep the length), a mean over time and adds the result
to a running sum (a loop-carried value); the per-frame means are also
stacked (a scan output). After the loop a Gemm maps the sum to 10 scores.
Seeded random weights; opset 14.

  /usr/bin/python3 bench/models/loop_model.py OUT.onnx [--channels 16]
      [--width 96] [--frames 8] [--len 32]

Prints the --shape argument side_by_side.js needs (x=1xCHx(FRAMES*LEN)).
"""
import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from rnn_models import save_model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--channels", type=int, default=16)
    p.add_argument("--width", type=int, default=96)
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--len", type=int, default=32)
    a = p.parse_args()
    rng = np.random.default_rng(1)
    ch, wd, fr, ln = a.channels, a.width, a.frames, a.len

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    # Outer initializers the body reads (captured from the enclosing graph).
    outer = [
        init("w1", (wd, ch, 5), 1.0 / np.sqrt(ch * 5)), init("b1", (wd,), 0.1),
        init("w2", (wd, wd, 3), 1.0 / np.sqrt(wd * 3)), init("b2", (wd,), 0.1),
        init("wh", (10, wd), 1.0 / np.sqrt(wd)), init("bh", (10,), 0.1),
        numpy_helper.from_array(np.array([ln], dtype=np.int64), "len"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array(fr, dtype=np.int64), "trips"),
        numpy_helper.from_array(np.array(True), "cond0"),
        numpy_helper.from_array(np.zeros((1, wd), dtype=np.float32), "acc0"),
    ]
    body = helper.make_graph(
        [
            helper.make_node("Unsqueeze", ["i", "axis0"], ["i1"]),
            helper.make_node("Mul", ["i1", "len"], ["start"]),
            helper.make_node("Add", ["start", "len"], ["end"]),
            helper.make_node("Slice", ["x", "start", "end", "axis2"], ["frame"]),
            helper.make_node("Conv", ["frame", "w1", "b1"], ["c1"], pads=[2, 2]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1]),
            helper.make_node("Relu", ["c2"], ["r2"]),
            helper.make_node("ReduceMean", ["r2"], ["m"], axes=[2], keepdims=0),
            helper.make_node("Add", ["acc", "m"], ["acc_out"]),
            helper.make_node("Identity", ["cond"], ["cond_out"]),
            helper.make_node("Identity", ["m"], ["m_out"]),
        ],
        "frame_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1, wd])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, wd]),
         helper.make_tensor_value_info("m_out", TensorProto.FLOAT, [1, wd])],
        [numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0")],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Loop", ["trips", "cond0", "acc0"], ["acc", "per_frame"], body=body),
            helper.make_node("Gemm", ["acc", "wh", "bh"], ["output"], transB=1),
        ],
        "loop_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ch, fr * ln])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("per_frame", TensorProto.FLOAT, [fr, 1, wd])],
        outer,
    )
    save_model(graph, a.out, f"x=1x{ch}x{fr * ln}")


if __name__ == "__main__":
    main()
