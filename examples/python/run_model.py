"""run_model.py — load an ONNX model with spindle's Python package, set its
threading options, run it once on generated inputs and print the outputs.

    pip install --no-build-isolation --no-index .     # docs/packaging.md
    python3 run_model.py MODEL [NAME=1x3x48x320 ...]

Inputs are float32 ramps (0, 0.01, 0.02, ...); a dynamic dimension without a
NAME=... shape is 1. The code is ONNX Runtime's: `import onnxruntime as ort`
would run it unchanged.
"""
import sys

import numpy as np

import spindle as ort


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: run_model.py MODEL [NAME=DIMxDIM...]")
    shapes = {}
    for arg in argv[2:]:
        name, _, dims = arg.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split("x")]
        except ValueError:
            sys.exit(f"'{arg}': expected NAME=DIMxDIM..., e.g. x=1x3x48x320")
    print(f"spindle {ort.__version__}")

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2  # counts the calling thread
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(argv[1], so, providers=["CPUExecutionProvider"])

    feeds = {}
    for i in sess.get_inputs():
        dims = shapes.get(i.name) or [d if isinstance(d, int) else 1 for d in i.shape]
        n = int(np.prod(dims))
        feeds[i.name] = ((np.arange(n) % 100) * 0.01).astype(np.float32).reshape(dims)
    outputs = sess.run(None, feeds)
    for meta, value in zip(sess.get_outputs(), outputs):
        print(f"output {meta.name}: {value.dtype} {'x'.join(map(str, value.shape))}")


if __name__ == "__main__":
    main(sys.argv)
