#!/usr/bin/python3
"""Writes the small models of the C API tests into OUTDIR (default: .).

types.onnx: one input and one output per element type the bindings move
(float32, int64, int32, uint8, bool, string), a symbolic batch dimension,
and model metadata (producer, domain, doc strings, version, custom props):
  f   float32 [batch, 3]  -> f_out = Relu(f) * 2
  i64 int64   [batch, 3]  -> i64_out = i64 + 7
  i32 int32   [batch, 3]  -> i32_out = i32 * 3
  u8  uint8   [batch, 3]  -> u8_out = u8 + 1 (wraps)
  b   bool    [batch, 3]  -> b_out = Not(b)
  s   string  [batch]     -> s_out = Identity(s)

custom_ops.onnx, custom_fail.onnx: custom ops of the domain "test.domain"
(custom_ops.h), opset 1 of it:
  a, b float32 [n] -> s = ScaledSum(a, b; scale=0.5, mode="diff"),
                      y, tids = ParallelIds(s; batches=4)
  x float32 [n]    -> y = FailIf(x)

convert.onnx, convert_bad.onnx: a custom op of the domain "infer.domain"
(custom_infer_test.c) whose output type its InferOutputShapeFn chooses:
  x float32 [n] -> y = Convert(x; to=7 (int64)), z = Add(y, y) (z's type left to inference)
  convert_bad.onnx: the same with to=5 (int16), which the inference refuses

const.onnx: outputs the caller may write into without harm:
  x float32 [2] -> y = Identity(x) (a feed passed through), w (an initializer)

bind.onnx: IO bindings (two inputs, two outputs):
  f float32 [batch, 3] -> f_out = Relu(f) * 2;  i64 int64 [batch, 3] -> i64_out = i64 + 7
relu.onnx: its float part alone (f -> f_out), for the IO-binding sample

init.onnx: initializers the program supplies (AddInitializer,
AddExternalInitializers); w's data is external, in init.weights:
  x float32 [3] -> y = x * w + b   (w = [1, 2, 3], b = [0.5, 0.5, 0.5])

kinfo.onnx, kinfo_input.onnx: a custom op reading its node at creation
(kernel_info_test.cpp), in the domain "info.domain":
  x float32 [3] -> y = Offset(x, k; bias = tensor [0.5, 0.25, 0.125], tags = ["a", "b"])
  kinfo.onnx: k = [10, 20, 30] an initializer; kinfo_input.onnx: k a graph input
kop.onnx: x float32 [n] -> y = Leaky(x; alpha = 0.25) (domain "info.domain"),
  a custom op running the built-in LeakyRelu inside its kernel

over.onnx: initializers that are also graph inputs (overridable, IR 7):
  x float32 [1, 1, 3, 3] -> y = Conv(x, w, b), z = w * w
  (w = [[[[1, 2], [3, 4]]]], b = [0.5], both listed as inputs)

denot.onnx: dimensions with denotations (AddFreeDimensionOverride):
  x float32 [batch (DATA_BATCH), 3 (DATA_CHANNEL)] -> y = Relu(x)

seq.onnx: sequences through the API:
  items seq(float32 [n]), x float32 [n] -> joined = SequenceInsert(items, x),
                                           count = SequenceLength(joined)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


nodes = [
    helper.make_node("Relu", ["f"], ["f_relu"]),
    const("two", np.array(2.0, dtype=np.float32)),
    helper.make_node("Mul", ["f_relu", "two"], ["f_out"]),
    const("seven", np.array(7, dtype=np.int64)),
    helper.make_node("Add", ["i64", "seven"], ["i64_out"]),
    const("three", np.array(3, dtype=np.int32)),
    helper.make_node("Mul", ["i32", "three"], ["i32_out"]),
    const("one", np.array(1, dtype=np.uint8)),
    helper.make_node("Add", ["u8", "one"], ["u8_out"]),
    helper.make_node("Not", ["b"], ["b_out"]),
    helper.make_node("Identity", ["s"], ["s_out"]),
]
dims = ["batch", 3]
inputs = [
    helper.make_tensor_value_info("f", TensorProto.FLOAT, dims),
    helper.make_tensor_value_info("i64", TensorProto.INT64, dims),
    helper.make_tensor_value_info("i32", TensorProto.INT32, dims),
    helper.make_tensor_value_info("u8", TensorProto.UINT8, dims),
    helper.make_tensor_value_info("b", TensorProto.BOOL, dims),
    helper.make_tensor_value_info("s", TensorProto.STRING, ["batch"]),
]
outputs = [
    helper.make_tensor_value_info("f_out", TensorProto.FLOAT, dims),
    helper.make_tensor_value_info("i64_out", TensorProto.INT64, dims),
    helper.make_tensor_value_info("i32_out", TensorProto.INT32, dims),
    helper.make_tensor_value_info("u8_out", TensorProto.UINT8, dims),
    helper.make_tensor_value_info("b_out", TensorProto.BOOL, dims),
    helper.make_tensor_value_info("s_out", TensorProto.STRING, ["batch"]),
]
graph = helper.make_graph(nodes, "capi_types", inputs, outputs, doc_string="graph of the C API test")
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test",
                          domain="org.spindle.test", model_version=3, doc_string="element types through the C API")
model.ir_version = 8
helper.set_model_props(model, {"purpose": "c-api", "owner": "spindle"})
onnx.checker.check_model(model)
onnx.save(model, f"{out_dir}/types.onnx")

bind_graph = helper.make_graph(nodes[:5], "capi_bind", inputs[:2], outputs[:2])
bind_model = helper.make_model(bind_graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test")
bind_model.ir_version = 8
onnx.checker.check_model(bind_model)
onnx.save(bind_model, f"{out_dir}/bind.onnx")
relu_graph = helper.make_graph(nodes[:3], "capi_relu", inputs[:1], outputs[:1])
relu_model = helper.make_model(relu_graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test")
relu_model.ir_version = 8
onnx.checker.check_model(relu_model)
onnx.save(relu_model, f"{out_dir}/relu.onnx")

seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, ["n"]))
seq_graph = helper.make_graph(
    [helper.make_node("SequenceInsert", ["items", "x"], ["joined"]),
     helper.make_node("SequenceLength", ["joined"], ["count"])],
    "capi_seq",
    [helper.make_value_info("items", seq_type), helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
    [helper.make_value_info("joined", seq_type), helper.make_tensor_value_info("count", TensorProto.INT64, [])])
seq_model = helper.make_model(seq_graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test")
seq_model.ir_version = 8
onnx.checker.check_model(seq_model)
onnx.save(seq_model, f"{out_dir}/seq.onnx")

const_graph = helper.make_graph(
    [helper.make_node("Identity", ["x"], ["y"])], "capi_const",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
    initializer=[numpy_helper.from_array(np.array([1, 2], dtype=np.float32), "w")])
const_model = helper.make_model(const_graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test")
const_model.ir_version = 8
onnx.checker.check_model(const_model)
onnx.save(const_model, f"{out_dir}/const.onnx")

custom_opsets = [helper.make_opsetid("", 17), helper.make_opsetid("test.domain", 1)]
custom_graph = helper.make_graph(
    [helper.make_node("ScaledSum", ["a", "b"], ["s"], domain="test.domain", scale=0.5, mode="diff"),
     helper.make_node("ParallelIds", ["s"], ["y", "tids"], domain="test.domain", batches=4)],
    "capi_custom_ops",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n"]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n"])],
    [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["n"]),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"]),
     helper.make_tensor_value_info("tids", TensorProto.INT64, [4])])
custom_model = helper.make_model(custom_graph, opset_imports=custom_opsets, producer_name="capi-test")
custom_model.ir_version = 8
onnx.save(custom_model, f"{out_dir}/custom_ops.onnx")

fail_graph = helper.make_graph(
    [helper.make_node("FailIf", ["x"], ["y"], domain="test.domain")], "capi_custom_fail",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
fail_model = helper.make_model(fail_graph, opset_imports=custom_opsets, producer_name="capi-test")
fail_model.ir_version = 8
onnx.save(fail_model, f"{out_dir}/custom_fail.onnx")

infer_opsets = [helper.make_opsetid("", 17), helper.make_opsetid("infer.domain", 1)]
for name, to in (("convert", TensorProto.INT64), ("convert_bad", TensorProto.INT16)):
    convert_graph = helper.make_graph(
        [helper.make_node("Convert", ["x"], ["y"], domain="infer.domain", to=to),
         helper.make_node("Add", ["y", "y"], ["z"])],
        "capi_" + name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["n"]), onnx.ValueInfoProto(name="z")])
    convert_model = helper.make_model(convert_graph, opset_imports=infer_opsets, producer_name="capi-test")
    convert_model.ir_version = 8
    onnx.save(convert_model, f"{out_dir}/{name}.onnx")

w_init = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.float32), "w")
with open(f"{out_dir}/init.weights", "wb") as f:
    f.write(w_init.raw_data)
w_init.ClearField("raw_data")
w_init.data_location = TensorProto.EXTERNAL
for key, value in (("location", "init.weights"), ("offset", "0"), ("length", "12")):
    entry = w_init.external_data.add()
    entry.key, entry.value = key, value
init_graph = helper.make_graph(
    [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])], "capi_init",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    [w_init, numpy_helper.from_array(np.full(3, 0.5, dtype=np.float32), "b")])
init_model = helper.make_model(init_graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="capi-test")
init_model.ir_version = 8
onnx.save(init_model, f"{out_dir}/init.onnx")

for name, k_constant in (("kinfo", True), ("kinfo_input", False)):
    k_info = helper.make_tensor_value_info("k", TensorProto.FLOAT, [3])
    kinfo_graph = helper.make_graph(
        [helper.make_node("Offset", ["x", "k"], ["y"], domain="info.domain",
                          bias=numpy_helper.from_array(np.array([0.5, 0.25, 0.125], dtype=np.float32), "bias"),
                          tags=["a", "b"])],
        "capi_" + name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])] + ([] if k_constant else [k_info]),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array([10, 20, 30], dtype=np.float32), "k")] if k_constant else [])
    kinfo_model = helper.make_model(kinfo_graph, producer_name="capi-test",
                                    opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("info.domain", 1)])
    kinfo_model.ir_version = 8
    onnx.save(kinfo_model, f"{out_dir}/{name}.onnx")

kop_graph = helper.make_graph(
    [helper.make_node("Leaky", ["x"], ["y"], domain="info.domain", alpha=0.25)], "capi_kop",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
kop_model = helper.make_model(kop_graph, producer_name="capi-test",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("info.domain", 1)])
kop_model.ir_version = 8
onnx.save(kop_model, f"{out_dir}/kop.onnx")

over_graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w", "b"], ["y"]), helper.make_node("Mul", ["w", "w"], ["z"])], "capi_over",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3]),
     helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 2, 2]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2), "w"),
     numpy_helper.from_array(np.array([0.5], np.float32), "b")])
over_model = helper.make_model(over_graph, producer_name="capi-test", opset_imports=[helper.make_opsetid("", 13)])
over_model.ir_version = 7
onnx.save(over_model, f"{out_dir}/over.onnx")

denot_x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
denot_x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
denot_x.type.tensor_type.shape.dim[1].denotation = "DATA_CHANNEL"
denot_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "capi_denot", [denot_x],
                                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
denot_model = helper.make_model(denot_graph, producer_name="capi-test", opset_imports=[helper.make_opsetid("", 13)])
denot_model.ir_version = 7
onnx.save(denot_model, f"{out_dir}/denot.onnx")
