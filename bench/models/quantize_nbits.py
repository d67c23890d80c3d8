#!/usr/bin/python3
"""4-bit block quantization of a float ONNX model's weights into
com.microsoft MatMulNBits, in the layout ONNX Runtime's contrib operator
reads: every MatMul whose B is a 2-D float initializer (K x N, possibly read
through Identity nodes) becomes

    MatMulNBits(A, B_q uint8 [N, k_blocks, block_size / 2], scales float [N * k_blocks],
                zero_points uint8 [N * ceil(k_blocks / 2)])   K, N, bits=4, block_size

Each column of B is cut into blocks of block_size values along K (the last
one padded with zeros); a block is quantized asymmetrically over [min(0, lo),
max(0, hi)]: scale = (hi - lo) / 15, zero point = clip(round(-lo / scale), 0,
15), q = clip(round_half_even(w / scale) + zero point, 0, 15). Two values per
byte, the earlier k in the low nibble; zero points packed the same way, each
column's row padded to a whole byte. Everything else stays float.

    /usr/bin/python3 bench/models/quantize_nbits.py IN.onnx OUT.onnx [--block-size 32] [--no-zero-points]
        [--accuracy-level 0]

--no-zero-points quantizes symmetrically (scale = max|w| / 7, codes around
the default zero point 8) and writes no zero_points input. --accuracy-level
sets the nodes' accuracy_level attribute (4: int8 activations, as ONNX
Runtime GenAI's CPU models are written).
"""
import argparse

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

from quantize import load_with_weights  # bench/models/quantize.py


def pack_nibbles(v):
    """uint8 values < 16 along the last axis (even length) -> bytes, low nibble first."""
    return (v[..., 0::2] | (v[..., 1::2] << 4)).astype(np.uint8)


def quantize_weight(w, block_size, zero_points):
    """w: float32 [K, N] -> (B [N, k_blocks, block_size/2], scales [N*k_blocks], zero points or None)."""
    K, N = w.shape
    k_blocks = (K + block_size - 1) // block_size
    wt = np.zeros((N, k_blocks * block_size), dtype=np.float32)
    wt[:, :K] = w.T
    blocks = wt.reshape(N, k_blocks, block_size)
    if zero_points:
        lo = np.minimum(blocks.min(axis=2), 0.0)
        hi = np.maximum(blocks.max(axis=2), 0.0)
        scale = ((hi - lo) / 15.0).astype(np.float32)
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
        zp = np.clip(np.rint(-lo / scale), 0, 15).astype(np.uint8)
    else:
        scale = (np.abs(blocks).max(axis=2) / 7.0).astype(np.float32)
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
        zp = np.full(scale.shape, 8, dtype=np.uint8)
    q = np.clip(np.rint(blocks / scale[:, :, None]) + zp[:, :, None], 0, 15).astype(np.uint8)
    packed_b = pack_nibbles(q)
    packed_zp = None
    if zero_points:
        zpad = np.zeros((N, k_blocks + (k_blocks % 2)), dtype=np.uint8)
        zpad[:, :k_blocks] = zp
        packed_zp = pack_nibbles(zpad).reshape(-1)
    return packed_b, scale.reshape(-1), packed_zp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--block-size", type=int, default=32, help="values per block along K (a power of 2 >= 16)")
    ap.add_argument("--no-zero-points", action="store_true", help="symmetric blocks, no zero_points input")
    ap.add_argument("--accuracy-level", type=int, default=0, choices=[0, 1, 2, 3, 4],
                    help="the accuracy_level attribute of the nodes (4: int8 activations)")
    args = ap.parse_args()
    bs = args.block_size
    if bs < 16 or bs & (bs - 1):
        ap.error(f"--block-size {bs}: expected a power of 2 >= 16")

    model, inits = load_with_weights(args.src)
    g = model.graph
    new_nodes, new_inits, done = [], [], {}
    count = 0
    for node in g.node:
        w = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2:
            new_nodes.append(node)
            continue
        K, N = w.dims
        if w.name not in done:
            b, scales, zp = quantize_weight(numpy_helper.to_array(w).astype(np.float32), bs, not args.no_zero_points)
            names = [w.name + "_Q4", w.name + "_scales"]
            new_inits += [numpy_helper.from_array(b, names[0]), numpy_helper.from_array(scales, names[1])]
            if zp is not None:
                names.append(w.name + "_zero_points")
                new_inits.append(numpy_helper.from_array(zp, names[2]))
            done[w.name] = names
        new_nodes.append(helper.make_node("MatMulNBits", [node.input[0]] + done[w.name], list(node.output),
                                          name=(node.name or node.output[0]) + "_Q4", domain="com.microsoft",
                                          K=K, N=N, bits=4, block_size=bs, accuracy_level=args.accuracy_level))
        count += 1
    # Float weights nothing reads any more are dropped.
    used = {i for n in new_nodes for i in n.input} | {o.name for o in g.output}
    kept = [t for t in g.initializer if t.name in used]
    del g.node[:]
    g.node.extend(new_nodes)
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, args.dst)
    print(f"{count} MatMul -> MatMulNBits (bits 4, block_size {bs}, accuracy_level {args.accuracy_level}, "
          f"{'no ' if args.no_zero_points else ''}zero points): {args.dst}")


if __name__ == "__main__":
    main()
