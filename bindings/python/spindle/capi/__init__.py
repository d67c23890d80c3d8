"""spindle.capi: the module paths ONNX Runtime programs import from
(onnxruntime.capi.onnxruntime_pybind11_state, onnxruntime.capi._pybind_state)."""
