"""CPU microseconds per `run` of the model bench/bindings/trivial_model.py
writes, through Python: one intra-op thread, RUNS calls in a loop after 200
warm-up calls. Compare with cpu_per_call.js and with `spindle bench MODEL
--shape input=1x512 --shape state=2x1x128 --intra 1 --json`
(cpu_ms_per_inference).

Usage: PYTHONPATH=<build>/bindings/python /usr/bin/python3 cpu_per_call.py MODEL [RUNS]
"""
import sys
import time

import numpy as np

import spindle

so = spindle.SessionOptions()
so.intra_op_num_threads = 1
sess = spindle.InferenceSession(sys.argv[1], so)
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
feeds = {"input": np.random.default_rng(0).random((1, 512), dtype=np.float32),
         "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
for _ in range(200):
    sess.run(None, feeds)
t = time.process_time_ns()
for _ in range(runs):
    sess.run(None, feeds)
print(f"python cpu_us_per_call {(time.process_time_ns() - t) / 1000 / runs:.2f}")
