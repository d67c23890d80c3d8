// errors.h — spindle's errors as Python exceptions shaped like ONNX Runtime's
// (onnxruntime.capi.onnxruntime_pybind11_state: Fail, InvalidArgument,
// NoSuchFile, ...), registered on the extension module `spindle._C`.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "spindle/status.h"

namespace spindle::python {

// Creates the exception classes on `m` and the translator from spindle::Error
// (by StatusCode) and LoadError to them.
void register_errors(pybind11::module_& m);

// Raised by model loading for what ONNX Runtime reports with its own class: a
// missing model file (NoSuchFile), bytes that are no ONNX protobuf
// (InvalidProtobuf), a graph the loader refuses (InvalidGraph: an invalid
// argument whose message starts with the model's origin, its path or
// "<model bytes>", as the loader's messages do). Any other error passes
// through unchanged.
[[noreturn]] void rethrow_load_error(const Error& e, const std::string& origin);

}  // namespace spindle::python
