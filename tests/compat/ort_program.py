"""A typical ONNX Runtime Python program, with only its import changed
(`import spindle as ort`), run step by step on the PP-OCR models.

Each step uses the API the way ONNX Runtime's documentation and examples do
and prints PASS or FAIL; outputs are compared with ONNX Runtime's own
(onnxruntime-node 1.30, written by scripts/make-references.sh into
$SPINDLE_CACHE/refs). Steps whose behaviour spindle documents as different
(README, "Differences from onnxruntime (Python)") check spindle's documented
behaviour and say so. Exit status: 0 when every step passes, 1 otherwise, 77
(skipped) when the models or references are missing.

Usage: PYTHONPATH=build/bindings/python /usr/bin/python3 tests/compat/ort_program.py
"""
import json
import os
import pathlib
import sys
import tempfile
import threading
import traceback
import warnings

import numpy as np

import spindle as ort
from spindle.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidProtobuf, NoSuchFile

CACHE = pathlib.Path(os.environ.get("SPINDLE_CACHE", pathlib.Path.home() / ".cache" / "spindle"))
REC, CLS, DET = "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer", "ch_PP-OCRv4_det_infer_logits"
RTOL, ATOL = 1e-3, 1e-4

results = []
state = {}


def reference(stem):
    manifest = CACHE / "refs" / stem / "manifest.json"
    m = json.loads(manifest.read_text())
    feeds = {i["name"]: np.load(manifest.parent / i["file"]) for i in m["inputs"]}
    outputs = {o["name"]: np.load(manifest.parent / o["file"]) for o in m["outputs"]}
    return m["model"], feeds, outputs


def step(name):
    """Runs the decorated function as one numbered step; an exception or a
    failed assert is a FAIL with its message."""
    def run(fn):
        number = len(results) + 1
        try:
            note = fn()
            results.append(True)
            print(f"step {number:2d} PASS  {name}" + (f"  ({note})" if note else ""))
        except Exception as e:  # noqa: BLE001 - every failure is reported, the program goes on
            results.append(False)
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            print(f"step {number:2d} FAIL  {name}: {detail}")
        return fn
    return run


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def main():
    for stem in (REC, CLS, DET):
        if not (CACHE / "refs" / stem / "manifest.json").exists():
            print(f"skipped: {CACHE / 'refs' / stem} is missing (run scripts/make-references.sh)")
            return 77
    rec_path, rec_feed, rec_want = reference(REC)
    cls_path, cls_feed, cls_want = reference(CLS)
    det_path, det_feed, det_want = reference(DET)
    rec_out = list(rec_want)[0]
    x = rec_feed["x"]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ort-program-"))

    @step("ort.__version__ is a version string")
    def _():
        assert isinstance(ort.__version__, str) and ort.__version__.count(".") == 2
        return ort.__version__

    @step("get_available_providers() lists CPUExecutionProvider")
    def _():
        assert "CPUExecutionProvider" in ort.get_available_providers()

    @step("get_all_providers() names the GPU providers too")
    def _():
        assert {"CUDAExecutionProvider", "CPUExecutionProvider"} <= set(ort.get_all_providers())

    @step("get_device() is 'CPU'")
    def _():
        assert ort.get_device() == "CPU"

    @step("get_build_info() is a string")
    def _():
        assert isinstance(ort.get_build_info(), str) and ort.get_build_info()

    @step("set_default_logger_severity(3)")
    def _():
        ort.set_default_logger_severity(3)

    @step("set_seed(0)")
    def _():
        ort.set_seed(0)

    @step("SessionOptions: optimization level, threads, execution mode and order")
    def _():
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = 2
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.execution_order = ort.ExecutionOrder.DEFAULT
        so.log_severity_level = 3
        so.logid = "ort-program"
        so.enable_mem_pattern = True
        so.enable_cpu_mem_arena = True
        state["so"] = so

    @step("add_session_config_entry / get_session_config_entry")
    def _():
        state["so"].add_session_config_entry("session.intra_op.allow_spinning", "0")
        assert state["so"].get_session_config_entry("session.intra_op.allow_spinning") == "0"

    @step("InferenceSession(path, so, providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])")
    def _():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            state["rec"] = ort.InferenceSession(rec_path, sess_options=state["so"],
                                                providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
        assert any("CUDAExecutionProvider" in str(w.message) for w in caught), "no warning for the CUDA provider"

    rec = lambda: state["rec"]  # noqa: E731

    @step("get_providers() == ['CPUExecutionProvider']")
    def _():
        assert rec().get_providers() == ["CPUExecutionProvider"]

    @step("get_provider_options() has the CPU provider")
    def _():
        assert "CPUExecutionProvider" in rec().get_provider_options()

    @step("get_inputs(): name, shape, type")
    def _():
        (i,) = rec().get_inputs()
        assert i.name == "x" and i.type == "tensor(float)" and i.shape[1:3] == [3, 48]
        return f"{i.name} {i.shape} {i.type}"

    @step("get_outputs(): name, type")
    def _():
        (o,) = rec().get_outputs()
        assert o.name == rec_out and o.type == "tensor(float)"

    @step("get_modelmeta(): graph_name, producer_name, version, custom_metadata_map")
    def _():
        meta = rec().get_modelmeta()
        assert isinstance(meta.graph_name, str) and isinstance(meta.producer_name, str)
        assert isinstance(meta.version, int) and isinstance(meta.custom_metadata_map, dict)

    @step("get_session_options() returns the options")
    def _():
        assert rec().get_session_options().intra_op_num_threads == 2

    @step("get_overridable_initializers() is a list")
    def _():
        assert isinstance(rec().get_overridable_initializers(), list)

    @step("run(None, feed) matches ONNX Runtime")
    def _():
        out = rec().run(None, {"x": x})
        close(out[0], rec_want[rec_out])

    @step("run([name], feed) matches ONNX Runtime")
    def _():
        (out,) = rec().run([rec_out], {rec().get_inputs()[0].name: x})
        close(out, rec_want[rec_out])

    @step("greedy CTC decode (argmax) agrees with ONNX Runtime's")
    def _():
        out = rec().run(None, {"x": x})[0]
        assert np.array_equal(out.argmax(-1), rec_want[rec_out].argmax(-1))

    @step("run with RunOptions (log level, run_tag, add_run_config_entry)")
    def _():
        ro = ort.RunOptions()
        ro.log_severity_level = 3
        ro.run_tag = "step"
        ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        close(rec().run(None, {"x": x}, ro)[0], rec_want[rec_out])

    @step("InferenceSession(model bytes)")
    def _():
        sess = ort.InferenceSession(pathlib.Path(cls_path).read_bytes(), providers=["CPUExecutionProvider"])
        close(sess.run(None, cls_feed)[0], list(cls_want.values())[0])

    @step("InferenceSession(pathlib.Path)")
    def _():
        state["cls"] = ort.InferenceSession(pathlib.Path(cls_path), providers=["CPUExecutionProvider"])
        close(state["cls"].run(None, cls_feed)[0], list(cls_want.values())[0])

    @step("cls with a batch of 2 (dynamic batch dimension)")
    def _():
        batch = np.concatenate([cls_feed["x"]] * 2)
        out = state["cls"].run(None, {"x": batch})[0]
        assert out.shape == (2, 2)
        close(out, np.concatenate([list(cls_want.values())[0]] * 2))

    @step("det (two outputs) matches ONNX Runtime")
    def _():
        sess = ort.InferenceSession(det_path, providers=["CPUExecutionProvider"])
        outs = sess.run(None, det_feed)
        for got, (name, want) in zip(outs, det_want.items()):
            close(got, want)

    @step("OrtValue.ortvalue_from_numpy: shape, data_type, element_type, is_tensor, device_name")
    def _():
        v = ort.OrtValue.ortvalue_from_numpy(x)
        assert v.shape() == list(x.shape) and v.data_type() == "tensor(float)" and v.element_type() == np.float32
        assert v.is_tensor() and v.device_name() == "cpu"
        assert np.shares_memory(v.numpy(), x), "a copy (ONNX Runtime shares the numpy buffer on the CPU)"
        state["x_value"] = v

    @step("run_with_ort_values matches ONNX Runtime")
    def _():
        (out,) = rec().run_with_ort_values([rec_out], {"x": state["x_value"]})
        close(out.numpy(), rec_want[rec_out])

    @step("OrtValue.ortvalue_from_shape_and_type")
    def _():
        v = ort.OrtValue.ortvalue_from_shape_and_type(list(rec_want[rec_out].shape), np.float32)
        assert v.shape() == list(rec_want[rec_out].shape)
        state["dest"] = v

    @step("io_binding: bind_cpu_input + bind_output, run_with_iobinding, copy_outputs_to_cpu")
    def _():
        binding = rec().io_binding()
        binding.bind_cpu_input("x", x)
        binding.bind_output(rec_out)
        rec().run_with_iobinding(binding)
        close(binding.copy_outputs_to_cpu()[0], rec_want[rec_out])
        state["binding"] = binding

    @step("io_binding: get_outputs() gives OrtValues")
    def _():
        (v,) = state["binding"].get_outputs()
        close(v.numpy(), rec_want[rec_out])

    @step("io_binding: bind_ortvalue_input + bind_ortvalue_output (preallocated)")
    def _():
        binding = rec().io_binding()
        binding.bind_ortvalue_input("x", state["x_value"])
        binding.bind_ortvalue_output(rec_out, state["dest"])
        rec().run_with_iobinding(binding)
        close(state["dest"].numpy(), rec_want[rec_out])

    @step("io_binding: bind_input / bind_output by address")
    def _():
        out = np.empty(rec_want[rec_out].shape, np.float32)
        binding = rec().io_binding()
        binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
        binding.bind_output(rec_out, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        rec().run_with_iobinding(binding)
        close(out, rec_want[rec_out])

    @step("io_binding: clear_binding_inputs / clear_binding_outputs")
    def _():
        state["binding"].clear_binding_inputs()
        state["binding"].clear_binding_outputs()

    @step("run_async(output_names, feed, callback, user_data)")
    def _():
        done = threading.Event()
        got = {}

        def callback(outputs, user_data, err):
            got.update(outputs=outputs, user_data=user_data, err=err)
            done.set()

        rec().run_async(None, {"x": x}, callback, "user data")
        assert done.wait(120), "no callback within 120 s"
        assert got["err"] == "" and got["user_data"] == "user data"
        close(got["outputs"][0], rec_want[rec_out])

    @step("runs from 4 Python threads at once on one session")
    def _():
        outs = [None] * 4

        def work(i):
            outs[i] = state["cls"].run(None, cls_feed)[0]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for o in outs:
            close(o, list(cls_want.values())[0])

    @step("a wrong input name raises InvalidArgument")
    def _():
        try:
            rec().run(None, {"wrong": x})
        except InvalidArgument as e:
            return str(e)[:60]
        raise AssertionError("no InvalidArgument")

    @step("a wrong element type raises InvalidArgument")
    def _():
        try:
            rec().run(None, {"x": x.astype(np.float64)})
        except InvalidArgument:
            return None
        raise AssertionError("no InvalidArgument")

    @step("a wrong rank raises InvalidArgument")
    def _():
        try:
            rec().run(None, {"x": x[0]})
        except InvalidArgument:
            return None
        raise AssertionError("no InvalidArgument")

    @step("a missing model file raises NoSuchFile")
    def _():
        try:
            ort.InferenceSession(str(tmp / "missing.onnx"))
        except NoSuchFile:
            return None
        raise AssertionError("no NoSuchFile")

    @step("bytes that are no model raise InvalidProtobuf")
    def _():
        try:
            ort.InferenceSession(b"not a model")
        except InvalidProtobuf:
            return None
        raise AssertionError("no InvalidProtobuf")

    @step("the session runs after those errors")
    def _():
        close(rec().run(None, {"x": x})[0], rec_want[rec_out])

    @step("RunOptions.terminate = True makes the run raise Fail")
    def _():
        ro = ort.RunOptions()
        ro.terminate = True
        try:
            rec().run(None, {"x": x}, ro)
        except Fail:
            return None
        raise AssertionError("no Fail")

    @step("add_free_dimension_override_by_name fixes the batch dimension")
    def _():
        so = ort.SessionOptions()
        batch = state["cls"].get_inputs()[0].shape[0]
        so.add_free_dimension_override_by_name(batch, 1)
        sess = ort.InferenceSession(cls_path, so, providers=["CPUExecutionProvider"])
        assert sess.get_inputs()[0].shape[0] == 1
        close(sess.run(None, cls_feed)[0], list(cls_want.values())[0])

    @step("optimized_model_filepath writes a model that loads back")
    def _():
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(tmp / "optimized.onnx")
        sess = ort.InferenceSession(cls_path, so, providers=["CPUExecutionProvider"])
        close(sess.run(None, cls_feed)[0], list(cls_want.values())[0])
        again = ort.InferenceSession(str(tmp / "optimized.onnx"), providers=["CPUExecutionProvider"])
        close(again.run(None, cls_feed)[0], list(cls_want.values())[0])

    @step("enable_profiling, get_profiling_start_time_ns, end_profiling")
    def _():
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp / "profile")
        sess = ort.InferenceSession(cls_path, so, providers=["CPUExecutionProvider"])
        assert sess.get_profiling_start_time_ns() > 0
        sess.run(None, cls_feed)
        path = sess.end_profiling()
        assert pathlib.Path(path).exists() and json.loads(pathlib.Path(path).read_text())

    @step("set_providers(['CPUExecutionProvider']) and run")
    def _():
        state["cls"].set_providers(["CPUExecutionProvider"])
        close(state["cls"].run(None, cls_feed)[0], list(cls_want.values())[0])

    @step("GraphOptimizationLevel.ORT_DISABLE_ALL gives the same result")
    def _():
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(rec_path, so, providers=["CPUExecutionProvider"])
        close(sess.run(None, {"x": x})[0], rec_want[rec_out])

    @step("ExecutionMode.ORT_PARALLEL gives the same result")
    def _():
        so = ort.SessionOptions()
        so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        so.inter_op_num_threads = 2
        sess = ort.InferenceSession(rec_path, so, providers=["CPUExecutionProvider"])
        close(sess.run(None, {"x": x})[0], rec_want[rec_out])

    @step("outputs are writable numpy arrays owned by the caller")
    def _():
        out = rec().run(None, {"x": x})[0]
        out[...] = 0
        close(rec().run(None, {"x": x})[0], rec_want[rec_out])

    failed = results.count(False)
    print(f"ort_program: {len(results) - failed} of {len(results)} steps passed")
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
