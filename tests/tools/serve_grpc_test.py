#!/usr/bin/python3
"""spindle serve over gRPC, end to end: starts the server on 127.0.0.1 with
ephemeral HTTP and gRPC ports and calls inference.GRPCInferenceService with
Debian's python3-grpcio, through stubs generated here by protoc from
tools/spindle/proto/inference.proto. Outputs are compared bitwise with
`spindle run` (the library) and with the HTTP transport's.

Usage: serve_grpc_test.py SPINDLE_CLI [PROTOC] [GRPC_PYTHON_PLUGIN]
"""
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

import grpc
import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (the HTTP test's models, reference runs and HTTP client)
from serve_test import (binary_body, mlp_graph, reference, save, scratch_server, slow_graph,  # noqa: E402
                        split_binary, types_graph, wait_for_gauge)

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "tools", "spindle", "proto")
SPINDLE = os.environ.get("SPINDLE_CLI", "spindle")
PROTOC = "protoc"
PLUGIN = "/usr/bin/grpc_python_plugin"
pb = pbg = None  # the generated modules


def generate_stubs(out):
    global pb, pbg
    if pb is not None:
        return
    os.makedirs(out, exist_ok=True)
    subprocess.run([PROTOC, "--proto_path=" + PROTO_DIR, "--python_out=" + out, "--grpc_python_out=" + out,
                    "--plugin=protoc-gen-grpc_python=" + PLUGIN, os.path.join(PROTO_DIR, "inference.proto")],
                   check=True)
    sys.path.insert(0, out)
    import inference_pb2
    import inference_pb2_grpc
    pb, pbg = inference_pb2, inference_pb2_grpc


def half_graphs():
    """to_half: FP32 x -> FP16 h (and x back); from_half: FP16 h -> FP32 f."""
    vi = helper.make_tensor_value_info
    to_half = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16), helper.make_node("Identity", ["x"], ["x_out"])],
        "to_half", [vi("x", TensorProto.FLOAT, [-1])], [vi("h", TensorProto.FLOAT16, [-1]), vi("x_out", TensorProto.FLOAT, [-1])])
    from_half = helper.make_graph([helper.make_node("Cast", ["h"], ["f"], to=TensorProto.FLOAT)], "from_half",
                                  [vi("h", TensorProto.FLOAT16, [-1])], [vi("f", TensorProto.FLOAT, [-1])])
    return to_half, from_half


def narrow_graph():
    """INT8 a and UINT16 u, each doubled."""
    vi = helper.make_tensor_value_info
    return helper.make_graph(
        [helper.make_node("Add", ["a", "a"], ["a2"]), helper.make_node("Add", ["u", "u"], ["u2"])], "narrow",
        [vi("a", TensorProto.INT8, [-1]), vi("u", TensorProto.UINT16, [-1])],
        [vi("a2", TensorProto.INT8, [-1]), vi("u2", TensorProto.UINT16, [-1])])


def tensor(name, datatype, shape, **contents):
    t = pb.ModelInferRequest.InferInputTensor(name=name, datatype=datatype, shape=list(shape))
    if contents:
        t.contents.CopyFrom(pb.InferTensorContents(**contents))
    return t


def raw_request(model, arrays, version="", **kw):
    """arrays: [(name, datatype, numpy array)] as raw_input_contents."""
    return pb.ModelInferRequest(model_name=model, model_version=version,
                                inputs=[tensor(n, d, a.shape) for n, d, a in arrays],
                                raw_input_contents=[a.tobytes() for _, _, a in arrays], **kw)


def raw_output(response, name, dtype):
    for i, o in enumerate(response.outputs):
        if o.name == name:
            return np.frombuffer(response.raw_output_contents[i], dtype).reshape(list(o.shape))
    raise KeyError(name)


def bytes_blob(strings):
    return b"".join(len(v).to_bytes(4, "little") + v for v in strings)


class Server(serve_test.Server):
    """The HTTP test's server with a gRPC port too."""

    def __init__(self, repo, *args):
        self.proc = subprocess.Popen([SPINDLE, "serve", "--model-repository", repo, "--http-port", "0",
                                      "--grpc-port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+), gRPC on 127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("spindle serve did not start: %r %r" % (line, self.proc.stderr.read()))
        self.port, self.grpc_port = int(m.group(1)), int(m.group(2))
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % self.grpc_port)
        self.stub = pbg.GRPCInferenceServiceStub(self.channel)

    def new_stub(self):
        """A stub on a channel (a connection) of its own."""
        return pbg.GRPCInferenceServiceStub(grpc.insecure_channel("127.0.0.1:%d" % self.grpc_port))


class ServeGrpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="spindle-serve-grpc-test-")
        generate_stubs(os.path.join(cls.work, "stubs"))
        cls.repo = os.path.join(cls.work, "repo")
        save(mlp_graph(1), os.path.join(cls.repo, "mlp", "1", "model.onnx"))
        save(mlp_graph(3), os.path.join(cls.repo, "mlp", "3", "model.onnx"))
        save(types_graph(), os.path.join(cls.repo, "types", "1", "model.onnx"))
        to_half, from_half = half_graphs()
        save(to_half, os.path.join(cls.repo, "to_half", "1", "model.onnx"))
        save(from_half, os.path.join(cls.repo, "from_half", "1", "model.onnx"))
        save(narrow_graph(), os.path.join(cls.repo, "narrow", "1", "model.onnx"))
        save(slow_graph(), os.path.join(cls.repo, "slow", "1", "model.onnx"))
        with open(os.path.join(cls.repo, "slow", "config.json"), "w") as f:
            json.dump({"max_queue": 1, "instance_count": 1}, f)
        cls.server = Server(cls.repo, "--max-body-bytes", "65536", "--threads", "2", "--grpc-threads", "16")

    @classmethod
    def tearDownClass(cls):
        if cls.server.proc.poll() is None:
            cls.server.proc.kill()
        shutil.rmtree(cls.work, ignore_errors=True)

    def infer(self, request, stub=None, **kw):
        return (stub or self.server.stub).ModelInfer(request, timeout=kw.pop("timeout", 60), **kw)

    def assert_serving(self):
        """Both transports still answer, with the right values."""
        self.assertTrue(self.server.stub.ServerLive(pb.ServerLiveRequest()).live)
        x = np.ones((1, 5), np.float32)
        r = self.infer(raw_request("mlp", [("x", "FP32", x)], version="1"))
        status, body = self.server.json("POST", "/v2/models/mlp/versions/1/infer",
                                        {"inputs": [{"name": "x", "shape": [1, 5], "datatype": "FP32",
                                                     "data": x.ravel().tolist()}]})
        self.assertEqual(status, 200, body)
        np.testing.assert_array_equal(raw_output(r, "y", np.float32).ravel(), np.array(body["outputs"][0]["data"], np.float32))

    def assert_refused(self, request, code, words):
        with self.assertRaises(grpc.RpcError) as cm:
            self.infer(request)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        for w in words:
            self.assertIn(w, cm.exception.details())
        self.assert_serving()

    def test_health_and_metadata(self):
        stub = self.server.stub
        self.assertTrue(stub.ServerLive(pb.ServerLiveRequest()).live)
        self.assertTrue(stub.ServerReady(pb.ServerReadyRequest()).ready)
        meta = stub.ServerMetadata(pb.ServerMetadataRequest())
        status, http_meta = self.server.json("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertEqual((meta.name, meta.version, list(meta.extensions)),
                         (http_meta["name"], http_meta["version"], http_meta["extensions"]))
        for name, version in [("mlp", ""), ("mlp", "1"), ("types", ""), ("to_half", "")]:
            m = stub.ModelMetadata(pb.ModelMetadataRequest(name=name, version=version))
            status, h = self.server.json("GET", "/v2/models/" + name + ("/versions/" + version if version else ""))
            self.assertEqual(status, 200)
            as_json = {"name": m.name, "versions": list(m.versions), "platform": m.platform,
                       "inputs": [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in m.inputs],
                       "outputs": [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in m.outputs]}
            self.assertEqual(as_json, h)
        m = stub.ModelMetadata(pb.ModelMetadataRequest(name="mlp"))
        self.assertEqual(list(m.versions), ["1", "3"])
        self.assertEqual((m.inputs[0].name, m.inputs[0].datatype, list(m.inputs[0].shape)), ("x", "FP32", [-1, 5]))
        self.assertEqual(list(stub.ModelMetadata(pb.ModelMetadataRequest(name="to_half")).outputs[0].shape), [-1])
        self.assertTrue(stub.ModelReady(pb.ModelReadyRequest(name="mlp", version="3")).ready)
        self.assertTrue(stub.ModelReady(pb.ModelReadyRequest(name="types")).ready)
        for name, version, word in [("mlp", "2", "no version '2'"), ("nope", "", "unknown model 'nope'")]:
            for call, req in [(stub.ModelReady, pb.ModelReadyRequest), (stub.ModelMetadata, pb.ModelMetadataRequest)]:
                with self.assertRaises(grpc.RpcError) as cm:
                    call(req(name=name, version=version))
                self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
                self.assertIn(word, cm.exception.details())

    def test_infer_equals_library_and_http(self):
        x = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
        for version in ["1", "3"]:
            ref = reference(os.path.join(self.repo, "mlp", version, "model.onnx"), {"x": x}, self.work)["y"]
            # Raw in, raw out.
            r = self.infer(raw_request("mlp", [("x", "FP32", x)], version=version, id="req-" + version))
            self.assertEqual((r.model_name, r.model_version, r.id), ("mlp", version, "req-" + version))
            self.assertEqual((r.outputs[0].name, r.outputs[0].datatype, list(r.outputs[0].shape)), ("y", "FP32", [3, 4]))
            self.assertFalse(r.outputs[0].HasField("contents"))
            got = raw_output(r, "y", np.float32)
            self.assertEqual(got.tobytes(), ref.tobytes())
            # Typed in, typed out.
            r = self.infer(pb.ModelInferRequest(model_name="mlp", model_version=version,
                                                inputs=[tensor("x", "FP32", x.shape, fp32_contents=x.ravel())]))
            self.assertEqual(len(r.raw_output_contents), 0)
            typed = np.array(r.outputs[0].contents.fp32_contents, np.float32).reshape(3, 4)
            self.assertEqual(typed.tobytes(), ref.tobytes())
            # The HTTP transport's binary output: the same bytes.
            body, headers = binary_body([("x", "FP32", x)], outputs=["y"])
            status, rh, rb = self.server.request("POST", "/v2/models/mlp/versions/%s/infer" % version, body, headers)
            self.assertEqual(status, 200, rb)
            self.assertEqual(split_binary(rh, rb)[1], ref.tobytes())
        # No version: the highest; no id: none echoed.
        r = self.infer(raw_request("mlp", [("x", "FP32", x)]))
        self.assertEqual((r.model_version, r.id), ("3", ""))

    def test_infer_types(self):
        i64 = np.arange(6, dtype=np.int64).reshape(2, 3) - 3
        strings = [b"h\xc3\xa9llo", b"", b"\x00\xffz"]
        d = np.array([3.0, -0.25], np.float64)
        # Typed contents; outputs chosen and ordered by the request.
        r = self.infer(pb.ModelInferRequest(
            model_name="types",
            inputs=[tensor("i64", "INT64", [2, 3], int64_contents=i64.ravel()),
                    tensor("b", "BOOL", [2], bool_contents=[True, False]),
                    tensor("s", "BYTES", [3], bytes_contents=strings),
                    tensor("d", "FP64", [2], fp64_contents=d)],
            outputs=[pb.ModelInferRequest.InferRequestedOutputTensor(name=n) for n in ["s_out", "i64_out", "b_out", "d_out"]]))
        self.assertEqual([o.name for o in r.outputs], ["s_out", "i64_out", "b_out", "d_out"])
        self.assertEqual([o.datatype for o in r.outputs], ["BYTES", "INT64", "BOOL", "FP64"])
        self.assertEqual(list(r.outputs[0].contents.bytes_contents), strings)
        self.assertEqual(list(r.outputs[1].contents.int64_contents), (i64 + 7).ravel().tolist())
        self.assertEqual(list(r.outputs[2].contents.bool_contents), [False, True])
        self.assertEqual(list(r.outputs[3].contents.fp64_contents), (d * 0.5).tolist())
        # Raw contents: BOOL one byte each, BYTES length-prefixed.
        r = self.infer(pb.ModelInferRequest(
            model_name="types",
            inputs=[tensor("i64", "INT64", [2, 3]), tensor("b", "BOOL", [3]), tensor("s", "BYTES", [3]),
                    tensor("d", "FP64", [0])],
            raw_input_contents=[i64.tobytes(), bytes([1, 0, 1]), bytes_blob(strings), b""],
            outputs=[pb.ModelInferRequest.InferRequestedOutputTensor(name=n) for n in ["i64_out", "b_out", "s_out"]]))
        self.assertEqual(len(r.raw_output_contents), 3)
        self.assertEqual(raw_output(r, "i64_out", np.int64).tolist(), (i64 + 7).tolist())
        self.assertEqual(list(r.raw_output_contents[1]), [0, 1, 0])
        self.assertEqual(r.raw_output_contents[2], bytes_blob(strings))
        # Narrow integers: int_contents / uint_contents, range checked.
        r = self.infer(pb.ModelInferRequest(model_name="narrow", inputs=[
            tensor("a", "INT8", [3], int_contents=[-64, 0, 63]), tensor("u", "UINT16", [2], uint_contents=[7, 30000])]))
        self.assertEqual(list(r.outputs[0].contents.int_contents), [-128, 0, 126])
        self.assertEqual(list(r.outputs[1].contents.uint_contents), [14, 60000])
        self.assert_refused(pb.ModelInferRequest(model_name="narrow", inputs=[
            tensor("a", "INT8", [2], int_contents=[1, 300]), tensor("u", "UINT16", [0])]),
            grpc.StatusCode.INVALID_ARGUMENT, ["'a'", "int_contents[1] is 300", "INT8"])

    def test_fp16(self):
        """FP16 has no typed field: it travels raw, and a typed request with an FP16 output gets raw outputs."""
        x = np.array([1.0, -2.5, 65504.0, 1e-8], np.float32)
        r = self.infer(pb.ModelInferRequest(model_name="to_half", inputs=[tensor("x", "FP32", [4], fp32_contents=x)]))
        self.assertEqual(len(r.raw_output_contents), 2)
        self.assertFalse(r.outputs[0].HasField("contents"))
        self.assertEqual(raw_output(r, "h", np.float16).tobytes(), x.astype(np.float16).tobytes())
        self.assertEqual(raw_output(r, "x_out", np.float32).tobytes(), x.tobytes())
        h = np.array([0.5, -3.0, 1024.0], np.float16)
        r = self.infer(raw_request("from_half", [("h", "FP16", h)]))
        self.assertEqual(raw_output(r, "f", np.float32).tobytes(), h.astype(np.float32).tobytes())
        self.assert_refused(pb.ModelInferRequest(model_name="from_half", inputs=[tensor("h", "FP16", [1])]),
                            grpc.StatusCode.INVALID_ARGUMENT, ["'h'", "FP16", "raw_input_contents"])

    def test_errors(self):
        INVALID, NOT_FOUND = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
        x = np.ones((1, 5), np.float32)
        ok = raw_request("mlp", [("x", "FP32", x)], version="1")

        def typed(**kw):
            t = dict(name="x", datatype="FP32", shape=[1, 5], fp32_contents=x.ravel())
            t.update(kw)
            n, dt, s = t.pop("name"), t.pop("datatype"), t.pop("shape")
            return pb.ModelInferRequest(model_name="mlp", model_version="1", inputs=[tensor(n, dt, s, **t)])

        def with_raw(inputs, raws):
            return pb.ModelInferRequest(model_name="mlp", model_version="1", inputs=inputs, raw_input_contents=raws)

        cases = [
            (pb.ModelInferRequest(model_name="nope", inputs=ok.inputs), NOT_FOUND, ["unknown model 'nope'"]),
            (pb.ModelInferRequest(model_name="mlp", model_version="7", inputs=ok.inputs), NOT_FOUND,
             ["no version '7'", "1, 3"]),
            (typed(datatype="FP64"), INVALID, ["'x'", "datatype FP64", "expects FP32"]),
            (typed(datatype="FLOAT99"), INVALID, ["FLOAT99"]),
            (typed(shape=[1, 6], fp32_contents=[0] * 6), INVALID, ["[1,6]", "[-1,5]"]),
            (typed(shape=[-1, 5]), INVALID, ["'x'", "negative"]),
            # 20000 dimensions: refused with a message of bounded size.
            (typed(shape=[1] * 20000), INVALID, ["'x'", "(20000 dimensions)", "[-1,5]"]),
            (typed(shape=[2, 5]), INVALID, ["'x'", "fp32_contents has 5 elements", "[2,5] holds 10"]),
            (typed(fp32_contents=[], int_contents=[1, 2, 3, 4, 5]), INVALID, ["contents.int_contents", "fp32_contents"]),
            # A huge shape with little data is refused before anything is allocated.
            (typed(shape=[2 ** 40, 5]), INVALID, ["fp32_contents has 5 elements", "[1099511627776,5]"]),
            (with_raw([tensor("x", "FP32", [2 ** 40, 5])], [x.tobytes()]), INVALID,
             ["raw_input_contents[0] is 20", "needs 21990232555520 bytes"]),
            (with_raw([tensor("x", "FP32", [2, 5])], [x.tobytes()]), INVALID,
             ["'x'", "raw_input_contents[0] is 20", "[2,5] of FP32 needs 40 bytes"]),
            (with_raw([tensor("x", "FP32", [1, 5])], [x.tobytes(), x.tobytes()]), INVALID,
             ["raw_input_contents has 2 entries", "1 inputs"]),
            (with_raw([tensor("x", "FP32", [1, 5], fp32_contents=x.ravel())], [x.tobytes()]), INVALID,
             ["'x' has contents", "raw_input_contents"]),
            (pb.ModelInferRequest(model_name="mlp", model_version="1"), INVALID, ["missing input 'x'", "FP32 [-1,5]"]),
            (with_raw([tensor("x", "FP32", [1, 5])] * 2, [x.tobytes()] * 2), INVALID, ["'x' is given twice"]),
            (typed(name="z"), INVALID, ["unknown input 'z'", "'x'"]),
            (pb.ModelInferRequest(model_name="mlp", model_version="1", inputs=ok.inputs,
                                  raw_input_contents=ok.raw_input_contents,
                                  outputs=[pb.ModelInferRequest.InferRequestedOutputTensor(name="q")]),
             INVALID, ["unknown output 'q'", "'y'"]),
            (pb.ModelInferRequest(model_name="mlp", model_version="1", inputs=ok.inputs,
                                  raw_input_contents=ok.raw_input_contents,
                                  parameters={"timeout": pb.InferParameter(string_param="soon")}),
             INVALID, ["timeout", "int64_param"]),
            (pb.ModelInferRequest(model_name="types", inputs=[
                tensor("i64", "INT64", [2, 3]), tensor("b", "BOOL", [0]), tensor("s", "BYTES", [2]),
                tensor("d", "FP64", [0])], raw_input_contents=[bytes(48), b"", bytes_blob([b"abc", b"de"])[:-1], b""]),
             INVALID, ["'s'", "BYTES"]),
        ]
        for request, code, words in cases:
            with self.subTest(words=words):
                self.assert_refused(request, code, words)
        # Bytes that are not a ModelInferRequest: refused by gRPC, the server lives on.
        garbage = self.server.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        with self.assertRaises(grpc.RpcError) as cm:
            garbage(b"\x0a\xff\xff\xff\xff\x0f", timeout=60)
        self.assertIn(cm.exception.code(), (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT))
        self.assert_serving()
        # Larger than --max-body-bytes (65536): gRPC refuses the message.
        big = np.zeros((4000, 5), np.float32)
        with self.assertRaises(grpc.RpcError) as cm:
            self.infer(raw_request("mlp", [("x", "FP32", big)], version="1"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assert_serving()
        # The refusals of a known model are counted by reason, as over HTTP.
        text = self.server.request("GET", "/metrics")[2].decode()
        m = re.search(r'spindle_serve_request_failures_total\{model="mlp",version="1",reason="bad_request"\} (\d+)', text)
        self.assertIsNotNone(m, text)
        self.assertGreaterEqual(int(m.group(1)), 15)

    def slow_request(self, trip, timeout_us=None, stub=None):
        """(status code, details, response) of one call to the slow model."""
        req = pb.ModelInferRequest(model_name="slow", inputs=[
            tensor("trip", "INT64", [], int64_contents=[trip]), tensor("x", "FP32", [2], fp32_contents=[0, 1])])
        if timeout_us:
            req.parameters["timeout"].int64_param = timeout_us
        try:
            r = self.infer(req, stub=stub)
            return grpc.StatusCode.OK, "", r
        except grpc.RpcError as e:
            return e.code(), e.details(), None

    def calibrate_trip(self):
        """A trip count whose run takes at least ~0.3 s here (after a warm-up
        run: a first run's own cost must not pass for the trip's)."""
        self.assertEqual(self.slow_request(1)[0], grpc.StatusCode.OK)
        trip = 20000
        while True:
            t0 = time.monotonic()
            code, details, r = self.slow_request(trip)
            took = time.monotonic() - t0
            self.assertEqual(code, grpc.StatusCode.OK, details)
            self.assertEqual(list(r.outputs[0].contents.fp32_contents), [float(trip), float(trip + 1)])
            if took > 0.3 or trip > 10 ** 8:
                return trip
            trip *= 4

    def concurrently(self, fns, gap=0.02):
        results = [None] * len(fns)

        def run(i):
            results[i] = fns[i]()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
        for t in threads:
            t.start()
            time.sleep(gap)
        for t in threads:
            t.join()
        return results

    def in_thread(self, fn):
        out = []
        t = threading.Thread(target=lambda: out.append(fn()))
        t.start()
        return t, out

    def failures(self):
        """The slow model's failures by reason, from /metrics."""
        text = self.server.request("GET", "/metrics")[2].decode()
        return {m.group(1): int(m.group(2)) for m in re.finditer(
            r'spindle_serve_request_failures_total\{model="slow",version="1",reason="(\w+)"\} (\d+)', text)}

    def assert_failed(self, before, **delta):
        """The failures counted since `before` are exactly `delta` by reason
        (a call's failure is counted when its handler returns, which may be
        just after the client has its answer: waits up to 10 s for it)."""
        deadline = time.monotonic() + 10
        while True:
            after = self.failures()
            got = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}
            got = {k: v for k, v in got.items() if v}
            if got == delta or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(got, delta)

    def test_queue_full_and_timeout(self):
        trip = self.calibrate_trip()
        before = self.failures()
        # max_queue 1, one runner: one runs, one waits, the others are refused.
        # Each call starts once the server holds the ones before it (the
        # gauges at /metrics), the first running ~1.2 s or more.
        running = self.in_thread(lambda: self.slow_request(trip * 4))
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        waiting = self.in_thread(lambda: self.slow_request(trip))
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 1)
        for _ in range(3):
            code, details, _ = self.slow_request(trip, stub=self.server.new_stub())
            self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
            self.assertIn("queue is full", details)
        for t, out in (running, waiting):
            t.join()
            self.assertEqual(out[0][0], grpc.StatusCode.OK, out[0][1])
        self.assert_failed(before, queue_full=3)
        # The "timeout" parameter cancels a request waiting in the queue ...
        # (once the server is idle: a client can hold its answer before the
        # server has counted the run done, and the next call would queue
        # behind it while the gauge still reads the old run)
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 0)
        wait_for_gauge(self.server, "spindle_serve_queued_requests", "slow", 0)
        before = self.failures()
        first = self.in_thread(lambda: self.slow_request(trip * 4))
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        code, details, _ = self.slow_request(trip, timeout_us=50000)
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        self.assertIn("timeout (50000 us) passed while it waited in the queue", details)
        first[0].join()
        self.assertEqual(first[1][0][0], grpc.StatusCode.OK)
        # ... and a running one.
        t0 = time.monotonic()
        code, details, _ = self.slow_request(trip * 20, timeout_us=100000)
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        self.assertLess(time.monotonic() - t0, 5)
        self.assert_failed(before, timeout=2)
        # The call's own deadline stops the run the same way (the client
        # sees DEADLINE_EXCEEDED; the server is free again soon after). The
        # server counts a timeout, or a cancel when the client's own cancel
        # at its deadline (its clock) comes before the server's deadline.
        before = self.failures()
        with self.assertRaises(grpc.RpcError) as cm:
            self.infer(pb.ModelInferRequest(model_name="slow", inputs=[
                tensor("trip", "INT64", [], int64_contents=[trip * 20]), tensor("x", "FP32", [2], fp32_contents=[0, 1])]),
                timeout=0.1)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        t0 = time.monotonic()
        code, details, _ = self.slow_request(1)
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertLess(time.monotonic() - t0, 5)
        deadline = time.monotonic() + 10
        while sum(self.failures().values()) == sum(before.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        after = self.failures()
        self.assertEqual(sum(after.values()) - sum(before.values()), 1, (before, after))
        self.assertEqual(after.get("timeout", 0) + after.get("cancelled", 0),
                         before.get("timeout", 0) + before.get("cancelled", 0) + 1, (before, after))
        # A call the client cancels stops its run (unstopped, it would take 12 s or more).
        before = self.failures()
        future = self.server.stub.ModelInfer.future(pb.ModelInferRequest(model_name="slow", inputs=[
            tensor("trip", "INT64", [], int64_contents=[trip * 40]), tensor("x", "FP32", [2], fp32_contents=[0, 1])]))
        wait_for_gauge(self.server, "spindle_serve_requests_in_run", "slow", 1)
        self.assertTrue(future.cancel())
        t0 = time.monotonic()
        code, details, _ = self.slow_request(1)
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertLess(time.monotonic() - t0, 5)
        self.assert_failed(before, cancelled=1)
        self.assert_serving()

    def test_concurrent_clients_both_transports(self):
        """8 clients at once, half gRPC (each its own connection), half HTTP:
        every answer is the library's for its own input, bitwise."""
        rng = np.random.default_rng(11)
        xs = [rng.standard_normal((2, 5)).astype(np.float32) for _ in range(4)]
        model = os.path.join(self.repo, "mlp", "3", "model.onnx")
        refs = [reference(model, {"x": x}, self.work)["y"].tobytes() for x in xs]

        def grpc_client(k):
            stub = self.server.new_stub()
            out = []
            for j in range(12):
                i = (k + j) % 4
                r = self.infer(raw_request("mlp", [("x", "FP32", xs[i])]), stub=stub) if j % 2 else self.infer(
                    pb.ModelInferRequest(model_name="mlp", inputs=[tensor("x", "FP32", [2, 5], fp32_contents=xs[i].ravel())]),
                    stub=stub)
                got = (raw_output(r, "y", np.float32) if j % 2 else
                       np.array(r.outputs[0].contents.fp32_contents, np.float32)).tobytes()
                out.append(got == refs[i])
            return out

        def http_client(k):
            out = []
            for j in range(12):
                i = (k + j) % 4
                body, headers = binary_body([("x", "FP32", xs[i])], outputs=["y"])
                status, rh, rb = self.server.request("POST", "/v2/models/mlp/infer", body, headers)
                out.append(status == 200 and split_binary(rh, rb)[1] == refs[i])
            return out

        results = self.concurrently([(lambda k=k: grpc_client(k)) if k % 2 == 0 else (lambda k=k: http_client(k))
                                     for k in range(8)], gap=0)
        self.assertEqual(results, [[True] * 12] * 8)

    def test_port_in_use(self):
        """A second server on the same gRPC port fails instead of sharing it."""
        p = subprocess.run([SPINDLE, "serve", "--model-repository", self.repo, "--http-port", "0",
                            "--grpc-port", str(self.server.grpc_port)], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("cannot listen on 127.0.0.1:%d (gRPC)" % self.server.grpc_port, p.stderr)
        self.assert_serving()

    def test_zz_sigterm_drains(self):
        """Last: SIGTERM while a gRPC call runs; it is answered, then exit 0."""
        trip = self.calibrate_trip()
        results = []
        t = threading.Thread(target=lambda: results.append(self.slow_request(trip)))
        t.start()
        time.sleep(0.1)
        rc, out, err = self.server.stop()
        t.join()
        self.assertEqual(rc, 0, err)
        self.assertEqual(results[0][0], grpc.StatusCode.OK, results)
        self.assertIn("stopped", out)


class GrpcThreadsTest(unittest.TestCase):
    """--grpc-threads bounds gRPC's call threads: calls past them are refused
    RESOURCE_EXHAUSTED, the process's threads stay bounded, and no gRPC
    thread computes (the runs happen on the model's runner)."""

    def test_bounded_threads(self):
        def fill(repo):
            generate_stubs(os.path.join(os.path.dirname(repo), "stubs"))
            save(slow_graph(), os.path.join(repo, "slow", "1", "model.onnx"))
            with open(os.path.join(repo, "slow", "config.json"), "w") as f:
                json.dump({"max_queue": 64}, f)
        with scratch_server(fill, Server, "--threads", "1", "--grpc-threads", "4", "--http-threads", "2") as server:
            def thread_names():
                names = []
                for t in os.listdir("/proc/%d/task" % server.proc.pid):
                    with open("/proc/%d/task/%s/comm" % (server.proc.pid, t)) as f:
                        names.append(f.read().strip())
                return names
            case = ServeGrpcTest("test_queue_full_and_timeout")
            ServeGrpcTest.server = server
            trip = case.calibrate_trip()
            before = thread_names()
            results = []
            calls = [threading.Thread(target=lambda: results.append(case.slow_request(trip, stub=server.new_stub())))
                     for _ in range(10)]
            for c in calls:
                c.start()
            time.sleep(0.2)
            busy = thread_names()
            for c in calls:
                c.join()
            codes = [r[0] for r in results]
            self.assertIn(grpc.StatusCode.OK, codes)
            self.assertIn(grpc.StatusCode.RESOURCE_EXHAUSTED, codes)
            self.assertLessEqual(busy.count("grpcpp_sync_ser"), 4, busy)
            # gRPC's own threads beyond the call threads: a handful, whatever the load.
            self.assertLessEqual(len(busy) - len(before), 4 + 2, (before, busy))
            self.assertEqual(server.stop()[0], 0)


class GrpcBatchingTest(unittest.TestCase):
    """Dynamic batching over gRPC: concurrent raw calls share runs and each
    gets the bytes the library computes for it alone, typed calls too."""

    def test_batched_calls_equal_alone(self):
        def fill(repo):
            generate_stubs(os.path.join(os.path.dirname(repo), "stubs"))
            save(serve_test.conv_graph(7), os.path.join(repo, "conv", "1", "model.onnx"))
            with open(os.path.join(repo, "conv", "config.json"), "w") as f:
                json.dump({"max_batch_size": 8, "max_queue_delay_us": 300000}, f)
        with serve_test.scratch_server(fill, Server, "--threads", "2") as server:
            rng = np.random.default_rng(3)
            arrays = [rng.standard_normal((1 + i % 2, 3, 6, 6)).astype(np.float32) for i in range(6)]
            stubs = [server.new_stub() for _ in arrays]
            for stub in stubs:
                self.assertTrue(stub.ServerLive(pb.ServerLiveRequest()).live)
            results = [None] * len(arrays)
            barrier = threading.Barrier(len(arrays))

            def call(i):
                if i % 3 == 2:  # typed contents, answered typed
                    req = pb.ModelInferRequest(model_name="conv", inputs=[
                        tensor("x", "FP32", arrays[i].shape, fp32_contents=arrays[i].ravel().tolist())])
                else:
                    req = raw_request("conv", [("x", "FP32", arrays[i])])
                barrier.wait()
                results[i] = stubs[i].ModelInfer(req, timeout=60)
            threads = [threading.Thread(target=call, args=(i,)) for i in range(len(arrays))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            work = os.path.dirname(server.proc.args[3])
            for i, r in enumerate(results):
                self.assertIsNotNone(r, "call %d failed" % i)
                ref_dir = os.path.join(work, "ref%d" % i)
                os.makedirs(ref_dir)
                ref = serve_test.reference(server.proc.args[3] + "/conv/1/model.onnx", {"x": arrays[i]}, ref_dir)
                for name in ("y", "f"):
                    if i % 3 == 2:
                        o = [o for o in r.outputs if o.name == name][0]
                        got = np.array(o.contents.fp32_contents, np.float32).reshape(list(o.shape))
                    else:
                        got = raw_output(r, name, np.float32)
                    self.assertEqual(got.tobytes(), ref[name].tobytes(), "call %d output %s" % (i, name))
            status, _, body = server.request("GET", "/metrics")
            sizes = [int(m) for m in re.findall(r'spindle_serve_batch_runs_total\{model="conv",version="1",'
                                                r'batch_size="(\d+)"\}', body.decode())]
            self.assertGreater(max(sizes), 1, body.decode())
            # A request over max_batch_size is refused, as Triton refuses it.
            with self.assertRaises(grpc.RpcError) as cm:
                server.stub.ModelInfer(raw_request("conv", [("x", "FP32", np.zeros((9, 3, 6, 6), np.float32))]),
                                       timeout=60)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("batch size 9 (the first dimension of its inputs) is more than model 'conv' version 1 "
                          "takes: max_batch_size 8", cm.exception.details())
            self.assertEqual(server.stop()[0], 0)

    def test_cancelled_batch_stops(self):
        """Calls cancelled by their clients while their batch runs: when none
        is left waiting, the run stops (unstopped it would take hours)."""
        def fill(repo):
            generate_stubs(os.path.join(os.path.dirname(repo), "stubs"))
            save(serve_test.slow_batch_graph(), os.path.join(repo, "slowb", "1", "model.onnx"))
            with open(os.path.join(repo, "slowb", "config.json"), "w") as f:
                json.dump({"max_batch_size": 2, "max_queue_delay_us": 1000000}, f)

        def request(trip, first):
            return raw_request("slowb", [("trip", "INT64", np.array([trip], np.int64)),
                                         ("x", "FP32", np.array([[first, first + 1]], np.float32))])
        with serve_test.scratch_server(fill, Server, "--threads", "1") as server:
            r = server.stub.ModelInfer(request(3, 0), timeout=60)
            np.testing.assert_array_equal(raw_output(r, "y", np.float32), [[3, 4]])
            futures = [server.stub.ModelInfer.future(request(10 ** 12, i)) for i in range(2)]
            wait_for_gauge(server, "spindle_serve_requests_in_run", "slowb", 2)  # one batch of two runs
            futures[0].cancel()
            time.sleep(0.5)  # one call left waiting: the run goes on
            self.assertEqual(serve_test.gauge(server, "spindle_serve_requests_in_run", "slowb"), 2)
            t0 = time.monotonic()
            futures[1].cancel()
            wait_for_gauge(server, "spindle_serve_requests_in_run", "slowb", 0)
            self.assertLess(time.monotonic() - t0, 10)
            r = server.stub.ModelInfer(request(5, 1), timeout=60)
            np.testing.assert_array_equal(raw_output(r, "y", np.float32), [[6, 7]])
            text = server.request("GET", "/metrics")[2].decode()
            self.assertRegex(text, r'model="slowb",version="1",reason="cancelled"\} 2')
            self.assertRegex(text, r'model="slowb",version="1",batch_size="2"\} 1')
            self.assertEqual(server.stop()[0], 0)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        SPINDLE = sys.argv[1]
    if len(sys.argv) > 2:
        PROTOC = sys.argv[2]
    if len(sys.argv) > 3:
        PLUGIN = sys.argv[3]
    serve_test.SPINDLE = SPINDLE
    unittest.main(argv=sys.argv[:1], verbosity=2)
