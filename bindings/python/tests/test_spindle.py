"""The Python module against real models and ONNX Runtime's outputs for them.

The models and ONNX Runtime's reference outputs come from the model cache that
scripts/make-references.sh fills (SPINDLE_CACHE, default ~/.cache/spindle).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import spindle

CACHE = Path(os.environ.get("SPINDLE_CACHE", Path.home() / ".cache" / "spindle"))
CLS = "ch_ppocr_mobile_v2.0_cls_infer"
REC = "ch_PP-OCRv4_rec_infer"


def reference(stem):
    """(model path, feeds, expected outputs) from the cache, or skip."""
    manifest = CACHE / "refs" / stem / "manifest.json"
    if not manifest.exists():
        pytest.skip(f"{manifest} is missing: run scripts/make-references.sh")
    m = json.loads(manifest.read_text())
    feeds = {i["name"]: np.load(manifest.parent / i["file"]) for i in m["inputs"]}
    outputs = {o["name"]: np.load(manifest.parent / o["file"]) for o in m["outputs"]}
    return m["model"], feeds, outputs


def test_onnx_runtime_snippet_runs_as_written_and_matches():
    model, feeds, expected = reference(CLS)
    workdir = Path(tempfile.mkdtemp())
    try:
        shutil.copy(model, workdir / "model.onnx")
        array = feeds["x"]
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            # The snippet of the issue, as written (the model's input is 'x').
            sess_options = spindle.SessionOptions()
            sess_options.intra_op_num_threads = 3
            sess_options.execution_mode = spindle.ExecutionMode.ORT_PARALLEL
            sess_options.inter_op_num_threads = 2
            sess_options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            sess = spindle.InferenceSession("model.onnx", sess_options)
            outputs = sess.run(None, {"x": array})
        finally:
            os.chdir(cwd)
    finally:
        shutil.rmtree(workdir)
    (name, want), = expected.items()
    assert [o.name for o in sess.get_outputs()] == [name]
    np.testing.assert_allclose(outputs[0], want, rtol=1e-3, atol=1e-4)


def test_metadata_bytes_model_and_output_names():
    model, feeds, expected = reference(CLS)
    sess = spindle.InferenceSession(Path(model).read_bytes(), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert inp.name == "x" and inp.type == "tensor(float)" and inp.shape[1] == 3
    assert isinstance(inp.shape[0], str)  # a named dynamic dimension
    (name, want), = expected.items()
    out = sess.run([name], feeds)
    assert len(out) == 1 and out[0].dtype == np.float32
    np.testing.assert_allclose(out[0], want, rtol=1e-3, atol=1e-4)
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_non_contiguous_misaligned_or_byte_swapped_inputs_are_copied_not_rejected():
    model, feeds, expected = reference(CLS)
    sess = spindle.InferenceSession(model)
    want = list(expected.values())[0]
    x = feeds["x"]
    fortran = np.asfortranarray(x)
    assert not fortran.flags["C_CONTIGUOUS"]
    doubled = np.repeat(x, 2, axis=3)
    strided = doubled[..., ::2]  # a view with a step
    assert not strided.flags["C_CONTIGUOUS"] and np.array_equal(strided, x)
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(x.shape)
    misaligned[...] = x
    assert not misaligned.flags["ALIGNED"]
    swapped = x.astype(">f4")
    for variant in (fortran, strided, misaligned, swapped):
        np.testing.assert_allclose(sess.run(None, {"x": variant})[0], want, rtol=1e-3, atol=1e-4)


def test_bad_input_raises_clear_errors_and_the_session_stays_usable():
    model, feeds, expected = reference(CLS)
    sess = spindle.InferenceSession(model)
    x = feeds["x"]
    with pytest.raises(ValueError, match=r"input 'x' is float64 .* expected element type float32"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match=r"input 'x' has shape 1x2x48x192, expected"):
        sess.run(None, {"x": x[:, :2]})
    with pytest.raises(ValueError, match=r"missing input\(s\): x"):
        sess.run(None, {})
    with pytest.raises(KeyError, match=r"unknown input name 'y'; the model's inputs are: x"):
        sess.run(None, {"x": x, "y": x})
    with pytest.raises(KeyError, match=r"unknown output name 'nope'"):
        sess.run(["nope"], feeds)
    with pytest.raises(ValueError, match=r"numpy dtype complex64"):
        sess.run(None, {"x": np.zeros(3, dtype=np.complex64)})
    with pytest.raises(ValueError, match=r"input 'x' is string 1, expected element type float32"):
        sess.run(None, {"x": np.array(["a"])})
    # Still usable.
    np.testing.assert_allclose(sess.run(None, feeds)[0], list(expected.values())[0], rtol=1e-3, atol=1e-4)


def test_session_options_properties():
    so = spindle.SessionOptions()
    assert so.intra_op_num_threads == 0 and so.inter_op_num_threads == 0
    assert so.execution_mode == spindle.ExecutionMode.ORT_SEQUENTIAL
    assert so.graph_optimization_level == spindle.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.graph_optimization_level = spindle.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert so.graph_optimization_level == spindle.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    assert so.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    with pytest.raises(KeyError, match=r"'session.intra_op.allow_spinning' is not set"):
        so.get_session_config_entry("session.intra_op.allow_spinning")
    assert {"ORT_SEQUENTIAL", "ORT_PARALLEL"} <= set(spindle.ExecutionMode.__members__)
    assert {"ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"} <= set(
        spindle.GraphOptimizationLevel.__members__)


def test_onnx_runtime_session_surface():
    """Model metadata, the session's options and provider options, and ONNX
    Runtime's logging / memory settings (accepted, no effect) as ORT names them."""
    model, feeds, expected = reference(CLS)
    so = spindle.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    so.log_verbosity_level = 1
    so.logid = "cls"
    so.enable_cpu_mem_arena = False
    so.enable_mem_pattern = False
    so.enable_mem_reuse = False
    sess = spindle.InferenceSession(model, so)
    meta = sess.get_modelmeta()
    # What the model file says (its producer left producer_name empty).
    assert meta.graph_name == "Model from PaddlePaddle." and meta.producer_name == ""
    assert meta.version == 0 and meta.custom_metadata_map == {} and meta.description == ""
    got = sess.get_session_options()
    assert got.intra_op_num_threads == 2 and got.log_severity_level == 3 and got.logid == "cls"
    assert got.enable_cpu_mem_arena is False
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    ro = spindle.RunOptions()
    ro.log_severity_level = 4
    ro.logid = "run"
    np.testing.assert_allclose(sess.run(None, feeds, ro)[0], list(expected.values())[0], rtol=1e-3, atol=1e-4)
    with pytest.raises(AttributeError):
        so.log_severty_level = 1  # a typo is an error, as in ONNX Runtime


def test_bad_options_and_models():
    model, _, _ = reference(CLS)
    so = spindle.SessionOptions()
    # The message of the C++ validation at session creation.
    with pytest.raises(ValueError, match=r"^INVALID_ARGUMENT: intra_op_num_threads = -1: expected 0 \(automatic\) "
                                         r"or a thread count in \[1, 1024\]$"):
        so.intra_op_num_threads = -1
    with pytest.raises(ValueError, match=r"intra_op_num_threads = 5000: expected 0 \(automatic\) or a thread count"):
        so.intra_op_num_threads = 5000
    with pytest.raises(ValueError, match=r"inter_op_num_threads = -2"):
        so.inter_op_num_threads = -2
    assert so.intra_op_num_threads == 0 and so.inter_op_num_threads == 0
    with pytest.raises(ValueError, match=r"unknown session config key 'session.intra_op.allow_spining' .*"
                                         r"did you mean 'session.intra_op.allow_spinning'"):
        so.add_session_config_entry("session.intra_op.allow_spining", "0")  # parsed when added
    with pytest.raises(ValueError, match=r"not a valid ONNX model"):
        spindle.InferenceSession(b"garbage bytes")
    with pytest.raises(spindle.Fail, match=r"does not exist|No such file|cannot open|not found"):
        spindle.InferenceSession("/nonexistent/model.onnx")
    with pytest.raises(ValueError, match=r"None of the specified providers \['CUDAExecutionProvider'\] is available"):
        spindle.InferenceSession(model, providers=["CUDAExecutionProvider"])
    with pytest.raises(ValueError, match=r"should be the same length .* 1 provider\(s\) and 2 options"):
        spindle.InferenceSession(model, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'sess_option'"):
        spindle.InferenceSession(model, sess_option=spindle.SessionOptions())


def test_onnx_runtime_keyword_arguments_are_accepted():
    model, feeds, expected = reference(CLS)
    sess = spindle.InferenceSession(model, sess_options=spindle.SessionOptions(),
                                    providers=[("CPUExecutionProvider", {})], provider_options=[{}],
                                    disabled_optimizers=["ConstantFolding"], enable_fallback=False)
    np.testing.assert_allclose(sess.run(None, feeds)[0], list(expected.values())[0], rtol=1e-3, atol=1e-4)
    # disabled_optimizers names spindle's passes (ONNX Runtime's names where
    # a pass does what its transformer does); an unknown name is an error.
    so = spindle.SessionOptions()
    sess = spindle.InferenceSession(model, so, disabled_optimizers={"NchwcTransformer", "ActivationFusion"})
    np.testing.assert_allclose(sess.run(None, feeds)[0], list(expected.values())[0], rtol=1e-3, atol=1e-4)
    with pytest.raises(spindle.NotFound):
        so.get_session_config_entry("optimization.disable_specified_optimizers")  # the caller's options unchanged
    with pytest.raises(spindle.InvalidArgument, match=r"no optimizer pass is named NoSuchPass; the passes are: "):
        spindle.InferenceSession(model, disabled_optimizers=["NoSuchPass"])


def test_run_options_terminate_cancels_and_the_session_stays_usable():
    model, feeds, expected = reference(CLS)
    sess = spindle.InferenceSession(model)
    ro = spindle.RunOptions()
    assert ro.terminate is False
    ro.terminate = True
    with pytest.raises(spindle.Fail, match=r"CANCELLED"):
        sess.run(None, feeds, ro)
    ro.terminate = False
    out = sess.run(None, feeds, run_options=ro)
    np.testing.assert_allclose(out[0], list(expected.values())[0], rtol=1e-3, atol=1e-4)


def test_process_functions():
    n = spindle.get_num_threads()
    assert n >= 1
    assert "intra-op" in spindle.parallel_info()
    assert spindle.get_num_interop_threads() >= 1
    with pytest.raises(ValueError, match=r"^INVALID_ARGUMENT: set_num_threads\(-3\): expected a thread count"):
        spindle.set_num_threads(-3)
    with pytest.raises(ValueError, match=r"set_num_interop_threads\(-1\)"):
        spindle.set_num_interop_threads(-1)
    assert spindle.get_num_threads() == n


def tanh_model(path, n=1 << 16):
    """y = tanh(x) + x over float [n]: large enough that the kernel splits it across the pool."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Add", ["t", "x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


# Run in a child interpreter: before the fix this killed the interpreter with
# SIGSEGV (the session kept a raw pointer to the pool set_num_threads freed),
# which must fail this test rather than end the test run.
SET_NUM_THREADS_WHILE_RUNNING = """
import os, sys, threading, time
import numpy as np
import spindle

# This process's thread count as /proc lists it. A joined thread can stay
# listed for a moment, so wait (2 s at most) for the count to reach `expected`,
# or without it to stay the same for 200 ms, and return it.
def threads(expected=None):
    deadline = time.monotonic() + 2
    n, since = len(os.listdir("/proc/self/task")), time.monotonic()
    while time.monotonic() < deadline:
        if n == expected or (expected is None and time.monotonic() - since >= 0.2):
            break
        time.sleep(0.01)
        m = len(os.listdir("/proc/self/task"))
        if m != n:
            n, since = m, time.monotonic()
    return n

model = sys.argv[1]
so = spindle.SessionOptions()
so.use_per_session_threads = False
sess = spindle.InferenceSession(model, so)
x = {"x": (np.arange(1 << 16, dtype=np.float32) % 97) / 50 - 1}
want = sess.run(None, x)[0]
stop = False
wrong = []

def work():
    while not stop:
        if not np.array_equal(sess.run(None, x)[0], want):
            wrong.append(1)

workers = [threading.Thread(target=work) for _ in range(4)]
for t in workers:
    t.start()
for i in range(200):
    spindle.set_num_threads(1 + i % 2)
stop = True
for t in workers:
    t.join()
assert not wrong, f"{len(wrong)} runs gave wrong results"

# PyTorch's meaning: the count governs default sessions created after the call.
spindle.set_num_threads(3)
assert "set_num_threads(3)" in spindle.parallel_info()
before = threads()  # settled: the joined workers have left /proc
fresh = spindle.InferenceSession(model)  # default options: its own pool
started = threads(before + 2) - before
assert started == 2, f"{started} threads started, expected 2 (3 counting the caller)"
assert np.array_equal(fresh.run(None, x)[0], want)
print("ok")
"""


def test_set_num_threads_while_threads_run_a_global_pool_session(tmp_path):
    """The issue's reproduction: 4 threads run a session on the global pools
    while another calls set_num_threads(1 + i % 2) 200 times; then the count
    set governs a default session created afterwards (threads really started)."""
    tanh_model(tmp_path / "tanh.onnx")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", SET_NUM_THREADS_WHILE_RUNNING, str(tmp_path / "tanh.onnx")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", \
        f"exit status {r.returncode} (-11 is SIGSEGV)\nstdout: {r.stdout}\nstderr: {r.stderr[-3000:]}"


def thread_state(tid):
    """The scheduler state letter of one of this process's threads ('R' runnable, 'S' sleeping...)."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:  # the thread has ended
        return "X"


def test_threads_run_one_session_at_the_same_time():
    """4 Python threads on one session: correct results, and the runs really overlap.

    The effect is observed, not timed: while the runs are under way the
    kernel's scheduler must show at least two of the calling threads runnable
    at once ('R' in /proc, which counts a thread waiting for a CPU too). A run
    that kept the GIL, or a session lock that serialised runs, would leave all
    but one of them asleep ('S') however idle or busy the machine is.
    """
    model, feeds, expected = reference(REC)
    so = spindle.SessionOptions()
    so.intra_op_num_threads = 1  # no pool workers: only the callers compute
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = spindle.InferenceSession(model, so)
    want = list(expected.values())[0]
    sess.run(None, feeds)  # warm up

    runs_per_thread = 3
    tids, results = [None] * 4, [None] * 4
    ready = threading.Barrier(5)

    def work(i):
        tids[i] = threading.get_native_id()
        ready.wait()
        results[i] = [sess.run(None, feeds)[0] for _ in range(runs_per_thread)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    ready.wait()
    # Two runnable callers at one instant could be a hand-over (of the GIL or
    # of a lock): most samples must show them.
    samples = overlapping = 0
    while all(t.is_alive() for t in threads):
        samples += 1
        overlapping += sum(thread_state(tid) == "R" for tid in tids) >= 2
        time.sleep(0.00025)  # sleeping releases the GIL, as a waiting caller would
    for t in threads:
        t.join()
    for per_thread in results:
        for r in per_thread:
            np.testing.assert_allclose(r, want, rtol=1e-3, atol=1e-4)
    print(f"{overlapping} of {samples} samples saw two or more runs executing at once")
    assert samples >= 10 and overlapping >= samples / 2, \
        f"only {overlapping} of {samples} samples saw two runs executing at once"


def test_outputs_never_alias_the_model_or_a_later_run():
    # An output that is a constant of the model comes as a copy: writing into
    # it must not change the next run's result.
    sess = spindle.InferenceSession("/usr/share/libonnx-testdata/data/node/test_constant/model.onnx")
    first = sess.run(None, {})[0]
    original = first.copy()
    first[...] = 42
    np.testing.assert_array_equal(sess.run(None, {})[0], original)
    # A computed output owns the runtime's buffer: later runs must not reuse it.
    model, feeds, _ = reference(CLS)
    cls = spindle.InferenceSession(model)
    name = cls.get_inputs()[0].name
    kept = cls.run(None, {name: feeds[name]})[0]
    snapshot = kept.copy()
    for _ in range(3):
        cls.run(None, {name: np.zeros_like(feeds[name])})
    np.testing.assert_array_equal(kept, snapshot)


def test_enable_profiling_writes_a_chrome_trace(tmp_path):
    model, feeds, _ = reference(CLS)
    so = spindle.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = spindle.InferenceSession(model, so)
    sess.run(None, feeds)
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_"))
    events = json.loads(Path(path).read_text())["traceEvents"]
    assert any(e.get("cat") == "node" for e in events)


def test_sequence_and_string_values_as_onnx_runtime_passes_them():
    from onnx import TensorProto, helper

    seq_float = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [
            helper.make_node("SequenceInsert", ["S", "x"], ["T"]),
            helper.make_node("SequenceLength", ["T"], ["n"]),
            helper.make_node("StringNormalizer", ["words"], ["normalized"], case_change_action="UPPER",
                             stopwords=["the"]),
        ],
        "seq_and_strings",
        [
            helper.make_value_info("S", seq_float),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("words", TensorProto.STRING, [None]),
        ],
        [
            helper.make_value_info("T", seq_float),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("normalized", TensorProto.STRING, [None]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = spindle.InferenceSession(model.SerializeToString())
    assert [i.type for i in sess.get_inputs()] == ["seq(tensor(float))", "tensor(float)", "tensor(string)"]
    a = np.arange(3, dtype=np.float32)
    x = np.array([7, 8], dtype=np.float32)
    t, n, normalized = sess.run(None, {"S": [a], "x": x, "words": np.array(["the", "Ünïcode", "cat"])})
    assert isinstance(t, list) and len(t) == 2
    np.testing.assert_array_equal(t[0], a)
    np.testing.assert_array_equal(t[1], x)
    assert int(n) == 2
    assert normalized.dtype == object and normalized.tolist() == ["ÜNÏCODE", "CAT"]
    # bytes and object arrays are strings too; an empty list is an empty sequence.
    _, n, normalized = sess.run(None, {"S": [], "x": x, "words": np.array([b"dog", "the"], dtype=object)})
    assert int(n) == 1 and normalized.tolist() == ["DOG"]
    with pytest.raises(Exception, match="input 'S' is a sequence: expected a list of numpy arrays"):
        sess.run(None, {"S": a, "x": x, "words": np.array(["a"])})
    with pytest.raises(Exception, match="item 0 is int64 2, expected float32"):
        sess.run(None, {"S": [np.array([1, 2])], "x": x, "words": np.array(["a"])})
    t, _, _ = sess.run(None, {"S": [a, a], "x": x, "words": np.array(["a"])})
    assert len(t) == 3


def test_optional_values_are_none_or_what_they_hold():
    from onnx import TensorProto, helper

    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    graph = helper.make_graph(
        [
            helper.make_node("OptionalHasElement", ["o"], ["has"]),
            helper.make_node("Identity", ["o"], ["same"]),
        ],
        "optional",
        [helper.make_value_info("o", opt)],
        [helper.make_tensor_value_info("has", TensorProto.BOOL, []), helper.make_value_info("same", opt)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    sess = spindle.InferenceSession(model.SerializeToString())
    assert sess.get_inputs()[0].type == "optional(tensor(float))"
    has, same = sess.run(None, {"o": None})
    assert not bool(has) and same is None
    x = np.array([1.5, 2.5], dtype=np.float32)
    has, same = sess.run(None, {"o": x})
    assert bool(has)
    np.testing.assert_array_equal(same, x)


def _bf16_bits_of(values):
    """float32 -> bfloat16 bits, round to nearest even, NaN kept NaN (by torch)."""
    torch = pytest.importorskip("torch")
    return torch.tensor(np.asarray(values, np.float32)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def _float_of_bf16_bits(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def test_bfloat16_values_travel_as_uint16_bits_or_ml_dtypes():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["h"], ["h_float"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["h", "h"], ["h_twice"]),
            helper.make_node("Cast", ["x"], ["x_bf16"], to=TensorProto.BFLOAT16),
        ],
        "bf16",
        [
            helper.make_tensor_value_info("h", TensorProto.BFLOAT16, [4]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
        ],
        [
            helper.make_tensor_value_info("h_float", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("h_twice", TensorProto.BFLOAT16, [4]),
            helper.make_tensor_value_info("x_bf16", TensorProto.BFLOAT16, [6]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = spindle.InferenceSession(model.SerializeToString())
    assert [i.type for i in sess.get_inputs()] == ["tensor(bfloat16)", "tensor(float)"]
    assert sess.get_outputs()[1].type == "tensor(bfloat16)"
    # 1.0, -2.5, 3.140625 and a NaN, as bfloat16 bits.
    h = np.array([0x3F80, 0xC020, 0x4049, 0x7FC1], dtype=np.uint16)
    # Ties and near-ties: 1 + 2^-8 rounds to even (1.0), 1 + 3 * 2^-8 up,
    # the largest float32 overflows to inf, NaN stays NaN, -0 stays -0.
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4028235e38, np.nan, -0.0, 0.47892547], dtype=np.float32)
    h_float, h_twice, x_bf16 = sess.run(None, {"h": h, "x": x})
    np.testing.assert_array_equal(h_float[:3], [1.0, -2.5, 3.140625])
    assert np.isnan(h_float[3])
    try:
        import ml_dtypes
        assert h_twice.dtype == ml_dtypes.bfloat16 and x_bf16.dtype == ml_dtypes.bfloat16
    except ImportError:
        assert h_twice.dtype == np.uint16 and x_bf16.dtype == np.uint16
    twice = _float_of_bf16_bits(h_twice.view(np.uint16))
    np.testing.assert_array_equal(twice[:3], [2.0, -5.0, 6.28125])
    assert np.isnan(twice[3])
    got = x_bf16.view(np.uint16)
    want = _bf16_bits_of(x)
    np.testing.assert_array_equal(got[[0, 1, 2, 4, 5]], want[[0, 1, 2, 4, 5]])
    assert got.tolist()[:3] == [0x3F80, 0x3F82, 0x7F80] and got[4] == 0x8000
    assert np.isnan(_float_of_bf16_bits(got[3:4])[0])
    # A uint16 array given for a float input is still refused by dtype.
    with pytest.raises(Exception, match="uint16"):
        sess.run(None, {"h": h, "x": h})


def test_every_dtype_spelling_and_byte_order_feeds_its_element_type(tmp_path):
    """A feed's numpy dtype is matched in native byte order: 'q' and 'l', '<i8' and '>i8' all
    feed an int64 input, each array read as its values say (also in a loop, as a model fed per
    call sees it, and after a refused feed)."""
    from onnx import TensorProto, helper
    types = {"i64": (TensorProto.INT64, np.int64), "f32": (TensorProto.FLOAT, np.float32),
             "u16": (TensorProto.UINT16, np.uint16), "b": (TensorProto.BOOL, np.bool_)}
    graph = helper.make_graph(
        [helper.make_node("Identity", [k], [k + "_out"]) for k in types], "g",
        [helper.make_tensor_value_info(k, t, ["n"]) for k, (t, _) in types.items()],
        [helper.make_tensor_value_info(k + "_out", t, ["n"]) for k, (t, _) in types.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (tmp_path / "ids.onnx").write_bytes(model.SerializeToString())
    sess = spindle.InferenceSession(str(tmp_path / "ids.onnx"))
    values = np.array([1, -2, 300, 70000], dtype=np.int64)
    spellings = {"i64": ["q", "l", "<i8", ">i8", "int64"], "f32": ["f", "<f4", ">f4", "float32"],
                 "u16": ["H", "<u2", ">u2"], "b": ["?", "bool"]}
    for _ in range(3):
        for i in range(max(len(s) for s in spellings.values())):
            feed = {k: (values % 1000 if k == "u16" else values).astype(s[i % len(s)]) for k, s in spellings.items()}
            outs = sess.run(None, feed)
            for (k, (_, want)), out in zip(types.items(), outs):
                assert out.dtype == want, (k, feed[k].dtype, out.dtype)
                np.testing.assert_array_equal(out, feed[k].astype(want))
        with pytest.raises(ValueError, match=r"input 'i64' is float32"):
            sess.run(None, {**feed, "i64": values.astype(np.float32)})


def mixed_model(path):
    """flag = Cast<bool>(x), as_int = Cast<int64>(x), total = x + x for x float [N]."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["flag"], to=TensorProto.BOOL),
         helper.make_node("Cast", ["x"], ["as_int"], to=TensorProto.INT64),
         helper.make_node("Add", ["x", "x"], ["total"])], "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info("flag", TensorProto.BOOL, ["N"]),
         helper.make_tensor_value_info("as_int", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return str(path)


def mixed_expected(x, names=("flag", "as_int", "total")):
    want = {"flag": x != 0, "as_int": x.astype(np.int64), "total": x + x}
    return [want[n] for n in names]


def check_outputs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.flags.c_contiguous and g.flags.writeable
        np.testing.assert_array_equal(g, w)


def test_outputs_small_and_large_held_across_runs_with_shapes_changing(tmp_path):
    # Outputs up to 64 KB are copied into arrays numpy allocates, larger ones
    # handed over: either way an output held stays as it was.
    sess = spindle.InferenceSession(mixed_model(tmp_path / "mixed.onnx"))
    held = []
    for k, n in enumerate([3, 5, 1, 0, 40000, 3, 17000]):
        x = (np.arange(n, dtype=np.float32) + k) % 7
        out = sess.run(None, {"x": x})
        check_outputs(out, mixed_expected(x))
        held.append((x, out))
    held[0][1][2][...] = -1  # writing into one output changes no other
    for x, out in held[1:]:
        check_outputs(out, mixed_expected(x))


def test_feeds_of_other_dtype_objects_names_changing_and_errors_then_success(tmp_path):
    sess = spindle.InferenceSession(mixed_model(tmp_path / "mixed.onnx"))
    x = np.array([0, 1, 2.5, 3], np.float32)
    # The same element type through dtype objects other than numpy's own
    # float32: byte-swapped, from a string, re-ordered to native.
    for fed in [x, x.astype(">f4"), x.astype(np.dtype("f")), np.require(x, np.dtype(np.float32).newbyteorder("="))]:
        check_outputs(sess.run(None, {"x": fed}), mixed_expected(x))
    check_outputs(sess.run(["total"], {"x": x}), mixed_expected(x, ["total"]))
    check_outputs(sess.run(["as_int", "flag"], {"x": x}), mixed_expected(x, ["as_int", "flag"]))
    with pytest.raises(Exception, match="nope"):
        sess.run(["total", "nope"], {"x": x})
    with pytest.raises(Exception, match="x"):
        sess.run(None, {"x": x.astype(np.int64)})
    with pytest.raises(Exception, match="numpy dtype complex64"):
        sess.run(None, {"x": x.astype(np.complex64)})
    check_outputs(sess.run(None, {"x": x[::2]}), mixed_expected(x[::2]))


def test_threads_run_one_mixed_session_each_getting_its_own_outputs(tmp_path):
    sess = spindle.InferenceSession(mixed_model(tmp_path / "mixed.onnx"))
    errors = []

    def work(k):
        try:
            for i in range(200):
                n = 20000 if i % 2 else 3 + k
                x = (np.arange(n, dtype=np.float32) + k + i) % 7
                check_outputs(sess.run(None, {"x": x}), mixed_expected(x))
        except Exception as e:  # reported below, with the thread's number
            errors.append((k, repr(e)))

    workers = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []


def test_run_options_none_given_or_wrong_then_success(tmp_path):
    sess = spindle.InferenceSession(mixed_model(tmp_path / "mixed.onnx"))
    x = np.array([1, 0, 2], np.float32)
    for ro in [None, spindle.RunOptions()]:
        check_outputs(sess.run(None, {"x": x}, ro), mixed_expected(x))
    with pytest.raises(TypeError, match=r"run: run_options is a str, expected spindle.RunOptions or None"):
        sess.run(None, {"x": x}, "not run options")
    check_outputs(sess.run(None, {"x": x}), mixed_expected(x))
