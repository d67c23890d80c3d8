#!/usr/bin/env python3
"""Multi-head self-attention alone, as PyTorch 1.13 exports
nn.MultiheadAttention's core, built with the ONNX helper API: the QKV
projection's output x [S, 3E] is sliced into q, k, v, each reshaped to
[S, H, D]; q and v are transposed to [H, S, D], k to [H, D, S]; q is divided
by sqrt(D); MatMul, Softmax, MatMul; the heads are transposed back and
reshaped to [S, E]. What spindle's optimizer makes one FusedAttention node,
timed without the projections around it. Opset 14.

  /usr/bin/python3 bench/models/attention_model.py OUT.onnx [--tokens 128]
      [--heads 6] [--head-size 64]

Prints the --shape argument side_by_side.js / `spindle bench` need.
"""
import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from rnn_models import save_model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--head-size", type=int, default=64)
    a = p.parse_args()
    S, H, D = a.tokens, a.heads, a.head_size
    E = H * D
    inits = []

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    nodes = []
    for i, n in enumerate("qkv"):
        nodes.append(helper.make_node("Slice", ["x", const(f"{n}_lo", [i * E]), const(f"{n}_hi", [(i + 1) * E]),
                                                const(f"{n}_axis", [-1])], [f"{n}0"]))
        nodes.append(helper.make_node("Reshape", [f"{n}0", const(f"{n}_shape", [S, H, D])], [f"{n}1"]))
    nodes += [
        helper.make_node("Transpose", ["q1"], ["q2"], perm=[1, 0, 2]),
        helper.make_node("Div", ["q2", const("scale", np.sqrt(D), np.float32)], ["q3"]),
        helper.make_node("Transpose", ["k1"], ["k2"], perm=[1, 2, 0]),
        helper.make_node("Transpose", ["v1"], ["v2"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["q3", "k2"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v2"], ["heads"]),
        helper.make_node("Transpose", ["heads"], ["merged"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["merged", const("out_shape", [S, E])], ["y"]),
    ]
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, 3 * E])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [S, E])], inits)
    save_model(graph, a.out, f"x={S}x{3 * E}")


if __name__ == "__main__":
    main()
