"""The share of the machine's memory bandwidth a decode step reaches: the
bytes of the weights its products read (the initializers MatMul, Gemm and
MatMulNBits take, each counted once) over the step's p50 (`spindle bench`,
in process), next to the copy and read bandwidth of bench_decode --stream
measured just before, round after round (this guest's bandwidth moves
between runs minutes apart, so the two are only compared within a round).

Usage: /usr/bin/python3 bench/models/decode_bandwidth.py MODEL.onnx
           [--shape NAME=DIMS ...] [--threads 1,2] [--rounds 3] [--runs 200] [--build build]
Prints one JSON line per round and thread count, then the medians.
"""
import argparse
import json
import re
import statistics
import subprocess

import onnx
from onnx import TensorProto

PRODUCTS = {"MatMul", "Gemm", "MatMulNBits"}
ITEM_BYTES = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2, TensorProto.DOUBLE: 8,
              TensorProto.UINT8: 1, TensorProto.INT8: 1, TensorProto.INT32: 4, TensorProto.INT64: 8}


def weight_bytes(path):
    g = onnx.load(path, load_external_data=False).graph
    inits = {t.name: t for t in g.initializer}
    names = {i for n in g.node if n.op_type in PRODUCTS for i in n.input if i in inits}
    total = 0
    for name in names:
        t = inits[name]
        numel = 1
        for d in t.dims:
            numel *= d
        total += numel * ITEM_BYTES[t.data_type]
    return total


def stream(build):
    out = subprocess.run([f"{build}/bench/kernels/bench_decode", "--stream"], capture_output=True, text=True,
                         check=True).stdout
    bw = {}
    for m in re.finditer(r"threads (\d+)\s+copy\s+([\d.]+) GB/s\s+read\s+([\d.]+) GB/s", out):
        bw[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return bw


def step_ms(build, model, shapes, threads, runs):
    cmd = [f"{build}/spindle", "bench", model, "--intra", str(threads), "--runs", str(runs), "--warmup", "20"]
    for s in shapes:
        cmd += ["--shape", s]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"p50 ([\d.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    wb = weight_bytes(a.model)
    rows = []
    for r in range(a.rounds):
        bw = stream(a.build)
        for t in (int(x) for x in a.threads.split(",")):
            ms = step_ms(a.build, a.model, a.shape, t, a.runs)
            gbs = wb / ms / 1e6
            row = {"round": r, "threads": t, "weights_mb": round(wb / 1e6, 1), "step_ms": ms,
                   "weights_gbs": round(gbs, 1), "copy_gbs": bw[t][0], "read_gbs": bw[t][1],
                   "of_copy": round(gbs / bw[t][0], 2), "of_read": round(gbs / bw[t][1], 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    for t in sorted({r["threads"] for r in rows}):
        sel = [r for r in rows if r["threads"] == t]
        med = lambda k: statistics.median(r[k] for r in sel)
        print(f"threads {t}: step p50 {med('step_ms'):.3f} ms, weights {med('weights_gbs'):.1f} GB/s, "
              f"{med('of_copy'):.0%} of copy ({med('copy_gbs'):.1f} GB/s), {med('of_read'):.0%} of read "
              f"({med('read_gbs'):.1f} GB/s) (medians over rounds)")


if __name__ == "__main__":
    main()
