#!/usr/bin/python3
"""same_bits.py — A/B check of two spindle builds: same bits, and CPU ms.

Runs a set of models through two `spindle` binaries (e.g. main's and a
branch's) at intra-op 1 and 2 threads, with the same fixed random inputs, and
prints per model:
  - whether every output is bitwise identical (SHA-256 of each .npy's data)
    between the two builds and between intra 1 and intra 2 of each build;
  - CPU ms per inference of each build at each thread count, side by side
    (`spindle bench --json`, cpu_ms_per_inference). CPU ms, not wall time:
    wall latency on a shared, loaded machine says little.

Usage:
  /usr/bin/python3 bench/same_bits.py A_SPINDLE B_SPINDLE [--models DIR_OR_FILE ...]
      [--runs N] [--warmup N] [--threads 1,2] [--no-time] [--keep DIR]

Models default to every .onnx under ~/.cache/spindle/bench-models and
~/.cache/spindle/models. Exit status: 0 when every model's outputs are
identical everywhere, 1 when some differ, 2 when a run fails.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HOME = os.path.expanduser("~")
DEFAULT_MODEL_DIRS = [os.path.join(HOME, ".cache/spindle/bench-models"), os.path.join(HOME, ".cache/spindle/models")]

# Symbolic dimensions: by name, then by (model stem, input, axis).
NAMED_DIMS = {"seq": 16, "past": 8, "batch": 1, "batch_size": 1}
MODEL_DIMS = {
    "ch_PP-OCRv4_det_infer": [1, 3, 320, 320],
    "ch_PP-OCRv4_det_infer_logits": [1, 3, 320, 320],
    "ch_PP-OCRv4_rec_infer": [1, 3, 48, 320],
    "ch_ppocr_mobile_v2.0_cls_infer": [1, 3, 48, 192],
}

NP_TYPES = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.BOOL: np.bool_,
}


def model_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".onnx"))
        elif os.path.isfile(p):
            out.append(p)
    return out


def make_inputs(model_path, out_dir, seed):
    """Writes one .npy per graph input (fixed seed); returns NAME=FILE args."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    stem = os.path.splitext(os.path.basename(model_path))[0]
    rng = np.random.default_rng(seed)
    args = []
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        dims = []
        for axis, d in enumerate(tt.shape.dim):
            if d.dim_value > 0:
                dims.append(d.dim_value)
            elif stem in MODEL_DIMS:
                dims.append(MODEL_DIMS[stem][axis])
            else:
                dims.append(NAMED_DIMS.get(d.dim_param, 1))
        dtype = NP_TYPES.get(tt.elem_type)
        if dtype is None:
            raise RuntimeError(f"{stem}: input {inp.name} has element type {tt.elem_type}, not supported here")
        if np.issubdtype(dtype, np.floating):
            value = rng.standard_normal(dims).astype(dtype)
        elif dtype == np.bool_:
            value = rng.integers(0, 2, dims).astype(np.bool_)
        else:
            value = rng.integers(0, 10, dims).astype(dtype)  # token ids and positions: small, valid
        safe = inp.name.replace("/", "_").replace(":", "_")
        path = os.path.join(out_dir, f"{safe}.npy")
        np.save(path, value)
        args += ["--input", f"{inp.name}={path}"]
    return args


def output_hashes(spindle, model, inputs, intra, out_dir):
    """Runs the model once; returns {output file: sha256 of its dtype, shape and data}."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    cmd = [spindle, "run", model, *inputs, "--intra", str(intra), "--output-dir", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    hashes = {}
    for root, _, files in os.walk(out_dir):
        for f in sorted(files):
            path = os.path.join(root, f)
            arr = np.load(path, allow_pickle=False)
            h = hashlib.sha256(f"{arr.dtype}{arr.shape}".encode())
            h.update(np.ascontiguousarray(arr).tobytes())
            hashes[os.path.relpath(path, out_dir)] = h.hexdigest()
    if not hashes:
        raise RuntimeError(f"{' '.join(cmd)} wrote no outputs")
    return hashes


def cpu_ms(spindle, model, inputs, intra, runs, warmup):
    cmd = [spindle, "bench", model, *inputs, "--intra", str(intra), "--runs", str(runs), "--warmup", str(warmup),
           "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    return json.loads(r.stdout)["cpu_ms_per_inference"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="spindle binary A (e.g. main's build)")
    ap.add_argument("b", help="spindle binary B (e.g. the branch's build)")
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODEL_DIRS, help="model files or directories")
    ap.add_argument("--threads", default="1,2", help="intra-op thread counts to compare (default 1,2)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per CPU figure")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-time", action="store_true", help="check the bits only")
    ap.add_argument("--keep", help="keep inputs and outputs under this directory")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    builds = {"A": args.a, "B": args.b}
    work = args.keep or tempfile.mkdtemp(prefix="same_bits_")
    models = model_files(args.models)
    if not models:
        print("no models found", file=sys.stderr)
        return 2

    cols = " ".join(f"{f'A@{t} ms':>8} {f'B@{t} ms':>9}" for t in threads)
    print(f"{'model':34} {'A==B':5} {'threads':8} {cols if not args.no_time else ''}")
    status = 0
    for model in models:
        stem = os.path.splitext(os.path.basename(model))[0]
        mdir = os.path.join(work, stem)
        os.makedirs(mdir, exist_ok=True)
        try:
            inputs = make_inputs(model, mdir, args.seed)
            got = {(k, t): output_hashes(exe, model, inputs, t, os.path.join(mdir, f"out_{k}{t}"))
                   for k, exe in builds.items() for t in threads}
            times = {} if args.no_time else {
                (k, t): cpu_ms(exe, model, inputs, t, args.runs, args.warmup) for t in threads for k, exe in builds.items()}
        except RuntimeError as e:
            print(f"{stem:34} FAILED: {e}")
            status = 2
            continue
        same_ab = all(got[("A", t)] == got[("B", t)] for t in threads)
        same_threads = all(got[(k, t)] == got[(k, threads[0])] for k in builds for t in threads)
        if not (same_ab and same_threads):
            status = max(status, 1)
        figures = " ".join(f"{times[('A', t)]:8.2f} {times[('B', t)]:9.2f}" for t in threads) if times else ""
        print(f"{stem:34} {'yes' if same_ab else 'NO':5} {'same' if same_threads else 'DIFFER':8} {figures}",
              flush=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("all outputs bitwise identical" if status == 0 else "outputs differ or runs failed")
    return status


if __name__ == "__main__":
    sys.exit(main())
