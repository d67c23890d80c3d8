#!/usr/bin/python3
"""HTTP and gRPC side by side: spindle serve on a one-model repository, one
request (random inputs; the binary tensor data extension over HTTP,
raw_input_contents over gRPC) sent in a closed loop by C client processes
(one connection each) for a fixed number of requests per client, at each
concurrency. Prints throughput, p50/p99 latency and refusals per transport,
the CPU time the server and the clients spent per request (the clients share
the machine with the server), the server's most threads seen during the level
and its peak RSS (VmHWM; one server process per transport); first, the
in-process throughput of the same model and inputs (spindle bench, one run at
a time on the same thread count: the limit the server approaches).

  bench/serve/transports.py MODEL.onnx [--build DIR] [--requests N] [--warmup N]
                            [--concurrency 1,2,4,8,16,32] [--transports http,grpc] [--threads N] [--spin 0|1]
                            [--max-batch-size N --max-queue-delay-us D] [--shape NAME=DIMS]...
                            (dynamic dimensions not given are 1)

With --max-batch-size the model's config.json turns dynamic batching on, and
the in-process line runs batches of that size (rows per second).

Needs Debian's python3-grpcio, numpy, protoc and grpc_python_plugin.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "tools", "spindle", "proto")
WARMUP = 20  # requests per client before the clock starts (--warmup)
TYPES = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32, "UINT8": np.uint8,
         "INT8": np.int8, "BOOL": np.bool_}


def start(spindle, repo, threads, grpc, spin):
    args = [spindle, "serve", "--model-repository", repo, "--http-port", "0", "--max-queue", "4096",
            "--threads", str(threads)]
    if spin is not None:
        args += ["--spin", str(spin)]
    if grpc:
        args += ["--grpc-port", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)(?:, gRPC on 127\.0\.0\.1:(\d+))?", line)
    if not m:
        proc.kill()
        sys.exit("spindle serve did not start: %r" % line)
    return proc, int(m.group(1)), int(m.group(2) or 0)


def peak_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024


def thread_count(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"Threads:\s+(\d+)", f.read()).group(1))


def inputs_of(port, given):
    meta = json.load(__import__("urllib.request").request.urlopen("http://127.0.0.1:%d/v2/models/m" % port))
    rng = np.random.default_rng(0)
    out = []
    for i in meta["inputs"]:
        shape = given.get(i["name"]) or [d if d >= 0 else 1 for d in i["shape"]]
        out.append((i["name"], i["datatype"], (rng.random(shape) * 2 - 1).astype(TYPES[i["datatype"]])))
    return out, [o["name"] for o in meta["outputs"]]


def http_body(inputs, outputs):
    header = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": d, "parameters": {"binary_data_size": a.nbytes}}
                         for n, d, a in inputs],
              "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs]}
    h = json.dumps(header).encode()
    return h + b"".join(a.tobytes() for _, _, a in inputs), len(h)


def http_client(port, body, header_length, n, ready, q):
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.connect()
    headers = {"Inference-Header-Content-Length": str(header_length), "Content-Type": "application/octet-stream"}
    for _ in range(WARMUP):
        c.request("POST", "/v2/models/m/infer", body, headers)
        c.getresponse().read()
    ready.wait()  # every client connected and warm: the clock starts
    lat, refused, cpu0 = [], 0, time.process_time()
    for _ in range(n):
        t0 = time.perf_counter()
        c.request("POST", "/v2/models/m/infer", body, headers)
        r = c.getresponse()
        r.read()
        lat.append(time.perf_counter() - t0)
        refused += r.status != 200
    q.put((lat, refused, time.process_time() - cpu0))


def grpc_client(port, stubs_dir, inputs, n, ready, q):
    sys.path.insert(0, stubs_dir)
    import grpc
    import inference_pb2 as pb
    import inference_pb2_grpc as pbg
    stub = pbg.GRPCInferenceServiceStub(grpc.insecure_channel("127.0.0.1:%d" % port))
    req = pb.ModelInferRequest(
        model_name="m", inputs=[pb.ModelInferRequest.InferInputTensor(name=nm, datatype=d, shape=a.shape)
                                for nm, d, a in inputs],
        raw_input_contents=[a.tobytes() for _, _, a in inputs])
    # A new HTTP/2 connection starts with a 64 KB flow-control window that
    # grows with use: warm it as the HTTP clients' are.
    for _ in range(WARMUP):
        stub.ModelInfer(req)
    ready.wait()  # every client connected and warm: the clock starts
    lat, refused, cpu0 = [], 0, time.process_time()
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            stub.ModelInfer(req)
        except grpc.RpcError:
            refused += 1
        lat.append(time.perf_counter() - t0)
    q.put((lat, refused, time.process_time() - cpu0))


def cpu_seconds(pid):
    """The process's user + system CPU time so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def level(target, args, c, n, server):
    q = multiprocessing.Queue()
    ready = multiprocessing.Barrier(c + 1)
    procs = [multiprocessing.Process(target=target, args=(*args, n, ready, q)) for _ in range(c)]
    for p in procs:
        p.start()
    threads, done = [thread_count(server)], threading.Event()
    tids0 = set(os.listdir("/proc/%d/task" % server))
    tids = set(tids0)

    def sample():
        # The most threads at once, and the threads started during the level
        # (seen by sampling: short-lived ones may be missed).
        while not done.wait(0.005):
            threads.append(thread_count(server))
            tids.update(os.listdir("/proc/%d/task" % server))
    sampler = threading.Thread(target=sample)
    sampler.start()
    ready.wait()
    t0, cpu0 = time.perf_counter(), cpu_seconds(server)
    results = [q.get() for _ in procs]
    took, cpu = time.perf_counter() - t0, cpu_seconds(server) - cpu0
    done.set()
    sampler.join()
    for p in procs:
        p.join()
    lat = np.array(sum((r[0] for r in results), [])) * 1000
    return (c * n / took, np.percentile(lat, 50), np.percentile(lat, 99), sum(r[1] for r in results),
            cpu * 1000 / (c * n), sum(r[2] for r in results) * 1000 / (c * n), max(threads), len(tids - tids0))


def in_process(spindle, a, given):
    """spindle bench on the same inputs, one run at a time (the server's default
    --concurrent-runs 1): runs per second, and rows per second with batches."""
    rows = max(a.max_batch_size, 1)
    shapes = []
    import onnx
    m = onnx.load(a.model, load_external_data=False)
    for i in m.graph.input:
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
        dims = given.get(i.name, dims)
        if a.max_batch_size:
            dims = [rows] + list(dims[1:])
        shapes += ["--shape", "%s=%s" % (i.name, "x".join(map(str, dims)))]
    threads = a.threads or os.cpu_count()
    p = subprocess.run([spindle, "bench", a.model, *shapes, "--threads", str(threads), "--runs", "200", "--warmup", "10",
                        "--json"], capture_output=True, text=True, check=True)
    r = json.loads(p.stdout)
    r = r[0] if isinstance(r, list) else r
    per_s = r.get("throughput_per_s") or 1000.0 / r["latency_ms"]["p50"]
    return "%.1f runs/s (p50 %.2f ms, CPU %.3f ms/run%s), spindle bench --threads %d" % (
        per_s, r["latency_ms"]["p50"], r["cpu_ms_per_inference"], ", batches of %d rows: %.1f rows/s" % (rows, per_s * rows) if a.max_batch_size else "",
        threads)


def batch_runs(port):
    """{batch size: runs} from the server's metrics."""
    text = __import__("urllib.request").request.urlopen("http://127.0.0.1:%d/metrics" % port).read().decode()
    return {int(m.group(1)): int(m.group(2))
            for m in re.finditer(r'spindle_serve_batch_runs_total\{[^}]*batch_size="(\d+)"\} (\d+)', text)}


def main():
    global WARMUP
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--requests", type=int, default=400, help="requests per client at each level")
    ap.add_argument("--warmup", type=int, default=WARMUP, help="requests per client before the clock starts")
    ap.add_argument("--concurrency", default="1,2,4,8,16,32")
    ap.add_argument("--transports", default="http,grpc")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--spin", type=int, choices=[0, 1], help="the server's --spin (default: its pools' default)")
    ap.add_argument("--max-batch-size", type=int, default=0)
    ap.add_argument("--max-queue-delay-us", type=int, default=0)
    ap.add_argument("--shape", action="append", default=[])
    a = ap.parse_args()
    WARMUP = a.warmup
    given = {k: [int(d) for d in v.split("x")] for k, v in (s.split("=", 1) for s in a.shape)}
    spindle = os.path.join(a.build, "spindle")
    work = tempfile.mkdtemp(prefix="spindle-transports-")
    try:
        os.makedirs(os.path.join(work, "repo", "m", "1"))
        os.symlink(os.path.realpath(a.model), os.path.join(work, "repo", "m", "1", "model.onnx"))
        if a.max_batch_size:
            with open(os.path.join(work, "repo", "m", "config.json"), "w") as f:
                json.dump({"max_batch_size": a.max_batch_size,
                           "dynamic_batching": {"max_queue_delay_microseconds": a.max_queue_delay_us}}, f)
        stubs = os.path.join(work, "stubs")
        os.makedirs(stubs)
        subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + stubs, "--grpc_python_out=" + stubs,
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        os.path.join(PROTO_DIR, "inference.proto")], check=True)
        levels = [int(c) for c in a.concurrency.split(",")]
        commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        print("model %s, %d requests per client per level, server --threads %d, commit %s"
              % (os.path.basename(a.model), a.requests, a.threads, commit))
        print("in-process: %s" % in_process(spindle, a, given))
        print("%-10s %-5s %10s %9s %9s %8s %18s %18s %8s %8s" % (
            "transport", "conc", "req/s", "p50 ms", "p99 ms", "refused", "server CPU ms/req", "client CPU ms/req",
            "threads", "started"))
        for transport in a.transports.split(","):
            proc, port, gport = start(spindle, os.path.join(work, "repo"), a.threads, transport == "grpc", a.spin)
            try:
                inputs, outputs = inputs_of(port, given)
                rss0 = peak_rss_mb(proc.pid)
                if transport == "http":
                    body, hl = http_body(inputs, outputs)
                    target, args = http_client, (port, body, hl)
                else:
                    target, args = grpc_client, (gport, stubs, inputs)
                for c in levels:
                    runs0 = batch_runs(port)
                    row = level(target, args, c, a.requests, proc.pid)
                    runs = {k: v - runs0.get(k, 0) for k, v in batch_runs(port).items()}
                    n_runs = sum(runs.values())
                    mean = " mean batch %.2f" % (sum(k * v for k, v in runs.items()) / n_runs) if n_runs else ""
                    print("%-10s %-5d %10.1f %9.2f %9.2f %8d %18.3f %18.3f %8d %8d%s"
                          % ((transport, c) + row + (mean,)), flush=True)
                print("%-10s peak RSS %.1f MB (%.1f MB after loading)" % (transport, peak_rss_mb(proc.pid), rss0))
            finally:
                proc.terminate()
                proc.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
