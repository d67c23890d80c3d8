"""Per-call cost of `InferenceSession.run` through Python on a small model.

Usage: PYTHONPATH=<build>/bindings/python /usr/bin/python3 overhead.py MODEL ROUNDS RUNS
Prints one JSON line: the median over rounds of each round's p50, in
microseconds (one intra-op thread, sequential), for the package's
InferenceSession.run and, alternating call by call, for the extension
module's run under it (spindle._C: the cost of the Python layer). Compare with
`spindle bench MODEL --intra 1` (the same run without a binding) and with
bench/bindings/overhead.js (Node.js, next to onnxruntime-node).
"""
import json
import statistics
import sys
import time

import numpy as np

import spindle

model, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
so = spindle.SessionOptions()
so.intra_op_num_threads = 1
sess = spindle.InferenceSession(model, so)
name = sess.get_inputs()[0].name
x = np.sin(np.arange(640, dtype=np.float32)).reshape(16, 40)
feeds = {name: x}
for _ in range(500):
    sess.run(None, feeds)
# Per round: the p50 of the package's run and of spindle._C's, alternating.
p50s, direct_p50s = [], []
for _ in range(rounds):
    t, d = [], []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        t1 = time.perf_counter_ns()
        sess._sess.run(None, feeds)
        t.append((t1 - t0) / 1000)
        d.append((time.perf_counter_ns() - t1) / 1000)
    p50s.append(statistics.median(t))
    direct_p50s.append(statistics.median(d))
for binding, values in (("python", p50s), ("python (spindle._C, without the package layer)", direct_p50s)):
    print(json.dumps({"side": "spindle", "binding": binding, "p50_us": round(statistics.median(values), 1),
                      "rounds": [round(v, 1) for v in values]}))
