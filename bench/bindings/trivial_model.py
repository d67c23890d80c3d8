"""Writes a model that does almost nothing, with Silero VAD v5's inputs:
input float [1, 512], state float [2, 1, 128], sr int64 scalar; outputs
input + 1, state + 1 and sr as float. Timing a run of it through a binding
(bench/bindings/cpu_per_call.py, cpu_per_call.js) is timing the binding.

Usage: /usr/bin/python3 trivial_model.py OUT.onnx
"""
import sys

from onnx import TensorProto, helper

graph = helper.make_graph(
    [helper.make_node("Add", ["input", "one"], ["output"]), helper.make_node("Add", ["state", "one"], ["stateN"]),
     helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT)], "trivial",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 512]),
     helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, 128]),
     helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 512]),
     helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, 128]),
     helper.make_tensor_value_info("srf", TensorProto.FLOAT, [])],
    [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
with open(sys.argv[1], "wb") as f:
    f.write(model.SerializeToString())
