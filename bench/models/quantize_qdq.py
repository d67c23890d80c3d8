#!/usr/bin/python3
"""Static quantization of a float CNN into ONNX Runtime's QDQ format.

    /usr/bin/python3 bench/models/quantize_qdq.py MODEL.onnx OUT.onnx \
        [--spindle build/spindle] [--shape input=1x3x224x224] [--calib 4]

Writes what ONNX Runtime's static quantizer writes for U8S8 in the QDQ
format (onnx and numpy only):
  - weights of Conv and Gemm: int8, symmetric (zero point 0), one scale per
    output channel (Conv: axis 0; Gemm with transB: axis 0, else axis 1),
    behind a DequantizeLinear;
  - biases: int32 with scale x_scale * w_scale[c], zero point absent;
  - activations: uint8 with scale and zero point from calibration, a
    QuantizeLinear then a DequantizeLinear after the tensor (every reader of
    the tensor then reads the DequantizeLinear), for the inputs and outputs of
    Conv, Add, GlobalAveragePool, MaxPool, Gemm, MatMul and Concat (each
    input and the output with its own parameters); a Relu alone after a Conv
    or Add is quantized at its output (not between them); the outputs of
    Flatten / Reshape / MaxPool / Transpose / Slice / Squeeze / Unsqueeze
    take their input's parameters when it is quantized.
Calibration: the min and max of each such tensor over a few inputs uniform
in [0, 1) (as bench/models/side_by_side.js feeds), computed by running the
model with those tensors as extra outputs through spindle's CLI
(`spindle run`); the range always includes 0.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

QUANT_OPS = {"Conv", "Add", "GlobalAveragePool", "MaxPool", "Gemm", "MatMul", "Concat"}
SAME_PARAMS = {"Flatten", "Reshape", "MaxPool", "Transpose", "Slice", "Squeeze", "Unsqueeze"}


def parse_shape(s):
    name, dims = s.split("=")
    return name, [int(d) for d in dims.split("x")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--spindle", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "spindle"))
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--calib", type=int, default=4)
    args = ap.parse_args()

    model = onnx.load(args.model)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    shapes = dict(parse_shape(s) for s in args.shape)
    graph_inputs = [i for i in g.input if i.name not in inits]

    consumers = {}
    producer = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
        for o in n.output:
            producer[o] = n
    graph_outputs = {o.name for o in g.output}

    # The tensors to quantize (activations only: not initializers).
    act = []
    seen = set()

    def want(t):
        if t and t not in inits and t not in seen:
            seen.add(t)
            act.append(t)

    def out_of(n):
        # A Relu alone after a Conv / Add: quantize at its output.
        o = n.output[0]
        users = consumers.get(o, [])
        if n.op_type in ("Conv", "Add") and len(users) == 1 and users[0].op_type == "Relu" and o not in graph_outputs:
            return users[0].output[0]
        return o

    for n in g.node:
        if n.op_type in QUANT_OPS:
            if n.op_type in ("Conv", "Gemm", "MatMul"):
                want(n.input[0])
            else:
                for i in n.input:
                    want(i)
            want(out_of(n))
        if n.op_type in SAME_PARAMS and n.input[0] in seen:
            want(n.output[0])

    # Calibration through spindle's CLI: the tensors as extra outputs.
    calib = onnx.ModelProto()
    calib.CopyFrom(model)
    extra = []
    for k, t in enumerate(act):
        name = "calib_%d" % k
        calib.graph.node.append(helper.make_node("Identity", [t], [name]))
        calib.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        extra.append(name)
    lo = {t: 0.0 for t in act}
    hi = {t: 0.0 for t in act}
    rng = np.random.default_rng(0)
    not_float = set()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "calib.onnx")
        onnx.save(calib, path)
        for r in range(args.calib):
            cmd = [args.spindle, "run", path, "--output-dir", os.path.join(tmp, "out%d" % r)]
            for i in graph_inputs:
                dims = shapes.get(i.name) or [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
                x = rng.random(dims, dtype=np.float32)
                f = os.path.join(tmp, "%s_%d.npy" % (i.name, r))
                np.save(f, x)
                cmd += ["--input", "%s=%s" % (i.name, f)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            for k, t in enumerate(act):
                v = np.load(os.path.join(tmp, "out%d" % r, extra[k] + ".npy"))
                if v.dtype.kind != "f":
                    not_float.add(t)
                    continue
                lo[t] = min(lo[t], float(v.min()))
                hi[t] = max(hi[t], float(v.max()))
    # Only float tensors are quantized (shape arithmetic such as an Add of
    # int64 sizes stays as it is).
    act = [t for t in act if t not in not_float]

    new_inits = []
    new_nodes = []

    def const(name, arr):
        new_inits.append(numpy_helper.from_array(arr, name))
        return name

    # Activation parameters; the SAME_PARAMS ops' outputs take their input's.
    params = {}
    for t in act:
        n = producer.get(t)
        if n is not None and n.op_type in SAME_PARAMS and n.input[0] in params:
            params[t] = params[n.input[0]]
            continue
        scale = np.float32((hi[t] - lo[t]) / 255.0)
        if scale == 0:
            scale = np.float32(1.0)
        zp = np.uint8(np.clip(np.round(-lo[t] / scale), 0, 255))
        params[t] = (scale, zp)

    # Q then DQ after each activation; every reader reads the DQ.
    rename = {}
    for k, t in enumerate(act):
        scale, zp = params[t]
        s = const("%s_scale" % t, np.array(scale, dtype=np.float32))
        z = const("%s_zero_point" % t, np.array(zp, dtype=np.uint8))
        new_nodes.append((t, helper.make_node("QuantizeLinear", [t, s, z], [t + "_quantized"], name=t + "_QuantizeLinear")))
        new_nodes.append((t, helper.make_node("DequantizeLinear", [t + "_quantized", s, z], [t + "_dequantized"],
                                              name=t + "_DequantizeLinear")))
        rename[t] = t + "_dequantized"

    # Weights and biases.
    removed_inits = set()
    readers = {}
    for n in g.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    for n in g.node:
        # Weights read by this node only (exporters share some constants).
        if n.op_type not in ("Conv", "Gemm") or n.input[1] not in inits or readers[n.input[1]] != 1:
            continue
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        if n.op_type == "Gemm" and (any(a.name == "transA" and a.i for a in n.attribute) or
                                    any(a.name in ("alpha", "beta") and a.f != 1.0 for a in n.attribute)):
            continue
        trans_b = n.op_type == "Gemm" and any(a.name == "transB" and a.i for a in n.attribute)
        axis = 0 if (n.op_type == "Conv" or trans_b) else 1
        moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        ws = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
        ws[ws == 0] = 1.0
        shape = [1] * w.ndim
        shape[axis] = -1
        wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
        base = n.input[1]
        qn, sn, zn = const(base + "_quantized", wq), const(base + "_scale", ws), const(base + "_zero_point",
                                                                                       np.zeros(ws.shape, np.int8))
        new_nodes.append((None, helper.make_node("DequantizeLinear", [qn, sn, zn], [base + "_dequantized"], axis=axis,
                                                 name=base + "_DequantizeLinear")))
        removed_inits.add(n.input[1])
        n.input[1] = base + "_dequantized"
        if len(n.input) > 2 and n.input[2] in inits and readers[n.input[2]] == 1 and n.input[0] in params:
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float32)
            bs = (params[n.input[0]][0] * ws).astype(np.float32)
            bq = np.round(b / bs).astype(np.int32)
            bb = n.input[2]
            qb, sb = const(bb + "_quantized", bq), const(bb + "_scale", bs)
            new_nodes.append((None, helper.make_node("DequantizeLinear", [qb, sb], [bb + "_dequantized"], axis=0,
                                                     name=bb + "_DequantizeLinear")))
            removed_inits.add(n.input[2])
            n.input[2] = bb + "_dequantized"

    # Rewire readers of the quantized activations (not the Q nodes themselves).
    for n in g.node:
        for k, i in enumerate(n.input):
            if i in rename:
                n.input[k] = rename[i]
    # A graph output keeps its name on its DequantizeLinear; the producer
    # writes a renamed tensor, which the QuantizeLinear reads.
    for t, node in new_nodes:
        if t in graph_outputs and node.op_type == "DequantizeLinear":
            node.output[0] = t
        if t in graph_outputs and node.op_type == "QuantizeLinear":
            node.input[0] = t + "_float"
    for n in g.node:
        for k, o in enumerate(n.output):
            if o in graph_outputs and o in rename:
                n.output[k] = o + "_float"
        for k, i in enumerate(n.input):
            if i.endswith("_dequantized") and i[: -len("_dequantized")] in graph_outputs:
                n.input[k] = i[: -len("_dequantized")]

    # Place each Q/DQ pair right after its tensor's producer (inputs: first).
    order = []
    pending = {}
    for t, node in new_nodes:
        pending.setdefault(t, []).append(node)
    order.extend(pending.pop(None, []))
    for i in graph_inputs:
        order.extend(pending.pop(i.name, []))
    for n in g.node:
        order.append(n)
        for o in n.output:
            order.extend(pending.pop(o[: -len("_float")] if o.endswith("_float") else o, []))
    assert not pending, pending.keys()
    del g.node[:]
    g.node.extend(order)
    kept = [t for t in g.initializer if t.name not in removed_inits]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    print("%s: %d activations quantized, %d nodes" % (args.out, len(act), len(g.node)))


if __name__ == "__main__":
    sys.exit(main())
