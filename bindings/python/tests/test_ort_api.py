"""ONNX Runtime's Python API beyond InferenceSession.run, as spindle provides
it: exception classes and where they are raised, provider lists, OrtValue,
IOBinding, run_with_ort_values, run_async, free-dimension overrides, run
config entries and the module functions. Outputs are checked against ONNX
Runtime's reference outputs from the model cache (scripts/make-references.sh).
"""
import gc
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import spindle
from spindle.capi import onnxruntime_pybind11_state as ort_state

from test_spindle import CACHE, CLS, reference


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def cls_session(**kwargs):
    model, feeds, expected = reference(CLS)
    return spindle.InferenceSession(model, **kwargs), feeds["x"], list(expected.values())[0]


def test_onnx_runtime_exception_classes_are_spindles_and_raised_where_onnx_runtime_raises_them():
    for name in ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
                 "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"]:
        assert getattr(ort_state, name) is getattr(spindle, name)
        assert issubclass(getattr(ort_state, name), spindle.Fail)
    from spindle.capi._pybind_state import InvalidArgument
    assert InvalidArgument is spindle.InvalidArgument and spindle.Unsupported is spindle.NotImplemented
    sess, x, want = cls_session()
    # A wrong input name: InvalidArgument in ONNX Runtime; still a KeyError here.
    with pytest.raises(ort_state.InvalidArgument, match=r"unknown input name 'y'") as info:
        sess.run(None, {"y": x})
    assert isinstance(info.value, KeyError)
    with pytest.raises(ort_state.InvalidArgument, match=r"unknown output name 'nope'"):
        sess.run(["nope"], {"x": x})
    with pytest.raises(ort_state.InvalidArgument, match=r"expected element type float32"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ort_state.NoSuchFile, match=r"model file /nonexistent/m.onnx does not exist") as info:
        spindle.InferenceSession("/nonexistent/m.onnx")
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(ort_state.InvalidProtobuf, match=r"not a valid ONNX model"):
        spindle.InferenceSession(b"\x08\x07garbage")
    close(sess.run(None, {"x": x})[0], want)  # still usable


def test_a_malformed_graph_is_invalid_graph_and_option_errors_stay_invalid_argument(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Add", ["x", "nope"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    (tmp_path / "bad.onnx").write_bytes(model)
    for source in (model, str(tmp_path / "bad.onnx")):
        with pytest.raises(ort_state.InvalidGraph, match=r"node Add reads 'nope', which no node, input or initializer"):
            spindle.InferenceSession(source)
    so = spindle.SessionOptions()  # a bad value is refused where it is added, naming the key
    with pytest.raises(ort_state.InvalidArgument, match=r"session.max_tensor_bytes=\"x\""):
        so.add_session_config_entry("session.max_tensor_bytes", "x")
    spindle.InferenceSession(reference(CLS)[0], so)  # the options stay usable


def test_a_provider_list_with_cpu_runs_and_warns_for_the_others():
    model, feeds, expected = reference(CLS)
    with pytest.warns(UserWarning, match=r"Specified provider 'CUDAExecutionProvider' is not in available provider"):
        sess = spindle.InferenceSession(model, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    close(sess.run(None, feeds)[0], list(expected.values())[0])
    with pytest.warns(UserWarning, match=r"'CUDAExecutionProvider'"):
        sess = spindle.InferenceSession(model, providers=[("CUDAExecutionProvider", {"device_id": 0}),
                                                          ("CPUExecutionProvider", {"arena_extend_strategy": 1})])
    assert sess.get_provider_options() == {"CPUExecutionProvider": {"arena_extend_strategy": "1"}}
    with pytest.raises(ValueError, match=r"None of the specified providers \['CUDAExecutionProvider'\] is available. "
                                         r"Available providers: 'CPUExecutionProvider'"):
        spindle.InferenceSession(model, providers=["CUDAExecutionProvider"])
    with pytest.raises(ValueError, match=r"'providers' values must be either strings or \(string, dict\) tuples"):
        spindle.InferenceSession(model, providers=[1])
    sess.set_providers(["CPUExecutionProvider"])
    with pytest.raises(ValueError, match=r"None of the specified providers"):
        sess.set_providers(["CUDAExecutionProvider"])
    close(sess.run(None, feeds)[0], list(expected.values())[0])


def test_ortvalue_shares_the_numpy_buffer_and_runs():
    sess, x, want = cls_session()
    v = spindle.OrtValue.ortvalue_from_numpy(x)
    assert v.is_tensor() and v.shape() == [1, 3, 48, 192] and v.data_type() == "tensor(float)"
    assert v.element_type() is np.float32 and v.device_name() == "cpu"
    assert v.data_ptr() == x.ctypes.data and np.shares_memory(v.numpy(), x)  # no copy
    strided = np.repeat(x, 2, axis=3)[..., ::2]
    copied = spindle.OrtValue.ortvalue_from_numpy(strided)
    assert not np.shares_memory(copied.numpy(), strided) and np.array_equal(copied.numpy(), x)
    (out,) = sess.run_with_ort_values(None, {"x": v})
    assert isinstance(out, spindle.OrtValue) and out.shape() == [1, 2]
    close(out.numpy(), want)
    empty = spindle.OrtValue.ortvalue_from_shape_and_type([2, 3], np.int64)
    assert empty.shape() == [2, 3] and empty.data_type() == "tensor(int64)" and not empty.numpy().any()
    with pytest.raises(spindle.InvalidArgument, match=r"device 'cuda' 0 is not available"):
        spindle.OrtValue.ortvalue_from_numpy(x, "cuda", 0)


def test_ortvalues_of_sequences_and_optionals():
    from onnx import TensorProto, helper

    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    graph = helper.make_graph(
        [helper.make_node("SequenceInsert", ["S", "x"], ["T"]), helper.make_node("Identity", ["o"], ["same"])],
        "seq_opt", [helper.make_value_info("S", seq), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                    helper.make_value_info("o", opt)],
        [helper.make_value_info("T", seq), helper.make_value_info("same", opt)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    sess = spindle.InferenceSession(model.SerializeToString())
    x = spindle.OrtValue.ortvalue_from_numpy(np.array([7, 8], np.float32))
    t, same = sess.run_with_ort_values(None, {"S": spindle.OrtValue([]), "x": x, "o": spindle.OrtValue(None)})
    assert t.is_tensor_sequence() and not t.is_tensor() and t.has_value()
    assert [a.tolist() for a in t.numpy()] == [[7, 8]]
    assert not same.has_value() and same.numpy() is None
    with pytest.raises(spindle.InvalidArgument, match=r"OrtValue.shape\(\): this OrtValue is a sequence, not a tensor"):
        t.shape()
    # An output sequence fed back as an input.
    (t2, _) = sess.run_with_ort_values(None, {"S": t, "x": x, "o": x})
    assert [a.tolist() for a in t2.numpy()] == [[7, 8], [7, 8]]
    binding = sess.io_binding()
    with pytest.raises(spindle.InvalidArgument, match=r"the OrtValue is not a tensor"):
        binding.bind_ortvalue_output("T", t)


def test_io_binding_uses_bound_buffers_and_writes_into_bound_outputs():
    sess, x, want = cls_session()
    out_name = sess.get_outputs()[0].name
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output(out_name)
    sess.run_with_iobinding(binding)
    (result,) = binding.get_outputs()
    close(result.numpy(), want)
    close(binding.copy_outputs_to_cpu()[0], want)
    # Into a preallocated OrtValue, and from a raw address.
    dest = spindle.OrtValue.ortvalue_from_shape_and_type([1, 2], np.float32)
    binding.clear_binding_inputs()
    binding.clear_binding_outputs()
    binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_ortvalue_output(out_name, dest)
    sess.run_with_iobinding(binding)
    close(dest.numpy(), want)
    assert binding.get_outputs()[0].data_ptr() == dest.data_ptr()
    raw = np.zeros((1, 2), np.float32)
    binding.bind_output(out_name, "cpu", 0, np.float32, [1, 2], raw.ctypes.data)
    sess.run_with_iobinding(binding)
    close(raw, want)
    # A bound buffer of the wrong shape is an error naming both shapes.
    binding.bind_ortvalue_output(out_name, spindle.OrtValue.ortvalue_from_shape_and_type([2, 2], np.float32))
    with pytest.raises(spindle.InvalidArgument, match=r"output '.*' is float32 \[1, 2\], but the bound buffer is "
                                                     r"float32 \[2, 2\]"):
        sess.run_with_iobinding(binding)
    binding.clear_binding_outputs()
    with pytest.raises(spindle.InvalidArgument, match=r"no output is bound"):
        sess.run_with_iobinding(binding)
    assert binding.get_outputs() == []


def test_run_async_calls_back_on_a_pool_thread_holding_the_gil():
    sess, x, want = cls_session()
    done = threading.Event()
    got = {}

    def callback(outputs, user_data, err):
        got.update(outputs=outputs, user_data=user_data, err=err, thread=threading.get_ident())
        done.set()

    state = object()
    sess.run_async(None, {"x": x}, callback, state)
    assert done.wait(60)
    assert got["err"] == "" and got["user_data"] is state and got["thread"] != threading.get_ident()
    close(got["outputs"][0], want)
    # A failed run: no outputs, the message in err; the session stays usable.
    done.clear()
    sess.run_async(None, {"y": x}, callback, None)
    assert done.wait(60)
    assert got["outputs"] == [] and "unknown input name 'y'" in got["err"]
    close(sess.run(None, {"x": x})[0], want)


def test_run_async_survives_a_raising_callback_and_a_dropped_session():
    sess, x, want = cls_session()
    raised = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda info: raised.append(info.exc_value)
    try:
        results = []
        sess.run_async(None, {"x": x}, lambda o, u, e: results.append(o), None)

        def boom(outputs, user_data, err):
            raise RuntimeError("from the callback")

        sess.run_async(None, {"x": x}, boom, None)
        del sess  # waits for both requests, without deadlocking on the GIL
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    assert len(results) == 1
    close(results[0][0], want)
    assert [str(e) for e in raised] == ["from the callback"]


def test_free_dimension_override_fixes_the_named_dimension():
    model, feeds, expected = reference(CLS)
    so = spindle.SessionOptions()
    plain = spindle.InferenceSession(model)
    batch = plain.get_inputs()[0].shape[0]
    assert isinstance(batch, str)
    so.add_free_dimension_override_by_name(batch, 1)
    sess = spindle.InferenceSession(model, so)
    assert sess.get_inputs()[0].shape[0] == 1 and sess.get_inputs()[0].shape[1:] == plain.get_inputs()[0].shape[1:]
    close(sess.run(None, feeds)[0], list(expected.values())[0])
    two = np.concatenate([feeds["x"]] * 2)
    with pytest.raises(spindle.InvalidArgument, match=rf"input 'x': dimension 0 \('{batch}'\) is 2, expected 1"):
        sess.run(None, {"x": two})
    assert plain.run(None, {"x": two})[0].shape == (2, 2)
    with pytest.raises(spindle.InvalidArgument, match=r"expected an int >= 0"):
        so.add_free_dimension_override_by_name(batch, -1)


def test_free_dimension_override_by_denotation_fixes_the_denoted_free_dimensions(tmp_path):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])
    for vi in (x, w):
        vi.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    x.type.tensor_type.shape.dim[1].denotation = "DATA_CHANNEL"
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x, w],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    path = tmp_path / "denoted.onnx"
    path.write_bytes(model)
    so = spindle.SessionOptions()
    so.add_free_dimension_override_by_denotation("DATA_BATCH", 2)
    so.add_free_dimension_override_by_denotation("DATA_CHANNEL", 7)  # dimension 1 is fixed: unchanged
    feeds = {"x": np.ones((2, 3), np.float32), "w": np.full((2, 3), 2, np.float32)}
    for source in (model, str(path), path):
        sess = spindle.InferenceSession(source, so)
        assert [i.shape for i in sess.get_inputs()] == [[2, 3], [2, 3]]
        np.testing.assert_array_equal(sess.run(None, feeds)[0], np.full((2, 3), 3, np.float32))
        with pytest.raises(spindle.InvalidArgument,
                           match=r"input 'x': dimension 0 \('batch'\) is 1, expected 2 "
                                 r"\(fixed by add_free_dimension_override_by_denotation\)"):
            sess.run(None, {"x": np.ones((1, 3), np.float32), "w": feeds["w"]})
    by_name = spindle.SessionOptions()
    by_name.add_free_dimension_override_by_name("batch", 2)
    by_name.add_free_dimension_override_by_denotation("DATA_BATCH", 5)  # the name's override comes first
    assert spindle.InferenceSession(model, by_name).get_inputs()[0].shape == [2, 3]
    assert spindle.InferenceSession(model).get_inputs()[0].shape == ["batch", 3]
    with pytest.raises(spindle.InvalidArgument, match=r"expected an int >= 0"):
        so.add_free_dimension_override_by_denotation("DATA_BATCH", -1)


def test_session_and_run_options_extras(tmp_path):
    model, feeds, expected = reference(CLS)
    so = spindle.SessionOptions()
    so.execution_order = spindle.ExecutionOrder.PRIORITY_BASED
    optimized = tmp_path / "optimized.onnx"
    so.optimized_model_filepath = str(optimized)
    with pytest.raises(AttributeError):
        so.optimized_model_file_path = "x"  # a typo is an error, as in ONNX Runtime
    sess = spindle.InferenceSession(model, so)
    # The optimized graph, loaded back, gives bitwise the same outputs.
    again = spindle.InferenceSession(str(optimized))
    a, b = sess.run(None, feeds), again.run(None, feeds)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert sess.get_session_options() is so
    assert sess.get_overridable_initializers() == []
    ro = spindle.RunOptions()
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(spindle.NotFound, match=r"run config entry 'nope' is not set"):
        ro.get_run_config_entry("nope")
    close(sess.run(None, feeds, ro)[0], list(expected.values())[0])
    assert sess.get_profiling_start_time_ns() == 0
    so = spindle.SessionOptions()
    so.enable_profiling = True
    before = time.monotonic_ns()
    profiled = spindle.InferenceSession(model, so)
    assert before <= profiled.get_profiling_start_time_ns() <= time.monotonic_ns()
    Path(profiled.end_profiling()).unlink()


def test_a_run_asking_for_one_output_runs_only_the_path_to_it():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Mul", ["x", "x"], ["cheap"], name="cheap_mul"),
             helper.make_node("Gather", ["x", "i"], ["picked"], name="other_gather")]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                               helper.make_tensor_value_info("i", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("cheap", TensorProto.FLOAT, [3]),
                               helper.make_tensor_value_info("picked", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    sess = spindle.InferenceSession(model)
    ro = spindle.RunOptions()
    assert ro.only_execute_path_to_fetches is False  # ONNX Runtime's default; spindle prunes either way
    ro.only_execute_path_to_fetches = True
    assert ro.only_execute_path_to_fetches is True
    x = np.array([1, 2, 3], np.float32)
    bad = {"x": x, "i": np.array([9], np.int64)}  # Gather fails on it
    for options in (None, ro):
        np.testing.assert_array_equal(sess.run(["cheap"], bad, options)[0], x * x)
    with pytest.raises(spindle.Fail, match=r"other_gather"):
        sess.run(None, bad)
    cheap, picked = sess.run(None, {"x": x, "i": np.array([2], np.int64)})
    np.testing.assert_array_equal(cheap, x * x)
    np.testing.assert_array_equal(picked, [3])


def test_module_functions():
    assert spindle.get_available_providers() == ["CPUExecutionProvider"]
    assert {"CUDAExecutionProvider", "CPUExecutionProvider"} <= set(spindle.get_all_providers())
    assert spindle.get_device() == "CPU" and spindle.get_version_string() == spindle.__version__
    assert spindle.__version__ in spindle.get_build_info()
    spindle.set_default_logger_severity(3)
    spindle.set_default_logger_verbosity(0)
    with pytest.raises(spindle.InvalidArgument, match=r"set_default_logger_severity\(5\): expected an int from 0"):
        spindle.set_default_logger_severity(5)
    spindle.set_default_logger_severity(2)
    spindle.set_seed(42)
    with pytest.raises(spindle.InvalidArgument, match=r"set_seed\('x'\)"):
        spindle.set_seed("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spindle.disable_telemetry_events()
        spindle.enable_telemetry_events()


def test_interpreter_exit_waits_for_outstanding_run_async_callbacks():
    # Without the wait, a pool thread taking the GIL for its callback while
    # the interpreter finalizes aborts the process. The report is registered
    # with atexit before spindle is imported, so it runs after spindle's wait.
    model, _, _ = reference(CLS)
    script = f"""
import atexit
called = []
atexit.register(lambda: print("called", sorted(called), flush=True))
import numpy as np, spindle
sess = spindle.InferenceSession({str(model)!r})
x = np.load({str(CACHE / "refs" / CLS / "inputs" / "x.npy")!r})
for i in range(3):
    sess.run_async(None, {{"x": x}}, lambda outputs, user_data, err: called.append((user_data, err)), i)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "called [(0, ''), (1, ''), (2, '')]\n"


def test_a_run_async_callback_may_hold_the_last_reference_to_its_session():
    # The session's destructor waits for its callbacks; dropped inside one it
    # would wait for itself (the process hung).
    model, _, _ = reference(CLS)
    script = f"""
import threading, numpy as np, spindle
done = threading.Event()
def start():
    sess = spindle.InferenceSession({str(model)!r})
    sess.run_async(None, {{"x": np.zeros((1, 3, 48, 192), np.float32)}},
                   lambda outputs, user_data, err: (sess.get_outputs(), done.set()), None)
start()
assert done.wait(120)
again = threading.Event()
sess = spindle.InferenceSession({str(model)!r})
sess.run_async(None, {{"x": np.zeros((1, 3, 48, 192), np.float32)}}, lambda o, u, e: again.set(), None)
assert again.wait(120)
print("done", flush=True)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr


def endless_loop_model(tmp_path):
    """A Loop of 2**62 iterations (a trip count, so session.max_loop_iterations
    does not cap it) adding 1 to a carried value: a run that never ends."""
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "one"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)], "endless",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("trips", TensorProto.INT64, [], [2**62]),
         helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    path = tmp_path / "endless.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    return str(path)


def test_run_async_applies_its_run_options(tmp_path):
    sess = spindle.InferenceSession(endless_loop_model(tmp_path))
    x = np.zeros(1, np.float32)
    done = threading.Event()
    got = {}

    def callback(outputs, user_data, err):
        got.update(outputs=outputs, err=err)
        done.set()

    ro = spindle.RunOptions()
    ro.timeout_ms = 200
    start = time.monotonic()
    sess.run_async(None, {"x": x}, callback, None, ro)
    assert done.wait(60), "the run's timeout_ms did not end it"
    assert got["outputs"] == [] and "time limit of 200 ms" in got["err"]
    assert time.monotonic() - start < 30
    # terminate, set while the run is going.
    done.clear()
    ro = spindle.RunOptions()
    sess.run_async(None, {"x": x}, callback, None, ro)
    time.sleep(0.1)
    ro.terminate = True
    assert done.wait(60), "terminate did not end the run"
    assert "cancelled by RunOptions::terminate" in got["err"]
    with pytest.raises(TypeError, match=r"run_options is a str, expected spindle.RunOptions or None"):
        sess.run_async(None, {"x": x}, callback, None, "not run options")


def test_a_timeout_too_far_away_to_represent_is_no_limit():
    # now() + 2**62 ms overflowed into the past: every run failed at once.
    sess, x, want = cls_session()
    ro = spindle.RunOptions()
    ro.timeout_ms = 2**62
    close(sess.run(None, {"x": x}, ro)[0], want)
    done = threading.Event()
    got = {}
    sess.run_async(None, {"x": x}, lambda o, u, e: (got.update(o=o, e=e), done.set()), None, ro)
    assert done.wait(60) and got["e"] == ""
    close(got["o"][0], want)


@pytest.mark.parametrize("mode", ["ORT_SEQUENTIAL", "ORT_PARALLEL"])
def test_a_run_async_callback_may_drop_the_last_reference_to_its_session(mode):
    # The callback itself drops the last reference: the session's destructor
    # ran inside the callback and waited for it (the process hung).
    model, _, _ = reference(CLS)
    script = f"""
import threading, numpy as np, spindle
so = spindle.SessionOptions()
so.execution_mode = spindle.ExecutionMode.{mode}
for round in range(3):
    holder = [spindle.InferenceSession({str(model)!r}, so)]
    done = threading.Event()
    def callback(outputs, user_data, err):
        assert err == "", err
        holder.clear()
        done.set()
    holder[0].run_async(None, {{"x": np.zeros((1, 3, 48, 192), np.float32)}}, callback, None)
    assert done.wait(120)
print("done", flush=True)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr


def test_interpreter_exit_ends_a_run_async_that_would_never_end(tmp_path):
    # Exit waits for outstanding runs (the test above), for 5 s; then it
    # terminates those still going.
    model = endless_loop_model(tmp_path)
    script = f"""
import atexit
errors = []
atexit.register(lambda: print("errors", errors, flush=True))
import numpy as np, spindle
sess = spindle.InferenceSession({model!r})
sess.run_async(None, {{"x": np.zeros(1, np.float32)}}, lambda o, u, e: errors.append(e), None)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cancelled by RunOptions::terminate" in done.stdout


def test_default_logger_severity_logs_session_creation_on_stderr(capfd, monkeypatch):
    monkeypatch.delenv("SPINDLE_LOG_LEVEL", raising=False)
    model, _, _ = reference(CLS)
    capfd.readouterr()
    try:
        spindle.set_default_logger_severity(1)
        so = spindle.SessionOptions()
        so.intra_op_num_threads = 2
        so.logid = "py-log"
        assert so.log_severity_level == -1
        spindle.InferenceSession(model, so)
        err = capfd.readouterr().err
        assert "[I:spindle:py-log] intra-op: 2 thread(s) including the caller (from option)" in err, err
        assert "optimizer (all):" in err and "[V:" not in err, err
        # The session's own level wins over the process default.
        so.log_severity_level = 2
        spindle.InferenceSession(model, so)
        assert capfd.readouterr().err == ""
    finally:
        spindle.set_default_logger_severity(2)
    spindle.InferenceSession(model, spindle.SessionOptions())
    assert capfd.readouterr().err == ""


def test_run_options_log_severity_and_logid_set_what_a_failed_run_logs(capfd, monkeypatch):
    monkeypatch.delenv("SPINDLE_LOG_LEVEL", raising=False)
    model, feeds, _ = reference(CLS)
    so = spindle.SessionOptions()
    so.log_severity_level = 4  # the session logs only fatal messages
    so.logid = "py-session"
    sess = spindle.InferenceSession(model, so)
    bad = {"x": np.zeros((1, 2), dtype=np.float32)}
    capfd.readouterr()
    with pytest.raises(Exception):
        sess.run(None, bad)
    assert capfd.readouterr().err == ""
    ro = spindle.RunOptions()
    assert ro.log_severity_level == -1  # the session's, as in ONNX Runtime
    ro.log_severity_level = 0
    ro.logid = "py-run"
    assert ro.run_tag == "py-run"
    with pytest.raises(Exception):
        sess.run(None, bad, ro)
    err = capfd.readouterr().err
    assert "[E:spindle:py-run] run " in err, err
    assert sess.run(None, feeds, ro)[0].shape[0] == feeds["x"].shape[0]


def test_set_seed_makes_unseeded_random_operators_repeatable():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("RandomNormal", [], ["a"], name="normal", shape=[32, 32]),
             helper.make_node("RandomUniform", [], ["u"], name="uniform", shape=[32, 32]),
             helper.make_node("Bernoulli", ["u"], ["b"], name="bernoulli")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [32, 32]) for n in ("a", "b")]
    model = helper.make_model(helper.make_graph(nodes, "random", [], outputs),
                              opset_imports=[helper.make_opsetid("", 15)]).SerializeToString()

    def draw():
        return spindle.InferenceSession(model).run(None, {})

    spindle.set_seed(3)
    first, again = draw(), draw()
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert 0.3 < first[1].mean() < 0.7  # Bernoulli of uniform draws: about half ones
    spindle.set_seed(4)
    other = draw()
    assert not np.array_equal(first[0], other[0])
    with pytest.raises(spindle.InvalidArgument, match=r"set_seed\(True\)"):
        spindle.set_seed(True)


def test_an_initializer_listed_as_an_input_is_overridable():
    from onnx import TensorProto, helper, numpy_helper

    b = numpy_helper.from_array(np.array([1, 2], dtype=np.float32), "b")
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [b])
    model = helper.make_model(graph, ir_version=8,
                              opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    sess = spindle.InferenceSession(model)
    assert [(a.name, a.shape, a.type) for a in sess.get_overridable_initializers()] == \
        [("b", [2], "tensor(float)")]
    assert [a.name for a in sess.get_inputs()] == ["x"]  # as ONNX Runtime lists them
    x = np.array([10, 20], dtype=np.float32)
    assert sess.run(None, {"x": x})[0].tolist() == [11, 22]  # the stored value by default
    fed = np.array([100, 200], dtype=np.float32)
    assert sess.run(None, {"x": x, "b": fed})[0].tolist() == [110, 220]  # or the one fed
    assert sess.run(None, {"x": x})[0].tolist() == [11, 22]  # and not kept
