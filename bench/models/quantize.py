#!/usr/bin/python3
"""Dynamic int8 quantization of a float ONNX model, in the format ONNX
Runtime's quantize_dynamic writes (QOperator, MatMul only): every MatMul whose
B is a 2-D float initializer becomes

    DynamicQuantizeLinear(A) -> (A_q uint8, A_scale, A_zero_point)
    MatMulInteger(A_q, W_q int8, A_zero_point, W_zero_point) -> int32
    Cast(to float) -> Mul(., Mul(A_scale, W_scale)) -> the MatMul's output

with one DynamicQuantizeLinear per activation (shared by the MatMuls that
read it). A weight read through Identity nodes counts as an initializer
(PyTorch exports shared weights so), and a Gemm (alpha = beta = 1, transA = 0)
of a constant B is quantized as a MatMul of op(B) followed by the Add of its C,
as ONNX Runtime's quantizer sees them after its pre-processing. Every LSTM
whose W and R are 3-D float initializers becomes com.microsoft
DynamicQuantizeLSTM, as quantize_dynamic writes it: W [D, 4H, I] and R
[D, 4H, H] quantized per direction (--per-channel: per gate unit, a row of
W / R) and stored transposed, [D, I, 4H] and [D, H, 4H], followed by
W_scale, W_zero_point, R_scale, R_zero_point of shape [D] ([D, 4H]).
Weights are symmetric int8, as quantize_dynamic's default:
scale = max|w| / 127, zero point 0, w_q = clip(round_half_even(w / scale),
-127, 127), over the whole tensor or (--per-channel) per column of B. Bias
Adds, Gemms and everything else stay float.

    /usr/bin/python3 bench/models/quantize.py IN.onnx OUT.onnx [--per-channel]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def quantize_weight(w, per_channel):
    absmax = np.abs(w).max(axis=0) if per_channel else np.array(np.abs(w).max())
    scale = (absmax / 127.0).astype(np.float32)
    scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    zp = np.zeros(scale.shape, dtype=np.int8)
    return q, scale, zp


def quantize_lstm(node, inits, per_channel, new_inits):
    """The DynamicQuantizeLSTM replacing `node` (an LSTM of 3-D float W and R
    initializers), its weights appended to new_inits; None when W or R is not
    such an initializer."""
    w, r = (inits.get(node.input[i]) for i in (1, 2))
    if w is None or r is None or len(w.dims) != 3 or len(r.dims) != 3 or w.data_type != TensorProto.FLOAT or \
            r.data_type != TensorProto.FLOAT:
        return None
    inputs = [node.input[0]]
    params = []
    for t in (w, r):
        a = numpy_helper.to_array(t).astype(np.float32)  # [D, 4H, K]
        rows = a.reshape(-1, a.shape[2]).T if per_channel else a.reshape(a.shape[0], -1).T  # columns: channels
        q, scale, zp = quantize_weight(rows, True)
        shape = (a.shape[0], a.shape[1]) if per_channel else (a.shape[0],)
        q = q.T.reshape(a.shape).transpose(0, 2, 1).copy()  # [D, K, 4H]
        names = (t.name + "_quantized", t.name + "_scale", t.name + "_zero_point")
        new_inits += [numpy_helper.from_array(q, names[0]), numpy_helper.from_array(scale.reshape(shape), names[1]),
                      numpy_helper.from_array(zp.reshape(shape), names[2])]
        inputs.append(names[0])
        params += [names[1], names[2]]
    inputs += [node.input[i] if len(node.input) > i else "" for i in range(3, 8)] + params
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "layout"}
    return helper.make_node("DynamicQuantizeLSTM", inputs, list(node.output), name=(node.name or "lstm") + "_quant",
                            domain="com.microsoft", **attrs)


def load_with_weights(path):
    """The model and its initializers by name, also under the names of the
    Identity nodes reading them (PyTorch exports shared weights so)."""
    model = onnx.load(path)
    inits = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Identity" and n.input[0] in inits:
            inits[n.output[0]] = inits[n.input[0]]
    return model, inits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--per-channel", action="store_true", help="one weight scale per column of B")
    args = ap.parse_args()

    model, inits = load_with_weights(args.src)
    g = model.graph
    new_nodes, new_inits = [], []
    quantized_weights = {}  # weight name -> (q name, scale name, zp name)
    dq_of = {}  # activation name -> (q, scale, zp)
    count = lstms = 0
    for node in g.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "LSTM" and attrs.get("layout", 0) == 0:
            q = quantize_lstm(node, inits, args.per_channel, new_inits)
            if q is not None:
                new_nodes.append(q)
                lstms += 1
                continue
        w, trans, bias = None, False, None
        if node.op_type == "MatMul" and len(node.input) == 2:
            w = inits.get(node.input[1])
        elif (node.op_type == "Gemm" and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0
              and not attrs.get("transA", 0)):
            w, trans = inits.get(node.input[1]), bool(attrs.get("transB", 0))
            bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2:
            new_nodes.append(node)
            continue
        a = node.input[0]
        if a not in dq_of:
            names = (a + "_quantized", a + "_scale", a + "_zero_point")
            new_nodes.append(helper.make_node("DynamicQuantizeLinear", [a], list(names), name=a + "_QuantizeLinear"))
            dq_of[a] = names
        aq, ascale, azp = dq_of[a]
        key = w.name + ("_T" if trans else "")
        if key not in quantized_weights:
            wf = numpy_helper.to_array(w).astype(np.float32)
            q, scale, zp = quantize_weight(wf.T.copy() if trans else wf, args.per_channel)
            names = (key + "_quantized", key + "_scale", key + "_zero_point")
            new_inits += [numpy_helper.from_array(q, names[0]), numpy_helper.from_array(scale, names[1]),
                          numpy_helper.from_array(zp, names[2])]
            quantized_weights[key] = names
        wq, wscale, wzp = quantized_weights[key]
        out = node.output[0] if bias is None else node.output[0] + "_matmul"
        base = node.name or out
        new_nodes.append(helper.make_node("MatMulInteger", [aq, wq, azp, wzp], [out + "_output_quantized"],
                                          name=base + "_quant"))
        new_nodes.append(helper.make_node("Cast", [out + "_output_quantized"], [out + "_output_quantized_cast"],
                                          to=TensorProto.FLOAT, name=base + "_quant_cast"))
        new_nodes.append(helper.make_node("Mul", [ascale, wscale], [out + "_scales_mul"], name=base + "_scales_mul"))
        new_nodes.append(helper.make_node("Mul", [out + "_output_quantized_cast", out + "_scales_mul"], [out],
                                          name=base + "_output_scale_mul"))
        if bias is not None:
            new_nodes.append(helper.make_node("Add", [out, bias], [node.output[0]], name=base + "_bias_add"))
        count += 1
    # Drop Identity nodes and float weights nothing reads any more.
    outputs = {o.name for o in g.output}
    while True:
        used = {i for n in new_nodes for i in n.input} | outputs
        alive = [n for n in new_nodes if n.op_type != "Identity" or n.output[0] in used]
        if len(alive) == len(new_nodes):
            break
        new_nodes = alive
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    del g.node[:]
    g.node.extend(new_nodes)
    if not any(o.domain in ("", "ai.onnx") and o.version >= 11 for o in model.opset_import):
        sys.exit("the model imports ai.onnx below opset 11 (DynamicQuantizeLinear needs 11)")
    if lstms and not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    onnx.save(model, args.dst)
    print(f"{args.dst}: {count} MatMuls and {lstms} LSTMs quantized ({len(quantized_weights)} weights, "
          f"{'per channel' if args.per_channel else 'per tensor'}), {len(dq_of)} DynamicQuantizeLinear")


if __name__ == "__main__":
    main()
