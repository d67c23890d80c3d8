"""Multiply-adds of a model's Conv, ConvTranspose, Gemm and MatMul nodes (from
ONNX shape inference, at the given input shape), split by kind: the work a
model's time is read against. With the core's FMA ceiling (bench_gemm's
peak_fma: GFLOPS / 2 multiply-adds per second), a time t gives the fraction
of that ceiling a runtime reached: macs / t / peak.

Usage: /usr/bin/python3 bench/models/model_macs.py MODEL.onnx NAME=DIMS [NAME=DIMS...]
"""
import sys

import onnx
from onnx import shape_inference


def dims_of(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    fixed = dict(a.split("=") for a in sys.argv[2:])
    for inp in model.graph.input:
        if inp.name in fixed:
            dims = [int(d) for d in fixed[inp.name].split("x")]
            for d, v in zip(inp.type.tensor_type.shape.dim, dims):
                d.ClearField("dim_param")
                d.dim_value = v
    model = shape_inference.infer_shapes(model)
    shapes = {vi.name: dims_of(vi) for vi in list(model.graph.value_info) + list(model.graph.input) +
              list(model.graph.output)}
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    kinds = {}
    for node in model.graph.node:
        attrs = {a.name: a for a in node.attribute}
        macs, kind = 0, None
        if node.op_type in ("Conv", "ConvTranspose"):
            w = shapes.get(node.input[1])
            y = shapes.get(node.output[0])
            if not w or not y:
                continue
            spatial = 1
            for d in y[2:]:
                spatial *= d
            taps = 1
            for d in w[2:]:
                taps *= d
            if node.op_type == "Conv":
                macs = y[0] * y[1] * spatial * w[1] * taps
            else:
                x = shapes.get(node.input[0])
                xs = 1
                for d in x[2:]:
                    xs *= d
                macs = x[0] * x[1] * xs * w[1] * taps
            group = attrs["group"].i if "group" in attrs else 1
            if node.op_type == "Conv" and group > 1 and group == w[0] and w[1] == 1:
                kind = "depthwise"
            elif taps == 1:
                kind = "1x1"
            else:
                kind = "kxk"
        elif node.op_type in ("Gemm", "MatMul"):
            a = shapes.get(node.input[0])
            y = shapes.get(node.output[0])
            if not a or not y:
                continue
            k = a[-1] if not (node.op_type == "Gemm" and "transA" in attrs and attrs["transA"].i) else a[0]
            n = 1
            for d in y:
                n *= d
            macs = n * k
            kind = "gemm/matmul"
        if kind:
            kinds[kind] = kinds.get(kind, 0) + macs
    total = sum(kinds.values())
    print(f"total {total / 1e9:.3f} G multiply-adds")
    for kind, m in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:12} {m / 1e9:.3f} G ({100.0 * m / total:.0f}%)")


if __name__ == "__main__":
    main()
