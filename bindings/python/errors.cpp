// errors.cpp — the exception classes of `spindle._C` and the translation of
// C++ errors into them.
//
// The classes carry ONNX Runtime's names (Fail, InvalidArgument, NoSuchFile,
// NoModel, EngineError, RuntimeException, InvalidProtobuf, ModelLoaded,
// NotImplemented, InvalidGraph, EPFail) so that `except InvalidArgument`
// written for ONNX Runtime catches the same failures here. They also derive
// from the matching Python built-in, as spindle's classes always did:
//   Fail               RuntimeError   (every spindle error)
//   InvalidArgument    Fail, ValueError
//   NotFound           InvalidArgument, KeyError   (unknown input/output name, key)
//   NoSuchFile         Fail, FileNotFoundError
//   InvalidProtobuf    Fail, ValueError
//   InvalidGraph       Fail, ValueError                (a model the loader refuses)
//   NotImplemented     Fail, NotImplementedError   (also named Unsupported)
//   RuntimeException   Fail                        (a kernel failed while running)
//   the others         Fail
// The message is spindle's ("INVALID_ARGUMENT: input 'x' ..."), naming what
// was wrong and what was expected.
#include "errors.h"

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace spindle::python {
namespace {

enum class Kind {
  kFail,
  kInvalidArgument,
  kNotFound,
  kNoSuchFile,
  kInvalidProtobuf,
  kInvalidGraph,
  kNotImplemented,
  kRuntimeException,
};

// A load error re-classified by rethrow_load_error.
class LoadError : public std::runtime_error {
 public:
  LoadError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// The classes, created once at import (the module keeps them alive).
struct Classes {
  PyObject* fail;
  PyObject* invalid_argument;
  PyObject* not_found;
  PyObject* no_such_file;
  PyObject* invalid_protobuf;
  PyObject* invalid_graph;
  PyObject* not_implemented;
  PyObject* runtime_exception;
};
Classes classes;

PyObject* make_class(py::module_& m, const char* name, std::initializer_list<PyObject*> bases, const char* doc) {
  py::tuple base_tuple(bases.size());
  size_t i = 0;
  for (PyObject* b : bases) base_tuple[i++] = py::handle(b);
  const std::string qualified = std::string("spindle.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // steals a reference; `cls` stays valid while the module lives
  return cls;
}

PyObject* class_of(Kind kind) {
  switch (kind) {
    case Kind::kInvalidArgument: return classes.invalid_argument;
    case Kind::kNotFound: return classes.not_found;
    case Kind::kNoSuchFile: return classes.no_such_file;
    case Kind::kInvalidProtobuf: return classes.invalid_protobuf;
    case Kind::kInvalidGraph: return classes.invalid_graph;
    case Kind::kNotImplemented: return classes.not_implemented;
    case Kind::kRuntimeException: return classes.runtime_exception;
    case Kind::kFail: break;
  }
  return classes.fail;
}

Kind kind_of(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return Kind::kInvalidArgument;
    case StatusCode::kNotFound: return Kind::kNotFound;
    case StatusCode::kUnsupported: return Kind::kNotImplemented;
    case StatusCode::kRuntimeError: return Kind::kRuntimeException;
    default: return Kind::kFail;
  }
}

}  // namespace

void rethrow_load_error(const Error& e, const std::string& origin) {
  const std::string what = e.what();
  if (e.code() == StatusCode::kNotFound &&
      (what.find("model file") != std::string::npos || what.find("library") != std::string::npos))
    throw LoadError(Kind::kNoSuchFile, what);
  if (e.code() == StatusCode::kInvalidArgument) {
    if (what.find("not a valid ONNX model") != std::string::npos || what.find("protobuf") != std::string::npos)
      throw LoadError(Kind::kInvalidProtobuf, what);
    if (e.status().message().starts_with(origin + ": ")) throw LoadError(Kind::kInvalidGraph, what);
  }
  throw e;
}

void register_errors(py::module_& m) {
  PyObject* runtime = PyExc_RuntimeError;
  classes.fail = make_class(m, "Fail", {runtime}, "Base class of every spindle error (ONNX Runtime: Fail).");
  classes.invalid_argument = make_class(m, "InvalidArgument", {classes.fail, PyExc_ValueError},
                                        "A bad option, input, shape, dtype or file content.");
  classes.not_found = make_class(m, "NotFound", {classes.invalid_argument, PyExc_KeyError},
                                 "An input name, output name or key that does not exist.");
  classes.no_such_file = make_class(m, "NoSuchFile", {classes.fail, PyExc_FileNotFoundError},
                                    "The model file does not exist or cannot be opened.");
  make_class(m, "NoModel", {classes.fail}, "ONNX Runtime's NoModel (spindle does not raise it).");
  make_class(m, "EngineError", {classes.fail}, "ONNX Runtime's EngineError (spindle does not raise it).");
  classes.runtime_exception =
      make_class(m, "RuntimeException", {classes.fail}, "A kernel failed while running the model.");
  classes.invalid_protobuf = make_class(m, "InvalidProtobuf", {classes.fail, PyExc_ValueError},
                                        "The model bytes are not a valid ONNX protobuf.");
  make_class(m, "ModelLoaded", {classes.fail}, "ONNX Runtime's ModelLoaded (spindle does not raise it).");
  classes.not_implemented = make_class(m, "NotImplemented", {classes.fail, PyExc_NotImplementedError},
                                       "An operator, attribute or dtype spindle does not implement.");
  m.attr("Unsupported") = m.attr("NotImplemented");
  classes.invalid_graph = make_class(m, "InvalidGraph", {classes.fail, PyExc_ValueError},
                                     "The model's graph is malformed (a missing value, a node's inputs, types).");
  make_class(m, "EPFail", {classes.fail}, "ONNX Runtime's EPFail (spindle has one provider, the CPU).");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const LoadError& e) {
      PyErr_SetString(class_of(e.kind()), e.what());
    } catch (const Error& e) {
      PyErr_SetString(class_of(kind_of(e.code())), e.what());
    }
  });
}

}  // namespace spindle::python
