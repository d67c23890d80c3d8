"""ONNX Runtime's onnxruntime.capi._pybind_state, as far as programs import
from it: the exception classes and the provider queries."""
from spindle import get_all_providers, get_available_providers, get_device  # noqa: F401
from spindle.capi.onnxruntime_pybind11_state import *  # noqa: F401,F403
from spindle.capi.onnxruntime_pybind11_state import __all__ as _errors

__all__ = _errors + ["get_all_providers", "get_available_providers", "get_device"]
