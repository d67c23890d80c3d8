"""SessionOptions.register_custom_ops_library: a library of ONNX Runtime custom
operators (tests/capi/custom_op_library.cpp, built by the test build; its path
in SPINDLE_CUSTOM_OP_LIBRARY) registered from Python, a model using its ops
run, outputs checked against NumPy, errors raised as ONNX Runtime's classes.
"""
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import spindle

LIBRARY = os.environ.get("SPINDLE_CUSTOM_OP_LIBRARY", "")


def library():
    if not LIBRARY or not os.path.exists(LIBRARY):
        pytest.skip("SPINDLE_CUSTOM_OP_LIBRARY is not set to the built custom-op library")
    return LIBRARY


def custom_model():
    """a, b -> s = ScaledSum(a, b; scale=0.5, mode="diff"); y, tids = ParallelIds(s; batches=4);
    x -> f = FailIf(x)."""
    graph = helper.make_graph(
        [helper.make_node("ScaledSum", ["a", "b"], ["s"], domain="test.domain", scale=0.5, mode="diff"),
         helper.make_node("ParallelIds", ["s"], ["y", "tids"], domain="test.domain", batches=4),
         helper.make_node("FailIf", ["x"], ["f"], domain="test.domain")],
        "custom",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n"]) for n in ("a", "b", "x")],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("tids", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("test.domain", 1)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.parametrize("threads", [1, 2])
def test_registered_library_runs_its_ops(threads):
    so = spindle.SessionOptions()
    so.intra_op_num_threads = threads
    so.register_custom_ops_library(library())
    sess = spindle.InferenceSession(custom_model(), so)
    a = np.linspace(-3, 3, 23, dtype=np.float32)
    b = np.linspace(2, -1, 23, dtype=np.float32)
    s, y, tids, f = sess.run(None, {"a": a, "b": b, "x": np.abs(a)})
    want = np.float32(0.5) * (a - b)
    np.testing.assert_array_equal(s, want)
    np.testing.assert_array_equal(y, np.float32(2) * want)
    np.testing.assert_array_equal(f, np.abs(a))
    assert tids.dtype == np.int64 and tids.shape == (4,)
    if threads == 1:
        assert len(set(tids.tolist())) == 1


def test_op_error_is_raised_and_the_session_stays_usable():
    so = spindle.SessionOptions()
    so.register_custom_ops_library(library())
    sess = spindle.InferenceSession(custom_model(), so)
    a = np.ones(3, dtype=np.float32)
    with pytest.raises(spindle.InvalidArgument, match="FailIf: element 1 is negative"):
        sess.run(["f"], {"a": a, "b": a, "x": np.array([1, -1, 2], dtype=np.float32)})
    (f,) = sess.run(["f"], {"a": a, "b": a, "x": a})
    np.testing.assert_array_equal(f, a)


def test_registration_errors():
    so = spindle.SessionOptions()
    with pytest.raises(spindle.NoSuchFile, match="does not exist"):
        so.register_custom_ops_library("/nonexistent/libcustom.so")
    with pytest.raises(spindle.Fail, match="RegisterCustomOps"):
        so.register_custom_ops_library("libm.so.6")
    with pytest.raises(spindle.Fail, match="FailIf"):
        spindle.InferenceSession(custom_model(), so)
