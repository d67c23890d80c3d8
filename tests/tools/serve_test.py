#!/usr/bin/python3
"""spindle serve end to end: starts the server on 127.0.0.1 with an ephemeral
port on a temporary repository and talks the Open Inference Protocol (REST)
to it with http.client.

Usage: serve_test.py SPINDLE_CLI   (or SPINDLE_CLI in the environment; pytest runs it too)
"""
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SPINDLE = os.environ.get("SPINDLE_CLI", "spindle")


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


def save(model_graph, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    m = helper.make_model(model_graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def mlp_graph(seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    nodes = [const("w", w), const("b", b), helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["z"]), helper.make_node("Tanh", ["z"], ["y"])]
    return helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 5])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])


def types_graph():
    nodes = [const("seven", np.array(7, dtype=np.int64)), helper.make_node("Add", ["i64", "seven"], ["i64_out"]),
             helper.make_node("Not", ["b"], ["b_out"]), helper.make_node("Identity", ["s"], ["s_out"]),
             const("half", np.array(0.5, dtype=np.float64)), helper.make_node("Mul", ["d", "half"], ["d_out"])]
    vi = helper.make_tensor_value_info
    return helper.make_graph(
        nodes, "types",
        [vi("i64", TensorProto.INT64, [2, 3]), vi("b", TensorProto.BOOL, [-1]), vi("s", TensorProto.STRING, [-1]),
         vi("d", TensorProto.DOUBLE, [-1])],
        [vi("i64_out", TensorProto.INT64, [2, 3]), vi("b_out", TensorProto.BOOL, [-1]),
         vi("s_out", TensorProto.STRING, [-1]), vi("d_out", TensorProto.DOUBLE, [-1])])


def add_one_body():
    """A Loop body adding one to a carried [2] tensor per iteration."""
    one = numpy_helper.from_array(np.array([1.0, 1.0], dtype=np.float32), "one")
    return helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["one"], value=one), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])


def slow_graph():
    """y = x + trip, one Add per Loop iteration: as slow as trip asks."""
    body = add_one_body()
    nodes = [const("cond", np.array(True)), helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)]
    return helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("trip", TensorProto.INT64, []),
                                             helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])


class Server:
    def __init__(self, repo, *args):
        self.proc = subprocess.Popen([SPINDLE, "serve", "--model-repository", repo, "--http-port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("spindle serve did not start: %r %r" % (line, self.proc.stderr.read()))
        self.port = int(m.group(1))

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def json(self, method, path, obj=None, **kw):
        status, headers, body = self.request(method, path, None if obj is None else json.dumps(obj).encode(), **kw)
        return status, json.loads(body) if body else None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


@contextlib.contextmanager
def scratch_server(fill, server_class, *args):
    """A server (server_class(repo, *args)) on a temporary repository that
    fill(repo) writes; killed if still running, and removed, afterwards."""
    work = tempfile.mkdtemp(prefix="spindle-serve-test-")
    try:
        repo = os.path.join(work, "repo")
        fill(repo)
        server = server_class(repo, *args)
        try:
            yield server
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def reference(model, feeds, work):
    """The outputs of `spindle run` (the library) for these inputs, by name."""
    args = [SPINDLE, "run", model, "--output-dir", os.path.join(work, "ref")]
    for name, arr in feeds.items():
        np.save(os.path.join(work, name + ".npy"), arr)
        args += ["--input", "%s=%s" % (name, os.path.join(work, name + ".npy"))]
    subprocess.run(args, check=True, capture_output=True)
    d = os.path.join(work, "ref")
    return {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)}


def gauge(server, name, model):
    """The value of a per-model gauge at /metrics (version 1)."""
    text = server.request("GET", "/metrics")[2].decode()
    m = re.search(r'%s\{model="%s",version="1"\} (\d+)' % (name, model), text)
    if not m:
        raise AssertionError("no %s for model %s in %s" % (name, model, text))
    return int(m.group(1))


def failures(server, model, reason):
    """The server's count of failed requests of a model for one reason."""
    text = server.request("GET", "/metrics")[2].decode()
    m = re.search(r'spindle_serve_request_failures_total\{model="%s",version="1",reason="%s"\} (\d+)' % (model, reason), text)
    return int(m.group(1)) if m else 0


def wait_for_gauge(server, name, model, value):
    """Polls /metrics until the gauge reads value: a state the server reached
    (a request running, n requests queued), so that a test waits on it instead of sleeping."""
    deadline = time.monotonic() + 60
    while gauge(server, name, model) != value:
        if time.monotonic() > deadline:
            raise AssertionError("%s of model %s never reached %d" % (name, model, value))
        time.sleep(0.01)


def binary_body(inputs, outputs=None, **params):
    """The binary tensor data extension: JSON header, then the tensors' bytes."""
    header = {"inputs": [], "parameters": params}
    blob = b""
    for name, datatype, arr in inputs:
        data = arr.tobytes()
        header["inputs"].append({"name": name, "datatype": datatype, "shape": list(arr.shape),
                                 "parameters": {"binary_data_size": len(data)}})
        blob += data
    if outputs:
        header["outputs"] = [{"name": n, "parameters": {"binary_data": True}} for n in outputs]
    h = json.dumps(header).encode()
    return h + blob, {"Inference-Header-Content-Length": str(len(h)), "Content-Type": "application/octet-stream"}


def split_binary(headers, body):
    n = int(headers["Inference-Header-Content-Length"])
    return json.loads(body[:n]), body[n:]


class ClassServerTest(unittest.TestCase):
    """Tests sharing one server (cls.server) on a repository under cls.work."""

    @classmethod
    def tearDownClass(cls):
        if cls.server.proc.poll() is None:
            cls.server.proc.kill()
        shutil.rmtree(cls.work, ignore_errors=True)


class ServeTest(ClassServerTest):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="spindle-serve-test-")
        cls.repo = os.path.join(cls.work, "repo")
        save(mlp_graph(1), os.path.join(cls.repo, "mlp", "1", "model.onnx"))
        save(mlp_graph(3), os.path.join(cls.repo, "mlp", "3", "model.onnx"))
        save(types_graph(), os.path.join(cls.repo, "types", "1", "model.onnx"))
        save(slow_graph(), os.path.join(cls.repo, "slow", "1", "model.onnx"))
        with open(os.path.join(cls.repo, "slow", "config.json"), "w") as f:
            # As spindle tune --out writes it; thread settings are the server's.
            json.dump({"intra_op_num_threads": 2, "inter_op_num_threads": 1, "execution_mode": "sequential",
                       "graph_optimization_level": "all", "config": {"session.intra_op.allow_spinning": "0"},
                       "max_queue": 1, "instance_count": 1}, f)
        cls.server = Server(cls.repo, "--max-body-bytes", "65536", "--threads", "2")

    def assert_serving(self):
        status, body = self.server.json("GET", "/v2/health/live")
        self.assertEqual((status, body), (200, {"live": True}))
        x = np.ones((1, 5), np.float32)
        status, body = self.server.json("POST", "/v2/models/mlp/versions/1/infer",
                                        {"inputs": [{"name": "x", "shape": [1, 5], "datatype": "FP32",
                                                     "data": x.ravel().tolist()}]})
        self.assertEqual(status, 200, body)

    def test_health_and_metadata(self):
        s = self.server
        self.assertEqual(s.json("GET", "/v2/health/ready"), (200, {"ready": True}))
        status, meta = s.json("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertEqual(meta["name"], "spindle")
        self.assertIn("binary_tensor_data", meta["extensions"])
        status, meta = s.json("GET", "/v2/models/mlp")
        self.assertEqual(status, 200)
        self.assertEqual(meta["versions"], ["1", "3"])
        self.assertEqual(meta["inputs"], [{"name": "x", "datatype": "FP32", "shape": [-1, 5]}])
        self.assertEqual(meta["outputs"], [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}])
        status, meta = s.json("GET", "/v2/models/types/versions/1")
        self.assertEqual([i["datatype"] for i in meta["inputs"]], ["INT64", "BOOL", "BYTES", "FP64"])
        self.assertEqual(meta["inputs"][0]["shape"], [2, 3])
        self.assertEqual(s.json("GET", "/v2/models/mlp/versions/3/ready")[0], 200)
        self.assertEqual(s.json("GET", "/v2/models/mlp/versions/2/ready")[0], 404)
        self.assertEqual(s.json("GET", "/v2/models/nope/ready")[0], 404)

    def test_infer_json_equals_library(self):
        x = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
        for version in ["1", "3"]:
            ref = reference(os.path.join(self.repo, "mlp", version, "model.onnx"), {"x": x}, self.work)
            # Nested data, as the protocol allows, and a request id.
            status, body = self.server.json("POST", "/v2/models/mlp/versions/%s/infer" % version,
                                            {"id": "req-%s" % version,
                                             "inputs": [{"name": "x", "shape": [3, 5], "datatype": "FP32",
                                                         "data": x.tolist()}]})
            self.assertEqual(status, 200, body)
            self.assertEqual((body["id"], body["model_name"], body["model_version"]), ("req-" + version, "mlp", version))
            out = body["outputs"][0]
            self.assertEqual((out["name"], out["datatype"], out["shape"]), ("y", "FP32", [3, 4]))
            got = np.array(out["data"], dtype=np.float32).reshape(3, 4)
            np.testing.assert_array_equal(got, ref["y"])
        # No version: the highest.
        status, body = self.server.json("POST", "/v2/models/mlp/infer",
                                        {"inputs": [{"name": "x", "shape": [3, 5], "datatype": "FP32",
                                                     "data": x.ravel().tolist()}]})
        self.assertEqual((status, body["model_version"]), (200, "3"))
        self.assertNotIn("id", body)

    def test_infer_types(self):
        i64 = np.arange(6, dtype=np.int64).reshape(2, 3) - 3
        status, body = self.server.json("POST", "/v2/models/types/infer", {"inputs": [
            {"name": "i64", "shape": [2, 3], "datatype": "INT64", "data": i64.ravel().tolist()},
            {"name": "b", "shape": [2], "datatype": "BOOL", "data": [True, False]},
            {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["héllo", ""]},
            {"name": "d", "shape": [1], "datatype": "FP64", "data": [3.0]}],
            "outputs": [{"name": "s_out"}, {"name": "i64_out"}, {"name": "b_out"}]})
        self.assertEqual(status, 200, body)
        outs = body["outputs"]
        self.assertEqual([o["name"] for o in outs], ["s_out", "i64_out", "b_out"])  # requested order, d_out left out
        self.assertEqual(outs[0]["data"], ["héllo", ""])
        self.assertEqual(outs[1]["data"], (i64 + 7).ravel().tolist())
        self.assertEqual(outs[2], {"name": "b_out", "datatype": "BOOL", "shape": [2], "data": [False, True]})
        # BYTES and BOOL through the binary extension.
        strings = [b"ab", b"\x00\xffz"]
        sblob = b"".join(len(v).to_bytes(4, "little") + v for v in strings)
        header = {"inputs": [
            {"name": "i64", "shape": [2, 3], "datatype": "INT64", "parameters": {"binary_data_size": 48}},
            {"name": "b", "shape": [3], "datatype": "BOOL", "parameters": {"binary_data_size": 3}},
            {"name": "s", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": len(sblob)}},
            {"name": "d", "shape": [0], "datatype": "FP64", "data": []}],
            "parameters": {"binary_data_output": True}}
        h = json.dumps(header).encode()
        status, headers, body = self.server.request(
            "POST", "/v2/models/types/infer", h + i64.tobytes() + bytes([1, 0, 1]) + sblob,
            {"Inference-Header-Content-Length": str(len(h))})
        self.assertEqual(status, 200, body)
        meta, blob = split_binary(headers, body)
        sizes = [o["parameters"]["binary_data_size"] for o in meta["outputs"]]
        self.assertEqual(sizes, [48, 3, len(sblob), 0])
        self.assertEqual(np.frombuffer(blob[:48], np.int64).tolist(), (i64 + 7).ravel().tolist())
        self.assertEqual(list(blob[48:51]), [0, 1, 0])
        self.assertEqual(blob[51:], sblob)

    def test_infer_binary_equals_library(self):
        x = np.random.default_rng(9).standard_normal((4, 5)).astype(np.float32)
        ref = reference(os.path.join(self.repo, "mlp", "3", "model.onnx"), {"x": x}, self.work)
        body, headers = binary_body([("x", "FP32", x)], outputs=["y"])
        status, rh, rb = self.server.request("POST", "/v2/models/mlp/infer", body, headers)
        self.assertEqual(status, 200, rb)
        meta, blob = split_binary(rh, rb)
        self.assertEqual(meta["outputs"][0]["parameters"]["binary_data_size"], 4 * 4 * 4)
        np.testing.assert_array_equal(np.frombuffer(blob, np.float32).reshape(4, 4), ref["y"])
        # Binary input, JSON output.
        body, headers = binary_body([("x", "FP32", x)])
        status, rh, rb = self.server.request("POST", "/v2/models/mlp/infer", body, headers)
        self.assertEqual(status, 200, rb)
        self.assertNotIn("Inference-Header-Content-Length", rh)
        got = np.array(json.loads(rb)["outputs"][0]["data"], np.float32).reshape(4, 4)
        np.testing.assert_array_equal(got, ref["y"])

    def check_refused(self, path, body, status, words, headers=None):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        got, _, rb = self.server.request("POST", path, body, headers)
        self.assertEqual(got, status, rb)
        err = json.loads(rb)["error"]
        for w in words:
            self.assertIn(w, err)
        self.assert_serving()

    def test_malformed_requests(self):
        infer = "/v2/models/mlp/versions/1/infer"
        x = {"name": "x", "shape": [1, 5], "datatype": "FP32", "data": [1, 2, 3, 4, 5]}
        self.check_refused(infer, b'{"inputs": [', 400, ["malformed JSON"])
        self.check_refused(infer, {"inputs": [dict(x, datatype="FP64")]}, 400, ["'x'", "FP64", "FP32"])
        self.check_refused(infer, {"inputs": [dict(x, datatype="FLOAT99")]}, 400, ["FLOAT99"])
        self.check_refused(infer, {"inputs": [dict(x, shape=[2, 5])]}, 400, ["'x'", "5 data elements", "10"])
        self.check_refused(infer, {"inputs": [dict(x, shape=[1, 6], data=[0] * 6)]}, 400, ["[1,6]", "[-1,5]"])
        self.check_refused(infer, {"inputs": [dict(x, data=[1, 2, "a", 4, 5])]}, 400, ["element 2", "number"])
        self.check_refused(infer, {"inputs": []}, 400, ["missing input 'x'"])
        self.check_refused(infer, {"inputs": [x, x]}, 400, ["twice"])
        self.check_refused(infer, {"inputs": [dict(x, name="z")]}, 400, ["unknown input 'z'"])
        self.check_refused(infer, {"inputs": [x], "outputs": [{"name": "q"}]}, 400, ["unknown output 'q'"])
        self.check_refused("/v2/models/types/infer", {"inputs": [
            {"name": "i64", "shape": [2, 3], "datatype": "INT64", "data": [1, 2, 3, 4, 5, 2 ** 70]},
            {"name": "b", "shape": [0], "datatype": "BOOL", "data": []},
            {"name": "s", "shape": [0], "datatype": "BYTES", "data": []},
            {"name": "d", "shape": [0], "datatype": "FP64", "data": []}]}, 400, ["element 5"])
        # A huge shape with little data is refused before anything is allocated.
        self.check_refused(infer, {"inputs": [dict(x, shape=[2 ** 40, 5])]}, 400, ["5 data elements", "[1099511627776,5]"])
        body, headers = binary_body([("x", "FP32", np.ones((2, 5), np.float32))])
        huge = json.loads(body[:int(headers["Inference-Header-Content-Length"])])
        huge["inputs"][0]["shape"] = [2 ** 40, 5]
        h = json.dumps(huge).encode()
        self.check_refused(infer, h + body[-40:], 400, ["binary_data_size is 40", "needs 21990232555520 bytes"],
                           {"Inference-Header-Content-Length": str(len(h))})
        # Truncated binary data, and a header length past the body.
        body, headers = binary_body([("x", "FP32", np.ones((2, 5), np.float32))])
        self.check_refused(infer, body[:-4], 400, ["'x'", "truncated binary data"], headers)
        self.check_refused(infer, body, 400, ["Inference-Header-Content-Length"],
                           {"Inference-Header-Content-Length": str(len(body) + 1)})
        self.check_refused(infer, body, 400, ["Inference-Header-Content-Length"],
                           {"Inference-Header-Content-Length": "ten"})
        # Too large a body (--max-body-bytes 65536).
        self.check_refused(infer, b"[" + b"0," * 40000 + b"0]", 413, ["--max-body-bytes"])
        # Unknown model and version.
        self.check_refused("/v2/models/nope/infer", {"inputs": [x]}, 404, ["unknown model 'nope'"])
        self.check_refused("/v2/models/mlp/versions/7/infer", {"inputs": [x]}, 404, ["no version '7'", "1, 3"])
        status, metrics = self.server.request("GET", "/metrics")[::2]
        self.assertEqual(status, 200)
        text = metrics.decode()
        m = re.search(r'spindle_serve_request_failures_total\{model="mlp",version="1",reason="bad_request"\} (\d+)', text)
        self.assertIsNotNone(m, text)
        self.assertGreaterEqual(int(m.group(1)), 13)
        self.assertRegex(text, r'spindle_serve_request_seconds_count\{model="mlp",version="1"\} \d+')
        self.assertRegex(text, r'spindle_serve_queue_seconds_bucket\{model="mlp",version="1",le="\+Inf"\} [1-9]')

    def slow_request(self, trip, results, timeout_us=None):
        req = {"inputs": [{"name": "trip", "shape": [], "datatype": "INT64", "data": [trip]},
                          {"name": "x", "shape": [2], "datatype": "FP32", "data": [0, 1]}]}
        if timeout_us:
            req["parameters"] = {"timeout": timeout_us}
        results.append(self.server.json("POST", "/v2/models/slow/infer", req))

    def calibrate_trip(self):
        """A trip count whose run takes at least ~0.3 s here (after a warm-up
        run: a first run's own cost must not pass for the trip's)."""
        self.slow_request(1, [])
        trip = 20000
        while True:
            results = []
            t0 = time.monotonic()
            self.slow_request(trip, results)
            took = time.monotonic() - t0
            self.assertEqual(results[0][0], 200, results[0])
            self.assertEqual(results[0][1]["outputs"][0]["data"], [float(trip), float(trip + 1)])
            if took > 0.3 or trip > 10 ** 8:
                return trip
            trip *= 4

    def test_queue_full_and_timeout(self):
        trip = self.calibrate_trip()
        # max_queue 1, one runner: one runs, one waits, the others are refused.
        # Each request starts once the server holds the ones before it (the
        # gauges at /metrics), the first running ~1.2 s or more.
        results = []
        first = threading.Thread(target=self.slow_request, args=(trip * 4, results))
        first.start()
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        second = threading.Thread(target=self.slow_request, args=(trip, results))
        second.start()
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 1)
        refused = []
        for _ in range(3):
            self.slow_request(trip, refused)
        self.assertEqual([r[0] for r in refused], [429] * 3, refused)
        for status, body in refused:
            self.assertIn("queue is full", body["error"])
        first.join()
        second.join()
        self.assertEqual([r[0] for r in results], [200, 200], results)
        # A timeout cancels a request waiting in the queue, and a running one
        # (once the server is idle: a client can hold its answer before the
        # server has counted the run done, and the next request would queue
        # behind it while the gauge still reads the old run).
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 0)
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 0)
        results = []
        first = threading.Thread(target=self.slow_request, args=(trip * 4, results))
        first.start()
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        waiting = []
        self.slow_request(trip, waiting, timeout_us=50000)
        self.assertEqual(waiting[0][0], 504, waiting)
        self.assertIn("timeout", waiting[0][1]["error"])
        first.join()
        self.assertEqual(results[0][0], 200)
        running = []
        t0 = time.monotonic()
        self.slow_request(trip * 20, running, timeout_us=100000)
        self.assertEqual(running[0][0], 504, running)
        self.assertLess(time.monotonic() - t0, 5)
        text = self.server.request("GET", "/metrics")[2].decode()
        self.assertRegex(text, r'reason="queue_full"\} [1-9]')
        self.assertRegex(text, r'reason="timeout"\} [2-9]')
        self.assert_serving()

    def test_client_that_disconnects_cancels_its_request(self):
        """A client that closes its connection while its request waits in the
        queue or runs cancels it: the run stops (unstopped it would take 120 s
        or more: a calibration slowed by other work on the machine must still
        leave the first request running while the second queues) and the
        server counts a cancel."""
        trip = self.calibrate_trip()
        body = json.dumps({"inputs": [{"name": "trip", "shape": [], "datatype": "INT64", "data": [trip * 400]},
                                      {"name": "x", "shape": [2], "datatype": "FP32", "data": [0, 1]}]}).encode()
        before = failures(self.server, "slow", "cancelled")
        running = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        running.request("POST", "/v2/models/slow/infer", body=body)
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        queued = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        queued.request("POST", "/v2/models/slow/infer", body=body)
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 1)
        t0 = time.monotonic()
        queued.close()
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 0)
        running.close()
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 0)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(failures(self.server, "slow", "cancelled"), before + 2)
        after = []
        self.slow_request(1, after)
        self.assertEqual(after[0][0], 200, after)
        self.assert_serving()

    def test_port_in_use(self):
        """A second server on the same port fails instead of sharing it."""
        p = subprocess.run([SPINDLE, "serve", "--model-repository", self.repo, "--http-port", str(self.server.port)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("cannot listen on 127.0.0.1:%d" % self.server.port, p.stderr)
        self.assert_serving()

    def test_spin_options(self):
        """--spin 0 / --spin-duration-us reach the pools: such a server answers
        as the library does; a value outside 0/1 is refused by name."""
        x = np.random.default_rng(9).standard_normal((2, 5)).astype(np.float32)
        ref = reference(os.path.join(self.repo, "mlp", "3", "model.onnx"), {"x": x}, self.work)
        server = Server(self.repo, "--threads", "2", "--spin", "0", "--spin-duration-us", "0")
        try:
            status, body = server.json("POST", "/v2/models/mlp/infer",
                                       {"inputs": [{"name": "x", "shape": [2, 5], "datatype": "FP32",
                                                    "data": x.ravel().tolist()}]})
            self.assertEqual(status, 200, body)
            got = np.array(body["outputs"][0]["data"], dtype=np.float32).reshape(2, 4)
            np.testing.assert_array_equal(got, ref["y"])
        finally:
            self.assertEqual(server.stop()[0], 0)
        p = subprocess.run([SPINDLE, "serve", "--model-repository", self.repo, "--http-port", "0", "--spin", "2"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--spin", p.stderr)
        self.assert_serving()

    def test_repository(self):
        s = self.server
        status, index = s.json("POST", "/v2/repository/index", {})
        self.assertEqual(status, 200)
        self.assertIn({"name": "mlp", "version": "3", "state": "READY"}, index)
        self.assertEqual(s.json("POST", "/v2/repository/models/types/unload")[0], 200)
        self.assertEqual(s.json("GET", "/v2/models/types")[0], 404)
        status, index = s.json("POST", "/v2/repository/index", {})
        self.assertIn({"name": "types", "state": "UNAVAILABLE", "reason": "unloaded"}, index)
        status, index = s.json("POST", "/v2/repository/index", {"ready": True})
        self.assertNotIn("types", [e["name"] for e in index])
        self.assertEqual(s.json("POST", "/v2/repository/models/types/load")[0], 200)
        self.assertEqual(s.json("GET", "/v2/models/types")[0], 200)
        status, body = s.json("POST", "/v2/repository/models/ghost/load")
        self.assertEqual(status, 404)
        self.assertIn("ghost", body["error"])
        # Unloading a model answers the request it is running; then it is gone.
        results = []
        t = threading.Thread(target=self.slow_request, args=(self.calibrate_trip(), results))
        t.start()
        time.sleep(0.1)
        self.assertEqual(s.json("POST", "/v2/repository/models/slow/unload")[0], 200)
        t.join()
        self.assertEqual(results[0][0], 200, results)
        after = []
        self.slow_request(1, after)
        self.assertEqual(after[0][0], 404, after)
        self.assertEqual(s.json("POST", "/v2/repository/models/slow/load")[0], 200)
        self.slow_request(1, after)
        self.assertEqual(after[1][0], 200, after)

    def test_zz_sigterm_drains(self):
        """Last: SIGTERM while a request runs; it is answered, then exit 0."""
        results = []
        t = threading.Thread(target=self.slow_request, args=(self.calibrate_trip(), results))
        t.start()
        time.sleep(0.1)
        rc, out, err = self.server.stop()
        t.join()
        self.assertEqual(rc, 0, err)
        self.assertEqual(results[0][0], 200, results)
        self.assertIn("stopped", out)


class InstancesTest(unittest.TestCase):
    """instance_count runners per version, within --concurrent-runs: with two
    runners and a queue of one, three slow requests at once are all taken."""

    def test_two_instances_take_three_requests(self):
        def fill(repo):
            save(slow_graph(), os.path.join(repo, "slow", "1", "model.onnx"))
            with open(os.path.join(repo, "slow", "config.json"), "w") as f:
                json.dump({"max_queue": 1, "instance_count": 2}, f)
        with scratch_server(fill, Server, "--concurrent-runs", "2", "--threads", "1") as server:
            ServeTest.server = server
            case = ServeTest("test_queue_full_and_timeout")
            trip = case.calibrate_trip()
            # Two run, one waits, two more find the runners busy and the queue
            # full (each sent once the server holds the ones before it).
            results = []
            held = [threading.Thread(target=case.slow_request, args=(trip * 4, results)) for _ in range(2)]
            for i, t in enumerate(held):
                t.start()
                wait_for_gauge(server, "spindle_serve_requests_in_run", "slow", i + 1)
            held.append(threading.Thread(target=case.slow_request, args=(trip, results)))
            held[-1].start()
            wait_for_gauge(server, "spindle_serve_queued_requests", "slow", 1)
            refused = []
            for _ in range(2):
                case.slow_request(trip, refused)
            self.assertEqual([r[0] for r in refused], [429, 429], refused)
            for t in held:
                t.join()
            self.assertEqual([r[0] for r in results], [200] * 3, results)
            self.assertEqual(server.stop()[0], 0)


def conv_graph(seed):
    """x [batch,3,8,8] -> Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten ->
    MatMul -> Softmax: the kernels whose blocking could follow the batch size."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    cb = rng.standard_normal(8).astype(np.float32)
    fc = rng.standard_normal((8, 5)).astype(np.float32)
    nodes = [const("w", w), const("cb", cb), const("fc", fc),
             helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["y"], axis=1)]
    vi = helper.make_tensor_value_info
    return helper.make_graph(nodes, "conv", [vi("x", TensorProto.FLOAT, ["batch", 3, "h", "w"])],
                             [vi("y", TensorProto.FLOAT, ["batch", 5]), vi("f", TensorProto.FLOAT, ["batch", 8])])


def fixed_batch_graph():
    """Dynamic first dimensions, but a Reshape fixes the batch to one row."""
    nodes = [const("shape", np.array([1, 4], dtype=np.int64)), helper.make_node("Reshape", ["x", "shape"], ["y"])]
    vi = helper.make_tensor_value_info
    return helper.make_graph(nodes, "fixed", [vi("x", TensorProto.FLOAT, ["batch", 4])],
                             [vi("y", TensorProto.FLOAT, ["batch", 4])])


CLS_MODEL = os.path.expanduser("~/.cache/spindle/models/ch_ppocr_mobile_v2.0_cls_infer.onnx")


class BatchingTest(unittest.TestCase):
    """Dynamic batching: concurrent requests run as one batch, and each gets
    outputs bitwise equal to the library running it alone."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="spindle-serve-batch-")
        self.repo = os.path.join(self.work, "repo")
        config = {"max_batch_size": 8,
                  "dynamic_batching": {"max_queue_delay_microseconds": 300000, "preferred_batch_size": [8]}}
        models = {"conv": conv_graph(5), "fixed": fixed_batch_graph(), "mlp": mlp_graph(2)}
        for name, g in models.items():
            save(g, os.path.join(self.repo, name, "1", "model.onnx"))
            with open(os.path.join(self.repo, name, "config.json"), "w") as f:
                json.dump(config, f)
        if os.path.exists(CLS_MODEL):
            os.makedirs(os.path.join(self.repo, "cls", "1"))
            shutil.copy(CLS_MODEL, os.path.join(self.repo, "cls", "1", "model.onnx"))
            with open(os.path.join(self.repo, "cls", "config.json"), "w") as f:
                json.dump(config, f)

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def concurrent(self, server, model, arrays, out_names):
        """POSTs one binary request per array at once; [(status, {name: array})]."""
        results = [None] * len(arrays)
        barrier = threading.Barrier(len(arrays))

        def one(i):
            body, headers = binary_body([("x", "FP32", arrays[i])], out_names)
            barrier.wait()
            status, h, data = server.request("POST", "/v2/models/%s/infer" % model, body, headers)
            outs = {}
            if status == 200:
                header, blob = split_binary(h, data)
                at = 0
                for o in header["outputs"]:
                    n = o["parameters"]["binary_data_size"]
                    outs[o["name"]] = np.frombuffer(blob[at:at + n], np.float32).reshape(o["shape"])
                    at += n
            results[i] = (status, outs, data if status != 200 else None)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(arrays))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def batch_runs(self, server, model):
        status, _, body = server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        pattern = r'spindle_serve_batch_runs_total\{model="%s",version="1",batch_size="(\d+)"\} (\d+)' % model
        return {int(m.group(1)): int(m.group(2)) for m in re.finditer(pattern, body.decode())}

    def check_model(self, server, model, arrays, out_names):
        results = self.concurrent(server, model, arrays, out_names)
        runs = self.batch_runs(server, model)
        self.assertEqual(sum(k * v for k, v in runs.items()), sum(a.shape[0] for a in arrays), runs)
        self.assertGreater(max(runs), 1, "no request was batched: %s" % runs)
        for i, (status, outs, err) in enumerate(results):
            self.assertEqual(status, 200, err)
            os.makedirs(os.path.join(self.work, "ref%d" % i))
            ref = reference(os.path.join(self.repo, model, "1", "model.onnx"), {"x": arrays[i]},
                            os.path.join(self.work, "ref%d" % i))
            for name in out_names:
                self.assertEqual(outs[name].shape, ref[name].shape)
                # Bitwise: the same bytes as the request run alone.
                self.assertEqual(outs[name].tobytes(), ref[name].tobytes(), "%s request %d output %s" % (model, i, name))
            shutil.rmtree(os.path.join(self.work, "ref%d" % i))
        return runs

    def test_batched_outputs_equal_alone(self):
        rng = np.random.default_rng(11)
        for threads in ("1", "2"):
            with self.subTest(threads=threads):
                server = Server(self.repo, "--threads", threads, "--concurrent-runs", "1")
                try:
                    # Rows of 1 and 2: seven requests, ten rows, batches of at most eight.
                    arrays = [rng.standard_normal((1 + (i % 3 == 2), 3, 8, 8)).astype(np.float32) for i in range(7)]
                    runs = self.check_model(server, "conv", arrays, ["y", "f"])
                    self.assertLessEqual(max(runs), 8)
                    arrays = [rng.standard_normal((1, 5)).astype(np.float32) for _ in range(6)]
                    self.check_model(server, "mlp", arrays, ["y"])
                    if os.path.exists(CLS_MODEL):
                        arrays = [rng.random((1, 3, 48, 192)).astype(np.float32) for _ in range(4)]
                        self.check_model(server, "cls", arrays, ["softmax_0.tmp_0"])
                    # Requests of other trailing shapes are not batched together, and still answered.
                    arrays = [rng.standard_normal((1, 3, 8 + 2 * (i % 2), 8)).astype(np.float32) for i in range(4)]
                    for status, outs, err in self.concurrent(server, "conv", arrays, ["y"]):
                        self.assertEqual(status, 200, err)
                        self.assertEqual(outs["y"].shape, (1, 5))
                finally:
                    code, out, err = server.stop()
                self.assertEqual(code, 0, err)

    def test_batch_fixed_by_graph_falls_back(self):
        server = Server(self.repo, "--threads", "1")
        try:
            arrays = [np.full((1, 4), i, np.float32) for i in range(4)]
            for i, (status, outs, err) in enumerate(self.concurrent(server, "fixed", arrays, ["y"])):
                self.assertEqual(status, 200, err)
                np.testing.assert_array_equal(outs["y"], arrays[i])
            # Afterwards the version runs requests alone.
            results = self.concurrent(server, "fixed", arrays, ["y"])
            self.assertEqual([r[0] for r in results], [200] * 4)
        finally:
            code, out, err = server.stop()
        self.assertEqual(code, 0)
        self.assertIn("dynamic batching off: a batched run failed", err)

    def test_unbatchable_model_and_bad_config(self):
        def fill(repo):
            save(types_graph(), os.path.join(repo, "types", "1", "model.onnx"))
            with open(os.path.join(repo, "types", "config.json"), "w") as f:
                json.dump({"max_batch_size": 4}, f)
        with scratch_server(fill, Server) as server:
            code, out, err = server.stop()
            self.assertEqual(code, 0)
            self.assertIn("model 'types' version 1: dynamic batching off: input 'i64' has no dynamic first dimension", err)

        def fill_bad(repo):
            save(mlp_graph(1), os.path.join(repo, "mlp", "1", "model.onnx"))
            with open(os.path.join(repo, "mlp", "config.json"), "w") as f:
                json.dump({"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": -5}}, f)
        work = tempfile.mkdtemp(prefix="spindle-serve-batch-")
        try:
            fill_bad(os.path.join(work, "repo"))
            p = subprocess.run([SPINDLE, "serve", "--model-repository", os.path.join(work, "repo"), "--http-port", "0"],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn('"max_queue_delay_microseconds" (an integer from 0 to 1000000)', p.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def slow_batch_graph():
    """x [batch,2] + max(trip) (trip [batch]): one Add per Loop iteration,
    max(trip) of them, so as slow as the batch's largest trip asks."""
    body = add_one_body()
    nodes = [const("cond", np.array(True)), const("zero", np.zeros(2, np.float32)),
             helper.make_node("ReduceMax", ["trip"], ["n"], keepdims=0),
             helper.make_node("Loop", ["n", "cond", "zero"], ["count"], body=body),
             helper.make_node("Add", ["x", "count"], ["y"])]
    vi = helper.make_tensor_value_info
    return helper.make_graph(nodes, "slow_batch", [vi("trip", TensorProto.INT64, ["batch"]),
                                                   vi("x", TensorProto.FLOAT, ["batch", 2])],
                             [vi("y", TensorProto.FLOAT, ["batch", 2])])


class BatchTimeoutTest(ClassServerTest):
    """Timeouts inside dynamic batching: a request whose deadline passes while
    its batch gathers leaves it, one whose deadline passes while its batch
    runs is answered then while the others go on, a batch whose requests all
    timed out stops, and a request over max_batch_size is refused."""

    DELAY_US = 1000000

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="spindle-serve-batch-timeout-")
        cls.repo = os.path.join(cls.work, "repo")
        save(slow_batch_graph(), os.path.join(cls.repo, "slowb", "1", "model.onnx"))
        with open(os.path.join(cls.repo, "slowb", "config.json"), "w") as f:
            json.dump({"max_batch_size": 4, "max_queue_delay_us": cls.DELAY_US, "max_queue": 8}, f)
        cls.server = Server(cls.repo, "--threads", "1", "--concurrent-runs", "1")

    def call(self, trip, first, rows=1, timeout_us=None):
        """(status, body, seconds) of one request: rows of x = [first + i, first + i + 1]."""
        x = np.array([[first + i, first + i + 1] for i in range(rows)], np.float32)
        req = {"inputs": [{"name": "trip", "shape": [rows], "datatype": "INT64", "data": [trip] * rows},
                          {"name": "x", "shape": [rows, 2], "datatype": "FP32", "data": x.ravel().tolist()}]}
        if timeout_us:
            req["parameters"] = {"timeout": timeout_us}
        t0 = time.monotonic()
        status, body = self.server.json("POST", "/v2/models/slowb/infer", req)
        return status, body, time.monotonic() - t0

    def in_thread(self, *args, **kw):
        out = []
        t = threading.Thread(target=lambda: out.append(self.call(*args, **kw)))
        t.start()
        return t, out

    def wait_for_metric(self, name, value):
        wait_for_gauge(self.server, name, "slowb", value)

    def batch_runs(self):
        text = self.server.request("GET", "/metrics")[2].decode()
        return {int(m.group(1)): int(m.group(2)) for m in re.finditer(
            r'spindle_serve_batch_runs_total\{model="slowb",version="1",batch_size="(\d+)"\} (\d+)', text)}

    def check_long(self, result, trip, first):
        status, body, _ = result
        self.assertEqual(status, 200, body)
        self.assertEqual(body["outputs"][0]["data"], [first + trip, first + 1 + trip])

    def calibrate_trip(self):
        """A trip count whose run takes at least ~1 s here: four rows, a full
        batch, run at once (after a warm-up run)."""
        self.assertEqual(self.call(1, 0, rows=4)[0], 200)
        trip = 20000
        while True:
            status, body, took = self.call(trip, 0, rows=4)
            self.assertEqual(status, 200, body)
            self.assertEqual(body["outputs"][0]["data"][:2], [float(trip), float(trip + 1)])
            if took > 1 or trip > 10 ** 9:
                return trip
            trip *= 2

    def test_timeouts_in_batches(self):
        trip = self.calibrate_trip() * 4  # a batch run of ~4 s or more (the calibration runs under load too)
        # A request whose deadline passes while its batch runs is answered at
        # its deadline; the three others of the batch get their outputs.
        runs_of_four = self.batch_runs().get(4, 0)
        longs = [self.in_thread(trip, 10 * i) for i in range(3)]
        self.wait_for_metric("spindle_serve_queued_requests", 3)
        short = self.call(trip, 100, timeout_us=300000)  # the fourth row: the batch runs at once
        for t, _ in longs:
            t.join()
        self.assertEqual(short[0], 504, short[1])
        self.assertIn("timeout (300000 us) passed while its batch ran", short[1]["error"])
        for i, (_, out) in enumerate(longs):
            self.check_long(out[0], trip, 10 * i)
            self.assertGreater(out[0][2], short[2] + 0.5, "the short request was answered at the batch's end")
        self.assertEqual(self.batch_runs().get(4), runs_of_four + 1, self.batch_runs())
        # A request whose deadline passes while its batch gathers leaves it at
        # its deadline (the batch waits 1 s for more rows); the batch runs without it.
        runs_of_two = self.batch_runs().get(2, 0)
        longs = [self.in_thread(trip, 10 * i) for i in range(2)]
        self.wait_for_metric("spindle_serve_queued_requests", 2)
        short = self.call(trip, 100, timeout_us=100000)
        self.assertEqual(short[0], 504, short[1])
        self.assertIn("timeout (100000 us) passed while it waited in the queue", short[1]["error"])
        self.assertLess(short[2], 0.6)  # not at the batch's start, 1 s after the first request came
        for i, (t, out) in enumerate(longs):
            t.join()
            self.check_long(out[0], trip, 10 * i)
        self.assertEqual(self.batch_runs().get(2), runs_of_two + 1, self.batch_runs())
        self.assertNotIn(3, self.batch_runs())
        # When every request of a running batch has timed out, the run stops
        # (it would take 40 s or more): the model is free again soon after.
        timed = [self.in_thread(trip * 10, 10 * i, timeout_us=3000000) for i in range(3)]
        self.wait_for_metric("spindle_serve_queued_requests", 3)
        last = self.call(trip * 10, 100, timeout_us=500000)
        self.assertEqual(last[0], 504, last[1])
        for t, out in timed:
            t.join()
            self.assertEqual(out[0][0], 504, out[0][1])
            self.assertLess(out[0][2], 10)
        t0 = time.monotonic()
        self.wait_for_metric("spindle_serve_requests_in_run", 0)
        status, body, _ = self.call(1, 0, rows=4)
        self.assertEqual(status, 200, body)
        self.assertLess(time.monotonic() - t0, 5)
        text = self.server.request("GET", "/metrics")[2].decode()
        self.assertRegex(text, r'model="slowb",version="1",reason="timeout"\} 6')

    def test_over_max_batch_size(self):
        status, body, _ = self.call(1, 0, rows=5)
        self.assertEqual(status, 400, body)
        self.assertIn("batch size 5 (the first dimension of its inputs) is more than model 'slowb' version 1 takes: "
                      "max_batch_size 4", body["error"])
        status, body, _ = self.call(1, 0, rows=4)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["outputs"][0]["data"][-2:], [4.0, 5.0])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        SPINDLE = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
