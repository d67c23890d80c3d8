"""Per-call time of a model's `InferenceSession.run` through Python.

Usage: PYTHONPATH=<build>/bindings/python /usr/bin/python3 per_call.py MODEL
           [--shape NAME=DIMS]... [--value NAME=V]... [--rounds N] [--runs N]
Inputs are uniform in [0, 1) (int64 / int32 inputs: 0), with the shapes given
(dimensions not given are 1); --value NAME=V fills input NAME with V (a sample
rate). One intra-op thread, sequential. Prints one JSON line: the median over
rounds of each round's p50 in microseconds and the CPU time per run. Compare
with `spindle bench MODEL --intra 1` (the same run in C++) and with
bench/models/side_by_side.js (Node.js, next to onnxruntime-node).
"""
import argparse
import json
import os
import statistics
import time

import numpy as np

import spindle

TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--shape", action="append", default=[], help="NAME=1x512")
ap.add_argument("--value", action="append", default=[], help="NAME=V")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--runs", type=int, default=2000)
args = ap.parse_args()
shapes = {k: [int(d) for d in v.split("x")] if v else [] for k, v in (s.split("=", 1) for s in args.shape)}
values = {k: float(v) for k, v in (s.split("=", 1) for s in args.value)}

so = spindle.SessionOptions()
so.intra_op_num_threads = 1
sess = spindle.InferenceSession(args.model, so)
rng = np.random.default_rng(0)
feeds = {}
for i in sess.get_inputs():
    if i.type not in TYPES:
        raise SystemExit(f"input '{i.name}' is {i.type}; float, int64, int32 and bool inputs are generated")
    dims = shapes.get(i.name, [d if isinstance(d, int) and d > 0 else 1 for d in i.shape])
    dtype = TYPES[i.type]
    x = rng.random(dims, dtype=np.float32).astype(dtype) if dtype == np.float32 else np.zeros(dims, dtype=dtype)
    if i.name in values:
        x = np.full(dims, values[i.name], dtype=dtype)
    feeds[i.name] = x
for _ in range(200):
    sess.run(None, feeds)
p50s, cpus = [], []
for _ in range(args.rounds):
    t = []
    c0 = time.process_time_ns()
    for _ in range(args.runs):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        t.append((time.perf_counter_ns() - t0) / 1000)
    cpus.append((time.process_time_ns() - c0) / 1000 / args.runs)
    p50s.append(statistics.median(t))
print(json.dumps({"model": os.path.basename(args.model), "binding": "python", "p50_us": round(statistics.median(p50s), 1),
                  "cpu_us": round(statistics.median(cpus), 1), "rounds": [round(v, 1) for v in p50s]}))
