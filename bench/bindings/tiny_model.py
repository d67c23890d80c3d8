"""Writes a wake-word-classifier-sized model (~30 nodes: Gemm, Relu,
ReduceMean, Softmax; seeded random weights) for the per-call overhead
benchmark: its runs take a few microseconds, so what a binding adds shows.

Usage: /usr/bin/python3 tiny_model.py OUT.onnx
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

rng = np.random.default_rng(0)
nodes, inits = [], []
width, frames, features = 32, 16, 40
x = "x"
# frames x features -> per-frame MLP of 8 Gemm+Relu pairs -> mean over frames -> logits
cur, cur_dim = x, features
for i in range(8):
    w = numpy_helper.from_array((rng.standard_normal((cur_dim, width)) / np.sqrt(cur_dim)).astype(np.float32), f"w{i}")
    b = numpy_helper.from_array((0.01 * rng.standard_normal(width)).astype(np.float32), f"b{i}")
    inits += [w, b]
    nodes.append(helper.make_node("Gemm", [cur, f"w{i}", f"b{i}"], [f"g{i}"]))
    nodes.append(helper.make_node("Relu", [f"g{i}"], [f"r{i}"]))
    cur, cur_dim = f"r{i}", width
inits.append(numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"))
nodes.append(helper.make_node("ReduceMean", [cur], ["pooled"], axes=[0], keepdims=1))
wo = numpy_helper.from_array((rng.standard_normal((width, 4)) / np.sqrt(width)).astype(np.float32), "wo")
inits.append(wo)
nodes.append(helper.make_node("MatMul", ["pooled", "wo"], ["logits"]))
nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], axis=-1))
graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [frames, features])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 4])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
save(model, sys.argv[1])
