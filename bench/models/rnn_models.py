#!/usr/bin/env python3
"""Stacked ONNX RNN / GRU / LSTM models built with the ONNX helper API, for
bench/models/side_by_side.js: a float input x [T, 1, I] (layout 0), LAYERS
recurrent nodes of HIDDEN, each reading the previous one's Y reshaped to
[T, 1, DIRS*HIDDEN], seeded random weights and biases. The output is the last
layer's Y.

  /usr/bin/python3 bench/models/rnn_models.py OUT.onnx CELL [--hidden 128]
      [--layers 2] [--steps 48] [--input 64] [--direction bidirectional]
      [--linear-before-reset 0]

Prints the --shape argument side_by_side.js needs (x=Tx1xI).
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("cell", choices=sorted(GATES))
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--steps", type=int, default=48)
    p.add_argument("--input", type=int, default=64)
    p.add_argument("--direction", default="bidirectional", choices=["forward", "reverse", "bidirectional"])
    p.add_argument("--linear-before-reset", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    dirs = 2 if a.direction == "bidirectional" else 1
    gh = GATES[a.cell] * a.hidden
    scale = 1.0 / np.sqrt(a.hidden)
    nodes, inits = [], []
    x = "x"
    width = a.input
    for layer in range(a.layers):
        w, r, b = f"W{layer}", f"R{layer}", f"B{layer}"
        for name, shape in ((w, (dirs, gh, width)), (r, (dirs, gh, a.hidden)), (b, (dirs, 2 * gh))):
            inits.append(numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name))
        attrs = {"hidden_size": a.hidden, "direction": a.direction}
        if a.cell == "GRU":
            attrs["linear_before_reset"] = a.linear_before_reset
        y = f"Y{layer}"
        nodes.append(helper.make_node(a.cell, [x, w, r, b], [y], name=f"{a.cell.lower()}{layer}", **attrs))
        # Y [T, D, 1, H] -> [T, 1, D*H] for the next layer (batch 1).
        shape = f"shape{layer}"
        inits.append(numpy_helper.from_array(np.array([0, 1, dirs * a.hidden], np.int64), shape))
        x = "y" if layer == a.layers - 1 else f"x{layer + 1}"
        nodes.append(helper.make_node("Reshape", [y, shape], [x]))
        width = dirs * a.hidden
    graph = helper.make_graph(
        nodes, f"{a.cell.lower()}_{a.layers}x{a.hidden}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", 1, a.input])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 1, width])], inits)
    save_model(graph, a.out, f"x={a.steps}x1x{a.input}")


def save_model(graph, path, shape):
    """Writes graph as an opset-14 model (IR 8, checked) and prints the
    --shape argument side_by_side.js needs (also used by loop_model.py)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(shape)


if __name__ == "__main__":
    main()
