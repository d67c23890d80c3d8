"""spindle: a CPU inference runtime for ONNX models with ONNX Runtime's Python API.

Code written for ``onnxruntime`` runs after changing its import::

    import spindle as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession("model.onnx", so, providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"x": array})

This file is the pure-Python part of that API (providers, OrtValue,
IOBinding, run_with_ort_values, the option classes' extra settings); the
sessions, options and errors themselves live in the extension module
``spindle._C`` (bindings/python/spindle_module.cpp, errors.cpp). What still
differs from ONNX Runtime is listed in the README ("Differences from
onnxruntime (Python)").
"""
import collections.abc
import ctypes
import enum
import os
import time
import warnings

import numpy as np

from . import _C
from ._C import (
    EngineError,
    EPFail,
    ExecutionMode,
    Fail,
    GraphOptimizationLevel,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    ModelMetadata,
    NodeArg,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    RuntimeException,
    Unsupported,
    __version__,
    get_num_interop_threads,
    get_num_threads,
    parallel_info,
    set_num_interop_threads,
    set_num_threads,
)

__all__ = [
    "__version__", "Fail", "InvalidArgument", "NotFound", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
    "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail", "Unsupported", "ExecutionMode",
    "ExecutionOrder", "GraphOptimizationLevel", "SessionOptions", "RunOptions", "ModelMetadata", "NodeArg", "OrtValue",
    "IOBinding", "InferenceSession", "set_num_threads", "get_num_threads", "set_num_interop_threads",
    "get_num_interop_threads", "parallel_info", "get_all_providers", "get_available_providers", "get_build_info",
    "get_device", "get_version_string", "set_default_logger_severity", "set_default_logger_verbosity", "set_seed",
    "enable_telemetry_events", "disable_telemetry_events",
]

_CPU = "CPUExecutionProvider"

# ONNX Runtime's provider names (its get_all_providers()); only the CPU one is
# available here.
_ALL_PROVIDERS = [
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider", "ROCMExecutionProvider",
    "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider",
    "NnapiExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider", "ArmNNExecutionProvider",
    "ACLExecutionProvider", "DmlExecutionProvider", "RknpuExecutionProvider", "WebNNExecutionProvider",
    "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider", "AzureExecutionProvider",
    _CPU,
]

# numpy element type <-> ONNX Runtime's type string (OrtValue.data_type()).
_ONNX_TYPES = {
    np.float32: "tensor(float)", np.float64: "tensor(double)", np.float16: "tensor(float16)",
    np.int8: "tensor(int8)", np.int16: "tensor(int16)", np.int32: "tensor(int32)", np.int64: "tensor(int64)",
    np.uint8: "tensor(uint8)", np.uint16: "tensor(uint16)", np.uint32: "tensor(uint32)",
    np.uint64: "tensor(uint64)", np.bool_: "tensor(bool)", np.str_: "tensor(string)", np.object_: "tensor(string)",
}

_logger_severity = 2
_logger_verbosity = 0
_seed = None


def get_all_providers():
    """ONNX Runtime's execution provider names (only CPUExecutionProvider is available)."""
    return list(_ALL_PROVIDERS)


def get_available_providers():
    """The providers this build can run: ['CPUExecutionProvider']."""
    return [_CPU]


def get_device():
    """The device spindle runs on: 'CPU'."""
    return "CPU"


def get_version_string():
    """spindle's version, as __version__."""
    return __version__


def get_build_info():
    """One line naming the build: version and provider (parallel_info() tells
    the threading layout)."""
    return f"spindle {__version__}, providers: {_CPU}"


def set_default_logger_severity(severity):
    """ONNX Runtime's default log level (0 verbose .. 4 fatal): the level of
    sessions whose log_severity_level is -1 (SPINDLE_LOG_LEVEL, when set,
    overrides it). Info logs each session's threads and optimizer passes,
    verbose each node's kernel, on stderr."""
    global _logger_severity
    if not isinstance(severity, int) or not 0 <= severity <= 4:
        raise InvalidArgument(f"set_default_logger_severity({severity!r}): expected an int from 0 (verbose) "
                              "to 4 (fatal)")
    _C._set_default_log_severity(severity)
    _logger_severity = severity


def set_default_logger_verbosity(verbosity):
    """ONNX Runtime's verbose-log verbosity. Checked and kept; no effect."""
    global _logger_verbosity
    if not isinstance(verbosity, int) or verbosity < 0:
        raise InvalidArgument(f"set_default_logger_verbosity({verbosity!r}): expected an int >= 0")
    _logger_verbosity = verbosity


def set_seed(seed):
    """ONNX Runtime's seed for random operators without a `seed` attribute
    (RandomNormal, RandomUniform, their *Like forms, Bernoulli, Multinomial,
    training Dropout) in sessions created afterwards: two sessions of a model
    created after set_seed(s) give the same numbers. The numbers are
    spindle's generator's, not bitwise ONNX Runtime's."""
    global _seed
    if not isinstance(seed, int) or isinstance(seed, bool) or not -2**63 <= seed < 2**63:
        raise InvalidArgument(f"set_seed({seed!r}): expected an int (64-bit)")
    _C._set_seed(seed)
    _seed = seed


def enable_telemetry_events():
    """Accepted for ONNX Runtime compatibility: spindle sends no telemetry."""


def disable_telemetry_events():
    """Accepted for ONNX Runtime compatibility: spindle sends no telemetry."""


class ExecutionOrder(enum.Enum):
    """ONNX Runtime's node execution order. Accepted; spindle orders nodes
    itself (topologically, fixed at session creation) whatever is chosen."""
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class SessionOptions(_C.SessionOptions):
    """Options of a session (ONNX Runtime's SessionOptions).

    intra_op_num_threads, inter_op_num_threads: thread counts, counting the
        calling thread; 0 = the physical cores available (checked when set).
    execution_mode (ExecutionMode), graph_optimization_level
        (GraphOptimizationLevel), use_per_session_threads (False: the global
        pools), enable_profiling and profile_file_prefix (end_profiling()).
    add_session_config_entry(key, value) / get_session_config_entry(key):
        ONNX Runtime's session.* keys spindle knows (an unknown key fails at
        session creation, naming the closest valid one).
    log_severity_level (0 verbose .. 4 fatal; -1, the default, = the process
        default, see set_default_logger_severity) and logid: what session
        creation logs on stderr and the id tagging it.
    register_custom_ops_library(path): loads a shared library of ONNX Runtime
        custom operators and calls its RegisterCustomOps(OrtSessionOptions*,
        const OrtApiBase*), as ONNX Runtime does; sessions created with these
        options then run the models using them.
    log_verbosity_level, enable_cpu_mem_arena, enable_mem_pattern,
        enable_mem_reuse: accepted, no effect.
    optimized_model_filepath: session creation writes the optimized graph
        there as an ONNX model (docs/options.md).
    Only in the Python API: execution_order,
    add_free_dimension_override_by_name, add_free_dimension_override_by_denotation
    (below)."""

    # No __dict__: a misspelt option is an AttributeError, as in ONNX Runtime.
    __slots__ = ("execution_order", "_free_dimensions", "_free_denotations")

    def __init__(self):
        super().__init__()
        #: Accepted; no effect (see ExecutionOrder).
        self.execution_order = ExecutionOrder.DEFAULT
        self._free_dimensions = {}
        self._free_denotations = {}

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fixes the named dynamic dimension of the model's inputs to dim_value:
        get_inputs() shows the value and feeding another size is InvalidArgument."""
        if not isinstance(dim_value, int) or dim_value < 0:
            raise InvalidArgument(f"free dimension '{dim_name}' = {dim_value!r}: expected an int >= 0")
        self._free_dimensions[str(dim_name)] = dim_value

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        """Fixes every dynamic dimension of the model's inputs whose ONNX
        denotation is dim_denotation (e.g. "DATA_BATCH") to dim_value, as
        add_free_dimension_override_by_name does for a dimension's name."""
        if not isinstance(dim_value, int) or dim_value < 0:
            raise InvalidArgument(f"free dimension denotation '{dim_denotation}' = {dim_value!r}: expected an int >= 0")
        self._free_denotations[str(dim_denotation)] = dim_value


class RunOptions(_C.RunOptions):
    """Options of one run (ONNX Runtime's RunOptions).

    terminate: set True (from any thread) to cancel the runs using these
        options; they raise Fail (CANCELLED) and the session stays usable.
    timeout_ms: spindle's; a run taking longer fails (0 = no limit).
    run_tag, log_severity_level, log_verbosity_level, logid: accepted, no effect
        (runs log nothing).
    add_run_config_entry / get_run_config_entry: below."""

    __slots__ = ("_config",)

    def __init__(self):
        super().__init__()
        self._config = {}

    def add_run_config_entry(self, key, value):
        """Stores an ONNX Runtime run config entry. spindle acts on none of
        ONNX Runtime's run keys (its memory arena and GPU settings do not
        apply), so they are kept for get_run_config_entry only."""
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        """The value add_run_config_entry stored; NotFound when unset."""
        if key not in self._config:
            raise NotFound(f"run config entry '{key}' is not set")
        return self._config[key]


def _numpy_of(value, what):
    if isinstance(value, OrtValue):
        return value._array
    if isinstance(value, np.ndarray):
        return value
    raise InvalidArgument(f"{what}: expected an OrtValue or a numpy array, got {type(value).__name__}")


def _check_cpu(device_type, device_id, what):
    if str(device_type).lower() != "cpu" or device_id != 0:
        raise InvalidArgument(f"{what}: device '{device_type}' {device_id} is not available; spindle runs on 'cpu' 0")


class OrtValue:
    """A value on the CPU, as ONNX Runtime's OrtValue: a tensor, or (as
    run_with_ort_values returns them) a sequence of tensors or an empty
    optional. One made by ortvalue_from_numpy shares the numpy array's memory
    (no copy) when the array is C-contiguous; otherwise it holds a contiguous
    copy."""

    def __init__(self, value):
        self._array = value  # a numpy array, a list of them (a sequence) or None (an empty optional)

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        """Wraps a numpy array (no copy when it is C-contiguous)."""
        _check_cpu(device_type, device_id, "ortvalue_from_numpy")
        if not isinstance(numpy_obj, np.ndarray):
            raise InvalidArgument(f"ortvalue_from_numpy: expected a numpy array, got {type(numpy_obj).__name__}")
        return OrtValue(np.ascontiguousarray(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        """A new zero-filled tensor of that shape and numpy element type."""
        _check_cpu(device_type, device_id, "ortvalue_from_shape_and_type")
        if np.dtype(element_type).type not in _ONNX_TYPES:
            raise InvalidArgument(f"ortvalue_from_shape_and_type: element type {element_type} is not supported")
        return OrtValue(np.zeros(tuple(shape), dtype=element_type))

    def _tensor(self, what):
        if not isinstance(self._array, np.ndarray):
            kind = "a sequence" if isinstance(self._array, list) else "an empty optional"
            raise InvalidArgument(f"OrtValue.{what}(): this OrtValue is {kind}, not a tensor")
        return self._array

    def numpy(self):
        """The tensor as a numpy array sharing the OrtValue's memory (a
        sequence: a list of arrays; an empty optional: None)."""
        if isinstance(self._array, list):
            return [a.view() for a in self._array]
        return None if self._array is None else self._array.view()

    def shape(self):
        """The tensor's shape, a list of ints."""
        return list(self._tensor("shape").shape)

    def data_type(self):
        """ONNX Runtime's type string, e.g. 'tensor(float)'."""
        return _ONNX_TYPES[self._tensor("data_type").dtype.type]

    def element_type(self):
        """The tensor's numpy element type, e.g. numpy.float32."""
        return self._tensor("element_type").dtype.type

    def device_name(self):
        """'cpu'."""
        return "cpu"

    def is_tensor(self):
        """True for a tensor."""
        return isinstance(self._array, np.ndarray)

    def is_tensor_sequence(self):
        """True for a sequence of tensors."""
        return isinstance(self._array, list)

    def has_value(self):
        """False for an empty optional."""
        return self._array is not None

    def data_ptr(self):
        """Address of the tensor's first element."""
        return self._tensor("data_ptr").ctypes.data

    def update_inplace(self, np_arr):
        """Copies np_arr (same shape and element type) into this tensor."""
        array = self._tensor("update_inplace")
        if np_arr.shape != array.shape or np_arr.dtype != array.dtype:
            raise InvalidArgument(f"update_inplace: got {np_arr.dtype} {list(np_arr.shape)}, expected "
                                  f"{array.dtype} {list(array.shape)}")
        np.copyto(array, np_arr)

    def __repr__(self):
        if self.is_tensor():
            return f"OrtValue({self.data_type()}, shape={self.shape()})"
        return f"OrtValue(sequence of {len(self._array)})" if self.is_tensor_sequence() else "OrtValue(None)"


class IOBinding:
    """Inputs and outputs bound ahead of session.run_with_iobinding(), as
    ONNX Runtime's IOBinding. Bound numpy arrays and OrtValues are used without
    a copy; an output bound to an OrtValue or a buffer is written into it."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}  # name -> destination array or None (allocated by the run)
        self._results = []

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds a numpy array to the input `name` (no copy)."""
        self._inputs[name] = _numpy_of(arr_on_cpu, f"bind_cpu_input('{name}')")

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Binds the memory at buffer_ptr (a CPU address) as a tensor of that
        element type and shape; the memory must stay valid until the run."""
        _check_cpu(device_type, device_id, f"bind_input('{name}')")
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name, ortvalue):
        """Binds an OrtValue to the input `name` (no copy)."""
        self._inputs[name] = _numpy_of(ortvalue, f"bind_ortvalue_input('{name}')")

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Requests the output `name`; with buffer_ptr, the run writes it into
        that memory (element_type and shape must then match the result)."""
        _check_cpu(device_type, device_id, f"bind_output('{name}')")
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise InvalidArgument(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
            self._outputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_output(self, name, ortvalue):
        """Requests the output `name`, written into the given OrtValue (a tensor)."""
        dest = _numpy_of(ortvalue, f"bind_ortvalue_output('{name}')")
        if not isinstance(dest, np.ndarray):
            raise InvalidArgument(f"bind_ortvalue_output('{name}'): the OrtValue is not a tensor")
        self._outputs[name] = dest

    def get_outputs(self):
        """The last run's outputs as OrtValues, in binding order."""
        return list(self._results)

    def copy_outputs_to_cpu(self):
        """The last run's outputs as numpy arrays (copies), in binding order."""
        return [r._array.copy() for r in self._results]

    def clear_binding_inputs(self):
        """Forgets the bound inputs."""
        self._inputs.clear()

    def clear_binding_outputs(self):
        """Forgets the bound outputs and the last run's results."""
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self):
        """Nothing to do on the CPU."""

    def synchronize_outputs(self):
        """Nothing to do on the CPU."""

    def _run(self, run_options):
        if not self._outputs:
            raise InvalidArgument("run_with_iobinding: no output is bound (bind_output or bind_ortvalue_output)")
        names = list(self._outputs)
        results = self._session.run(names, self._inputs, run_options)
        values = []
        for name, result in zip(names, results):
            dest = self._outputs[name]
            if dest is None:
                values.append(OrtValue(result))
                continue
            if not isinstance(result, np.ndarray):
                raise InvalidArgument(f"output '{name}' is a sequence or an optional, which cannot be written into "
                                      "a bound buffer: bind it with bind_output(name) alone")
            if dest.shape != result.shape or dest.dtype != result.dtype:
                raise InvalidArgument(f"output '{name}' is {result.dtype} {list(result.shape)}, but the bound "
                                      f"buffer is {dest.dtype} {list(dest.shape)}")
            np.copyto(dest, result)
            values.append(OrtValue(dest))
        self._results = values


def _array_at(buffer_ptr, element_type, shape):
    dtype = np.dtype(element_type)
    count = int(np.prod(shape, dtype=np.int64))
    if count and not buffer_ptr:
        raise InvalidArgument("buffer_ptr is null")
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(buffer_ptr) if count else b""
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(tuple(shape))


def _normalize_providers(providers, provider_options):
    """ONNX Runtime's provider arguments -> the CPU provider's options. Other
    providers are skipped with a warning (as ONNX Runtime does for an
    unavailable one); a list without the CPU provider is refused."""
    if providers is None:
        if provider_options is not None:
            raise ValueError("'provider_options' given without 'providers'")
        return {}
    if not isinstance(providers, collections.abc.Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence.")
    pairs = []
    for p in providers:
        if isinstance(p, str):
            pairs.append((p, {}))
        elif isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict):
            pairs.append(p)
        else:
            raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence) or len(provider_options) != len(providers):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given: "
                             f"got {len(providers)} provider(s) and {len(provider_options)} options")
        pairs = [(name, {**given, **options}) if isinstance(options, dict) else (name, options)
                 for (name, given), options in zip(pairs, provider_options)]
    cpu_options = None
    for name, options in pairs:
        if not isinstance(options, dict):
            raise ValueError("'provider_options' values must be dicts.")
        if name == _CPU and cpu_options is None:
            cpu_options = {str(k): str(v) for k, v in options.items()}
    if cpu_options is None:
        raise ValueError(f"None of the specified providers {[n for n, _ in pairs]} is available. Available providers: "
                         f"'{_CPU}' (spindle runs on the CPU only: add '{_CPU}' to the list)")
    for name, _ in pairs:
        if name != _CPU:
            warnings.warn(f"Specified provider '{name}' is not in available provider names."
                          f"Available providers: '{_CPU}'", stacklevel=3)
    return cpu_options


class InferenceSession:
    """A loaded model, as ONNX Runtime's InferenceSession.

    path_or_bytes is a file path (str or os.PathLike) or the model's bytes;
    sess_options a SessionOptions; providers and provider_options as in
    ONNX Runtime (the list must contain 'CPUExecutionProvider'; others are
    skipped with a warning)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if isinstance(path_or_bytes, os.PathLike):
            path_or_bytes = os.fspath(path_or_bytes)
        if not isinstance(path_or_bytes, (str, bytes)):
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}': expected a path or the model's bytes")
        self._provider_options = {_CPU: _normalize_providers(providers, provider_options)}
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._profiling_start_ns = time.monotonic_ns() if self._sess_options.enable_profiling else 0
        self._sess = _C.InferenceSession(path_or_bytes, sess_options, **kwargs)
        self._free_dims = {}  # input name -> [(axis, dim name, value, the override's method)]
        by_denotation = getattr(self._sess_options, "_free_denotations", {})
        denotations = _C._input_dim_denotations(path_or_bytes) if by_denotation else {}
        self._inputs = [self._override_dims(a, getattr(self._sess_options, "_free_dimensions", {}),
                                            denotations.get(a.name, []), by_denotation)
                        for a in self._sess.get_inputs()]
        self._outputs = self._sess.get_outputs()

    def _override_dims(self, arg, overrides, denotations, by_denotation):
        fixed = []
        for axis, d in enumerate(arg.shape):
            if isinstance(d, int):
                continue  # a fixed dimension: overrides apply to free ones only
            if d in overrides:
                fixed.append((axis, d, overrides[d], "add_free_dimension_override_by_name"))
            elif axis < len(denotations) and denotations[axis] in by_denotation:
                fixed.append((axis, d or denotations[axis], by_denotation[denotations[axis]],
                              "add_free_dimension_override_by_denotation"))
        if not fixed:
            return arg
        self._free_dims[arg.name] = fixed
        shape = list(arg.shape)
        for axis, _, value, _ in fixed:
            shape[axis] = value
        return NodeArg(arg.name, shape, arg.type)

    def _check_free_dims(self, input_feed):
        for name, fixed in self._free_dims.items():
            value = input_feed.get(name)
            shape = getattr(value, "shape", None)
            if shape is None:
                continue
            for axis, dim, expected, method in fixed:
                if axis < len(shape) and shape[axis] != expected:
                    raise InvalidArgument(f"input '{name}': dimension {axis} ('{dim}') is {shape[axis]}, expected "
                                          f"{expected} (fixed by {method})")

    def get_inputs(self):
        """The model's inputs as NodeArgs (name, shape, type)."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs as NodeArgs (name, shape, type)."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Initializers the model also lists as inputs (IR version 4 and
        later), as NodeArgs: a feed of that name replaces the initializer for
        the run."""
        return self._sess.get_overridable_initializers()

    def get_modelmeta(self):
        """The model's metadata (ModelMetadata)."""
        return self._sess.get_modelmeta()

    def get_providers(self):
        """['CPUExecutionProvider']."""
        return [_CPU]

    def get_provider_options(self):
        """{'CPUExecutionProvider': options given for it}."""
        return {k: dict(v) for k, v in self._provider_options.items()}

    def set_providers(self, providers=None, provider_options=None):
        """Checks the providers as the constructor does; the session keeps
        running on the CPU provider."""
        self._provider_options = {_CPU: _normalize_providers(providers, provider_options)}

    def disable_fallback(self):
        """Accepted; spindle has no provider to fall back from."""

    def enable_fallback(self):
        """Accepted; spindle has no provider to fall back from."""

    def get_session_options(self):
        """The SessionOptions the session was created with."""
        return self._sess_options

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: output_names (None or [] = all, in model order),
        input_feed {name: numpy array}; returns a list of numpy arrays."""
        if self._free_dims:
            self._check_free_dims(input_feed)
        return self._sess.run(output_names or None, input_feed, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """As run(), with OrtValues in and out (no copy of the inputs)."""
        feed = {k: _numpy_of(v, f"input '{k}'") for k, v in input_dict_ort_values.items()}
        return [OrtValue(a) for a in self.run(output_names, feed, run_options)]

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Starts a run on the inter-op pool and returns; callback(outputs,
        user_data, err) is called from there (holding the GIL) with the list of
        outputs and err = '' (or no outputs and err = the message).
        run_options bound the run as they bound run() (terminate,
        timeout_ms); interpreter exit terminates runs still going."""
        if self._free_dims:
            self._check_free_dims(input_feed)
        self._sess.run_async(output_names or None, input_feed, callback, user_data, run_options)

    def io_binding(self):
        """A new IOBinding for this session."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the inputs and outputs bound in iobinding; the outputs are
        then in iobinding.get_outputs() / copy_outputs_to_cpu()."""
        iobinding._run(run_options)

    def end_profiling(self):
        """Writes the profiled runs as a Chrome trace file; returns its path."""
        return self._sess.end_profiling()

    def get_profiling_start_time_ns(self):
        """When profiling started (time.monotonic_ns() at session creation),
        0 when the session does not profile."""
        return self._profiling_start_ns
