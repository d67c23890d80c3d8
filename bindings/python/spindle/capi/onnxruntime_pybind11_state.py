"""ONNX Runtime's exception classes, for code written as

    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

They are spindle's own classes (spindle.InvalidArgument is this
InvalidArgument): a wrong input name or dtype raises InvalidArgument, a
missing model file NoSuchFile, bytes that are no ONNX model InvalidProtobuf,
a malformed graph InvalidGraph, an operator spindle lacks NotImplemented, a failing kernel RuntimeException,
anything else Fail (the base of them all)."""
from spindle._C import (  # noqa: F401
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotImplemented,
    RuntimeException,
)

__all__ = ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException", "InvalidProtobuf",
           "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"]
